"""The analytic cycle model of a kernel at tile granularity (issue 10).

A kernel is a pipeline of *tile operations*: the DMA of one tile (an A slice, a weight tile, a
STORE chunk, the bias: however many LOAD/STORE instructions its view needs, each one set-up cycle
plus one cycle per DRAM beat; a STORE's further set-up cycles are counted with its beats,
glc/cost/tiles.py), a PRELOAD, a MATMUL chunk. This module runs the timing rules of
docs/isa.md ("Timing") over those operations instead of over the instructions: the units in
order, the dependency tokens (the k-th pop of a counter is released by its k-th push), the DRAM
port shared by LOAD and STORE (LOAD wins a tie), PRELOAD/MATMUL streaming with its fill and
drain of 2N − 1 cycles, and the dispatcher's one word per cycle into queues of
``queue_depth`` entries (a unit's full queue holds the dispatcher, and with it every unit's
next instructions: a slice of many LOADs or a slow array's MATMULs; with queues taken as deep
enough, candidates of the layer suite were estimated up to 17 % low). A tile operation holds
the port for all of its instructions (the machine may let the other unit in between two of
them), and frees its queue entries as if they issued evenly over that hold. Its error against the
instruction-level model (glc/isa/cycles.py) is measured on the layer suite
(tests/cost/test_cost_pipeline.py, docs/cost.md).
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

    The dispatcher hands out one instruction a cycle in program order, each into its unit's
    queue of ``queue_depth`` entries, waiting while that queue is full (an entry frees when
    its instruction issues); each unit issues its queue in order, an operation at the
    earliest cycle its dispatch, its unit, its tokens and (a DMA) the port allow. The array
    shares nothing with LOAD and STORE but tokens and the dispatcher, and a push's or an
    issue's cycle is final once made, so the array runs ahead as far as the pushes it pops
    and its dispatch are known; then the DMA of the two that can issue first takes the port
    (LOAD on a tie), and the array goes on. A DMA waiting on a push or a dispatch not made yet
    issues after the one chosen: the array is held up, directly or not, by a DMA not issued
    yet, and every operation ends after it issues. So this is the event loop over the units
    in cycle order, without comparing the array's cycles with the DMAs' (written for speed,
    ~0.6 µs an operation: the schedule search runs it for every candidate). A DMA with gaps
    issues its instructions one after another in one step of the loop while the other DMA
    unit's next operation is dispatched and would not take the port in a gap (nothing else
    moves meanwhile: the array waits on no push the DMA makes before its last instruction).
    A DMA without gaps frees its queue entries as if its instructions issued evenly over its
    hold of the port."""
    n, depth = config.array_size, config.queue_depth
    queues: tuple[list[tuple], ...] = ([], [], [])
    for op in ops:
        queues[op[0]].append(op)
    (loads, array, stores) = queues
    n_ops, n_loads, n_array, n_stores = len(ops), len(loads), len(array), len(stores)
    # Per unit: each dispatched operation's earliest issue (its first instruction's dispatch
    # + 1), each issued instruction's issue cycle, the instructions dispatched.
    issue: tuple[list[int], ...] = ([], [], [])
    (load_issue, array_issue, store_issue) = issue
    issued_at: tuple[list[int], ...] = ([], [], [])
    exec_issued = issued_at[EXEC]
    queued = [0, 0, 0]
    at = part = dispatched = 0  # the dispatcher: next operation, its instructions out, cycle
    # Each counter's pushes, sorted (a counter nobody pops is pushed all the same: never read).
    pushed: list[list[int]] = [[] for _ in range(COUNTERS)]
    popped = [0] * COUNTERS
    last = port = exec_next = stream = preload_done = free_load = free_store = 0
    load = head = store = 0  # each queue's next operation
    started = [0, 0, 0]  # per DMA unit: the instructions of its next operation already issued
    # Comparisons, not max(): a call costs more than the rest of a step.
    while True:
        while at < n_ops:  # the dispatcher, as far as the queues' issues are known
            unit, count = ops[at][0], ops[at][2]
            times = issued_at[unit]
            while part < count:
                k = queued[unit] - depth  # the instruction whose issue frees an entry
                if k < 0:
                    dispatched += 1
                elif k < len(times):
                    dispatched = times[k] + 1 if times[k] >= dispatched else dispatched + 1
                else:
                    break
                if not part:
                    issue[unit].append(dispatched + 1)
                part += 1
                queued[unit] += 1
            if part < count:
                break
            if not count:  # nothing to move: issues with the next word
                issue[unit].append(dispatched + 2)
            at += 1
            part = 0
        ready = len(array_issue)
        while head < ready:  # the array, as far as its pops and dispatch are known
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
            exec_issued.append(t)
            for counter in op[5]:
                times = pushed[counter]
                if not times or times[-1] <= end:
                    times.append(end)
                else:
                    bisect.insort(times, end)
            if end > last:
                last = end
            head += 1
        if at < n_ops and queued[ops[at][0]] - depth < len(issued_at[ops[at][0]]):
            continue  # the array freed the entry the dispatcher waits for
        # The port: the LOAD or STORE that can issue first.
        at_load = at_store = _NEVER
        if load < len(load_issue):
            at_load = load_issue[load]
            if free_load > at_load:
                at_load = free_load
            if port > at_load:
                at_load = port
            for counter in () if started[LOAD] else loads[load][4]:
                times = pushed[counter]
                if popped[counter] >= len(times):
                    at_load = _NEVER
                    break
                if times[popped[counter]] > at_load:
                    at_load = times[popped[counter]]
        if store < len(store_issue):
            at_store = store_issue[store]
            if free_store > at_store:
                at_store = free_store
            if port > at_store:
                at_store = port
            for counter in () if started[STORE] else stores[store][4]:
                times = pushed[counter]
                if popped[counter] >= len(times):
                    at_store = _NEVER
                    break
                if times[popped[counter]] > at_store:
                    at_store = times[popped[counter]]
        if at_load <= at_store:
            if at_load == _NEVER:
                if head < n_array or load < n_loads or store < n_stores or at < n_ops:
                    raise ValueError("the tile operations deadlock")
                return last if last > dispatched + 1 else dispatched + 1  # HALT's dispatch
            # The other unit takes the port in a gap where it can issue before the DMA's
            # next instruction: a STORE strictly before (a LOAD wins a tie), a LOAD at the
            # same cycle too. One not dispatched yet is dispatched during the DMA only where
            # the dispatcher waits on the DMA's own queue: then an instruction at a time.
            op, t, lag, other = loads[load], at_load, 1, at_store + 1
            waiting = store == len(store_issue) < n_stores
        else:
            op, t, lag, other = stores[store], at_store, 0, at_load
            waiting = load == len(load_issue) < n_loads
        unit, gaps, done = op[0], op[7], started[op[0]]
        if waiting and at < n_ops and ops[at][0] == unit:
            other = 0
        times = issued_at[unit]
        if not done:
            for counter in op[4]:
                popped[counter] += 1
        if gaps:  # its instructions in turn, up to a gap the other unit would take
            while True:
                times.append(t)
                moved, drain = gaps[done]
                port = t + 1 + moved
                end = t = port + drain
                done += 1
                if done == len(gaps) or (other <= end and port + lag <= end):
                    break
            started[unit] = done if done < len(gaps) else 0
        else:
            held, count = op[2] + op[3], op[2]
            if count == 1:
                times.append(t)
            else:
                times.extend(t + j * held // count for j in range(count))
            port = t + held
            end = port + op[6]
        if unit == LOAD:
            free_load = end
            if started[LOAD]:
                continue
            load += 1
        else:
            free_store = end
            if started[STORE]:
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
