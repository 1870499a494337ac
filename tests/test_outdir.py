"""glc compile -o writes its folder whole or not at all, and simulate refuses a mixed folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import glc.lower.artefacts as artefacts
from glc.cli import main
from glc.outdir import RECORD

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

    def interrupted(program, nodes):  # after program.s and program.bin, before the manifest
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
                     for p in out.iterdir() if p.name not in ("manifest.json", RECORD)}
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


# ---- issue 41: one rule for every -o (nothing a user wrote is deleted) -------------------

def test_a_file_a_user_added_to_a_compiled_folder_keeps_it_from_being_replaced(tmp_path):
    out = tmp_path / "out"
    assert glc("compile", MATMUL, "-o", out).exit_code == 0
    (out / "notes.txt").write_text("mine")
    before = snapshot(out)
    line = one_error_line(glc("compile", DENSE, "-o", out))
    assert line == (f"{out}: error: the output folder holds 'notes.txt', which glc did not "
                    "write; refusing to replace it (move it out, or give a new or empty folder)")
    assert snapshot(out) == before


@pytest.mark.parametrize("target", [".", ".."])
def test_o_naming_the_working_directory_or_a_folder_holding_it_is_refused(tmp_path, monkeypatch,
                                                                        target):
    here = tmp_path / "here"
    here.mkdir()
    (here / "notes.txt").write_text("mine")
    monkeypatch.chdir(here)
    line = one_error_line(glc("compile", MATMUL, "-o", target))
    assert line.startswith(f"{target}: error: the output folder ")
    assert (here / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]


def _killed_inside_replacing(out: Path, stage: str) -> None:
    """A process that starts writing ``out`` through replacing() and is SIGKILLed (no cleanup
    can run): during the writing ("write"), or between moving the old folder aside and moving
    the new one in ("swap")."""
    import subprocess
    import sys

    script = f"""
import os, signal, sys
import glc.outdir as outdir
def killed(*args):
    os.kill(os.getpid(), signal.SIGKILL)
if {stage!r} == "swap":
    rename = os.rename
    def once(a, b):
        rename(a, b)
        killed()
    outdir.os.rename = once
with outdir.replacing({str(out)!r}) as fresh:
    (fresh / "half.txt").write_text("half")
    if {stage!r} == "write":
        killed()
"""
    done = subprocess.run([sys.executable, "-c", script], env={
        **__import__("os").environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert done.returncode == -9


def test_a_killed_compile_s_staging_folder_is_removed_by_the_next_run(tmp_path):
    out = tmp_path / "out"
    _killed_inside_replacing(out, "write")
    (left,) = [p.name for p in tmp_path.iterdir()]
    assert left.startswith(".out.new-")  # what a SIGKILL leaves behind
    assert glc("compile", MATMUL, "-o", out).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_folder_moved_aside_by_a_killed_run_is_put_back(tmp_path):
    out = tmp_path / "out"
    assert glc("compile", MATMUL, "-o", out).exit_code == 0
    before = snapshot(out)
    _killed_inside_replacing(out, "swap")
    assert not out.exists()  # only the moved-aside copy and the new folder are left
    assert sorted(p.name.split("-")[0] for p in tmp_path.iterdir()) == [".out.new", ".out.old"]
    result = glc("compile", DENSE, "-o", tmp_path / "elsewhere")
    assert result.exit_code == 0 and not out.exists()  # another -o touches nothing of out's
    assert glc("compile", DENSE, "-o", out).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "out"]
    assert snapshot(out) == snapshot(tmp_path / "elsewhere") != before


def test_a_running_process_s_staging_folder_is_left_alone(tmp_path):
    import subprocess
    import sys

    from glc.outdir import _beside

    out = tmp_path / "out"
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as other:
        try:
            staging = _beside(out, "new")
            live = staging.with_name(staging.name.replace(f"-{__import__('os').getpid()}-",
                                                          f"-{other.pid}-"))
            live.mkdir()
            assert glc("compile", MATMUL, "-o", out).exit_code == 0
            assert live.is_dir()
        finally:
            other.kill()


def test_o_naming_an_input_or_a_missing_folder_is_refused_before_the_work(tmp_path):
    source = tmp_path / "p.s"
    shutil.copy(Path(__file__).parent / "isa" / "programs" / "matmul_split.s", source)
    before = source.read_bytes()
    source.with_suffix(".bin").symlink_to(source)  # the same file under an image's name
    line = one_error_line(glc("asm", source, "-o", source.with_suffix(".bin")))
    assert line == f"{source.with_suffix('.bin')}: error: -o names an input of this command; " \
                   "writing it would destroy it"
    assert source.read_bytes() == before
    missing = tmp_path / "missing" / "d.bin"
    # glc rtl checks its output before building or running anything (no Verilator needed).
    line = one_error_line(glc("rtl", source, "-o", missing))
    assert line == f"{missing}: error: no such folder {missing.parent} to write into"
    line = one_error_line(glc("interp", MATMUL, "-o", tmp_path / "missing" / "r.npy"))
    assert "no such folder" in line


def test_a_path_with_a_control_character_stays_on_the_error_s_line(tmp_path, monkeypatch):
    """Found by the -o fuzz: `asm -o '\\r/new.bin'` printed the missing folder's name raw."""
    source = tmp_path / "h.s"
    source.write_text("halt\n")
    monkeypatch.chdir(tmp_path)
    line = one_error_line(glc("asm", source, "-o", "\r/new.bin"))
    assert line == "\\x0d/new.bin: error: no such folder \\x0d to write into"
