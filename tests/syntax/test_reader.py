"""The reader: forms, declarations, defines, located errors, and the print/parse round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from glc.errors import GlcError
from glc.inputs import find_program
from glc.ir.term import share, walk
from glc.syntax.printer import print_dag, print_program, print_term
from glc.syntax.reader import parse_program, parse_term, read_program

PROGRAMS = sorted(p for p in (Path(__file__).parents[2] / "programs").iterdir() if p.is_dir())


def test_plain_glenside_is_a_program():
    program = parse_program("(access (access-tensor a) 1)")
    assert program.inputs == {} and program.defines == {}
    assert program.body == parse_term("(access (access-tensor a) 1)")


def test_declarations_defines_and_comments():
    program = parse_program("""
        ; a comment
        (input a (shape 2 3) int8)   ; trailing comment
        (define h (compute relu (access a 1)))
        (compute reduce-max h)
    """, "k.gls")
    assert program.inputs["a"].dims == (2, 3) and program.inputs["a"].dtype == "int8"
    assert program.inputs["a"].span.line == 3
    assert program.body.args[1] is program.defines["h"]  # sharing, not a copy


def test_literals_and_compute_types():
    term = parse_term("(compute (requantize 7) (access-literal (literal -1.5e-3)))")
    assert term.args[0].value == ("requantize", 7)
    assert term.args[1].args[0].args[0].value == -1.5e-3


def test_pattern_variables_only_when_allowed():
    pattern = parse_term("(access ?a ?k)", allow_vars=True)
    assert [t.op for t in walk(pattern)] == ["var", "var", "access"]
    with pytest.raises(GlcError, match="expected an access pattern, got '\\?a'"):
        parse_term("(access ?a ?k)")


def test_spans_locate_every_node():
    term = parse_term("(access-slice\n  (access x 1)\n  0 1 2)", "s.gls")
    assert (term.span.line, term.span.col) == (1, 1)
    assert (term.args[0].span.line, term.args[0].span.col) == (2, 3)
    assert (term.args[2].span.line, term.args[2].span.col) == (3, 5)


# (source, message fragment, line, column)
SYNTAX_ERRORS = [
    ("(access x 1", "never closed; expected ')'", 1, 1),
    ("(access x 1))", "unexpected ')'", 1, 13),
    ("(acess x 1)", "unknown operator 'acess'; did you mean 'access'?", 1, 2),
    ("(access x)", "access takes 2 arguments (access, int), got 1", 1, 1),
    ("(access x 1 2)", "access takes 2 arguments", 1, 1),
    ("(access x -1)", "expected a non-negative integer, got '-1'", 1, 11),
    ("(access x y)", "expected a non-negative integer, got 'y'", 1, 11),
    ("(access 3 1)", "expected an access pattern, got the number 3", 1, 9),
    ("(compute relux (access x 1))", "unknown compute type 'relux'", 1, 10),
    ("(compute requantize (access x 1))", "takes a parameter", 1, 10),
    ("(compute (requantize x) (access x 1))", "needs a non-negative integer k", 1, 22),
    ("(access-pad x one-padding 0 1 1)", "expected a padding type", 1, 15),
    ("()", "empty form", 1, 1),
    ("(input a (shape 2) int9)\n(access a 1)", "unknown dtype 'int9'", 1, 20),
    ("(input a (shape 2))\n(access a 1)", "expected (input NAME (shape d...) DTYPE)", 1, 1),
    ("(define access (access x 1))\nx", "cannot define 'access'", 1, 9),
    ("(access x 1)\n(access x 1)", "result expression must be the last form", 1, 1),
    ("(input a (shape 2) int8)", "expected the result expression", 1, 1),
    ("", "empty program", 1, 1),
    ("(access access 1)", "operator 'access' must be applied", 1, 9),
]


@pytest.mark.parametrize("source,fragment,line,col", SYNTAX_ERRORS,
                         ids=[e[0][:40] for e in SYNTAX_ERRORS])
def test_malformed_source_is_a_located_error(source, fragment, line, col):
    with pytest.raises(GlcError) as caught:
        parse_program(source, "bad.gls")
    assert fragment in caught.value.message
    where = caught.value.where
    assert (where.file, where.line, where.col) == ("bad.gls", line, col)


@pytest.mark.parametrize("folder", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_print_parse_round_trip(folder):
    program = read_program(find_program(folder)[0])
    text = print_program(program)
    again = parse_program(text, "printed.gls")
    assert again.body == program.body
    assert {n: (d.dims, d.dtype) for n, d in again.inputs.items()} == \
        {n: (d.dims, d.dtype) for n, d in program.inputs.items()}
    assert print_program(again) == text


def test_printer_breaks_long_forms_and_keeps_short_ones():
    short = "(access (access-tensor a) 1)"
    assert print_term(parse_term(short)) == short
    long = parse_term("(access-pair (access-transpose (access-tensor abcdefghijklmnop) (list 1 0))"
                      " (access-transpose (access-tensor qrstuvwxyzabcdef) (list 1 0)))")
    text = print_term(long)
    assert "\n" in text and max(len(line) for line in text.splitlines()) <= 100
    assert parse_term(text) == long


def test_reading_hash_conses_equal_sub_terms():
    # Written twice, not defined: still one node, the first occurrence (its span kept).
    program = parse_program("(input a (shape 2 3) int8)\n(access-pair (access (access-tensor a) 1)"
                            "\n (access (access-tensor a) 1))", "p.gls")
    left, right = program.body.args
    assert left is right and (left.span.line, left.span.col) == (2, 14)
    assert len(walk(program.body)) == 5  # a, access-tensor, 1, access, access-pair
    # 0.0 and -0.0 are equal floats but different literals: not merged
    zeros = parse_term("(access-pair (access-literal (literal 0.0)) "
                       "(access-literal (literal -0.0)))")
    assert share(zeros).args[0] is not share(zeros).args[1]


def test_print_dag_writes_a_shared_sub_term_once_and_reads_back():
    depth = 40  # d_i = d_(i-1) paired with itself: 2^40 leaves as a tree
    body = "(access-tensor x)"
    lines = []
    for i in range(depth):
        lines.append(f"(define d{i} {body})")
        body = f"(access (access-pair d{i} d{i}) 1)"
    text = print_dag(parse_program("(input x (shape 2) int8)\n" + "\n".join(lines) +
                                   f"\n{body}").body, taken=["x"])
    assert text.count("(define shared") == depth and len(text) < 100 * depth
    again = parse_program("(input x (shape 2) int8)\n" + text)
    assert again.body == parse_program("(input x (shape 2) int8)\n" + "\n".join(lines) +
                                       f"\n{body}").body
