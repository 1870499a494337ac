"""glc compile -o writes its folder whole or not at all, and simulate refuses a mixed folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import glc.lower.artefacts as artefacts
from glc.cli import main

PROGRAMS = Path(__file__).parents[1] / "programs"
MATMUL, DENSE = PROGRAMS / "matmul-int8", PROGRAMS / "dense-int8"


def glc(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_error_line(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    (line,) = result.stderr.strip().splitlines()
    return line


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_an_interrupted_compile_leaves_the_earlier_folder_whole(tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert glc("compile", MATMUL, "-o", out).exit_code == 0
    before = snapshot(out)

    def interrupted(program):  # after program.s and program.bin, before the manifest
        raise KeyboardInterrupt

    monkeypatch.setattr(artefacts, "manifest", interrupted)
    result = glc("compile", DENSE, "-o", out)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no partial folder left beside it


def test_compile_replaces_its_own_earlier_folder_entirely(tmp_path):
    out = tmp_path / "out"
    assert glc("compile", MATMUL, "-o", out, "--emit", "extracted,egraph").exit_code == 0
    assert (out / "egraph.dot").exists()
    assert glc("compile", DENSE, "-o", out).exit_code == 0
    assert glc("compile", DENSE, "-o", tmp_path / "fresh").exit_code == 0
    assert snapshot(out) == snapshot(tmp_path / "fresh")  # nothing of matmul's is left
    shutil.rmtree(tmp_path / "fresh")
    result = glc("simulate", out, "--inputs", DENSE, "--isa")
    assert result.exit_code == 0 and "match: yes" in result.stdout, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_compile_refuses_to_replace_a_folder_it_did_not_write(tmp_path):
    folder = tmp_path / "matmul"
    shutil.copytree(MATMUL, folder)
    before = snapshot(folder)
    line = one_error_line(glc("compile", folder, "-o", folder))
    assert line.startswith(f"{folder}: error: ") and "refusing to replace it" in line
    assert snapshot(folder) == before


def test_the_manifest_records_the_sha256_of_every_file(tmp_path):
    import hashlib

    out = tmp_path / "out"
    assert glc("compile", MATMUL, "-o", out, "--emit", "extracted,egraph").exit_code == 0
    files = json.loads((out / "manifest.json").read_text())["files"]
    assert files == {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                     for p in out.iterdir() if p.name != "manifest.json"}
    assert {"program.bin", "source.gls", "program.s", "extracted.gls", "egraph.dot"} == set(files)


@pytest.mark.parametrize("name", ["program.bin", "source.gls"])
def test_simulate_refuses_a_folder_whose_files_disagree_naming_the_file(tmp_path, name):
    # Issue 12 item 3's reproducer: a new program.bin beside the old manifest.
    a, b = tmp_path / "a", tmp_path / "b"
    assert glc("compile", MATMUL, "-o", a).exit_code == 0
    assert glc("compile", DENSE, "-o", b).exit_code == 0
    shutil.copy(b / name, a / name)
    line = one_error_line(glc("simulate", a, "--inputs", MATMUL, "--isa"))
    assert line.startswith(f"{a / name}: error: ") and "mixes two compilations" in line


def test_simulate_refuses_a_manifest_without_hashes(tmp_path):
    assert glc("compile", MATMUL, "-o", tmp_path / "a").exit_code == 0
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    del manifest["files"]
    (tmp_path / "a" / "manifest.json").write_text(json.dumps(manifest))
    line = one_error_line(glc("simulate", tmp_path / "a", "--isa"))
    assert line.startswith(str(tmp_path / "a" / "manifest.json")) and "no file hashes" in line
