"""glc/cost/tiles.py: a tile costs what its canonical shift costs (transfer.py's transfers the
same but for their addresses), each decoded, over every tile of padded and strided
convolutions' operands, as they lie and transposing."""

from __future__ import annotations

import pytest

from glc.cost.tiles import TileCosts, dma
from glc.lower.tiling import tiles
from glc.lower.transfer import OperandUnexpressible, Target
from glc.lower.view import Digit, View, merge

N = PORT = 16


def _im2col(channels: int, size: int, k: int, stride: int, pad: int, nhwc: bool) -> View:
    """The im2col matrix of a square image: rows the output pixels, columns its K digits."""
    out = (size + 2 * pad - k) // stride + 1
    c = channels if nhwc else 1  # the elements between two pixels of one channel
    plane = 1 if nhwc else size * size  # … and between two channels of one pixel
    rows = (Digit(out, stride * size * c, (stride, 0)), Digit(out, stride * c, (0, stride)))
    taps = (Digit(k, size * c, (1, 0)), Digit(k, c, (0, 1)))
    channel = (Digit(channels, plane, (0, 0)),)
    cols = taps + channel if nhwc else channel + taps
    return View("x", 0, (rows, cols), ((-pad, size), (-pad, size)))


def _outcome(target: Target, rows, cols, room: int):
    try:
        return dma(target, rows, cols, {}, PORT, "a", room, N)
    except OperandUnexpressible as error:
        return str(error)


CONVS = [(3, 23, 7, 2, 3, False), (5, 12, 3, 1, 1, False), (20, 9, 3, 2, 1, False),
         (4, 14, 5, 1, 2, True), (32, 8, 3, 1, 1, True)]


@pytest.mark.parametrize("conv", CONVS)
@pytest.mark.parametrize("transpose", [0, N])
def test_every_tile_costs_what_its_canonical_shift_costs(conv, transpose):
    view = _im2col(*conv)
    for target in (Target(view, 0, 1, transpose), Target(replace_groups(view), 0, 1, 0)):
        costs = TileCosts(target)
        rows_group, cols_group = merge(target.view.groups[0]), merge(target.view.groups[-1])
        size = 1
        for d in rows_group:
            size *= d.size
        col_tiles = tiles([d.size for d in cols_group], N)
        row_tiles = {(first, count) for count in (N, 2 * N, size // 3 or 1, size)
                     for first in range(0, size - count + 1, max(1, count // 2))}
        moved = 0
        for rows in sorted(row_tiles):
            for cols in col_tiles:
                shifted = costs.shifted(rows, cols)
                moved += shifted != (rows, cols)
                assert _outcome(target, *shifted, rows[1]) == _outcome(target, rows, cols,
                                                                       rows[1]), (rows, cols)
        assert moved  # the test compares moved tiles, not only tiles left where they are


def replace_groups(view: View) -> View:
    """The transposed view (the image as B, its pixels the columns)."""
    return View(view.buffer, view.offset, view.groups[::-1], view.coords, view.fill)


@pytest.mark.parametrize("conv", CONVS)
def test_a_transposing_tile_costs_what_its_transfers_cost(conv):
    """TileCosts costs a transposing tile piece by piece, each piece as its canonical shift:
    the cost of the whole tile's transfers, decoded at once."""
    target = Target(_im2col(*conv), 0, 1, N)
    costs = TileCosts(target)
    size = 1
    for d in merge(target.view.groups[0]):
        size *= d.size
    for count in (N, 3 * N, size // 2, size):
        for first in range(0, size - count + 1, max(1, count // 3)):
            for cols in tiles([d.size for d in merge(target.view.groups[-1])], N):
                whole = _outcome(target, (first, count), cols, count)
                try:
                    found = costs.cost((first, count), cols, (), PORT, "a", count, N)
                except OperandUnexpressible as error:
                    found = str(error)
                assert found == (whole if isinstance(whole, str) else
                                 (whole.instructions, whole.beats, whole.tail,
                                  whole.gaps)), (first, cols)
