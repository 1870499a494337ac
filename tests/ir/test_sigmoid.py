"""``(compute sigmoid)`` against onnxruntime's own kernels, bit for bit: a Sigmoid (MLAS's
logistic) and a SiLU ``x · σ(x)``, which onnxruntime's optimizer fuses into its com.microsoft
QuickGelu (checked), on a sweep of float32 over [-40, 40] (every 97th bit pattern, every float32
near the clamp at ±18) and the edge values. onnxruntime is the reference, so the test needs the
onnx extra."""

from __future__ import annotations

import numpy as np
import pytest
from test_gelu import _around, _onnxruntime, _same_bits

from glc.ir import sigmoid as kernel
from glc.ir.compute import KINDS

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")

F = np.float32


def _sweep() -> np.ndarray:
    """[0, 40] in bit patterns (as dense near 0 as near 40), every float32 within 3000 ulps of
    the clamp (18), both signs, and the edges: zeros, subnormals, the largest floats,
    infinities, NaN."""
    swept = np.arange(0, int(F(40).view(np.int32)), 97, dtype=np.int32).view(F)
    edges = np.array([0.0, 1e-45, 1e-40, 1.1754944e-38, 1e-30, 1e-7, 0.5, 1.0, 88.0, 1e5,
                      1e30, 3.4028235e38, np.inf], F)
    positive = np.concatenate([swept, _around(kernel.UPPER, 3000), edges]).astype(F)
    return np.concatenate([positive, -positive, np.array([np.nan], F)])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return KINDS["sigmoid"].evaluate(x, None, np.empty(0, x.dtype), None)


def test_compute_sigmoid_is_onnxruntimes_sigmoid_bit_for_bit():
    from onnx import helper

    x = _sweep()
    ops, expected = _onnxruntime([helper.make_node("Sigmoid", ["x"], ["y"])], {}, x)
    assert ops == ["Sigmoid"]
    _same_bits(kernel.mlas_logistic(x), expected, x)
    _same_bits(_sigmoid(x), expected, x)


@pytest.mark.parametrize("order", [("x", "s"), ("s", "x")])
def test_a_silu_is_onnxruntimes_quick_gelu_bit_for_bit(order):
    """x · Sigmoid(x), fused into QuickGelu (alpha 1): the logistic, then one product."""
    from onnx import helper

    x = _sweep()
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", order, ["y"])]
    ops, expected = _onnxruntime(nodes, {}, x)
    assert ops == ["QuickGelu"]
    with np.errstate(invalid="ignore"):  # -inf · 0 is NaN, as onnxruntime's
        _same_bits((x * _sigmoid(x)).astype(F), expected, x)


def test_float64_sigmoid_is_the_logistic_function():
    x = np.array([-800.0, -3.0, 0.0, 2.0, 800.0])
    np.testing.assert_allclose(_sigmoid(x), [0.0, 0.04742587317756678, 0.5, 0.8807970779778823,
                                             1.0], rtol=1e-15)
