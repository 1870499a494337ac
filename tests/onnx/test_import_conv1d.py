"""Conv1d (glc/onnx/layers.py ``_qconv1d``): a keyword spotter's 1-d convolutions — pads,
strides, dilations, a depthwise one — as 2-d convolutions of a one-pixel-high image, exact
against onnxruntime on the interpreter and the ISA simulator, in each quantized form."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, quantize, weights

from glc.inputs import load
from glc.interp import interpret
from glc.onnx.importer import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

C, L = 12, 31


def _spotter(seed: int = 0):
    """conv1d k5 → relu → depthwise k3 /2 dilated → conv1d k1 → relu → conv1d k3 pads (2, 0)."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[2, 2]),
             helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("Conv", ["ar", "w2"], ["d"], group=16, strides=[2],
                              dilations=[2], pads=[2, 2]),
             helper.make_node("Conv", ["d", "w3"], ["p"]),
             helper.make_node("Relu", ["p"], ["pr"]),
             helper.make_node("Conv", ["pr", "w4"], ["y"], pads=[2, 0])]
    constants = {"w1": weights(rng, 16, C, 5), "b1": rng.normal(0, 0.1, 16),
                 "w2": weights(rng, 16, 1, 3), "w3": weights(rng, 24, 16, 1),
                 "w4": weights(rng, 8, 24, 3)}
    return float_model(nodes, [("x", (1, C, L))], ("y", (1, 8, 16)), constants)


FORMS = [("uint8", "QDQ"), ("int8", "QDQ"), ("uint8", "QOperator")]


@pytest.mark.parametrize(("activations", "form"), FORMS)
def test_a_keyword_spotter_is_exact_against_onnxruntime(tmp_path, activations, form):
    path = quantize(_spotter(), tmp_path / "m.onnx", activations=activations, form=form)
    bundle = load(import_model(path, tmp_path / "p").folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)
    exact_on_the_isa(bundle)


@pytest.mark.parametrize(("activations", "form"), FORMS)
def test_a_1d_global_average_pool_is_exact_against_onnxruntime(tmp_path, activations, form):
    """The spotter's head: a GlobalAveragePool over L (torch's AdaptiveAvgPool1d(1)); the model
    suite's keyword spotter was a traceback there (a 4-d unpacking of a 3-d input)."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[1, 1]),
             helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("GlobalAveragePool", ["ar"], ["y"])]
    constants = {"w1": weights(rng, 16, C, 3), "b1": rng.normal(0, 0.1, 16)}
    model = float_model(nodes, [("x", (1, C, L))], ("y", (1, 16, 1)), constants)
    path = quantize(model, tmp_path / "m.onnx", activations=activations, form=form)
    bundle = load(import_model(path, tmp_path / "p").folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)
    exact_on_the_isa(bundle)
