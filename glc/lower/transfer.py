"""From a view's box to LOAD/STORE transfer patterns (docs/isa.md, "LOAD and STORE").

A transfer moves a *tile* of a matrix view: a range of its rows (local rows of the scratchpad or
accumulator) and a range of its columns (the elements of each local row, from column 0). A
contiguous range of a mixed-radix dim is a union of *boxes* (a product of digit ranges); the
columns must be one box, because each LOAD writes its local rows whole; the rows may be several
boxes, one instruction each. Inside a box the column digits become the inner loop levels (an
innermost stride-1 digit with no bound on it becomes the run), the row digits the outer levels,
and the two bounded coordinates the virtual y and x with their limits (zero padding).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, replace

from glc.isa.fields import BY_NAME, LEVELS, MAX_STEP
from glc.lower.view import Digit, View, advanced, merge

_LOAD = {f.name: f for f in BY_NAME["load"].fields}
MAX_COUNT = (1 << _LOAD["count0"].width) - 1
STEPPED = {1 << k: k for k in range(MAX_STEP + 1)}  # element stride → LOAD `step` (0: contiguous)


class Unexpressible(Exception):
    """A box the transfer pattern cannot express (too many levels or bounds, fields too wide)."""


class OperandUnexpressible(Exception):
    """Operand ``which`` ("a" or "b") has a view the transfers cannot walk."""

    def __init__(self, which: str, reason: str):
        super().__init__(f"operand {which}: {reason}")
        self.which = which


@dataclass(frozen=True)
class Box:
    """Per digit of a dim: the first index and the count."""

    starts: tuple[int, ...]
    counts: tuple[int, ...]


def boxes(sizes: tuple[int, ...], start: int, count: int) -> list[Box]:
    """The contiguous range [start, start+count) of the mixed-radix dim ``sizes`` (outermost
    first) as boxes, in order."""
    if not sizes:
        return [Box((), ())] if count else []
    inner = math.prod(sizes[1:])
    out: list[Box] = []
    while count:
        head, rest = divmod(start, inner)
        if rest or count < inner:  # a partial head: recurse into the inner digits
            take = min(count, inner - rest)
            out += [Box((head,) + b.starts, (1,) + b.counts)
                    for b in boxes(sizes[1:], rest, take)]
        else:
            take = (count // inner) * inner
            out.append(Box((head,) + (0,) * (len(sizes) - 1),
                           (take // inner,) + tuple(sizes[1:])))
        start, count = start + take, count - take
    return out


def single_box(group: tuple[Digit, ...], start: int, count: int) -> Box | None:
    """The range as one box of the group's digits, or None."""
    found = boxes(tuple(d.size for d in group), start, count)
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class Target:
    """Where a transfer's data lives: the view, the tensor's DRAM address, its element size;
    ``transpose`` N when its tiles are loaded by transposing N×N blocks (0: as they lie)."""

    view: View
    address: int
    element: int  # bytes per element in DRAM
    transpose: int = 0


def transfers(target: Target, rows: tuple[int, int] | None, cols: tuple[int, int],
              local_row: int, fields: dict[str, int], room: int | None = None
              ) -> list[dict[str, int]]:
    """The field values of the LOAD/STORE instructions moving rows [r, r+count) × columns
    [c, c+count) of a matrix view (``rows`` None: a vector view, one local row) to local rows
    from ``local_row``. ``fields`` are the opcode's own (acc, raw, relu, shift). A target that
    transposes loads its rows in pieces of N (``_transposed``), writing no local row at or past
    ``room`` (default: the tile's rows)."""
    if target.transpose and rows is not None:
        return _transposed(target, rows, cols, local_row, fields,
                           rows[1] if room is None else room)
    return _plain(target, rows, cols, local_row, fields)


def _transposed(target: Target, rows: tuple[int, int], cols: tuple[int, int], local_row: int,
                fields: dict[str, int], room: int) -> list[dict[str, int]]:
    """The tile as transposing LOADs (docs/isa.md, "Transposing LOAD"): its blocks whole
    (``transposed_blocks``) or, where that does not hold, each piece of N rows on its own
    (``pieces``, ``piece_transfers``)."""
    whole = transposed_blocks(target, rows, cols, local_row, fields, room)
    if whole is not None:
        return whole
    out = []
    for start, piece, fits in pieces(target, rows, room):
        out += piece_transfers(target, piece, cols, local_row + start, fields, fits)
    return out


def pieces(target: Target, rows: tuple[int, int], room: int
           ) -> list[tuple[int, tuple[int, int], bool]]:
    """A transposing tile's pieces of N rows: per piece its first local row (from the
    tile's), its rows, and whether its N-row block stays inside the ``room`` local rows the
    original LOAD writes."""
    n = target.transpose
    first, count = rows
    return [(start, (first + start, min(n, count - start)), start + n <= room)
            for start in range(0, count, n)]


def piece_transfers(target: Target, piece: tuple[int, int], cols: tuple[int, int],
                    local_row: int, fields: dict[str, int], fits: bool) -> list[dict[str, int]]:
    """One piece of N rows of a transposing tile: one LOAD of the transposed view (its local
    rows the tile's columns, its runs along the tile's rows, so a tile whose columns are
    strided in DRAM but whose rows are contiguous moves in runs) writing one N×N block
    transposed; as it lies where the block does not ``fit`` or its transposed box is not one
    instruction."""
    if fits:
        flipped = Target(replace(target.view, groups=target.view.groups[::-1]), target.address,
                         target.element)
        with contextlib.suppress(Unexpressible):
            found = _plain(flipped, cols, piece, local_row, dict(fields, transpose=1))
            if len(found) == 1:
                return found
    return _plain(target, piece, cols, local_row, fields)


def transposed_blocks(target: Target, rows: tuple[int, int], cols: tuple[int, int],
                      local_row: int, fields: dict[str, int], room: int
                      ) -> list[dict[str, int]] | None:
    """The tile's pieces of N rows as transposing LOADs of several blocks each (one per box of
    its rows), or None where that does not hold. A LOAD's local rows are cut into blocks of N
    and each block drains N scratchpad rows while the next one's beats arrive (docs/isa.md,
    "Transposing LOAD"); one LOAD per piece would leave the port idle during every drain.
    Local row (…, piece p, column k) is block (…, p) and its row k: the box's innermost row
    digit is split into (pieces, N), the pieces walked outside the columns, the N rows of a
    piece the run. It needs whole blocks: N columns, and N | each box's innermost count."""
    n = target.transpose
    fields = dict(fields, transpose=1)
    view = target.view
    row_group, col_group = merge(view.groups[0]), merge(view.groups[-1])
    col_box = single_box(col_group, *cols)
    first, count = rows
    if cols[1] != n or count > room or col_box is None or not row_group:
        return None
    out = []
    for box in boxes(tuple(d.size for d in row_group), first, count):
        d, start, blocks = row_group[-1], box.starts[-1], box.counts[-1] // n
        if box.counts[-1] % n:
            return None
        # The innermost digit from its start: the start moves into the view's offset and
        # origins, so the split digits start at 0.
        shifted = advanced(view, d, start)
        outer = Digit(blocks, d.stride * n, tuple(c * n for c in d.coefs))
        split = Box((*box.starts[:-1], 0, *col_box.starts),
                    (*box.counts[:-1], blocks, *col_box.counts))
        row = local_row + _flat(row_group, box.starts) - first
        try:
            out += _emit(replace(target, view=shifted), (*row_group[:-1], outer, *col_group),
                         split, (Digit(n, d.stride, d.coefs),), Box((0,), (n,)), row, fields)
        except Unexpressible:
            return None
    return out


def _plain(target: Target, rows: tuple[int, int] | None, cols: tuple[int, int],
           local_row: int, fields: dict[str, int]) -> list[dict[str, int]]:
    """The tile's transfers as its elements lie: one instruction per box of its rows."""
    view = target.view
    row_group = merge(view.groups[0]) if rows is not None else ()
    col_group = merge(view.groups[-1])
    col_box = single_box(col_group, *cols)
    if col_box is None:
        raise Unexpressible("the column range is not one box")
    out = []
    row_boxes = boxes(tuple(d.size for d in row_group), *rows) if rows is not None \
        else [Box((), ())]
    first = rows[0] if rows is not None else 0
    for box in row_boxes:
        row = local_row + _flat(row_group, box.starts) - first
        out += _emit(target, row_group, box, col_group, col_box, row, fields)
    return out


def _flat(group: tuple[Digit, ...], index: tuple[int, ...]) -> int:
    flat = 0
    for d, i in zip(group, index, strict=True):
        flat = flat * d.size + i
    return flat


def _emit(target: Target, row_group, row_box: Box, col_group, col_box: Box, local_row: int,
          fields: dict[str, int]) -> list[dict[str, int]]:
    """One box as instructions: split along its outermost row digit while it needs more loop
    levels or bounds than one instruction has."""
    view = target.view
    digits = [*zip(row_group, row_box.starts, row_box.counts, strict=True),
              *zip(col_group, col_box.starts, col_box.counts, strict=True)]
    n_rows = len(row_group)
    offset = view.offset + sum(d.stride * s for d, s, _ in digits)
    origins = [o + sum(d.coefs[c] * s for d, s, _ in digits)
               for c, (o, _) in enumerate(view.coords)]
    active = [c for c, (_, limit) in enumerate(view.coords)
              if _may_leave(origins[c], limit, [(d.coefs[c], n) for d, _, n in digits])]
    walking = [k for k, (_, _, n) in enumerate(digits) if n > 1]
    inner = [k for k in walking if k >= n_rows]
    run, x_axis, step = 1, None, 0
    if inner:
        d, _, n = digits[inner[-1]]
        bounded = [c for c in active if d.coefs[c]]
        found = _step(d.stride, fields)
        # xrun: the run walks x one element at a time, each element checked on its own
        # (docs/isa.md, LOAD and STORE), so a run of pixels may straddle a padded border.
        xrun = len(bounded) == 1 and d.coefs[bounded[0]] == d.stride
        if found is not None and (not bounded or xrun):
            run, inner, step = n, inner[:-1], found
            x_axis = bounded[0] if bounded else None
    outer = [k for k in walking if k < n_rows]
    too_big = any(digits[k][2] > MAX_COUNT for k in outer)
    if len(inner) + len(outer) > LEVELS or len(active) > 2 or too_big:
        if not outer:
            raise Unexpressible("a local row needs more loop levels or bounds than a transfer")
        return _split(target, row_group, row_box, col_group, col_box, local_row, fields,
                      outer[0])
    levels = [digits[k] for k in reversed(inner)] + [digits[k] for k in reversed(outer)]
    values = dict(fields, inner=len(inner), run=run, row=local_row,
                  dram=target.address + offset * target.element)
    if step:
        values["step"] = step
    if x_axis is None:
        axes = dict(zip("yx", active, strict=False))
    else:
        values["xrun"] = 1
        others = [c for c in active if c != x_axis]
        axes = {"x": x_axis, **({"y": others[0]} if others else {})}
    for level, (d, _, n) in enumerate(levels):
        values[f"count{level}"] = n
        values[f"stride{level}"] = d.stride * target.element
        for axis, c in axes.items():
            values[f"{axis}coef{level}"] = d.coefs[c]
    for axis, c in axes.items():
        values[f"{axis}0"] = origins[c]
        values[f"{axis}lim"] = view.coords[c][1]
    if active and view.fill:
        values["pad"] = view.fill  # the padding's value (a LOAD field; an int8 or ACC's int32)
    _check(values)
    return [values]


def _step(stride: int, fields: dict[str, int]) -> int | None:
    """The `step` of a run along a digit of ``stride`` elements: 0 for contiguous elements;
    1 or 2 for elements 2 or 4 bytes apart, which only a LOAD to the scratchpad reads (a
    strided run, docs/isa.md revision 2.4: a stride-2 conv's pixels in NCHW); None: no run.
    A STORE's fields always carry `raw`, a LOAD to the accumulator's `acc`."""
    step = STEPPED.get(stride)
    if step and ("raw" in fields or fields.get("acc")):
        return None
    return step


def _split(target, row_group, row_box: Box, col_group, col_box: Box, local_row: int,
           fields, k: int) -> list[dict[str, int]]:
    """The box cut into one box per index of row digit k."""
    out = []
    for i in range(row_box.counts[k]):
        starts = row_box.starts[:k] + (row_box.starts[k] + i,) + row_box.starts[k + 1:]
        counts = row_box.counts[:k] + (1,) + row_box.counts[k + 1:]
        # The digits before k have count 1, so index i starts i·(rows below k) local rows on.
        out += _emit(target, row_group, Box(starts, counts), col_group, col_box,
                     local_row + i * math.prod(row_box.counts[k + 1:]), fields)
    return out


def _may_leave(origin: int, limit: int, terms: list[tuple[int, int]]) -> bool:
    low = origin + sum(min(0, c) * (n - 1) for c, n in terms)
    high = origin + sum(max(0, c) * (n - 1) for c, n in terms)
    return low < 0 or high >= limit


# Each LOAD or STORE field's (wraps, lowest, highest, width): a LOAD's where both have it.
_BOUNDS = {f.name: (f.wrap, f.low, f.high, f.width)
           for f in (*BY_NAME["store"].fields, *_LOAD.values())}
_LIMITS = frozenset(name for name in _BOUNDS if name.endswith("lim"))


def _check(values: dict[str, int]) -> None:
    """Every field within its width (the DRAM address wraps by design)."""
    for name, value in values.items():
        wraps, low, high, width = _BOUNDS[name]
        if not wraps and not low <= value <= high:
            raise Unexpressible(f"{name}={value} does not fit {width} bits")
        if not value and name in _LIMITS:
            raise Unexpressible("a coordinate with no valid index")
