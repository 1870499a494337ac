"""Extraction costs until the lowering predicts cycles: tensorised forms win.

An e-node's own cost, ``cost(egraph, class_id, node)`` (glc/egraph/extract.py). An un-tensorised
``compute dot-product`` is prohibitively expensive — finite, so a program with no tensorised form
still extracts — and every other node costs 1, so among tensorised forms the smallest wins.
``fits`` also makes every array node that is not the hardware's size prohibitive, for showing that
a program can run on ``size`` x ``size`` arrays alone.
"""

from __future__ import annotations

from glc.egraph.egraph import EGraph, ENode
from glc.ir.types import ComputeKind

# More than any program's node count: one un-tensorised product outweighs every other choice.
PROHIBITIVE = 1e9

ARRAYS = ("systolic-array", "systolic-array-with-blocking")


def is_dot_product(eg: EGraph, node: ENode) -> bool:
    """Whether the e-node is ``(compute dot-product ...)``."""
    op, _, kids = node
    return op == "compute" and eg.type_of(kids[0]) == ComputeKind("dot-product")


def tensorised(eg: EGraph, cid: int, node: ENode) -> float:
    """1 per node, prohibitive for an un-tensorised dot-product."""
    return PROHIBITIVE if is_dot_product(eg, node) else 1.0


def fits(size: int, blocking: bool = True):
    """``tensorised``, and prohibitive for an array node other than ``size`` x ``size`` (and for
    every ``systolic-array-with-blocking`` unless ``blocking``)."""
    allowed = ARRAYS if blocking else ARRAYS[:1]

    def cost(eg: EGraph, cid: int, node: ENode) -> float:
        if node[0] in ARRAYS and node[0] not in allowed:
            return PROHIBITIVE
        if node[0] in ARRAYS:
            rows, cols = (eg.type_of(k) for k in node[2][:2])
            if (rows, cols) != (size, size):
                return PROHIBITIVE
        return tensorised(eg, cid, node)

    return cost
