"""Concatenations (glc/lower/concat.py): an int8 concatenation whose parts fill contiguous slices
is copies on the vector unit, each part into its slice; any other stays a host step."""

from __future__ import annotations

import numpy as np
import pytest

from glc.hwconfig import load_config
from glc.interp import env_types, interpret
from glc.lower.concat import parts
from glc.lower.execute import execute
from glc.lower.lowering import lower
from glc.syntax.reader import parse_term

# A kernel's int8 result, a transposed input (no contiguous run) and an input as it lies.
KERNEL = ("(compute (requantize 6) (systolic-array 24 16 (access (access-tensor a) 1) "
          "(access (access-tensor b) 0)))")
PARTS = [KERNEL, "(access-transpose (access-tensor c) (list 1 0))", "(access-tensor d)"]


def _arrays(rng, m2: int = 5):
    def i8(*shape):
        return rng.integers(-128, 128, shape).astype(np.int8)
    return {"a": i8(12, 24), "b": i8(24, 16), "c": i8(16, m2), "d": i8(8, 16)}


def _concatenated(texts: list[str], axis: int) -> str:
    term = texts[0]
    for text in texts[1:]:
        term = f"(access-concatenate {term} {text} {axis})"
    return term


@pytest.mark.parametrize("config,engine", [("n4", "isa"), ("n16", "isa"), ("n4", "rtl")])
def test_a_concatenation_is_copies_into_its_slices(config, engine):
    arrays = _arrays(np.random.default_rng(3))
    term = parse_term(_concatenated(PARTS, 0))
    program = lower(term, env_types(arrays), load_config(config))
    assert not program.host_steps
    copies = [s for s in program.kernels if s.name.startswith("concat")]
    assert len(copies) == 3 and all(s.kernel.kind == "fold" for s in copies)
    # labelled as the concatenation, so glc run --report names them after its node
    assert all(parse_term(s.kernel.label).op == "access-concatenate" for s in copies)
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, engine)
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]


def test_an_nchw_channel_concatenation_of_maps_is_on_the_accelerator():
    rng = np.random.default_rng(4)
    arrays = {"x": rng.integers(-128, 128, (1, 3, 4, 8)).astype(np.int8),
              "y": rng.integers(-128, 128, (1, 8, 4, 2)).astype(np.int8)}
    # y seen as (1, 2, 4, 8): a part whose last dim is not contiguous
    term = parse_term(_concatenated(["(access-tensor x)",
                                     "(access-transpose (access-tensor y) (list 0 3 2 1))"], 1))
    program = lower(term, env_types(arrays), load_config("n4"))
    assert not program.host_steps
    expected, _ = interpret(term, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)


def test_a_concatenation_whose_slices_interleave_stays_a_host_step():
    """Along dim 1 of a matrix each part's rows alternate with the other's: no one slice."""
    arrays = _arrays(np.random.default_rng(5), m2=12)
    term = parse_term(_concatenated([KERNEL, PARTS[1]], 1))
    program = lower(term, env_types(arrays), load_config("n4"))
    assert [s.name for s in program.host_steps] and \
        not [s for s in program.kernels if s.name.startswith("concat")]
    expected, _ = interpret(term, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)


def test_parts_are_the_chains_operands_in_order():
    term = parse_term(_concatenated(["(access-tensor c)", "(access-tensor d)",
                                     "(access-tensor a)"], 0))
    assert [p.args[0].value for p in parts(term)] == ["c", "d", "a"]
