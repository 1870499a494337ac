"""gemm.py's program for one shape and layout as tile operations (glc/cost/pipeline.py's
``Op``), and the memoised cycles of a run of it with given tile costs: the analytic model's
schedule, built in gemm.py's program order (``step_plan``, ``group_load_at``, shared with the
emitter), so the tokens, the multi-buffering and the grouped weight loads are gemm.py's."""

from __future__ import annotations

import functools

from glc.cost.pipeline import (
    DMA,
    EX2LD,
    EX2ST,
    EXEC,
    LD2EX,
    LOAD,
    MATMUL,
    PRELOAD,
    ST2EX,
    STORE,
    SYNC,
    Op,
    run,
)
from glc.cost.tiles import Cost
from glc.hwconfig import HwConfig
from glc.isa.gemm_plan import GemmLayout, acc_tile, group_load_at, paired, step_plan


class TileProgram:
    """gemm.py's program for one shape and layout as tile operations, each DMA's costs left
    out: ``ops`` in program order, a DMA as its position, its tile's index in ``tiles`` and its
    unit and tokens, every other operation as it is; ``tiles`` the tiles the DMAs move, as
    ("a", first row, rows, K tile), ("b", K tile, output tile), ("g", first K tile, tiles,
    output tile: a group of weight tiles), ("h", K tile, output tile: half a weight buffer, a
    split step's), ("c", first row, rows, output tile) or ("table", rows of C, columns).
    Hashed by identity: memoised per shape (``tile_program``), so a search's runs of one shape
    share it and their cycles (``cycles_of``)."""

    def __init__(self, ops: tuple, dmas: tuple[tuple[int, int, int, tuple, tuple], ...],
                 tiles: tuple[tuple, ...]):
        # Tuples, not lists: the cyclic GC stops walking a tuple of atoms, and hundreds of
        # programs stay memoised.
        self.ops, self.dmas, self.tiles = ops, dmas, tiles

    def instantiate(self, costs: list[Cost]) -> list[Op]:
        """The operations with each DMA's (instructions, beats, tail, gaps) from ``costs``
        (per tile, in ``tiles``' order); plain tuples in Op's field order: the search builds
        millions."""
        ops = list(self.ops)
        for at, unit, index, pops, pushes in self.dmas:
            instructions, beats, tail, gaps = costs[index]
            ops[at] = (unit, DMA, instructions, beats, pops, pushes, tail, gaps)
        return ops


# gemm.py's dependency tokens as pop and push tuples.
_LD2EX, _EX2LD, _EX2ST, _ST2EX = (LD2EX,), (EX2LD,), (EX2ST,), (ST2EX,)


@functools.lru_cache(maxsize=1024)
def tile_program(m: int, k: int, n_out: int, n: int, layout: GemmLayout, table: bool
                 ) -> TileProgram:
    """gemm.py's program for the layout (``table``: with the table rows as its first LOADs)
    as a TileProgram, in its program order (``step_plan``, shared with the emitter)."""
    steps, slice_step = step_plan(m, k, n_out, n, layout)
    depth, chunks, rows = layout.weight_buffers, layout.chunks, layout.block_rows
    blocks, tiles_j = m // rows, n_out // n
    chunk = rows // chunks
    total = len(steps)
    last_kk = k // n - 1
    group = layout.weight_group

    def split(kk: int, j: int) -> bool:
        return paired(layout, kk, j, last_kk + 1, tiles_j)

    preload = (EXEC, PRELOAD, 1, n, _LD2EX, (), 0)
    preload_loaded = (EXEC, PRELOAD, 1, n, (), (), 0)  # a later tile of its group
    ops: list = []
    dmas: list[tuple[int, int, int, tuple, tuple]] = []
    tiles: dict[tuple, int] = {}  # each tile's index, in order of first use

    def dma(unit: int, tile: tuple, pops: tuple, pushes: tuple) -> None:
        dmas.append((len(ops), unit, tiles.setdefault(tile, len(tiles)), pops, pushes))
        ops.append(None)

    if table:
        dma(LOAD, ("table", m, n_out), (), ())

    def load_step(s: int) -> None:
        mb, kk, j = steps[s]
        weights = ("b", kk, j)
        pop = _EX2LD if s >= depth else ()
        if split(kk, j):  # tile j's rows, then tile j + 1's below them (gemm.py)
            dma(LOAD, ("h", kk, j), pop if s else (), ())
            weights, pop = ("h", kk, j + 1), ()
        if s == 0:
            dma(LOAD, weights, (), ())
            for c in range(chunks):
                dma(LOAD, ("a", c * chunk, chunk, 0), (), _LD2EX)
            return
        for slice_mb, slice_kk, offset, count in slice_step.get(s, ()):
            dma(LOAD, ("a", slice_mb * rows + offset, count, slice_kk), pop, ())
            pop = ()
        dma(LOAD, weights, pop, _LD2EX)

    def load_group(g: int) -> None:
        mb, kk, j = steps[g * group]
        dma(LOAD, ("g", kk, group, j), _EX2LD if g >= 2 else (), _LD2EX if g else ())

    def frees_weights(s: int) -> bool:
        if group == 1:
            return s + depth < total
        return s % group == group - 1 and s // group + 2 < total // group

    def acc(mb: int, j: int) -> tuple[bool, bool]:
        return acc_tile(layout, mb, j, blocks, tiles_j)[1:]

    def exec_step(s: int) -> None:
        mb, kk, j = steps[s]
        pair = split(kk, j)
        last_k = kk == last_kk
        # The accumulator tile's waits and frees matter at its first and last K tiles only.
        wait, frees = acc(mb, j) if kk == 0 or last_k else (False, False)
        waits = group == 1 or s % group == 0 or s in slice_step
        # A later group's first step whose A slice came on its own: its first MATMUL pops it.
        slice_too = group > 1 and s and s % group == 0 and s in slice_step
        ops.append(preload if waits else preload_loaded)
        # The stores a step's first MATMUL waits for: its tiles' of a block before, where the
        # step writes them fresh; a second one a SYNC's pop (gemm.py).
        fresh = (wait + (pair and acc(mb, j + 1)[0])) if kk == 0 else 0
        if fresh == 2:
            ops.append((EXEC, SYNC, 1, 0, _ST2EX, (), 0))
        for c in range(chunks):
            pops = (_LD2EX if (s == 0 and c) or (c == 0 and slice_too) else ()) + \
                (_ST2EX if c == 0 and fresh else ())
            pushes = (_EX2LD if c == chunks - 1 and frees_weights(s) else ()) + \
                (_EX2ST if last_k and (c == chunks - 1 or not pair) else ())
            ops.append((EXEC, MATMUL, 1, chunk, pops, pushes, 0))
        if pair:  # each tile one STORE, the second after the first (gemm.py)
            dma(STORE, ("c", mb * rows, rows, j), _EX2ST, _ST2EX if frees else ())
            dma(STORE, ("c", mb * rows, rows, j + 1), (),
                _ST2EX if acc(mb, j + 1)[1] else ())
        elif last_k:
            for c in range(chunks):
                dma(STORE, ("c", mb * rows + c * chunk, chunk, j), _EX2ST,
                    _ST2EX if c == chunks - 1 and frees else ())

    if group > 1:  # gemm.py's _grouped: a group's weights one LOAD, one block of A rows
        groups = total // group
        load_group(0)
        for c in range(chunks):
            dma(LOAD, ("a", c * chunk, chunk, 0), (), _LD2EX)
        for s in range(total):
            g = s // group
            for slice_mb, slice_kk, offset, count in slice_step.get(s + 1, ()):
                dma(LOAD, ("a", slice_mb * rows + offset, count, slice_kk), (), _LD2EX)
            if s == group_load_at(g, group, last_kk + 1) and g + 1 < groups:
                load_group(g + 1)
            exec_step(s)
        return TileProgram(tuple(ops), tuple(dmas), tuple(tiles))
    ahead = depth - 1
    for s in range(min(ahead, total)):
        load_step(s)
    for s in range(total):
        if s + ahead < total:
            load_step(s + ahead)
        exec_step(s)
    return TileProgram(tuple(ops), tuple(dmas), tuple(tiles))


@functools.lru_cache(maxsize=1 << 14)
def cycles_of(program: TileProgram, costs: tuple[Cost, ...],
              config: HwConfig) -> int:
    """The cycles of ``program`` with these tile costs: the search meets the same run again
    and again (the same tiles in another candidate, or the same candidate's other order)."""
    return run(program.instantiate(costs), config)
