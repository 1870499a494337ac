"""Each operator's shape rule and value against hand-computed expectations, and its error cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from glc.errors import GlcError
from glc.interp import env_types, interpret
from glc.ir.check import type_of
from glc.ir.ops import OPS
from glc.ir.tanh import mlas_tanh
from glc.ir.types import Access
from glc.syntax.reader import parse_term

X = np.arange(24, dtype=np.int8).reshape(2, 3, 4)      # x[i,j,k] = 12i + 4j + k
M = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int8)   # 2x3
N = np.array([[7, 8], [9, -10], [11, 12]], dtype=np.int8)  # 3x2
F = np.array([[1.0, 4.0, 9.0], [16.0, 25.0, 36.0]])    # 2x3 float64
T = (127 - np.arange(256)).astype(np.int8)              # t[k] = 127 - k: the code c reads -1 - c
# Zero weights, biases and inputs of recurrent layers (1 hidden unit), a state of 1.
ZEROS = {f"z{r}x{c}": np.zeros((r, c), np.float32) for r, c in ((3, 1), (4, 1), (2, 1))}
RECURRENT = {**ZEROS, "z6": np.zeros(6, np.float32), "z8": np.zeros(8, np.float32),
             "s": np.zeros((2, 1, 1), np.float32), "one": np.ones((1, 1), np.float32)}
ENV = {"x": X, "m": M, "n": N, "f": F, "t": T, **RECURRENT}
# x's 2x2 windows at stride 2 over its last two dims, as float32
POOLED = ("(access-windows (access (dequantize-linear (access-tensor x) 1.0 0) 1) (shape 2 2) "
          "(shape 2 2))")


def _layer_norm_row(xs, scale, bias):
    """LayerNormalization of a row shorter than 8 as onnxruntime's scalar loop computes it:
    Welford's running mean and sum of squared deviations, each float32 operation rounded in
    turn (eps 0)."""
    f = np.float32
    mean = m2 = f(0)
    for k, x in enumerate(xs):
        delta = f(f(x) - mean)
        mean = f(mean + f(delta / f(k + 1)))
        m2 = f(m2 + f(delta * f(f(x) - mean)))
    d = f(np.sqrt(f(m2 / f(len(xs)))))
    return [f(f(f(f(x) - mean) / d) * f(s)) + f(b) for x, s, b in zip(xs, scale, bias,
                                                                          strict=True)]


def _softmax_row(xs, sx, inv_sy, zy):
    """QLinearSoftmax of one int8 row: exp of each distance below the maximum, from the table
    onnxruntime builds (its shift cancels in the quotient but sets the table's rounding)."""
    shift = max(0.0, math.log(float(np.float32(np.finfo(np.float32).max) / np.float32(len(xs))))
                - 5.0) / sx
    e = [np.float32(math.exp((x - max(xs) + shift) * sx)) for x in xs]
    total = np.float32(0)
    for v in e:
        total = np.float32(total + v)
    return [int(np.rint(np.float32(v * np.float32(inv_sy)) / total)) + zy for v in e]


def run(source: str):
    term = parse_term(source, "case.gls")
    return interpret(term, ENV)


# (source, expected shape, expected item, expected dtype, expected value computed by hand)
CASES = [
    ("(access-tensor x)", (2, 3, 4), (), "int8", X),
    ("(access x 1)", (2,), (3, 4), "int8", X),
    ("(access x 3)", (2, 3, 4), (), "int8", X),
    ("(access-windows (access m 1) (shape 2) (shape 1))", (2, 2), (2,), "int8",
     np.array([[[1, -2], [-2, 3]], [[4, 5], [5, -6]]], dtype=np.int8)),
    ("(access-windows (access x 1) (shape 2 3) (shape 1 2))", (2, 2, 1), (2, 3), "int8",
     np.stack([np.stack([X[i, p:p + 2, 0:3] for p in range(2)])[:, None] for i in range(2)])),
    ("(access-cartesian-product (access m 1) (access (access-transpose n (list 1 0)) 1))",
     (2, 2), (2, 3), "int8",
     np.array([[[M[i], N[:, j]] for j in range(2)] for i in range(2)], dtype=np.int8)),
    ("(access-pair (access m 1) (access m 1))", (2,), (2, 3), "int8", np.stack([M, M], axis=1)),
    ("(access-pad (access m 1) zero-padding 1 1 2)", (2,), (6,), "int8",
     np.array([[0, 1, -2, 3, 0, 0], [0, 4, 5, -6, 0, 0]], dtype=np.int8)),
    ("(access-pad-value (access m 1) -5 1 1 0)", (2,), (4,), "int8",
     np.array([[-5, 1, -2, 3], [-5, 4, 5, -6]], dtype=np.int8)),
    ("(dequantize-linear (access-tensor m) 0.5 1)", (2, 3), (), "float32",
     np.array([[0, -1.5, 1], [1.5, 2, -3.5]], dtype=np.float32)),
    ("(quantize-linear (dequantize-linear (access-tensor m) 0.5 1) 0.0625 100)", (2, 3), (),
     "int8", np.array([[100, 76, 116], [124, 127, 44]], dtype=np.int8)),
    # acc = 2m, M = (m + 8) / 4 (positive, as requantize-linear's multipliers must be):
    # 2m(m+8)/4 = 0.5·(1·9, -2·6, 3·11, 4·12, 5·13, -6·2) -> 4.5, 16.5 and 32.5 round half to even
    ("(requantize-linear (compute elementwise-add (access-pair (access-tensor m) "
     "(access-tensor m))) (dequantize-linear (access-tensor m) 0.25 -8) 0)", (2, 3), (), "int8",
     np.array([[4, -6, 16], [24, 32, -6]], dtype=np.int8)),
    # each row of m normalised, scaled by the column maxima, shifted by half of them
    ("(layer-norm (dequantize-linear (access-tensor m) 1.0 0) (dequantize-linear (compute "
     "reduce-max (access (access-transpose (access-tensor m) (list 1 0)) 1)) 1.0 0) "
     "(dequantize-linear (compute reduce-max (access (access-transpose (access-tensor m) "
     "(list 1 0)) 1)) 0.5 0) 0.0)", (2, 3), (), "float32",
     np.array([_layer_norm_row(r, [4, 5, 3], [2, 2.5, 1.5]) for r in M.tolist()],
              dtype=np.float32)),
    # SkipLayerNormalization's kernel, Welford's at every length (rows of 3 here: the same)
    ("(layer-norm-welford (dequantize-linear (access-tensor m) 1.0 0) (dequantize-linear "
     "(compute reduce-max (access (access-transpose (access-tensor m) (list 1 0)) 1)) 1.0 0) "
     "(dequantize-linear (compute reduce-max (access (access-transpose (access-tensor m) "
     "(list 1 0)) 1)) 0.5 0) 0.0)", (2, 3), (), "float32",
     np.array([_layer_norm_row(r, [4, 5, 3], [2, 2.5, 1.5]) for r in M.tolist()],
              dtype=np.float32)),
    # GELU of m/8, where onnxruntime's kernel rounds as the exact GELU does (its own bits
    # elsewhere differ by an ulp or so: tests/ir/test_gelu.py holds them to onnxruntime)
    ("(gelu (dequantize-linear (access-tensor m) 0.125 0))", (2, 3), (), "float32",
     np.array([[v / 2 * (1 + math.erf(v / math.sqrt(2))) for v in row] for row in M / 8],
              dtype=np.float32)),
    ("(softmax-linear (access-tensor m) 0.5 0.00390625 -128 0)", (2, 3), (), "int8",
     np.array([_softmax_row(r, 0.5, 256, -128) for r in M.tolist()], dtype=np.int8)),
    # 0.5·(m - 1) + 0.25·m = 0.75·m - 0.5, exact in float32: 0.25, -2, 1.75, 2.5 (half to
    # even: 2), 3.25, -5
    ("(add-linear (access-tensor m) (access-tensor m) 0.5 1 0.25 0 1.0 0 0)", (2, 3), (),
     "int8", np.array([[0, -2, 2], [2, 3, -5]], dtype=np.int8)),
    # entry c + 128 of t = 127 - (c + 128) = -1 - c
    ("(table-lookup (access m 1) (access-tensor t))", (2,), (3,), "int8",
     np.array([[-2, 1, -4], [-5, -6, 5]], dtype=np.int8)),
    # rows of m less 1, times 0.5: sums -0.5 and 0.0, divided by each row's max (3, 5), by 0.25,
    # plus -3: -3.67 and -3
    ("(average-pool-linear (access m 1) (dequantize-linear (compute reduce-max (access m 1)) "
     "1.0 0) 0.5 1 0.25 -3 0)", (2,), (), "int8", np.array([-4, -3], dtype=np.int8)),
    # size 1, alpha 1, beta 1, bias 1: x · (1 + x²)^-1, rounded twice in float32
    ("(lrn (dequantize-linear (access-reshape (access-tensor x) (access-shape (shape 1 2 3 4) "
     "(shape))) 0.5 0) 1 1.0 1.0 1.0)", (1, 2, 3, 4), (), "float32",
     (X / 2).astype(np.float32) * (1 / (1 + (X / 2).astype(np.float32) ** 2))),
    # m/2 spans [-3, 2.5]: scale 5.5/255, zero point rint(3/scale) = 139, codes carried - 128
    ("(dynamic-quantize (dequantize-linear (access-tensor m) 0.5 0))", (2, 3), (), "int8",
     np.array([[34, -35, 81], [104, 127, -128]], dtype=np.int8)),
    ("(dynamic-scale (dequantize-linear (access-tensor m) 0.5 0))", (), (), "float32",
     np.array(np.float32(5.5) / np.float32(255), np.float32)),
    ("(dynamic-zero-point (dequantize-linear (access-tensor m) 0.5 0))", (), (), "int32",
     np.array(139, np.int32)),
    ("(cast-float (access-tensor m))", (2, 3), (), "float32", M.astype(np.float32)),
    ("(matmul-float (cast-float (access-tensor m)) (cast-float (access-tensor n)))", (2, 2), (),
     "float32", M.astype(np.float32) @ N.astype(np.float32)),
    # zero weights: every gate σ(0) = 0.5 and tanh(0) = 0, so the state halves each step
    ("(gru (access-tensor s) (access-tensor z3x1) (access-tensor z3x1) (access-tensor z6) "
     "(access-tensor one) 0)", (2, 1, 1), (), "float32",
     np.array([0.5, 0.25], np.float32).reshape(2, 1, 1)),
    # the cell halves (1 → 0.5 → 0.25) and h = 0.5 · tanh(cell), tanh onnxruntime's (MLAS's
    # kernel, an ulp from numpy's at 0.5; tests/ir/test_tanh.py holds it to onnxruntime's)
    ("(lstm (access-tensor s) (access-tensor z4x1) (access-tensor z4x1) (access-tensor z8) "
     "(access-tensor one) (access-tensor one))", (2, 1, 1), (), "float32",
     (np.float32(0.5) * mlas_tanh(np.array([0.5, 0.25], np.float32))).reshape(2, 1, 1)),
    # rows of t (t[k] = 127 - k) at m's codes, a negative one from the end (t[256 - 2] = -127)
    ("(gather (access-tensor t) (access-tensor m))", (2, 3), (), "int8",
     np.array([[126, -127, 124], [123, 122, -123]], dtype=np.int8)),
    # x/2 over each row of 4: (48i + 16j + 6) / 8, exact in either summation order
    ("(global-average-pool (dequantize-linear (access-tensor x) 0.5 0) 4)", (2, 3, 1), (),
     "float32", ((48 * np.arange(2)[:, None] + 16 * np.arange(3) + 6) / 8).reshape(2, 3, 1)),
    # |m|/2 and -|m|/2: the larger and the smaller of m/2 and -m/2
    ("(compute elementwise-max (access-pair (dequantize-linear (access-tensor m) 0.5 0) "
     "(compute negative (dequantize-linear (access-tensor m) 0.5 0))))", (2, 3), (), "float32",
     np.abs(M).astype(np.float32) / 2),
    ("(compute elementwise-min (access-pair (dequantize-linear (access-tensor m) 0.5 0) "
     "(compute negative (dequantize-linear (access-tensor m) 0.5 0))))", (2, 3), (), "float32",
     -np.abs(M).astype(np.float32) / 2),
    # 2x2 windows of x: sums 48i + 10 and 48i + 18 over their maxima 12i + 5 and 12i + 7,
    # integers exact in either order (row by row, 0; columns first, 1)
    *[(f"(average-pool {POOLED} (compute reduce-max {POOLED}) "
       f"{order})", (2, 1, 2), (), "float32",
       np.array([[[10 / 5, 18 / 7]], [[58 / 17, 66 / 19]]], np.float32)) for order in (0, 1)],
    ("(access-pad (access m 1) min-padding 0 1 0)", (3,), (3,), "int8",
     np.array([[-128] * 3, [1, -2, 3], [4, 5, -6]], dtype=np.int8)),
    ("(access-pad (access f 0) min-padding 1 0 1)", (), (2, 4), "float64",
     np.array([[1.0, 4.0, 9.0, np.finfo(np.float64).min], [16.0, 25.0, 36.0,
                                                          np.finfo(np.float64).min]])),
    ("(access-slice (access x 2) 2 1 3)", (2, 3), (2,), "int8", X[:, :, 1:3]),
    ("(access-concatenate (access m 1) (access m 1) 0)", (4,), (3,), "int8",
     np.concatenate([M, M])),
    ("(access-transpose (access x 1) (list 2 0 1))", (4,), (2, 3), "int8", X.transpose(2, 0, 1)),
    ("(access-squeeze (access (access-insert-axis (access m 1) 1) 1) 1)", (2,), (3,), "int8", M),
    ("(access-insert-axis (access m 1) 2)", (2,), (3, 1), "int8", M[:, :, None]),
    ("(access-insert-axis (access m 1) 1)", (2, 1), (3,), "int8", M[:, None, :]),
    ("(access-broadcast (access (access-insert-axis (access m 1) 1) 1) "
     "(access-shape (shape 2) (shape 4 3)))", (2,), (4, 3), "int8",
     np.broadcast_to(M[:, None, :], (2, 4, 3))),
    ("(access-flatten (access x 1))", (2,), (12,), "int8", X.reshape(2, 12)),
    ("(access-flatten (access x 0))", (), (24,), "int8", X.reshape(24)),
    ("(access-reshape (access x 1) (access-shape (shape 4 3) (shape 2)))", (4, 3), (2,), "int8",
     X.reshape(4, 3, 2)),
    ("(access-literal (literal 2.5))", (), (), "float64", np.array(2.5)),
    ("(compute dot-product (access-cartesian-product (access m 1) "
     "(access (access-transpose n (list 1 0)) 1)))", (2, 2), (), "int32",
     np.array([[1 * 7 - 2 * 9 + 3 * 11, 1 * 8 + 2 * 10 + 3 * 12],
               [4 * 7 + 5 * 9 - 6 * 11, 4 * 8 - 5 * 10 - 6 * 12]], dtype=np.int32)),
    ("(compute reduce-sum (access x 1))", (2,), (), "int32",
     np.array([sum(range(12)), sum(range(12, 24))], dtype=np.int32)),
    ("(compute reduce-max (access m 1))", (2,), (), "int8", np.array([3, 5], dtype=np.int8)),
    ("(compute reduce-mean (access f 1))", (2,), (), "float64", np.array([14 / 3, 77 / 3])),
    ("(compute relu (access m 2))", (2, 3), (), "int8",
     np.array([[1, 0, 3], [4, 5, 0]], dtype=np.int8)),
    ("(compute sqrt (access f 1))", (2,), (3,), "float64", np.array([[1.0, 2, 3], [4, 5, 6]])),
    ("(compute negative (access m 1))", (2,), (3,), "int8", -M),
    ("(compute erf (access f 1))", (2,), (3,), "float64",
     np.array([[math.erf(v) for v in row] for row in F])),
    ("(compute elementwise-add (access m 0))", (), (3,), "int32",
     np.array([5, 3, -3], dtype=np.int32)),
    ("(compute elementwise-mul (access m 0))", (), (3,), "int32",
     np.array([4, -10, -18], dtype=np.int32)),
    ("(compute elementwise-div (access f 0))", (), (3,), "float64",
     np.array([1 / 16, 4 / 25, 9 / 36])),
    ("(compute softmax (access f 1))", (2,), (3,), "float64",
     np.exp(F) / np.exp(F).sum(axis=1, keepdims=True)),
    ("(compute (requantize 2) (access m 1))", (2,), (3,), "int8",
     np.array([[0, 0, 1], [1, 1, -1]], dtype=np.int8)),
    ("(systolic-array 3 2 (access m 1) (access n 0))", (2, 2), (), "int32",
     M.astype(np.int32) @ N.astype(np.int32)),
    ("(systolic-array 3 2 (access (access-slice (access m 1) 0 0 1) 1) (access n 0))",
     (1, 2), (), "int32", M[:1].astype(np.int32) @ N.astype(np.int32)),
    ("(systolic-array-with-blocking 3 1 (access m 1) (access n 0))", (2, 2), (), "int32",
     M.astype(np.int32) @ N.astype(np.int32)),
]


@pytest.mark.parametrize("source,shape,item,dtype,expected", CASES, ids=[c[0][:60] for c in CASES])
def test_operator_shape_and_value(source, shape, item, dtype, expected):
    value, ty = run(source)
    assert ty == Access(shape, item, dtype)
    assert value.dtype == np.dtype(dtype)
    expected = np.asarray(expected).reshape(shape + item)
    if value.dtype.kind == "f":  # the hand formula may round differently in the last bit
        np.testing.assert_allclose(value, expected, rtol=1e-12)
    else:
        np.testing.assert_array_equal(value, expected)


def test_every_operator_has_a_value_case():
    covered = {parse_term(c[0]).op for c in CASES}
    nested = {t.op for c in CASES for t in _nodes(parse_term(c[0]))}
    access_ops = {name for name, op in OPS.items() if op.evaluate is not None}
    assert access_ops - covered - nested == set()


def _nodes(term):
    yield term
    for arg in term.args:
        yield from _nodes(arg)


def test_int32_accumulation_wraps_like_twos_complement():
    big = np.full((1, 3), 2**30, dtype=np.int32)
    term = parse_term("(compute reduce-sum (access big 1))")
    value, ty = interpret(term, {"big": big})
    assert ty.dtype == "int32"
    assert int(value[0]) == (3 * 2**30) - 2**32


def test_requantize_rounds_half_up_and_saturates():
    x = np.array([[-1000, -6, -5, -3, -2, 2, 5, 6, 1000]], dtype=np.int32)
    value, ty = interpret(parse_term("(compute (requantize 2) (access x 1))"), {"x": x})
    # (x + 2) >> 2, then clamp: -1000 -> -250 -> -128; -6 -> -1; -5 -> -1; -3 -> -1; -2 -> 0
    assert value.tolist() == [[-128, -1, -1, -1, 0, 1, 1, 2, 127]]
    value, _ = interpret(parse_term("(compute (requantize 0) (access x 1))"), {"x": x})
    assert value.tolist() == [[-128, -6, -5, -3, -2, 2, 5, 6, 127]]


def test_requantize_of_int64_adds_exactly_without_wrapping():
    # Issue 12 item 1: the rounding add must not wrap at the top of int64. The model is Python's
    # unbounded integers: clamp((x + 2^(k-1)) >> k, -128, 127).
    values = [2**63 - 1, -2**63, 2**62, 255, -(2**62) - 1, 2**63 - 2, 3, -3]
    x = np.array(values, dtype=np.int64)
    for shift in (0, 1, 2, 7, 62):
        got, ty = interpret(parse_term(f"(compute (requantize {shift}) (access-tensor x))"),
                            {"x": x})
        rounded = [(v + (1 << (shift - 1))) >> shift if shift else v for v in values]
        assert ty.dtype == "int8"
        assert got.tolist() == [min(127, max(-128, r)) for r in rounded], shift


def test_relu_and_negative_keep_int8():
    x = np.array([[-128, -1, 0, 127]], dtype=np.int8)
    neg, ty = interpret(parse_term("(compute negative (access x 1))"), {"x": x})
    assert ty.dtype == "int8" and neg.tolist() == [[-128, 1, 0, -127]]


def test_aux_shape_operators():
    env = env_types(ENV)
    for source, expected in [
        ("(access-reshape (access x 0) (access-shape (slice-shape (shape-of x) 1) (shape 2)))",
         Access((3, 4), (2,), "int8")),
        ("(access-reshape (access x 0) (access-shape (shape-insert-axis (shape 6 4) 1) (shape)))",
         Access((6, 1, 4), (), "int8")),
        ("(access-reshape (access x 0) (access-shape (shape-remove-axis (shape 6 5 4) 1) "
         "(shape)))", Access((6, 4), (), "int8")),
        ("(access-reshape (access x 1) (get-access-shape (access x 2)))",
         Access((2, 3), (4,), "int8")),
    ]:
        assert type_of(parse_term(source), env) == expected


# (source, message fragment, line, column) — each rule's violation, located at the offending form.
ERRORS = [
    ("(access x 4)", "access needs access axis 4 to be below 4", 1, 1),
    ("(access-windows (access x 1) (shape 2) (shape 1))", "one filter and one stride per item",
     1, 1),
    ("(access-windows (access x 1) (shape 4 1) (shape 1 1))", "filter 4 of item dim 0", 1, 30),
    ("(access-windows (access x 1) (shape 2 2) (shape 1 0))", "strides of at least 1", 1, 42),
    ("(access-cartesian-product (access x 1) (access m 1))",
     "access-cartesian-product needs equal item shapes, got (3,4) and (3)", 1, 1),
    ("(access-pair (access m 1) (access m 0))", "access-pair needs equal access shapes", 1, 1),
    ("(access-cartesian-product (access m 1) (access f 1))", "one dtype class", 1, 1),
    ("(access-slice (access x 1) 1 2 2)", "0 <= low < high <= 3", 1, 1),
    ("(access-slice (access x 1) 1 0 4)", "0 <= low < high <= 3", 1, 1),
    ("(access-concatenate (access m 1) (access n 1) 0)", "dims except axis 0", 1, 1),
    ("(access-transpose (access x 1) (list 0 0 1))", "permutation of 0..2", 1, 32),
    ("(access-squeeze (access x 1) 0)", "dim 0 to be 1, got 2", 1, 1),
    ("(access-insert-axis (access x 1) 4)", "axis 4 to be below 4", 1, 1),
    ("(access-broadcast (access m 1) (access-shape (shape 2) (shape 4)))",
     "each dim 1 or equal", 1, 1),
    ("(access-reshape (access x 1) (access-shape (shape 5) (shape 5)))",
     "same number of elements", 1, 1),
    ("(compute dot-product (access x 3))", "dot-product needs at least 1 item dim", 1, 22),
    ("(compute softmax (access x 1))", "softmax needs exactly 1 item dim", 1, 18),
    ("(compute sqrt (access m 1))", "sqrt needs a float dtype, got int8", 1, 15),
    ("(compute erf (access m 1))", "erf needs a float dtype, got int8", 1, 14),
    ("(compute (requantize 3) (access f 1))", "needs an integer dtype, got float64", 1, 25),
    ("(compute elementwise-add (access m 2))", "needs at least 1 item dim", 1, 26),
    ("(systolic-array 3 3 (access m 1) (access n 0))", "weights of exactly (3,3), got (3,2)",
     1, 34),
    ("(systolic-array 3 2 (access x 1) (access n 0))", "streamed operand", 1, 21),
    ("(systolic-array 3 2 (access m 1) (access n 1))", "weights as ((),(K,O))", 1, 34),
    ("(systolic-array-with-blocking 2 2 (access m 1) (access n 0))", "K=3 a multiple of 2", 1, 48),
    ("(access-windows (access x 1) (list 2 2) (shape 1 1))",
     "needs a (shape ...) as argument 2", 1, 30),
    ("(access-tensor y)", "no shape is known for 'y'", 1, 16),
    ("(slice-shape (shape 1 2) 3)", "axis 3 within (1,2)", 1, 1),
    ("(gather (access-tensor m) (access-tensor f))", "needs integer indices, got float64", 1, 27),
    ("(global-average-pool (access-tensor f) 4)", "needs a float32 tensor, got float64", 1, 22),
    ("(dynamic-quantize (access-tensor m))", "needs a float32 tensor, got int8", 1, 19),
    ("(cast-float (access-tensor f))", "needs an integer tensor, got float64", 1, 13),
    ("(matmul-float (cast-float (access-tensor m)) (cast-float (access-tensor m)))",
     "needs A's last dim equal to B's next to last", 1, 46),
    ("(matmul-float (access-tensor f) (access-tensor f))", "needs a float32 tensor", 1, 15),
]


@pytest.mark.parametrize("source,fragment,line,col", ERRORS, ids=[e[0][:50] for e in ERRORS])
def test_shape_rule_violation_is_located(source, fragment, line, col):
    with pytest.raises(GlcError) as caught:
        type_of(parse_term(source, "case.gls"), env_types(ENV))
    error = caught.value
    assert fragment in error.message
    assert (error.where.file, error.where.line, error.where.col) == ("case.gls", line, col)
    assert str(error).startswith(f"case.gls:{line}:{col}: error: ")


def test_a_gather_index_outside_the_rows_is_one_line():
    with pytest.raises(GlcError, match=r"index 256 is outside the 256 rows of a tensor of dims "
                                       r"\(256\)"):
        interpret(parse_term("(gather (access-tensor t) (access-tensor i))", "case.gls"),
                  {**ENV, "i": np.array([3, 256], np.int64)})
