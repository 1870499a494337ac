"""Tensorising: a matrix product written with dot-product becomes a systolic-array node.

Glenside's matmul idiom ``(compute dot-product (access-cartesian-product A B))`` with
``A = ((M),(K))`` or ``((),(K))`` and ``B = ((N),(K))`` is ``A @ B^T``. The array holds
``B^T = ((),(K,N))`` stationary and streams the rows of ``A`` (Smith et al., MAPS 2021, §4.1;
Glenside's ``systolic-array`` and ``systolic-array-with-blocking`` rewrites).

A matrix·vector product written with the vector second, ``A = ((M),(K))`` by ``v = ((),(K))``,
is the same product with the vector first: a cartesian product's shape is its operands' shapes
in order, and a vector has none, so swapping the operands changes neither the result's shape nor
any pair's product (multiplication commutes, exactly, for floats too). The row that swaps them
lets the array take it (issue 41: a 256×256 by 256 product was a numpy host step).

``refusal`` says why a product is no array product; the lowering prints it beside a product it
leaves to the host.
"""

from __future__ import annotations

from glc.egraph.rewrite import Match, Rewrite, rewrite
from glc.ir.types import Access
from glc.rewrites.build import acc, pattern

MATMUL = "(compute dot-product (access-cartesian-product ?a ?b))"


def refusal(a: Access, b: Access) -> str | None:
    """Why ``(compute dot-product (access-cartesian-product a b))`` is no product the array
    takes as written; None when it is one (``?a`` ``((M),(K))`` or ``((),(K))``, ``?b``
    ``((N),(K))``)."""
    if len(a.item) != 1 or len(b.item) != 1:
        return f"its items are {a.item} and {b.item}, not vectors"
    if not a.shape and not b.shape:
        return "a vector by a vector: the array needs a matrix operand"
    if not b.shape:
        return "the vector is second (the rule 'vector-operand-first' puts it first)"
    if len(b.shape) != 1:
        return f"the second operand has {len(b.shape)} shape dims, not 1"
    if len(a.shape) > 1:
        return f"the first operand has {len(a.shape)} shape dims, not 0 or 1"
    return None


def _operands(match: Match) -> tuple[Access, Access] | None:
    """The streamed and the stationary operand when the product is a vector- or matrix-matrix
    product: ``?a`` is ``((M),(K))`` or ``((),(K))``, ``?b`` is ``((N),(K))``."""
    a, b = acc(match, "a"), acc(match, "b")
    if a is None or b is None or refusal(a, b) is not None:
        return None
    return a, b


def _vector_second(match: Match) -> bool:
    """``?a`` is ``((M),(K))``, ``?b`` the vector ``((),(K))``."""
    a, b = acc(match, "a"), acc(match, "b")
    return a is not None and b is not None and len(a.shape) == 1 and not b.shape and \
        len(a.item) == 1 and a.item == b.item


def _array(node: str, rows: int | None = None, cols: int | None = None):
    def rhs(match: Match):
        found = _operands(match)
        if found is None:
            return None
        _, b = found
        k, n = b.item[0], b.shape[0]
        r, c = (k, n) if rows is None else (rows, cols)
        if k % r or n % c:
            return None
        return pattern(f"({node} {r} {c} ?a (access (access-transpose ?b (list 1 0)) 0))")

    return rhs


def rules(size: int) -> list[Rewrite]:
    """Tensorising rows for an array of ``size`` x ``size`` processing elements."""
    return [
        rewrite("vector-operand-first", MATMUL,
                "(compute dot-product (access-cartesian-product ?b ?a))",
                condition=_vector_second,
                source="MAPS 2021 §4.2 (operand orientation), without the transpose a vector's "
                       "empty shape makes the identity"),
        rewrite("systolic-array", MATMUL, _array("systolic-array"),
                source="Glenside systolic-array; MAPS 2021 §4.1",
                shows="(systolic-array K N ?a (access (access-transpose ?b (list 1 0)) 0)), "
                      "?b = ((N),(K))"),
        rewrite(f"systolic-array-with-blocking-{size}-{size}", MATMUL,
                _array("systolic-array-with-blocking", size, size),
                source="Glenside systolic-array-with-blocking; MAPS 2021 §4.1",
                shows=f"(systolic-array-with-blocking {size} {size} ?a (access (access-transpose "
                      f"?b (list 1 0)) 0)), ?b = ((N),(K)), {size} dividing K and N"),
    ]
