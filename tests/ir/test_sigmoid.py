"""``(compute sigmoid)`` against onnxruntime's own kernels, bit for bit: a Sigmoid (MLAS's
logistic) and a SiLU ``x · σ(x)``, which onnxruntime's optimizer fuses into its com.microsoft
QuickGelu (checked), on a sweep of float32 over [-40, 40] (every 97th bit pattern, every float32
near the clamp at ±18) and the edge values. onnxruntime is the reference, so the test needs the
onnx extra."""

from __future__ import annotations

import numpy as np
import pytest
from test_gelu import _onnxruntime, _same_bits, sweep

from glc.ir import sigmoid as kernel
from glc.ir.compute import KINDS

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")

F = np.float32


def _sweep() -> np.ndarray:
    """[0, 40], every float32 near the clamp (18), the edges, both signs, and NaN."""
    return np.append(sweep(40.0, 97, [kernel.UPPER]), F(np.nan))


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
