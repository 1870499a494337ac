"""Products of two activations (glc/onnx/binary.py ``_product``, glc/onnx/floats.py): an SE
block's gate (the map times a sigmoid of its pooled channels, broadcast over the pixels) and a
gating product of two convs, exact against onnxruntime — its fused QLinearMul, or its float Mul
where it does not fuse — on the interpreter and the ISA simulator, in every quantized form."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, quantize, weights

from glc.inputs import load
from glc.interp import interpret
from glc.onnx.importer import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

C, H, W = 16, 6, 7


def _se(seed: int):
    """conv → a; a · sigmoid(conv1x1(relu(conv1x1(gap(a))))) → conv: squeeze-and-excitation."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["a"], ["s"]),
             helper.make_node("Conv", ["s", "w2", "b2"], ["e"]),
             helper.make_node("Relu", ["e"], ["er"]),
             helper.make_node("Conv", ["er", "w3", "b3"], ["g"]),
             helper.make_node("Sigmoid", ["g"], ["gs"]),
             helper.make_node("Mul", ["a", "gs"], ["m"]),
             helper.make_node("Conv", ["m", "w4"], ["y"])]
    constants = {"w1": weights(rng, C, C, 3, 3), "w2": weights(rng, 4, C, 1, 1),
                 "b2": rng.normal(0, 0.1, 4), "w3": weights(rng, C, 4, 1, 1),
                 "b3": rng.normal(0, 0.1, C), "w4": weights(rng, C, C, 1, 1)}
    return float_model(nodes, [("x", (1, C, H, W))], ("y", (1, C, H, W)), constants)


def _gated(seed: int):
    """conv(x) · conv(x) → conv: a product of two maps of one size."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["x", "w2"], ["b"]),
             helper.make_node("Mul", ["b", "a"], ["m"]),
             helper.make_node("Conv", ["m", "w3"], ["y"])]
    constants = {"w1": weights(rng, C, C, 3, 3), "w2": weights(rng, C, C, 1, 1),
                 "w3": weights(rng, C, C, 1, 1)}
    return float_model(nodes, [("x", (1, C, H, W))], ("y", (1, C, H, W)), constants)


FORMS = [("uint8", "QDQ"), ("int8", "QDQ"), ("uint8", "QOperator"), ("int8", "QOperator")]


@pytest.mark.parametrize("model", [_se, _gated])
@pytest.mark.parametrize(("activations", "form"), FORMS)
@pytest.mark.parametrize("seed", [0, 1])
def test_a_product_of_two_activations_is_exact_against_onnxruntime(tmp_path, model, activations,
                                                                    form, seed):
    path = quantize(model(seed), tmp_path / "m.onnx", activations=activations, form=form)
    bundle = load(import_model(path, tmp_path / "p").folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)


@pytest.mark.parametrize(("activations", "form"), FORMS[:3])
def test_an_se_block_runs_with_its_convs_on_the_accelerator(tmp_path, activations, form):
    path = quantize(_se(2), tmp_path / "m.onnx", activations=activations, form=form)
    bundle = load(import_model(path, tmp_path / "p").folder)
    exact_on_the_isa(bundle)


@pytest.mark.parametrize(("model", "fused"), [(_se, False), (_gated, True)])
def test_the_import_asks_onnxruntime_whether_it_fuses_the_product(tmp_path, model, fused):
    """With int8 activations onnxruntime fuses a product of two convs into QLinearMul but
    leaves an SE block's gate a float Mul (its optimized graph, measured); the two round
    differently, and the import writes the one onnxruntime runs."""
    path = quantize(model(0), tmp_path / "m.onnx", activations="int8", form="QDQ")
    text = import_model(path, tmp_path / "p").program.read_text()
    assert ("(input m_zero " in text) == fused  # the kernel's zero point, added before rounding
