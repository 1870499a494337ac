"""The runner: rules apply, every stop reason is reached and reported, backoff bans explosive
rules without starving the others, and ill-typed right sides are skipped and counted."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from egraph_model import assert_invariants, random_access_term, rewritable_term
from egraph_rules import BASIC
from hypothesis import given, settings
from hypothesis import strategies as st

from glc.egraph.analysis import AnalysisMismatch
from glc.egraph.egraph import EGraph
from glc.egraph.extract import exact
from glc.egraph.rewrite import Rewrite, rewrite
from glc.egraph.runner import (
    ITERATION_LIMIT,
    NODE_LIMIT,
    SATURATED,
    TIME_LIMIT,
    BackoffScheduler,
    Limits,
    Runner,
)
from glc.inputs import load, random_inputs
from glc.interp import interpret
from glc.ir.types import Access
from glc.syntax.reader import parse_term

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"
ENV = {"x": Access((3, 4), (), "int8")}
# Sound, and never saturates: each iteration wraps every class in one more insert/squeeze pair.
EXPLOSIVE = rewrite("insert-then-squeeze", "?a", "(access-squeeze (access-insert-axis ?a 0) 0)")
TRANSPOSES = "(access-transpose (access-transpose (access-tensor x) (list 1 0)) (list 1 0))"


def graph(text: str) -> tuple[EGraph, int]:
    eg = EGraph(ENV)
    return eg, eg.add_term(parse_term(text))


def test_a_rule_applies_and_the_runner_saturates():
    eg, root = graph(TRANSPOSES)
    report = Runner(BASIC).run(eg)
    assert report.stop_reason == SATURATED
    assert eg.find(root) == eg.lookup_term(parse_term("(access-tensor x)"))
    assert report.iterations[0].applied == {"transpose-of-transpose": 1}
    assert report.iterations[-1].applied == {}
    assert_invariants(eg)


def test_iteration_limit():
    eg, _ = graph("(access-tensor x)")
    report = Runner([EXPLOSIVE], Limits(iter_limit=3)).run(eg)
    assert report.stop_reason == ITERATION_LIMIT and len(report.iterations) == 3


def test_node_limit():
    eg, _ = graph("(access-tensor x)")
    report = Runner([EXPLOSIVE], Limits(node_limit=40)).run(eg)
    assert report.stop_reason == NODE_LIMIT and eg.enodes > 40
    assert_invariants(eg)  # stopped mid-iteration, still rebuilt


def test_time_limit():
    eg, _ = graph("(access-tensor x)")
    report = Runner([EXPLOSIVE], Limits(time_limit=0.0)).run(eg)
    assert report.stop_reason == TIME_LIMIT and len(report.iterations) == 1


def test_backoff_bans_the_explosive_rule_and_the_others_still_saturate():
    eg, root = graph(TRANSPOSES)
    runner = Runner([EXPLOSIVE, *BASIC], Limits(iter_limit=12),
                    BackoffScheduler(match_limit=4, ban_length=2))
    report = runner.run(eg)
    banned = [it.index for it in report.iterations if "insert-then-squeeze" in it.banned]
    assert banned, "the explosive rule was never banned"
    assert any(it.applied.get("transpose-of-transpose") for it in report.iterations)
    assert eg.find(root) == eg.lookup_term(parse_term("(access-tensor x)"))
    # Bans double: each ban after the first starts later than the previous one ended.
    assert all(b - a > 2 for a, b in zip(banned, banned[1:], strict=False))


def test_ill_typed_right_sides_are_skipped_and_counted():
    eg, _ = graph("(access (access-tensor x) 1)")
    rule = rewrite("insert-far", "(access ?a ?k)",
                   "(access-squeeze (access-insert-axis (access ?a ?k) 7) 7)")
    report = Runner([rule]).run(eg)
    assert report.stop_reason == SATURATED
    assert report.iterations[0].skipped == {"insert-far": 1}
    assert "ill-typed right sides skipped: insert-far 1" in report.iterations[0].line()


def test_an_unsound_rule_is_a_bug_report_naming_it():
    eg, _ = graph("(access (access-tensor x) 1)")
    wrong = rewrite("wrong", "(access ?a 1)", "(access ?a 0)")
    with pytest.raises(AnalysisMismatch, match="rule wrong: cannot merge"):
        Runner([wrong]).run(eg)


def test_duplicate_names_and_unbound_variables_are_rejected():
    with pytest.raises(ValueError, match="two rules are named"):
        Runner([BASIC[0], BASIC[0]])
    lhs = parse_term("(access ?a ?k)", allow_vars=True)
    rhs = parse_term("(access ?b ?k)", allow_vars=True)
    with pytest.raises(ValueError, match=r"unbound \?b"):
        Runner([Rewrite("bad", lhs, rhs)])


def test_the_report_lines_and_json():
    eg, _ = graph(TRANSPOSES)
    report = Runner(BASIC).run(eg)
    lines = report.lines()
    assert len(lines) == len(report.iterations) + 1
    assert lines[0].startswith("iteration 1: ") and "transpose-of-transpose 1" in lines[0]
    assert lines[-1].startswith("stopped: saturated after 2 iterations")
    figures = report.to_json()
    assert figures == {"enodes": eg.enodes, "eclasses": eg.eclasses, "iterations": 2,
                       "stop_reason": "saturated", "seconds": figures["seconds"]}


@pytest.mark.parametrize("folder", sorted(p for p in PROGRAMS.iterdir() if p.is_dir()),
                         ids=lambda p: p.name)
def test_saturated_programs_extract_to_terms_with_the_expected_output(folder):
    bundle = load(folder)
    eg = EGraph(bundle.env)
    root = eg.add_term(bundle.program.body)
    assert Runner(BASIC).run(eg).stop_reason == SATURATED
    term = exact(eg, root).term
    value, _ = interpret(term, bundle.arrays)
    if value.dtype.kind == "f":
        assert np.allclose(value, bundle.expected, rtol=1e-12, atol=0)
    else:
        assert value.dtype == bundle.expected.dtype and np.array_equal(value, bundle.expected)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_runs_on_random_terms_keep_the_invariants_and_the_values(seed):
    """Saturating random terms (adds and unions interleaved within each iteration) leaves a
    rebuilt e-graph, and every class's cheapest term evaluates like a term it started from."""
    rng = random.Random(seed)
    env = {"x": Access((3, 4), (), "int8"), "y": Access((4, 3), (), "int8")}
    terms = [random_access_term(rng, env, 5), rewritable_term(rng, env),
             rewritable_term(rng, env)]
    eg = EGraph(env)
    roots = [eg.add_term(t) for t in terms]
    Runner(BASIC, Limits(iter_limit=6)).run(eg)
    assert_invariants(eg)
    arrays = random_inputs(env, list(env), seed=seed % 1000)
    for t, root in zip(terms, roots, strict=True):
        expected, ty = interpret(t, arrays)
        got, got_ty = interpret(exact(eg, root).term, arrays)
        assert got_ty == ty == eg.type_of(root) and np.array_equal(got, expected)
