"""Dynamically quantized models (onnxruntime.quantization.quantize_dynamic; glc/onnx/dynamic.py):
DynamicQuantizeLinear, MatMulInteger, ConvInteger, Cast and the float rescale after them, bit
for bit against onnxruntime on the ISA simulator; what is not supported, one line each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, imported_float, weights

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


def inverted_residual(stride: int, seed: int = 0):
    """MobileNetV2's block as quantize_dynamic leaves it: ReLU6 (a Clip of a float tensor)
    between the products, a depthwise 3×3, a grouped and a dilated conv, a residual Add."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["e"], kernel_shape=[1, 1]),
             helper.make_node("Clip", ["e", "zero", "six"], ["e6"]),
             helper.make_node("Conv", ["e6", "wd", "bd"], ["d"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1], strides=[stride, stride], group=12),
             helper.make_node("Clip", ["d", "zero", "six"], ["d6"]),
             helper.make_node("Conv", ["d6", "wg"], ["g"], kernel_shape=[3, 3], pads=[2, 1, 2, 1],
                              dilations=[2, 1], group=3),
             helper.make_node("Clip", ["g", "zero", "six"], ["g6"]),
             helper.make_node("Conv", ["g6", "w2", "b2"], ["p"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["p", "x"] if stride == 1 else ["p", "p"], ["y"])]
    inits = {"w1": weights(rng, 12, 4, 1, 1), "b1": rng.normal(0, 0.1, 12),
             "wd": weights(rng, 12, 1, 3, 3), "bd": rng.normal(0, 0.1, 12),
             "wg": weights(rng, 6, 4, 3, 3), "w2": weights(rng, 4, 6, 1, 1),
             "b2": rng.normal(0, 0.1, 4), "zero": np.array(0, np.float32),
             "six": np.array(6, np.float32)}
    return float_model(nodes, [("x", [1, 4, 9, 11])], ("y", None), inits)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("stride", [1, 2])
def test_a_dynamically_quantized_inverted_residual_is_exact_on_the_isa(tmp_path, stride,
                                                                       per_channel):
    """ReLU6 as a float host step (max then min: exact), the depthwise, grouped and dilated
    ConvIntegers on the array: bit for bit."""
    path = quantized_dynamically(inverted_residual(stride), tmp_path / "m.onnx",
                                 per_channel=per_channel)
    result = import_model(path, tmp_path / "p")
    assert sum("(ConvInteger)" in op for op in result.host_ops) == 4
    assert sum("(Clip)" in op for op in result.host_ops) == 3
    lowered = exact_on_the_isa(load(result.folder))
    assert lowered.figures()["kernels"] >= 4


@pytest.mark.parametrize(("opset", "bounds"), [(10, {"min": -0.5, "max": 0.75}),
                                              (10, {"max": 0.25}), (13, ["lo", "hi"]),
                                              (13, ["", "hi"]), (13, ["lo"])])
def test_a_float_clip_is_onnxruntimes(tmp_path, opset, bounds):
    """Clip's bounds as attributes (before opset 11) or inputs, either left out: exact."""
    if isinstance(bounds, dict):
        node = helper.make_node("Clip", ["x"], ["y"], **bounds)
    else:
        node = helper.make_node("Clip", ["x", *bounds], ["y"])
    model = float_model([node], [("x", [2, 3, 5])], ("y", None),
                        {"lo": np.array(-0.5, np.float32), "hi": np.array(0.25, np.float32)}
                        if opset >= 11 else {}, opset=opset)
    result, out, expected = imported_float(model, tmp_path)
    assert result.host_ops == ["y (Clip)"]
    np.testing.assert_array_equal(out, expected)


def transition(channels: int, seed: int = 0):
    """DenseNet's transition as quantize_dynamic leaves it: a 1×1 conv, ReLU, a float 2×2
    AveragePool, then a conv reading it."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("AveragePool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2"], ["y"], kernel_shape=[3, 3], pads=[1] * 4)]
    return float_model(nodes, [("x", [1, 4, 10, 12])], ("y", None),
                       {"w1": weights(rng, channels, 4, 1, 1), "b1": rng.normal(0, 0.1, channels),
                        "w2": weights(rng, 6, channels, 3, 3)})


@pytest.mark.parametrize("channels", [16, 12], ids=["nchwc", "nchw"])
def test_a_dynamically_quantized_transition_is_exact_on_the_isa(tmp_path, channels):
    """The float AveragePool between the products: a host step in the order of onnxruntime's
    kernel (NCHWc with 16 channels, MLAS's vectorized pool with 12), bit for bit."""
    path = quantized_dynamically(transition(channels), tmp_path / "m.onnx")
    result = import_model(path, tmp_path / "p")
    assert "p (AveragePool)" in result.host_ops
    exact_on_the_isa(load(result.folder))


def spotter(seed: int = 0):
    """A Conv1d keyword spotter: strided, padded and dilated 1-d convs, ReLU, a global pool."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], kernel_shape=[5], pads=[2, 1],
                              strides=[2]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Conv", ["r", "w2", "b2"], ["c"], kernel_shape=[3], pads=[2, 2],
                              dilations=[2]),
             helper.make_node("GlobalAveragePool", ["c"], ["y"])]
    return float_model(nodes, [("x", [1, 6, 23])], ("y", None),
                       {"w1": weights(rng, 16, 6, 5), "b1": rng.normal(0, 0.1, 16),
                        "w2": weights(rng, 8, 16, 3), "b2": rng.normal(0, 0.1, 8)})


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("seed", [0, 1])
def test_a_dynamically_quantized_conv1d_is_exact_on_the_isa(tmp_path, seed, per_channel):
    path = quantized_dynamically(spotter(seed), tmp_path / "m.onnx", per_channel=per_channel)
    result = import_model(path, tmp_path / "p", seed=seed)
    assert sum("(ConvInteger)" in op for op in result.host_ops) == 2
    exact_on_the_isa(load(result.folder))


def same_padded():
    rng = np.random.default_rng(0)
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], auto_pad="SAME_UPPER")
    return float_model([node], [("x", [1, 4, 6, 6])], ("y", None), {"w": weights(rng, 4, 4, 3, 3)})


@pytest.mark.parametrize(("model", "weight_type", "says"), [
    (mlp(2), "QUInt8", "(MatMulInteger): weights of type uint8 are not supported"),
    (same_padded(), "QInt8", "(ConvInteger): attribute auto_pad is not supported (give pads)"),
])
def test_what_is_not_supported_is_one_line(tmp_path, model, weight_type, says):
    path = quantized_dynamically(model, tmp_path / "m.onnx", weight_type)
    with pytest.raises(GlcError) as error:
        import_model(path, tmp_path / "p")
    assert says in str(error.value) and "\n" not in str(error.value)
