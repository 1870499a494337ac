"""AveragePool's import against onnxruntime (glc/onnx/pools.py): QDQ and QOperator, int8 and
uint8, pads, strides, ceil_mode and count_include_pad both ways, bit for bit through the
interpreter; one through ``glc run --engine isa``. A float GlobalAveragePool (glc/onnx/floats.py,
``global-average-pool``): a float model's, and a QOperator model's with symmetric int8
activations, on the ISA simulator."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, imported, quantize, weights
from onnx import helper

from glc.inputs import load
from glc.interp import interpret
from glc.onnx.importer import import_model

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
