"""The reference glc checks imports against is the ONNX operators' arithmetic on every host: an
integer product whose uint8×int8 pairs overflow int16 (255·127·2 > 32 767) comes out of
``onnxruntime_output`` as the exact int32 sum — MLAS's VPMADDUBSW kernels on x86 without VNNI
saturate each pair unless glc's session options ask onnxruntime for exact products
(glc/onnx/kernels.py). On a host with VNNI both paths are exact; on AVX2 alone this fails
without the option."""

from __future__ import annotations

import numpy as np

from glc.onnx.importer import onnxruntime_output
from tests.onnx.conftest import TensorProto, helper, numpy_helper


def test_an_overflowing_uint8_by_int8_product_is_the_exact_int32_sum(tmp_path):
    rng = np.random.default_rng(7)
    a = rng.integers(192, 256, (4, 64), dtype=np.uint8)  # same-sign pairs past int16
    b = rng.integers(100, 128, (64, 8), dtype=np.int8) * np.where(rng.random((64, 8)) < 0.2, -1, 1)
    b = b.astype(np.int8)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "g",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [4, 64])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [4, 8])],
        [numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "matmul-integer.onnx"
    path.write_bytes(model.SerializeToString())
    exact = a.astype(np.int64) @ b.astype(np.int64)
    assert np.array_equal(onnxruntime_output(path, {"a": a}), exact)
