"""The lowering's optimizations by name (glc/lower/optimizations.py): each one is switched off
and counted where the lowering makes its choice, and each fires on generated inputs — the
compositions and networks the suite runs anyway (tests/generated.py) — so the generators reach
every situation an optimization changes, and the differential tests check it there. An
optimization added to the table without generator coverage fails here."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: generated.py

from generated import compositions, networks  # noqa: E402

from glc.lower.optimizations import NAMES  # noqa: E402

# One xdist worker runs every test that reads the generated sample (scripts/test.sh runs the
# suite with --dist loadgroup): a worker generates and runs it once, for all of them.
pytestmark = pytest.mark.xdist_group("generated")

LOWER = Path(__file__).resolve().parents[2] / "glc" / "lower"


def test_each_optimization_is_one_the_lowering_can_switch_off():
    """Every name of the table is asked of ``enabled`` somewhere in glc/lower/, and nothing
    else is (its counting is shown by the firing below)."""
    source = "\n".join(p.read_text() for p in LOWER.glob("*.py"))
    switched = set(re.findall(r'enabled\("([a-z-]+)"\)', source))
    assert switched == set(NAMES), set(NAMES) ^ switched


def test_every_optimization_fires_on_generated_compositions_and_networks():
    outcomes = [*compositions("n16"), *compositions("n4"), *networks()]
    fired = {name for o in outcomes if o.kind == "pass" for name in o.fired}
    assert set(NAMES) - fired == set()
