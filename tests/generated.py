"""The generated samples the suite runs once and several tests read: compositions
(scripts/randcompose.py) on n16 and n4 and networks (scripts/netgen.py) on n16, each through
scripts/fuzz.py's workers two at a time, kept for the session — the generators' own tests and
tests/lower/test_lower_optimizations.py (each named optimization fires on them) share one run."""

from __future__ import annotations

import os
from functools import cache

from test_fuzz_programs import fuzz

COMPOSITIONS = {"n16": range(0, 64), "n4": range(64, 94)}
# ~1 minute on two cores; these seeds hold every feature of netgen.FEATURES between them (seeds
# 0-19 hold all but a Clip and a crop, which 32 and 48 add).
NETWORKS = (*range(0, 20), 32, 48)
JOBS = min(2, os.cpu_count() or 1)


@cache
def compositions(config: str) -> list:
    return fuzz.fuzz(COMPOSITIONS[config], "isa", config, timeout=60, jobs=JOBS,
                     progress=False, compositions=True)


@cache
def networks() -> list:
    return fuzz.fuzz(NETWORKS, "isa", "n16", timeout=120.0, jobs=JOBS,
                     progress=False, networks=True)
