"""The Verilator build: only top-level ports public, and an unchanged design never rebuilt."""

import time

from glc.hwconfig import load_config
from glc.sim.build import STAMP, build
from glc.sim.run import design


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
