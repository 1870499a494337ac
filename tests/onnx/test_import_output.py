"""glc import -o DIR writes through glc/outdir.py's rule (issue 41, item 1): a folder holding
anything glc did not write — the model itself, notes, the working directory — is refused and
left as it was; glc's own earlier import is replaced whole."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import float_model, weights
from onnx import helper

from glc.cli import main
from glc.onnx.zoo import quantize


def _model(path):
    rng = np.random.default_rng(0)
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], name="c1")
    return quantize(float_model([node], [("x", [1, 3, 8, 8])], ("y", None),
                                {"w": weights(rng, 4, 3, 3, 3)}), path)


def _tree(root):
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
            for p in sorted(root.rglob("*"))}


def _import(model, out):
    return CliRunner().invoke(main, ["import", str(model), "-o", str(out)])


@pytest.mark.parametrize("target", ["precious", ".", ".."])
def test_import_never_empties_a_folder_it_did_not_write(tmp_path, monkeypatch, target):
    precious = tmp_path / "work" / "precious"
    precious.mkdir(parents=True)
    model = _model(precious / "model.onnx")
    (precious / "notes.txt").write_text("mine")
    monkeypatch.chdir(precious.parent if target == "precious" else precious)
    before = _tree(tmp_path)
    result = _import(model, target)
    assert result.exit_code == 1, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"{target}: error: the output folder ")
    assert _tree(tmp_path) == before


def test_import_replaces_its_own_folder_but_not_one_a_user_added_to(tmp_path):
    model = _model(tmp_path / "model.onnx")
    out = tmp_path / "program"
    assert _import(model, out).exit_code == 0
    first = _tree(out)
    assert _import(model, out).exit_code == 0
    assert _tree(out) == first
    (out / "notes.txt").write_text("mine")
    result = _import(model, out)
    assert result.exit_code == 1
    assert "holds 'notes.txt', which glc did not write" in result.output
    assert (out / "notes.txt").read_text() == "mine"


def test_import_o_naming_a_file_is_one_line_and_leaves_it(tmp_path):
    """A file at -o is refused by the one rule (once click's three-line usage error, status 2)."""
    model = _model(tmp_path / "model.onnx")
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    for target in (notes, model):
        before = _tree(tmp_path)
        result = _import(model, target)
        assert result.exit_code == 1
        assert result.output.splitlines() == [
            f"{target}: error: the output must be a folder, and this is a file"]
        assert _tree(tmp_path) == before
