"""``glc run --check-each`` and ``--bisect`` (glc/diagnose.py) on a deliberately broken
lowering: issue 37's fault put back (a fold moved while the residual add held a view of it,
with the lowering's readers check and verifier switched off) must be found by check-each at the
add's step, named after its define, and by bisect as ``fold-into``; on the lowering as it is,
both find nothing. ``--disable`` and ``glc optimizations`` name the same table."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.lower import lowering
from glc.lower.optimizations import NAMES
from tests.lower.test_lower_miscompiles import _block


def _run(folder, *options):
    result = CliRunner().invoke(main, ["run", str(folder), "--engine", "isa", "--json",
                                       *options])
    return result, json.loads(result.stdout) if result.stdout.startswith("{") else None


@pytest.fixture
def broken(monkeypatch):
    """The lowering without the two guards issue 37's fix added."""
    monkeypatch.setattr(lowering._Lowerer, "readers",
                        property(lambda self: {}, lambda self, value: None), raising=False)
    monkeypatch.setattr(lowering._Lowerer, "verify", lambda self: None)


def test_check_each_and_bisect_name_the_broken_optimization(tmp_path, broken):
    _block(tmp_path, 128, 8)
    result, figures = _run(tmp_path, "--check-each", "--bisect")
    assert result.exit_code == 1 and figures["match"] is False
    wrong = figures["check_each"]
    assert wrong["define"] == "y" and wrong["differ"] > 0 and wrong["total"] == 128 * 8 * 8
    assert figures["bisect"]["culprits"] == ["fold-into"]
    # Switching that one off alone makes the broken lowering compute the right numbers.
    result, figures = _run(tmp_path, "--disable", "fold-into", "--check-each")
    assert result.exit_code == 0 and figures["match"] is True
    assert figures["check_each"] is None


def test_check_each_on_a_correct_lowering_finds_nothing(tmp_path):
    _block(tmp_path, 64, 8)
    result = CliRunner().invoke(main, ["run", str(tmp_path), "--engine", "isa",
                                       "--check-each", "--bisect"])
    assert result.exit_code == 0, result.output
    assert "check-each: all " in result.stderr and "bisect" not in result.stderr


def test_disable_takes_the_table_s_names(tmp_path):
    _block(tmp_path, 16, 4)
    result = CliRunner().invoke(main, ["run", str(tmp_path), "--engine", "isa", "--disable",
                                       "fold-into,nonsense"])
    assert result.exit_code == 1
    assert "unknown optimization 'nonsense'" in result.stderr
    listing = CliRunner().invoke(main, ["optimizations"])
    assert listing.exit_code == 0
    assert [line.split()[0] for line in listing.stdout.splitlines()] == list(NAMES)
