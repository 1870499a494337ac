"""AveragePool's import against onnxruntime (glc/onnx/pools.py): QDQ and QOperator, int8 and
uint8, pads, strides, ceil_mode and count_include_pad both ways, bit for bit through the
interpreter; one through ``glc run --engine isa``. A float GlobalAveragePool (glc/onnx/floats.py,
``global-average-pool``): a float model's, and a QOperator model's with symmetric int8
activations, on the ISA simulator."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, imported, imported_float, quantize, weights
from onnx import helper

from glc.errors import GlcError
from glc.inputs import load
from glc.interp import interpret
from glc.onnx.importer import import_model

DATA = Path(__file__).parent / "data"
FORMS = [dict(), dict(activations="uint8"), dict(form="QOperator"),
         dict(activations="uint8", form="QOperator")]
FORM_IDS = ["int8", "uint8", "qoperator", "qoperator-uint8"]
POOLS = {  # kernel, strides, pads, ceil_mode
    "3x3-s2-pads": ([3, 3], [2, 2], [1, 0, 1, 1], 0),
    "2x2-s2": ([2, 2], [2, 2], [0, 0, 0, 0], 0),
    "3x3-s1-pads": ([3, 3], [1, 1], [1, 1, 1, 1], 0),
    "3x2-s2-ceil": ([3, 2], [2, 2], [0, 1, 0, 0], 1),
    "whole-map": ([9, 10], [1, 1], [0, 0, 0, 0], 0),
}


def average_pool_model(rng, pool: str, include_pad: int):
    kernel, strides, pads, ceil = POOLS[pool]
    conv = helper.make_node("Conv", ["x", "w"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    node = helper.make_node("AveragePool", ["a"], ["y"], kernel_shape=kernel, strides=strides,
                            pads=pads, ceil_mode=ceil, count_include_pad=include_pad)
    return float_model([conv, node], [("x", [1, 3, 9, 10])], ("y", None),
                       {"w": weights(rng, 8, 3, 3, 3)})


@pytest.mark.parametrize("options", FORMS, ids=FORM_IDS)
@pytest.mark.parametrize("include_pad", [0, 1], ids=["exclude-pad", "include-pad"])
@pytest.mark.parametrize("pool", sorted(POOLS))
def test_average_pool_import_matches_onnxruntime(tmp_path, options, include_pad, pool):
    rng = np.random.default_rng(len(pool) + include_pad)
    out, expected = imported(average_pool_model(rng, pool, include_pad), tmp_path, **options)
    assert out.shape == expected.shape and np.array_equal(out, expected)


MAPS = [(1, 3), (2, 2), (3, 3), (5, 7), (9, 10), (13, 17), (24, 24)]


@pytest.mark.parametrize("channels", [64, 12])
@pytest.mark.parametrize(("h", "w"), MAPS)
def test_a_float_global_average_pool_is_onnxruntimes_sum(tmp_path, h, w, channels):
    """A float model's pool over maps whose float32 sums round (numpy's pairwise mean differs
    from onnxruntime on most channels of the larger maps), bit for bit: 64 channels take
    onnxruntime's NCHWc kernel, 12 (no multiple of its block) MLAS's NCHW one."""
    node = helper.make_node("GlobalAveragePool", ["x"], ["y"])
    model = float_model([node], [("x", [1, channels, h, w])], ("y", None), {})
    onnx = pytest.importorskip("onnx")
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    bundle = load(import_model(path, tmp_path / "p").folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    assert out.shape == bundle.expected.shape == (1, channels, 1, 1)
    np.testing.assert_array_equal(out, bundle.expected)


@pytest.mark.parametrize("head", ["gemm", "pool"])
@pytest.mark.parametrize(("h", "w"), [(9, 10), (13, 17)])
def test_a_global_pool_after_a_float_relu_is_exact_on_the_isa(tmp_path, head, h, w):
    """QOperator with symmetric int8 activations: onnxruntime keeps the Relu before the head
    float, and the GlobalAveragePool after it (a float pool: once refused)."""
    rng = np.random.default_rng(h * w)
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"], kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f" if head == "gemm" else "y"])]
    inits = {"w": weights(rng, 16, 3, 3, 3)}
    if head == "gemm":
        nodes.append(helper.make_node("Gemm", ["f", "wg"], ["y"], transB=1))
        inits["wg"] = weights(rng, 5, 16)
    model = float_model(nodes, [("x", [1, 3, h, w])], ("y", None), inits)
    path = quantize(model, tmp_path / "m.onnx", form="QOperator", symmetric=True)
    result = import_model(path, tmp_path / "p")
    assert any("(GlobalAveragePool)" in op for op in result.host_ops)
    exact_on_the_isa(load(result.folder))


def reduce_mean(keepdims: int, opset: int, axes=(2, 3)):
    """ReduceMean over ``axes``: an attribute before opset 18, an input from it."""
    if opset < 18:
        return helper.make_node("ReduceMean", ["r"], ["m"], axes=list(axes), keepdims=keepdims), {}
    return (helper.make_node("ReduceMean", ["r", "axes"], ["m"], keepdims=keepdims),
            {"axes": np.array(axes, np.int64)})


@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize(("n", "channels"), [(1, 12), (2, 7)])
@pytest.mark.parametrize(("h", "w"), MAPS)
def test_a_float_reduce_mean_over_the_map_is_onnxruntimes_sum(tmp_path, h, w, n, channels,
                                                              keepdims):
    """``x.mean([2, 3])`` of a float model over maps whose float32 sums round, bit for bit:
    Eigen's packets start at each map's first 16-byte-aligned element, which moves with the
    map's place in the buffer (7 channels of an odd-sized map start at every offset)."""
    node, inits = reduce_mean(keepdims, 17)
    node.input[0] = "x"
    node.output[0] = "y"
    model = float_model([node], [("x", [n, channels, h, w])], ("y", None), inits, opset=17)
    onnx = pytest.importorskip("onnx")
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    bundle = load(import_model(path, tmp_path / "p").folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    assert out.shape == bundle.expected.shape == ((n, channels, 1, 1) if keepdims
                                                  else (n, channels))
    np.testing.assert_array_equal(out, bundle.expected)


def reduce_mean_head(rng, h: int, w: int, keepdims: int, opset: int):
    """A conv, a Relu and torchvision's ``x.mean([2, 3])`` (MnasNet's and ShuffleNetV2's
    head), then a linear layer."""
    mean, inits = reduce_mean(keepdims, opset)
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"], kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Relu", ["a"], ["r"]), mean]
    if keepdims:
        nodes.append(helper.make_node("Flatten", ["m"], ["f"]))
    nodes.append(helper.make_node("Gemm", ["f" if keepdims else "m", "wg"], ["y"], transB=1))
    inits.update({"w": weights(rng, 24, 3, 3, 3), "wg": weights(rng, 5, 24)})
    return float_model(nodes, [("x", [1, 3, h, w])], ("y", None), inits, opset=opset)


@pytest.mark.parametrize("options", FORMS + [dict(symmetric=True)],
                         ids=FORM_IDS + ["int8-symmetric"])
@pytest.mark.parametrize(("keepdims", "opset"), [(0, 17), (1, 13), (0, 18)])
def test_a_quantized_reduce_mean_head_matches_onnxruntime(tmp_path, options, keepdims, opset):
    """DequantizeLinear → ReduceMean → QuantizeLinear, as onnxruntime's quantizer writes the
    head in every form: bit for bit through the interpreter, the mean a named host step."""
    rng = np.random.default_rng(keepdims + opset)
    model = reduce_mean_head(rng, 9, 11, keepdims, opset)
    path = quantize(model, tmp_path / "m.onnx", **options)
    result = import_model(path, tmp_path / "p")
    assert any("(ReduceMean)" in op for op in result.host_ops)
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    assert out.shape == bundle.expected.shape and np.array_equal(out, bundle.expected)


def test_a_reduce_mean_head_is_exact_on_the_isa(tmp_path):
    rng = np.random.default_rng(5)
    path = quantize(reduce_mean_head(rng, 13, 17, 0, 17), tmp_path / "m.onnx",
                    activations="uint8", per_channel=True)
    exact_on_the_isa(load(import_model(path, tmp_path / "p").folder))


@pytest.mark.parametrize(("axes", "dims"), [((1,), "(1,12,5,5)"), ((2,), "(1,12,5,5)"),
                                            ((3, 2, 1), "(1,12,5,5)")])
def test_a_reduce_mean_over_other_axes_is_refused_in_one_line(tmp_path, axes, dims):
    node = helper.make_node("ReduceMean", ["x"], ["y"], axes=list(axes), keepdims=1)
    model = float_model([node], [("x", [1, 12, 5, 5])], ("y", None), {}, opset=17)
    onnx = pytest.importorskip("onnx")
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(GlcError, match=r"\(ReduceMean\): only a mean over every spatial axis "
                                       r"\(2, 3\) of an \(N, C, spatial...\) tensor is "
                                       r"supported, got axes \[.*\] of dims " + re.escape(dims)):
        import_model(path, tmp_path / "p")


@pytest.mark.parametrize("channels", [12, 16])
@pytest.mark.parametrize("include_pad", [0, 1], ids=["exclude-pad", "include-pad"])
@pytest.mark.parametrize("pool", sorted(POOLS) + ["5x5-s3-ceil", "3x3-s3-pads"])
def test_a_float_average_pool_is_onnxruntimes(tmp_path, pool, include_pad, channels):
    """A float model's AveragePool, bit for bit, in each of onnxruntime's kernels: 16
    channels its NCHWc pool, 12 MLAS's vectorized pool (a width stride up to 2: each window's
    columns summed first, then the columns) or its generic one (stride 3: row by row), and
    under ceil_mode with count_include_pad its own (row by row, the window's part inside the
    padded image)."""
    kernel, strides, pads, ceil = {**POOLS, "5x5-s3-ceil": ([5, 5], [3, 3], [2, 2, 2, 2], 1),
                                   "3x3-s3-pads": ([3, 3], [3, 3], [1, 1, 1, 1], 0)}[pool]
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=kernel, strides=strides,
                            pads=pads, ceil_mode=ceil, count_include_pad=include_pad)
    model = float_model([node], [("x", [2, channels, 9, 10])], ("y", None), {})
    result, out, expected = imported_float(model, tmp_path)
    assert result.host_ops == ["y (AveragePool)"]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("name", ["qdq-int8-unfused-average-pool",
                                  "qdq-int8-unfused-average-pool-nchwc"])
def test_an_average_pool_onnxruntime_leaves_float_is_its_float_kernel(tmp_path, name):
    """A QDQ AveragePool with symmetric int8 activations whose output is read by a conv and by
    an Add (tests/onnx/data: conv 1×1 → AveragePool → conv 1×1 + the pool; scripts/netgen.py's
    seed 7103 cut down): onnxruntime's optimizer turns the pool's input pair into uint8 but not
    its output pair, so it does not fuse QLinearAveragePool and runs the float AveragePool on
    the dequantized values — with 16 channels as its NCHWc kernel. The import read every QDQ
    AveragePool as QLinearAveragePool (2 of 18 outputs a quantum off for 2 channels 4×4 and a
    2×2 pool; 177 of 2 304 for 16 channels 12×12 and a 3×3 pool padded by 1); it now asks
    onnxruntime's optimized graph, bit for bit, on the ISA simulator too."""
    import onnx
    import onnxruntime as ort

    from glc.onnx.kernels import session_options

    path = DATA / f"{name}.onnx"
    options = session_options(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    kept = [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]
    assert "AveragePool" in kept and "QLinearAveragePool" not in kept  # still float
    result = import_model(path, tmp_path / "program")
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)
    assert result.host_ops == ["p (AveragePool)"]  # the float kernel's order, on the host
    exact_on_the_isa(bundle)


def test_an_average_pool_onnxruntime_fuses_in_int8_rounds_in_int8(tmp_path):
    """A QDQ AveragePool (int8, asymmetric) whose input and output are each read by two nodes
    (tests/onnx/data/qdq-int8-kept-average-pool.onnx: conv 3×3 → AveragePool 2×2/2 → conv 1×1,
    the conv's result also read by a strided conv, the pool's by an Add; 8 channels 8×8):
    onnxruntime's x86 optimizer turns only Q/DQ pairs whose Q one DQ reads into uint8, so it
    fuses this pool into an int8 QLinearAveragePool, whose rint(a + zero) rounds in int8. The
    import took every fused QDQ pool for uint8's (offset 128): 15 of 128 outputs a quantum
    off, as netgen's seed 21163 (of 63fa842, counted float-reference) was in 39 of 644 of its
    pool's codes; it now reads the fused kernel's type from the optimized graph
    (glc/onnx/fusions.py ``fused_offset``). Bit for bit, on the ISA simulator too."""
    import onnx
    import onnxruntime as ort

    from glc.onnx.kernels import session_options

    path = DATA / "qdq-int8-kept-average-pool.onnx"
    options = session_options(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    graph = onnx.load(options.optimized_model_filepath).graph
    int8 = {i.name for i in graph.initializer if i.data_type == onnx.TensorProto.INT8}
    (pool,) = [n for n in graph.node if n.op_type == "QLinearAveragePool"]
    assert pool.input[4] in int8  # fused, in int8
    bundle = load(import_model(path, tmp_path / "program").folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)
    exact_on_the_isa(bundle)


def test_a_global_pool_onnxruntime_leaves_float_is_its_float_kernel(tmp_path):
    """The same shape of graph with a GlobalAveragePool (conv 1×1 → pool → conv 1×1 + the
    pool, QDQ symmetric int8): onnxruntime runs the pool in float, and the import follows it
    (``global-average-pool``, its summation order) rather than the integer pool. The integer
    reading gave the same codes on every map tried (up to 128 channels of 28×28), but it is
    another function — a float sum of rounded values is not the exact sum rescaled — so only
    the float kernel is onnxruntime's by construction."""
    import onnx
    import onnxruntime as ort

    from glc.onnx.kernels import session_options

    rng = np.random.default_rng(0)
    init = {"w1": weights(rng, 16, 3, 1, 1), "b1": rng.normal(0, .1, 16).astype(np.float32),
            "w2": weights(rng, 16, 16, 1, 1), "b2": rng.normal(0, .1, 16).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], kernel_shape=[1, 1]),
             helper.make_node("GlobalAveragePool", ["c"], ["p"]),
             helper.make_node("Conv", ["p", "w2", "b2"], ["d"], kernel_shape=[1, 1]),
             helper.make_node("Add", ["d", "p"], ["y"])]
    model = float_model(nodes, [("x", [1, 3, 12, 12])], ("y", [1, 16, 1, 1]), init)
    path = quantize(model, tmp_path / "m.onnx", activations="int8", symmetric=True)
    options = session_options(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    kept = [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]
    assert "GlobalAveragePool" in kept  # float in onnxruntime
    result = import_model(path, tmp_path / "program")
    assert result.host_ops == ["p (GlobalAveragePool)"]
    exact_on_the_isa(load(result.folder))
