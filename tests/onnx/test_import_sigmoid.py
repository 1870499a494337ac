"""Float Sigmoid, HardSigmoid, HardSwish, Tanh and LeakyRelu (and the SiLU and squeeze-excitation
gates built of them) import as float32 host steps with onnxruntime's arithmetic
(glc/onnx/floats.py): bit for bit against onnxruntime on a dense float32 sweep where they are
the model's output, and in the form quantize_dynamic leaves an EfficientNet's or a
MobileNetV3's blocks (float activations between DynamicQuantizeLinear steps), run on the ISA
simulator."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, weights
from test_import_dynamic import quantized_dynamically

from glc.inputs import load
from glc.interp import interpret
from glc.onnx.importer import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

F = np.float32


def _sweep() -> np.ndarray:
    """[0, 30] every 301st float32 bit pattern (as dense near 0 as near 30), both signs, the
    edges (zeros, ±3 where HardSigmoid's clip starts, the largest floats, infinities), as
    (rows, 64)."""
    swept = np.arange(0, int(F(30).view(np.int32)), 301, dtype=np.int32).view(F)
    edges = np.array([0.0, 1e-45, 1e-30, 3.0, 18.0, 3.4028235e38, np.inf], F)
    x = np.concatenate([swept, -swept, edges, -edges])
    return np.concatenate([x, np.zeros(-x.size % 64, F)]).reshape(-1, 64)


def _onnxruntime(path, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    from glc.onnx.kernels import session_options

    session = ort.InferenceSession(str(path), session_options(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


HARD_SIGMOID = helper.make_node("HardSigmoid", ["x"], ["y"], alpha=1 / 6, beta=0.5)


@pytest.mark.parametrize(("nodes", "hosts"), [
    ([helper.make_node("Sigmoid", ["x"], ["y"])], ["y (Sigmoid)"]),
    ([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])],
     ["s (Sigmoid)", "y (Mul)"]),
    ([HARD_SIGMOID], ["y (HardSigmoid)"]),
    ([helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.2, beta=0.5)],
     ["y (HardSigmoid)"]),
    ([helper.make_node("HardSigmoid", ["x"], ["y"])], ["y (HardSigmoid)"]),
    ([helper.make_node("HardSwish", ["x"], ["y"])], ["y (HardSwish)"]),
    ([helper.make_node("Tanh", ["x"], ["y"])], ["y (Tanh)"]),
    ([helper.make_node("LeakyRelu", ["x"], ["y"])], ["y (LeakyRelu)"]),
    ([helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.1)], ["y (LeakyRelu)"]),
    ([helper.make_node("LeakyRelu", ["x"], ["y"], alpha=3.0)], ["y (LeakyRelu)"]),
], ids=["sigmoid", "silu", "hard-sigmoid", "hard-sigmoid-0.2", "hard-sigmoid-defaults",
        "hard-swish", "tanh", "leaky-relu", "leaky-relu-0.1", "leaky-relu-3"])
def test_a_float_activation_is_onnxruntimes_on_a_sweep(tmp_path, nodes, hosts):
    """The model's float input through the activation, every float32 of the sweep: the
    program's result (the interpreter) equal to onnxruntime's, bit for bit (NaN where it is)."""
    x = _sweep()
    model = float_model(nodes, [("x", list(x.shape))], ("y", None), {}, opset=14)
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    result = import_model(path, tmp_path / "p")
    assert result.host_ops == hosts
    bundle = load(result.folder)
    assert bundle.arrays["x"].shape == x.shape
    with np.errstate(invalid="ignore"):  # -inf · 0 is NaN, as onnxruntime's
        out, _ = interpret(bundle.program.body, {**bundle.arrays, "x": x})
    expected = _onnxruntime(path, x)
    np.testing.assert_array_equal(out.view(np.int32), expected.view(np.int32))


def _conv(rng, x: str, y: str, cin: int, cout: int, k: int = 3, group: int = 1) -> tuple:
    """A conv with bias: its node and its two constants."""
    node = helper.make_node("Conv", [x, f"{y}_w", f"{y}_b"], [y], kernel_shape=[k, k],
                            pads=[k // 2] * 4, group=group)
    return node, {f"{y}_w": weights(rng, cout, cin // group, k, k),
                  f"{y}_b": rng.normal(0, 0.3, cout)}


def _block(gate: str, act: str, seed: int):
    """conv → activation (SiLU or HardSwish) → depthwise conv → activation → squeeze and
    excitation (GlobalAveragePool, two 1×1 convs, ReLU, then the gate: Sigmoid or
    HardSigmoid) times the activation → 1×1 conv: an EfficientNet's MBConv or a MobileNetV3's
    block."""
    rng = np.random.default_rng(seed)
    nodes, constants = [], {}

    def add(node_constants):
        nodes.append(node_constants[0])
        constants.update(node_constants[1])

    def activation(x: str, y: str):
        if act == "silu":
            nodes.extend([helper.make_node("Sigmoid", [x], [f"{y}_s"]),
                          helper.make_node("Mul", [x, f"{y}_s"], [y])])
        else:
            nodes.append(helper.make_node("HardSwish", [x], [y]))

    add(_conv(rng, "x", "c1", 3, 16))
    activation("c1", "a1")
    add(_conv(rng, "a1", "dw", 16, 16, group=16))
    activation("dw", "a2")
    nodes.append(helper.make_node("GlobalAveragePool", ["a2"], ["p"]))
    add(_conv(rng, "p", "f1", 16, 8, k=1))
    nodes.append(helper.make_node("Relu", ["f1"], ["r"]))
    add(_conv(rng, "r", "f2", 8, 16, k=1))
    if gate == "sigmoid":
        nodes.append(helper.make_node("Sigmoid", ["f2"], ["g"]))
    else:
        nodes.append(helper.make_node("HardSigmoid", ["f2"], ["g"], alpha=1 / 6, beta=0.5))
    nodes.append(helper.make_node("Mul", ["a2", "g"], ["e"]))
    add(_conv(rng, "e", "y", 16, 8, k=1))
    return float_model(nodes, [("x", [1, 3, 10, 10])], ("y", None), constants, opset=14)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize(("gate", "act"), [("sigmoid", "silu"), ("hard-sigmoid", "hard-swish")],
                         ids=["efficientnet", "mobilenetv3"])
def test_a_dynamically_quantized_gated_block_is_exact_on_the_isa(tmp_path, gate, act,
                                                                 per_channel):
    """The block through quantize_dynamic: its convolutions ConvInteger on the array, the
    float activations, pool and gate host steps; the ISA simulator's result equal to
    onnxruntime's, bit for bit."""
    path = quantized_dynamically(_block(gate, act, seed=1 if per_channel else 0),
                                 tmp_path / "m.onnx", per_channel=per_channel)
    result = import_model(path, tmp_path / "p")
    hosts = " ".join(result.host_ops)
    if act == "silu":
        assert hosts.count("(Sigmoid)") == 3
    else:
        assert hosts.count("(HardSwish)") == 2 and hosts.count("(HardSigmoid)") == 1
    exact_on_the_isa(load(result.folder))


def test_a_dynamically_quantized_pooler_is_exact_on_the_isa(tmp_path):
    """A BERT pooler's dense layer and Tanh, then a classifier, through quantize_dynamic: the
    products MatMulInteger on the array, the Tanh a float host step between them; the ISA
    simulator's result equal to onnxruntime's, bit for bit."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]),
             helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Tanh", ["hb"], ["t"]),
             helper.make_node("MatMul", ["t", "w2"], ["y0"]),
             helper.make_node("Add", ["y0", "b2"], ["y"])]
    model = float_model(nodes, [("x", [8, 32])], ("y", None),
                        {"w1": weights(rng, 32, 32), "b1": rng.normal(0, 0.5, 32),
                         "w2": weights(rng, 32, 6), "b2": rng.normal(0, 0.1, 6)})
    path = quantized_dynamically(model, tmp_path / "m.onnx")
    result = import_model(path, tmp_path / "p")
    assert "t (Tanh)" in result.host_ops
    exact_on_the_isa(load(result.folder))
