"""``glc compile`` of each demonstration writes an extracted.gls with systolic-array nodes and no
``compute dot-product``, and ``glc interp`` evaluates it equal to the source program."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.inputs import load, random_inputs
from glc.ir.term import walk
from glc.syntax.reader import read_program

PROGRAMS = Path(__file__).resolve().parent / "programs"
DEMOS = json.loads((PROGRAMS / "demonstrations.json").read_text())
CONFIGS = {4: "n4", 16: "n16"}  # the configs whose array sizes the demonstrations are built for


def glc(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_compiled_demonstration_is_tensorised_and_interprets_equal(name, tmp_path):
    demo = DEMOS[name]
    source = PROGRAMS / demo["program"]
    bundle = load(source)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for symbol, array in random_inputs(bundle.env, bundle.symbols, 7).items():
        np.save(inputs / f"{symbol}.npy", array)
    out = tmp_path / "out"
    # The default extractor (exact, by integer programming) and the default cost.
    glc("compile", source, "-o", out, "--rules", demo["rules"], "--config",
        CONFIGS[demo["array_size"]], "--iter-limit", demo["iter_limit"], "--time-limit", 2)
    extracted = read_program(out / "extracted.gls")
    ops = walk(extracted.body)
    assert any(t.op == "systolic-array" for t in ops)
    assert not any(t.op == "compute" and t.args[0].value == ("dot-product",) for t in ops)
    glc("interp", source, "--inputs", inputs, "-o", tmp_path / "expected.npy")
    glc("interp", out / "extracted.gls", "--inputs", inputs, "-o", tmp_path / "got.npy")
    expected, got = np.load(tmp_path / "expected.npy"), np.load(tmp_path / "got.npy")
    assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_an_unknown_rule_set_is_one_line_naming_the_choices():
    result = CliRunner().invoke(main, ["compile", str(PROGRAMS / "conv2d-im2col.gls"),
                                       "--rules", "im2col,tiling"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown rule set 'tiling'" in lines[0]
    assert "tensorise" in lines[0] and "Traceback" not in result.output
