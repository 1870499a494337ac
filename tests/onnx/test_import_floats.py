"""The float layers a quantized model keeps on the host (glc/onnx/floats.py): a standalone
BatchNormalization (DenseNet's pre-activation, after a Concat) and LRN, between onnxruntime's
DequantizeLinear and QuantizeLinear; Dropout as the identity. The imported program's int8 result
equals onnxruntime's bit for bit, and the float steps are listed as host ops."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from conftest import float_model, imported, weights
from onnx import helper

from glc.cli import main
from glc.onnx.zoo import quantize

FORMS = [dict(), dict(activations="uint8"), dict(per_channel=True), dict(form="QOperator")]
FORM_IDS = ["int8", "uint8", "per-channel", "qoperator"]


def _two_convs(rng):
    a = helper.make_node("Conv", ["x", "wa"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    b = helper.make_node("Conv", ["x", "wb"], ["b"], kernel_shape=[1, 1])
    return [a, b], {"wa": weights(rng, 6, 3, 3, 3), "wb": weights(rng, 5, 3, 1, 1)}


@pytest.mark.parametrize("options", FORMS, ids=FORM_IDS)
def test_densenet_batch_norm_relu_conv_matches_onnxruntime(tmp_path, options):
    rng = np.random.default_rng(11)
    convs, inits = _two_convs(rng)
    nodes = convs + [
        helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["d"],
                         epsilon=1e-5),
        helper.make_node("Relu", ["d"], ["e"]),
        helper.make_node("Conv", ["e", "w2"], ["y"], kernel_shape=[1, 1]),
    ]
    inits.update({"s": rng.uniform(0.5, 1.5, 11), "bb": rng.normal(0, 0.3, 11),
                  "m": rng.normal(0, 0.3, 11), "v": rng.uniform(0.5, 1.5, 11),
                  "w2": weights(rng, 4, 11, 1, 1)})
    out, expected = imported(float_model(nodes, [("x", [1, 3, 9, 9])], ("y", None), inits),
                             tmp_path, **options)
    assert np.array_equal(out, expected)
    assert "(BatchNormalization)" in (tmp_path / "program" / "model.gls").read_text()


@pytest.mark.parametrize("options", FORMS, ids=FORM_IDS)
@pytest.mark.parametrize("size,alpha,beta,bias", [(5, 1e-4, 0.75, 1.0), (3, 0.02, 0.5, 2.0),
                                                  (1, 0.5, 0.75, 1.5)])
def test_lrn_matches_onnxruntime(tmp_path, options, size, alpha, beta, bias):
    rng = np.random.default_rng(size)
    convs, inits = _two_convs(rng)
    nodes = [convs[0], helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("LRN", ["r"], ["n"], size=size, alpha=alpha, beta=beta, bias=bias),
             helper.make_node("Conv", ["n", "w2"], ["y"], kernel_shape=[1, 1])]
    inits = {"wa": inits["wa"], "w2": weights(rng, 4, 6, 1, 1)}
    out, expected = imported(float_model(nodes, [("x", [1, 3, 9, 9])], ("y", None), inits),
                             tmp_path, **options)
    assert np.array_equal(out, expected)


def test_dropout_is_the_identity(tmp_path):
    rng = np.random.default_rng(2)
    convs, inits = _two_convs(rng)
    nodes = [convs[0], helper.make_node("Dropout", ["a", "ratio"], ["d"]),
             helper.make_node("Relu", ["d"], ["y"])]
    out, expected = imported(float_model(nodes, [("x", [1, 3, 9, 9])], ("y", None),
                                         {"wa": inits["wa"], "ratio": np.array(0.5)}), tmp_path)
    assert np.array_equal(out, expected) and np.any(out != 0)


@pytest.mark.parametrize("options", FORMS, ids=FORM_IDS)
def test_scale_and_shift_by_constants_match_onnxruntime(tmp_path, options):
    # DenseNet's light model spells a BatchNormalization after a Concat as a Mul and an Add of
    # (C, 1, 1) constants (after a Concat no conv can absorb them): onnxruntime's QLinearMul and
    # QLinearAdd (uint8, QOperator) or float ones (int8 QDQ). The Add's constant comes first, to
    # keep the operands' order (every pair of values: tests/onnx/test_import_binary.py).
    rng = np.random.default_rng(4)
    convs, inits = _two_convs(rng)
    nodes = convs + [helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
                     helper.make_node("Mul", ["c", "scale"], ["m"]),
                     helper.make_node("Add", ["shift", "m"], ["s"]),
                     helper.make_node("Relu", ["s"], ["r"]),
                     helper.make_node("Conv", ["r", "w2"], ["y"], kernel_shape=[1, 1])]
    inits.update({"scale": rng.uniform(0.5, 1.5, (11, 1, 1)),
                  "shift": rng.normal(0, 0.3, (11, 1, 1)), "w2": weights(rng, 4, 11, 1, 1)})
    out, expected = imported(float_model(nodes, [("x", [1, 3, 9, 9])], ("y", None), inits),
                             tmp_path, **options)
    assert np.array_equal(out, expected)
    text = (tmp_path / "program" / "model.gls").read_text()
    assert "Mul)" in text and "Add)" in text


def _pool_and_add():
    return [helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                             name="pool"),
            helper.make_node("Add", ["p", "p"], ["y"], name="add")]


def test_a_float_only_model_imports_with_a_note_that_it_runs_on_the_host(tmp_path):
    # Issue 41 item 15: a model with no quantized layer imported silently, and every step ran
    # in numpy ("kernels 0").
    model = float_model(_pool_and_add(), [("x", [1, 4, 6, 6])], ("y", None), {})
    onnx.save(model, tmp_path / "float.onnx")
    runner = CliRunner()
    done = runner.invoke(main, ["import", str(tmp_path / "float.onnx"), "-o",
                                str(tmp_path / "program")])
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("wrote ")
    assert done.stderr.startswith("note: the model computes in float only: every step will "
                                  "run on the host")
    ran = runner.invoke(main, ["run", str(tmp_path / "program"), "--engine", "isa", "--json"])
    assert ran.exit_code == 0, ran.output
    assert json.loads(ran.stdout)["kernels"] == 0


def test_a_quantized_model_imports_with_no_such_note(tmp_path):
    model = float_model(_pool_and_add(), [("x", [1, 4, 6, 6])], ("y", None), {})
    done = CliRunner().invoke(main, ["import", str(quantize(model, tmp_path / "q.onnx")), "-o",
                                     str(tmp_path / "program")])
    assert done.exit_code == 0, done.output
    assert "float only" not in done.stderr
