"""Mangled programs never crash the front end: every outcome is a result or a located GlcError."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from glc.errors import GlcError, Span
from glc.inputs import find_program
from glc.ir.check import type_of
from glc.ir.types import Access
from glc.syntax.reader import parse_program

PROGRAMS = sorted(p for p in (Path(__file__).parents[2] / "programs").iterdir() if p.is_dir())
SOURCES = [find_program(p)[0].read_text() for p in PROGRAMS]
TOKENS = ["(", ")", "access", "0", "7", "-1", "2.5", "x", "(shape 1 2)", "(list 1 0)",
          "zero-padding", "relu", "(requantize 3)", "?a", ";", "\n", "access-windows"]


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
