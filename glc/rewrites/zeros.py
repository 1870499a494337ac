"""Zero regions: which slabs of an access pattern the analysis proves are all zeros.

A fact ``axis -> ((lo, hi), ...)`` says that for every index ``j`` in ``[lo, hi)`` along ``axis``
the whole slab ``T[..., j, ...]`` is zero. Zero padding creates such facts; slices, transposes,
re-splits, concatenations and products carry them. The rule that drops a slice of a reduced axis
under ``compute dot-product`` fires only when these facts cover everything outside the slice
(Glenside's zero-region analysis, used by its
``bubble-access-slice-through-compute-dot-product-item-axis-not-tuple-axis``).

``analyse`` is a drop-in for ``glc.ir.check.infer_node`` that also computes the facts; it returns
an ``AccessZeros``, an ``Access`` whose ``zeros`` take no part in equality, so every rule that
reads shapes sees a plain access pattern.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from glc.ir.check import infer_node
from glc.ir.term import Term, walk
from glc.ir.types import Access

Intervals = tuple[tuple[int, int], ...]
Zeros = Mapping[int, Intervals]

# Compute kinds that map a zero to a zero elementwise (requantize: (0 + 2^(k-1)) >> k == 0).
ZERO_PRESERVING = ("relu", "negative", "sqrt", "requantize")


@dataclass(frozen=True, eq=False)
class AccessZeros(Access):
    """An access pattern type with its proven zero regions, equal to (and hashed as) the plain
    ``Access`` of its shape: the facts are knowledge about the value, not part of its type."""

    zeros: Zeros = field(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Access) and (self.shape, self.item, self.dtype) == (
            other.shape, other.item, other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.item, self.dtype))


def normal(intervals) -> Intervals:
    """Sorted, merged, non-empty intervals."""
    out: list[list[int]] = []
    for lo, hi in sorted(i for i in intervals if i[0] < i[1]):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def _intersect(x: Intervals, y: Intervals) -> Intervals:
    return normal((max(a, c), min(b, d)) for a, b in x for c, d in y)


def _clean(zeros: Mapping[int, object]) -> dict[int, Intervals]:
    return {k: v for k, v in ((k, normal(v)) for k, v in zeros.items()) if v}


def zeros_of(value: object) -> Zeros:
    """The zero facts of a type (none for a plain ``Access``)."""
    return value.zeros if isinstance(value, AccessZeros) else {}


def merge(a: object, b: object) -> object:
    """Join two e-nodes' data for one class: both facts hold, so their union does."""
    if not isinstance(a, AccessZeros) or not isinstance(b, AccessZeros):
        return a if isinstance(a, AccessZeros) else b
    za, zb = a.zeros, b.zeros
    joined = {k: normal(za.get(k, ()) + zb.get(k, ())) for k in set(za) | set(zb)}
    return with_zeros(a, joined)


def with_zeros(a: Access, zeros: Mapping[int, object]) -> AccessZeros:
    """``a`` carrying the given zero facts."""
    return AccessZeros(a.shape, a.item, a.dtype, _clean(zeros))


def node_zeros(op: str, out: Access, args: list) -> dict[int, Intervals]:
    """The zero facts of one node's result from its arguments' types (with their facts)."""
    z = [zeros_of(a) for a in args]
    if op == "access":
        return dict(z[0])
    if op == "access-pad":
        a, pad, k, before, after = args
        facts = {ax: (tuple((lo + before, hi + before) for lo, hi in iv) if ax == k else iv)
                 for ax, iv in z[0].items()}
        if pad == "zero-padding":
            dim = a.dims[k]
            facts[k] = facts.get(k, ()) + ((0, before), (before + dim, before + dim + after))
        return facts
    if op == "access-slice":
        _, k, lo, hi = args
        facts = dict(z[0])
        if k in facts:
            facts[k] = tuple((max(a, lo) - lo, min(b, hi) - lo) for a, b in facts[k])
        return facts
    if op == "access-transpose":
        p = args[1].items
        return {j: z[0][p[j]] for j in range(len(p)) if p[j] in z[0]}
    if op == "access-concatenate":
        a, _, k = args
        shifted = tuple((lo + a.dims[k], hi + a.dims[k]) for lo, hi in z[1].get(k, ()))
        facts = {ax: _intersect(z[0][ax], z[1][ax]) for ax in set(z[0]) & set(z[1]) if ax != k}
        facts[k] = z[0].get(k, ()) + shifted
        return facts
    if op == "access-cartesian-product":
        # Position (p, q, t, r) is A[p, r] for t = 0 and B[q, r] for t = 1: an item slab is zero
        # only where both operands are zero.
        a, b = args
        first = a.n + b.n + 1
        return {first + (ax - a.n): _intersect(iv, z[1].get(ax - a.n + b.n, ()))
                for ax, iv in z[0].items() if ax >= a.n}
    if op == "compute":
        kind = args[0]
        if kind.name == "dot-product" or kind.name in ZERO_PRESERVING:
            # A zero shape slab gives zero results; elementwise kinds keep item slabs too.
            keep = out.ndim if kind.name in ZERO_PRESERVING else out.n
            return {ax: iv for ax, iv in z[1].items() if ax < keep}
    return {}


def analyse(op: str, value: object, arg_types: list, env: Mapping[str, Access]) -> object:
    """``infer_node`` plus zero facts: the e-graph analysis data of one e-node."""
    out = infer_node(op, value, arg_types, env)
    if not isinstance(out, Access):
        return out
    return with_zeros(out, node_zeros(op, out, arg_types))


def zero_types(term: Term, env: Mapping[str, Access]) -> dict[int, object]:
    """The analysis data of every node of a term, keyed by ``id(node)`` (as ``check`` gives)."""
    types: dict[int, object] = {}
    for node in walk(term):
        types[id(node)] = analyse(node.op, node.value, [types[id(a)] for a in node.args], env)
    return types


def zero_outside(a: object, axis: int, lo: int, hi: int) -> bool:
    """Whether the facts prove ``a`` zero everywhere outside ``[lo, hi)`` along ``axis``."""
    if not isinstance(a, Access):
        return False
    covered = normal(zeros_of(a).get(axis, ()) + ((lo, hi),))
    return covered == ((0, a.dims[axis]),)
