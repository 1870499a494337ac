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


@dataclass(frozen=True)
class Op:
    """One tile operation of a unit's queue, in program order."""

    unit: str  # "load", "exec", "store", "vector"
    kind: str  # "dma", "preload", "matmul", "vector"
    instructions: int
    length: int  # dma: beats; matmul: rows; vector: rows read (count·group)
    pops: tuple[str, ...] = ()
    pushes: tuple[str, ...] = ()
    tail: int = 0  # dma: cycles the unit stays busy after releasing the port (Dma.tail)


def run(ops: list[Op], config: HwConfig) -> int:
    """The predicted cycles of the tile operations ``ops`` (program order) ending in HALT."""
    n = config.array_size
    queues: dict[str, list[int]] = {"load": [], "exec": [], "store": [], "vector": []}
    dispatch = []
    words = 0
    for index, op in enumerate(ops):
        queues[op.unit].append(index)
        dispatch.append(words + 1)  # one word a cycle, word 0 in cycle 1 (docs/isa.md)
        words += op.instructions
    heads = dict.fromkeys(queues, 0)
    pushed: dict[str, list[int]] = {}
    popped: dict[str, int] = {}
    free = dict.fromkeys(queues, 0)
    port = exec_next = stream = preload_done = swap_clear = 0
    pending = False
    last = words + 1  # HALT dispatches in cycle `words`

    def earliest(unit: str) -> int | None:
        """When the unit's head can issue, or None while a token it pops is not yet pushed."""
        op = ops[queues[unit][heads[unit]]]
        t = max(dispatch[queues[unit][heads[unit]]] + 1, free[unit])
        for counter in op.pops:
            times = pushed.get(counter, [])
            k = popped.get(counter, 0)
            if k >= len(times):
                return None
            t = max(t, times[k])
        if op.kind == "dma":
            return max(t, port)
        if op.kind == "preload":
            return max(t, exec_next, preload_done, swap_clear)
        if op.kind == "matmul":
            t = max(t, exec_next, stream)
            return max(t, preload_done) if pending else t
        return t

    # Which unit pops each counter: a push can only release that unit's head.
    consumer = {c: u for op in ops for c in op.pops for u in (op.unit,)}
    cand: dict[str, int | None] = {}
    stale = set(queues)
    order = ("load", "exec", "store", "vector")  # a tie: LOAD wins the port (docs/isa.md)
    remaining = len(ops)
    while remaining:
        for unit in stale:
            cand[unit] = earliest(unit) if heads[unit] < len(queues[unit]) else None
        stale.clear()
        unit, t = None, 0
        for u in order:
            c = cand[u]
            if c is not None and (unit is None or c < t):
                unit, t = u, c
        if unit is None:
            raise ValueError("the tile operations deadlock")
        op = ops[queues[unit][heads[unit]]]
        heads[unit] += 1
        remaining -= 1
        stale.add(unit)
        for counter in op.pops:
            popped[counter] = popped.get(counter, 0) + 1
        if op.kind == "dma":
            port = t + op.instructions + op.length
            end = free[unit] = port + op.tail
            stale.update(("load", "store"))
        elif op.kind == "preload":
            exec_next, preload_done, pending = t + 1, t + n, True
            end = t + n
        elif op.kind == "matmul":
            if pending:
                pending, swap_clear = False, t + n
            exec_next, stream = t + 1, t + op.length
            end = t + op.length + 2 * n - 1
        else:
            end = free[unit] = t + 1 + op.length
        for counter in op.pushes:
            bisect.insort(pushed.setdefault(counter, []), end)
            if counter in consumer:
                stale.add(consumer[counter])
        last = max(last, end)
    return last
