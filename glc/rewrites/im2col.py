"""im2col discovery: flatten every access, then bubble the reshapes up past the product.

Exactly the paper's mechanism (Smith et al., MAPS 2021, §4.2): the exploratory rule rewrites an
access pattern ``?a`` into ``(access-reshape (access-flatten ?a) (get-access-shape ?a))``; the
reshapes then bubble up through ``access-cartesian-product`` and ``compute dot-product``, leaving a
dot-product of two flattened, 2-d operands that the tensorising rows map onto the array. For a
conv2d written with ``access-windows`` that is im2col, found by rewriting alone.

Only an access of two or more dims on a side is flattened (``_worth_flattening``), so a product
of a batched operand ``((B,M),(K))`` and a flat one ``((N),(K))`` has a reshape on one side only;
the one-sided bubble rows take the reshape up past the product from there (issue 41: such
products ran as numpy host steps).
"""

from __future__ import annotations

import math

from glc.egraph.rewrite import Match, Rewrite, rewrite
from glc.rewrites.build import acc, pattern, shape_text, target


def _worth_flattening(match: Match) -> bool:
    # Only where flattening changes the access (a side of 2 or more dims): flattening an already
    # flat access would add a class per iteration forever (the paper's rule needs backoff). And
    # only accesses with items, the operands of products and computes: a bare tensor's flattening
    # never reaches a product's item.
    a = acc(match, "a")
    return a is not None and bool(a.item) and (len(a.shape) > 1 or len(a.item) > 1)


def _items_kept(a, shape) -> bool:
    """A reshape maps whole items to whole items when the shape sides hold equal counts."""
    return math.prod(a.shape) == math.prod(shape.shape)


def _bubble_through_cartesian(match: Match):
    a, b = acc(match, "a"), acc(match, "b")
    sa, sb = target(match, "sa"), target(match, "sb")
    # The inner product must type-check (equal flattened items), and each reshape must move whole
    # items, or the pairs of items would change (Glenside checks only the first).
    if a is None or b is None or a.item != b.item or sa.item != sb.item:
        return None
    if not (_items_kept(a, sa) and _items_kept(b, sb)):
        return None
    outer = shape_text(sa.shape + sb.shape, (2,) + sa.item)
    return pattern(f"(access-reshape (access-cartesian-product ?a ?b) {outer})")


def _bubble(side: str):
    """``(access-cartesian-product (access-reshape ?a ?sa) ?b)`` (``side`` "a"), or its mirror
    with the reshape on ``?b`` (``side`` "b"), the other operand flat: the reshape moves whole
    items, and the other operand's items are those inside and outside it, so every pair of
    items is the same pair."""
    def apply(match: Match):
        a, b, s = acc(match, "a"), acc(match, "b"), target(match, "s" + side)
        reshaped = a if side == "a" else b
        if a is None or b is None or not (a.item == b.item == s.item) or \
                not _items_kept(reshaped, s):
            return None
        shape = s.shape + b.shape if side == "a" else a.shape + s.shape
        outer = shape_text(shape, (2,) + s.item)
        return pattern(f"(access-reshape (access-cartesian-product ?a ?b) {outer})")
    return apply


def _bubble_through_dot(match: Match):
    a, s = acc(match, "a"), target(match, "s")
    # Items keep their contents (equal counts) and their tuple axis (equal first item dim), so
    # each item's dot-product is unchanged; only the shape dims are re-split.
    if a is None or not a.item or not s.item or a.item[0] != s.item[0]:
        return None
    if math.prod(a.item) != math.prod(s.item):
        return None
    return pattern(f"(access-reshape (compute dot-product ?a) {shape_text(s.shape, ())})")


def rules(size: int) -> list[Rewrite]:
    """The im2col rows (independent of the array size)."""
    return [
        rewrite("flatten-unflatten-any-access", "?a",
                "(access-reshape (access-flatten ?a) (get-access-shape ?a))",
                condition=_worth_flattening, source="Glenside flatten-unflatten-all-accesses"),
        rewrite("bubble-reshape-through-cartesian-product",
                "(access-cartesian-product (access-reshape ?a ?sa) (access-reshape ?b ?sb))",
                _bubble_through_cartesian,
                source="Glenside bubble-reshape-through-cartesian-product",
                shows="(access-reshape (access-cartesian-product ?a ?b) "
                      "((s_sa ++ s_sb),(2 ++ i_sa)))"),
        rewrite("bubble-reshape-through-cartesian-product-left",
                "(access-cartesian-product (access-reshape ?a ?sa) ?b)", _bubble("a"),
                source="Glenside bubble-reshape-through-cartesian-product, one side reshaped",
                shows="(access-reshape (access-cartesian-product ?a ?b) "
                      "((s_sa ++ s_b),(2 ++ i_sa)))"),
        rewrite("bubble-reshape-through-cartesian-product-right",
                "(access-cartesian-product ?a (access-reshape ?b ?sb))", _bubble("b"),
                source="Glenside bubble-reshape-through-cartesian-product, one side reshaped",
                shows="(access-reshape (access-cartesian-product ?a ?b) "
                      "((s_a ++ s_sb),(2 ++ i_sb)))"),
        rewrite("bubble-reshape-through-compute-dot-product",
                "(compute dot-product (access-reshape ?a ?s))", _bubble_through_dot,
                source="Glenside bubble-reshape-through-compute",
                shows="(access-reshape (compute dot-product ?a) ((s_s),()))"),
    ]
