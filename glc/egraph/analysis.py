"""The e-class analysis: each class's type (by the shape checker's rules) and its zero regions.

``make`` types one e-node with ``glc.ir.check.infer_node`` — the same rule the checker applies to
terms — so a class's type is its terms' type. For access patterns it also tracks *zero boxes*:
index boxes (one half-open ``(lo, hi)`` range per dim of ``shape ++ item``) where the tensor is
known to be zero, because they came from ``zero-padding`` (or a ``(literal 0)``) and were carried
through the access operators that move data without changing it. Glenside's rewrites drop slices
of zero padding (Smith et al., MAPS 2021, §3: the padded im2col); a condition reads these boxes
through ``Match.zeros`` or ``is_zero``.

Merging two classes' data (on union) checks that the types agree — two terms proven equal must
have one type, so a disagreement is a bug in a rewrite and raises ``AnalysisMismatch`` — and keeps
the union of both sides' zero boxes (each side's facts hold for the one value).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from glc.ir.check import infer_node, lazy
from glc.ir.types import Access

Box = tuple[tuple[int, int], ...]

# At most this many boxes per class: the largest are kept, so merging stays cheap and the data
# can only grow in a well-founded order (saturation of the analysis terminates).
MAX_BOXES = 8

# Compute kinds with f(0) = 0 applied elementwise: relu, negative, sqrt, and requantize
# (for k >= 1, (0 + 2^(k-1)) >> k = 0; for k = 0, clamp(0) = 0).
ZERO_PRESERVING = frozenset({"relu", "negative", "sqrt", "requantize"})


class AnalysisMismatch(Exception):
    """Two classes being merged have different types: a rewrite is unsound (an internal error)."""


@dataclass(frozen=True)
class Data:
    """One e-class's analysis value: its type, (for access patterns) its zero boxes, and
    whether it is a lazy product (glc/ir/check.py ``lazy``: held by no tensor, so the size
    limit binds only where something materialises it)."""

    type: object
    zeros: tuple[Box, ...] = ()
    lazy: bool = False


def make(op: str, value: object, children: list[Data], env: Mapping[str, Access]) -> Data:
    """The data of one e-node from its children's; raises ShapeError if it is ill-typed."""
    types, lazies = [c.type for c in children], [c.lazy for c in children]
    ty = infer_node(op, value, types, env, lazies)
    if not isinstance(ty, Access):
        return Data(ty)
    rule = ZERO_RULES.get(op)
    zeros = normalize(rule(ty, children)) if rule else ()
    return Data(ty, zeros, lazy(op, ty, types, lazies))


def merge(a: Data, b: Data) -> Data:
    """The data of the union of two classes (``a`` itself when ``b`` adds nothing)."""
    if a.type != b.type:
        raise AnalysisMismatch(f"types {a.type} and {b.type} differ")
    zeros = normalize(a.zeros + b.zeros) if b.zeros and b.zeros != a.zeros else a.zeros
    merged = a.lazy or b.lazy
    return a if (zeros, merged) == (a.zeros, a.lazy) else Data(a.type, zeros, merged)


def is_zero(data: Data, box: Box) -> bool:
    """Whether the analysis proves ``box`` of the class's tensor zero (some known box covers it)."""
    return any(all(zl <= lo and hi <= zh for (lo, hi), (zl, zh) in zip(box, zero, strict=True))
               for zero in data.zeros)


def full(dims: tuple[int, ...]) -> Box:
    """The box covering a whole tensor of these dims."""
    return tuple((0, d) for d in dims)


def normalize(boxes) -> tuple[Box, ...]:
    """Non-empty boxes, none inside another, largest first, at most MAX_BOXES."""
    kept = sorted({b for b in boxes if all(lo < hi for lo, hi in b)},
                  key=lambda b: (-math.prod(hi - lo for lo, hi in b), b))
    out: list[Box] = []
    for box in kept:
        if not any(_inside(box, big) for big in out):
            out.append(box)
            if len(out) == MAX_BOXES:
                break
    return tuple(out)


def _inside(small: Box, big: Box) -> bool:
    return all(bl <= lo and hi <= bh for (lo, hi), (bl, bh) in zip(small, big, strict=True))


def _shift(box: Box, k: int, by: int) -> Box:
    lo, hi = box[k]
    return box[:k] + ((lo + by, hi + by),) + box[k + 1:]


# --- how each operator carries zero boxes (its semantics: glc/ir/ops.py) ------------------------

def _same(ty: Access, c: list[Data]):
    return c[0].zeros


def _pad(ty: Access, c: list[Data]):
    a, pad, k, before, after = (x.type for x in c)
    d = a.dims[k]
    out = []
    for box in c[0].zeros:
        if pad == "zero-padding" and box[k] == (0, d):
            out.append(box[:k] + ((0, ty.dims[k]),) + box[k + 1:])
        else:
            out.append(_shift(box, k, before))
    if pad == "zero-padding":
        slab = full(ty.dims)
        out.append(slab[:k] + ((0, before),) + slab[k + 1:])
        out.append(slab[:k] + ((before + d, ty.dims[k]),) + slab[k + 1:])
    return out


def _slice(ty: Access, c: list[Data]):
    k, lo, hi = (x.type for x in c[1:])
    out = []
    for box in c[0].zeros:
        zl, zh = box[k]
        out.append(box[:k] + ((max(zl, lo) - lo, min(zh, hi) - lo),) + box[k + 1:])
    return out


def _transpose(ty: Access, c: list[Data]):
    perm = c[1].type.items
    return [tuple(box[p] for p in perm) for box in c[0].zeros]


def _cartesian(ty: Access, c: list[Data]):
    a0, a1 = c[0].type, c[1].type
    n0, n1 = a0.n, a1.n
    left = [box[:n0] + full(a1.shape) + ((0, 1),) + box[n0:] for box in c[0].zeros]
    right = [full(a0.shape) + box[:n1] + ((1, 2),) + box[n1:] for box in c[1].zeros]
    return left + right


def _pair(ty: Access, c: list[Data]):
    n = ty.n
    return ([box[:n] + ((0, 1),) + box[n:] for box in c[0].zeros]
            + [box[:n] + ((1, 2),) + box[n:] for box in c[1].zeros])


def _concatenate(ty: Access, c: list[Data]):
    k = c[2].type
    return list(c[0].zeros) + [_shift(box, k, c[0].type.dims[k]) for box in c[1].zeros]


def _windows(ty: Access, c: list[Data]):
    # R[s.., p.., q..] = T[s.., p*st + q ..]: window p lies wholly in a zero range [lo, hi) of
    # an item dim when lo <= p*st and p*st + f <= hi.
    a = c[0].type
    n, filters, strides = a.n, c[1].type.dims, c[2].type.dims
    out = []
    for box in c[0].zeros:
        windows = []
        for j, (f, st) in enumerate(zip(filters, strides, strict=True)):
            lo, hi = box[n + j]
            windows.append((-(-lo // st), min((hi - f) // st + 1, ty.shape[n + j])))
        out.append(box[:n] + tuple(windows) + full(filters))
    return out


def _squeeze(ty: Access, c: list[Data]):
    k = c[1].type
    return [box[:k] + box[k + 1:] for box in c[0].zeros]


def _insert_axis(ty: Access, c: list[Data]):
    k = c[1].type
    return [box[:k] + ((0, 1),) + box[k:] for box in c[0].zeros]


def _broadcast(ty: Access, c: list[Data]):
    a = c[0].type
    grow = [j for j, (d, t) in enumerate(zip(a.dims, ty.dims, strict=True)) if d != t]
    out = []
    for box in c[0].zeros:
        box = list(box)
        for j in grow:
            box[j] = (0, ty.dims[j])
        out.append(tuple(box))
    return out


def _whole(ty: Access, c: list[Data]):
    # A row-major reshape scatters boxes; only an all-zero tensor stays all zero.
    a = c[0].type
    return [full(ty.dims)] if full(a.dims) in c[0].zeros else []


def _literal(ty: Access, c: list[Data]):
    return [()] if c[0].type == 0 else []


def _compute(ty: Access, c: list[Data]):
    kind, a = c[0].type.name, c[1].type
    n, zeros = a.n, c[1].zeros
    if kind in ZERO_PRESERVING:
        return zeros
    if kind == "dot-product":
        # Item [t, r...]: zero where, for every r, some tuple member t is zero.
        return [box[:n] for box in zeros if box[n + 1:] == full(a.item[1:])]
    if kind in ("reduce-sum", "reduce-max", "reduce-mean"):
        return [box[:n] for box in zeros if box[n:] == full(a.item)]
    if kind == "elementwise-add":
        return [box[:n] + box[n + 1:] for box in zeros if box[n] == (0, a.item[0])]
    if kind == "elementwise-mul":
        return [box[:n] + box[n + 1:] for box in zeros]
    return []


def _systolic(ty: Access, c: list[Data]):
    # A0 @ A1: a zero row of A0 gives a zero output row, a zero column of A1 a zero output column.
    a, w = c[2].type, c[3].type
    k, o = w.item
    out = []
    for box in c[2].zeros:
        if box[a.n] == (0, k):
            out.append(box[:a.n] + ((0, o),))
    rows = full(a.shape)
    for box in c[3].zeros:
        if box[0] == (0, k):
            out.append(rows + (box[1],))
    return out


ZERO_RULES: dict[str, Callable[[Access, list[Data]], list]] = {
    "access-tensor": _same,
    "access": _same,
    "access-pad": _pad,
    "access-slice": _slice,
    "access-transpose": _transpose,
    "access-cartesian-product": _cartesian,
    "access-pair": _pair,
    "access-concatenate": _concatenate,
    "access-windows": _windows,
    "access-squeeze": _squeeze,
    "access-insert-axis": _insert_axis,
    "access-broadcast": _broadcast,
    "access-flatten": _whole,
    "access-reshape": _whole,
    "access-literal": _literal,
    "compute": _compute,
    "systolic-array": _systolic,
    "systolic-array-with-blocking": _systolic,
}
