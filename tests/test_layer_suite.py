"""The layer suite's generator (scripts/layer_suite.py): its Glenside programs compute what its
numpy says, in every layout and kind, and the two smallest real rows run right on the ISA engine.

The whole suite is a benchmark (scripts/bench.py --only layers): here only small variants of each
kind (checked by the interpreter) and two 1 M-MAC rows (compiled and executed); and every row
compiled, its kernels' analytic estimates held within 2 % of the instruction-level model."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.inputs import load
from glc.interp import interpret

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
spec = importlib.util.spec_from_file_location("layer_suite", ROOT / "scripts/layer_suite.py")
suite = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = suite  # dataclasses look their module up there
spec.loader.exec_module(suite)

SMALL = [suite.Conv("stem-like", "t", 3, 5, 11, 7, 2, 3),
         suite.Conv("3x3", "t", 4, 6, 8, 3, 1, 1),
         suite.Conv("3x3/2", "t", 4, 6, 9, 3, 2, 1, relu=False),
         suite.Conv("proj 1x1/2", "t", 6, 4, 8, 1, 2, 0, relu=False),
         suite.Conv("dw 3x3", "t", 5, 5, 7, 3, 1, 1, depthwise=True),
         suite.Conv("dw 3x3/2", "t", 5, 5, 8, 3, 2, 1, depthwise=True),
         suite.Gemm("gemm", "t", 6, 20, 9),
         suite.Gemm("scores", "t", 7, 8, 7, raw=True)]


def _conv_loops(x, w, stride, pad, depthwise):
    """NCHW/OIHW (depthwise: C×1×k×k) convolution by scalar loops over Python integers."""
    c, size = x.shape[1], x.shape[2]
    o, _, k, _ = w.shape
    out = (size + 2 * pad - k) // stride + 1
    result = np.zeros((1, o, out, out), dtype=np.int64)
    for f in range(o):
        for y in range(out):
            for z in range(out):
                total = 0
                for ch in ([f] if depthwise else range(c)):
                    for dy in range(k):
                        for dx in range(k):
                            yy, xx = y * stride + dy - pad, z * stride + dx - pad
                            if 0 <= yy < size and 0 <= xx < size:
                                tap = w[f, 0 if depthwise else ch, dy, dx]
                                total += int(x[0, ch, yy, xx]) * int(tap)
                result[0, f, y, z] = total
    return result


@pytest.mark.parametrize("layer", SMALL, ids=[layer.name for layer in SMALL])
def test_each_layout_of_each_kind_computes_what_numpy_says(tmp_path, layer):
    for layout in layer.layouts:
        folder = tmp_path / layout
        made = suite.write(folder, layer, layout, np.random.default_rng(7))
        bundle = load(folder)
        result, _ = interpret(bundle.program.body, bundle.arrays)
        assert np.array_equal(result, made["output"]), layout
        assert np.array_equal(np.load(folder / "output.npy"), made["output"])


@pytest.mark.parametrize("depthwise", [False, True])
def test_the_conv_reference_equals_scalar_loops(tmp_path, depthwise):
    layer = suite.Conv("c", "t", 4, 4, 7, 3, 2, 1, relu=False, depthwise=depthwise)
    made = suite.make(layer, "nchw-oihw", np.random.default_rng(3))
    wide = _conv_loops(made["inputs"]["x"], made["inputs"]["w"], 2, 1, depthwise)
    shift = int(made["body"].split("(requantize ")[1].split(")")[0])
    rounded = (wide + (1 << (shift - 1))) >> shift if shift else wide
    assert np.array_equal(made["output"], np.clip(rounded, -128, 127).astype(np.int8))


def test_a_product_whose_pairs_pass_the_element_limit_is_one_checked_program(tmp_path):
    # BERT's FFN: 128×3072×2×768 pairs (> 2^28), never materialised, so glc checks it whole.
    ffn = next(layer for layer in suite.LAYERS if layer.name.startswith("FFN up"))
    assert 2 * ffn.m * ffn.k * ffn.n > 1 << 28
    folder = tmp_path / suite.program_name(ffn, "w-out-in")
    suite.write(folder, ffn, "w-out-in", np.random.default_rng(1))
    result = CliRunner().invoke(main, ["check", str(folder)])
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == [f"(({ffn.m},{ffn.n}),())", "int8"]


@pytest.mark.parametrize("name,layout", [("Q.K^T 128x64x128", "w-out-in"),
                                         ("P.V 128x128x64", "w-in-out")])
def test_the_smallest_suite_rows_run_right_on_the_isa_engine(tmp_path, name, layout):
    layer = next(layer for layer in suite.LAYERS if layer.name == name)
    folder = tmp_path / suite.program_name(layer, layout)
    suite.write(folder, layer, layout, np.random.default_rng(1))
    result = CliRunner().invoke(main, ["run", str(folder), "--engine", "isa", "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["match"] is True and figures["host_steps"] == 0
    assert figures["macs"] == layer.macs == 128 * 64 * 128
    assert figures["cycles"] >= figures["roofline_cycles"] >= figures["ideal_cycles"] == \
        layer.macs // 256


ROWS = suite.rows()


@pytest.mark.parametrize("layer,layout", ROWS,
                         ids=[suite.program_name(layer, layout) for layer, layout in ROWS])
def test_the_analytic_model_is_within_2_percent_on_every_suite_row(tmp_path, layer, layout):
    """Issue 10: each kernel the lowering builds for a real layer at its real shape, estimated
    by the tile model (glc/cost/kernel.py, which the schedule search compares by), is within
    2 % of the instruction-level model (glc/isa/cycles.py, which the RTL equals)."""
    from glc.compiler import compile_program
    from glc.hwconfig import load_config
    from glc.rewrites import DEFAULT, select

    config = load_config("n16")
    folder = tmp_path / suite.program_name(layer, layout)
    suite.write(folder, layer, layout, np.random.default_rng(1))
    lowered = compile_program(load(folder), rules=select(DEFAULT, config.array_size),
                              config=config).lowered
    estimated = [s.kernel for s in lowered.kernels if s.kernel.estimated]
    assert estimated
    for kernel in estimated:
        real = kernel.predicted_cycles(config)
        assert abs(kernel.estimated - real) <= 0.02 * real, (kernel.label, kernel.estimated, real)
