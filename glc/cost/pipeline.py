"""The analytic cycle model of a kernel at tile granularity (issue 10).

A kernel is a pipeline of *tile operations*: the DMA of one tile (an A slice, a weight tile, a
STORE chunk, the bias: however many LOAD/STORE instructions its view needs, each one set-up cycle
plus one cycle per DRAM beat), a PRELOAD, a MATMUL chunk, a VECTOR fold. This module runs the
timing rules of docs/isa.md ("Timing") over those operations instead of over the instructions:
the units in order, the dependency tokens (the k-th pop of a counter is released by its k-th
push), the DRAM port shared by LOAD and STORE (LOAD wins a tie), PRELOAD/MATMUL streaming with
its fill and drain of 2N − 1 cycles, and the dispatcher's one word per cycle. A tile operation
holds the port for all of its instructions (the machine may let the other unit in between two of
them); the queues are taken as deep enough (the lowering's schedules keep them fed). Its error
against the instruction-level model (glc/isa/cycles.py) is measured on the layer suite
(tests/cost/test_cost_pipeline.py, docs/lowering.md "The cost model").
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import NamedTuple

from glc.hwconfig import HwConfig


@dataclass(frozen=True)
class Dma:
    """The cost of moving one tile: its LOAD or STORE instructions, their DRAM beats, and the
    ``tail`` of cycles its unit stays busy after the port is released (a transposing LOAD
    writing its last block, docs/isa.md "Timing")."""

    instructions: int
    beats: int
    tail: int = 0

    def __add__(self, other: Dma) -> Dma:
        """One after the other on a unit: the first's tail keeps the unit, and so (taken as
        held) the port, before the second starts."""
        return Dma(self.instructions + other.instructions,
                   self.beats + self.tail + other.beats, other.tail)

    @property
    def cycles(self) -> int:
        """Unit cycles: one set-up cycle per instruction, one per beat, the tail
        (docs/isa.md)."""
        return self.instructions + self.beats + self.tail


class Op(NamedTuple):
    """One tile operation of a unit's queue, in program order (a tuple: the search makes
    hundreds of thousands)."""

    unit: str  # "load", "exec", "store", "vector"
    kind: str  # "dma", "preload", "matmul", "vector"
    instructions: int
    length: int  # dma: beats; matmul: rows; vector: rows read (count·group)
    pops: tuple[str, ...] = ()
    pushes: tuple[str, ...] = ()
    tail: int = 0  # dma: cycles the unit stays busy after releasing the port (Dma.tail)


UNITS = ("load", "exec", "store", "vector")  # a tie: LOAD wins the port (docs/isa.md)
_DMA, _PRELOAD, _MATMUL, _OTHER = range(4)
_KINDS = {"dma": _DMA, "preload": _PRELOAD, "matmul": _MATMUL}


def run(ops: list[Op], config: HwConfig) -> int:
    """The predicted cycles of the tile operations ``ops`` (program order) ending in HALT.

    An event loop over the four units' queues: the unit whose head can issue earliest goes
    next (the lowest unit on a tie). Written for speed (the schedule search runs it for every
    candidate): units are indices, each queue's operations pre-decoded."""
    n = config.array_size
    queues: list[list[tuple]] = [[], [], [], []]
    index_of = {u: i for i, u in enumerate(UNITS)}
    words = 0
    consumer: dict[str, int] = {}  # which unit pops each counter: a push releases only its head
    for op in ops:
        unit = index_of[op.unit]
        # (dispatch cycle + 1, kind, instructions, length, pops, pushes, tail); one word a
        # cycle, word 0 in cycle 1 (docs/isa.md), issue at the earliest the cycle after
        queues[unit].append((words + 2, _KINDS.get(op.kind, _OTHER), op.instructions,
                             op.length, op.pops, op.pushes, op.tail))
        words += op.instructions
        for counter in op.pops:
            consumer[counter] = unit
    heads = [0, 0, 0, 0]
    sizes = [len(q) for q in queues]
    pushed: dict[str, list[int]] = {c: [] for c in consumer}
    popped: dict[str, int] = dict.fromkeys(consumer, 0)
    free = [0, 0, 0, 0]
    port = exec_next = stream = preload_done = 0
    last = words + 1  # HALT dispatches in cycle `words`
    cand: list[int | None] = [None, None, None, None]
    stale = [True, True, True, True]
    remaining = len(ops)
    while remaining:
        for unit in range(4):
            if not stale[unit]:
                continue
            stale[unit] = False
            if heads[unit] == sizes[unit]:
                cand[unit] = None
                continue
            ready, kind, _, _, pops, _, _ = queues[unit][heads[unit]]
            t = ready if ready > free[unit] else free[unit]
            for counter in pops:
                times = pushed.get(counter)
                k = popped[counter]
                if times is None or k >= len(times):
                    t = None
                    break
                if times[k] > t:
                    t = times[k]
            if t is not None:
                if kind == _DMA:
                    t = max(t, port)
                elif kind == _PRELOAD:
                    t = max(t, exec_next, preload_done)
                elif kind == _MATMUL:
                    t = max(t, exec_next, stream)
            cand[unit] = t
        unit, t = -1, 0
        for u in range(4):
            c = cand[u]
            if c is not None and (unit < 0 or c < t):
                unit, t = u, c
        if unit < 0:
            raise ValueError("the tile operations deadlock")
        _, kind, instructions, length, pops, pushes, tail = queues[unit][heads[unit]]
        heads[unit] += 1
        remaining -= 1
        stale[unit] = True
        for counter in pops:
            popped[counter] += 1
        if kind == _DMA:
            port = t + instructions + length
            end = free[unit] = port + tail
            stale[0] = stale[2] = True  # LOAD and STORE share the port
        elif kind == _PRELOAD:
            exec_next = t + 1
            end = preload_done = t + n
        elif kind == _MATMUL:
            exec_next, stream = t + 1, t + length
            end = t + length + 2 * n - 1
        else:
            end = free[unit] = t + 1 + length
        for counter in pushes:
            if counter in consumer:
                times = pushed[counter]
                if not times or times[-1] <= end:
                    times.append(end)
                else:
                    bisect.insort(times, end)
                stale[consumer[counter]] = True
        if end > last:
            last = end
    return last
