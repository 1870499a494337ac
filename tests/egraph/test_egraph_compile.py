"""`glc compile` and glc/compiler.py: the extracted program runs under `glc interp` with the
same inputs and gives the expected output; figures, artefacts, limits and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.compiler import program_text
from glc.ir.term import Term, leaf
from glc.ir.types import Access
from glc.syntax.reader import parse_program

PROGRAMS = sorted(p for p in (Path(__file__).resolve().parents[2] / "programs").iterdir()
                  if p.is_dir())
FIGURES = {"enodes", "eclasses", "iterations", "stop_reason", "seconds", "extracted"}


def glc(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("folder", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_the_extracted_program_interprets_to_the_expected_output(folder, tmp_path):
    out = tmp_path / "out"
    result = glc("compile", folder, "-o", out, "--emit", "extracted,egraph", "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert set(figures) >= FIGURES and figures["stop_reason"] == "saturated"
    checked = glc("interp", out / "extracted.gls", "--inputs", folder, "--json")
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output)["match"] is True
    dot = (out / "egraph.dot").read_text()
    assert dot.startswith("digraph egraph {")
    assert dot.count("subgraph cluster_") == figures["eclasses"]


def test_verbose_prints_one_line_per_iteration_and_the_stop_reason(tmp_path):
    result = glc("-v", "compile", PROGRAMS[0].parent / "matmul-int8")
    lines = result.output.splitlines()
    assert result.exit_code == 0
    assert lines[0].startswith("iteration 1: ")
    assert any(line.startswith("stopped: saturated after") for line in lines)
    assert any(line.startswith("extract: exact, extraction cost") for line in lines)


def test_limits_are_passed_to_the_runner():
    result = glc("compile", PROGRAMS[0].parent / "conv2d-nchw-int8", "--iter-limit", "1",
                 "--extractor", "greedy", "--json")
    figures = json.loads(result.output)
    assert figures["stop_reason"] == "iteration limit" and figures["iterations"] == 1
    assert figures["extractor"] == "greedy"
    small = json.loads(glc("compile", PROGRAMS[0].parent / "conv2d-nchw-int8", "--rules", "all",
                           "--node-limit", "200", "--json").output)
    # Stopped at 200 e-nodes the whole table finds a worse program than the default rules,
    # whose program is kept (glc/compiler.py): the search's own figures are under "search".
    search = small["search"] if "fallback" in small else small
    assert search["stop_reason"] == "node limit" and search["enodes"] > 200


def test_an_unknown_artefact_is_one_error_line(tmp_path):
    result = glc("compile", PROGRAMS[0], "-o", tmp_path, "--emit", "extracted,assembly")
    assert result.exit_code == 1
    assert result.output.strip() == ("error: unknown --emit artefact 'assembly', expected a "
                                     "comma-separated list of extracted, egraph")


def test_emit_without_an_output_folder_is_an_error():
    result = glc("compile", PROGRAMS[0], "--emit", "egraph")
    assert result.exit_code == 1
    assert result.output.strip() == "error: --emit writes into a folder: give -o OUTDIR"


def test_an_ill_typed_program_is_a_located_error(tmp_path):
    bad = tmp_path / "bad.gls"
    bad.write_text("(input a (shape 3 4) int8)\n(access (access-tensor a) 5)\n")
    result = glc("compile", bad)
    assert result.exit_code == 1
    assert result.output.startswith(f"{bad}:2:1: error: access needs access axis 5")


def test_shared_subterms_are_printed_once_as_defines():
    env = {"x": Access((2, 3), (), "int8")}
    shared = Term("compute", (leaf("compute-type", ("relu",)),
                              Term("access", (Term("access-tensor", (leaf("symbol", "x"),)),
                                              leaf("int", 1)))))
    term = Term("access-pair", (shared, shared))
    text = program_text(term, env)
    assert text.splitlines()[0] == "(input x (shape 2 3) int8)"
    assert text.count("(compute relu") == 1 and "(define shared1 " in text
    assert parse_program(text).body == term
