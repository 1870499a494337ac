"""Mangled inputs never crash glc: every outcome is a result or one located error line.

The front end directly (parse and check, the located GlcError), then the real CLI on each
fuzz target of fuzz_inputs.py — program text (mangled and deep), .npy inputs, --shapes JSON,
configuration TOML, ONNX models and -o targets — within a CI budget of examples; campaign() runs
the same targets longer (docs/reliability.md).
"""

from __future__ import annotations

import pytest
from fuzz_inputs import SOURCES, TARGETS, TOKENS, fuzz
from hypothesis import given, settings
from hypothesis import strategies as st

from glc.errors import GlcError, Span
from glc.ir.check import type_of
from glc.ir.types import Access
from glc.syntax.reader import parse_program

# Examples per target in CI: about 35 s on the whole (the deep programs cost the most each).
BUDGET = {"programs": 200, "programs-interp": 100, "deep-programs": 15, "npy-inputs": 150,
          "shapes-json": 150, "config-toml": 60, "onnx-import": 60, "output-paths": 40}
# The targets that need the onnx extra (onnx, onnxruntime).
NEEDS_ONNX = {"onnx-import", "output-paths"}


def front_end(text: str) -> None:
    """Parse and check; a user error must carry a location inside the text."""
    try:
        program = parse_program(text, "fuzz.gls")
        env = {name: Access(d.dims, (), d.dtype) for name, d in program.inputs.items()}
        type_of(program.body, env)
    except GlcError as error:
        assert isinstance(error.where, Span)
        assert 1 <= error.where.line <= text.count("\n") + 1
        assert str(error).startswith("fuzz.gls:")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SOURCES), st.data())
def test_truncated_and_spliced_programs_give_located_errors(source, data):
    cut = data.draw(st.integers(0, len(source)))
    insert = data.draw(st.lists(st.sampled_from(TOKENS), max_size=3))
    drop = data.draw(st.integers(0, 12))
    front_end(source[:cut] + " ".join(insert) + source[cut + drop:])


def test_every_target_has_a_budget():
    assert set(BUDGET) == set(TARGETS)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_cli_exits_0_or_1_with_one_located_line(target):
    if target in NEEDS_ONNX:
        pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    assert fuzz(target, BUDGET[target]) == BUDGET[target]
