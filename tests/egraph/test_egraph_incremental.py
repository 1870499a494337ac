"""Semi-naive matching (glc/egraph/runner.py) against full searches: the same saturated e-graph,
and a saturated e-graph is closed — a fresh run of every rule over it adds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from egraph_model import assert_invariants
from egraph_rules import BASIC

from glc.egraph.egraph import EGraph
from glc.egraph.runner import SATURATED, BackoffScheduler, Limits, Runner
from glc.inputs import load
from glc.ir.types import Access
from glc.rewrites import DEFAULT, select
from glc.syntax.reader import parse_term

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"
LIMITS = Limits(iter_limit=60, node_limit=20_000, time_limit=60)
# (program, rule sets) pairs that saturate in well under a second, e-graphs of 100–6 000 e-nodes.
CASES = [(p.name, DEFAULT) for p in sorted(PROGRAMS.iterdir()) if p.is_dir()] + [
    ("attention-qkt-int8", "pad,split"),
    ("cnn-int8", "split-reduced,im2col,tensorise,cleanup"),
    ("cnn-int8", "orientation,cleanup,im2col,tensorise"),
    ("residual-add-int8", "split-reduced,im2col,tensorise,cleanup"),
    ("resnet-block-28-int8", "layout"),
    ("resnet-block-28-int8", "orientation,cleanup,im2col,tensorise"),
]


def saturate(program: str, rules: str, incremental: bool) -> EGraph:
    bundle = load(PROGRAMS / program)
    eg = EGraph(bundle.env)
    eg.add_term(bundle.program.body)
    report = Runner(select(rules, 16), LIMITS, incremental=incremental).run(eg)
    assert report.stop_reason == SATURATED
    return eg


def shape(eg: EGraph) -> tuple[int, int, list[int]]:
    """The e-graph up to class renaming: sizes and the sorted class sizes."""
    return eg.enodes, eg.eclasses, sorted(len(c.nodes) for c in eg.classes.values())


@pytest.mark.parametrize(("program", "rules"), CASES, ids=[f"{p}-{r}" for p, r in CASES])
def test_semi_naive_and_full_searches_saturate_to_the_same_e_graph(program, rules):
    fast = saturate(program, rules, incremental=True)
    assert_invariants(fast)
    assert shape(fast) == shape(saturate(program, rules, incremental=False))
    # Closed: every rule searched afresh over the whole e-graph finds nothing new.
    before = shape(fast)
    again = Runner(select(rules, 16), LIMITS, incremental=False).run(fast)
    assert again.stop_reason == SATURATED and shape(fast) == before
    assert all(not it.applied for it in again.iterations)


def test_saturation_waits_for_a_rule_whose_ban_ends_next_iteration():
    """A rule banned in the iteration that applied nothing has not searched since: the run may
    not stop as saturated before it does (the check was one iteration late: it declared
    saturation with a rule's matches never applied)."""
    eg = EGraph({"x": Access((3, 4), (), "int8")})
    # Two matches of transpose-of-transpose; at most one allowed at first: banned one iteration.
    eg.add_term(parse_term("(access-pair (access-transpose (access-transpose (access-tensor x) "
                           "(list 1 0)) (list 1 0)) (access-transpose (access-transpose "
                           "(access-tensor x) (list 0 1)) (list 0 1)))"))
    report = Runner(BASIC, scheduler=BackoffScheduler(match_limit=1, ban_length=1)).run(eg)
    assert report.stop_reason == SATURATED
    applied = [it.applied for it in report.iterations]
    assert {"transpose-of-transpose": 2} in applied, applied
