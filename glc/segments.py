"""A network checked on the RTL in parallel segments (``glc run --engine rtl --segments N``).

The RTL and the ISA simulator agree bit for bit and cycle for cycle, and the ISA simulator is
orders of magnitude faster. So the ISA simulator runs the whole program once and keeps the
machine's state (DRAM, the inputs not yet written, the freed buffers' bytes) at the boundaries of
N segments; each segment then runs on the RTL from its starting state, independently of the
others, in a process of its own (glc/workers.py), and its end state is compared bit for bit with
the ISA simulator's at the next boundary, its cycles image by image with the ISA simulator's
(the cycle model's). The whole network is verified when every segment is; the wall time falls
with the workers to the longest segment (the critical path).

Segments are contiguous runs of the schedule, cut at kernel boundaries balanced by predicted
cycles. A cut inside an image (glc/lower/image.py: consecutive kernels joined by barriers)
makes two images, each ending with a HALT: kernels share no state but DRAM across a barrier
(each loads its own operands, its tokens balance), so a segment's image is the same kernels
with a HALT where the barrier was; both the reference and the RTL run the images so cut. Only
the overlap across that one barrier differs from the uncut program (a few cycles a cut).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from glc.errors import GlcError
from glc.isa.status import Counters
from glc.lower.execute import Executor, Outcome, State
from glc.lower.image import Image, schedule
from glc.lower.program import HostStep, KernelStep, Program

Run = Image | HostStep


def refuse(engine: str, check_races: bool, tracing: bool) -> None:
    """A GlcError unless a segmented run can do what is asked: it checks the RTL against the
    ISA simulator, and records no trace or race check (the segments run apart)."""
    if engine != "rtl" or check_races or tracing:
        raise GlcError("--segments checks the RTL against the ISA simulator: it needs "
                       "--engine rtl, and no --check-each or --trace")


def split(program: Program, count: int) -> list[list[Run]]:
    """The schedule cut into ``count`` contiguous segments (as many as there are kernels, if
    fewer) of about equal predicted cycles, each holding a kernel, cut before a kernel; a cut
    image becomes two images."""
    if count < 1:
        raise GlcError(f"--segments must be at least 1, got {count}")
    config = program.config
    items: list[tuple[int, KernelStep | HostStep, float]] = []  # (image index, step, cycles)
    for index, run in enumerate(schedule(program)):
        if isinstance(run, HostStep):
            items.append((index, run, 0.0))
        else:
            items.extend((index, step, Image([step]).predicted_cycles(config))
                         for step in run.steps)
    total = sum(weight for _, _, weight in items) or 1.0
    kernels_from = [0] * (len(items) + 1)  # kernels at or after each position
    for position in range(len(items) - 1, -1, -1):
        kernels_from[position] = kernels_from[position + 1] + isinstance(items[position][1],
                                                                          KernelStep)
    segments: list[list[tuple[int, KernelStep | HostStep]]] = [[]]
    done, has_kernel = 0.0, False
    for position, (index, step, weight) in enumerate(items):
        # A cut before a kernel, once the segment holds one: at its share of the cycles, or
        # when each segment still to open needs one of the kernels left.
        if (isinstance(step, KernelStep) and has_kernel and len(segments) < count
                and (done >= total * len(segments) / count
                     or kernels_from[position] <= count - len(segments))):
            segments.append([])
            has_kernel = False
        segments[-1].append((index, step))
        has_kernel = has_kernel or isinstance(step, KernelStep)
        done += weight
    return [_runs(segment) for segment in segments if segment]


def _runs(segment: list[tuple[int, KernelStep | HostStep]]) -> list[Run]:
    """A segment's steps as runs: consecutive kernels of one image join again."""
    runs: list[Run] = []
    last = None
    for index, step in segment:
        if isinstance(step, HostStep):
            runs.append(step)
        elif isinstance(runs[-1] if runs else None, Image) and last == index:
            runs[-1].steps.append(step)
        else:
            runs.append(Image([step]))
        last = index
    return runs


@dataclass
class SegmentResult:
    """One segment on the RTL against the ISA simulator."""

    index: int
    kernels: int
    host_steps: int
    counters: list[Counters]  # the RTL's, image by image
    model_cycles: list[int]
    match: bool
    detail: str
    seconds: float

    @property
    def rtl_cycles(self) -> list[int]:
        return [c.cycles for c in self.counters]

    @property
    def ok(self) -> bool:
        return self.match and self.rtl_cycles == self.model_cycles

    def to_json(self) -> dict:
        return {"segment": self.index + 1, "kernels": self.kernels,
                "host_steps": self.host_steps, "rtl_cycles": sum(self.rtl_cycles),
                "model_cycles": sum(self.model_cycles), "match": self.match,
                "detail": self.detail, "seconds": round(self.seconds, 3)}

    def line(self) -> str:
        cycles = sum(self.rtl_cycles)
        same = "= model" if self.rtl_cycles == self.model_cycles else \
            f"!= model {sum(self.model_cycles)}"
        return (f"segment {self.index + 1}: {self.kernels} kernels, {self.host_steps} host "
                f"steps, {cycles} cycles ({same}), state {'exact' if self.match else 'DIFFERS'}"
                f"{'' if self.match else ' (' + self.detail + ')'}, {self.seconds:.1f} s")


@dataclass
class Segmented:
    """The whole check: each segment's result, the outcome of the last one (on the RTL), and
    the ISA reference's wall time."""

    segments: list[SegmentResult]
    outcome: Outcome
    reference_seconds: float
    wall_seconds: float
    jobs: int

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.segments)

    def lines(self) -> list[str]:
        longest = max(s.seconds for s in self.segments)
        return [s.line() for s in self.segments] + [
            f"segments: {sum(s.ok for s in self.segments)} of {len(self.segments)} exact with "
            f"the model's cycles; ISA reference {self.reference_seconds:.1f} s, RTL "
            f"{self.wall_seconds:.1f} s with {self.jobs} workers (segments sum to "
            f"{sum(s.seconds for s in self.segments):.1f} s; the longest, {longest:.1f} s, "
            f"bounds any number of workers)"]


def check(program: Program, arrays: Mapping[str, np.ndarray], count: int, jobs: int,
          max_cycles: int | None = None, timeout: float | None = None) -> Segmented:
    """Run ``program`` on the ISA simulator keeping the state at ``count`` segment boundaries,
    then each segment on the RTL from its state, ``jobs`` at a time, each compared with the
    ISA simulator's end state and cycles."""
    from glc import workers
    from glc.sim.build import build
    from glc.sim.run import design

    segments = split(program, count)
    start = time.perf_counter()
    reference = Executor(program, arrays, "isa")
    states, model = [], []
    for segment in segments:
        states.append(reference.state.copy())
        before = len(reference.counters)
        for run in segment:
            reference.run(run)
        model.append([c.cycles for c in reference.counters[before:]])
    states.append(reference.state)
    reference_seconds = time.perf_counter() - start
    build(design(program.config))  # once, before the workers (each would build it otherwise)
    global _SHARED
    _SHARED = (program, arrays, segments, states, model, max_cycles)
    start = time.perf_counter()
    try:
        results = list(workers.run([(_segment, (k,)) for k in range(len(segments))], jobs,
                                   timeout))
    finally:
        _SHARED = None
    wall = time.perf_counter() - start
    done: list[SegmentResult] = []
    outcome = None
    for k, result in enumerate(results):
        if isinstance(result, workers.TimedOut):
            raise GlcError(f"segment {k + 1} did not finish within {result.seconds:.0f} s")
        if isinstance(result, workers.Died):
            raise GlcError(f"segment {k + 1}'s simulation died (exit code {result.exitcode})")
        if isinstance(result, GlcError):
            raise result
        segment_result, last = result
        done.append(segment_result)
        outcome = last if last is not None else outcome
    outcome.counters = [c for s in done for c in s.counters]  # every segment's, on the RTL
    return Segmented(done, outcome, reference_seconds, wall, jobs)


# What the forked workers read (fork shares it; nothing large is pickled): the program, the
# inputs, the segments, the reference states and cycles, the watchdog.
_SHARED: tuple | None = None


def _segment(k: int) -> tuple[SegmentResult, Outcome | None] | GlcError:
    program, arrays, segments, states, model, max_cycles = _SHARED
    start = time.perf_counter()
    machine = Executor(program, arrays, "rtl", max_cycles, state=states[k].copy())
    try:
        for run in segments[k]:
            machine.run(run)
    except GlcError as error:
        return GlcError(f"segment {k + 1}: {error.message}", error.where)
    except Exception as error:  # noqa: BLE001 — reported as this segment's, not a child's traceback
        return GlcError(f"segment {k + 1}: internal error: {type(error).__name__}: {error}")
    expected = states[k + 1]
    detail = _difference(machine.state, expected)
    segment = segments[k]
    result = SegmentResult(
        k, sum(len(r.steps) for r in segment if isinstance(r, Image)),
        sum(isinstance(r, HostStep) for r in segment), machine.counters, model[k],
        not detail, detail, time.perf_counter() - start)
    if k + 1 < len(segments):
        return result, None
    outcome = machine.finish()
    outcome.dram = np.empty(0, np.uint8)  # the last segment's result only: DRAM stays here
    return result, outcome


def _difference(got: State, want: State) -> str:
    """Empty if two states are the same, else where they first differ."""
    if got.pending != want.pending:
        return f"inputs still to write {got.pending} != {want.pending}"
    if got.dram.shape != want.dram.shape or not np.array_equal(got.dram, want.dram):
        differs = np.flatnonzero(got.dram != want.dram)
        first = int(differs[0])
        return (f"{differs.size} DRAM bytes differ, the first at {first:#x}: RTL "
                f"{int(got.dram[first])}, ISA {int(want.dram[first])}")
    for name in want.freed:
        if name not in got.freed or not np.array_equal(got.freed[name], want.freed[name]):
            return f"the kept bytes of freed buffer '{name}' differ"
    return ""
