"""MatMul of two activations (attention's Q·Kᵀ, then a product with V) against onnxruntime,
in both quantized forms and int8/uint8 (glc/onnx/matmul.py): bit for bit through the interpreter,
and once through ``glc run --engine isa``."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import float_model, imported, weights
from onnx import helper

from glc.cli import main

FORMS = [dict(), dict(activations="uint8"), dict(form="QOperator"),
         dict(activations="uint8", form="QOperator")]
FORM_IDS = ["int8", "uint8", "qoperator", "qoperator-uint8"]


def attention_model(rng, tokens=8, width=16):
    """q, k, v = x·W (+b); s = q·kᵀ; y = s·v: two products of activations."""
    nodes = [helper.make_node("Gemm", ["x", f"w{p}", f"b{p}"], [p]) for p in "qkv"]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
              helper.make_node("MatMul", ["q", "kt"], ["s"]),
              helper.make_node("MatMul", ["s", "v"], ["y"])]
    inits = {f"w{p}": weights(rng, width, width) for p in "qkv"}
    inits.update({f"b{p}": rng.normal(0, 0.3, width) for p in "qkv"})
    return float_model(nodes, [("x", [tokens, width])], ("y", None), inits)


@pytest.mark.parametrize("options", FORMS, ids=FORM_IDS)
def test_products_of_activations_match_onnxruntime(tmp_path, options):
    out, expected = imported(attention_model(np.random.default_rng(8)), tmp_path, **options)
    assert out.shape == expected.shape and np.array_equal(out, expected)


def test_products_of_activations_run_on_the_isa(tmp_path):
    from glc.onnx.zoo import quantize

    model = quantize(attention_model(np.random.default_rng(9)), tmp_path / "m.onnx",
                     form="QOperator")
    runner = CliRunner()
    folder = tmp_path / "program"
    assert runner.invoke(main, ["import", str(model), "-o", str(folder)]).exit_code == 0
    result = tmp_path / "r.npy"
    run = runner.invoke(main, ["run", str(folder), "--engine", "isa", "-o", str(result)])
    assert run.exit_code == 0, run.output
    assert np.array_equal(np.load(result), np.load(folder / "output.npy"))
