"""glc run --report on an imported model: each step names the ONNX node it computes."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner
from conftest import float_model, weights
from onnx import helper

from glc.cli import main
from glc.onnx.importer import import_model
from glc.onnx.zoo import quantize


def test_report_names_the_onnx_node_of_each_step(tmp_path):
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1], name="conv_a"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu_a"),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2],
                              name="pool_a"),
             helper.make_node("Conv", ["p1", "w2"], ["c2"], kernel_shape=[1, 1], name="conv_b")]
    model = float_model(nodes, [("x", [1, 8, 8, 8])], ("c2", None),
                        {"w1": weights(rng, 8, 8, 3, 3), "w2": weights(rng, 8, 8, 1, 1)})
    folder = import_model(quantize(model, tmp_path / "m.onnx"), tmp_path / "program").folder
    result = CliRunner().invoke(main, ["run", str(folder), "--engine", "isa", "--report",
                                       "--json"])
    assert result.exit_code == 0, result.output
    steps = json.loads(result.stdout)["steps"]
    products = [s for s in steps if s["unit"] == "array"]
    # The pool's fold, reading its NCHW input in strided runs (docs/isa.md, revision 2.4).
    pools = [s for s in steps if s["unit"] == "vector" and "MaxPool" in s["node"]]
    assert [s["step"].rstrip("0123456789") for s in pools] == ["fold"]
    # Two convolutions on the array: 8x8 positions x 8 filters x 72 taps, then 4x4 x 8 x 8.
    assert [s["macs"] for s in products] == [64 * 8 * 72, 16 * 8 * 8]
    assert [s["node"].split("(")[1] for s in products] == ["conv_a Conv)", "conv_b Conv)"]
    assert len(pools) == 1 and pools[0]["node"].endswith("(pool_a MaxPool)")
