"""The residual add against onnxruntime on every pair of int8 (or uint8) operands: QLinearAdd and
a QDQ Add (which onnxruntime fuses into QLinearAdd) imported as ``add-linear``, whose contract
(docs/language.md) is onnxruntime's AVX2 kernel, two float32 FMAs. The dequantize-add-quantize
reading of the operator, which the import used before, differs from onnxruntime on a few pairs
in a million with calibrated scales (14 of 2.6 million over 40 random parameter sets), on
hundreds of pairs with decimal scales: the tests run the whole grid of pairs."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import onnx  # noqa: F401 (skips without the extra)
from onnx import TensorProto, helper, numpy_helper

from glc.inputs import load
from glc.interp import interpret
from glc.ir.quantized import add_linear, dequantize_linear, quantize_linear
from glc.onnx.importer import import_model, onnxruntime_output

PAIRS = 256 * 256
# (scale a, zero a, scale b, zero b, scale c, zero c) in int8 form; uint8 adds 128 to each zero.
# Each set tells the three readings apart on the grid (the kernel on int8 values, the kernel on
# uint8 values, dequantize-add-quantize): two calibration-like sets, where they differ on one or
# two pairs, and decimal scales whose sums fall on halves, where they differ on hundreds.
PARAMETERS = [(0.01289808563888073, -99, 0.01879148930311203, -1, 0.004462737124413252, 36),
              (0.00676427036523819, 67, 0.012778517790138721, 4, 0.022217370569705963, -23),
              (0.0015, 73, 0.003, 16, 0.04, -93)]


def _model(form: str, dtype, params) -> onnx.ModelProto:
    """Float inputs x and y quantized with the add's own operand parameters (as a quantizer
    writes a model: each QuantizeLinear and its DequantizeLinear alike), added, dequantized: the
    float output carries the add's integers exactly."""
    sa, za, sb, zb, sc, zc = params
    offset = 128 if dtype == np.uint8 else 0
    constants = {"sa": np.float32(sa), "za": np.array(za + offset, dtype), "sb": np.float32(sb),
                 "zb": np.array(zb + offset, dtype), "sc": np.float32(sc),
                 "zc": np.array(zc + offset, dtype)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "sa", "za"], ["xq"]),
             helper.make_node("QuantizeLinear", ["y", "sb", "zb"], ["yq"])]
    if form == "QOperator":
        nodes.append(helper.make_node("QLinearAdd", ["xq", "sa", "za", "yq", "sb", "zb", "sc",
                                                     "zc"], ["cq"], domain="com.microsoft"))
    else:
        nodes += [helper.make_node("DequantizeLinear", ["xq", "sa", "za"], ["xf"]),
                  helper.make_node("DequantizeLinear", ["yq", "sb", "zb"], ["yf"]),
                  helper.make_node("Add", ["xf", "yf"], ["s"]),
                  helper.make_node("QuantizeLinear", ["s", "sc", "zc"], ["cq"])]
    nodes.append(helper.make_node("DequantizeLinear", ["cq", "sc", "zc"], ["out"]))
    graph = helper.make_graph(
        nodes, "add", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, PAIRS])
                       for n in ("x", "y")],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, PAIRS])],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model


def _pairs() -> tuple[np.ndarray, np.ndarray]:
    """Every pair of int8 values (in int8 form: uint8 less 128)."""
    values = np.arange(-128, 128, dtype=np.int8)
    return np.repeat(values, 256)[None], np.tile(values, 256)[None]


def _feeds(params) -> dict[str, np.ndarray]:
    """Float inputs whose quantization is the grid of pairs."""
    sa, za, sb, zb, _, _ = params
    x, y = _pairs()
    return {"x": dequantize_linear(x, sa, za), "y": dequantize_linear(y, sb, zb)}


def _imported(tmp_path, model: onnx.ModelProto, params) -> tuple[str, np.ndarray, np.ndarray]:
    """The model saved, imported with the grid of pairs as its inputs and interpreted: the
    program's text, its result and onnxruntime's output."""
    path = tmp_path / "add.onnx"
    onnx.save(model, path)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for name, value in _feeds(params).items():
        np.save(inputs / f"{name}.npy", value)
    result = import_model(path, tmp_path / "program", inputs_dir=inputs)
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    return "".join(p.read_text() for p in result.folder.glob("*.gls")), out, bundle.expected


@pytest.mark.parametrize("params", PARAMETERS, ids=["calibrated", "calibrated-2", "ties"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("form", ["QOperator", "QDQ"])
def test_the_imported_add_equals_onnxruntime_on_every_pair(tmp_path, form, dtype, params):
    text, out, expected = _imported(tmp_path, _model(form, dtype, params), params)
    assert "(add-linear " in text
    assert np.array_equal(out, expected)


def _with_relu(model: onnx.ModelProto, op: str) -> onnx.ModelProto:
    """The QDQ model with a Relu (or Clip(0, ∞)) between the Add and its QuantizeLinear, as a
    residual block ends."""
    graph = model.graph
    quantize = next(n for n in graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "s")
    quantize.input[0] = "r"
    inputs = ["s"]
    if op == "Clip":
        graph.initializer.append(numpy_helper.from_array(np.array(0, np.float32), "zero"))
        inputs.append("zero")
    graph.node.insert(list(graph.node).index(quantize), helper.make_node(op, inputs, ["r"]))
    return model


@pytest.mark.parametrize("zero, fused", [(-128, True), (-100, False)], ids=["least", "other"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["int8", "uint8"])
@pytest.mark.parametrize("op", ["Relu", "Clip"])
def test_an_add_under_a_relu_the_quantization_makes_redundant_is_qlinearadd(tmp_path, op, dtype,
                                                                           zero, fused):
    """onnxruntime drops a Relu whose QuantizeLinear's zero point is the type's least value (it
    clamps there anyway) and fuses the Add into QLinearAdd; under any other zero point the Add
    and Relu stay float. The two readings differ on this grid (47 and 307 pairs), so each case
    tells which one the import chose."""
    params = (*PARAMETERS[-1][:5], zero)
    text, out, expected = _imported(tmp_path, _with_relu(_model("QDQ", dtype, params), op),
                                    params)
    assert ("(add-linear " in text) == fused
    assert np.array_equal(out, expected)


@pytest.mark.parametrize("relu", [False, True], ids=["sum", "sum-relu"])
def test_a_sum_stays_float_as_onnxruntime_leaves_it(tmp_path, relu):
    """onnxruntime fuses no Sum into QLinearAdd: it adds the dequantized values in float32
    (47 pairs of this grid differ from QLinearAdd's), so the import keeps the float reading."""
    params = (*PARAMETERS[-1][:5], -128)
    model = _model("QDQ", np.uint8, params)
    next(n for n in model.graph.node if n.op_type == "Add").op_type = "Sum"
    text, out, expected = _imported(tmp_path, _with_relu(model, "Relu") if relu else model,
                                    params)
    assert "(add-linear " not in text
    assert np.array_equal(out, expected)


def test_dequantize_add_quantize_is_not_onnxruntimes_add(tmp_path):
    """The reading the import used before, on the grid and the parameters where it differs from
    onnxruntime's kernel (so the test above can tell the two apart)."""
    sa, za, sb, zb, sc, zc = PARAMETERS[-1]
    path = tmp_path / "add.onnx"
    onnx.save(_model("QOperator", np.int8, PARAMETERS[-1]), path)
    expected = quantize_linear(onnxruntime_output(path, _feeds(PARAMETERS[-1])), sc, zc)
    x, y = _pairs()
    total = dequantize_linear(x, sa, za) + dequantize_linear(y, sb, zb)
    assert not np.array_equal(quantize_linear(total, sc, zc), expected)
    assert np.array_equal(add_linear(x, y, sa, za, sb, zb, sc, zc, 0), expected)


def test_an_add_onnxruntime_fuses_in_int8_rounds_in_int8(tmp_path):
    """A QDQ Add (int8, asymmetric) of two convs' results, each also read by a conv, whose sum
    two convs read (tests/onnx/data/qdq-int8-kept-add.onnx; 16 channels 16×16): onnxruntime
    keeps these Q/DQ pairs int8 (a Q that several DQs read is not turned into uint8) and fuses
    an int8 QLinearAdd, which rounds otherwise than the uint8 one the import assumed (offset
    128: 5 of 16 384 outputs a quantum off); now its type is read from the optimized graph
    (glc/onnx/fusions.py ``fused_offset``), as the pool's."""
    from pathlib import Path

    import onnx
    import onnxruntime as ort

    from glc.onnx.kernels import session_options

    path = Path(__file__).parent / "data" / "qdq-int8-kept-add.onnx"
    options = session_options(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    graph = onnx.load(options.optimized_model_filepath).graph
    int8 = {i.name for i in graph.initializer if i.data_type == onnx.TensorProto.INT8}
    (add,) = [n for n in graph.node if n.op_type == "QLinearAdd"]
    assert add.input[7] in int8  # fused, in int8
    bundle = load(import_model(path, tmp_path / "program").folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)
