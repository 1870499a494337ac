"""A dynamically quantized attention (onnxruntime.quantization.quantize_dynamic, as transformers
are usually quantized): MatMulInteger over (batch, tokens, width) by a weight matrix, its rows
every token of every batch (glc/onnx/dynamic.py), and the float products of two activations
the quantizer leaves, Q·Kᵀ and P·V over heads, as ``matmul-float`` (MLAS's SGEMM order,
glc/ir/sgemm.py) — bit for bit against onnxruntime on the ISA simulator."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, weights
from test_import_dynamic import quantized_dynamically

from glc.inputs import load
from glc.onnx.importer import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402


def attention(tokens: int, width: int = 16, heads: int = 2, seed: int = 0):
    """Multi-head attention: q, k, v projections with biases, heads split, softmax((q·kᵀ)·s)
    (a float Softmax, MLAS's kernel: glc/ir/softmax.py), ·v, heads merged, an output
    projection; x is (1, tokens, width)."""
    rng = np.random.default_rng(seed)
    d = width // heads
    split = np.array([1, tokens, heads, d], np.int64)
    nodes = []
    for name in "qkv":
        nodes += [
            helper.make_node("MatMul", ["x", f"w{name}"], [f"{name}0"]),
            helper.make_node("Add", [f"{name}0", f"b{name}"], [f"{name}1"]),
            helper.make_node("Reshape", [f"{name}1", "split"], [f"{name}2"]),
        ]
    nodes += [
        helper.make_node("Transpose", ["q2"], ["q"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k2"], ["kt"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v2"], ["v"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["q", "kt"], ["s0"]),
        helper.make_node("Mul", ["s0", "scale"], ["s"]),
        helper.make_node("Softmax", ["s"], ["a"], axis=-1),
        helper.make_node("MatMul", ["a", "v"], ["c0"]),
        helper.make_node("Transpose", ["c0"], ["c1"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["c1", "merge"], ["c"]),
        helper.make_node("MatMul", ["c", "wo"], ["y"]),
    ]
    initializers = {f"w{n}": weights(rng, width, width) for n in "qkvo"}
    initializers |= {f"b{n}": rng.normal(0, 0.1, width) for n in "qkv"}
    initializers |= {
        "split": split,
        "merge": np.array([1, tokens, width], np.int64),
        "scale": np.array(1 / np.sqrt(d), np.float32),
    }
    return float_model(nodes, [("x", [1, tokens, width])], ("y", None), initializers)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize(("tokens", "seed"), [(8, 0), (24, 1), (64, 2)])
def test_a_dynamically_quantized_attention_is_exact_on_the_isa(tmp_path, tokens, seed, per_channel):
    path = quantized_dynamically(
        attention(tokens, seed=seed), tmp_path / "m.onnx", per_channel=per_channel
    )
    result = import_model(path, tmp_path / "p", seed=seed)
    assert sum("(MatMulInteger)" in op for op in result.host_ops) == 4
    assert sum(op.endswith("(MatMul)") for op in result.host_ops) == 2  # Q·Kᵀ and P·V, float
    assert sum(op.endswith("(Softmax)") for op in result.host_ops) == 1
    lowered = exact_on_the_isa(load(result.folder))
    assert lowered.figures()["kernels"] >= 4  # the four projections on the array


def gelu_mlp(tokens: int, width: int = 16, hidden: int = 32, seed: int = 0):
    """A transformer's MLP as PyTorch exports it: a dense layer, GELU spelled x·(erf(x/√2) +
    1)·0.5, a dense layer; x is (1, tokens, width)."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h"]),
        helper.make_node("Div", ["h", "root2"], ["g0"]),
        helper.make_node("Erf", ["g0"], ["g1"]),
        helper.make_node("Add", ["g1", "one"], ["g2"]),
        helper.make_node("Mul", ["h", "g2"], ["g3"]),
        helper.make_node("Mul", ["g3", "half"], ["g"]),
        helper.make_node("MatMul", ["g", "w2"], ["y"]),
    ]
    initializers = {
        "w1": weights(rng, width, hidden),
        "b1": rng.normal(0, 0.1, hidden),
        "w2": weights(rng, hidden, width),
        "root2": np.array(np.sqrt(2), np.float32),
        "one": np.array(1, np.float32),
        "half": np.array(0.5, np.float32),
    }
    return float_model(nodes, [("x", [1, tokens, width])], ("y", None), initializers)


@pytest.mark.parametrize(("tokens", "seed"), [(8, 0), (24, 1), (64, 2), (128, 3)])
def test_a_dynamically_quantized_gelu_mlp_is_exact_on_the_isa(tmp_path, tokens, seed):
    # onnxruntime fuses the GELU into its Gelu kernel (x·(1/√2), MLAS's erf), and the import
    # reads that from its optimized graph: one (gelu x), the kernel's float32 bit for bit
    path = quantized_dynamically(gelu_mlp(tokens, seed=seed), tmp_path / "m.onnx")
    result = import_model(path, tmp_path / "p", seed=seed)
    assert any(op.endswith("(Gelu)") for op in result.host_ops)
    assert not any(op.endswith("(Erf)") for op in result.host_ops)
    assert "(gelu " in (result.folder / "m.gls").read_text()
    exact_on_the_isa(load(result.folder))


def residual_norm(tokens: int, width: int = 32, seed: int = 0):
    """x · W + b, plus x (the residual), then LayerNormalization: the end of BERT's sublayers,
    which onnxruntime fuses into SkipLayerNormalization."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h0"]),
        helper.make_node("Add", ["h0", "b"], ["h"]),
        helper.make_node("Add", ["h", "x"], ["r"]),
        helper.make_node("LayerNormalization", ["r", "g", "s"], ["y"], axis=-1, epsilon=1e-12),
    ]
    initializers = {"w": weights(rng, width, width), "b": rng.normal(0, 0.1, width),
                    "g": rng.normal(1, 0.2, width), "s": rng.normal(0, 0.2, width)}
    return float_model(nodes, [("x", [1, tokens, width])], ("y", None), initializers,
                       opset=17)


@pytest.mark.parametrize(("tokens", "width", "seed"), [(8, 32, 0), (64, 64, 1), (16, 30, 2)])
def test_a_residual_layer_norm_onnxruntime_fuses_is_exact_on_the_isa(tmp_path, tokens, width,
                                                                      seed):
    """Its SkipLayerNormalization sums with Welford's running mean, not the LayerNormalization
    kernel's float64 mean: the import writes ``layer-norm-welford`` there, bit for bit."""
    import onnxruntime as ort

    from glc.onnx.kernels import session_options

    path = quantized_dynamically(residual_norm(tokens, width, seed), tmp_path / "m.onnx")
    optimized = tmp_path / "optimized.onnx"
    ort.InferenceSession(str(path), session_options(optimized), providers=["CPUExecutionProvider"])
    assert "SkipLayerNormalization" in {n.op_type for n in onnx.load(optimized).graph.node}
    result = import_model(path, tmp_path / "p", seed=seed)
    assert "(layer-norm-welford " in (result.folder / "m.gls").read_text()
    exact_on_the_isa(load(result.folder))
