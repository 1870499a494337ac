"""The analytic cost of a systolic kernel: gemm.py's schedule as tile operations.

``estimate`` predicts the cycles of the kernel glc/lower/kernel.py builds for C = A·B
without building it: the blocking gemm.py would choose (glc/isa/gemm_plan.py: ``plan``), its
steps and the load step of each A slice (``step_plan``), and per tile the instructions and
DRAM beats of the transfers the operand's view needs (glc/lower/transfer.py), run through the
tile-level pipeline model (glc/cost/pipeline.py). Tile costs are memoised per target and
canonical tile (glc/cost/tiles.py), gemm.py's program per shape and each run of it per tile
costs, kernel estimates per signature (the operands' views and the config), so extraction and
every choice of the lowering (orientation, step order) cost a candidate once and share most
of its runs and tiles.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, replace

from glc.cost.steps import cycles_of, tile_program
from glc.cost.tiles import Cost, tile_costs
from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.isa.gemm_plan import GemmLayout, MatrixRows, first_row, plan
from glc.lower.tiling import k_segments
from glc.lower.transfer import Target

ORDERS = ("k-outer", "j-outer")
GROUP_ROWS = 4  # grouped weight loads are costed for blocks of fewer than GROUP_ROWS·N rows


@dataclass(frozen=True)
class TableCost:
    """What a kernel's table of biases and multipliers adds (glc/lower/table.py): ``vectors``
    table rows each STORE reads first (one set-up cycle each, holding the DRAM port), loaded
    one row per output tile, or with ``by_rows`` per N rows of C, whose STOREs are then cut
    into runs of at most N rows."""

    vectors: int = 0
    by_rows: bool = False


NO_TABLE = TableCost()


@dataclass(frozen=True)
class Estimate:
    """A kernel's predicted cycles and the step order, block of A rows and weight loads they
    are for."""

    cycles: int
    order: str
    block_rows: int  # the block of A rows (gemm.py's Mb)
    group: int = 1  # j-outer's weight tiles a LOAD (gemm.py)
    split: bool = False  # the last K tile's output tiles in pairs, split MATMULs (gemm.py)
    spread: bool = False  # k-outer's A slices loaded in parts (gemm_plan.py, step_plan)


class _Tiles:
    """The tile costs of one kernel, memoised per tile (and per target across kernels:
    glc/cost/tiles.py)."""

    def __init__(self, a: tuple[Target, ...], b: tuple[Target, ...], c: Target, mode: dict,
                 k_tiles, o_tiles, config: HwConfig, table: TableCost):
        self.a, self.b = [tile_costs(t) for t in a], [tile_costs(t) for t in b]
        self.c, self.mode, self.table = tile_costs(c), tuple(sorted(mode.items())), table
        self.k_tiles, self.o_tiles = k_tiles, o_tiles
        self.port, self.n = config.dram_port_bytes, config.array_size
        self.a_matrix = len(a[0].view.groups) == 2
        self.c_matrix = len(c.view.groups) == 2
        self._a: dict[tuple, Cost] = {}
        self._b: dict[tuple, Cost] = {}
        self._c: dict[tuple, Cost] = {}

    def load_a(self, first: int, count: int, kk: int) -> Cost:
        found = self._a.get((first, count, kk))
        if found is None:
            part, cols = self.k_tiles[kk]
            rows = (first, count) if self.a_matrix else None
            found = self._a[first, count, kk] = self.a[part].cost(rows, cols, (), self.port,
                                                                  "a", count, self.n)
        return found

    def load_b(self, kk: int, j: int) -> Cost:
        found = self._b.get((kk, j))
        if found is None:
            part, rows = self.k_tiles[kk]
            found = self._b[kk, j] = self.b[part].cost(rows, self.o_tiles[j], (), self.port,
                                                       "b", self.n, self.n)
        return found

    def load_half(self, kk: int, j: int) -> Cost:
        """The weights of K tile ``kk`` (at most N/2 rows) for output tile ``j`` into half a
        buffer: a split step's (gemm.py)."""
        found = self._b.get((kk, j, "h"))
        if found is None:
            part, rows = self.k_tiles[kk]
            found = self._b[kk, j, "h"] = self.b[part].cost(rows, self.o_tiles[j], (), self.port,
                                                            "b", self.n // 2, self.n)
        return found

    def load_group(self, kk: int, size: int, j: int) -> Cost:
        """``size`` weight tiles from K tile ``kk`` for output tile ``j``, one LOAD (or one a
        run of them: glc/lower/tiling.py's k_segments): their instructions and beats, the
        block-write tails of a transposing one summed at its end (the LOAD unit waits them
        out either way)."""
        found = self._b.get((kk, size, j))
        if found is None:
            instructions = beats = tail = 0
            for part, rows in k_segments(self.k_tiles[kk:kk + size], self.n):
                moved = self.b[part].cost(rows, self.o_tiles[j], (), self.port, "b",
                                          -(-rows[1] // self.n) * self.n, self.n)
                instructions, beats, tail = (instructions + moved[0], beats + moved[1],
                                             tail + moved[2])
            # One LOAD a segment, each holding the port through its blocks' drains.
            found = self._b[kk, size, j] = (instructions, beats, tail, ())
        return found

    def store(self, first: int, count: int, j: int) -> Cost:
        found = self._c.get((first, count, j))
        if found is None:
            found = self._c[first, count, j] = self._store(first, count, j)
        return found

    def _store(self, first: int, count: int, j: int) -> Cost:
        pieces = [(first, count)]
        if self.table.by_rows and self.c_matrix:
            pieces = [(r, min(self.n, first + count - r))
                      for r in range(first, first + count, self.n)]
        instructions = beats = 0
        for part in pieces:
            found, moved, _, _ = self.c.cost(part if self.c_matrix else None, self.o_tiles[j],
                                             self.mode, self.port, "c")
            # Each STORE's set-up cycles for the table rows it reads hold the port like beats.
            instructions += found
            beats += moved + self.table.vectors * found
        return instructions, beats, 0, ()

    def load_table(self, m: int, n_out: int) -> Cost:
        """The table's LOADs (one a row of N int32) for ``m`` rows of C in ``n_out`` columns."""
        keys = -(-m // self.n) if self.table.by_rows else n_out // self.n
        count = keys * self.table.vectors
        return count, count * -(-4 * self.n // self.port), 0, ()

    def k_kinds(self, rows: int, first: int) -> tuple[list[int], ...]:
        """The K tiles from ``first`` but the last, by kind (what the LOADs of the tile and
        of its A slice of ``rows`` rows move), in order of first appearance."""
        memo = _shared(("k", tuple(self.a), tuple(self.b), self.a_matrix, self.k_tiles,
                        self.o_tiles[0], self.port, self.n, rows, first))
        if "kinds" not in memo:
            kinds: dict[tuple, list[int]] = {}
            for i in range(first, len(self.k_tiles) - 1):
                kinds.setdefault((self.load_a(0, rows, i), self.load_b(i, 0)), []).append(i)
            memo["kinds"] = tuple(kinds.values())
        return memo["kinds"]

    def output_period(self, rows: int, first: int) -> int:
        """The shortest period up to MAX_PERIOD with which the kinds of the output tiles from
        ``first`` but the last repeat (what the tile's weights of K tile 0 and its STORE of
        ``rows`` rows move), 1 where none does."""
        memo = _shared(("j", self.b[self.k_tiles[0][0]], self.k_tiles[0], self.c, self.mode,
                        self.table, self.c_matrix, self.o_tiles, self.port, self.n, rows, first))
        if "period" not in memo:
            kinds = [(self.load_b(0, j), self.store(0, rows, j))
                     for j in range(first, len(self.o_tiles) - 1)]
            memo["period"] = next((p for p in range(1, MAX_PERIOD + 1)
                                   if all(kinds[i] == kinds[i + p]
                                          for i in range(len(kinds) - p))), 1)
        return memo["period"]


@functools.lru_cache(maxsize=4096)
def _shared(key: tuple) -> dict:
    """A memo shared by every kernel whose tiles give ``key`` (all that the memoised figure
    depends on: the targets' tile costs, the tiles, the config): candidates of one search meet
    the same operands again and again. Bounded: the cache drops the least used."""
    return {}


def estimate(a: tuple[Target, ...], b: tuple[Target, ...], c: Target, raw: bool, relu: bool,
             shift: int, config: HwConfig, k_tiles, o_tiles,
             orders=ORDERS, block_rows: int = 0, table: TableCost = NO_TABLE) -> Estimate:
    """The predicted cycles of build_kernel's kernel for these operands (per part of K, views
    already shared over K; ``k_tiles`` its (part, range) tiles, ``o_tiles`` the output
    tiles: glc/lower/tiling.py), the fastest of ``orders``. Memoised per
    signature: the views and element sizes (not which tensors they are or where they lie, a
    view's offset included: a tile's beats do not depend on its address; so a layer's equal
    chunks are one estimate), the output conversion and table, the config."""
    def placed(t: Target) -> Target:
        return replace(t, address=0, view=replace(t.view, buffer="", offset=0))

    return _estimate(tuple(map(placed, a)), tuple(map(placed, b)), placed(c), raw, relu, shift,
                     config, tuple(k_tiles), tuple(o_tiles), tuple(orders), block_rows, table)


@functools.lru_cache(maxsize=4096)
def _estimate(a: tuple[Target, ...], b: tuple[Target, ...], c: Target, raw: bool, relu: bool,
              shift: int, config: HwConfig, k_tiles, o_tiles, orders, block_rows: int,
              table: TableCost) -> Estimate:
    n = config.array_size
    m = a[0].view.dims[0] if len(a[0].view.groups) == 2 else 1
    k_pad, o_pad = len(k_tiles) * n, len(o_tiles) * n
    mode = {"raw": int(raw), "relu": int(relu), "shift": shift}
    tiles = _Tiles(a, b, c, mode, k_tiles, o_tiles, config, table)
    canonical = replace(config, dram_bytes=1 << 32)
    best = None
    group = _group(tiles, config) if "j-outer" in orders and m < GROUP_ROWS * n else 1
    # Split MATMULs where the last K tile holds at most N/2 rows (docs/isa.md, MATMUL `split`).
    splits = {False, splittable(config, k_tiles, o_tiles)}
    plans = {}  # each order's and weight group's, the block dividing M or ragged (gemm.py)
    for order, size, ragged, split in itertools.product(orders, {1, group}, (False, True),
                                                        splits):
        if (size == 1 or order == "j-outer") and (size == 1 or not split):
            found = plan(m, k_pad, o_pad, canonical, MatrixRows(k_pad), order, raw, block_rows,
                         size, ragged, split)
            # A slice filling the LOAD queue: in parts too, first (the pick where they tie).
            if found and order == "k-outer" and fills_queue(tiles, found.block_rows, config):
                plans[replace(found, spread=True)] = None
            plans[found] = None
    # The fastest plan, the first of equals, costing plans in order of their lower bound
    # and none whose bound shows it cannot win (each a few milliseconds).
    sizes = [_dense_bytes(t) for t in b]
    weights = sum(sizes) if all(sizes) else 0
    written = math.prod(c.view.dims) * c.element
    bounds = sorted((_bound(m, len(k_tiles), len(o_tiles), layout, weights, written, config),
                     index, layout) for index, layout in enumerate(filter(None, plans)))
    first = None
    for bound, index, layout in bounds:
        if best is not None and (bound, index) > (best.cycles, first):
            continue
        cycles = _extrapolated(m, len(k_tiles), len(o_tiles), layout, tiles, config)
        if best is None or (cycles, index) < (best.cycles, first):
            first = index
            best = Estimate(cycles, layout.order, layout.block_rows, layout.weight_group,
                            layout.split, layout.spread)
    if best is None:
        raise GlcError(f"gemm {m}x{k_pad}x{o_pad} does not fit the memories of {config.name}")
    return best


def fills_queue(tiles: _Tiles, rows: int, config: HwConfig) -> bool:
    """Whether an A slice of ``rows`` rows (the first K tile's) is more LOADs than half the
    LOAD queue (a transposing slice is a LOAD per N rows): k-outer then costs its plans with
    the slices loaded in parts too (gemm_plan.py, ``spread``). The model takes the queues as
    deep enough; a slice that fills the LOAD queue holds the dispatcher, and with it the
    array's next steps, until the queue drains (6 % of an NCHW 1×1 1024→256 @14 kernel's
    cycles, its estimate then 1.9 % low), and its LOADs hold the port from the weights."""
    return tiles.load_a(0, rows, 0)[0] > config.queue_depth // 2


def _dense_bytes(t: Target) -> int:
    """The bytes of a view that reads each element once (no padding, no broadcast), else 0."""
    dense = not t.view.coords and all(d.stride for d in t.view.digits())
    return math.prod(t.view.dims) * t.element if dense else 0


def _bound(m: int, tiles_k: int, tiles_j: int, layout: GemmLayout, weights: int, written: int,
           config: HwConfig) -> int:
    """A lower bound on the cycles of the plan's kernel (glc/cost/pipeline.py's rules): the
    array streams each step's rows one MATMUL after another and starts a PRELOAD at most
    every N cycles; the port moves at most ``dram_port_bytes`` a beat, every block loading
    all ``weights`` (0 where a weight view is not dense) and the result written once."""
    n = config.array_size
    blocks = -(-m // layout.block_rows)
    steps = blocks * (tiles_k * tiles_j - (tiles_j // 2 if layout.split else 0))
    return max(steps * max(layout.block_rows, n),
               (blocks * weights + written) // config.dram_port_bytes)


def splittable(config: HwConfig, k_tiles, o_tiles) -> bool:
    """Whether a kernel of these tiles may split its last K tile's MATMULs: the array splits,
    that tile holds at most N/2 K rows (the rest of its A columns are the LOAD's zeros) and
    there are output tiles to pair."""
    return bool(config.column_split) and len(o_tiles) > 1 and \
        k_tiles[-1][1][1] <= config.array_size // 2


def _group(tiles: _Tiles, config: HwConfig) -> int:
    """The weight tiles a grouped schedule loads at once (1: none): the most, dividing the K
    tiles, whose every group's LOADs take at most half the LOAD queue, for an output tile of
    each width (an image row of 28 pixels is cut 16 + 12, and a 12-pixel transposed tile is a
    LOAD a K tile where a 16-pixel one is a LOAD a group) and the last. The dispatcher hands
    out a group's LOADs ahead of the MATMULs before them, in program order, and this model
    takes the queues as deep enough (a group of 13 pieces, K = 200 cut into N-row LOADs, ran
    31 % over its estimate). Only blocks of fewer than GROUP_ROWS·N rows are grouped: at that
    many rows a step the tiles' own LOADs and their drains hide behind the MATMULs."""
    tiles_k = len(tiles.k_tiles)
    widths = {count: j for j, (_, count) in reversed(list(enumerate(tiles.o_tiles)))}
    outputs = {*widths.values(), len(tiles.o_tiles) - 1}
    for size in range(tiles_k, 1, -1):
        if tiles_k % size == 0 and all(
                tiles.load_group(kk, size, j)[0] <= config.queue_depth // 2
                for kk in range(0, tiles_k, size) for j in outputs):
            return size
    return 1


class _Selected:
    """The tiles of a kernel cut down to chosen blocks, K tiles and output tiles: index i of a
    dim of the small kernel is tile ``select[i]`` of the real one."""

    def __init__(self, tiles: _Tiles, m: int, rows: int, blocks, k_tiles, o_tiles):
        self.tiles, self.m, self.rows = tiles, m, rows
        self.blocks, self.k_tiles, self.o_tiles = blocks, k_tiles, o_tiles

    def costs(self, tiles: tuple[tuple, ...]) -> tuple[Cost, ...]:
        """The costs of a TileProgram's tiles (one loop: a search costs millions)."""
        m, rows, blocks = self.m, self.rows, self.blocks
        k_tiles, o_tiles = self.k_tiles, self.o_tiles
        load_a, load_b, store = self.tiles.load_a, self.tiles.load_b, self.tiles.store
        found = []
        for tile in tiles:
            what = tile[0]
            if what == "b":
                found.append(load_b(k_tiles[tile[1]], o_tiles[tile[2]]))
            elif what == "h":
                found.append(self.tiles.load_half(k_tiles[tile[1]], o_tiles[tile[2]]))
            elif what == "g":  # a group: its K tiles never sampled (_extrapolated)
                found.append(self.tiles.load_group(k_tiles[tile[1]], tile[2], o_tiles[tile[3]]))
            elif what == "table":
                found.append(self.tiles.load_table(tile[1], tile[2]))
            else:
                block, offset = divmod(tile[1], rows)
                first = first_row(blocks[block], rows, m) + offset
                found.append(load_a(first, tile[2], k_tiles[tile[3]]) if what == "a" else
                             store(first, tile[2], o_tiles[tile[3]]))
        return tuple(found)


SAMPLE = 2  # tiles of a sampled dim in the shorter of its two runs (at least; _extrapolated)
WHOLE = 256  # steps: a schedule this short runs whole (its start-up is no steady state)
# A dim of more than LONG tiles that would run whole inside the periodic ones is sampled too, in
# runs of SPAN and SPAN + PERIOD tiles: PERIOD apart, so the slope averages over where the A
# slices fall among the steps. k-outer with several blocks keeps at least BLOCK_STEPS steps in
# a sampled block, so its STOREs hide behind the next block as they do in the whole one.
LONG, SPAN, PERIOD, BLOCK_STEPS = 24, 12, 6, 128
GROUPED = (3, 5)  # output tiles of a grouped schedule, sampled in runs a pair of groups apart
J_STEPS = 12  # j-outer: the fewest steps of a sampled run of output tiles


MAX_KINDS = 4  # kinds of middle K tile costed apart (_k_runs); more are sampled as one
MAX_PERIOD = 8  # the longest period of output tile kinds sampled in whole periods (_periodic_runs)


def _runs(size: int, a: int, b: int) -> list[tuple[float, list[int]]]:
    """The two runs (weight, tiles) whose weighted sum extrapolates a dim of ``size`` alike
    tiles: ``base``, its first a − 1 tiles and its last, and ``base`` with the next b − a,
    T(d) = T(base) + (d − a)·(T(b) − T(base))/(b − a)."""
    slope = (size - a) / (b - a)
    return [(1 - slope, [*range(a - 1), size - 1]), (slope, [*range(b - 1), size - 1])]


def _k_runs(size: int, a: int, b: int, kinds: tuple[list[int], ...]
            ) -> list[tuple[float, list[int]]]:
    """``_runs`` for K tiles of several kinds (``kinds``: the middle tiles by what a tile's
    LOADs move: an NCHW conv's K tiles cross a channel's taps at every offset), which the
    first few tiles alone misrepresent (−2.8 % on a 3×3/3 conv): ``base`` plus, per kind, up
    to b − a middle tiles of that kind, T(d) = T(base) + Σ_kind n_kind·(T(base + kind) −
    T(base))/added_kind. With one kind this is ``_runs``; with more than MAX_KINDS the added
    tiles are a systematic sample of the middle (evenly spaced: each kind in about its
    share)."""
    if len(kinds) == 1:
        return _runs(size, a, b)
    base = [*range(a - 1), size - 1]
    middle = size - a
    if len(kinds) > MAX_KINDS:
        kinds = ([a - 1 + (2 * i + 1) * middle // (2 * (b - a)) for i in range(b - a)],)
        counts = [middle]
    else:
        counts = [len(members) for members in kinds]
    runs = []
    for count, members in zip(counts, kinds, strict=True):
        added = members[:b - a]
        runs.append((count / len(added), sorted(base[:-1] + added) + base[-1:]))
    return [(1 - sum(w for w, _ in runs), base), *runs]


def _periodic_runs(size: int, a: int, b: int, period: int) -> list[tuple[float, list[int]]]:
    """``_runs`` for output tiles whose kinds (what the tile's transfers move) repeat with a
    period P > 1 — an image's rows of pixels cut 16, 16, 7 — sampled in whole periods: the
    base run's middle tiles a multiple of P short of the dim's, the longer run P·⌈(b − a)/P⌉
    tiles more, so both end on the kind the dim ends on. Marginal costs per kind are no good
    here: a j-outer tile's STORE overlaps the next tile's steps, so what a tile adds depends
    on its neighbours (a 5×5 conv of 2 channels at 39×39: −43 % from runs of 2 and 3 tiles).
    Where no period up to MAX_PERIOD holds (``period`` 1), ``_runs``."""
    if period == 1:
        return _runs(size, a, b)
    first = a + (size - a) % period
    added = period * -(-(b - a) // period)
    if first + added > size:
        return [(1.0, list(range(size)))]
    return _runs(size, first, first + added)


def _output_period(tiles: _Tiles, rows: int, first: int, layout: GemmLayout) -> int:
    """The period the output tiles are sampled in: their kinds', and with split MATMULs a
    multiple of 2, so the sampled runs pair their tiles as the whole dim does."""
    return math.lcm(tiles.output_period(rows, first), 2 if layout.split else 1)


def _extrapolated(m: int, tiles_k: int, tiles_j: int, layout: GemmLayout, tiles: _Tiles,
                  config: HwConfig) -> int:
    """The cycles of the whole schedule from short runs, so the cost does not grow with the
    kernel. A *periodic* dim of d tiles is run with a and with b > a of them (the first ones and
    the last) and the cycles extrapolated linearly, T(d) = T(a) + (d − a)·(T(b) − T(a))/(b − a):
    each middle tile adds the average of what tiles a+1..b add. That holds where every middle
    period meets the same neighbours and the short runs are in the long one's regime:

    - the blocks of A rows (a block's STOREs overlap the next block, the same for each);
    - j-outer's output tiles (a tile's STORE overlaps the next tile's K steps), and a long K
      inside each (its steps alike but for where the A slices fall: runs PERIOD apart);
    - k-outer's K tiles when there is one block (its STOREs come after the last), more than
      LONG of them in runs of SPAN and SPAN + PERIOD (runs of 2 and 3 stay inside the LOADs'
      run-ahead, so the added tile was costed before the pipeline filled: 13.9 % high on a
      7×7/3 conv of 243 channels and one output pixel), and a long run of output tiles inside
      each;
    - k-outer's K tiles with several blocks, where a block has more than BLOCK_STEPS steps: the
      sampled blocks keep at least BLOCK_STEPS steps, so the STOREs of one still hide behind
      the next (2 and 3 K tiles did not: gemm256-int8's two-block estimate came out 20 % low),
      and the two runs are PERIOD K tiles apart, since one more K tile adds a different amount
      depending on where its A slices fall among the output tiles' steps (2019 to 2084 cycles
      on a 128×256×1024 kernel); a long run of output tiles inside each is sampled too.

    Output tiles whose kinds repeat with a period are sampled in whole periods
    (``_periodic_runs``; blocks too cost 18 % more compile time on resnet-block-28-int8 for
    no suite estimate that moved), K tiles of several kinds per kind (``_k_runs``). Over
    several dims the extrapolation is multilinear (2 runs per sampled dim). Against the
    model run whole it is exact on the shapes of tests/cost (a periodic pipeline repeats its
    state exactly); the suite's kernels are checked against the instruction-level model."""
    n = config.array_size
    rows = layout.block_rows
    sizes = (-(-m // rows), tiles_k, tiles_j)
    blocks = sizes[0]
    samples: list[tuple[int, int] | None] = [None, None, None]  # None: run whole
    short, long = (SAMPLE, SAMPLE + 1), (SPAN, SPAN + PERIOD)
    if math.prod(sizes) > WHOLE:
        samples[0] = short
        if layout.order == "j-outer":
            # Grouped weights (two groups of buffers): a group's LOAD waits for the group
            # before the last, so groups alternate in pairs (a GEMV: +1 042, +2 036, … cycles
            # a group) and the runs differ by a pair.
            # Split MATMULs: tiles in pairs, the fifth waiting for the first's STORE (four
            # accumulator tiles), so runs twice as long. A tile of few K tiles is few steps:
            # runs of at least J_STEPS steps, PERIOD tiles apart (2 and 3 tiles of one step
            # each were 7–43 % off on a 1-channel 1×1 conv at n4).
            pair = 2 if layout.split else 1
            first = max(SAMPLE * pair, -(-J_STEPS // tiles_k))
            samples[2] = GROUPED if layout.weight_group > 1 else \
                (first, first + pair) if first == SAMPLE * pair else (first, first + PERIOD)
            samples[1] = long if tiles_k > LONG and layout.weight_group == 1 else None
        else:
            samples[2] = long if tiles_j > LONG else None
            if blocks == 1:
                samples[1] = long if tiles_k > LONG else short
            elif tiles_k * tiles_j > BLOCK_STEPS:
                first = max(SAMPLE, -(-BLOCK_STEPS // min(tiles_j, SPAN + PERIOD)))
                samples[1] = (first, first + PERIOD)
    choices = []
    for dim, (size, sample) in enumerate(zip(sizes, samples, strict=True)):
        if sample is None or size <= sample[1]:
            choices.append([(1.0, list(range(size)))])
        else:
            first = sample[0] - 1  # the first middle tile
            runs = (_k_runs(size, *sample, tiles.k_kinds(rows, first)) if dim == 1 else
                    _periodic_runs(size, *sample, _output_period(tiles, rows, first, layout))
                    if dim == 2 else _runs(size, *sample))
            # Sampled where its runs are fewer tiles than the dim, else run whole (exact).
            choices.append(runs if sum(len(t) for _, t in runs) < size else
                           [(1.0, list(range(size)))])
    total = 0.0
    for (wb, sb), (wk, sk), (wj, sj) in itertools.product(*choices):
        small = _Selected(tiles, m, rows, sb, sk, sj)
        program = tile_program(len(sb) * rows, len(sk) * n, len(sj) * n, n, layout,
                           bool(tiles.table.vectors))
        total += wb * wk * wj * cycles_of(program, small.costs(program.tiles), config)
    return round(total)
