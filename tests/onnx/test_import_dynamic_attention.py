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
    """Multi-head attention without the softmax (a float Softmax is onnxruntime's own exp):
    q, k, v projections with biases, heads split, (q·kᵀ)·s, ·v, heads merged, an output
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
        helper.make_node("MatMul", ["s", "v"], ["c0"]),
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
    # onnxruntime fuses the GELU into its Gelu kernel (x·(1/√2), MLAS's erf): float32 values
    # an ulp or so from the import's op-by-op ones, equal after the DynamicQuantizeLinear that
    # reads them unless one lies within that of a rounding tie (none here)
    path = quantized_dynamically(gelu_mlp(tokens, seed=seed), tmp_path / "m.onnx")
    result = import_model(path, tmp_path / "p", seed=seed)
    assert any(op.endswith("(Erf)") for op in result.host_ops)
    exact_on_the_isa(load(result.folder))
