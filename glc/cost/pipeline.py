"""The analytic cycle model of a kernel at tile granularity (issue 10).

A kernel is a pipeline of *tile operations*: the DMA of one tile (an A slice, a weight tile, a
STORE chunk, the bias: however many LOAD/STORE instructions its view needs, each one set-up cycle
plus one cycle per DRAM beat), a PRELOAD, a MATMUL chunk. This module runs the timing rules of
docs/isa.md ("Timing") over those operations instead of over the instructions: the units in
order, the dependency tokens (the k-th pop of a counter is released by its k-th push), the DRAM
port shared by LOAD and STORE (LOAD wins a tie), PRELOAD/MATMUL streaming with its fill and
drain of 2N − 1 cycles, and the dispatcher's one word per cycle. A tile operation holds the port
for all of its instructions (the machine may let the other unit in between two of them); the
queues are taken as deep enough (the lowering's schedules keep them fed). Its error against the
instruction-level model (glc/isa/cycles.py) is measured on the layer suite
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
    writing its last block, docs/isa.md "Timing"); ``steps`` each instruction's (beats,
    tail)."""

    instructions: int
    beats: int
    tail: int = 0
    steps: tuple[tuple[int, int], ...] = ()

    def __add__(self, other: Dma) -> Dma:
        """One after the other on a unit: the first's tail keeps the unit before the second
        starts (``beats`` counts it, as if it held the port; ``gaps`` says where it does
        not)."""
        return Dma(self.instructions + other.instructions,
                   self.beats + self.tail + other.beats, other.tail, self.steps + other.steps)

    @property
    def gaps(self) -> tuple[tuple[int, int], ...]:
        """The instructions' (beats, tail) where one before the last has a tail, else (): the
        port is free during those tails, and a STORE that takes it there holds up the rest
        of the tile (a transposing LOAD a block of an NCHW image's pixels, 28 of them an A
        slice, each draining 16 cycles: 20 % of a kernel's cycles when taken as held)."""
        return self.steps if any(tail for _, tail in self.steps[:-1]) else ()

    @property
    def cycles(self) -> int:
        """Unit cycles: one set-up cycle per instruction, one per beat, the tail
        (docs/isa.md)."""
        return self.instructions + self.beats + self.tail


class Op(NamedTuple):
    """One tile operation of a unit's queue, in program order. ``run`` reads any tuple of
    these fields in this order (a DMA's eight, any other's the first six): the cost model
    builds plain ones (hundreds of thousands per search, where a named tuple's constructor
    would be a tenth of the cost). A DMA with ``gaps`` leaves the port between its
    instructions, its other fields their sums (``Dma``)."""

    unit: int  # LOAD, EXEC, STORE
    kind: int  # DMA (LOAD, STORE), PRELOAD, MATMUL, SYNC (EXEC)
    instructions: int
    length: int  # dma: beats; matmul: rows
    pops: tuple[int, ...] = ()  # token counters (LD2EX …)
    pushes: tuple[int, ...] = ()
    tail: int = 0  # dma: cycles the unit stays busy after releasing the port (Dma.tail)
    gaps: tuple[tuple[int, int], ...] = ()  # dma: its instructions' (beats, tail) (Dma.gaps)


LOAD, EXEC, STORE = range(3)  # the order breaks ties: LOAD wins the port (docs/isa.md)
DMA, PRELOAD, MATMUL, SYNC = range(4)
# The token counters the tile operations pop and push (docs/isa.md "Dependency tokens").
LD2EX, EX2LD, EX2ST, ST2EX = range(4)
COUNTERS = 4
_NEVER = 1 << 62  # the issue cycle of an operation waiting on a token not pushed yet


def run(ops: list[Op], config: HwConfig) -> int:
    """The predicted cycles of the tile operations ``ops`` (program order) ending in HALT.

    Each unit issues its queue in order, an operation at the earliest cycle its dispatch, its
    unit, its tokens and (a DMA) the port allow. The array shares nothing with LOAD and STORE
    but tokens, and a push's cycle is final once made, so the array runs ahead as far as the
    pushes it pops are known; then the DMA of the two that can issue first takes the port
    (LOAD on a tie), and the array goes on. A DMA waiting on a push the array has not made yet
    issues after the one chosen: the array is held up, directly or not, by a DMA not issued
    yet, and every operation ends after it issues. So this is the event loop over the units
    in cycle order, without comparing the array's cycles with the DMAs' (written for speed,
    ~0.4 µs an operation: the schedule search runs it for every candidate). A DMA with gaps
    issues its instructions one after another in one step of the loop until the other DMA
    unit would take the port in a gap (nothing else moves meanwhile: the array waits on no
    push the DMA makes before its last instruction)."""
    n = config.array_size
    queues: tuple[list[tuple], ...] = ([], [], [])
    issue: tuple[list[int], ...] = ([], [], [])  # per operation: its dispatch cycle + 1
    words = 0
    for op in ops:
        # One word a cycle, word 0 in cycle 1 (docs/isa.md), issue at the earliest the cycle
        # after.
        queues[op[0]].append(op)
        issue[op[0]].append(words + 2)
        words += op[2]
    (loads, array, stores), (load_issue, array_issue, store_issue) = queues, issue
    n_loads, n_array, n_stores = len(loads), len(array), len(stores)
    # Each counter's pushes, sorted (a counter nobody pops is pushed all the same: never read).
    pushed: list[list[int]] = [[] for _ in range(COUNTERS)]
    popped = [0] * COUNTERS
    last = words + 1  # HALT dispatches in cycle `words`
    port = exec_next = stream = preload_done = free_load = free_store = 0
    load = head = store = 0  # each queue's next operation
    issued = [0, 0, 0]  # per DMA unit: the instructions of its next operation already issued
    # Comparisons, not max(): a call costs more than the rest of a step.
    while True:
        while head < n_array:  # the array, as far as the pushes it pops are known
            op = array[head]
            t = array_issue[head]
            for counter in op[4]:
                times = pushed[counter]
                if popped[counter] >= len(times):
                    t = _NEVER
                    break
                if times[popped[counter]] > t:
                    t = times[popped[counter]]
            if t == _NEVER:
                break
            for counter in op[4]:
                popped[counter] += 1
            if exec_next > t:
                t = exec_next
            if op[1] == MATMUL:
                if stream > t:
                    t = stream
                exec_next, stream = t + 1, t + op[3]
                end = t + op[3] + 2 * n - 1
            elif op[1] == PRELOAD:
                if preload_done > t:
                    t = preload_done
                exec_next = t + 1
                end = preload_done = t + n
            else:  # SYNC: its tokens, a cycle
                exec_next = end = t + 1
            for counter in op[5]:
                times = pushed[counter]
                if not times or times[-1] <= end:
                    times.append(end)
                else:
                    bisect.insort(times, end)
            if end > last:
                last = end
            head += 1
        # The port: the LOAD or STORE that can issue first.
        at_load = at_store = _NEVER
        if load < n_loads:
            at_load = load_issue[load]
            if free_load > at_load:
                at_load = free_load
            if port > at_load:
                at_load = port
            for counter in () if issued[LOAD] else loads[load][4]:
                times = pushed[counter]
                if popped[counter] >= len(times):
                    at_load = _NEVER
                    break
                if times[popped[counter]] > at_load:
                    at_load = times[popped[counter]]
        if store < n_stores:
            at_store = store_issue[store]
            if free_store > at_store:
                at_store = free_store
            if port > at_store:
                at_store = port
            for counter in () if issued[STORE] else stores[store][4]:
                times = pushed[counter]
                if popped[counter] >= len(times):
                    at_store = _NEVER
                    break
                if times[popped[counter]] > at_store:
                    at_store = times[popped[counter]]
        if at_load <= at_store:
            if at_load == _NEVER:
                if head < n_array or load < n_loads or store < n_stores:
                    raise ValueError("the tile operations deadlock")
                return last
            # The other unit takes the port in a gap where it can issue before the DMA's
            # next instruction: a STORE strictly before (a LOAD wins a tie), a LOAD at the
            # same cycle too.
            op, t, other, lag = loads[load], at_load, at_store + 1, 1
        else:
            op, t, other, lag = stores[store], at_store, at_load, 0
        unit, gaps, done = op[0], op[7], issued[op[0]]
        if not done:
            for counter in op[4]:
                popped[counter] += 1
        if gaps:  # its instructions in turn, up to a gap the other unit would take
            while True:
                moved, drain = gaps[done]
                port = t + 1 + moved
                end = t = port + drain
                done += 1
                if done == len(gaps) or (other <= end and port + lag <= end):
                    break
            issued[unit] = done if done < len(gaps) else 0
        else:
            port = t + op[2] + op[3]
            end = port + op[6]
        if unit == LOAD:
            free_load = end
            if issued[LOAD]:
                continue
            load += 1
        else:
            free_store = end
            if issued[STORE]:
                continue
            store += 1
        for counter in op[5]:
            times = pushed[counter]
            if not times or times[-1] <= end:
                times.append(end)
            else:
                bisect.insort(times, end)
        if end > last:
            last = end
