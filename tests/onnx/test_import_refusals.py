"""Each refusal of ``glc import``: one line naming the node, its op and what is unsupported,
exit status 1, and no folder written."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import float_model, weights
from onnx import helper

from glc.cli import main
from glc.onnx.zoo import quantize


def _conv_then(rng, extra, **conv):
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], **conv)
    return [node, *extra], {"w": weights(rng, 4, 3, 3, 3)}


def _refusal(tmp_path, model, quantized=True, args=()):
    path = tmp_path / "model.onnx"
    if quantized:
        quantize(model, path)
    else:
        import onnx

        onnx.save(model, path)
    out = tmp_path / "program"
    result = CliRunner().invoke(main, ["import", str(path), "-o", str(out), *args])
    assert result.exit_code == 1
    assert not out.exists()
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


def test_unsupported_op_names_node_and_op(tmp_path):
    rng = np.random.default_rng(0)
    nodes, inits = _conv_then(rng, [helper.make_node("Hardmax", ["y"], ["z"], name="hm1")])
    line = _refusal(tmp_path, float_model(nodes, [("x", [1, 3, 8, 8])], ("z", None), inits))
    assert "node 'hm1' (Hardmax): this operator is not supported" in line


def test_a_float_op_of_the_float_input_names_why(tmp_path):
    """An Exp of the model's float input has no codes to make a table of, and no float kernel
    of onnxruntime's here (scripts/netgen.py's seed 4260 found this with a Tanh, a float host
    step now: tests/onnx/test_import_sigmoid.py)."""
    rng = np.random.default_rng(0)
    nodes, inits = _conv_then(rng, [])
    nodes[0].input[0] = "t"
    nodes.insert(0, helper.make_node("Exp", ["x"], ["t"], name="exp1"))
    line = _refusal(tmp_path, float_model(nodes, [("x", [1, 3, 8, 8])], ("y", None), inits))
    assert ("node 'exp1' (Exp): a float Exp is supported only as a table of quantized "
            "codes (of a DequantizeLinear's input)") in line


def test_a_float_leaky_relu_with_a_negative_alpha_names_why(tmp_path):
    """Of the model's float input (a quantizer would make it a table of codes)."""
    nodes = [helper.make_node("LeakyRelu", ["x"], ["y"], name="lr1", alpha=-0.5)]
    line = _refusal(tmp_path, float_model(nodes, [("x", [1, 3, 8, 8])], ("y", None), {}),
                    quantized=False)
    assert ("node 'lr1' (LeakyRelu): a float LeakyRelu with a negative alpha (-0.5) is not "
            "supported") in line


def test_unsupported_attribute_names_it(tmp_path):
    rng = np.random.default_rng(0)
    nodes, inits = _conv_then(rng, [], auto_pad="SAME_UPPER")
    nodes[0].name = "c1"
    line = _refusal(tmp_path, float_model(nodes, [("x", [1, 3, 8, 8])], ("y", None), inits))
    assert "node 'c1' (Conv): attribute auto_pad is not supported" in line


def test_float_model_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    nodes, inits = _conv_then(rng, [])
    nodes[0].name = "c1"
    model = float_model(nodes, [("x", [1, 3, 8, 8])], ("y", None), inits)
    line = _refusal(tmp_path, model, quantized=False)
    assert "node 'c1' (Conv): a float convolution is not supported" in line


def test_average_pool_with_auto_pad_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    nodes, inits = _conv_then(rng, [helper.make_node(
        "AveragePool", ["y"], ["z"], name="pool1", kernel_shape=[2, 2], auto_pad="SAME_UPPER")])
    line = _refusal(tmp_path, float_model(nodes, [("x", [1, 3, 8, 8])], ("z", None), inits))
    assert "node 'pool1' (AveragePool): attribute auto_pad is not supported (give pads)" in line


@pytest.mark.parametrize("shape,message", [
    ("x=1,3", "--input-shape needs NAME=d0,d1,... with positive dims, got 'x=1,3,'"),
    ("nope=1,3,8,8", "--input-shape names no input of the model: nope"),
])
def test_bad_input_shape_option(tmp_path, shape, message):
    rng = np.random.default_rng(0)
    nodes, inits = _conv_then(rng, [])
    model = float_model(nodes, [("x", [1, 3, 8, 8])], ("y", None), inits)
    bad = shape if "nope" in shape else shape + ","
    assert message in _refusal(tmp_path, model, args=("--input-shape", bad))


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "model.onnx"
    path.write_text("hello")
    result = CliRunner().invoke(main, ["import", str(path), "-o", str(tmp_path / "p")])
    assert result.exit_code == 1
    assert result.output.strip() == (f"{path}: error: not an ONNX model (protobuf cannot "
                                     "decode it: DecodeError)")
