"""Run a program image on the RTL: build (cached), simulate under cocotb, read results back.

This is the entry point the compiler's ``glc simulate`` / ``glc run`` build on:
``run_program(config, image, dram, base=..., max_cycles=...)`` returns a SimResult with the
final DRAM, the error status and the counters (docs/isa.md, "Errors and status" and
"Counters").
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.isa.cycles import schedule
from glc.isa.dram import PAGE_BYTES, copy_pages, nonzero_pages, zeroed
from glc.isa.encoding import DecodeError, decode
from glc.isa.fields import UNITS
from glc.isa.simulator import place_image, program_base
from glc.isa.status import Counters, ErrorCode, MachineError
from glc.sim.build import Design, build, build_root, run_bare, run_cocotb

TOP = "sim_top"
HARNESS = "glc.sim.harness"
# The harness asserts nothing: without pytest's assertion rewriting, which cocotb applies to every
# module the simulator imports (glc's included, parsed from source), its start-up was measured
# ~1 s of CPU time shorter (3.1 -> 2.0 s for n16's GEMM; docs/benchmarks.md, "simspeed").
HARNESS_ENV = {"COCOTB_REWRITE_ASSERTION_FILES": ""}
_HEX_BYTES = np.array([f"{b:02x}\n".encode() for b in range(256)])


@dataclass
class SimResult:
    """What a program left behind: DRAM, status and counters, and how long it took to simulate."""

    dram: np.ndarray  # uint8, the whole DRAM after the run
    error: ErrorCode
    error_pc: int
    timed_out: bool
    max_cycles: int
    counters: Counters = field(default_factory=Counters)
    seconds: float = 0.0  # wall-clock time of the simulator process (start-up and files included)
    run_seconds: float = 0.0  # wall-clock time from reset to done: the model's own speed
    run_cpu_seconds: float = 0.0  # the simulator process's CPU time over the same span
    stuck: str = ""  # a watchdog stop: what each unit did last, and where the model is then
    trace: str | None = None  # hw/unit_trace.sv's record, when asked for (glc/trace.py reads it)

    @property
    def cycles(self) -> int:
        """The cycle counter when the machine stopped."""
        return self.counters.cycles

    def raise_for_status(self, where: str | None = None) -> None:
        """A MachineError if the program stopped with an error, a GlcError if the watchdog
        stopped it (saying what each unit was doing, ``stuck``); nothing after a clean HALT."""
        if self.timed_out:
            raise GlcError(f"watchdog: the program did not finish within {self.max_cycles} "
                           f"cycles (raise --max-cycles if it is just long){self.stuck}", where)
        if self.error != ErrorCode.OK:
            raise MachineError(self.error, self.error_pc, "reported by the RTL", where=where)


def design(config: HwConfig, *, waves: str = "", runner: str = "cocotb",
           threads: int = 1) -> Design:
    """The simulation top built for ``config`` (its keys are the Verilog parameters), clocked
    by ``runner`` (glc/sim/build.py, RUNNERS) with a model of ``threads`` threads."""
    return Design(TOP, config.verilog_parameters(), waves=waves, runner=runner, threads=threads)


def run_program(config: HwConfig, image: list[int], dram: bytes | np.ndarray, *,
                base: int | None = None, max_cycles: int = 10_000_000, waves: str = "",
                keep: Path | None = None, trace: bool = False, runner: str = "cocotb",
                threads: int = 1) -> SimResult:
    """Run the instruction words ``image`` with DRAM initialised from ``dram`` (missing bytes
    are zero) until it is done, fails, or ``max_cycles`` pass.

    The host writes the image into DRAM at byte address ``base`` (default: the ISA simulator's
    ``program_base``, the top of DRAM) and starts the machine there (docs/isa.md, instruction
    fetch); the returned DRAM holds the image too, as the ISA simulator's does.
    ``waves`` ("vcd" or "fst") records every signal from a separate build; give ``keep``, the
    directory to leave the run's files in (hex images, log, dump.vcd / dump.fst), or they go to
    a temporary directory that is removed. ``trace``: also record each unit's activity
    (hw/unit_trace.sv) into the result's ``trace``. ``runner``: the cocotb testbench
    (glc/sim/harness.py) or the bare C++ main (glc/sim/bare_main.cpp), the same machine;
    ``threads``: the Verilator model's threads.
    """
    given = np.frombuffer(bytes(dram), dtype=np.uint8) if not isinstance(dram, np.ndarray) \
        else dram.astype(np.uint8, copy=False)
    if given.size > config.dram_bytes:
        raise GlcError(f"the DRAM image has {given.size} bytes; DRAM holds {config.dram_bytes}")
    if not 1 <= max_cycles < 1 << 32:
        raise GlcError(f"max_cycles must be 1 … 2^32-1, not {max_cycles}")
    data = zeroed(config.dram_bytes)
    copy_pages(data, given)
    base = program_base(config, len(image)) if base is None else base
    place_image(data, image, base)
    chosen = design(config, waves=waves, runner=runner, threads=threads)
    build(chosen)
    (build_root() / "runs").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build_root() / "runs") as scratch:
        folder = Path(keep) if keep is not None else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        return _simulate(chosen, folder, data, base, max_cycles, config, image, trace)


def _simulate(chosen: Design, folder: Path, data: np.ndarray, base: int,
              max_cycles: int, config: HwConfig, image: list[int], trace: bool) -> SimResult:
    dram_in, dram_out, result, recorded = (
        folder / name for name in ("dram_in.hex", "dram_out.hex", "result.json", "trace.txt"))
    dram_in.write_bytes(sparse_hex(data))
    dram_out.unlink(missing_ok=True)
    recorded.unlink(missing_ok=True)
    plusargs = [f"+dram_in={dram_in}", f"+dram_out={dram_out}",
                *([f"+trace={recorded}"] if trace else [])]
    start = time.perf_counter()
    if chosen.runner == "bare":
        run_bare(chosen, run_dir=folder,
                 plusargs=[*plusargs, f"+max_cycles={max_cycles}", f"+program_base={base}",
                           f"+result={result}"])
    else:
        run_cocotb(chosen, HARNESS, run_dir=folder,
                   env={"GLC_MAX_CYCLES": str(max_cycles), "GLC_RESULT": str(result),
                        "GLC_PROGRAM_BASE": str(base), **HARNESS_ENV},
                   plusargs=plusargs)
    seconds = time.perf_counter() - start
    status = json.loads(result.read_text())
    if status["rtl_hung"]:
        raise RuntimeError(f"the RTL never raised done, not even at its watchdog; see {folder}")
    final = zeroed(data.size)  # the image's pages, then the pages the RTL wrote
    copy_pages(final, data)
    apply_pages(final, dram_out.read_text())
    counters = Counters(**status["counters"])
    stuck = ""
    if status["timed_out"] and status.get("before_watchdog") is not None:
        stuck = stopped_units(Counters(**status["before_watchdog"]), counters) + \
            model_position(image, config, counters.cycles)
    return SimResult(dram=final, error=ErrorCode(status["error"]), error_pc=status["error_pc"],
                     timed_out=status["timed_out"], max_cycles=max_cycles,
                     counters=counters, seconds=seconds,
                     run_seconds=status["run_seconds"],
                     run_cpu_seconds=status["run_cpu_seconds"], stuck=stuck,
                     trace=recorded.read_text() if trace else None)


def stopped_units(before: Counters, after: Counters) -> str:
    """What each unit did in the cycles between two counter readings (the last before the
    watchdog): busy, waiting for a token, waiting for the DRAM port, or idle."""
    cycles = after.cycles - before.cycles
    parts = []
    for unit in UNITS:
        doing = []
        for label, name in (("busy", f"busy_{unit}"), ("waiting for a token",
                                                      f"stall_token_{unit}"),
                            ("waiting for DRAM", f"stall_dram_{unit}")):
            spent = getattr(after, name, 0) - getattr(before, name, 0)
            if spent:
                doing.append(f"{label} {spent}")
        parts.append(f"{unit.upper()} {', '.join(doing) or 'idle'}")
    return f"; in its last {cycles} cycles {'; '.join(parts)}"


def model_position(image: list[int], config: HwConfig, cycle: int) -> str:
    """Where the cycle model (which the RTL equals, cycle for cycle) has each unit at ``cycle``:
    the pc it runs or waits at; or, if the model finishes before, that it does."""
    program = []
    for word in image:
        try:
            program.append(decode(word))
        except DecodeError:
            return ""  # the machine stops at this word with an error, not at the watchdog
        if program[-1].op.name == "halt":
            break
    timeline = schedule(program, config)
    end = timeline.counters.cycles
    if timeline.error is None and end <= cycle:
        return f"; the cycle model finishes at cycle {end}: the RTL is behind it"
    at = timeline.at(cycle)
    units = ", ".join(f"{unit.upper()} {state} at pc {pc}"
                      for unit in UNITS if unit in at for pc, state in [at[unit]])
    return f"; at cycle {cycle} the cycle model has {units or 'no unit busy'}"


def sparse_hex(data: np.ndarray) -> bytes:
    """The $readmemh text of DRAM's nonzero 4 KiB pages: `@address` and one byte a line
    (ISA v2 A3: the RTL's DRAM is zero elsewhere, so only the bytes a program uses are read)."""
    pages = nonzero_pages(data)
    parts = []
    for page in pages.tolist():
        start = page * PAGE_BYTES
        body = _HEX_BYTES[data[start:start + PAGE_BYTES]].tobytes()
        parts.append(f"@{start:x}\n".encode() + body)
    return b"".join(parts)


def apply_pages(dram: np.ndarray, text: str) -> None:
    """Write the pages of the RTL's sparse dump (`@address` then one hex byte a line) into
    ``dram``."""
    for section in text.split("@")[1:]:
        address, _, body = section.partition("\n")
        page = np.frombuffer(bytes.fromhex("".join(body.split())), dtype=np.uint8)
        start = int(address, 16)
        if start + page.size > dram.size:
            raise RuntimeError(f"the DRAM dump writes {page.size} bytes at {start}, past the end")
        dram[start:start + page.size] = page
