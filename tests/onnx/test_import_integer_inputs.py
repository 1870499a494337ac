"""Models whose input is already quantized (glc/onnx/translate.py ``declare_inputs``): an
int8 or uint8 image read by a DequantizeLinear (QDQ) or a QLinearConv (QOperator) imports as
an int8 program input — a uint8 code u carried as u − 128 — exact against onnxruntime on the
interpreter and the ISA simulator. int64 token ids read by a Gather of a constant table
(glc/onnx/embeddings.py) import as an int64 input, each Gather a host step reading the table's
rows, exact in the four forms and in a float model; any other use of int64 ids is one line."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, quantize, weights

from glc.errors import GlcError
from glc.inputs import load
from glc.interp import interpret
from glc.onnx.importer import import_model

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

C, H, W = 8, 7, 9


def _quantized_input(tmp_path, activations: str, form: str):
    """A conv → relu → conv model quantized by onnxruntime, then cut at its input's
    QuantizeLinear: the model's input is the quantized image itself."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["y"])]
    model = float_model(nodes, [("x", (1, C, H, W))], ("y", (1, C, H, W)),
                        {"w1": weights(rng, C, C, 3, 3), "w2": weights(rng, C, C, 1, 1)})
    path = quantize(model, tmp_path / "m.onnx", activations=activations, form=form)
    quantized = onnx.load(path)
    graph = quantized.graph
    (cut,) = [n for n in graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "x"]
    graph.node.remove(cut)
    elem = TensorProto.UINT8 if activations == "uint8" else TensorProto.INT8
    del graph.input[:]
    graph.input.append(helper.make_tensor_value_info(cut.output[0], elem, [1, C, H, W]))
    onnx.save(quantized, path)
    return path


FORMS = [("uint8", "QDQ"), ("int8", "QDQ"), ("uint8", "QOperator"), ("int8", "QOperator")]


@pytest.mark.parametrize(("activations", "form"), FORMS)
def test_a_quantized_image_is_an_int8_input_exact_against_onnxruntime(tmp_path, activations,
                                                                      form):
    result = import_model(_quantized_input(tmp_path, activations, form), tmp_path / "p")
    assert "(quantize-linear" not in result.program.read_text()  # no input quantization
    bundle = load(result.folder)
    (symbol,) = [s for s in bundle.arrays if bundle.arrays[s].shape == (1, C, H, W)]
    assert bundle.arrays[symbol].dtype == np.int8
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)
    exact_on_the_isa(bundle)


def test_int64_ids_read_otherwise_than_by_a_gather_are_refused_in_one_line(tmp_path):
    graph = helper.make_graph([helper.make_node("Cast", ["ids"], ["y"], to=TensorProto.FLOAT)],
                              "g", [helper.make_tensor_value_info("ids", TensorProto.INT64,
                                                                  [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "ids.onnx")
    with pytest.raises(GlcError, match="input 'ids' is int64; glc imports int64 ids read only "
                                       "by Gathers of constant tables on axis 0$"):
        import_model(tmp_path / "ids.onnx", tmp_path / "p")


VOCAB, WIDTH = 50, 16


def _embedding_model(ids_dims, rng):
    """Token ids → word embeddings (a Gather of a (VOCAB, WIDTH) table) → rows of WIDTH →
    MatMul → Relu → MatMul."""
    tokens = int(np.prod(ids_dims))
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"])]
    rows = "e"
    if len(ids_dims) > 1:
        nodes.append(helper.make_node("Reshape", ["e", "rows"], ["er"]))
        rows = "er"
    nodes += [helper.make_node("MatMul", [rows, "w1"], ["h"]),
              helper.make_node("Relu", ["h"], ["r"]),
              helper.make_node("MatMul", ["r", "w2"], ["y"])]
    values = {"emb": rng.normal(0, 1, (VOCAB, WIDTH)).astype(np.float32),
              "w1": weights(rng, WIDTH, 24), "w2": weights(rng, 24, 6)}
    if len(ids_dims) > 1:
        values["rows"] = np.array([tokens, WIDTH], np.int64)
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in values.items()]
    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, ids_dims)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


class _Ids:
    """Calibration batches of seeded token ids."""

    def __init__(self, dims, seed: int):
        rng = np.random.default_rng(seed)
        self.batches = iter([{"ids": rng.integers(0, VOCAB, dims).astype(np.int64)}
                             for _ in range(4)])

    def get_next(self):
        return next(self.batches, None)


@pytest.mark.parametrize("ids_dims", [[8], [2, 8]], ids=["tokens", "batch"])
@pytest.mark.parametrize(("activations", "form"), FORMS)
def test_token_ids_gather_embeddings_exact_on_the_isa(tmp_path, activations, form, ids_dims):
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    rng = np.random.default_rng(len(ids_dims))
    onnx.save(_embedding_model(ids_dims, rng), tmp_path / "float.onnx")
    quantize_static(str(tmp_path / "float.onnx"), str(tmp_path / "m.onnx"), _Ids(ids_dims, 0),
                    quant_format=getattr(QuantFormat, form),
                    activation_type=QuantType.QUInt8 if activations == "uint8" else
                    QuantType.QInt8, weight_type=QuantType.QInt8, reduce_range=True)
    result = import_model(tmp_path / "m.onnx", tmp_path / "p")
    assert sum("(Gather)" in op for op in result.host_ops) == 1
    bundle = load(result.folder)
    (ids,) = [a for a in bundle.arrays.values() if a.dtype == np.int64]
    assert ids.shape == tuple(ids_dims) and ids.min() >= 0 and ids.max() < VOCAB
    exact_on_the_isa(bundle)


def test_a_float_models_embeddings_are_its_table_rows(tmp_path):
    rng = np.random.default_rng(3)
    table = rng.normal(0, 1, (VOCAB, WIDTH)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Gather", ["emb", "ids"], ["y"])], "g",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [onnx.numpy_helper.from_array(table, "emb")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    result = import_model(tmp_path / "m.onnx", tmp_path / "p", seed=4)
    assert result.float_only
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    (ids,) = [a for a in bundle.arrays.values() if a.dtype == np.int64]
    np.testing.assert_array_equal(bundle.expected, table[ids])
    np.testing.assert_array_equal(out, bundle.expected)
