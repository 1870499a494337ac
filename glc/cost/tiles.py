"""What moving one tile costs: the instructions, DRAM beats and tail of the LOADs or STOREs
transfer.py's patterns need for it, memoised per target and tile.

Tiles that move by the same transfers are costed once: a tile shifted along the outermost
digit of its rows (or columns) is moved by the same instructions but for their DRAM addresses,
as long as every coordinate that digit moves stays inside its bounds over the whole tile,
before and after the shift. Why (glc/lower/transfer.py): a tile's transfers depend on where it
lies only through the boxes its ranges split into (the same for ranges a multiple of the inner
digits apart), its DRAM offset (an address only) and its coordinates' origins; an origin
matters only for a coordinate the tile may leave (``_may_leave``: it is then bounded, its y/x
fields set and checked), and one that stays inside over the whole tile is never bounded, in
any box or split of it. So each tile is costed as its canonical representative, the lowest
such shift of it: the tiles of an image's interior rows are one tile, its border rows their
own (checked against decoding every tile of the layer suite's estimates: the same cost each).

``KernelTiles`` holds one kernel's tiles (its K and output tiles, its operands' targets, its
table: ``TableCost``) and what each of its LOADs and STOREs costs, memoised per tile.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from glc.cost.pipeline import Dma
from glc.hwconfig import HwConfig
from glc.isa.cycles import _transpose_end
from glc.isa.fields import BY_NAME
from glc.isa.transfer import SETUP
from glc.lower.tiling import k_segments
from glc.lower.transfer import (
    OperandUnexpressible,
    Target,
    Unexpressible,
    piece_transfers,
    pieces,
    transfers,
    transposed_blocks,
)
from glc.lower.view import merge

Range = tuple[int, int]  # (first index, count)
# A tile's DMA: instructions, beats, tail and the gaps in its hold of the port (Dma's).
Cost = tuple[int, int, int, tuple[tuple[int, int], ...]]
_ROWS = 1 << next(f.width for f in BY_NAME["load"].fields if f.name == "row")  # local rows


def dma(target: Target, rows: Range | None, cols: Range, fields: dict[str, int], port: int,
        which: str, room: int | None = None, n: int = 0) -> Dma:
    """The instructions, beats and tail of moving one tile of operand ``which`` (transfer.py's
    transfers, writing at most ``room`` local rows, N = ``n``); OperandUnexpressible when its
    view cannot be walked, as build_kernel says."""
    try:
        found = transfers(target, rows, cols, 0, fields, room)
    except Unexpressible as error:
        raise OperandUnexpressible(which, str(error)) from None
    return _moved(found, fields, port, n)


def _moved(found: list[dict[str, int]], fields: dict[str, int], port: int, n: int) -> Dma:
    """The cost of the transfers ``found`` (their field values), one after the other."""
    wide = fields.get("acc") or fields.get("raw")
    total = Dma(0, 0)
    for values in found:
        counts = [values.get(f"count{k}", 1) for k in range(4)]
        span = values["run"] * (4 if wide else 1 << values.get("step", 0))
        moved = math.prod(counts) * -(-span // port)
        tail = 0
        if values.get("transpose"):
            local_rows = math.prod(counts[values["inner"]:])
            tail = _transpose_end(local_rows, moved, 0, n) - (1 + moved)
        total = total + Dma(1, moved, tail, ((moved, tail),))
    return total


@functools.lru_cache(maxsize=1024)
def tile_costs(target: Target) -> TileCosts:
    """The tile costs of ``target``, shared by every estimate that moves its tiles: the
    candidates of a schedule search share most of them."""
    return TileCosts(target)


class TileCosts:
    """The costs of one target's tiles, each decoded once per canonical tile."""

    def __init__(self, target: Target):
        view = target.view
        self.target, self.coords = target, view.coords
        self.rows = _Group(merge(view.groups[0]))
        self.cols = _Group(merge(view.groups[-1]))
        self.found: dict[tuple, Cost] = {}  # per tile as asked
        self.canonical: dict[tuple, Cost] = {}  # per canonical tile
        self.pieces: dict[tuple, Dma] = {}  # per canonical piece of a transposing tile

    def cost(self, rows: Range | None, cols: Range, fields: tuple, port: int, which: str,
             room: int | None = None, n: int = 0) -> Cost:
        """The cost of the tile rows × cols (``rows`` None: a vector; ``fields`` the opcode's
        own as sorted items) as ``dma`` gives it."""
        key = (rows, cols, fields, port, which, room, n)
        found = self.found.get(key)
        if found is None:
            moved = Dma(*self.moved(rows, cols, fields, port, which, room, n))
            found = self.found[key] = (moved.instructions, moved.beats, moved.tail, moved.gaps)
        return found

    def moved(self, rows: Range | None, cols: Range, fields: tuple, port: int, which: str,
              room: int | None = None, n: int = 0) -> tuple[int, int, int, tuple]:
        """``cost``'s tile as a Dma's fields, each instruction's (beats, tail) in full:
        memoised per canonical tile."""
        rows, cols = self.shifted(rows, cols)
        same = (rows, cols, fields, port, which, room, n)
        found = self.canonical.get(same)
        if found is None:
            moved = self._by_pieces(rows, cols, fields, port, which, room, n) \
                if self.target.transpose and rows is not None and rows[1] + n <= _ROWS \
                else dma(self.target, rows, cols, dict(fields), port, which, room, n)
            found = self.canonical[same] = (moved.instructions, moved.beats, moved.tail,
                                            moved.steps)
        return found

    def _by_pieces(self, rows: Range, cols: Range, fields: tuple, port: int, which: str,
                   room: int | None, n: int) -> Dma:
        """A transposing tile's cost as transfer.py moves it, its blocks whole or else piece
        by piece, each piece (a tile of N rows itself) costed as its canonical shift: a large
        tile's pieces are mostly alike (each piece's local row only sets its ``row`` field,
        which every row of the tile fits in)."""
        room = rows[1] if room is None else room
        try:
            whole = transposed_blocks(self.target, rows, cols, 0, dict(fields), room)
            if whole is not None:
                return _moved(whole, dict(fields), port, n)
            total = Dma(0, 0)
            for start, piece, fits in pieces(self.target, rows, room):
                piece, at = self.shifted(piece, cols)
                key = (piece, at, fields, fits, port, n)
                found = self.pieces.get(key)
                if found is None:
                    found = self.pieces[key] = _moved(
                        piece_transfers(self.target, piece, at, start, dict(fields), fits),
                        dict(fields), port, n)
                total = total + found
            return total
        except Unexpressible as error:
            raise OperandUnexpressible(which, str(error)) from None

    def shifted(self, rows: Range | None, cols: Range) -> tuple[Range | None, Range]:
        """The tile as its lowest shift along each digit of its rows, then of its columns,
        that keeps every coordinate the digit moves inside its bounds, where the tile itself
        keeps them inside."""
        axes = len(self.coords)
        matrix = rows is not None and self.rows.digits
        row_lo, row_hi = self.rows.span(*rows, axes) if matrix else ([0] * axes, [0] * axes)
        col_lo, col_hi = self.cols.span(*cols, axes) if self.cols.digits else ([0] * axes,
                                                                                [0] * axes)
        if matrix:
            rows = _lowest(self.rows, rows, row_lo, row_hi, col_lo, col_hi, self.coords)
        if self.cols.digits:
            cols = _lowest(self.cols, cols, col_lo, col_hi, row_lo, row_hi, self.coords)
        return rows, cols


class _Group:
    """A merged dim of a view (as transfer.py walks it): per digit its size, the indices
    inside one index of it, and its (coordinate, coefficient) terms."""

    def __init__(self, digits):
        sizes = [d.size for d in digits]
        self.digits = tuple((size, math.prod(sizes[i + 1:]),
                             tuple((axis, coef) for axis, coef in enumerate(d.coefs) if coef))
                            for i, (size, d) in enumerate(zip(sizes, digits, strict=True)))

    def span(self, first: int, count: int, axes: int) -> tuple[list[int], list[int]]:
        """Per coordinate, the least and greatest Σ coef·index over a box holding the range:
        the digits outside the first one the range's ends differ in fixed, that one from end
        to end, the inner ones whole (the range itself where it is a box)."""
        last = first + count - 1
        lows, highs = [0] * axes, [0] * axes
        varying = False
        for size, inner, terms in self.digits:
            if varying:
                lo, hi = 0, size - 1
            else:
                lo, hi = first // inner % size, last // inner % size
                varying = lo != hi
            for axis, coef in terms:
                if coef > 0:
                    lows[axis] += coef * lo
                    highs[axis] += coef * hi
                else:
                    lows[axis] += coef * hi
                    highs[axis] += coef * lo
        return lows, highs


def _lowest(group: _Group, tile: Range, lows: list[int], highs: list[int],
            other_lows: list[int], other_highs: list[int], coords) -> Range:
    """The range ``tile`` of ``group`` moved down along each of its digits, outermost first,
    as far as its boxes stay the same (inside the index of the outer digits it lies in: the
    digits down to the first one its ends differ in) and the tile stays inside the bounds of
    every coordinate the digit moves (``lows``, ``highs`` the range's span, moved with it;
    ``other_…`` the other range's); not along a digit where the tile leaves such a bound."""
    first, count = tile
    last = first + count - 1
    for size, inner, terms in group.digits:
        index = first // inner % size
        crosses = index != last // inner % size
        move = -index
        for axis, coef in terms:
            origin, limit = coords[axis]
            lo = origin + lows[axis] + other_lows[axis]
            hi = origin + highs[axis] + other_highs[axis]
            if lo < 0 or hi >= limit:
                move = 0
                break
            bound = -(lo // coef) if coef > 0 else -((limit - 1 - hi) // -coef)
            if bound > move:
                move = bound
        if move:
            first, last = first + move * inner, last + move * inner
            for axis, coef in terms:
                lows[axis] += coef * move
                highs[axis] += coef * move
        if crosses:
            break
    return first, count


@dataclass(frozen=True)
class TableCost:
    """What a kernel's table of biases and multipliers adds (glc/lower/table.py): ``vectors``
    table rows each STORE reads first (one set-up cycle each, holding the DRAM port), loaded
    one row per output tile, or with ``by_rows`` per N rows of C, whose STOREs are then cut
    into runs of at most N rows."""

    vectors: int = 0
    by_rows: bool = False


NO_TABLE = TableCost()


MAX_PERIOD = 8  # the longest period of output tile kinds sampled in whole periods (sampling.py)
Edges = tuple[int, int, int]  # kinds before a period, the period, kinds after it (_period)


class KernelTiles:
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
        run of them: glc/lower/tiling.py's k_segments), one after the other on the LOAD unit:
        the port is free while a transposing one drains its last block before the next
        (``Dma.gaps``; taken as held, a 5×5 conv of 3 channels at 61×61, its image B in
        groups of three K tiles of 15 rows, came out 5.8 % low: the STOREs that take the
        port in those drains hold up the next LOAD)."""
        found = self._b.get((kk, size, j))
        if found is None:
            total = Dma(0, 0)
            for part, rows in k_segments(self.k_tiles[kk:kk + size], self.n):
                total = total + Dma(*self.b[part].moved(rows, self.o_tiles[j], (), self.port,
                                                        "b", -(-rows[1] // self.n) * self.n,
                                                        self.n))
            found = self._b[kk, size, j] = (total.instructions, total.beats, total.tail,
                                            total.gaps)
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
            # Each STORE's set-up cycles past the first (its first row's registered read, the
            # table rows it reads) hold the port like beats.
            instructions += found
            beats += moved + (SETUP["store"] - 1 + self.table.vectors) * found
        return instructions, beats, 0, ()

    def load_table(self, m: int, n_out: int) -> Cost:
        """The table's LOADs (one a row of N int32) for ``m`` rows of C in ``n_out`` columns."""
        keys = -(-m // self.n) if self.table.by_rows else n_out // self.n
        count = keys * self.table.vectors
        return count, count * -(-4 * self.n // self.port), 0, ()

    def k_kinds(self, rows: int, first: int) -> tuple[list[int], ...]:
        """The K tiles from ``first`` but the last, by kind (what the LOADs of the tile and
        of its A slice of ``rows`` rows move), in order of first appearance."""
        memo = self._k_memo(rows, first)
        if "kinds" not in memo:
            kinds: dict[tuple, list[int]] = {}
            for i in range(first, len(self.k_tiles) - 1):
                kinds.setdefault((self.load_a(0, rows, i), self.load_b(i, 0)), []).append(i)
            memo["kinds"] = tuple(kinds.values())
        return memo["kinds"]

    def k_period(self, rows: int, first: int) -> Edges:
        """The period of the kinds of the K tiles from ``first`` but the last (``k_kinds``: an
        NCHW 5×5 conv's channel of 25 taps is a tile of 16 and one of 9, alternating), with
        the kinds before and after it (``_period``)."""
        memo = self._k_memo(rows, first)
        if "period" not in memo:
            kind = {i: k for k, members in enumerate(self.k_kinds(rows, first))
                    for i in members}
            memo["period"] = _period([kind[i] for i in range(first, len(self.k_tiles) - 1)])
        return memo["period"]

    def _k_memo(self, rows: int, first: int) -> dict:
        """The memo of the K tiles' kinds and their period, by all they depend on."""
        return _shared(("k", tuple(self.a), tuple(self.b), self.a_matrix, self.k_tiles,
                        self.o_tiles[0], self.port, self.n, rows, first))

    def block_period(self, m: int, rows: int, first: int) -> Edges:
        """The period of the kinds of the blocks of ``rows`` A rows from ``first`` but the last
        (what the block's A slices of the first and last K tile and its STORE of output tile
        0 move: an image's pixels cut into blocks across its rows, 98 rows of 56-pixel rows
        repeating every 4 blocks; the first and last K tile's taps meet the padded rows at the
        top and at the bottom), with the kinds before and after it (``_period``)."""
        memo = _shared(("m", self.a[self.k_tiles[0][0]], self.k_tiles[0], self.c, self.mode,
                        self.table, self.a_matrix, self.c_matrix, self.o_tiles[0], self.port,
                        self.n, m, rows, first))
        if "period" not in memo:
            last = len(self.k_tiles) - 1
            kinds = [(self.load_a(b * rows, rows, 0), self.load_a(b * rows, rows, last),
                      self.store(b * rows, rows, 0)) for b in range(first, -(-m // rows) - 1)]
            memo["period"] = _period(kinds)
        return memo["period"]

    def output_period(self, rows: int, first: int) -> Edges:
        """The period of the kinds of the output tiles from ``first`` but the last (what the
        tile's weights of K tile 0 and its STORE of ``rows`` rows move), with the kinds before
        and after it (``_period``)."""
        memo = _shared(("j", self.b[self.k_tiles[0][0]], self.k_tiles[0], self.c, self.mode,
                        self.table, self.c_matrix, self.o_tiles, self.port, self.n, rows, first))
        if "period" not in memo:
            kinds = [(self.load_b(0, j), self.store(0, rows, j))
                     for j in range(first, len(self.o_tiles) - 1)]
            memo["period"] = _period(kinds)
        return memo["period"]


def _period(kinds: list) -> Edges:
    """(lead, period, trail): the shortest period up to MAX_PERIOD with which ``kinds`` repeat
    but for the fewest at either end (``lead`` first and ``trail`` last, up to MAX_PERIOD
    each: a padded image's border blocks and tiles are kinds of their own), (0, 1, 0) where
    none holds."""
    n = len(kinds)
    for edge in range(2 * MAX_PERIOD + 1):
        for lead in range(max(0, edge - MAX_PERIOD), min(edge, MAX_PERIOD) + 1):
            end = n - (edge - lead)
            for p in range(1, MAX_PERIOD + 1):
                if all(kinds[i] == kinds[i + p] for i in range(lead, end - p)):
                    return lead, p, edge - lead
    return 0, 1, 0


@functools.lru_cache(maxsize=4096)
def _shared(key: tuple) -> dict:
    """A memo shared by every kernel whose tiles give ``key`` (all that the memoised figure
    depends on: the targets' tile costs, the tiles, the config): candidates of one search meet
    the same operands again and again. Bounded: the cache drops the least used."""
    return {}
