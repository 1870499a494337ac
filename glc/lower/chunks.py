"""A product too large for its bias, cut into kernels of consecutive rows of C.

A kernel adds its bias by loading it into the accumulator rows its STOREs drain before the first
MATMUL (glc/lower/kernel.py, ``_bias_loads``), so no accumulator row may hold two output tiles:
a C of more rows than the accumulator holds (a 224×224 network's early layers: 12 544 rows of
64 channels against n16's 4096 rows) has no such schedule. Rather than leave its bias and
requantization to the host, the lowering cuts C into chunks along the dim the array streams (C's
rows as it lies, its columns when it computes Cᵀ), each a kernel with its own bias and the same
weights: the streamed operand, C, the bias and the multipliers sliced alike along the outermost
digit of the streamed operand's dim (whole image rows of a conv's im2col), the largest chunk the
search schedules found by bisection. Each chunk pays its pipeline's fill and drain once; the weights
are reloaded per chunk.
"""

from __future__ import annotations

import math
from dataclasses import replace

from glc.lower.transfer import Target
from glc.lower.view import Digit, View, advanced


def step(view: View, axis: int) -> tuple[int, int] | None:
    """(index of the outermost digit of size > 1 of dim ``axis`` of a matrix view, indices of
    that dim per index of it): chunks are whole indices of that digit; None for a vector or a
    dim of one index."""
    if len(view.groups) != 2:
        return None
    group = view.groups[axis]
    for index, digit in enumerate(group):
        if digit.size > 1:
            return index, math.prod(d.size for d in group[index + 1:])
    return None


def sliced(target: Target, axis: int, lo: int, hi: int) -> Target | None:
    """``target`` (a matrix view) restricted to indices ``lo … hi-1`` of dim ``axis``: its
    outermost digit of size > 1 there advanced and shortened; None when the range is no whole
    indices of that digit."""
    found = step(target.view, axis)
    if found is None:
        return None
    index, inner = found
    if lo % inner or hi % inner:
        return None
    group = list(target.view.groups[axis])
    digit = group[index]
    group[index] = Digit((hi - lo) // inner, digit.stride, digit.coefs)
    view = advanced(target.view, digit, lo // inner)
    groups = list(view.groups)
    groups[axis] = tuple(group)
    return replace(target, view=replace(view, groups=tuple(groups)))


def bounds(rows: int, chunk: int) -> list[tuple[int, int]]:
    """The row ranges of chunks of ``chunk`` rows (the last one shorter)."""
    return [(lo, min(rows, lo + chunk)) for lo in range(0, rows, chunk)]


def largest(outer: int, inner: int, fits) -> int | None:
    """The most indices of the outer row digit (times ``inner`` rows) that ``fits(rows)``
    accepts, by bisection below ``outer`` (fewer rows never need more accumulator); None if
    not even one does."""
    lo, hi = 0, outer - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid * inner):
            lo = mid
        else:
            hi = mid - 1
    return lo * inner if lo else None
