"""Models whose input is already quantized (glc/onnx/translate.py ``declare_inputs``): an
int8 or uint8 image read by a DequantizeLinear (QDQ) or a QLinearConv (QOperator) imports as
an int8 program input — a uint8 code u carried as u − 128 — exact against onnxruntime on the
interpreter and the ISA simulator; an int64 input is refused in one line."""

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


def test_an_int64_input_is_refused_in_one_line(tmp_path):
    graph = helper.make_graph([helper.make_node("Cast", ["ids"], ["y"], to=TensorProto.FLOAT)],
                              "g", [helper.make_tensor_value_info("ids", TensorProto.INT64,
                                                                  [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "ids.onnx")
    with pytest.raises(GlcError, match="input 'ids' is int64; glc imports float32, int8 and "
                                       "uint8 inputs"):
        import_model(tmp_path / "ids.onnx", tmp_path / "p")
