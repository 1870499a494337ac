"""The Verilator build: only top-level ports public, an unchanged design never rebuilt, and a
changed one replacing its older build."""

import json
import time

import pytest

from glc.hwconfig import load_config
from glc.sim.build import STAMP, _identity, _prune_superseded, build
from glc.sim.run import design

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent


def test_build_makes_only_top_level_ports_public():
    directory = build(design(load_config("n4")))
    # Verilator records its command line in the build directory (the "C" line).
    command = next(line for line in (directory / "Vtop__verFiles.dat").read_text().splitlines()
                   if line.startswith("C "))
    assert "--public-depth 1" in command
    assert "--public-flat-rw" not in command


def test_unchanged_design_is_not_rebuilt():
    chosen = design(load_config("n4"))
    directory = build(chosen)
    stamp = (directory / STAMP).stat().st_mtime_ns
    start = time.perf_counter()
    assert build(chosen) == directory
    assert time.perf_counter() - start < 1
    assert (directory / STAMP).stat().st_mtime_ns == stamp


def test_configurations_and_wave_builds_get_their_own_directories():
    n4, n16 = load_config("n4"), load_config("n16")
    dirs = {design(n4).build_dir(), design(n16).build_dir(), design(n4, waves="vcd").build_dir()}
    assert len(dirs) == 3


def test_a_new_build_replaces_older_builds_of_the_same_design(tmp_path, monkeypatch):
    monkeypatch.setenv("GLC_SIM_BUILD", str(tmp_path))
    n4, n16 = design(load_config("n4")), design(load_config("n16"))
    older, other = tmp_path / "sim_top-fast-older", tmp_path / "sim_top-fast-other"
    for folder, chosen in ((older, n4), (other, n16)):
        folder.mkdir()
        (folder / STAMP).write_text(json.dumps(_identity(chosen)))
    current = tmp_path / "sim_top-fast-current"
    _prune_superseded(n4, current)
    assert not older.exists()
    assert other.exists()
