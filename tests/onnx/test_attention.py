"""Multi-head attention imported and run on the array (issue 38, item 3): BERT- and ViT-like
encoder layers built with onnx.helper — products over (batch, heads, tokens, dim), the heads
split and merged by Reshape/Transpose, q/k/v taken from one projection by Gather, a class
token concatenated (Expand, Concat) and picked (Gather) — quantized by onnxruntime in three
forms, bit for bit against onnxruntime on the ISA simulator, every product a kernel."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_on_the_isa
from onnx import TensorProto, helper, numpy_helper

from glc.inputs import load
from glc.onnx.importer import import_model
from glc.onnx.zoo import quantize

# onnxruntime's quantizer in the forms its documentation shows.
FORMS = {"qdq-uint8-per-channel": dict(activations="uint8", per_channel=True),
         "qdq-int8-symmetric": dict(activations="int8", symmetric=True),
         "qoperator-uint8": dict(activations="uint8", form="QOperator")}
# What may stay on the host: the input's quantization, onnxruntime's QLinearSoftmax (a table
# kernel, docs/onnx.md), the float LayerNormalization and the output's dequantization; in the
# QOperator ViT, the class token's concatenation with the quantized input.
HOST = {"quantize-linear", "dequantize-linear", "softmax-linear", "access-concatenate"}


def _model(nodes, inits, inputs, output):
    graph = helper.make_graph(
        nodes, "attention",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in inputs],
        [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, output[1])],
        [numpy_helper.from_array(np.asarray(v, np.int64 if np.asarray(v).dtype.kind == "i"
                                            else np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _dense(rng, fan_in, fan_out):
    return rng.normal(0, np.sqrt(2 / fan_in), (fan_in, fan_out))


def bert_layer(tokens=8, width=16, heads=2, hidden=32, seed=0, final_norm=False):
    """A BERT encoder layer as transformers exports it: q, k, v = x·W + b over (1, tokens,
    width), split into heads (Reshape, Transpose), softmax(q·kᵀ / √d)·v, heads merged, an
    output projection, residual and LayerNormalization, a GELU MLP (Erf), a second residual
    (and with ``final_norm`` a LayerNormalization)."""
    rng = np.random.default_rng(seed)
    d = width // heads
    inits = {f"w{p}": _dense(rng, width, width) for p in "qkvo"}
    inits.update({f"b{p}": rng.normal(0, 0.1, width) for p in "qkvo"})
    inits.update({"w1": _dense(rng, width, hidden), "b1": rng.normal(0, 0.1, hidden),
                  "w2": _dense(rng, hidden, width), "b2": rng.normal(0, 0.1, width),
                  "split": [1, tokens, heads, d], "merge": [1, tokens, width],
                  "root": np.sqrt(d), "sqrt2": np.sqrt(2), "one": 1.0, "half": 0.5})
    for i in "12":
        inits[f"g{i}"], inits[f"s{i}"] = rng.uniform(0.5, 1.5, width), rng.normal(0, .1, width)
    node = helper.make_node
    nodes = []
    for p, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        nodes += [node("MatMul", ["x", f"w{p}"], [f"{p}m"]), node("Add", [f"{p}m", f"b{p}"], [p]),
                  node("Reshape", [p, "split"], [f"{p}4"]),
                  node("Transpose", [f"{p}4"], [f"{p}h"], perm=perm)]
    nodes += [
        node("MatMul", ["qh", "kh"], ["s"]), node("Div", ["s", "root"], ["sd"]),
        node("Softmax", ["sd"], ["p"], axis=-1), node("MatMul", ["p", "vh"], ["c"]),
        node("Transpose", ["c"], ["ct"], perm=[0, 2, 1, 3]),
        node("Reshape", ["ct", "merge"], ["cm"]),
        node("MatMul", ["cm", "wo"], ["om"]), node("Add", ["om", "bo"], ["o"]),
        node("Add", ["x", "o"], ["r1"]),
        node("LayerNormalization", ["r1", "g1", "s1"], ["n1"], axis=-1, epsilon=1e-5),
        node("MatMul", ["n1", "w1"], ["hm"]), node("Add", ["hm", "b1"], ["h"]),
        node("Div", ["h", "sqrt2"], ["hs"]), node("Erf", ["hs"], ["he"]),
        node("Add", ["he", "one"], ["h1"]), node("Mul", ["h", "h1"], ["hg"]),
        node("Mul", ["hg", "half"], ["g"]),
        node("MatMul", ["g", "w2"], ["mm"]), node("Add", ["mm", "b2"], ["m"]),
        node("Add", ["n1", "m"], ["r2" if final_norm else "y"])]
    if final_norm:
        nodes.append(node("LayerNormalization", ["r2", "g2", "s2"], ["y"], axis=-1,
                          epsilon=1e-5))
    else:
        del inits["g2"], inits["s2"]
    return _model(nodes, inits, [("x", [1, tokens, width])], ("y", [1, tokens, width]))


def vit_layer(patches=8, width=16, heads=2, classes=10, seed=0):
    """A ViT encoder layer and head as timm exports it: a class token expanded and
    concatenated before the patches, q, k, v from one projection (Reshape to (tokens, 3,
    heads, dim), Transpose, Gather 0/1/2), attention, residual, LayerNormalization, the class
    token picked (Gather) and a linear head."""
    rng = np.random.default_rng(seed)
    d, tokens = width // heads, patches + 1
    inits = {"cls": rng.normal(0, 1, (1, 1, width)), "wqkv": _dense(rng, width, 3 * width),
             "bqkv": rng.normal(0, 0.1, 3 * width), "wo": _dense(rng, width, width),
             "bo": rng.normal(0, 0.1, width), "g": rng.uniform(0.5, 1.5, width),
             "s": rng.normal(0, 0.1, width), "wh": _dense(rng, width, classes),
             "bh": rng.normal(0, 0.1, classes), "scale": 1 / np.sqrt(d),
             "expand": [1, 1, width], "split": [1, tokens, 3, heads, d],
             "merge": [1, tokens, width], **{f"i{i}": i for i in range(3)}}
    node = helper.make_node
    nodes = [node("Expand", ["cls", "expand"], ["ce"]),
             node("Concat", ["ce", "x"], ["t"], axis=1),
             node("MatMul", ["t", "wqkv"], ["qkvm"]), node("Add", ["qkvm", "bqkv"], ["qkv"]),
             node("Reshape", ["qkv", "split"], ["qkv5"]),
             node("Transpose", ["qkv5"], ["qkvt"], perm=[2, 0, 3, 1, 4])]
    nodes += [node("Gather", ["qkvt", f"i{i}"], [p], axis=0) for i, p in enumerate("qkv")]
    nodes += [node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
              node("MatMul", ["q", "kt"], ["sc"]), node("Mul", ["sc", "scale"], ["sd"]),
              node("Softmax", ["sd"], ["p"], axis=-1), node("MatMul", ["p", "v"], ["c"]),
              node("Transpose", ["c"], ["ct"], perm=[0, 2, 1, 3]),
              node("Reshape", ["ct", "merge"], ["cm"]),
              node("MatMul", ["cm", "wo"], ["om"]), node("Add", ["om", "bo"], ["o"]),
              node("Add", ["t", "o"], ["r"]),
              node("LayerNormalization", ["r", "g", "s"], ["nr"], axis=-1, epsilon=1e-5),
              node("Gather", ["nr", "i0"], ["c0"], axis=1),
              node("MatMul", ["c0", "wh"], ["hm"]), node("Add", ["hm", "bh"], ["y"])]
    return _model(nodes, inits, [("x", [1, patches, width])], ("y", [1, classes]))


def _on_the_isa(model, tmp_path, heads: int, products: int, **options):
    """``model`` quantized, imported and run on the ISA simulator: bit-exact against
    onnxruntime, no product on the host and only the expected host steps; the array kernels
    at least one per head of each of the two batched products, and one per dense layer."""
    path = quantize(model, tmp_path / "model.onnx", **options)
    lowered = exact_on_the_isa(load(import_model(path, tmp_path / "program").folder))
    ops = {h.split(": ")[1].split(" ")[0] for h in lowered.figures()["host"]}
    assert ops <= HOST, lowered.figures()["host"]
    array = [s for s in lowered.kernels if s.kernel.kind == "matmul"]
    assert len(array) >= 2 * heads + products
    return lowered


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_bert_layer_runs_bit_exact_with_every_product_on_the_array(tmp_path, form):
    _on_the_isa(bert_layer(seed=1), tmp_path, 2, 6, **FORMS[form])


def test_a_uint8_layers_int32_products_are_stored_for_the_fold_that_requantizes_them(tmp_path):
    # With both zero points nonzero, Q·Kᵀ and P·V store int32 (their kernels add the row sums)
    # and a fold adds the column sums and requantizes, reading (heads, tokens, dim) in order:
    # P·V (2 heads, 64 tokens, 32 wide) stored as Cᵀ, (64, 64), made that fold read across
    # rows (the layer took 34 705 cycles instead of 25 433).
    path = quantize(bert_layer(64, 64), tmp_path / "model.onnx", **FORMS["qdq-uint8-per-channel"])
    lowered = exact_on_the_isa(load(import_model(path, tmp_path / "program").folder))
    int32 = [b.shape for b in lowered.buffers.values()
             if b.name.startswith("kernel") and b.dtype == "int32" and len(b.shape) == 2]
    assert (2 * 64, 32) in int32 and (2 * 32, 64) not in int32


def test_a_wider_bert_layer_of_sixteen_tokens_runs_bit_exact(tmp_path):
    _on_the_isa(bert_layer(tokens=16, width=32, hidden=64, seed=2), tmp_path, 2, 6,
                **FORMS["qdq-uint8-per-channel"])


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_vit_layer_runs_bit_exact_with_every_product_on_the_array(tmp_path, form):
    _on_the_isa(vit_layer(seed=3), tmp_path, 2, 3, **FORMS[form])


def test_a_bert_layer_ending_in_layer_normalization_is_bit_exact(tmp_path):
    """The layer's last LayerNormalization is float (onnxruntime's too), computed as MLAS's
    AVX2 kernel does (tests/ir/test_normalize.py): the float result is onnxruntime's, bit for
    bit."""
    from glc.compiler import compile_program
    from glc.hwconfig import load_config
    from glc.lower.execute import execute
    from glc.rewrites import DEFAULT, select

    path = quantize(bert_layer(seed=4, final_norm=True), tmp_path / "model.onnx",
                    **FORMS["qdq-int8-symmetric"])
    bundle = load(import_model(path, tmp_path / "program").folder)
    config = load_config("n16")
    lowered = compile_program(bundle, rules=select(DEFAULT, config.array_size),
                              config=config).lowered
    assert not any("dot-product" in h for h in lowered.figures()["host"])
    out = execute(lowered, bundle.arrays, "isa").result
    assert np.array_equal(out, bundle.expected)


# --- the movement ops between two products, each form, through the interpreter ---------------

def _between(op_nodes, inits, dims_in, dims_out, seed=0):
    """x (dims_in) · W1 → the ops (reading ``a``, writing ``b``) → · W2 → y."""
    rng = np.random.default_rng(seed)
    inits = {"w1": _dense(rng, dims_in[-1], 8), "w2": _dense(rng, dims_out[-1], 8), **inits}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["a"]), *op_nodes,
             helper.make_node("MatMul", ["b", "w2"], ["y"])]
    return _model(nodes, inits, [("x", list(dims_in))], ("y", None))


MOVES = {
    # a scalar index (the axis goes), a negative one, a run, indices in another order (a copy)
    "gather-scalar": ([helper.make_node("Gather", ["a", "i"], ["b"], axis=1)],
                      {"i": 2}, (2, 5, 6, 8), (2, 6, 8)),
    "gather-negative": ([helper.make_node("Gather", ["a", "i"], ["b"], axis=0)],
                        {"i": -1}, (3, 4, 8), (4, 8)),
    "gather-run": ([helper.make_node("Gather", ["a", "i"], ["b"], axis=1)],
                   {"i": [1, 2, 3]}, (2, 5, 8), (2, 3, 8)),
    "gather-shuffled": ([helper.make_node("Gather", ["a", "i"], ["b"], axis=1)],
                        {"i": [3, 0, 3]}, (2, 5, 8), (2, 3, 8)),
    "squeeze-unsqueeze": ([helper.make_node("Unsqueeze", ["a", "u"], ["au"]),
                           helper.make_node("Transpose", ["au"], ["at"], perm=[1, 0, 2, 3]),
                           helper.make_node("Squeeze", ["at", "s"], ["b"])],
                          {"u": [0], "s": [1]}, (4, 6, 8), (4, 6, 8)),
    "expand": ([helper.make_node("Expand", ["a", "e"], ["b"])],
               {"e": [3, 1, 1]}, (1, 5, 8), (3, 5, 8)),
}
IMPORT_FORMS = [dict(), dict(activations="uint8", per_channel=True), dict(form="QOperator")]


@pytest.mark.parametrize("options", IMPORT_FORMS, ids=["int8", "uint8", "qoperator"])
@pytest.mark.parametrize("name", sorted(MOVES))
def test_a_movement_op_between_products_is_exact_and_moves_nothing_on_the_host(tmp_path, name,
                                                                              options):
    """Each op a view of the first product's result, or (indices out of order) copies on the
    vector unit: no data movement is a host step."""
    nodes, inits, dims_in, dims_out = MOVES[name]
    path = quantize(_between(nodes, inits, dims_in, dims_out), tmp_path / "model.onnx",
                    **options)
    lowered = exact_on_the_isa(load(import_model(path, tmp_path / "program").folder))
    assert not any(": access-" in h for h in lowered.figures()["host"])


def test_a_gather_glc_cannot_take_is_one_line(tmp_path):
    """Indices of two dims (an embedding's batch of ids) are no view glc writes."""
    from glc.errors import GlcError

    gather = [helper.make_node("Gather", ["a", "i"], ["g"], axis=1),
              helper.make_node("Identity", ["g"], ["b"])]
    path = quantize(_between(gather, {"i": [[0, 1]]}, (2, 5, 8), (2, 1, 2, 8)),
                    tmp_path / "model.onnx")
    with pytest.raises(GlcError, match=r"node 'g' \(Gather\): indices of dims \(1, 2\): only "
                                       "a scalar or a non-empty vector is supported$"):
        import_model(path, tmp_path / "program")


@pytest.mark.parametrize("tokens,width,heads", [(8, 16, 2), (128, 256, 4)])
def test_a_symmetric_int8_bert_layer_is_bit_exact(tmp_path, tokens, width, heads):
    """int8 activations of zero point 0: onnxruntime keeps the residual Adds and the GELU's
    products float here (the import asks its optimized graph, glc/onnx/fusions.py), and the
    second residual's host step reads the first's projection beside the MLP's kernels (the
    lowering keeps that DRAM, glc/lower/lowering.py ``_release_read``). 3 784 of the 128-token
    layer's 32 768 outputs differed before."""
    _on_the_isa(bert_layer(tokens=tokens, width=width, heads=heads, hidden=4 * width, seed=5),
                tmp_path, heads, 6, **FORMS["qdq-int8-symmetric"])
