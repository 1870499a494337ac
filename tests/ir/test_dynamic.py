"""``dynamic-quantize``, ``dynamic-scale`` and ``dynamic-zero-point`` (glc/ir/dynamic.py)
against onnxruntime's DynamicQuantizeLinear on tensors whose ranges take every branch of its
formula: both signs, only positive, only negative, all zeros, a single value, ties."""

from __future__ import annotations

import numpy as np
import pytest

from glc.ir import dynamic

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402


def _onnxruntime(x: np.ndarray):
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info(n, t, None) for n, t in
         (("y", TensorProto.UINT8), ("s", TensorProto.FLOAT), ("z", TensorProto.UINT8))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})


RNG = np.random.default_rng(0)
CASES = {
    "both-signs": RNG.normal(0, 3, (7, 33)),
    "positive": RNG.uniform(0.5, 9, (5, 8)),
    "negative": -RNG.uniform(0.01, 0.2, (4, 4)),
    "zeros": np.zeros((3, 5)),
    "one-value": np.full((2, 3), 1.7),
    "ties": np.arange(-40, 215, dtype=np.float64) / 2,
    "wide": RNG.normal(0, 1e4, (64, 129)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_dynamic_quantization_is_onnxruntimes(case):
    x = CASES[case].astype(np.float32)
    codes, scale, zero = _onnxruntime(x)
    ours_scale, ours_zero = dynamic.parameters(x)
    assert np.float32(ours_scale) == scale and ours_zero == int(zero)
    np.testing.assert_array_equal(dynamic.codes(x).astype(np.int16) + 128, codes)
