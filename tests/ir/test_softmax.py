"""``(compute softmax)`` of float32 against onnxruntime's own Softmax kernel, bit for bit: rows of
every length class of MLAS's sum-of-exponentials kernel (under one vector of 8, whole vectors,
a partial last vector, past its 24-element loop), values spread over tens (underflowing
exponentials) and rows with -inf (a masked attention). onnxruntime is the reference, so the
test needs the onnx extra."""

from __future__ import annotations

import numpy as np
import pytest

from glc.ir.compute import KINDS
from glc.ir.softmax import softmax

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")


def _onnxruntime(x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from glc.onnx.kernels import session_options

    graph = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), session_options(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("n", [1, 3, 7, 8, 9, 16, 23, 24, 25, 31, 32, 48, 64, 100, 128, 384])
def test_softmax_is_onnxruntimes_kernel_bit_for_bit(n):
    rng = np.random.default_rng(n)
    x = (rng.normal(0, 3, (512, n)) * rng.choice([0.1, 1, 10, 30], (512, 1))).astype(np.float32)
    x[::7, ::3] = -np.inf
    x[::7, 0] = 0.0  # every row keeps a finite maximum
    expected = _onnxruntime(x)
    got = KINDS["softmax"].evaluate(x, None, np.empty(0, np.float32), None)
    assert got.dtype == np.float32
    assert np.array_equal(got, expected), int((got != expected).sum())
    assert np.array_equal(softmax(x[:5, None]), expected[:5, None])  # any leading dims
