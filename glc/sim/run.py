"""Run a program image on the RTL: build (cached), simulate under cocotb, read results back.

This is the entry point the compiler's ``glc simulate`` / ``glc run`` build on:
``run_program(config, image, dram, max_cycles=...)`` returns a SimResult with the final DRAM,
the error status and the counters (docs/isa.md, "Errors and status" and "Counters").
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
from glc.isa.encoding import to_hex
from glc.isa.status import Counters, ErrorCode, MachineError
from glc.sim.build import Design, build, build_root, run_cocotb

TOP = "sim_top"
HARNESS = "glc.sim.harness"
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
                max_cycles: int = 10_000_000, waves: str = "",
                keep: Path | None = None) -> SimResult:
    """Run the instruction words ``image`` with DRAM initialised from ``dram`` (missing bytes
    are zero) until it is done, fails, or ``max_cycles`` pass.

    ``waves`` ("vcd" or "fst") records every signal from a separate build; give ``keep``, the
    directory to leave the run's files in (hex images, log, dump.vcd / dump.fst), or they go to
    a temporary directory that is removed.
    """
    if len(image) > config.imem_words:
        raise GlcError(f"the program has {len(image)} instructions; instruction memory holds "
                       f"{config.imem_words}")
    data = np.frombuffer(bytes(dram), dtype=np.uint8) if not isinstance(dram, np.ndarray) \
        else dram.astype(np.uint8, copy=False)
    if data.size > config.dram_bytes:
        raise GlcError(f"the DRAM image has {data.size} bytes; DRAM holds {config.dram_bytes}")
    if not 1 <= max_cycles < 1 << 32:
        raise GlcError(f"max_cycles must be 1 … 2^32-1, not {max_cycles}")
    chosen = design(config, waves=waves)
    build(chosen)
    (build_root() / "runs").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build_root() / "runs") as scratch:
        folder = Path(keep) if keep is not None else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        return _simulate(chosen, folder, image, data, config.dram_bytes, max_cycles)


def _simulate(chosen: Design, folder: Path, image: list[int], data: np.ndarray,
              dram_bytes: int, max_cycles: int) -> SimResult:
    imem, dram_in, dram_out, result = (folder / name for name in
                                       ("imem.hex", "dram_in.hex", "dram_out.hex", "result.json"))
    imem.write_text(to_hex(image))
    dram_in.write_bytes(_HEX_BYTES[data].tobytes())
    dram_out.unlink(missing_ok=True)
    start = time.perf_counter()
    run_cocotb(chosen, HARNESS, run_dir=folder,
               env={"GLC_MAX_CYCLES": str(max_cycles), "GLC_RESULT": str(result)},
               plusargs=[f"+imem={imem}", f"+dram_in={dram_in}", f"+dram_out={dram_out}"])
    seconds = time.perf_counter() - start
    status = json.loads(result.read_text())
    if status["rtl_hung"]:
        raise RuntimeError(f"the RTL never raised done, not even at its watchdog; see {folder}")
    final = np.frombuffer(bytes.fromhex("".join(dram_out.read_text().split())), dtype=np.uint8)
    if final.size != dram_bytes:
        raise RuntimeError(f"the DRAM dump has {final.size} bytes, expected {dram_bytes}")
    return SimResult(dram=final, error=ErrorCode(status["error"]), error_pc=status["error_pc"],
                     timed_out=status["timed_out"], max_cycles=max_cycles,
                     counters=Counters(**status["counters"]), seconds=seconds,
                     run_seconds=status["run_seconds"])
