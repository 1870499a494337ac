"""Layout exploration: move ``access-transpose`` through the access operators.

Each row moves a transpose past one operator, so a program written NCHW also has its NHWC
variants (and every layout in between) in the e-graph for the cost model to choose from
(Smith et al., MAPS 2021, §3: layout is an access pattern, not a property of the data).
Together with the pad/slice commutations of glc/rewrites/padding.py.
"""

from __future__ import annotations

from glc.egraph.rewrite import Match, Rewrite, rewrite
from glc.ir.types import ComputeKind
from glc.rewrites.build import acc, ints, num, pattern, perm

# Compute kinds that act on each element alone, keeping the access shape.
ELEMENTWISE = ("relu", "negative", "sqrt", "requantize")


def _keeps_items(p: tuple[int, ...], n: int) -> bool:
    """The permutation moves shape dims among themselves and leaves the item dims in place."""
    return all(p[j] < n for j in range(n)) and all(p[j] == j for j in range(n, len(p)))


def _through_concatenate(match: Match):
    k = num(match, "k")
    return pattern(f"(access-transpose (access-concatenate ?a ?b {perm(match, 'p')[k]}) ?p)")


def _elementwise(match: Match) -> bool:
    kind = match.types.get("c")
    return isinstance(kind, ComputeKind) and kind.name in ELEMENTWISE


def _through_dot(match: Match):
    a, p = acc(match, "a"), perm(match, "p")
    if a is None or not a.item:
        return None
    n = a.n
    # Shape dims may move among themselves; the tuple axis (the first item dim) must stay first,
    # the reduced dims may be reordered (a sum does not depend on order).
    if any(p[j] >= n for j in range(n)) or p[n] != n:
        return None
    return pattern(f"(access-transpose (compute dot-product ?a) (list {ints(p[:n])}))")


def _through_cartesian_left(match: Match):
    a, b, p = acc(match, "a"), acc(match, "b"), perm(match, "p")
    if a is None or b is None or not _keeps_items(p, a.n):
        return None
    total = a.n + b.n + 1 + len(a.item)
    order = [*p[:a.n], *range(a.n, total)]
    return pattern(f"(access-transpose (access-cartesian-product ?a ?b) (list {ints(order)}))")


def _through_cartesian_right(match: Match):
    a, b, p = acc(match, "a"), acc(match, "b"), perm(match, "p")
    if a is None or b is None or not _keeps_items(p, b.n):
        return None
    total = a.n + b.n + 1 + len(a.item)
    order = [*range(a.n), *(a.n + j for j in p[:b.n]), *range(a.n + b.n, total)]
    return pattern(f"(access-transpose (access-cartesian-product ?a ?b) (list {ints(order)}))")


def _rank4(match: Match) -> bool:
    x = acc(match, "x")
    return x is not None and x.ndim == 4


def rules(size: int) -> list[Rewrite]:
    """The layout rows (independent of the array size)."""
    return [
        # The exploratory row: a channels-first (NCHW) tensor is the channels-last (NHWC) view of
        # it transposed back; the rows below then move the outer transpose up through the
        # program, so the operators between also appear on the NHWC view.
        rewrite("view-rank4-tensor-channels-last", "(access-tensor ?x)",
                "(access-transpose (access-transpose (access-tensor ?x) (list 0 2 3 1)) "
                "(list 0 3 1 2))", condition=_rank4,
                source="glc (layout exploration, MAPS 2021 §3: layout is an access pattern)"),
        rewrite("bubble-transpose-through-access", "(access (access-transpose ?a ?p) ?k)",
                "(access-transpose (access ?a ?k) ?p)",
                source="glc (a re-split commutes with a permutation)"),
        rewrite("sink-transpose-through-access", "(access-transpose (access ?a ?k) ?p)",
                "(access (access-transpose ?a ?p) ?k)",
                source="glc (a re-split commutes with a permutation)"),
        rewrite("bubble-transpose-through-concatenate",
                "(access-concatenate (access-transpose ?a ?p) (access-transpose ?b ?p) ?k)",
                _through_concatenate, source="glc (concatenation commutes with a permutation)",
                shows="(access-transpose (access-concatenate ?a ?b p[k]) ?p)"),
        rewrite("bubble-transpose-through-elementwise", "(compute ?c (access-transpose ?a ?p))",
                "(access-transpose (compute ?c ?a) ?p)", condition=_elementwise,
                source="glc (elementwise computes keep every position)"),
        rewrite("bubble-transpose-through-dot-product",
                "(compute dot-product (access-transpose ?a ?p))", _through_dot,
                source="glc (a dot-product keeps the shape dims)",
                shows="(access-transpose (compute dot-product ?a) (list p[0] … p[n_a-1])), p "
                      "keeping the item dims"),
        rewrite("bubble-transpose-through-cartesian-product-left",
                "(access-cartesian-product (access-transpose ?a ?p) ?b)", _through_cartesian_left,
                source="glc (the product's shape dims are its operands' shape dims)",
                shows="(access-transpose (access-cartesian-product ?a ?b) "
                      "(list p[0] … p[n_a-1] n_a n_a+1 …))"),
        rewrite("bubble-transpose-through-cartesian-product-right",
                "(access-cartesian-product ?a (access-transpose ?b ?p))", _through_cartesian_right,
                source="glc (the product's shape dims are its operands' shape dims)",
                shows="(access-transpose (access-cartesian-product ?a ?b) "
                      "(list 0 … n_a-1 n_a+p[0] … n_a+p[n_b-1] n_a+n_b …))"),
    ]
