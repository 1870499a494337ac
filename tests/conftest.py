"""Shared test set-up: tests marked ``rtl`` are skipped, with the reason, where Verilator's
toolchain is absent (glc/sim/toolchain.py says what the RTL needs); tests marked ``synth`` where
Yosys is absent; tests marked ``slow`` unless GLC_SLOW=1 (scripts/bench.py sets it). The
session's compiles (and the glc processes its tests start) use a cache folder of their own,
never the user's (glc/cache.py), removed at the end: a sub-folder per test, so no test reads
a compile another stored (its -v lines and status differ on a hit, and a test that breaks
the lowering on purpose must not leave its compile to the next)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile

import pytest

from glc.sim.toolchain import missing
from glc.synth.tools import find_tool


def pytest_configure(config: pytest.Config) -> None:
    config.glc_cache = tempfile.mkdtemp(prefix="glc-test-cache-")
    os.environ["GLC_CACHE_DIR"] = config.glc_cache


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(getattr(config, "glc_cache", ""), ignore_errors=True)


@pytest.fixture(autouse=True)
def _own_cache(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's cache folder, inside the session's, made when a compile first writes."""
    folder = hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:16]
    monkeypatch.setenv("GLC_CACHE_DIR", os.path.join(request.config.glc_cache, folder))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rtl = [item for item in items if item.get_closest_marker("rtl")]
    absent = missing() if rtl else []
    if absent:
        skip = pytest.mark.skip(reason=f"the RTL toolchain is absent: {', '.join(absent)} "
                                       "not found (README, 'Set-up')")
        for item in rtl:
            item.add_marker(skip)
    if find_tool("yosys") is None:
        skip = pytest.mark.skip(reason="Yosys is absent: pip install -e '.[synth]'")
        for item in items:
            if item.get_closest_marker("synth"):
                item.add_marker(skip)
    if os.environ.get("GLC_SLOW") != "1":
        skip = pytest.mark.skip(reason="slow: run by scripts/bench.py (or set GLC_SLOW=1)")
        for item in items:
            if item.get_closest_marker("slow"):
                item.add_marker(skip)
