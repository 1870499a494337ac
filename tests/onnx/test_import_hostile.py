"""Hostile and malformed models (issue 41, items 6, 9 and 17): each is one line naming the file
and, for a model, the node or tensor at fault, exit status 1, no traceback and no folder —
whether onnx, onnxruntime or glc finds the fault. Names the language would misread (keywords,
newlines, NULs, ``output``) import and run."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import float_model, onnx, weights
from onnx import TensorProto, helper, numpy_helper

from glc.cli import main
from glc.inputs import load
from glc.interp import interpret
from glc.onnx.zoo import quantize


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A QDQ conv + relu, as onnxruntime's quantizer writes it: nodes w_DequantizeLinear,
    x_QuantizeLinear, x_DequantizeLinear, c1 (Conv), z_QuantizeLinear, z_DequantizeLinear."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], name="c1"),
             helper.make_node("Relu", ["y"], ["z"], name="r1")]
    model = float_model(nodes, [("x", [1, 3, 8, 8])], ("z", None), {"w": weights(rng, 4, 3, 3, 3)})
    path = quantize(model, tmp_path_factory.mktemp("base") / "base.onnx")
    return onnx.load(path)


def _node(model, name):
    return next(n for n in model.graph.node if n.name == name)


def _set(model, name, array):
    initializer = next(i for i in model.graph.initializer if i.name == name)
    initializer.CopyFrom(numpy_helper.from_array(array, name))


def _rename(model, old, new):
    """Tensor ``old`` renamed ``new`` wherever the graph names it."""
    for node in model.graph.node:
        node.input[:] = [new if v == old else v for v in node.input]
        node.output[:] = [new if v == old else v for v in node.output]
    for value in [*model.graph.input, *model.graph.output]:
        if value.name == old:
            value.name = new


def _reorder(model):
    nodes = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes[::-1])


def _per_channel(model):
    _set(model, "w_scale", np.array([0.1, 0.2, 0.3], np.float32))
    _set(model, "w_zero_point", np.zeros(3, np.int8))
    _node(model, "w_DequantizeLinear").attribute.append(helper.make_attribute("axis", 0))


def _int16_zero_point(model):
    model.opset_import[0].version = 21  # int16 quantization is ONNX's from opset 21
    _set(model, "x_zero_point", np.array(0, np.int16))


def _dims(k, value):
    def edit(model):
        model.graph.input[0].type.tensor_type.shape.dim[k].dim_value = value
    return edit


# (case, edit of the base model, extra arguments, the line's message after "MODEL: error: ")
CASES = [
    ("opset 99", lambda m: setattr(m.opset_import[0], "version", 99), (),
     "the model uses opset 99; this onnx knows opsets up to"),
    ("opset 1", lambda m: setattr(m.opset_import[0], "version", 1), (),
     "invalid ONNX model: No Op registered for DequantizeLinear with domain_version of 1 ==> "
     "Context: Bad node spec for node. Name: w_DequantizeLinear"),
    ("ir_version 99", lambda m: setattr(m, "ir_version", 99), (),
     "invalid ONNX model: Your model ir_version 99 is higher than the checker's"),
    ("undeclared domain", lambda m: setattr(_node(m, "c1"), "domain", "foo.bar"), (),
     "invalid ONNX model: No opset import for domain 'foo.bar' ==> Context: Bad node spec for "
     "node. Name: c1 OpType: Conv"),
    ("duplicate node names", lambda m: setattr(_node(m, "z_QuantizeLinear"), "name", "c1"), (),
     "two nodes are named 'c1'"),
    ("float64 scale", lambda m: _set(m, "x_scale", np.array(0.02, np.float64)), (),
     "onnxruntime cannot load the model: This is an invalid model. Type Error: Type "
     "'tensor(double)' of input parameter (x_scale) of operator (QuantizeLinear) in node "
     "(x_QuantizeLinear) is invalid."),
    ("a declared dim of 0", _dims(2, 0), (),
     "input 'x' has dims (1,3,0,8); glc imports inputs whose every dim is positive"),
    ("a negative dim", _dims(2, -8), (),
     "input 'x' has dims (1,3,-8,8); glc imports inputs whose every dim is positive"),
    ("--input-shape overriding a fixed dim", lambda m: None, ("--input-shape", "x=1,3,9,9"),
     "--input-shape gives dim 2 of input 'x' as 9; the model fixes it at 8"),
    ("--input-shape of the wrong rank", lambda m: None, ("--input-shape", "x=1,3,8"),
     "--input-shape gives input 'x' 3 dims; the model gives it 4"),
    ("a dangling input", lambda m: _node(m, "c1").input.__setitem__(0, "nowhere"), (),
     "invalid ONNX model: Nodes in a graph must be topologically sorted, however input "
     "'nowhere' of node: name: c1 OpType: Conv is not output of any previous nodes."),
    ("a cycle", lambda m: _node(m, "x_DequantizeLinear").input.__setitem__(
        0, "z_QuantizeLinear_Output"), (),
     "invalid ONNX model: Nodes in a graph must be topologically sorted, however input "
     "'z_QuantizeLinear_Output' of node: name: x_DequantizeLinear"),
    ("nodes out of order", _reorder, (),
     "invalid ONNX model: Nodes in a graph must be topologically sorted"),
    ("an output naming no tensor", lambda m: setattr(m.graph.output[0], "name", "nothing"), (),
     "invalid ONNX model: Graph output 'nothing' is not an output of any node in graph."),
    ("an output naming an initializer", lambda m: setattr(m.graph.output[0], "name", "w_scale"),
     (), "output 'w_scale' is a constant, not computed by the model"),
    ("an input with no shape",
     lambda m: m.graph.input[0].type.tensor_type.ClearField("shape"), (),
     "input 'x' has no shape; give it with --input-shape x=1,3,224,224"),
    ("an initializer whose dims disagree with its data",
     lambda m: next(i for i in m.graph.initializer if i.name == "w_quantized").dims.__setitem__(
         0, 5), (),
     "invalid ONNX model: TensorProto (tensor name: w_quantized) raw_data size (108 bytes) is "
     "too small for the declared shape and type (135 bytes required)."),
    ("an int16 zero point", _int16_zero_point, (),
     "node 'x_QuantizeLinear' (QuantizeLinear): zero points of type int16 are not supported "
     "(int8 or uint8)"),
    ("per-channel scales of the wrong length", _per_channel, (),
     "onnxruntime cannot run the model: Non-zero status code returned while running "
     "QLinearConv node. Name:'c1_token_3' Status Message: IsValidQuantParam(W_scale, M) was "
     "false. QLinearConv : filter scale shape invalid"),
    ("per-channel zero points of the wrong length (a const method's signature dropped)",
     lambda m: _set(m, "w_zero_point", np.zeros(0, np.int8)), (),
     "onnxruntime cannot run the model: Non-zero status code returned while running "
     "QLinearConv node. Name:'c1_token_3' Status Message: IsValidQuantParam(W_zero_point, M) "
     "was false. QLinearConv : filter zero point shape invalid"),
    ("a string initializer", lambda m: _set(m, "w_scale", np.array(["a"], dtype=object)), (),
     "tensor 'w_scale' is of type object; glc reads numbers"),
    ("two outputs", lambda m: m.graph.output.append(copy.deepcopy(m.graph.output[0])), (),
     "the model has 2 outputs; glc imports one"),
    # item 6: scales that are not finite positive float32s, named by the node reading them
    ("a NaN scale", lambda m: _set(m, "x_scale", np.array(np.nan, np.float32)), (),
     "node 'x_QuantizeLinear' (QuantizeLinear): scale nan is not a finite positive float32"),
    ("an infinite scale", lambda m: _set(m, "z_scale", np.array(np.inf, np.float32)), (),
     "node 'c1' (Conv): scale inf is not a finite positive float32"),
    ("a zero scale", lambda m: _set(m, "w_scale", np.array(0, np.float32)), (),
     "node 'w_DequantizeLinear' (DequantizeLinear): scale 0.0 is not a finite positive "
     "float32"),
    ("a negative scale", lambda m: _set(m, "x_scale", np.array(-0.5, np.float32)), (),
     "node 'x_QuantizeLinear' (QuantizeLinear): scale -0.5 is not a finite positive float32"),
    ("a multiplier that overflows float32",
     lambda m: (_set(m, "x_scale", np.array(1e30, np.float32)),
                _set(m, "z_scale", np.array(1e-30, np.float32))), (),
     "node 'c1' (Conv): the requantization multiplier inf is not a finite positive float32"),
    # item 17: an error about a named node stays on its line
    ("a newline in a refused node's name",
     lambda m: (setattr(_node(m, "x_QuantizeLinear"), "name", "q\n1"),
                _set(m, "x_scale", np.array(np.nan, np.float32))), (),
     "node 'q\\x0a1' (QuantizeLinear): scale nan is not a finite positive float32"),
]


def _refused(tmp_path, model, args=()) -> str:
    path = tmp_path / "model.onnx"
    if isinstance(model, bytes):
        path.write_bytes(model)
    else:
        onnx.save(model, path)
    out = tmp_path / "program"
    result = CliRunner().invoke(main, ["import", str(path), "-o", str(out), *args])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert not out.exists()
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"{path}: error: "), lines[0]
    return lines[0].removeprefix(f"{path}: error: ")


@pytest.mark.parametrize("case,edit,args,message", CASES, ids=[c[0] for c in CASES])
def test_a_hostile_model_is_one_line_naming_the_file_and_node(base, tmp_path, case, edit, args,
                                                              message):
    model = copy.deepcopy(base)
    edit(model)
    assert _refused(tmp_path, model, args).startswith(message)


def test_an_empty_file_says_it_is_empty(tmp_path):
    assert _refused(tmp_path, b"") == "the file is empty, not an ONNX model"


def test_a_truncated_file_is_not_a_model(base, tmp_path):
    data = base.SerializeToString()
    assert _refused(tmp_path, data[:300]) == \
        "not an ONNX model (protobuf cannot decode it: DecodeError)"


def test_missing_external_data_names_the_data(base, tmp_path):
    from onnx.external_data_helper import convert_model_to_external_data

    model = copy.deepcopy(base)
    convert_model_to_external_data(model, location="weights.bin", size_threshold=0)
    onnx.save(model, tmp_path / "model.onnx")
    (tmp_path / "weights.bin").unlink()  # the model without the file that holds its weights
    line = _refused(tmp_path, (tmp_path / "model.onnx").read_bytes())
    assert line.startswith("cannot load the model's external data: Data of TensorProto ")
    assert "weights.bin" in line


def _imports_and_matches(tmp_path, model):
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    result = CliRunner().invoke(main, ["import", str(path), "-o", str(tmp_path / "program")])
    assert result.exit_code == 0, result.output
    bundle = load(tmp_path / "program")
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)
    return bundle


@pytest.mark.parametrize("name", ["shape", "compute", "define", "relu", "output"])
def test_a_tensor_named_as_a_word_of_the_language_or_output_imports(base, tmp_path, name):
    model = copy.deepcopy(base)
    _rename(model, "x", name)
    _rename(model, "z_QuantizeLinear_Input", name + "_")  # a define named after it too
    bundle = _imports_and_matches(tmp_path, model)
    # the input is saved under a name of its own, not as output.npy (onnxruntime's result)
    assert bundle.arrays[f"{name}_2"].dtype == np.float32
    assert bundle.expected.shape == (1, 4, 6, 6)


@pytest.mark.parametrize("name", ["c1\n(compute relu x)", "c\x001", "c\u2028" + "1"])
def test_a_node_name_with_a_newline_or_nul_stays_in_its_comment(base, tmp_path, name):
    model = copy.deepcopy(base)
    _node(model, "c1").name = name
    bundle = _imports_and_matches(tmp_path, model)
    text = (tmp_path / "program" / "model.gls").read_text()
    assert len(text.splitlines()) == text.count("\n")  # no line breaks but newlines
    comments = [line for line in text.split("\n") if "(Conv)" in line]
    assert len(comments) == 1 and comments[0].startswith("; node c")
    assert bundle.program.body is not None


def test_a_constant_concatenated_with_an_activation_imports(tmp_path):
    """A ViT's class token: a constant row placed before the tokens, then a MatMul."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Concat", ["cls", "x"], ["c"], axis=0, name="cat"),
             helper.make_node("MatMul", ["c", "w"], ["y"], name="mm")]
    model = float_model(nodes, [("x", [4, 8])], ("y", None),
                        {"cls": rng.normal(size=(1, 8)).astype(np.float32),
                         "w": weights(rng, 8, 6)})
    path = quantize(model, tmp_path / "vit.onnx")
    bundle = _imports_and_matches(tmp_path, onnx.load(path))
    assert bundle.expected.shape == (5, 6)


def test_int_input_is_refused_naming_it(base, tmp_path):
    model = copy.deepcopy(base)
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.INT32
    assert _refused(tmp_path, model) == ("input 'x' is int32; glc imports float32, int8, uint8 "
                                        "and int64 inputs")


def test_an_input_with_no_shape_imports_given_input_shape(base, tmp_path):
    model = copy.deepcopy(base)
    model.graph.input[0].type.tensor_type.ClearField("shape")
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    result = CliRunner().invoke(main, ["import", str(path), "-o", str(tmp_path / "program"),
                                       "--input-shape", "x=1,3,8,8"])
    assert result.exit_code == 0, result.output
    assert load(tmp_path / "program").arrays["x"].shape == (1, 3, 8, 8)


def test_a_name_that_is_not_utf8_is_one_line(base, tmp_path):
    """Found by the import fuzz: protobuf hands a string field holding invalid UTF-8 back as
    bytes, and the node's comment raised a TypeError."""
    data = bytearray(base.SerializeToString())
    at = data.find(b"z_DequantizeLinear")  # the first byte of a node's name
    data[at] = 0x80
    assert _refused(tmp_path, bytes(data)) == \
        "a name in the model is not UTF-8 text: b'\\x80_DequantizeLinear'"


def test_a_constant_s_zero_points_of_the_wrong_length_name_the_node(tmp_path):
    """Found by the import fuzz (data/bias-zero-points-empty.onnx: a QDQ MatMul + Add whose
    bias's zero point was replaced by an empty int8 array, which onnxruntime runs): numpy's
    broadcast ValueError escaped."""
    from pathlib import Path

    data = (Path(__file__).parent / "data" / "bias-zero-points-empty.onnx").read_bytes()
    assert _refused(tmp_path, data) == (
        "node 'b_DequantizeLinear' (DequantizeLinear): 0 scales or zero points for axis 1 of a "
        "tensor of dims (6): one, or one per channel")


def test_a_shape_the_generated_program_refuses_names_the_node(tmp_path):
    """A 2×2 pool over a map --input-shape makes one pixel high: onnxruntime runs it (an
    empty output), the generated program's shape check refuses the window — located at the
    ONNX node, not in the program the user never sees (found by the import fuzz)."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], name="c1"),
             helper.make_node("MaxPool", ["y"], ["z"], kernel_shape=[2, 2], strides=[2, 2],
                              name="pool")]
    model = float_model(nodes, [("x", [1, 4, 4, 6])], ("z", None),
                        {"w": weights(rng, 4, 4, 1, 1)})
    quantized = onnx.load(quantize(model, tmp_path / "q.onnx", form="QOperator"))
    for dim, name in zip(quantized.graph.input[0].type.tensor_type.shape.dim, "NCHW",
                         strict=True):
        dim.dim_param = name
    message = _refused(tmp_path, quantized, ("--input-shape", "x=1,4,1,6"))
    assert message.startswith("node pool (MaxPool): "), message
