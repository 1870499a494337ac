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
from glc.isa.simulator import place_image, program_base
from glc.isa.status import Counters, ErrorCode, MachineError
from glc.sim.build import Design, build, build_root, run_cocotb

TOP = "sim_top"
HARNESS = "glc.sim.harness"
_HEX_BYTES = np.array([f"{b:02x}\n".encode() for b in range(256)])
PAGE_BYTES = 4096  # the granule of the RTL's sparse DRAM load and dump (ISA v2 A3)


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
    trace: str | None = None  # hw/unit_trace.sv's record, when asked for (glc/trace.py reads it)

    @property
    def cycles(self) -> int:
        """The cycle counter when the machine stopped."""
        return self.counters.cycles

    def raise_for_status(self, where: str | None = None) -> None:
        """A MachineError if the program stopped with an error, a GlcError if the watchdog
        stopped it; nothing after a clean HALT."""
        if self.timed_out:
            raise GlcError(f"watchdog: the program did not finish within {self.max_cycles} "
                           "cycles (raise --max-cycles if it is just long)", where)
        if self.error != ErrorCode.OK:
            raise MachineError(self.error, self.error_pc, "reported by the RTL", where=where)


def design(config: HwConfig, *, waves: str = "") -> Design:
    """The simulation top built for ``config`` (its keys are the Verilog parameters)."""
    return Design(TOP, config.verilog_parameters(), waves=waves)


def run_program(config: HwConfig, image: list[int], dram: bytes | np.ndarray, *,
                base: int | None = None, max_cycles: int = 10_000_000, waves: str = "",
                keep: Path | None = None, trace: bool = False) -> SimResult:
    """Run the instruction words ``image`` with DRAM initialised from ``dram`` (missing bytes
    are zero) until it is done, fails, or ``max_cycles`` pass.

    The host writes the image into DRAM at byte address ``base`` (default: the ISA simulator's
    ``program_base``, the top of DRAM) and starts the machine there (docs/isa.md, instruction
    fetch); the returned DRAM holds the image too, as the ISA simulator's does.
    ``waves`` ("vcd" or "fst") records every signal from a separate build; give ``keep``, the
    directory to leave the run's files in (hex images, log, dump.vcd / dump.fst), or they go to
    a temporary directory that is removed. ``trace``: also record each unit's activity
    (hw/unit_trace.sv) into the result's ``trace``.
    """
    given = np.frombuffer(bytes(dram), dtype=np.uint8) if not isinstance(dram, np.ndarray) \
        else dram.astype(np.uint8, copy=False)
    if given.size > config.dram_bytes:
        raise GlcError(f"the DRAM image has {given.size} bytes; DRAM holds {config.dram_bytes}")
    if not 1 <= max_cycles < 1 << 32:
        raise GlcError(f"max_cycles must be 1 … 2^32-1, not {max_cycles}")
    data = np.zeros(config.dram_bytes, dtype=np.uint8)
    data[:given.size] = given
    base = program_base(config, len(image)) if base is None else base
    place_image(data, image, base)
    chosen = design(config, waves=waves)
    build(chosen)
    (build_root() / "runs").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build_root() / "runs") as scratch:
        folder = Path(keep) if keep is not None else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        return _simulate(chosen, folder, data, base, max_cycles, trace)


def _simulate(chosen: Design, folder: Path, data: np.ndarray, base: int,
              max_cycles: int, trace: bool) -> SimResult:
    dram_in, dram_out, result, recorded = (
        folder / name for name in ("dram_in.hex", "dram_out.hex", "result.json", "trace.txt"))
    dram_in.write_bytes(sparse_hex(data))
    dram_out.unlink(missing_ok=True)
    recorded.unlink(missing_ok=True)
    start = time.perf_counter()
    run_cocotb(chosen, HARNESS, run_dir=folder,
               env={"GLC_MAX_CYCLES": str(max_cycles), "GLC_RESULT": str(result),
                    "GLC_PROGRAM_BASE": str(base)},
               plusargs=[f"+dram_in={dram_in}", f"+dram_out={dram_out}",
                         *([f"+trace={recorded}"] if trace else [])])
    seconds = time.perf_counter() - start
    status = json.loads(result.read_text())
    if status["rtl_hung"]:
        raise RuntimeError(f"the RTL never raised done, not even at its watchdog; see {folder}")
    final = data.copy()
    apply_pages(final, dram_out.read_text())
    return SimResult(dram=final, error=ErrorCode(status["error"]), error_pc=status["error_pc"],
                     timed_out=status["timed_out"], max_cycles=max_cycles,
                     counters=Counters(**status["counters"]), seconds=seconds,
                     run_seconds=status["run_seconds"],
                     trace=recorded.read_text() if trace else None)


def sparse_hex(data: np.ndarray) -> bytes:
    """The $readmemh text of DRAM's nonzero 4 KiB pages: `@address` and one byte a line
    (ISA v2 A3: the RTL's DRAM is zero elsewhere, so only the bytes a program uses are read)."""
    pages = np.flatnonzero(np.add.reduceat(data != 0, np.arange(0, data.size, PAGE_BYTES)))
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
