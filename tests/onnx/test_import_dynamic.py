"""Dynamically quantized models (onnxruntime.quantization.quantize_dynamic; glc/onnx/dynamic.py):
DynamicQuantizeLinear, MatMulInteger, ConvInteger, Cast and the float rescale after them, bit
for bit against onnxruntime on the ISA simulator; what is not supported, one line each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, weights

from glc.errors import GlcError
from glc.inputs import load
from glc.onnx.importer import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402


def quantized_dynamically(model, path: Path, weight_type: str = "QInt8",
                          per_channel: bool = False) -> Path:
    """``model`` through quantize_dynamic with 7-bit weights (reduce_range: onnxruntime's u8×s8
    GEMM is exact on AVX2 only then, docs/onnx.md "The zoo"), a scale per output channel with
    ``per_channel``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    source = path.with_name("float.onnx")
    onnx.save(model, source)
    quantize_dynamic(str(source), str(path), weight_type=getattr(QuantType, weight_type),
                     reduce_range=True, per_channel=per_channel)
    return path


def mlp(rows: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y0"]),
             helper.make_node("Add", ["y0", "b2"], ["y"])]
    return float_model(nodes, [("x", [rows, 24])], ("y", None),
                       {"w1": weights(rng, 24, 40), "b1": rng.normal(0, 0.1, 40),
                        "w2": weights(rng, 40, 10), "b2": rng.normal(0, 0.1, 10)})


def conv_net(stride: int, seed: int = 0, group: int = 1):
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], kernel_shape=[3, 3], pads=[1, 0, 1, 2],
                              strides=[stride, stride]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Conv", ["r", "w2", "b2"], ["y"], kernel_shape=[1, 1], group=group)]
    return float_model(nodes, [("x", [1, 4, 9, 11])], ("y", None),
                       {"w1": weights(rng, 8, 4, 3, 3), "w2": weights(rng, 6, 8 // group, 1, 1),
                        "b2": rng.normal(0, 0.1, 6)})


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("rows", [1, 5])
def test_a_dynamically_quantized_mlp_is_exact_on_the_isa(tmp_path, rows, seed, per_channel):
    path = quantized_dynamically(mlp(rows, seed), tmp_path / "m.onnx", per_channel=per_channel)
    result = import_model(path, tmp_path / "p", seed=seed)
    assert sum("(MatMulInteger)" in op for op in result.host_ops) == 2
    exact_on_the_isa(load(result.folder))


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("stride", [1, 2])
def test_a_dynamically_quantized_conv_net_is_exact_on_the_isa(tmp_path, stride, seed,
                                                              per_channel):
    path = quantized_dynamically(conv_net(stride, seed), tmp_path / "m.onnx",
                                 per_channel=per_channel)
    result = import_model(path, tmp_path / "p", seed=seed)
    assert sum("(ConvInteger)" in op for op in result.host_ops) == 2
    exact_on_the_isa(load(result.folder))


@pytest.mark.parametrize(("model", "weight_type", "says"), [
    (mlp(2), "QUInt8", "(MatMulInteger): weights of type uint8 are not supported"),
    (conv_net(1, group=2), "QInt8", "(ConvInteger): attributes group and dilations must be 1"),
])
def test_what_is_not_supported_is_one_line(tmp_path, model, weight_type, says):
    path = quantized_dynamically(model, tmp_path / "m.onnx", weight_type)
    with pytest.raises(GlcError) as error:
        import_model(path, tmp_path / "p")
    assert says in str(error.value) and "\n" not in str(error.value)
