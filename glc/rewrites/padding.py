"""Padding and splitting for a fixed array size, and bubbling the pieces up to the products.

A dim that is not a multiple of the array size is zero-padded up to one and sliced back; a dim
larger than the array is split into array-sized slices joined by ``access-concatenate``. The
concatenates and slices then bubble up through ``access``, ``access-transpose``,
``access-cartesian-product`` and ``compute dot-product`` until each product is array-sized; a
concatenate along a reduced axis becomes a ``reduce-sum`` of partial products, and a slice of a
reduced axis is dropped where the analysis proves everything outside it zero (Glenside's
``pad_slice_accesses``, ``slice_concatenate_accesses`` and ``bubble-access-*`` rewrites; Smith et
al., MAPS 2021, §4.3).
"""

from __future__ import annotations

from glc.egraph.rewrite import Match, Rewrite, rewrite
from glc.ir.types import Access
from glc.rewrites.build import acc, inverse, is_item_axis, num, pattern, perm

# The axes of a product operand the pad and split rows act on (see _operand_axis).
ROLES = ("reduced", "shape")
# Each role's axis as the rules' descriptions name it (``_operand_axis``).
AXIS = {"reduced": "n_a", "shape": "0"}


def _operand_axis(match: Match, role: str) -> tuple[Access, int] | None:
    """A product operand (a vector ``((),(K))`` or matrix ``((N),(K))`` access, what an array
    streams or holds) and the axis of the given role: ``reduced`` (K, the item axis) or ``shape``
    (N). Restricting the exploratory pad and split rows to operands keeps them from padding every
    class of the e-graph, as the reference applies them to chosen axes only."""
    a = acc(match, "a")
    if a is None or a.n > 1 or len(a.item) != 1:
        return None
    if role == "reduced":
        return a, a.n
    return (a, 0) if a.n == 1 else None


def _pad_slice(role: str, size: int):
    def rhs(match: Match):
        found = _operand_axis(match, role)
        if found is None or found[0].dims[found[1]] % size == 0:
            return None
        a, axis = found
        dim = a.dims[axis]
        return pattern(f"(access-slice (access-pad ?a zero-padding {axis} 0 {-dim % size}) "
                       f"{axis} 0 {dim})")

    return rhs


def _split(role: str, size: int):
    def rhs(match: Match):
        found = _operand_axis(match, role)
        if found is None:
            return None
        a, axis = found
        dim = a.dims[axis]
        if dim <= size or dim % size:
            return None
        return pattern(f"(access-concatenate (access-slice ?a {axis} 0 {size}) "
                       f"(access-slice ?a {axis} {size} {dim}) {axis})")

    return rhs


def _below(var: str, axis_var: str):
    """The axis is a shape axis of ``?var``."""
    def condition(match: Match) -> bool:
        a = acc(match, var)
        return a is not None and num(match, axis_var) < a.n
    return condition


def _cart_right(node: str):
    """Move a concatenate or slice on a shape axis of the right operand past the product."""
    def rhs(match: Match):
        a, b = acc(match, "a"), acc(match, "b1")
        if a is None or b is None or num(match, "k") >= b.n:
            return None
        k = a.n + num(match, "k")
        if node == "concatenate":
            return pattern("(access-concatenate (access-cartesian-product ?a ?b1) "
                           f"(access-cartesian-product ?a ?b2) {k})")
        return pattern(f"(access-slice (access-cartesian-product ?a ?b1) {k} ?lo ?hi)")
    return rhs


def _same_item_axis(a: Access | None, ka: int, b: Access | None, kb: int) -> int | None:
    """The product's axis for item axis ``ka`` of ``a`` and ``kb`` of ``b``, if they are the same
    item axis of equal length (so the inner product type-checks); else None."""
    if a is None or b is None or not (is_item_axis(a, ka) and is_item_axis(b, kb)):
        return None
    if ka - a.n != kb - b.n or a.dims[ka] != b.dims[kb]:
        return None
    return a.n + b.n + 1 + (ka - a.n)


def _concat_cart_items(match: Match):
    k = _same_item_axis(acc(match, "a1"), num(match, "ka"), acc(match, "b1"), num(match, "kb"))
    if k is None:
        return None
    return pattern("(access-concatenate (access-cartesian-product ?a1 ?b1) "
                   f"(access-cartesian-product ?a2 ?b2) {k})")


def _slice_cart_items(match: Match):
    k = _same_item_axis(acc(match, "a"), num(match, "ka"), acc(match, "b"), num(match, "kb"))
    if k is None:
        return None
    return pattern(f"(access-slice (access-cartesian-product ?a ?b) {k} ?lo ?hi)")


def _reduced_axis(match: Match) -> bool:
    # An item axis past the tuple axis (the first item dim): the dot-product sums over it.
    a = acc(match, "a")
    return a is not None and a.n < num(match, "k") < a.ndim


def _zero_outside_slice(match: Match) -> bool:
    """Everything the slice leaves out is proven zero in some member of each item's tuple, so it
    adds nothing to the dot-product's sums."""
    if not _reduced_axis(match):
        return False
    a, k, lo, hi = acc(match, "a"), num(match, "k"), num(match, "lo"), num(match, "hi")
    boxes = match.zeros.get("a", ())
    # A box proves a part zero when it spans every dim but the tuple axis (any member will do)
    # and, along k, the part itself.
    spanning = [box[k] for box in boxes
                if all(box[j] == (0, d) for j, d in enumerate(a.dims) if j not in (a.n, k))]
    return all(any(zl <= plo and phi <= zh for zl, zh in spanning)
               for plo, phi in ((0, lo), (hi, a.dims[k])) if plo < phi)


def _out_of_transpose(operator: str, rest: str):
    """``(access-transpose (operator ?a ?k ...) ?p)`` => ``(operator (access-transpose ?a ?p)
    k' ...)``: the operator's axis, seen through the transpose, is ``inverse(p)[k]``."""
    def rhs(match: Match):
        k = inverse(perm(match, "p"))[num(match, "k")]
        return pattern(f"({operator} (access-transpose ?a ?p) {rest.format(k=k)})")
    return rhs


def _into_transpose(operator: str, rest: str):
    """``(operator (access-transpose ?a ?p) ?k ...)`` => ``(access-transpose (operator ?a k' ...)
    ?p)``: axis k of the transpose is axis ``p[k]`` of ``?a``."""
    def rhs(match: Match):
        k = perm(match, "p")[num(match, "k")]
        return pattern(f"(access-transpose ({operator} ?a {rest.format(k=k)}) ?p)")
    return rhs


def commutations() -> list[Rewrite]:
    """Pad, slice and concatenate moved across transposes and each other (shared with the
    layout set)."""
    return [
        rewrite("bubble-slice-through-transpose",
                "(access-transpose (access-slice ?a ?k ?lo ?hi) ?p)",
                _out_of_transpose("access-slice", "{k} ?lo ?hi"),
                source="Glenside access-slice-access-transpose-composition-commutative",
                shows="(access-slice (access-transpose ?a ?p) p⁻¹[k] ?lo ?hi)"),
        rewrite("sink-slice-through-transpose",
                "(access-slice (access-transpose ?a ?p) ?k ?lo ?hi)",
                _into_transpose("access-slice", "{k} ?lo ?hi"),
                source="Glenside access-slice-access-transpose-composition-commutative",
                shows="(access-transpose (access-slice ?a p[k] ?lo ?hi) ?p)"),
        rewrite("bubble-pad-through-transpose",
                "(access-transpose (access-pad ?a ?t ?k ?lo ?hi) ?p)",
                _out_of_transpose("access-pad", "?t {k} ?lo ?hi"),
                source="Glenside bubble-access-transpose-through-access-pad (reversed)",
                shows="(access-pad (access-transpose ?a ?p) ?t p⁻¹[k] ?lo ?hi)"),
        rewrite("sink-pad-through-transpose",
                "(access-pad (access-transpose ?a ?p) ?t ?k ?lo ?hi)",
                _into_transpose("access-pad", "?t {k} ?lo ?hi"),
                source="Glenside bubble-access-transpose-through-access-pad",
                shows="(access-transpose (access-pad ?a ?t p[k] ?lo ?hi) ?p)"),
        rewrite("bubble-slice-through-pad-other-axis",
                "(access-pad (access-slice ?a ?k ?lo ?hi) ?t ?j ?b ?e)",
                "(access-slice (access-pad ?a ?t ?j ?b ?e) ?k ?lo ?hi)",
                condition=lambda m: num(m, "j") != num(m, "k"),
                source="Glenside bubble-access-slice-through-access-pad-inequal-axes"),
    ]


def _bubble_concatenate_through_transpose(match: Match):
    k = inverse(perm(match, "p"))[num(match, "k")]
    return pattern("(access-concatenate (access-transpose ?a ?p) (access-transpose ?b ?p) "
                   f"{k})")


def bubbles() -> list[Rewrite]:
    """Concatenates and slices moved up through the operators between them and the products."""
    return [
        rewrite("bubble-concatenate-through-access",
                "(access (access-concatenate ?a ?b ?k) ?n)",
                "(access-concatenate (access ?a ?n) (access ?b ?n) ?k)",
                source="Glenside bubble-access-concatenate-through-access"),
        rewrite("bubble-concatenate-through-transpose",
                "(access-transpose (access-concatenate ?a ?b ?k) ?p)",
                _bubble_concatenate_through_transpose,
                source="Glenside bubble-access-concatenate-through-access-transpose",
                shows="(access-concatenate (access-transpose ?a ?p) (access-transpose ?b ?p) "
                      "p⁻¹[k])"),
        rewrite("bubble-concatenate-through-cartesian-product-left",
                "(access-cartesian-product (access-concatenate ?a1 ?a2 ?k) ?b)",
                "(access-concatenate (access-cartesian-product ?a1 ?b) "
                "(access-cartesian-product ?a2 ?b) ?k)",
                condition=_below("a1", "k"),
                source="Glenside bubble-access-concatenate-through-access-cartesian-product-"
                       "not-item-axis-left"),
        rewrite("bubble-concatenate-through-cartesian-product-right",
                "(access-cartesian-product ?a (access-concatenate ?b1 ?b2 ?k))",
                _cart_right("concatenate"),
                source="Glenside bubble-access-concatenate-through-access-cartesian-product-"
                       "not-item-axis-right",
                shows="(access-concatenate (access-cartesian-product ?a ?b1) "
                      "(access-cartesian-product ?a ?b2) n_a+k), k < n_b1"),
        rewrite("bubble-concatenate-through-cartesian-product-item-axis",
                "(access-cartesian-product (access-concatenate ?a1 ?a2 ?ka) "
                "(access-concatenate ?b1 ?b2 ?kb))", _concat_cart_items,
                source="Glenside bubble-access-concatenate-through-access-cartesian-product-"
                       "same-item-axis",
                shows="(access-concatenate (access-cartesian-product ?a1 ?b1) "
                      "(access-cartesian-product ?a2 ?b2) n_a1+n_b1+1+ka-n_a1), the same item "
                      "axis of equal length"),
        rewrite("bubble-concatenate-through-dot-product-shape-axis",
                "(compute dot-product (access-concatenate ?a ?b ?k))",
                "(access-concatenate (compute dot-product ?a) (compute dot-product ?b) ?k)",
                condition=_below("a", "k"),
                source="Glenside bubble-access-concatenate-through-compute-dot-product-"
                       "not-item-axis"),
        rewrite("bubble-concatenate-through-dot-product-reduced-axis",
                "(compute dot-product (access-concatenate ?a ?b ?k))",
                "(compute reduce-sum (access-pair (compute dot-product ?a) "
                "(compute dot-product ?b)))",
                condition=_reduced_axis,
                source="Glenside bubble-access-concatenate-through-compute-dot-product-item-axis"),
        rewrite("bubble-slice-through-access", "(access (access-slice ?a ?k ?lo ?hi) ?n)",
                "(access-slice (access ?a ?n) ?k ?lo ?hi)",
                source="Glenside bubble-access-slice-through-access"),
        rewrite("bubble-slice-through-cartesian-product-left",
                "(access-cartesian-product (access-slice ?a ?k ?lo ?hi) ?b)",
                "(access-slice (access-cartesian-product ?a ?b) ?k ?lo ?hi)",
                condition=_below("a", "k"),
                source="Glenside bubble-access-slice-through-access-cartesian-product-"
                       "not-item-axis-left"),
        rewrite("bubble-slice-through-cartesian-product-right",
                "(access-cartesian-product ?a (access-slice ?b1 ?k ?lo ?hi))",
                _cart_right("slice"),
                source="Glenside bubble-access-slice-through-access-cartesian-product-"
                       "not-item-axis-right",
                shows="(access-slice (access-cartesian-product ?a ?b1) n_a+k ?lo ?hi), k < "
                      "n_b1"),
        rewrite("bubble-slice-through-cartesian-product-item-axis",
                "(access-cartesian-product (access-slice ?a ?ka ?lo ?hi) "
                "(access-slice ?b ?kb ?lo ?hi))", _slice_cart_items,
                source="Glenside bubble-access-slice-through-access-cartesian-product-"
                       "same-item-axis",
                shows="(access-slice (access-cartesian-product ?a ?b) n_a+n_b+1+ka-n_a ?lo ?hi), "
                      "the same item axis of equal length"),
        rewrite("bubble-slice-through-dot-product-shape-axis",
                "(compute dot-product (access-slice ?a ?k ?lo ?hi))",
                "(access-slice (compute dot-product ?a) ?k ?lo ?hi)",
                condition=_below("a", "k"),
                source="Glenside bubble-access-slice-through-compute-dot-product-not-item-axis"),
        rewrite("drop-zero-slice-under-dot-product",
                "(compute dot-product (access-slice ?a ?k ?lo ?hi))", "(compute dot-product ?a)",
                condition=_zero_outside_slice,
                source="Glenside bubble-access-slice-through-compute-dot-product-item-axis-"
                       "not-tuple-axis"),
    ]


def pad_rules(size: int, roles=ROLES) -> list[Rewrite]:
    """Pad an operand's reduced or shape axis up to a multiple of ``size`` and slice back."""
    return [rewrite(f"pad-operand-{role}-axis-to-{size}", "?a", _pad_slice(role, size),
                    source="Glenside pad_slice_accesses (PadToClosestMultipleOf)",
                    shows=f"(access-slice (access-pad ?a zero-padding {AXIS[role]} 0 -d mod "
                          f"{size}) {AXIS[role]} 0 d), ?a an operand, d its {role} axis's "
                          f"length")
            for role in roles]


def split_rules(size: int, roles=ROLES) -> list[Rewrite]:
    """Split an operand's reduced or shape axis longer than ``size`` (a multiple of it) into a
    ``size`` slice and the rest, joined by ``access-concatenate``."""
    return [rewrite(f"split-operand-{role}-axis-by-{size}", "?a", _split(role, size),
                    source="Glenside slice_concatenate_accesses (DivideInto)",
                    shows=f"(access-concatenate (access-slice ?a {AXIS[role]} 0 {size}) "
                          f"(access-slice ?a {AXIS[role]} {size} d) {AXIS[role]}), ?a an "
                          f"operand, d its {role} axis's length, a multiple of {size} above it")
            for role in roles]
