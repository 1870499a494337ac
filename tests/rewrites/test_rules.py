"""Every rewrite row, both sides evaluated: the right side equals the left on random inputs.

For each case the row's left side is matched at the root of a concrete term, the match is typed
by the e-graph's analysis (the shape checker's types and the zero boxes), the right side is built
and substituted, and
both terms are interpreted on seeded random inputs: equal exactly for integers, to a relative
tolerance for floats (only the summation order differs).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from rewrite_cases import APPLIES, ARRAY, REFUSES

from glc.egraph.analysis import make
from glc.egraph.rewrite import Match, match_term, substitute
from glc.errors import GlcError
from glc.inputs import random_inputs
from glc.interp import interpret
from glc.ir.ops import OPS
from glc.ir.term import Term, walk
from glc.ir.types import Access, is_int
from glc.rewrites import DEFAULT, RULESETS, all_rules, select
from glc.syntax.reader import parse_program

RULES = {rule.name: rule for rule in all_rules(ARRAY)}


def rewritten(name: str, source: str) -> tuple[Term, Term | None, dict]:
    """The case's term, the rule's right side substituted for its match (None if the rule
    refuses), and the case's input types."""
    program = parse_program(source, f"<{name}>")
    env = {d.name: Access(d.dims, (), d.dtype) for d in program.inputs.values()}
    term = program.body
    rule = RULES[name]
    bindings = match_term(rule.lhs, term)
    assert bindings is not None, f"{name}: the left side does not match the case"
    data: dict[int, object] = {}
    for node in walk(term):
        data[id(node)] = make(node.op, node.value, [data[id(a)] for a in node.args], env)
    rhs = rule.apply(Match(bindings, {v: data[id(t)].type for v, t in bindings.items()},
                           {v: data[id(t)].zeros for v, t in bindings.items()}))
    return term, None if rhs is None else substitute(rhs, bindings), env


def assert_same(left: np.ndarray, right: np.ndarray) -> None:
    assert left.shape == right.shape
    assert left.dtype == right.dtype
    if is_int(str(left.dtype)):
        assert np.array_equal(left, right)
    else:
        np.testing.assert_allclose(right, left, rtol=1e-12, atol=1e-12)


CASES = [pytest.param(name, i, source, id=f"{name}-{i}")
         for name, sources in APPLIES.items() for i, source in enumerate(sources)]


@pytest.mark.parametrize(("name", "index", "source"), CASES)
def test_both_sides_evaluate_equal(name, index, source):
    term, result, env = rewritten(name, source)
    assert result is not None, f"{name} did not apply"
    assert result != term
    for seed in range(3):
        arrays = random_inputs(env, list(env), seed)
        left, left_type = interpret(term, arrays)
        right, right_type = interpret(result, arrays)
        assert (right_type.shape, right_type.item) == (left_type.shape, left_type.item)
        assert_same(left, right)


REFUSALS = [pytest.param(name, source, id=f"{name}-{i}")
            for name, sources in REFUSES.items() for i, source in enumerate(sources)]


@pytest.mark.parametrize(("name", "source"), REFUSALS)
def test_row_refuses_where_it_would_be_wrong(name, source):
    _, result, _ = rewritten(name, source)
    assert result is None


def test_every_row_has_a_two_sided_case():
    assert sorted(set(RULES) - set(APPLIES)) == []


def test_rule_names_are_unique_and_cite_a_source():
    # A row may sit in two sets (the commutations serve layout and bubbling); a name must never
    # stand for two different rows.
    for size in (4, 16):
        rows: dict[str, set] = {}
        for maker in RULESETS.values():
            names = [rule.name for rule in maker(size)]
            assert len(set(names)) == len(names)
            for rule in maker(size):
                rhs = rule.rhs if isinstance(rule.rhs, Term) else rule.rhs.__qualname__
                rows.setdefault(rule.name, set()).add((rule.lhs, rhs, rule.source))
        assert {name: len(kinds) for name, kinds in rows.items() if len(kinds) > 1} == {}
        table = all_rules(size)
        assert sorted(rule.name for rule in table) == sorted(rows)
        assert all(rule.source for rule in table)


def test_select_combines_sets_once_each_for_the_array_size():
    table = select("tensorise,im2col,tensorise", 8)
    names = [rule.name for rule in table]
    assert names == ["vector-operand-first", "systolic-array", "systolic-array-with-blocking-8-8",
                     "flatten-unflatten-any-access", "bubble-reshape-through-cartesian-product",
                     "bubble-reshape-through-cartesian-product-left",
                     "bubble-reshape-through-cartesian-product-right",
                     "bubble-reshape-through-compute-dot-product"]
    layout_and_bubble = {r.name for r in select("layout,bubble", 8)}
    assert len(layout_and_bubble) == len(select("layout,bubble", 8))
    assert {r.name for r in select(DEFAULT, 16)} == {r.name for r in select("im2col", 16)} | {
        r.name for r in select("tensorise", 16)}


@pytest.mark.parametrize(("names", "size", "message"), [
    ("im2col,tiling", 16, "unknown rule set 'tiling'"),
    ("", 16, "unknown rule set"),
    ("im2col", 0, "array size must be at least 1"),
])
def test_select_rejects_unknown_sets_and_sizes(names, size, message):
    with pytest.raises(GlcError, match=message):
        select(names, size)


def _operators(text: str) -> list[str]:
    """The operators a right side names, in order: each ``(name`` that is an operator."""
    return [name for name in re.findall(r"\(([a-z][a-z-]*)", text) if name in OPS]


@pytest.mark.parametrize("name", sorted(n for n, rule in RULES.items() if callable(rule.rhs)))
def test_a_computed_right_side_shows_what_it_produces(name):
    # Issue 41 item 18: glc rules printed "(computed from the match)" for 24 of 44 rows. What a
    # row shows must be what it builds: its operators, in order, the built term's outermost.
    shown = _operators(RULES[name].shows)
    _, result, _ = rewritten(name, APPLIES[name][0])
    built = [node.op for node in _preorder(result)]
    assert shown and shown[0] == result.op, (RULES[name].shows, result.op)
    remaining = iter(built)
    assert all(op in remaining for op in shown), (shown, built)


def _preorder(term: Term):
    yield term
    for arg in term.args:
        yield from _preorder(arg)
