"""Each operator's import against onnxruntime on small random graphs: the imported program's
result (the interpreter) equals onnxruntime's output bit for bit, over shapes, strides, pads,
groups, zero points (int8 and uint8 activations), per-channel scales and both quantized forms."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import float_model, imported, weights
from onnx import helper

FORMS = [dict(), dict(activations="uint8"), dict(per_channel=True), dict(form="QOperator"),
         dict(activations="uint8", form="QOperator", per_channel=True)]
FORM_IDS = ["int8", "uint8", "per-channel", "qoperator", "qoperator-uint8-per-channel"]


@pytest.mark.parametrize("options", FORMS, ids=FORM_IDS)
@pytest.mark.parametrize("c,o,k,stride,pads,group,dilation", [
    (3, 8, 3, 1, [1, 1, 1, 1], 1, 1),
    (4, 6, 3, 2, [0, 1, 2, 0], 1, 1),
    (6, 6, 3, 1, [1, 1, 1, 1], 6, 1),      # depthwise
    (6, 9, 1, 1, [0, 0, 0, 0], 3, 1),      # grouped 1x1
    (4, 5, 3, 1, [2, 2, 2, 2], 1, 2),      # dilated
    (3, 4, 5, 3, [2, 1, 2, 1], 1, 1),
])
def test_conv_import_matches_onnxruntime(tmp_path, options, c, o, k, stride, pads, group,
                                         dilation):
    rng = np.random.default_rng(c * 7 + o + k)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k],
                            strides=[stride, stride], pads=pads, group=group,
                            dilations=[dilation, dilation])
    relu = helper.make_node("Relu", ["y"], ["z"])
    model = float_model([node, relu], [("x", [1, c, 11, 11])], ("z", None),
                        {"w": weights(rng, o, c // group, k, k),
                         "b": rng.normal(0, 0.1, o)})
    out, expected = imported(model, tmp_path, **options)
    assert np.array_equal(out, expected)


@pytest.mark.parametrize("options", FORMS, ids=FORM_IDS)
@pytest.mark.parametrize("op", ["Gemm", "MatMul"])
def test_dense_import_matches_onnxruntime(tmp_path, options, op):
    rng = np.random.default_rng(3)
    if op == "Gemm":
        node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)
        inits = {"w": weights(rng, 10, 24), "b": rng.normal(0, 0.1, 10)}
    else:
        node = helper.make_node("MatMul", ["x", "w"], ["y"])
        inits = {"w": weights(rng, 24, 10)}
    model = float_model([node], [("x", [1, 24])], ("y", None), inits)
    out, expected = imported(model, tmp_path, **options)
    assert np.array_equal(out, expected)


def _conv(rng, name, src, c, o):
    return (helper.make_node("Conv", [src, f"{name}_w"], [name], kernel_shape=[3, 3],
                             pads=[1, 1, 1, 1]), {f"{name}_w": weights(rng, o, c, 3, 3)})


@pytest.mark.parametrize("options", FORMS, ids=FORM_IDS)
@pytest.mark.parametrize("tail", ["maxpool", "maxpool-ceil", "gap", "add", "sum", "concat",
                                  "flatten", "transpose"])
def test_layer_import_matches_onnxruntime(tmp_path, options, tail):
    rng = np.random.default_rng(5)
    c1, init1 = _conv(rng, "a", "x", 3, 4)
    c2, init2 = _conv(rng, "b", "x", 3, 4)
    nodes = [c1, c2]
    last = {
        "maxpool": helper.make_node("MaxPool", ["a"], ["y"], kernel_shape=[3, 3],
                                    strides=[2, 2], pads=[1, 1, 1, 1]),
        "maxpool-ceil": helper.make_node("MaxPool", ["a"], ["y"], kernel_shape=[2, 2],
                                         strides=[2, 2], ceil_mode=1),
        "gap": helper.make_node("GlobalAveragePool", ["a"], ["y"]),
        "add": helper.make_node("Add", ["a", "b"], ["y"]),
        "sum": helper.make_node("Sum", ["a", "b"], ["y"]),
        "concat": helper.make_node("Concat", ["a", "b"], ["y"], axis=1),
        "flatten": helper.make_node("Flatten", ["a"], ["y"], axis=1),
        "transpose": helper.make_node("Transpose", ["a"], ["y"], perm=[0, 2, 3, 1]),
    }[tail]
    model = float_model(nodes + [last], [("x", [1, 3, 9, 9])], ("y", None), {**init1, **init2})
    out, expected = imported(model, tmp_path, **options)
    assert np.array_equal(out, expected)
