"""Orientation: a product equals the transpose of the product with its operands swapped.

A weight-stationary array streams its first operand past the second, held stationary, so which
side is stationary decides the array's efficiency (Smith et al., MAPS 2021, §4.2: the im2col form
streams the 8 weight rows past a stationary 27x900 matrix). Both orientations must be in the
e-graph for the cost model to choose.
"""

from __future__ import annotations

from glc.egraph.rewrite import Match, Rewrite, rewrite
from glc.rewrites.build import acc, ints, pattern


def _swap(match: Match):
    a, b = acc(match, "a"), acc(match, "b")
    if a is None or b is None:
        return None
    # dot(cp(b, a)) has dims s_b ++ s_a; this permutation brings them back to s_a ++ s_b.
    order = [*range(b.n, b.n + a.n), *range(b.n)]
    return pattern("(access-transpose (compute dot-product (access-cartesian-product ?b ?a)) "
                   f"(list {ints(order)}))")


def rules(size: int) -> list[Rewrite]:
    """The orientation row (independent of the array size)."""
    return [
        rewrite("dot-product-swap-operands",
                "(compute dot-product (access-cartesian-product ?a ?b))", _swap,
                source="MAPS 2021 §4.2 (operand orientation of the weight-stationary array)",
                shows="(access-transpose (compute dot-product (access-cartesian-product ?b ?a)) "
                      "(list n_b … n_b+n_a-1 0 … n_b-1))"),
    ]
