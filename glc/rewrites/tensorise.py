"""Tensorising: a matrix product written with dot-product becomes a systolic-array node.

Glenside's matmul idiom ``(compute dot-product (access-cartesian-product A B))`` with
``A = ((M),(K))`` or ``((),(K))`` and ``B = ((N),(K))`` is ``A @ B^T``. The array holds
``B^T = ((),(K,N))`` stationary and streams the rows of ``A`` (Smith et al., MAPS 2021, §4.1;
Glenside's ``systolic-array`` and ``systolic-array-with-blocking`` rewrites).
"""

from __future__ import annotations

from glc.egraph.rewrite import Match, Rewrite, rewrite
from glc.ir.types import Access
from glc.rewrites.build import acc, pattern

MATMUL = "(compute dot-product (access-cartesian-product ?a ?b))"


def _operands(match: Match) -> tuple[Access, Access] | None:
    """The streamed and the stationary operand when the product is a vector- or matrix-matrix
    product: ``?a`` is ``((M),(K))`` or ``((),(K))``, ``?b`` is ``((N),(K))``."""
    a, b = acc(match, "a"), acc(match, "b")
    if a is None or b is None:
        return None
    if len(a.shape) > 1 or len(a.item) != 1 or len(b.shape) != 1 or len(b.item) != 1:
        return None
    return a, b


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
