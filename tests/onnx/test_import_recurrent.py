"""GRU and LSTM over a fixed sequence (glc/onnx/recurrent.py, glc/ir/recurrent.py): a float
model's within float32 rounding of onnxruntime (its MLAS sigmoid, tanh and sgemm roundings are
not reproduced: docs/onnx.md, "Recurrent layers"); a quantized model's products after the GRU on
the array, equal to onnxruntime on the ISA simulator for these seeds; what is not supported, one
line each."""

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


def recurrent_model(kind: str, outputs, seed: int = 0, **attrs):
    """A GRU or LSTM of seeded weights over (SEQ, BATCH, WIDTH); ``outputs`` which of Y, Y_h
    the model returns (its one output) and, with a "head", Y_h reshaped into a MatMul."""
    rng = np.random.default_rng(seed)
    gates = 4 if kind == "LSTM" else 3
    inits = {"W": rng.normal(0, 0.4, (1, gates * HIDDEN, WIDTH)),
             "R": rng.normal(0, 0.4, (1, gates * HIDDEN, HIDDEN)),
             "B": rng.normal(0, 0.1, (1, 2 * gates * HIDDEN))}
    node = helper.make_node(kind, ["x", "W", "R", "B"], ["Y", "Yh"], hidden_size=HIDDEN, **attrs)
    nodes = [node]
    output = outputs
    if outputs == "head":
        nodes += [helper.make_node("Reshape", ["Yh", "rows"], ["h"]),
                  helper.make_node("MatMul", ["h", "w2"], ["y"])]
        inits |= {"rows": np.array([BATCH, HIDDEN], np.int64),
                  "w2": rng.normal(0, 0.3, (HIDDEN, 5))}
        output = "y"
    return float_model(nodes, [("x", [SEQ, BATCH, WIDTH])], (output, None), inits, opset=14)


CASES = [("GRU", {}), ("GRU", {"linear_before_reset": 1}), ("LSTM", {})]
IDS = ["gru", "gru-linear-before-reset", "lstm"]


@pytest.mark.parametrize("output", ["Y", "Yh"])
@pytest.mark.parametrize(("kind", "attrs"), CASES, ids=IDS)
def test_a_float_recurrent_layer_is_within_float_rounding(tmp_path, kind, attrs, output):
    path = tmp_path / "m.onnx"
    onnx.save(recurrent_model(kind, output, **attrs), path)
    result = import_model(path, tmp_path / "p")
    assert result.float_only and result.host_ops == [f"Y ({kind})"]
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    assert out.shape == bundle.expected.shape
    np.testing.assert_allclose(out, bundle.expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("form", ["QDQ", "QOperator"])
@pytest.mark.parametrize(("kind", "attrs"), CASES, ids=IDS)
def test_a_quantized_models_products_after_a_gru_run_on_the_array(tmp_path, kind, attrs, form):
    """onnxruntime's quantizer leaves the layer float; the MatMul after it is quantized, a
    kernel, and the int8 result equals onnxruntime's here (the float layer could, in general,
    differ from its by a rounding and move a value across a quantization step)."""
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
