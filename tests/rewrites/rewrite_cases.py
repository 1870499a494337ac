"""Concrete terms each rewrite row applies to (and some it must refuse), for the two-sided tests.

Every case is a program: ``(input ...)`` declarations and one expression the row's left side
matches at the root. The tests build for the ``ARRAY`` x ``ARRAY`` array size.
"""

from __future__ import annotations

ARRAY = 4

A1 = "(access (access-tensor a) 1)"
C1 = "(access (access-tensor c) 1)"


def decl(**shapes: str) -> str:
    """Input declarations: ``decl(a="2 3 int8")`` -> ``(input a (shape 2 3) int8)``."""
    lines = []
    for name, spec in shapes.items():
        *dims, dtype = spec.split()
        lines.append(f"(input {name} (shape {' '.join(dims)}) {dtype})")
    return "\n".join(lines) + "\n"


def mm(left: str, right: str) -> str:
    return f"(compute dot-product (access-cartesian-product {left} {right}))"


def cp(left: str, right: str) -> str:
    return f"(access-cartesian-product {left} {right})"


CONV_WINDOWS = "(access-windows (access (access-tensor x) 1) (shape 2 3 3) (shape 1 1 1))"
FLAT_W = "(access-flatten (access (access-tensor w) 1))"
FLAT_X = "(access-flatten (access (access-tensor x) 2))"
PADDED_PRODUCT = cp("(access-pad (access (access-tensor a) 1) zero-padding 1 0 3)",
                    "(access-pad (access (access-tensor c) 1) zero-padding 1 0 3)")

# rule name -> programs its left side matches and its right side must equal.
APPLIES: dict[str, list[str]] = {
    "systolic-array": [
        decl(a="3 5 int8", b="6 5 int8") + mm(A1, "(access (access-tensor b) 1)"),
        decl(v="5 int8", b="6 5 int8") + mm("(access (access-tensor v) 0)",
                                             "(access (access-tensor b) 1)"),
        decl(a="3 5 float64", b="6 5 float64") + mm(A1, "(access (access-tensor b) 1)"),
    ],
    "systolic-array-with-blocking-4-4": [
        decl(a="3 8 int8", b="12 8 int8") + mm(A1, "(access (access-tensor b) 1)"),
        decl(v="8 int16", b="4 8 int8") + mm("(access (access-tensor v) 0)",
                                              "(access (access-tensor b) 1)"),
    ],
    "flatten-unflatten-any-access": [
        decl(x="2 2 6 6 int8") + CONV_WINDOWS,
        decl(a="2 3 4 float64") + "(access (access-tensor a) 2)",
    ],
    "bubble-reshape-through-cartesian-product": [
        decl(w="4 2 3 int8", x="2 3 2 3 int8") + cp(
            f"(access-reshape {FLAT_W} (access-shape (shape 4) (shape 2 3)))",
            f"(access-reshape {FLAT_X} (access-shape (shape 2 3) (shape 2 3)))"),
        decl(w="4 2 3 int8", x="2 3 2 3 int8") + cp(
            f"(access-reshape {FLAT_W} (access-shape (shape 2 2) (shape 3 2)))",
            f"(access-reshape {FLAT_X} (access-shape (shape 6) (shape 3 2)))"),
    ],
    # A batched operand flattened, the other flat (issue 41, item 12).
    "bubble-reshape-through-cartesian-product-left": [
        decl(a="3 5 4 int8", c="7 4 int8") + cp(
            "(access-reshape (access-flatten (access (access-tensor a) 2)) "
            "(access-shape (shape 3 5) (shape 4)))", C1),
        decl(a="3 5 4 float64", v="4 float64") + cp(
            "(access-reshape (access-flatten (access (access-tensor a) 2)) "
            "(access-shape (shape 5 3) (shape 4)))", "(access (access-tensor v) 0)"),
    ],
    "bubble-reshape-through-cartesian-product-right": [
        decl(a="6 4 int8", c="2 3 4 int8") + cp(
            A1, "(access-reshape (access-flatten (access (access-tensor c) 2)) "
                "(access-shape (shape 2 3) (shape 4)))"),
        decl(v="4 int8", c="2 3 4 int8") + cp(
            "(access (access-tensor v) 0)",
            "(access-reshape (access-flatten (access (access-tensor c) 2)) "
            "(access-shape (shape 3 2) (shape 4)))"),
    ],
    "vector-operand-first": [
        decl(a="3 5 int8", v="5 int8") + mm(A1, "(access (access-tensor v) 0)"),
        decl(a="4 6 float64", v="6 float64") + mm(A1, "(access (access-tensor v) 0)"),
    ],
    "bubble-reshape-through-compute-dot-product": [
        decl(w="4 2 3 int8", x="2 3 2 3 int8") + "(compute dot-product (access-reshape "
        + cp(FLAT_W, FLAT_X) + " (access-shape (shape 4 2 3) (shape 2 2 3))))",
        decl(w="4 2 3 float64", x="2 3 2 3 float64") + "(compute dot-product (access-reshape "
        + cp(FLAT_W, FLAT_X) + " (access-shape (shape 24) (shape 2 3 2))))",
    ],
    "dot-product-swap-operands": [
        decl(a="3 5 int8", c="2 2 5 int8") + mm(A1, "(access (access-tensor c) 2)"),
        decl(v="5 int8", c="2 5 int8") + mm("(access (access-tensor v) 0)", C1),
    ],
    "collapse-nested-accesses": [decl(a="2 3 4 int8") + f"(access {A1} 2)"],
    "collapse-nested-transposes": [
        decl(a="2 3 4 int8") + f"(access-transpose (access-transpose {A1} (list 1 2 0)) "
        "(list 0 2 1))"],
    "remove-trivial-transpose": [decl(a="2 3 4 int8") + f"(access-transpose {A1} (list 0 1 2))"],
    "collapse-nested-access-slices": [
        decl(a="2 4 3 int8") + "(access-slice (access-slice (access-tensor a) 1 1 4) 1 1 2)"],
    "remove-whole-slice": [decl(a="2 4 3 int8") + "(access-slice (access-tensor a) 1 0 4)"],
    "remove-trivial-access": [decl(a="2 4 3 int8") + f"(access {A1} 1)"],
    "collapse-nested-reshapes": [
        decl(a="2 3 4 int8") + "(access-reshape (access-reshape (access-tensor a) "
        "(access-shape (shape 6) (shape 4))) (access-shape (shape 3) (shape 8)))"],
    "remove-trivial-reshape": [
        decl(a="2 3 4 int8") + f"(access-reshape {A1} (access-shape (shape 2) (shape 3 4)))"],
    "view-rank4-tensor-channels-last": [decl(a="1 2 3 4 int8") + "(access-tensor a)"],
    "bubble-transpose-through-access": [
        decl(a="2 3 4 int8") + "(access (access-transpose (access-tensor a) (list 2 0 1)) 1)"],
    "sink-transpose-through-access": [
        decl(a="2 3 4 int8") + f"(access-transpose {A1} (list 2 0 1))"],
    "bubble-transpose-through-concatenate": [
        decl(a="2 3 4 int8", b="2 5 4 int8") + "(access-concatenate (access-transpose "
        "(access-tensor a) (list 1 0 2)) (access-transpose (access-tensor b) (list 1 0 2)) 0)"],
    "bubble-transpose-through-elementwise": [
        decl(a="2 3 4 int8") + f"(compute relu (access-transpose {A1} (list 2 1 0)))",
        decl(a="2 3 4 int32") + f"(compute (requantize 3) (access-transpose {A1} (list 1 0 2)))",
    ],
    "bubble-transpose-through-dot-product": [
        decl(a="2 3 4 int8", c="5 3 4 int8") + "(compute dot-product (access-transpose "
        + cp(A1, C1) + " (list 1 0 2 4 3)))"],
    "bubble-transpose-through-cartesian-product-left": [
        decl(a="2 3 4 int8", b="5 4 int8") + cp(
            "(access-transpose (access (access-tensor a) 2) (list 1 0 2))",
            "(access (access-tensor b) 1)")],
    "bubble-transpose-through-cartesian-product-right": [
        decl(a="2 3 4 int8", b="5 4 int8") + cp(
            "(access (access-tensor b) 1)",
            "(access-transpose (access (access-tensor a) 2) (list 1 0 2))")],
    "bubble-slice-through-transpose": [
        decl(a="2 4 3 int8") + "(access-transpose (access-slice (access-tensor a) 1 1 3) "
        "(list 2 0 1))"],
    "sink-slice-through-transpose": [
        decl(a="2 4 3 int8") + "(access-slice (access-transpose (access-tensor a) (list 2 0 1)) "
        "1 0 1)"],
    "bubble-pad-through-transpose": [
        decl(a="2 4 3 int8") + "(access-transpose (access-pad (access-tensor a) zero-padding 2 "
        "1 2) (list 2 0 1))",
        decl(a="2 4 3 int8") + "(access-transpose (access-pad (access-tensor a) min-padding 0 "
        "0 1) (list 2 0 1))"],
    "sink-pad-through-transpose": [
        decl(a="2 4 3 float64") + "(access-pad (access-transpose (access-tensor a) (list 2 0 1)) "
        "min-padding 0 1 0)"],
    "bubble-slice-through-pad-other-axis": [
        decl(a="2 4 3 int8") + "(access-pad (access-slice (access-tensor a) 1 1 3) "
        "zero-padding 2 1 1)"],
    "bubble-concatenate-through-access": [
        decl(a="2 3 int8", b="2 4 int8") + "(access (access-concatenate (access-tensor a) "
        "(access-tensor b) 1) 1)"],
    "bubble-concatenate-through-transpose": [
        decl(a="2 3 4 int8", b="2 3 5 int8") + "(access-transpose (access-concatenate "
        f"{A1} (access (access-tensor b) 1) 2) (list 2 0 1))"],
    "bubble-concatenate-through-cartesian-product-left": [
        decl(a="2 4 int8", b="3 4 int8", c="5 4 int8") + cp(
            f"(access-concatenate {A1} (access (access-tensor b) 1) 0)", C1)],
    "bubble-concatenate-through-cartesian-product-right": [
        decl(a="2 2 4 int8", b="2 3 4 int8", c="5 4 int8") + cp(
            C1, "(access-concatenate (access (access-tensor a) 2) (access (access-tensor b) 2) "
            "1)")],
    "bubble-concatenate-through-cartesian-product-item-axis": [
        decl(a="3 4 int8", b="3 5 int8", c="2 4 int8", d="2 5 int8") + cp(
            f"(access-concatenate {A1} (access (access-tensor b) 1) 1)",
            f"(access-concatenate {C1} (access (access-tensor d) 1) 1)")],
    "bubble-concatenate-through-dot-product-shape-axis": [
        decl(a="2 4 int8", b="5 4 int8", c="3 4 int8") + "(compute dot-product "
        "(access-concatenate " + cp(A1, C1) + " " + cp("(access (access-tensor b) 1)", C1)
        + " 0))"],
    "bubble-concatenate-through-dot-product-reduced-axis": [
        decl(a="2 4 int8", b="2 5 int8", c="3 4 int8", d="3 5 int8") + "(compute dot-product "
        "(access-concatenate " + cp(A1, C1) + " "
        + cp("(access (access-tensor b) 1)", "(access (access-tensor d) 1)") + " 3))",
        decl(a="2 4 float64", b="2 5 float64", c="3 4 float64", d="3 5 float64")
        + "(compute dot-product (access-concatenate " + cp(A1, C1) + " "
        + cp("(access (access-tensor b) 1)", "(access (access-tensor d) 1)") + " 3))",
    ],
    "bubble-slice-through-access": [
        decl(a="2 4 3 int8") + "(access (access-slice (access-tensor a) 1 1 3) 1)"],
    "bubble-slice-through-cartesian-product-left": [
        decl(a="4 5 int8", c="3 5 int8") + cp(f"(access-slice {A1} 0 1 3)", C1)],
    "bubble-slice-through-cartesian-product-right": [
        decl(a="2 3 4 int8", c="5 4 int8") + cp(
            C1, "(access-slice (access (access-tensor a) 2) 1 0 2)")],
    "bubble-slice-through-cartesian-product-item-axis": [
        decl(a="2 5 int8", c="3 5 int8") + cp(f"(access-slice {A1} 1 1 4)",
                                              f"(access-slice {C1} 1 1 4)")],
    "bubble-slice-through-dot-product-shape-axis": [
        decl(a="2 5 int8", c="3 5 int8") + "(compute dot-product (access-slice "
        + cp(A1, C1) + " 1 0 2))"],
    "drop-zero-slice-under-dot-product": [
        decl(a="2 5 int8", c="3 5 int8") + "(compute dot-product (access-slice "
        + PADDED_PRODUCT + " 3 0 5))",
        decl(a="2 5 int8", c="3 5 int8") + "(compute dot-product (access-slice "
        + cp("(access-pad (access-pad (access (access-tensor a) 1) zero-padding 1 2 0) "
             "zero-padding 1 0 1)",
             "(access-transpose (access-pad (access-transpose (access (access-tensor c) 1) "
             "(list 1 0)) zero-padding 0 2 1) (list 1 0))") + " 3 2 7))",
        # One zero member is enough: its products are zero whatever the other member holds.
        decl(a="2 5 int8", c="3 8 int8") + "(compute dot-product (access-slice "
        + cp("(access-pad (access (access-tensor a) 1) zero-padding 1 0 3)", C1) + " 3 0 5))",
    ],
}

# Padding and splitting rows: matrix and vector operands.
for _role in ("reduced", "shape"):
    APPLIES[f"pad-operand-{_role}-axis-to-{ARRAY}"] = [
        decl(a="3 5 int8") + A1, decl(a="6 7 float64") + A1]
    APPLIES[f"split-operand-{_role}-axis-by-{ARRAY}"] = [
        decl(a="8 12 int8") + A1, decl(a="12 8 int16") + A1]
APPLIES[f"pad-operand-reduced-axis-to-{ARRAY}"].append(
    decl(v="5 int8") + "(access (access-tensor v) 0)")
APPLIES[f"split-operand-reduced-axis-by-{ARRAY}"].append(
    decl(v="12 int8") + "(access (access-tensor v) 0)")

# rule name -> programs its left side matches but where it must not fire (it would be wrong,
# or it would not terminate).
REFUSES: dict[str, list[str]] = {
    "systolic-array": [decl(a="2 3 5 int8", b="6 5 int8") + mm(
        "(access (access-tensor a) 2)", "(access (access-tensor b) 1)")],
    "systolic-array-with-blocking-4-4": [
        decl(a="3 6 int8", b="12 6 int8") + mm(A1, "(access (access-tensor b) 1)"),
        decl(a="3 8 int8", b="6 8 int8") + mm(A1, "(access (access-tensor b) 1)")],
    "flatten-unflatten-any-access": [decl(a="3 5 int8") + A1,
                                     decl(a="3 5 int8") + "(access-tensor a)"],
    "bubble-reshape-through-cartesian-product": [
        # Whole items are not kept: ((4),(6)) -> ((8),(3)) pairs other items.
        decl(w="4 2 3 int8", x="2 3 2 3 int8") + cp(
            f"(access-reshape {FLAT_W} (access-shape (shape 8) (shape 3)))",
            f"(access-reshape {FLAT_X} (access-shape (shape 12) (shape 3)))")],
    "bubble-reshape-through-cartesian-product-left": [
        # The reshape regroups items: ((6),(2)) -> ((3),(4)) pairs other items.
        decl(a="6 2 int8", c="5 4 int8") + cp(
            "(access-reshape (access (access-tensor a) 1) (access-shape (shape 3) (shape 4)))",
            C1)],
    "bubble-reshape-through-cartesian-product-right": [
        # The reshape regroups items: ((6),(2)) -> ((3),(4)) pairs other items.
        decl(a="5 4 int8", c="6 2 int8") + cp(
            A1, "(access-reshape (access (access-tensor c) 1) "
                "(access-shape (shape 3) (shape 4)))")],
    "vector-operand-first": [
        # Already first, or no vector at all: swapping would transpose the result.
        decl(v="5 int8", a="3 5 int8") + mm("(access (access-tensor v) 0)", A1),
        decl(a="3 5 int8", c="2 5 int8") + mm(A1, C1)],
    "bubble-reshape-through-compute-dot-product": [
        # The tuple axis moves: the items are regrouped into other products.
        decl(w="4 2 3 int8", x="2 3 2 3 int8") + "(compute dot-product (access-reshape "
        + cp(FLAT_W, FLAT_X) + " (access-shape (shape 24) (shape 6 2))))"],
    "view-rank4-tensor-channels-last": [decl(a="2 3 4 int8") + "(access-tensor a)"],
    "remove-trivial-transpose": [decl(a="2 3 int8") + "(access-transpose (access-tensor a) "
                                 "(list 1 0))"],
    "remove-whole-slice": [decl(a="2 4 int8") + "(access-slice (access-tensor a) 1 0 3)"],
    "bubble-transpose-through-elementwise": [
        decl(a="2 3 float64") + f"(compute softmax (access-transpose {A1} (list 1 0)))"],
    "bubble-transpose-through-dot-product": [
        decl(a="2 4 int8", c="3 4 int8") + "(compute dot-product (access-transpose "
        + cp(A1, C1) + " (list 0 1 3 2)))"],
    "bubble-concatenate-through-dot-product-reduced-axis": [
        # A concatenate along the tuple axis makes 4-member products, not a sum of two.
        decl(a="2 4 int8", c="3 4 int8") + "(compute dot-product (access-concatenate "
        + cp(A1, C1) + " " + cp(A1, C1) + " 2))"],
    "drop-zero-slice-under-dot-product": [
        # min-padding is not zero.
        decl(a="2 5 int8", c="3 5 int8") + "(compute dot-product (access-slice "
        + cp("(access-pad (access (access-tensor a) 1) min-padding 1 0 3)",
             "(access-pad (access (access-tensor c) 1) min-padding 1 0 3)") + " 3 0 5))",
        # The slice drops real data.
        decl(a="2 5 int8", c="3 5 int8") + "(compute dot-product (access-slice "
        + PADDED_PRODUCT + " 3 1 5))",
        # The zeros are in another row of the product's shape, not in every one.
        decl(a="2 5 int8", b="1 8 int8", c="3 8 int8") + "(compute dot-product (access-slice "
        + cp("(access-concatenate (access-pad (access (access-tensor a) 1) zero-padding 1 0 3) "
             "(access (access-tensor b) 1) 0)", C1) + " 3 0 5))"],
    f"pad-operand-reduced-axis-to-{ARRAY}": [decl(a="3 8 int8") + A1,
                                             decl(a="3 5 7 int8") + "(access (access-tensor a) 2)"],
    f"pad-operand-shape-axis-to-{ARRAY}": [decl(v="5 int8") + "(access (access-tensor v) 0)",
                                           decl(a="3 5 int8") + "(access-tensor a)"],
    f"split-operand-reduced-axis-by-{ARRAY}": [decl(a="3 6 int8") + A1,
                                               decl(a="3 4 int8") + A1],
    f"split-operand-shape-axis-by-{ARRAY}": [decl(a="6 8 int8") + A1,
                                             decl(a="8 8 8 int8") + "(access (access-tensor a) 1)"],
}
