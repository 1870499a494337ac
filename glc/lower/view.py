"""Affine views: an access-pattern expression over a DRAM tensor as address arithmetic.

The architecture's key idea (Smith et al., MAPS 2021, §3: access patterns are views): the operand
of a systolic array is an expression of access, transpose, flatten/reshape, windows, pad, slice,
squeeze, insert-axis and broadcast over a tensor. Each such expression is an affine map from the
result's indices to the tensor's elements, plus bounds outside which the element is a zero pad.

A ``View`` keeps every logical dim as a *group of digits* (mixed-radix, outermost first), because
a flattened window (c, ky, kx) is not one affine dim but three: the DMA walks the digits as loop
levels (docs/isa.md, transfer pattern). A digit has a size, a stride (in elements of the tensor)
and a coefficient per *coordinate*: a coordinate is ``origin + Σ coef·index`` and the element is
real only while ``0 ≤ coordinate < limit`` (one per padded axis: the LOAD's y/x bounds).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from glc.ir.term import Term
from glc.ir.types import Access


@dataclass(frozen=True)
class Digit:
    """One loop dimension: ``size`` indices, ``stride`` elements apart, ``coefs`` per coordinate."""

    size: int
    stride: int
    coefs: tuple[int, ...]


@dataclass(frozen=True)
class View:
    """Element [i…] of the view is ``buffer.flat[offset + Σ stride·i]`` where every coordinate is
    within its bounds, else ``fill`` (0 for zero padding, the dtype's minimum for min padding: a
    LOAD's pad value). ``groups`` are the logical dims, each a tuple of digits."""

    buffer: str
    offset: int
    groups: tuple[tuple[Digit, ...], ...]
    coords: tuple[tuple[int, int], ...]  # (origin, limit) per coordinate
    fill: int = 0

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(math.prod(d.size for d in g) for g in self.groups)

    def digits(self) -> tuple[Digit, ...]:
        return tuple(d for g in self.groups for d in g)


def row_major(buffer: str, dims: tuple[int, ...]) -> View:
    """The whole tensor ``buffer`` of ``dims``, row-major, as a view."""
    strides = [math.prod(dims[k + 1:]) for k in range(len(dims))]
    return View(buffer, 0, tuple((Digit(d, s, ()),) for d, s in zip(dims, strides, strict=True)),
                ())


class NotAffine(Exception):
    """The expression is not an affine view of one tensor (the lowering materialises it)."""


def view_of(term: Term, types: dict[int, object], base: Callable[[Term], View | None]) -> View:
    """The view ``term`` denotes. ``base(node)`` gives the view of a node that is no access
    operator (a tensor symbol, a kernel's result) or None; raises NotAffine otherwise."""
    chain, bottom = access_chain(term)
    view = base(bottom)
    if view is None:
        raise NotAffine(bottom.op)
    return through(chain, view, types)


def through(chain: list[Term], view: View, types: dict[int, object]) -> View:
    """``view`` seen through the access operators ``chain`` (outermost first, as
    ``access_chain`` gives them)."""
    for node in reversed(chain):
        view = _RULES[node.op](view, types[id(node)], *(_static(a, types) for a in node.args[1:]))
    return view


def access_chain(term: Term) -> tuple[list[Term], Term]:
    """The access operators from ``term`` down, outermost first, and the node beneath them
    (what ``view_of`` asks ``base`` for); a walk, no recursion."""
    chain = []
    while term.op in _RULES or term.op in ("access", "access-tensor"):
        if term.op in _RULES:
            chain.append(term)
        term = term.args[0]
    return chain, term


def _static(arg: Term, types: dict[int, object]) -> object:
    if arg.op in ("int", "pad-type"):
        return arg.value
    return types[id(arg)]


def _with_groups(v: View, groups) -> View:
    return replace(v, groups=tuple(tuple(g) for g in groups))


def _single(v: View, k: int) -> Digit:
    """The one digit of logical dim k (after merging), or NotAffine."""
    group = merge(v.groups[k])
    if not group:  # a dim of 1: index 0 only, so no stride and no coordinate terms
        return Digit(1, 0, tuple(0 for _ in v.coords))
    if len(group) != 1:
        raise NotAffine(f"dim {k} is not a single affine dim")
    return group[0]


def merge(group: tuple[Digit, ...]) -> tuple[Digit, ...]:
    """Drop digits of size 1 and merge neighbours that walk memory and coordinates as one."""
    out: list[Digit] = []
    for d in (d for d in group if d.size != 1):
        if out:
            hi = out[-1]
            if hi.stride == d.stride * d.size and all(
                    a == b * d.size for a, b in zip(hi.coefs, d.coefs, strict=True)):
                out[-1] = Digit(hi.size * d.size, d.stride, d.coefs)
                continue
        out.append(d)
    return tuple(out)


def _transpose(v: View, ty: Access, perm) -> View:
    return _with_groups(v, [v.groups[p] for p in perm.items])


def _squeeze(v: View, ty: Access, k: int) -> View:
    return _with_groups(v, v.groups[:k] + v.groups[k + 1:])


def _insert_axis(v: View, ty: Access, k: int) -> View:
    return _with_groups(v, v.groups[:k] + ((),) + v.groups[k:])


def advanced(v: View, d: Digit, steps: int) -> View:
    """``v`` with its origin moved ``steps`` indices along digit ``d``: its offset and its
    coordinates' origins (the digits themselves unchanged)."""
    return replace(v, offset=v.offset + steps * d.stride,
                   coords=tuple((o + steps * c, lim)
                                for (o, lim), c in zip(v.coords, d.coefs, strict=True)))


def _slice(v: View, ty: Access, k: int, lo: int, hi: int) -> View:
    d = _single(v, k)
    groups = list(v.groups)
    groups[k] = (Digit(hi - lo, d.stride, d.coefs),)
    return replace(advanced(v, d, lo), groups=tuple(groups))


def _pad(v: View, ty: Access, kind: str, k: int, before: int, after: int) -> View:
    fill = 0 if kind == "zero-padding" else int(np.iinfo(ty.dtype).min) \
        if np.dtype(ty.dtype).kind == "i" else None
    return _padded(v, fill, k, before, after)


def _pad_value(v: View, ty: Access, value: int, k: int, before: int, after: int) -> View:
    """``access-pad-value``: padding with an int8 value (an input's zero point, the LOAD's
    ``pad``); padding by nothing is the view itself."""
    if not before and not after:
        return v
    if ty.dtype != "int8":
        raise NotAffine("a LOAD pads with an int8 value")
    return _padded(v, value, k, before, after)


def _padded(v: View, fill: int | None, k: int, before: int, after: int) -> View:
    if fill is None or (v.coords and fill != v.fill):
        raise NotAffine("a LOAD pads with one integer value")
    d = _single(v, k)
    # A new coordinate: the index on the unpadded axis, valid in 0 … size−1.
    coords = tuple((o - before * c, lim) for (o, lim), c in zip(v.coords, d.coefs, strict=True))
    coords += ((-before, d.size),)
    groups = [tuple(Digit(x.size, x.stride, x.coefs + (0,)) for x in g) for g in v.groups]
    groups[k] = (Digit(d.size + before + after, d.stride, d.coefs + (1,)),)
    return View(v.buffer, v.offset - before * d.stride, tuple(groups), coords, fill)


def _windows(v: View, ty: Access, filters, strides) -> View:
    n = len(v.groups) - len(filters.dims)
    positions, taps = [], []
    for k, (f, s) in enumerate(zip(filters.dims, strides.dims, strict=True)):
        d = _single(v, n + k)
        # R[.., p, .., q] = T[.., p·s + q]: p walks s elements, q one (language contract).
        positions.append((Digit((d.size - f) // s + 1, d.stride * s,
                                tuple(c * s for c in d.coefs)),))
        taps.append((Digit(f, d.stride, d.coefs),))
    return _with_groups(v, list(v.groups[:n]) + positions + taps)


def _broadcast(v: View, ty: Access, target) -> View:
    groups = []
    for g, size in zip(v.groups, target.shape + target.item, strict=True):
        if math.prod(d.size for d in g) == size:
            groups.append(g)
        else:  # a dim of 1 repeated: stride 0 reads the same element
            groups.append((Digit(size, 0, tuple(0 for _ in v.coords)),))
    return _with_groups(v, groups)


def _regroup(v: View, ty: Access, *static) -> View:
    """flatten / reshape: row-major, so the digits stay in order and only regroup; a digit split
    across two target dims becomes (hi, lo) digits."""
    digits = [d for d in v.digits() if d.size != 1]
    groups = []
    for size in ty.dims:
        group, need = [], size
        while need > 1:
            if not digits:
                raise NotAffine("reshape does not regroup the digits")
            d = digits[0]
            if need % d.size == 0:
                group.append(digits.pop(0))
                need //= d.size
            elif d.size % need == 0:
                lo = d.size // need
                group.append(Digit(need, d.stride * lo, tuple(c * lo for c in d.coefs)))
                digits[0] = Digit(lo, d.stride, d.coefs)
                need = 1
            else:
                raise NotAffine("reshape splits a dim unevenly")
        groups.append(tuple(group))
    return _with_groups(v, groups)


_RULES: dict[str, Callable[..., View]] = {
    "access-transpose": _transpose,
    "access-squeeze": _squeeze,
    "access-insert-axis": _insert_axis,
    "access-slice": _slice,
    "access-pad": _pad,
    "access-pad-value": _pad_value,
    "access-windows": _windows,
    "access-broadcast": _broadcast,
    "access-flatten": _regroup,
    "access-reshape": _regroup,
}


def gather(view: View, flat: np.ndarray) -> np.ndarray:
    """The view's elements read from the tensor's flat array (numpy; the host's strided read)."""
    digits = view.digits()
    shape = tuple(d.size for d in digits)
    address = np.full(shape, view.offset, dtype=np.int64)
    valid = np.ones(shape, dtype=bool)
    coords = [np.full(shape, origin, dtype=np.int64) for origin, _ in view.coords]
    for axis, d in enumerate(digits):
        index = np.arange(d.size).reshape([-1 if a == axis else 1 for a in range(len(shape))])
        address = address + index * d.stride
        for c, coef in enumerate(d.coefs):
            coords[c] = coords[c] + index * coef
    for c, (_, limit) in enumerate(view.coords):
        valid &= (coords[c] >= 0) & (coords[c] < limit)
    values = flat[np.where(valid, address, 0)]
    values = np.where(valid, values, np.array(view.fill, flat.dtype)).astype(flat.dtype)
    return values.reshape(view.dims)
