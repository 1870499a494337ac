"""What the RTL needs from the machine: without it, the RTL engine fails in one line naming what
is missing (never a silent run on the ISA simulator), unless the ISA or auto is asked for."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.sim.toolchain import OS_TOOLS, missing

PROGRAM = Path(__file__).parents[2] / "programs" / "matmul-int8"


@pytest.fixture
def no_cpp_toolchain(tmp_path, monkeypatch):
    """A PATH with no c++, make or perl, and an empty build cache (nothing prebuilt)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("GLC_SIM_BUILD", str(tmp_path / "build"))


def glc(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_missing_names_each_os_tool_not_on_path(no_cpp_toolchain):
    assert missing() == list(OS_TOOLS)
    assert missing(tools=False) == []


@pytest.mark.parametrize("command", [
    ("run", PROGRAM, "--config", "n4"),
    ("run", PROGRAM, "--config", "n4", "--engine", "rtl"),
    ("regress", PROGRAM, "--config", "n4"),
])
def test_a_missing_cpp_toolchain_fails_the_rtl_in_one_line(no_cpp_toolchain, command):
    result = glc(*command)
    assert result.exit_code == 1
    assert result.stderr == ("error: the RTL engine needs c++, make, perl, not found: install "
                             "them (README, 'Set-up') or run on the ISA simulator with "
                             "--engine isa\n")
    assert "match" not in result.stdout


def test_simulate_of_a_compiled_folder_fails_the_same_way(no_cpp_toolchain, tmp_path):
    out = tmp_path / "out"
    assert glc("compile", PROGRAM, "--config", "n4", "-o", out).exit_code == 0
    result = glc("simulate", out)
    assert result.exit_code == 1 and "the RTL engine needs c++, make, perl" in result.stderr
    assert glc("simulate", out, "--isa").exit_code == 0


@pytest.mark.parametrize("engine", ["isa", "auto"])
def test_the_isa_or_auto_asked_for_runs_without_the_toolchain(no_cpp_toolchain, engine):
    result = glc("run", PROGRAM, "--config", "n4", "--engine", engine)
    assert result.exit_code == 0, result.output
    assert "match: yes" in result.stdout and "(isa)" in result.stdout
