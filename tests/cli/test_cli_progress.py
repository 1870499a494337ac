"""Progress on a terminal only (a status line on stderr), nothing extra when piped or with
--json; with --json an error is a JSON object on stdout, exit status 1."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import glc.cli_context
from glc.cli import main

PROGRAMS = Path(__file__).parents[2] / "programs"
PROGRAM = str(PROGRAMS / "matmul-int8")


def glc_(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setattr(glc.cli_context, "_terminal", lambda: True)


def test_nothing_extra_on_stderr_when_piped():
    for args in (["run", PROGRAM, "--engine", "isa"], ["compile", PROGRAM],
                 ["regress", PROGRAM, "--engine", "isa", "--jobs", "1"]):
        result = glc_(*args)
        assert result.exit_code == 0 and result.stderr == "", args


def test_a_terminal_sees_each_stage_on_one_status_line_cleared_before_the_output(terminal):
    result = glc_("run", PROGRAM, "--engine", "isa")
    assert result.exit_code == 0
    shown = [part for part in result.stderr.split("\r\033[K") if part]
    assert shown == ["compile: saturating", "compile: extracting from 24 e-nodes",
                     "compile: lowering", "simulate: running the kernels on the isa"]
    assert result.stdout.startswith("match: yes")


def test_regress_counts_its_rows_on_a_terminal(terminal):
    result = glc_("regress", PROGRAMS, "-k", "dense", "--engine", "isa", "--jobs", "1")
    assert result.exit_code == 0
    assert "regress: 2/2 programs, last dense-int8: pass" in result.stderr


def test_no_progress_with_json_even_on_a_terminal(terminal):
    result = glc_("run", PROGRAM, "--engine", "isa", "--json")
    assert result.exit_code == 0 and result.stderr == ""
    assert json.loads(result.stdout)["match"] is True


def test_json_on_an_error_prints_a_json_error_object():
    result = glc_("run", "no-such-program", "--json")
    assert result.exit_code == 1 and result.stderr == ""
    assert json.loads(result.stdout) == {
        "error": "no such program file or folder", "where": "no-such-program",
        "line": "no-such-program: error: no such program file or folder"}


def test_json_after_the_report_keeps_stdout_one_object(tmp_path):
    shutil.copytree(PROGRAMS / "matmul-int8", tmp_path / "p")
    (tmp_path / "p" / "matmul-int8.gls").write_text("(access-tensor\n")
    result = glc_("regress", tmp_path, "--engine", "isa", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["rows"][0]["status"] == "error"
    assert "1 of 1 programs failed" in result.stderr


def test_no_click_deprecated_stream_call(monkeypatch):
    # Click 8.5 deprecates click.get_text_stream (a warning per call: 1 075 in one test run).
    real = click.get_text_stream

    def deprecated(*args, **kwargs):
        warnings.warn("'get_text_stream' is deprecated", DeprecationWarning, stacklevel=2)
        return real(*args, **kwargs)

    monkeypatch.setattr(click, "get_text_stream", deprecated)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        result = glc_("compile", PROGRAM)  # it shows progress on a terminal
    assert result.exit_code == 0, result.output
