"""One output rule: results on stdout, diagnostics (-v, notes) on stderr, and nothing large
unless asked (--print gives the whole array; -o gives a summary line)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from click.testing import CliRunner

import glc.sim.toolchain
from glc.cli import main

PROGRAMS = Path(__file__).parents[2] / "programs"
# 12 x 7 = 84 elements: more than the 64 printed in full by default.
PROGRAM = PROGRAMS / "matmul-int8"


def glc_(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _numbers(text: str) -> list[int]:
    return [int(token) for token in text.replace("[", " ").replace("]", " ").split()]


def test_verbose_figures_go_to_stderr_for_compile_as_for_run():
    plain = glc_("compile", PROGRAM)
    for args in (["compile", PROGRAM], ["run", PROGRAM, "--engine", "isa"]):
        result = glc_("-v", *args)
        assert result.exit_code == 0, result.output
        assert any(line.startswith("extract: ") for line in result.stderr.splitlines())
        assert "extract: " not in result.stdout and "iteration 1" not in result.stdout
    assert glc_("-v", "compile", PROGRAM).stdout == plain.stdout


def test_compile_with_an_outdir_prints_a_summary_not_the_term(tmp_path):
    result = glc_("compile", PROGRAM, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert result.stdout.count("\n") == 1, result.stdout
    assert result.stdout.startswith(f"wrote {tmp_path / 'out'}: kernels 1, ")
    assert "systolic-array" in (tmp_path / "out" / "extracted.gls").read_text()


def test_interp_with_an_output_file_prints_no_array_and_print_gives_every_element(tmp_path):
    expected = np.load(PROGRAM / "output.npy")
    result = glc_("interp", PROGRAM, "-o", tmp_path / "r.npy")
    assert result.exit_code == 0, result.output
    assert "[" not in result.stdout and f"wrote {tmp_path / 'r.npy'}" in result.stdout
    whole = glc_("interp", PROGRAM, "--print")
    assert whole.exit_code == 0 and "..." not in whole.stdout
    array_lines = whole.stdout.split("\n", 1)[1].split("\nmatch")[0]
    assert _numbers(array_lines) == expected.ravel().tolist()
    assert "..." in glc_("interp", PROGRAM).stdout  # summarised by default


def test_simulate_prints_the_figures_and_the_array_only_on_request(tmp_path):
    assert glc_("compile", PROGRAM, "-o", tmp_path / "out").exit_code == 0
    result = glc_("simulate", tmp_path / "out", "--isa", "--inputs", PROGRAM)
    assert result.exit_code == 0, result.output
    assert "[" not in result.stdout and "match" in result.stdout
    whole = glc_("simulate", tmp_path / "out", "--isa", "--inputs", PROGRAM, "--print")
    expected = np.load(PROGRAM / "output.npy")
    assert _numbers(whole.stdout.split("]]")[0] + "]]") == expected.ravel().tolist()


def test_writing_over_output_npy_is_refused_for_what_it_is(tmp_path):
    folder = tmp_path / "mm"
    shutil.copytree(PROGRAM, folder)
    result = glc_("interp", folder, "-o", folder / "output.npy")
    assert result.exit_code == 1
    assert "would overwrite the expected result output.npy" in result.stderr
    assert "as inputs" not in result.stderr


def test_auto_choosing_the_isa_simulator_says_so_on_stderr(monkeypatch):
    monkeypatch.setattr(glc.sim.toolchain, "missing", lambda tools=True: ["verilator"])
    result = glc_("run", PROGRAM, "--engine", "auto")
    assert result.exit_code == 0, result.output
    assert ("note: --engine auto: the ISA simulator, not the RTL (it needs verilator, not "
            "found)") in result.stderr.splitlines()
    assert "note:" not in result.stdout
