"""GRU and LSTM over a fixed sequence (glc/onnx/recurrent.py, glc/ir/recurrent.py): a float
model's float32 results equal to onnxruntime's, bit for bit (docs/onnx.md, "Recurrent layers");
a quantized model's products after the GRU on the array, equal to onnxruntime on the ISA
simulator; what is not supported, one line each."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, quantize

from glc.errors import GlcError
from glc.inputs import load
from glc.interp import interpret
from glc.onnx.importer import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

SEQ, BATCH, WIDTH, HIDDEN = 7, 2, 8, 12


def recurrent_model(kind: str, outputs, seed: int = 0, sizes=(SEQ, BATCH, WIDTH, HIDDEN),
                    **attrs):
    """A GRU or LSTM of seeded weights over (seq, batch, width) of ``sizes`` (and its hidden
    size); ``outputs`` which of Y, Y_h the model returns (its one output) and, with a "head",
    Y_h reshaped into a MatMul."""
    seq, batch, width, hidden = sizes
    rng = np.random.default_rng(seed)
    gates = 4 if kind == "LSTM" else 3
    inits = {"W": rng.normal(0, 0.4, (1, gates * hidden, width)),
             "R": rng.normal(0, 0.4, (1, gates * hidden, hidden)),
             "B": rng.normal(0, 0.1, (1, 2 * gates * hidden))}
    node = helper.make_node(kind, ["x", "W", "R", "B"], ["Y", "Yh"], hidden_size=hidden, **attrs)
    nodes = [node]
    output = outputs
    if outputs == "head":
        nodes += [helper.make_node("Reshape", ["Yh", "rows"], ["h"]),
                  helper.make_node("MatMul", ["h", "w2"], ["y"])]
        inits |= {"rows": np.array([batch, hidden], np.int64),
                  "w2": rng.normal(0, 0.3, (hidden, 5))}
        output = "y"
    return float_model(nodes, [("x", [seq, batch, width])], (output, None), inits, opset=14)


CASES = [("GRU", {}), ("GRU", {"linear_before_reset": 1}), ("LSTM", {})]
IDS = ["gru", "gru-linear-before-reset", "lstm"]


@pytest.mark.parametrize(("output", "sizes"), [
    ("Y", (SEQ, BATCH, WIDTH, HIDDEN)), ("Yh", (SEQ, BATCH, WIDTH, HIDDEN)),
    ("Y", (SEQ, 1, WIDTH, HIDDEN)), ("Y", (3, 2, 300, 270)),
], ids=["Y", "Yh", "batch-1", "past-the-sgemm-slice"])
@pytest.mark.parametrize(("kind", "attrs"), CASES, ids=IDS)
def test_a_float_recurrent_layer_is_onnxruntimes_bit_for_bit(tmp_path, kind, attrs, output,
                                                             sizes):
    """Every float32 of the layer's output equal to onnxruntime's; the last case's input (300)
    and hidden (270) sizes are longer than MLAS's SGEMM slice of K for prepacked weights
    (256), so its products add two slices."""
    path = tmp_path / "m.onnx"
    onnx.save(recurrent_model(kind, output, sizes=sizes, **attrs), path)
    result = import_model(path, tmp_path / "p")
    assert result.float_only and result.host_ops == [f"Y ({kind})"]
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    assert out.dtype == bundle.expected.dtype == np.float32
    np.testing.assert_array_equal(out.view(np.int32), bundle.expected.view(np.int32))


@pytest.mark.parametrize("form", ["QDQ", "QOperator"])
@pytest.mark.parametrize(("kind", "attrs"), CASES, ids=IDS)
def test_a_quantized_models_products_after_a_gru_run_on_the_array(tmp_path, kind, attrs, form):
    """onnxruntime's quantizer leaves the layer float; the MatMul after it is quantized, a
    kernel, and the int8 result equals onnxruntime's (the float layer bit for bit, the codes
    it is quantized to are onnxruntime's)."""
    path = quantize(recurrent_model(kind, "head", **attrs), tmp_path / "m.onnx",
                    activations="uint8", form=form)
    exact_on_the_isa(load(import_model(path, tmp_path / "p").folder))


@pytest.mark.parametrize(("attrs", "says"), [
    ({"direction": "bidirectional"}, "attribute direction: only forward is supported"),
    ({"activations": ["Relu", "Tanh"]}, "attribute activations: only Sigmoid, Tanh are "),
    ({"clip": 3.0}, "attributes clip, layout and input_forget are not supported"),
])
def test_what_is_not_supported_is_one_line(tmp_path, attrs, says):
    path = tmp_path / "m.onnx"
    model = recurrent_model("GRU", "Y", **attrs)
    if attrs.get("direction") == "bidirectional":  # two directions' weights, as ONNX wants
        for init in model.graph.initializer:
            array = onnx.numpy_helper.to_array(init)
            init.CopyFrom(onnx.numpy_helper.from_array(np.concatenate([array, array]),
                                                       init.name))
    onnx.save(model, path)
    with pytest.raises(GlcError) as error:
        import_model(path, tmp_path / "p")
    assert "node 'Y' (GRU): " + says in str(error.value) and "\n" not in str(error.value)
