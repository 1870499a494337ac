"""AveragePool's import against onnxruntime (glc/onnx/pools.py): QDQ and QOperator, int8 and
uint8, pads, strides, ceil_mode and count_include_pad both ways, bit for bit through the
interpreter; one through ``glc run --engine isa``."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import float_model, imported, weights
from onnx import helper

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
