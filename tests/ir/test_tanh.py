"""``(compute tanh)`` against onnxruntime's Tanh kernel (MLAS's tanh), bit for bit, on a sweep of
float32 over [-30, 30] (every 301st bit pattern, every float32 near the clamp at ±9) and the edge
values. onnxruntime is the reference, so the test needs the onnx extra."""

from __future__ import annotations

import numpy as np
import pytest
from test_gelu import _onnxruntime, _same_bits, sweep

from glc.ir import tanh as kernel
from glc.ir.compute import KINDS

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")

F = np.float32


def _sweep() -> np.ndarray:
    """[0, 30], every float32 near the clamp (9), the edges, both signs, and NaN."""
    return np.append(sweep(30.0, 301, [kernel.UPPER]), F(np.nan))


def _tanh(x: np.ndarray) -> np.ndarray:
    return KINDS["tanh"].evaluate(x, None, np.empty(0, x.dtype), None)


def test_compute_tanh_is_onnxruntimes_tanh_bit_for_bit():
    from onnx import helper

    x = _sweep()
    ops, expected = _onnxruntime([helper.make_node("Tanh", ["x"], ["y"])], {}, x)
    assert ops == ["Tanh"]
    _same_bits(kernel.mlas_tanh(x), expected, x)
    _same_bits(_tanh(x), expected, x)


def test_float32_tanh_is_within_five_ulps_of_the_function():
    """MLAS's approximation is not the correctly rounded tanh, but close to it (measured: at
    most 4.53 ulps, at ±8.9862, where it rounds to 1.0000002): a check of the coefficients'
    transcription independent of onnxruntime."""
    x = np.linspace(-12, 12, 200_001, dtype=F)
    exact = np.tanh(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(F)).astype(np.float64)
    assert np.max(np.abs(_tanh(x).astype(np.float64) - exact) / ulp) <= 5


def test_float64_tanh_is_the_function():
    x = np.array([-800.0, -3.0, 0.0, 0.5, 800.0])
    np.testing.assert_array_equal(_tanh(x), np.tanh(x))
