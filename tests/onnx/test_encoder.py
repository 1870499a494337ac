"""The zoo's transformer encoder layer (glc/onnx/zoo.py ``encoder_layer``), quantized by
onnxruntime in the QOperator form (QGemm, QLinearMatMul of activations, QLinearSoftmax,
QLinearAdd; LayerNormalization in float between DequantizeLinear and QuantizeLinear), through
``glc run --engine isa``: every int8 tensor equals onnxruntime's bit for bit, and so does the
float LayerNormalization that ends the layer (``layer-norm`` is MLAS's AVX2 kernel's arithmetic:
tests/ir/test_normalize.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.onnx.zoo import encoder_layer, quantize


def _run(tmp_path, model):
    runner = CliRunner()
    folder = tmp_path / "program"
    imported = runner.invoke(main, ["import", str(model), "-o", str(folder)])
    assert imported.exit_code == 0, imported.output
    result = tmp_path / "result.npy"
    run = runner.invoke(main, ["run", str(folder), "--engine", "isa", "-o", str(result),
                               "--json"])
    assert run.exit_code == 0, run.output
    figures = json.loads(run.output)
    assert figures["kernels"] > 0 and any("softmax-linear" in h for h in figures["host"])
    return np.load(result), np.load(folder / "output.npy")


@pytest.mark.parametrize("form,activations", [("QOperator", "int8"), ("QOperator", "uint8"),
                                              ("QDQ", "int8"), ("QDQ", "uint8")])
def test_encoder_layer_is_bit_exact_up_to_its_last_residual(tmp_path, form, activations):
    model = quantize(encoder_layer(seed=1, final_norm=False), tmp_path / "encoder.onnx",
                     form=form, activations=activations)
    out, expected = _run(tmp_path, model)
    assert out.shape == (8, 16) and np.array_equal(out, expected)


def test_encoder_layer_ending_in_layer_normalization_is_bit_exact(tmp_path):
    model = quantize(encoder_layer(seed=2), tmp_path / "encoder.onnx", form="QOperator")
    out, expected = _run(tmp_path, model)
    assert np.array_equal(out, expected)
