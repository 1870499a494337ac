"""A bias initializer the model shares between a MatMul's Add and another Add (PyTorch's export
shares one for every zero bias: a transformers model before training has only those).
onnxruntime's static quantizer then writes it once, as a uint8 or int8 activation, and the Gemm
it folds the MatMul and Add into has no int32 bias: onnxruntime runs that Gemm in float, and so
does the import (``matmul-float``, glc/onnx/attention.py) — bit for bit on the ISA simulator."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, weights

from glc.errors import GlcError
from glc.inputs import load
from glc.onnx.importer import import_model
from glc.onnx.zoo import quantize

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402


def shared_zero_bias(tokens: int, width: int = 16, hidden: int = 32, seed: int = 0):
    """Two dense layers over (1, tokens, width), the second's bias zero and shared with an Add
    after it."""
    rng = np.random.default_rng(seed)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h"]),
        helper.make_node("Relu", ["h"], ["hr"]),
        helper.make_node("MatMul", ["hr", "w2"], ["y0"]),
        helper.make_node("Add", ["y0", "zero"], ["y1"]),
        helper.make_node("Relu", ["y1"], ["y2"]),
        helper.make_node("Add", ["zero", "y2"], ["y"]),
    ]
    return float_model(
        nodes,
        [("x", [1, tokens, width])],
        ("y", None),
        {
            "w1": weights(rng, width, hidden),
            "w2": weights(rng, hidden, width),
            "zero": np.zeros(width, np.float32),
            "b1": rng.normal(0, 0.1, hidden),
        },
        opset=17,
    )


FORMS = {
    "qdq-u8": dict(activations="uint8", per_channel=True),
    "qdq-s8": dict(activations="int8", symmetric=True),
}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(("tokens", "seed"), [(8, 0), (24, 1), (64, 2)])
def test_a_gemm_onnxruntime_leaves_float_is_exact_on_the_isa(tmp_path, form, tokens, seed):
    path = quantize(
        shared_zero_bias(tokens, seed=seed), tmp_path / "m.onnx", seed=seed, **FORMS[form]
    )
    biases = [i for i in onnx.load(str(path)).graph.initializer if i.name == "zero_quantized"]
    assert biases and biases[0].data_type != onnx.TensorProto.INT32  # the activation's codes
    result = import_model(path, tmp_path / "p", seed=seed)
    assert sum(op.endswith("(Gemm)") for op in result.host_ops) == 1  # the float one
    lowered = exact_on_the_isa(load(result.folder))
    assert lowered.figures()["kernels"] >= 1  # the other Gemm on the array


def test_its_qoperator_form_is_onnxruntimes_refusal_in_one_line(tmp_path):
    path = quantize(shared_zero_bias(8), tmp_path / "m.onnx", activations="uint8", form="QOperator")
    with pytest.raises(GlcError) as error:
        import_model(path, tmp_path / "p")
    assert "onnxruntime cannot load the model" in str(error.value)
    assert "\n" not in str(error.value)
