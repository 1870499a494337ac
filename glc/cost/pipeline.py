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
    """One tile operation of a unit's queue, in program order. ``run`` reads any tuple of
    these seven fields in this order: the cost model builds plain ones (hundreds of thousands
    per search, where a named tuple's constructor would be a tenth of the cost)."""

    unit: int  # LOAD, EXEC, STORE, VECTOR
    kind: int  # DMA, PRELOAD, MATMUL, FOLD
    instructions: int
    length: int  # dma: beats; matmul: rows; fold: rows read (count·group)
    pops: tuple[int, ...] = ()  # token counters (LD2EX …)
    pushes: tuple[int, ...] = ()
    tail: int = 0  # dma: cycles the unit stays busy after releasing the port (Dma.tail)


LOAD, EXEC, STORE, VECTOR = range(4)  # the order breaks ties: LOAD wins the port (docs/isa.md)
DMA, PRELOAD, MATMUL, FOLD = range(4)
# The token counters the tile operations pop and push (docs/isa.md "Dependency tokens").
LD2EX, EX2LD, EX2ST, ST2EX = range(4)
COUNTERS = 4
_NEVER = 1 << 62  # the issue cycle of a unit waiting on a token, or with nothing left


def run(ops: list[Op], config: HwConfig) -> int:
    """The predicted cycles of the tile operations ``ops`` (program order) ending in HALT.

    An event loop over the four units' queues: the unit whose head can issue earliest goes
    next (the lowest unit on a tie). Written for speed (the schedule search runs it for every
    candidate, ~1.6 µs an operation): units and counters are indices, each queue's operations
    pre-decoded, a unit's candidate recomputed only when something it waits on changed."""
    n = config.array_size
    queues: tuple[list[tuple], ...] = ([], [], [], [])
    consumer = [-1] * COUNTERS  # which unit pops each counter: a push releases only its head
    words = 0
    for unit, kind, instructions, length, pops, pushes, tail in ops:
        for counter in pops:
            consumer[counter] = unit
        # (dispatch cycle + 1, kind, instructions, length, pops, pushes, tail); one word a
        # cycle, word 0 in cycle 1 (docs/isa.md), issue at the earliest the cycle after
        queues[unit].append((words + 2, kind, instructions, length, pops, pushes, tail))
        words += instructions
    heads = [0, 0, 0, 0]
    sizes = [len(q) for q in queues]
    pushed: list[list[int]] = [[] for _ in range(COUNTERS)]
    popped = [0] * COUNTERS
    free = [0, 0, 0, 0]
    port = exec_next = stream = preload_done = 0
    last = words + 1  # HALT dispatches in cycle `words`
    cand = [_NEVER] * 4  # each unit's head's issue cycle, _NEVER while it waits on a token
    stale = [0, 1, 2, 3]  # the units whose candidate may have changed
    remaining = len(ops)
    while remaining:
        for unit in stale:
            head = heads[unit]
            if head == sizes[unit]:
                cand[unit] = _NEVER
                continue
            entry = queues[unit][head]
            t = entry[0]
            if free[unit] > t:
                t = free[unit]
            for counter in entry[4]:
                times = pushed[counter]
                k = popped[counter]
                if k >= len(times):
                    t = _NEVER
                    break
                if times[k] > t:
                    t = times[k]
            if t != _NEVER:
                kind = entry[1]
                if kind == DMA:
                    if port > t:
                        t = port
                elif kind == MATMUL:
                    t = max(t, exec_next, stream)
                elif kind == PRELOAD:
                    t = max(t, exec_next, preload_done)
            cand[unit] = t
        t = min(cand)
        if t == _NEVER:
            raise ValueError("the tile operations deadlock")
        unit = cand.index(t)  # the lowest unit on a tie
        _, kind, instructions, length, pops, pushes, tail = queues[unit][heads[unit]]
        heads[unit] += 1
        remaining -= 1
        stale = [unit]
        for counter in pops:
            popped[counter] += 1
        if kind == DMA:
            port = t + instructions + length
            end = free[unit] = port + tail
            stale = [0, 2]  # LOAD and STORE share the port
        elif kind == MATMUL:
            exec_next, stream = t + 1, t + length
            end = t + length + 2 * n - 1
        elif kind == PRELOAD:
            exec_next = t + 1
            end = preload_done = t + n
        else:
            end = free[unit] = t + 1 + length
        for counter in pushes:
            if consumer[counter] < 0:  # nobody pops it: it releases nothing
                continue
            times = pushed[counter]
            if not times or times[-1] <= end:
                times.append(end)
            else:
                bisect.insort(times, end)
            stale.append(consumer[counter])
        if end > last:
            last = end
    return last
