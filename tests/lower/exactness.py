"""What the lowering's tests check of every program they run: the interpreter's result, in the
cycle model's cycles."""

from __future__ import annotations

import numpy as np

from glc.interp import interpret
from glc.lower.execute import execute


def exact(term, arrays, program, engine: str = "isa"):
    """``program`` run on ``engine``: its result the interpreter's, its cycles the model's, and
    on the ISA simulator no two units' accesses of a local row left unordered by tokens."""
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, engine, check_races=engine == "isa")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]
    return outcome
