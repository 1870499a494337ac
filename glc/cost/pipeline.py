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
    candidate, ~1.6 µs an operation): units and counters are indices, a unit's candidate
    recomputed only when something it waits on changed. A periodic stretch of the schedule is
    not walked op by op: at each PRELOAD the state is compared with the earlier ones
    (``_jump``), and where it repeats shifted in time over a stretch of operations that repeats
    too, the loop moves on by whole periods at once, exactly."""
    n = config.array_size
    queues: tuple[list[tuple], ...] = ([], [], [], [])
    issue: tuple[list[int], ...] = ([], [], [], [])  # per operation: its dispatch cycle + 1
    consumer = [-1] * COUNTERS  # which unit pops each counter: a push releases only its head
    words = 0
    for op in ops:
        for counter in op[4]:
            consumer[counter] = op[0]
        # One word a cycle, word 0 in cycle 1 (docs/isa.md), issue at the earliest the cycle
        # after.
        queues[op[0]].append(op)
        issue[op[0]].append(words + 2)
        words += op[2]
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
    seen: dict[tuple, tuple] = {}  # _jump's states at PRELOADs
    while remaining:
        for unit in stale:
            head = heads[unit]
            if head == sizes[unit]:
                cand[unit] = _NEVER
                continue
            entry = queues[unit][head]
            t = issue[unit][head]
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
        if kind == PRELOAD and t > words:
            clocks = [port, exec_next, stream, preload_done, last]
            shift, skipped = _jump(seen, t, clocks, heads, sizes, queues, free, pushed, popped)
            if skipped:
                port, exec_next, stream, preload_done, last = (c + shift for c in clocks)
                remaining -= skipped
                stale = [0, 1, 2, 3]
    return last


def _jump(seen: dict, t: int, clocks: list[int], heads: list[int], sizes: list[int],
          queues: tuple[list[tuple], ...], free: list[int], pushed: list[list[int]],
          popped: list[int]) -> tuple[int, int]:
    """At a PRELOAD issued in cycle ``t``, every operation dispatched: move the loop on by
    whole periods where its state repeats. Returns the cycles and operations skipped (moving
    ``heads``, ``free`` and the pending tokens on; the caller moves ``clocks`` on).

    Once every operation is dispatched the loop is invariant under a shift in time, and a time
    before ``t`` acts as ``t`` (every later candidate is the maximum of terms one of which is
    at least ``t``), so the state is the times after ``t``, relative to it: the units' and the
    port's, the array's, the last end, the pushes not yet popped. When that state is the one at
    an earlier PRELOAD, P_u operations of each unit and Δ cycles before, and the operations of
    each unit repeat with period P_u from there, the next periods repeat it exactly: each
    consumes P_u operations in Δ cycles. The stretch must repeat over every operation the
    period reads, its head at the end included (the candidates compare it)."""
    for counter, times in enumerate(pushed):
        if popped[counter]:
            del times[:popped[counter]]
            popped[counter] = 0
    key = (*[c - t if c > t else 0 for c in clocks],
           *[c - t if c > t else 0 for c in free],
           *[tuple([c - t if c > t else 0 for c in times]) for times in pushed])
    before = seen.get(key)
    seen[key] = (heads.copy(), t)
    if before is None:
        return 0, 0
    periods = 1 << 62
    for unit, earlier in enumerate(before[0]):
        period = heads[unit] - earlier
        if period:
            most = min(periods, (sizes[unit] - 1 - earlier) // period - 1)
            if most <= 0:
                return 0, 0
            periods = (_repeats(queues[unit], earlier, period, most * period + 1) - 1) // period
            if periods <= 0:
                return 0, 0
    shift = periods * (t - before[1])
    skipped = 0
    for unit, earlier in enumerate(before[0]):
        skipped += periods * (heads[unit] - earlier)
        heads[unit] += periods * (heads[unit] - earlier)
        free[unit] += shift
    for times in pushed:
        times[:] = [c + shift for c in times]
    seen[key] = (heads.copy(), t + shift)
    return shift, skipped


def _repeats(queue: list[tuple], start: int, period: int, most: int) -> int:
    """How many operations from ``start`` on (at most ``most``) equal the one ``period``
    later, compared in slices of growing size."""
    done, size = 0, 1
    while done < most:
        size = min(size, most - done)
        if queue[start + done:start + done + size] == \
                queue[start + period + done:start + period + done + size]:
            done += size
            size *= 2
        elif size == 1:
            return done
        else:
            size //= 2
    return done
