"""DRAM is sparse (glc/isa/dram.py): a page takes memory once written, nothing copies all of
it, and the sparse copies are exact."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from glc.isa.dram import PAGE_BYTES, copy_pages, nonzero_pages, zeroed

ROOT = Path(__file__).parents[2]


@pytest.mark.parametrize("size", [PAGE_BYTES * 5, PAGE_BYTES * 5 + 100, 100])
def test_a_sparse_copy_equals_the_dense_one(size):
    rng = np.random.default_rng(size)
    source = np.zeros(size, dtype=np.uint8)
    for at in rng.integers(0, size, 4):
        source[at] = rng.integers(1, 256)
    source[-1] = 7  # the last, partial page
    expected = sorted({int(at) // PAGE_BYTES for at in np.flatnonzero(source)})
    assert nonzero_pages(source).tolist() == expected
    dest = zeroed(size + PAGE_BYTES)
    copy_pages(dest, source)
    assert np.array_equal(dest[:size], source) and not dest[size:].any()


# A 4 GiB DRAM (the documented maximum) for a program of under a kilobyte: 8.5 GB and 27 s
# before, two whole copies of DRAM per image.
# The peak is this process's own (VmHWM, of its memory map since exec): ru_maxrss would carry
# the resident size of the process that forked it — pytest's, 1.2 GB late in the suite.
RUN = """
import sys
from click.testing import CliRunner
from glc.cli import main
result = CliRunner().invoke(main, ["run", sys.argv[1], "--config", sys.argv[2], "--engine", "isa"])
assert result.exit_code == 0, result.output
with open("/proc/self/status") as status:
    print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_a_4_gib_dram_costs_only_the_pages_a_program_touches(tmp_path):
    config = tmp_path / "n4-4gib.toml"
    config.write_text((ROOT / "hw" / "configs" / "n4.toml").read_text().replace(
        "dram_bytes = 131072", f"dram_bytes = {1 << 32}"))
    done = subprocess.run([sys.executable, "-c", RUN, str(ROOT / "programs" / "matmul-int8"),
                           str(config)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    peak_kib = int(done.stdout.split()[-1])
    assert peak_kib < 1 << 20, f"{peak_kib} KiB"  # under 1 GiB
