"""Running a lowered Program: DRAM filled from the inputs, host steps in numpy, kernels on the
ISA simulator or on the Verilator RTL, the result read back from DRAM through its view."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from glc.errors import DoesNotFit, GlcError
from glc.interp import interpret
from glc.isa import simulator
from glc.isa.cycles import schedule as schedule_of
from glc.isa.fields import WORD_BYTES
from glc.isa.races import Unordered, races
from glc.isa.simulator import program_base
from glc.isa.status import Counters
from glc.lower.image import schedule
from glc.lower.program import Buffer, HostStep, Program
from glc.lower.view import View, gather
from glc.trace import host_record, image_record

ENGINES = ("isa", "rtl")


@dataclass
class Outcome:
    """The result tensor, the final DRAM and, per image (machine run), the counters."""

    result: np.ndarray
    dram: np.ndarray
    engine: str
    counters: list[Counters] = field(default_factory=list)

    @property
    def cycles(self) -> int:
        """Cycles summed over the images (the host steps are not timed)."""
        return sum(c.cycles for c in self.counters)


def read_buffer(dram: np.ndarray, buffer: Buffer) -> np.ndarray:
    """A tensor from its DRAM bytes (little-endian, row-major)."""
    raw = dram[buffer.address:buffer.address + buffer.nbytes].tobytes()
    return np.frombuffer(raw, dtype=np.dtype(buffer.dtype).newbyteorder("<")).astype(
        buffer.dtype).reshape(buffer.shape)


def write_buffer(dram: np.ndarray, buffer: Buffer, value: np.ndarray) -> None:
    """Write a tensor's bytes (little-endian, row-major) at its address."""
    # np.array, not np.ascontiguousarray: that one returns a 0-d tensor as shape (1,).
    data = np.array(value, dtype=np.dtype(buffer.dtype).newbyteorder("<"), order="C")
    if data.shape != buffer.shape:
        raise GlcError(f"input '{buffer.name}' has shape {data.shape}, the program was "
                       f"compiled for {buffer.shape}")
    dram[buffer.address:buffer.address + buffer.nbytes] = np.frombuffer(data.tobytes(),
                                                                        dtype=np.uint8)


def execute(program: Program, arrays: Mapping[str, np.ndarray], engine: str = "isa",
            max_cycles: int | None = None, check_races: bool = False,
            trace: list | None = None) -> Outcome:
    """Run every step in order, kernels as images (glc/lower/image.py); ``max_cycles`` is the
    RTL's watchdog per image (default: ten times the predicted cycles, plus 10 000).
    ``check_races``: a GlcError where an image's tokens leave two units'
    accesses of a local row unordered (glc/isa/races.py), whatever the numbers. ``trace``: a
    list to append each run's glc/trace.py record to, the RTL's own on the RTL."""
    if engine not in ENGINES:
        raise GlcError(f"unknown engine '{engine}', expected one of {', '.join(ENGINES)}")
    config = program.config
    # DRAM, then the host's memory for the tensors only host steps touch (lowering.py).
    dram = np.zeros(max(config.dram_bytes, program.memory_bytes), dtype=np.uint8)
    for name in program.inputs:
        if name not in arrays:
            raise GlcError(f"no value for input '{name}'")
        write_buffer(dram, program.buffers[name], np.asarray(arrays[name]))
    counters = []
    for run in schedule(program):
        if isinstance(run, HostStep):
            values = {symbol: read_view(dram, program, view)
                      for symbol, view in run.views.items()}
            result, _ = interpret(run.term, values)
            write_buffer(dram, program.buffers[run.output], result)
            if trace is not None:
                trace.append(host_record(run.name))
            continue
        words, size = run.words, config.dram_bytes
        # The host writes the image above the data (docs/isa.md, "Instruction fetch") and takes
        # the space back after the run.
        base = program_base(config, len(words))
        if base < program.dram_bytes:
            raise DoesNotFit(f"the data ({program.dram_bytes} bytes) and an image of "
                             f"{len(words)} instructions ({WORD_BYTES * len(words)} bytes) need "
                             f"more than the {size} bytes of {config.name}'s DRAM")
        if engine == "isa":
            machine = simulator.run(words, config, dram[:size], base=base)
            dram[:size], counter, timeline = machine.dram, machine.counters, machine.timeline
        else:
            from glc.sim.run import run_program  # the Verilator toolchain only when asked

            watchdog = max_cycles or 10 * run.predicted_cycles(config) + 10_000
            sim = run_program(config, words, dram[:size], base=base, max_cycles=watchdog,
                              trace=trace is not None)
            sim.raise_for_status(", ".join(s.name for s in run.steps))
            dram[:size], counter = sim.dram, sim.counters
            timeline = schedule_of(run.instructions, config) if check_races else None
        dram[base:base + WORD_BYTES * len(words)] = 0
        counters.append(counter)
        if trace is not None:
            trace.append(image_record(run, config, sim.trace if engine == "rtl" else None))
        found = races(run.instructions, timeline, config) if check_races else []
        if found:  # the RTL runs the cycle model's timeline, cycle for cycle
            raise Unordered(f"the image of {', '.join(s.name for s in run.steps)} races: "
                            f"{found[0].line()} ({len(found)} found)")
    result = read_view(dram, program, program.output).astype(program.output_dtype)
    return Outcome(result, dram, engine, counters)


def read_view(dram: np.ndarray, program: Program, view: View) -> np.ndarray:
    """A tensor read from DRAM through a view of its buffer (the host's strided read)."""
    return gather(view, read_buffer(dram, program.buffers[view.buffer]).reshape(-1))
