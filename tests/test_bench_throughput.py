"""scripts/bench.py --only throughput counts a network's operations from its ONNX graph: every
product's multiply-accumulates (output elements × the reduction's length), by ONNX's own shape
inference, nothing for the other operators."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from benchmarks.throughput import graph_macs  # noqa: E402


def _weight(name: str, shape: tuple[int, ...]):
    return numpy_helper.from_array(np.ones(shape, np.float32), name)


def test_graph_macs_counts_grouped_and_strided_convs_gemms_and_matmuls(tmp_path):
    # x: 1×8×10×10. conv1: 3×3, stride 2, pad 1 → 1×6×5×5 (group 2: each output reads 4
    # channels × 9). relu: no MACs. matmul over the flattened 150 → 7; gemm with transB → 5.
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3], strides=[2, 2],
                         pads=[1, 1, 1, 1], group=2),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Flatten", ["r1"], ["f1"]),
        helper.make_node("MatMul", ["f1", "w2"], ["m1"]),
        helper.make_node("Gemm", ["m1", "w3"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        [_weight("w1", (6, 4, 3, 3)), _weight("w2", (150, 7)), _weight("w3", (5, 7))])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    conv = (6 * 5 * 5) * (4 * 3 * 3)
    matmul = 7 * 150
    gemm = 5 * 7
    assert graph_macs(path) == conv + matmul + gemm
