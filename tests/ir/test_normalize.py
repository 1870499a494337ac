"""``layer-norm`` against onnxruntime's own LayerNormalization kernel, bit for bit: rows long
enough for MLAS's AVX2 kernel (a float64 mean, FMA'd squared deviations in eight lanes, the
scalar tail's own rounding) at every tail length 0–7, and rows of fewer than 8 elements (its
scalar Welford loop). onnxruntime is the reference, so the test needs the onnx extra."""

from __future__ import annotations

import numpy as np
import pytest

from glc.ir.normalize import layer_norm

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")


def _onnxruntime(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from glc.onnx.kernels import session_options

    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, epsilon=eps)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), session_options(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 30, 31, 64,
                               100, 128, 384, 768])
def test_layer_norm_is_onnxruntimes_kernel_bit_for_bit(n):
    rng = np.random.default_rng(n)
    # an offset mean, so the centring matters, and a few large rows
    x = (rng.normal(0.3, 2.0, (1024, n)) * rng.choice([1, 1, 1, 40], (1024, 1))).astype(
        np.float32)
    scale = rng.normal(1.0, 0.2, n).astype(np.float32)
    bias = rng.normal(0.0, 0.2, n).astype(np.float32)
    for eps in (1e-5, 1e-12):
        expected = _onnxruntime(x, scale, bias, eps)
        got = layer_norm(x, scale, bias, eps)
        assert got.dtype == np.float32
        assert np.array_equal(got, expected), int((got != expected).sum())


@pytest.mark.parametrize("n", [8, 30, 64, 128])
def test_layer_norm_welford_is_onnxruntimes_skip_layer_normalization(n):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from glc.ir.normalize import layer_norm_welford
    from glc.onnx.kernels import session_options

    rng = np.random.default_rng(n)
    a, b = (rng.normal(0.3, 2.0, (1, 512, n)).astype(np.float32) for _ in range(2))
    scale = rng.normal(1.0, 0.2, n).astype(np.float32)
    bias = rng.normal(0.0, 0.2, n).astype(np.float32)
    node = helper.make_node("SkipLayerNormalization", ["a", "b", "s", "t"], ["y"],
                            domain="com.microsoft", epsilon=1e-12)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, [1, 512, n])
                      for k in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512, n])],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "t")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), session_options(),
                                   providers=["CPUExecutionProvider"])
    expected = session.run(None, {"a": a, "b": b})[0]
    got = layer_norm_welford((a + b).astype(np.float32), scale, bias, 1e-12)
    assert np.array_equal(got, expected), int((got != expected).sum())
