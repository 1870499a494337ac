"""How a product C = A·B is cut into N×N tiles: the order its K indices are walked in, and
the K tiles (docs/lowering.md, "Tiling and the schedule").

K is summed over, so it may be walked in any order as long as A and B agree: their digit
sequences are refined to the same sizes and one digit moved innermost. A K tile is a box of
the refined digits (a LOAD writes its local rows whole): the innermost digits whole, the next
one in chunks. Three refinements cut the tiles further, each taken where it gives fewer tiles:

- **Channels inside a padded coordinate.** An NHWC image's channels c lie inside each pixel
  x: the window row (kx, c) is contiguous in DRAM, but only kx moves the padded coordinate,
  so the two stay two digits and a tile holds whole pixels (5 pixels of 3 channels, 15 of 16
  rows). Counting x in bytes, x′ = C·x + c (bound C·W, the same test since 0 ≤ c < C), the
  window row is one digit of 7·3 = 21 indices whose every element is checked on its own by
  the LOAD (`xrun`). The image is A when the windows stream, B when they are stationary.
- **Merged neighbours.** A K order that moves the channels innermost may put digits side by
  side that both operands walk as one (kx and c of an unpadded NHWC window and of HWIO
  weights): merged again, they tile as one digit.
- **Parts.** An innermost digit longer than N but no multiple of it leaves a short chunk in
  every outer index (21 = 16 + 5, seven times for a 7×7 kernel: 14 tiles). Its last
  s mod N indices are a part of their own, tiled with the outer digits (5 × 3 kernel rows in
  a tile): 7 + 3 = 10 tiles for the stem's 147 taps, its bound 147/160.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from glc.lower.transfer import OperandUnexpressible, Target
from glc.lower.view import Digit, View, advanced, merge

Range = tuple[int, int]  # (first index, count)
KTile = tuple[int, Range]  # (part, range of the part's K digits)


def tiles(sizes: list[int], n: int) -> list[Range]:
    """A tiling of a dim of digit ``sizes`` (outermost first) into boxes of at most n indices,
    the fewest tiles: the innermost digits whole, the next one cut into chunks (the last chunk
    may be short)."""
    return list(_tiles(tuple(sizes), n))


@functools.lru_cache(maxsize=4096)
def _tiles(sizes: tuple[int, ...], n: int) -> tuple[Range, ...]:
    """``tiles``, memoised: the schedule search tiles the same dims in every candidate."""
    if not sizes:
        return ((0, 1),)
    found = []
    for j in range(len(sizes) - 1, -1, -1):
        suffix = math.prod(sizes[j + 1:])
        if suffix > n:
            break
        x = min(sizes[j], n // suffix)
        found.append([((outer * sizes[j] + t * x) * suffix, min(x, sizes[j] - t * x) * suffix)
                      for outer in range(math.prod(sizes[:j]))
                      for t in range(-(-sizes[j] // x))])
    return tuple(min(found, key=len))


def k_segments(tiles: list[KTile], n: int) -> list[tuple[int, Range]]:
    """K tiles one LOAD brings (a group of weight tiles, glc/isa/gemm.py) as runs of K rows
    each transfers can move at once: consecutive tiles of one part join while every tile but
    the run's last is whole (N rows: a short tile's rows end before the next tile's buffer)."""
    segments: list[tuple[int, Range]] = []
    for part, (first, count) in tiles:
        if segments and segments[-1][0] == part and segments[-1][1][1] % n == 0 and \
                sum(segments[-1][1]) == first:
            segments[-1] = (part, (segments[-1][1][0], segments[-1][1][1] + count))
        else:
            segments.append((part, (first, count)))
    return segments


def shared_k(a: View, b: View, inner: int | None = None) -> tuple[View, View]:
    """A's columns and B's rows over one digit sequence, in the order the kernel walks K.

    K is summed over, so any order of its indices gives the same product, as long as A and B
    agree: refine both digit sequences to the same sizes (``_refined``), then move refined digit
    ``inner`` innermost (it sets the K tiles: e.g. the channels of an NHWC window, or of one
    tap of an NCHW one); by default a digit A reads contiguously (stride 1, unbounded), so A's
    K tiles load as runs. Raises OperandUnexpressible("a") when the sequences have no common
    refinement (materialising A makes one)."""
    fine_a, fine_b = _refined(a.groups[-1], b.groups[0], "a")
    if inner is None:
        contiguous = [i for i, d in enumerate(fine_a) if d.stride == 1 and not any(d.coefs)]
        inner = contiguous[-1] if contiguous else None
    if inner is not None:
        fine_a, fine_b = _innermost(fine_a, inner), _innermost(fine_b, inner)
    return (replace(a, groups=a.groups[:-1] + (fine_a,)),
            replace(b, groups=(fine_b,) + b.groups[1:]))


def _refined(first_group: tuple[Digit, ...], second_group: tuple[Digit, ...],
            which: str) -> tuple[tuple[Digit, ...], tuple[Digit, ...]]:
    """Two digit sequences of one dim refined to the same sizes (a digit of s·t splits into s
    and t), or OperandUnexpressible(``which``) when they split it differently."""
    first, second = list(merge(first_group)), list(merge(second_group))
    fine_a: list[Digit] = []
    fine_b: list[Digit] = []
    while first and second:
        x, y = first.pop(), second.pop()
        if x.size % y.size == 0 and x.size != y.size:
            first.append(_split(x, y.size)[0])
            x = _split(x, y.size)[1]
        elif y.size % x.size == 0 and x.size != y.size:
            second.append(_split(y, x.size)[0])
            y = _split(y, x.size)[1]
        elif x.size != y.size:
            raise OperandUnexpressible(which, "the operands' dims split differently")
        fine_a.insert(0, x)
        fine_b.insert(0, y)
    return tuple(fine_a), tuple(fine_b)


def _innermost(digits: tuple[Digit, ...], inner: int) -> tuple[Digit, ...]:
    return tuple(d for i, d in enumerate(digits) if i != inner) + (digits[inner],)


def _split(d: Digit, inner: int) -> tuple[Digit, Digit]:
    """A digit as (outer, inner) digits, the inner of size ``inner``."""
    return (Digit(d.size // inner, d.stride * inner, tuple(c * inner for c in d.coefs)),
            Digit(inner, d.stride, d.coefs))


def transposed(view: View) -> View:
    """The matrix view with rows and columns swapped (C = A·B ⇔ Cᵀ = Bᵀ·Aᵀ)."""
    return replace(view, groups=view.groups[::-1])


@dataclass(frozen=True)
class Shape:
    """A product's tiling: per part of K, A's and B's views over one K digit sequence; the K
    tiles, each in one part, and the Nₒ tiles."""

    a: tuple[Target, ...]
    b: tuple[Target, ...]
    m: int
    k: int
    n_out: int
    k_tiles: list[KTile]
    o_tiles: list[Range]


def k_digits(a: Target, b: Target) -> int:
    """How many digits K has once A's and B's are refined to one sequence (shared_k)."""
    return len(shared_k(a.view, b.view)[0].groups[-1])


def shape(a: Target, b: Target, n: int, k_inner: int | None = None,
          flat: bool = False) -> Shape:
    """The tiling of C = A·B on an N×N array, K digit ``k_inner`` innermost (shared_k), its K
    tiles flat with ``flat`` (``flat_k``), else boxes, with the channels counted inside a
    padded coordinate and a short innermost chunk made a part where that takes fewer tiles.
    A's view is ((M),(K)) or ((),(K)), B's ((),(K,Nₒ))."""
    m = a.view.dims[0] if len(a.view.groups) == 2 else 1
    k, n_out = b.view.dims
    a_view, b_view = shared_k(a.view, b.view, k_inner)
    if flat:
        parts = [(a_view, b_view, tiles([math.prod(d.size for d in a_view.groups[-1])], n))]
    else:
        # The fewest tiles (the first of equals): the digits as refined, merged where the K
        # order put neighbours side by side that both operands walk as one, and with the
        # channels counted inside a padded coordinate.
        scaled = _channels_in_bytes(a_view, -1), _channels_in_bytes(b_view, 0)
        candidates = [(a_view, b_view), _coarse(a_view, b_view)]
        if scaled != (None, None):
            candidates.append(_coarse(scaled[0] or a_view, scaled[1] or b_view))
        parts = min((_parts(*views, n) for views in candidates), key=_count)
    return Shape(tuple(replace(a, view=pa) for pa, _, _ in parts),
                 tuple(replace(b, view=pb) for _, pb, _ in parts), m, k, n_out,
                 [(p, r) for p, (_, _, found) in enumerate(parts) for r in found],
                 tiles([d.size for d in merge(b_view.groups[1])], n))


def column_orders(b: View, c: View, n: int) -> list[tuple[View, View]]:
    """B's and C's columns (one index: the output tiles') walked as they lie and, where that
    takes fewer output tiles, in another order — the columns are C's own, so any order B and
    C agree on computes the same values (as K's, ``shared_k``). An output tile is a box of
    the column digits: the innermost whole, the next in chunks (``tiles``), so the columns of
    an image's pixels (rows of 24: 16 + 8) fill 3 of every 4 array columns. Split the
    innermost digit (s indices) into (s/x, x), x dividing s and N, and walk s/x outermost:
    a tile is then N/x rows of x pixels (2 rows of 8), every column used (36 tiles for 24×24
    pixels, not 48). The split that takes the fewest tiles, where it takes fewer than the
    columns as they lie; columns B and C split differently keep their order."""
    try:
        fine_b, fine_c = _refined(b.groups[-1], c.groups[-1], "b")
    except OperandUnexpressible:
        return [(b, c)]
    if len(fine_b) < 2:
        return [(b, c)]
    best = len(tiles([d.size for d in merge(fine_b)], n)), None
    *outer, size = [d.size for d in fine_b]
    for x in range(min(size, n) - 1, 0, -1):  # the longest runs of a tile's pixels first
        if size % x or n % x:
            continue
        count = len(tiles([size // x, *outer, x], n))
        if count < best[0]:
            best = count, x
    if best[1] is None:
        return [(b, c)]
    reordered = []
    for view, fine in ((b, fine_b), (c, fine_c)):
        outer, inner = _split(fine[-1], best[1])
        reordered.append(replace(view, groups=view.groups[:-1] + ((outer, *fine[:-1], inner),)))
    return [(b, c), (reordered[0], reordered[1])]


def _coarse(a: View, b: View) -> tuple[View, View]:
    """A's and B's K digits, in their order, merged where both operands walk neighbours as
    one digit, then refined to the same sizes again."""
    fine_a, fine_b = _refined(a.groups[-1], b.groups[0], "a")
    return (replace(a, groups=a.groups[:-1] + (fine_a,)),
            replace(b, groups=(fine_b,) + b.groups[1:]))


def _count(parts) -> int:
    return sum(len(found) for _, _, found in parts)


def _parts(a: View, b: View, n: int) -> list[tuple[View, View, list[Range]]]:
    """K as one part with its box tiles or, where the innermost digit (s indices) is longer
    than N and no multiple of it and that takes fewer tiles, as two: its first ⌊s/N⌋·N
    indices and its last s mod N, each tiled on its own (the module's "Parts")."""
    whole = [(a, b, tiles([d.size for d in a.groups[-1]], n))]
    if not a.groups[-1] or a.groups[-1][-1].size <= n or a.groups[-1][-1].size % n == 0:
        return whole
    d_a, d_b = a.groups[-1][-1], b.groups[0][-1]
    cut = d_a.size // n * n
    found = []
    for lo, size in ((0, cut), (cut, d_a.size - cut)):
        pa = replace(advanced(a, d_a, lo),
                     groups=a.groups[:-1] + (a.groups[-1][:-1] + (replace(d_a, size=size),),))
        pb = replace(advanced(b, d_b, lo),
                     groups=(b.groups[0][:-1] + (replace(d_b, size=size),),) + b.groups[1:])
        found.append((pa, pb, tiles([d.size for d in pa.groups[-1]], n)))
    return found if _count(found) < _count(whole) else whole


def _channels_in_bytes(view: View, k: int) -> View | None:
    """The view (A's, its K the last group ``k`` = −1, or B's, its K the first, ``k`` = 0:
    the image is whichever operand holds the padded coordinate) with the coordinate x of the
    digit outside its innermost K digit c counted in c's units, x′ = size(c)·x + c (the
    module's "Channels inside a padded coordinate"), so the two merge into one digit; None
    where they would not (c strided or bounded, or the outer digit not exactly one c apart or
    in more than one coordinate)."""
    fine = view.groups[k]
    if len(fine) < 2:
        return None
    outer, c = fine[-2], fine[-1]
    axes = [axis for axis, coef in enumerate(outer.coefs) if coef]
    if c.stride != 1 or any(c.coefs) or outer.stride != c.size or len(axes) != 1:
        return None
    (x,), scale = axes, c.size

    def scaled(d: Digit) -> Digit:
        return replace(d, coefs=tuple(coef * scale if axis == x else coef
                                      for axis, coef in enumerate(d.coefs)))

    groups = [tuple(scaled(d) for d in group) for group in view.groups]
    groups[k] = groups[k][:-1] + (replace(c, coefs=tuple(int(axis == x)
                                                         for axis in range(len(c.coefs)))),)
    coords = tuple((origin * scale, limit * scale) if axis == x else (origin, limit)
                   for axis, (origin, limit) in enumerate(view.coords))
    return replace(view, groups=tuple(groups), coords=coords)


def flat_k(a: Target, b: Target, k_inner: int | None, n: int) -> bool:
    """Whether flat K tiles are a different tiling worth costing. K tiles are boxes of the
    refined digits (A's columns must be one box: a LOAD writes its local rows whole), e.g. one
    channel's 3×3 taps, 9 of N rows; where A's K merges into one digit any range of it is one
    box, so the tiles may be flat, N indices each across the digits' boundaries (B's K rows
    then several boxes, one LOAD each): OIHW weights streamed against an NCHW im2col."""
    a_view = shared_k(a.view, b.view, k_inner)[0]
    sizes = [d.size for d in a_view.groups[-1]]
    return len(merge(a_view.groups[-1])) == 1 and \
        len(tiles(sizes, n)) > len(tiles([math.prod(sizes)], n))


