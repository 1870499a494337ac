"""Mul and Add of an activation and a quantized constant (DenseNet's per-channel scale and shift
after each Concat) against onnxruntime on every pair of operand values. onnxruntime's x86
optimizer fuses a QDQ Mul/Add whose DequantizeLinear inputs and QuantizeLinear output have one
type (int8 activations count as uint8: it converts their pairs) into its integer QLinearMul /
QLinearAdd, which the import writes as that kernel's arithmetic (glc/onnx/binary.py); with an
int8 constant the node stays float, except on x86 without VNNI, where glc's exact-products
option (glc/onnx/kernels.py) has onnxruntime convert the constant to uint8 and fuse. The float
reading of the fused nodes, which the import used before, differs on hundreds of these pairs
(275 products, 536 sums), and QLinearAdd's operands are not symmetric: which one its kernel
takes first follows the broadcast (251 sums differ)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import onnx  # noqa: F401 (skips without the extra)
from onnx import TensorProto, helper, numpy_helper

from glc.inputs import load
from glc.interp import interpret
from glc.ir.quantized import dequantize_linear
from glc.onnx.importer import import_model

VALUES = 256
# (scale x, zero x, scale c, zero c, scale y, zero y), zero points in int8 form (uint8 adds 128):
# decimal scales whose products and sums fall near halves, where the readings differ.
PARAMETERS = {"Mul": (0.1, 3, 0.1, -7, 0.02, -100), "Add": (0.0015, 73, 0.003, 16, 0.04, -93)}


def _model(op: str, form: str, types: tuple[type, type], first: bool, axis: str):
    """x quantized with the node's own parameters, multiplied by (or added to) the quantized
    constant c (before x when ``first``; one value per channel, or per position of the last
    axis), requantized and dequantized: the float output carries the node's integers."""
    sx, zx, sc, zc, sy, zy = PARAMETERS[op]
    activation, constant = types
    offset = {np.uint8: 128, np.int8: 0}
    c = (np.arange(-128, 128) + offset[constant]).astype(constant)
    inits = {"c": c.reshape(VALUES, 1, 1) if axis == "channel" else c,
             "sx": np.float32(sx), "zx": np.array(zx + offset[activation], activation),
             "sc": np.float32(sc), "zc": np.array(zc + offset[constant], constant),
             "sy": np.float32(sy), "zy": np.array(zy + offset[activation], activation)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"])]
    if form == "QOperator":
        operands = [["xq", "sx", "zx"], ["c", "sc", "zc"]]
        nodes.append(helper.make_node(f"QLinear{op}", sum(operands[::-1] if first else operands,
                                                          []) + ["sy", "zy"], ["yq"],
                                      domain="com.microsoft"))
    else:
        operands = ["xf", "cf"]
        nodes += [helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xf"]),
                  helper.make_node("DequantizeLinear", ["c", "sc", "zc"], ["cf"]),
                  helper.make_node(op, operands[::-1] if first else operands, ["s"]),
                  helper.make_node("QuantizeLinear", ["s", "sy", "zy"], ["yq"])]
    nodes.append(helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"]))
    dims = [1, VALUES, 1, VALUES]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model


def _imported(tmp_path, model, op: str, axis: str):
    """Imported with the input whose quantization pairs every x with every c; the program's
    text, its result and onnxruntime's output."""
    sx, zx = PARAMETERS[op][:2]
    grid = np.arange(-128, 128, dtype=np.int8)
    # x varies along the axis c does not: each (x, c) pair once.
    x = np.broadcast_to(grid if axis == "channel" else grid[:, None], (VALUES, VALUES))
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    np.save(inputs / "x.npy", dequantize_linear(x.reshape(1, VALUES, 1, VALUES), sx, zx))
    result = import_model(path, tmp_path / "program", inputs_dir=inputs)
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    return (result.folder / "model.gls").read_text(), out, bundle.expected


CASES = [("QDQ", (np.uint8, np.uint8), True), ("QDQ", (np.int8, np.uint8), True),
         ("QDQ", (np.int8, np.int8), False), ("QOperator", (np.uint8, np.uint8), True),
         ("QOperator", (np.int8, np.int8), True)]


@pytest.mark.parametrize("axis", ["channel", "last"])
@pytest.mark.parametrize("first", [False, True], ids=["x-c", "c-x"])
@pytest.mark.parametrize("form,types,integer", CASES,
                         ids=["qdq-uint8", "qdq-int8-uint8-constant", "qdq-int8",
                              "qoperator-uint8", "qoperator-int8"])
@pytest.mark.parametrize("op", ["Mul", "Add"])
def test_a_product_or_sum_with_a_constant_equals_onnxruntime_on_every_pair(
        tmp_path, op, form, types, integer, first, axis):
    model = _model(op, form, types, first, axis)
    text, out, expected = _imported(tmp_path, model, op, axis)
    assert np.array_equal(out, expected)
    integer = integer or not _stays_float(model, op)
    if op == "Add":  # the integer kernel, or onnxruntime's float Add of an int8 constant
        assert ("(add-linear " in text) == integer
    else:
        assert ("(quantize-linear (compute elementwise-add" in text) == integer


def _stays_float(model, op: str) -> bool:
    """Whether onnxruntime, run as glc runs it, leaves the model's ``op`` float: its optimized
    graph still holds the node (the int8-constant case is host-dependent)."""
    import tempfile

    import onnxruntime as ort

    from glc.onnx.kernels import session_options

    with tempfile.TemporaryDirectory() as folder:
        optimized = f"{folder}/optimized.onnx"
        ort.InferenceSession(model.SerializeToString(), session_options(optimized),
                             providers=["CPUExecutionProvider"])
        return any(node.op_type == op for node in onnx.load(optimized).graph.node)
