"""Running a lowered Program: DRAM filled from the inputs, host steps in numpy, kernels on the
ISA simulator or on the Verilator RTL, the result read back from DRAM through its view."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from glc.errors import DoesNotFit, GlcError
from glc.interp import interpret
from glc.isa import simulator
from glc.isa.cycles import schedule as schedule_of
from glc.isa.dram import zeroed
from glc.isa.fields import WORD_BYTES
from glc.isa.races import Unordered, races
from glc.isa.simulator import program_base
from glc.isa.status import Counters
from glc.lower.image import Image, schedule
from glc.lower.program import Buffer, HostStep, Program
from glc.lower.view import View, gather
from glc.trace import host_record, image_record

ENGINES = ("isa", "rtl")


@dataclass
class Outcome:
    """The result tensor, the final DRAM and, per image (machine run), the counters; ``freed``:
    each freed buffer's bytes when its host step had read it (its space then held others)."""

    result: np.ndarray
    dram: np.ndarray
    engine: str
    counters: list[Counters] = field(default_factory=list)
    freed: dict[str, np.ndarray] = field(default_factory=dict)

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
    machine = Executor(program, arrays, engine, max_cycles, check_races, trace)
    for run in schedule(program):
        machine.run(run)
    return machine.finish()


@dataclass
class State:
    """Where a run of a program stands between two runs (images or host steps): DRAM, the
    inputs not yet written into it, and the freed buffers' kept bytes."""

    dram: np.ndarray
    pending: list[str]
    freed: dict[str, np.ndarray]

    def copy(self) -> State:
        return State(self.dram.copy(), list(self.pending),
                     {name: data.copy() for name, data in self.freed.items()})


class Executor:
    """A program's runs, one at a time, on an engine (``execute`` runs them all); it may start
    from a ``State`` another executor reached (glc/segments.py: a segment on the RTL from the
    ISA simulator's state)."""

    def __init__(self, program: Program, arrays: Mapping[str, np.ndarray], engine: str = "isa",
                 max_cycles: int | None = None, check_races: bool = False,
                 trace: list | None = None, state: State | None = None):
        if engine not in ENGINES:
            raise GlcError(f"unknown engine '{engine}', expected one of {', '.join(ENGINES)}")
        for name in program.inputs:
            if name not in arrays:
                raise GlcError(f"no value for input '{name}'")
        self.program, self.arrays, self.engine = program, arrays, engine
        self.max_cycles, self.check_races, self.trace = max_cycles, check_races, trace
        # DRAM, then the host's memory for the tensors only host steps touch (lowering.py).
        # An input enters DRAM just before the first step that reads it: its space may have
        # held a tensor that died before (lowering.py, ``_release_read``).
        self.state = state if state is not None else State(
            zeroed(max(program.config.dram_bytes, program.memory_bytes)),
            list(program.inputs), {})
        self.counters: list[Counters] = []

    def run(self, run: Image | HostStep) -> None:
        """One host step, or one image on the machine."""
        program, config, dram = self.program, self.program.config, self.state.dram
        steps = [run] if isinstance(run, HostStep) else run.steps
        touched = {name for step in steps for name in step.inputs}
        pending = self.state.pending
        for name in [name for name in pending if name in touched]:
            write_buffer(dram, program.buffers[name], np.asarray(self.arrays[name]))
            pending.remove(name)
        if isinstance(run, HostStep):
            values = {symbol: read_view(dram, program, view)
                      for symbol, view in run.views.items()}
            result, _ = interpret(run.term, values)
            for name in program.freed & set(run.inputs):
                buffer = program.buffers[name]
                self.state.freed[name] = dram[buffer.address:buffer.address + buffer.nbytes].copy()
            write_buffer(dram, program.buffers[run.output], result)
            if self.trace is not None:
                self.trace.append(host_record(run.name))
            return
        words, size = run.words, config.dram_bytes
        # The host writes the image above the data (docs/isa.md, "Instruction fetch") and takes
        # the space back after the run.
        base = program_base(config, len(words))
        live = program.live_dram_bytes(run.steps[0])
        if base < live:
            raise DoesNotFit(f"the data ({live} bytes) and an image of "
                             f"{len(words)} instructions ({WORD_BYTES * len(words)} bytes) need "
                             f"more than the {size} bytes of {config.name}'s DRAM")
        if self.engine == "isa":
            machine = simulator.run(words, config, dram[:size], base=base, in_place=True)
            counter, timeline = machine.counters, machine.timeline
        else:
            from glc.sim.run import run_program  # the Verilator toolchain only when asked

            watchdog = self.max_cycles or 10 * run.predicted_cycles(config) + 10_000
            sim = run_program(config, words, dram[:size], base=base, max_cycles=watchdog,
                              trace=self.trace is not None)
            sim.raise_for_status(", ".join(s.name for s in run.steps))
            dram[:size], counter = sim.dram, sim.counters
            timeline = schedule_of(run.instructions, config) if self.check_races else None
        dram[base:base + WORD_BYTES * len(words)] = 0
        self.counters.append(counter)
        if self.trace is not None:
            self.trace.append(image_record(run, config,
                                           sim.trace if self.engine == "rtl" else None))
        found = races(run.instructions, timeline, config) if self.check_races else []
        if found:  # the RTL runs the cycle model's timeline, cycle for cycle
            raise Unordered(f"the image of {', '.join(s.name for s in run.steps)} races: "
                            f"{found[0].line()} ({len(found)} found)")

    def finish(self) -> Outcome:
        """The outcome after the last run: the inputs no step read written (the result itself,
        or a view of it), the result read through its view."""
        program, dram = self.program, self.state.dram
        for name in self.state.pending:
            write_buffer(dram, program.buffers[name], np.asarray(self.arrays[name]))
        self.state.pending = []
        result = read_view(dram, program, program.output).astype(program.output_dtype)
        return Outcome(result, dram, self.engine, self.counters, self.state.freed)


def read_view(dram: np.ndarray, program: Program, view: View,
              freed: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """A tensor read from DRAM through a view of its buffer (the host's strided read); a
    buffer in ``freed`` (Outcome.freed) from its kept bytes instead."""
    buffer = program.buffers[view.buffer]
    if freed is not None and buffer.name in freed:
        buffer = replace(buffer, address=0)
        return gather(view, read_buffer(freed[view.buffer], buffer).reshape(-1))
    return gather(view, read_buffer(dram, buffer).reshape(-1))
