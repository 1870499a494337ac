"""The test rule set (egraph_rules.BASIC): names unique, and both sides of every row evaluate
to the same tensor on an instance."""

from __future__ import annotations

import numpy as np
import pytest
from egraph_rules import BASIC

from glc.egraph.rewrite import Match, match_term, substitute
from glc.inputs import random_inputs
from glc.interp import interpret
from glc.ir.check import type_of
from glc.ir.types import Access
from glc.syntax.reader import parse_term

ENV = {"x": Access((3, 4), (), "int8"), "w": Access((5, 4), (), "int8"),
       "v": Access((2, 3, 4), (), "int8")}
CASES = {
    "access-of-access": ["(access (access (access-tensor v) 1) 2)"],
    "transpose-of-transpose": [
        "(access-transpose (access-transpose (access-tensor v) (list 1 2 0)) (list 2 0 1))",
        "(access-transpose (access-transpose (access-tensor v) (list 1 2 0)) (list 1 0 2))"],
    "transpose-of-access": ["(access-transpose (access (access-tensor v) 1) (list 2 0 1))"],
    "slice-undoes-pad": [
        "(access-slice (access-pad (access-tensor x) zero-padding 1 2 3) 1 2 6)",
        "(access-slice (access-pad (access-tensor x) min-padding 0 1 0) 0 1 4)"],
    "commute-cartesian-product": [
        "(compute dot-product (access-cartesian-product (access (access-tensor x) 1)"
        " (access (access-tensor w) 1)))",
        "(compute dot-product (access-cartesian-product (access (access-tensor v) 2)"
        " (access (access-tensor w) 1)))"],
}
RULES = {rule.name: rule for rule in BASIC}


def test_names_are_unique_and_every_row_has_a_case():
    assert len(RULES) == len(BASIC)
    assert set(CASES) == set(RULES)


@pytest.mark.parametrize("name,text", [(n, t) for n, ts in CASES.items() for t in ts])
def test_both_sides_are_equal(name, text):
    rule = RULES[name]
    term = parse_term(text)
    bindings = match_term(rule.lhs, term)
    assert bindings is not None
    match = Match(bindings, {v: type_of(b, ENV) for v, b in bindings.items()})
    rhs = rule.apply(match)
    assert rhs is not None
    right = substitute(rhs, bindings)
    arrays = random_inputs(ENV, list(ENV), seed=1)
    left_value, left_type = interpret(term, arrays)
    right_value, right_type = interpret(right, arrays)
    assert left_type == right_type and np.array_equal(left_value, right_value)


def test_slice_undoes_pad_only_for_the_unpadded_range():
    rule = RULES["slice-undoes-pad"]
    term = parse_term("(access-slice (access-pad (access-tensor x) zero-padding 1 2 3) 1 1 5)")
    bindings = match_term(rule.lhs, term)
    assert rule.apply(Match(bindings, {v: type_of(b, ENV) for v, b in bindings.items()})) is None
