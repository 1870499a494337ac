"""Every program folder, interpreted, equals its independently computed output.npy."""

from __future__ import annotations

from pathlib import Path

import pytest

from glc.compare import compare
from glc.inputs import load
from glc.interp import interpret

PROGRAMS = sorted(p for p in (Path(__file__).parents[1] / "programs").iterdir() if p.is_dir())


@pytest.mark.parametrize("folder", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_program_interprets_to_its_output(folder):
    bundle = load(folder)
    assert bundle.expected is not None, "every shipped program carries output.npy"
    result, _ = interpret(bundle.program.body, bundle.arrays)
    verdict = compare(result, bundle.expected)
    assert verdict.match, verdict.detail
    if result.dtype.kind in "iu":
        assert verdict.max_abs_diff == 0.0
