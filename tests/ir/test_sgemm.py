"""``matmul-float`` (glc/ir/sgemm.py): onnxruntime's float MatMul, bit for bit — its FMA
rounded once where float64 arithmetic alone would round twice, and the whole product against
onnxruntime's own over the shapes MLAS slices differently."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from glc.ir.float32 import fma32
from glc.ir.sgemm import matmul_float, stride_k


def _exact_fma(x: float, y: float, z: float) -> np.float32:
    """x·y + z rounded once to float32, in rationals: the nearest float32, ties to even."""
    exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
    near = np.float32(float(exact))  # within one float32 step of the answer
    candidates = {
        near,
        np.nextafter(near, np.float32(np.inf)),
        np.nextafter(near, np.float32(-np.inf)),
    }
    return min(
        candidates,
        key=lambda c: (abs(Fraction(float(c)) - exact), int(np.float32(c).view(np.int32)) & 1),
    )


def test_an_fma_on_a_float64_midpoint_rounds_once():
    # x·y = 2^-24·(1 - 2^-46): with z = 1 + 2^-23 the float64 sum is the float32 midpoint
    # 1 + 2^-23 + 2^-24 (ties to even: up), the exact sum just below it (down)
    x, y = np.float32(1 + 2.0**-23), np.float32(2.0**-24 * (1 - 2.0**-23))
    z = np.float32(1 + 2.0**-23)
    got = fma32(np.array([x]), np.array([y]), np.array([z]))[0]
    assert got == _exact_fma(x, y, z) == z
    assert np.float32(np.float64(x) * np.float64(y) + np.float64(z)) != z  # rounding twice


def test_fma_equals_one_rounding_on_random_operands():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 1, 3000).astype(np.float32)
    y = (rng.normal(0, 1, 3000) * 2.0 ** rng.integers(-30, 30, 3000)).astype(np.float32)
    z = rng.normal(0, 1, 3000).astype(np.float32)
    got = fma32(x, y, z)
    assert all(g == _exact_fma(a, b, c) for g, a, b, c in zip(got, x, y, z, strict=True))


def test_mlas_slices_k_by_the_output_width():
    assert stride_k(64, 64) == 64 and stride_k(32, 384) == 512 and stride_k(300, 700) == 128


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ((64, 64), (64, 64)),
        ((1, 64, 128), (128, 64)),
        ((1, 2, 64, 32), (1, 2, 32, 64)),
        ((1, 2, 384, 384), (1, 2, 384, 32)),  # K 384 in one slice: N is 32
        ((5, 700), (700, 300)),  # six slices of 128
        ((2, 1, 7, 9), (3, 9, 5)),  # batch dims broadcast
    ],
)
def test_matmul_float_is_onnxruntimes_matmul(a, b):
    pytest.importorskip("onnxruntime")
    import onnxruntime as ort
    from onnx import TensorProto, helper

    rng = np.random.default_rng(sum(a) + sum(b))
    x, w = (rng.normal(0, 1, dims).astype(np.float32) for dims in (a, b))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])],
        "g",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, a),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, b),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"a": x, "b": w})[0]
    np.testing.assert_array_equal(matmul_float(x, w), expected)
