"""A kernel's cycles from short runs of its schedule, so the cost does not grow with the
kernel: per dim (blocks of A rows, K tiles, output tiles) a few runs of its first and last
tiles, run through the tile-level pipeline (glc/cost/steps.py, glc/cost/pipeline.py) with the
tiles' costs (glc/cost/tiles.py) and extrapolated, multilinear over the dims
(``extrapolated``: what holds it and where it was found wanting)."""

from __future__ import annotations

import itertools
import math

from glc.cost.steps import cycles_of, tile_program
from glc.cost.tiles import Cost, Edges, KernelTiles
from glc.hwconfig import HwConfig
from glc.isa.gemm_plan import GemmLayout, first_row


class _Selected:
    """The tiles of a kernel cut down to chosen blocks, K tiles and output tiles: index i of a
    dim of the small kernel is tile ``select[i]`` of the real one."""

    def __init__(self, tiles: KernelTiles, m: int, rows: int, blocks, k_tiles, o_tiles):
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
            elif what == "g":  # a group: its K tiles never sampled (extrapolated)
                found.append(self.tiles.load_group(k_tiles[tile[1]], tile[2], o_tiles[tile[3]]))
            elif what == "table":
                found.append(self.tiles.load_table(tile[1], tile[2]))
            else:
                block, offset = divmod(tile[1], rows)
                first = first_row(blocks[block], rows, m) + offset
                found.append(load_a(first, tile[2], k_tiles[tile[3]]) if what == "a" else
                             store(first, tile[2], o_tiles[tile[3]]))
        return tuple(found)


SAMPLE = 2  # tiles of a sampled dim in the shorter of its two runs (at least; extrapolated)
WHOLE = 256  # steps: a schedule this short runs whole (its start-up is no steady state)
# A dim of more than LONG tiles that would run whole inside the periodic ones is sampled too, in
# runs of SPAN and SPAN + PERIOD tiles: PERIOD apart, so the slope averages over where the A
# slices fall among the steps. k-outer with several blocks keeps at least BLOCK_STEPS steps in
# a sampled block, so its STOREs hide behind the next block as they do in the whole one.
LONG, SPAN, PERIOD, BLOCK_STEPS = 24, 12, 6, 128
# Output tiles of a grouped schedule: runs of at least 8 tiles, a pair of groups apart (and in
# whole pairs: _output_period); a base of 5 tiles was 0.33 % short of the steady state.
GROUPED = (8, 10)
J_STEPS = 24  # j-outer: the fewest steps of a sampled run of output tiles (12 were 0.9 % short)
MAX_KINDS = 4  # kinds of middle K tile costed apart (_k_runs); more are sampled as one


NONE: Edges = (0, 1, 0)  # kinds all alike, or no period (tiles.py's _period)


def _k_runs(size: int, a: int, b: int, kinds: tuple[list[int], ...]
            ) -> list[tuple[float, list[int]]]:
    """``_periodic_runs`` for K tiles of several kinds (``kinds``: the middle tiles by what a tile's
    LOADs move: an NCHW conv's K tiles cross a channel's taps at every offset), which the
    first few tiles alone misrepresent (−2.8 % on a 3×3/3 conv): ``base`` plus, per kind, up
    to b − a middle tiles of that kind, T(d) = T(base) + Σ_kind n_kind·(T(base + kind) −
    T(base))/added_kind. With one kind this is ``_periodic_runs`` of no period; with more
    than MAX_KINDS the added tiles are a systematic sample of the middle (evenly spaced: each
    kind in about its share)."""
    if len(kinds) == 1:
        return _periodic_runs(size, a, b, NONE)
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


def _k_sampled(size: int, a: int, b: int, tiles: KernelTiles, rows: int, first: int
               ) -> list[tuple[float, list[int]]]:
    """The runs of K tiles: in whole periods where their kinds repeat with one
    (``_periodic_runs``: what a tile adds depends on its neighbours, so added tiles of one
    kind side by side misrepresent tiles of two alternating kinds — an NCHW 5×5/2 conv's
    channels of 16 + 9 taps, 1.3 % low), else per kind (``_k_runs``)."""
    kinds = tiles.k_kinds(rows, first)
    edges = tiles.k_period(rows, first) if len(kinds) > 1 else NONE
    return _periodic_runs(size, a, b, edges) if edges != NONE else _k_runs(size, a, b, kinds)


def _periodic_runs(size: int, a: int, b: int, edges: Edges) -> list[tuple[float, list[int]]]:
    """The two runs (weight, tiles) whose weighted sum extrapolates a dim of ``size`` tiles:
    ``base``, its first a − 1 tiles and its last, and ``base`` with the next b − a,
    T(d) = T(base) + (d − a)·(T(b) − T(base))/(b − a), where the tiles are alike (``edges``
    (0, 1, 0)); where their kinds (what the tile's transfers move) repeat with a period
    P — an image's rows of pixels cut 16, 16, 7 — but for ``lead`` kinds after the first
    a − 1 tiles and ``trail`` before the last (``edges``: a padded image's border rows),
    sampled in whole periods: both runs hold the first a − 1 + lead tiles and the last
    trail + 1, and between them a multiple of P fewer middle tiles than the dim (the base)
    or P·⌈(b − a)/P⌉ more, so both end on the kinds the dim ends on. Marginal costs per
    kind are no good here: a j-outer tile's STORE overlaps the next tile's steps, so what a
    tile adds depends on its neighbours (a 5×5 conv of 2 channels at 39×39: −43 % from runs
    of 2 and 3 tiles); and a border tile taken for a middle one misstates the slope (blocks
    of one row of a padded 5×5 conv's image: +5 to +7 % from runs of 2 and 3 blocks)."""
    lead, period, trail = edges
    head, tail = a - 1 + lead, trail + 1
    middle = size - head - tail
    short = middle % period
    added = period * -(-(b - a) // period)
    if middle <= 0 or head + short + added + tail > size:
        return [(1.0, list(range(size)))]
    ends = list(range(size - tail, size))
    weight = (middle - short) / added
    return [(1 - weight, [*range(head + short), *ends]),
            (weight, [*range(head + short + added), *ends])]


def _output_period(tiles: KernelTiles, rows: int, first: int, layout: GemmLayout) -> Edges:
    """The period the output tiles are sampled in: their kinds', and with split MATMULs or
    grouped weights (groups alternate in pairs) a multiple of 2, so the sampled runs pair
    their tiles as the whole dim does (kinds of period 5 — 34 rows of pixels walked 8 rows a
    tile — sampled 5 apart put a grouped candidate 1.55 % low)."""
    lead, period, trail = tiles.output_period(rows, first)
    pairs = layout.split or layout.weight_group > 1
    return lead, math.lcm(period, 2 if pairs else 1), trail


def _block_period(tiles: KernelTiles, m: int, rows: int, first: int, layout: GemmLayout,
                  tiles_j: int) -> Edges:
    """The period the blocks are sampled in: their kinds', and a multiple of the blocks over
    which the accumulator's tiles take their slots in turn (a tile waits for the STORE of the
    tile a slot's turn before it, so the steady state may alternate): k-outer's blocks take
    ``acc_slots`` halves, j-outer's output tiles the slots one after another, so with an odd
    count of them a block a turn — one output tile in 51 blocks of a pixel row, sampled a
    block apart, put a 5×5 conv's candidates 4–7 % high."""
    lead, period, trail = tiles.block_period(m, rows, first)
    slots = layout.acc_slots
    turn = slots // math.gcd(slots, tiles_j) if layout.order == "j-outer" else slots
    return lead, math.lcm(period, turn), trail


def extrapolated(m: int, tiles_k: int, tiles_j: int, layout: GemmLayout, tiles: KernelTiles,
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

    Output tiles and blocks whose kinds repeat with a period are sampled in whole periods
    (``_periodic_runs``: blocks of 98 rows cut an NCHW image's 56-pixel rows alike every 4
    blocks, and runs of 2 and 3 blocks put k-outer candidates up to 15 % above their whole
    run), K tiles of several kinds per kind (``_k_runs``). Over
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
            # a group) and the runs differ by a pair, each of the dim's parity, so what is
            # extrapolated is whole pairs (_output_period; runs of 3 and 5 of a 9×156×1299
            # kernel's 82 tiles came out 1.85 % high, of 5 and 7 four cycles low).
            # Split MATMULs: tiles in pairs, the fifth waiting for the first's STORE (four
            # accumulator tiles), so runs twice as long. Output tiles alternate between the
            # accumulator's even and odd banks, so the runs differ by two tiles (two pairs):
            # by one, an NCHW 1×1 256→64 @56's candidates came out 2.1 % high and a split
            # one 4.4 % low. A tile of few K tiles is few steps: runs of at least J_STEPS
            # steps, PERIOD tiles apart, rounded up to the banks' period (2 and 3 tiles of
            # one step each were 7–43 % off on a 1-channel 1×1 conv at n4).
            pair = 2 if layout.split else 1
            first = max(SAMPLE * pair, -(-J_STEPS // tiles_k))
            samples[2] = GROUPED if layout.weight_group > 1 else \
                (first, first + 2 * pair) if first == SAMPLE * pair else \
                (first, first + math.lcm(PERIOD, 2 * pair))
            samples[1] = long if tiles_k > LONG and layout.weight_group == 1 else None
        else:
            samples[2] = long if tiles_j > LONG else None
            if blocks == 1:
                samples[1] = long if tiles_k > LONG else short
            elif tiles_k * tiles_j > BLOCK_STEPS:
                first = max(SAMPLE, -(-BLOCK_STEPS // min(tiles_j, SPAN + PERIOD)))
                samples[1] = (first, first + PERIOD)
            if blocks > 1 and samples[2]:
                # The output tiles too keep BLOCK_STEPS steps in a sampled block: with a
                # short K, runs of 12 and 18 left blocks of 24–54 steps, whose STOREs the
                # next block did not hide as in the whole one (−6 % on a 3×3 conv of 3
                # channels into 443 filters, its 60 output tiles in blocks of 32 rows).
                k_run = min(tiles_k, samples[1][0]) if samples[1] else tiles_k
                first = max(SPAN, -(-BLOCK_STEPS // k_run))
                samples[2] = (first, first + PERIOD)
    choices = []
    for dim, (size, sample) in enumerate(zip(sizes, samples, strict=True)):
        if sample is None or size <= sample[1]:
            choices.append([(1.0, list(range(size)))])
        else:
            first = sample[0] - 1  # the first middle tile
            runs = (_k_sampled(size, *sample, tiles, rows, first) if dim == 1 else
                    _periodic_runs(size, *sample, _output_period(tiles, rows, first, layout))
                    if dim == 2 else
                    _periodic_runs(size, *sample, _block_period(tiles, m, rows, first, layout,
                                                                tiles_j)))
            choices.append(_fewer(size, runs))
    total = 0.0
    for (wb, sb), (wk, sk), (wj, sj) in itertools.product(*choices):
        small = _Selected(tiles, m, rows, sb, sk, sj)
        program = tile_program(len(sb) * rows, len(sk) * n, len(sj) * n, n, layout,
                           bool(tiles.table.vectors))
        total += wb * wk * wj * cycles_of(program, small.costs(program.tiles), config)
    return round(total)


def _fewer(size: int, runs: list[tuple[float, list[int]]]) -> list[tuple[float, list[int]]]:
    """``runs`` where they are fewer tiles than the dim's ``size``, else the dim whole (exact
    and no dearer)."""
    return runs if sum(len(t) for _, t in runs) < size else [(1.0, list(range(size)))]


def weight_port(tiles: KernelTiles) -> tuple[float, float]:
    """The set-up cycles and DRAM beats of loading every weight tile once — what each block
    of A rows loads, in either step order — summed over samples of the K tiles (per kind)
    and the output tiles (in whole periods) and extrapolated, which is exact for a sum where
    the middle tiles are alike by kind: no pipeline to fill, so the samples are the shortest
    (SAMPLE and SAMPLE + 1 tiles). Beats without the drains inside a tile (the port is free
    there: ``Dma.gaps``). A bound on the cycles of a plan of many blocks, each reloading the
    weights, where the weight view is not dense (an im2col image's: 24 M cycles for a k-outer
    plan of 5-row blocks against 2.07 M for the best, costed in full before)."""
    dims = []
    a, b = SAMPLE, SAMPLE + 1
    for size, kinds in ((len(tiles.k_tiles), tiles.k_kinds), (len(tiles.o_tiles), None)):
        dims.append([(1.0, list(range(size)))] if size <= b else
                    _fewer(size, _k_runs(size, a, b, kinds(tiles.n, a - 1)) if kinds else
                           _periodic_runs(size, a, b, tiles.output_period(tiles.n, a - 1))))
    set_up = beats = 0.0
    for (wk, sk), (wj, sj) in itertools.product(*dims):
        for kk in sk:
            for j in sj:
                count, moved, _, gaps = tiles.load_b(kk, j)
                set_up += wk * wj * count
                beats += wk * wj * (sum(b for b, _ in gaps) if gaps else moved)
    return set_up, beats
