"""Result comparison: integers bit for bit, floats element by element (atol + rtol·|expected|)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from glc.cli import main
from glc.compare import FloatTolerance, compare

PROGRAMS = Path(__file__).parents[1] / "programs"


def test_float_tolerance_is_per_element_not_scaled_by_the_largest():
    # Issue 12 item 2: a 1e6 element elsewhere must not hide 50.0 against 0.001.
    result = np.array([1e6, 50.0, -40.0], np.float32)
    verdict = compare(result, np.array([1e6, 0.001, 5.0], np.float32))
    assert not verdict.match
    assert "2 of 3 elements differ" in verdict.detail and "first at (1,)" in verdict.detail


def test_float_tolerance_follows_isclose_with_the_dtype_defaults():
    expected = np.array([1000.0, 0.0, -2.0])
    # float64: rtol 1e-9, atol 1e-12 -> bounds 1e-6 + 1e-12, 1e-12, 2e-9 + 1e-12.
    assert compare(expected + [9e-7, 9e-13, -1.9e-9], expected).match
    assert not compare(expected + [0.0, 2e-12, 0.0], expected).match
    assert not compare(expected + [2e-6, 0.0, 0.0], expected).match
    loose = FloatTolerance(rtol=0.0, atol=1e-5)
    assert compare(expected + [9e-6, -9e-6, 9e-6], expected, loose).match
    assert not compare(expected + [2e-5, 0.0, 0.0], expected, loose).match


def test_nan_equals_nan_only_where_both_have_it():
    expected = np.array([np.nan, 1.0, np.inf], np.float32)
    assert compare(expected.copy(), expected).match
    assert not compare(np.array([1.0, 1.0, np.inf], np.float32), expected).match
    assert not compare(np.array([np.nan, np.nan, np.inf], np.float32), expected).match
    assert not compare(np.array([np.nan, 1.0, -np.inf], np.float32), expected).match


def test_zero_d_float_results_compare():
    assert compare(np.array(1.0), np.array(1.0)).match
    assert not compare(np.array(1.0), np.array(2.0)).match


def test_rtol_and_atol_options_reach_the_comparison(tmp_path):
    folder = tmp_path / "softmax"
    shutil.copytree(PROGRAMS / "softmax-f64", folder)
    expected = np.load(folder / "output.npy")
    np.save(folder / "output.npy", expected * (1 + 1e-6))
    runner = CliRunner()
    strict = runner.invoke(main, ["interp", str(folder)])
    assert strict.exit_code == 1 and "elements differ by more than" in strict.stderr
    loose = runner.invoke(main, ["interp", str(folder), "--rtol", "1e-5"])
    assert loose.exit_code == 0 and "match" in loose.stdout and ": yes" in loose.stdout
    run = runner.invoke(main, ["run", str(folder), "--engine", "isa", "--rtol", "1e-5"])
    assert run.exit_code == 0 and "match: yes" in run.stdout, run.output
    assert runner.invoke(main, ["run", str(folder), "--engine", "isa"]).exit_code == 1
    baselines = tmp_path / "baselines.json"
    for extra, status in (([], 1), (["--rtol", "1e-5"], 0)):
        done = runner.invoke(main, ["regress", str(tmp_path), "--engine", "isa", "--jobs", "1",
                                    "--baselines", str(baselines), *extra])
        assert done.exit_code == status, done.output
        assert ("wrong result" in done.output) == (status == 1)


def test_integer_mismatch_names_the_first_differing_index():
    # Issue 41 item 15: a mismatch names where to look, integers as floats do.
    expected = np.arange(12, dtype=np.int8).reshape(3, 4)
    result = expected.copy()
    result[1, 2], result[2, 0] = 100, -7
    verdict = compare(result, expected)
    assert not verdict.match
    assert "2 of 12 elements differ (first at (1, 2): 100, expected 6;" in verdict.detail
