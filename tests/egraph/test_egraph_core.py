"""The e-graph's invariants: hash-consing, congruence after rebuild, analysis = shape checker."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from egraph_model import (
    assert_invariants,
    congruence_classes,
    random_access_term,
    same_partition,
    subterms,
)
from egraph_rules import BASIC
from hypothesis import given, settings
from hypothesis import strategies as st

from glc.egraph.analysis import AnalysisMismatch
from glc.egraph.egraph import EGraph
from glc.egraph.extract import build_term, node_count, tree_costs
from glc.egraph.runner import Limits, Runner
from glc.inputs import load
from glc.interp import interpret
from glc.ir.check import type_of
from glc.ir.types import Access
from glc.rewrites import DEFAULT, select
from glc.syntax.reader import parse_term

PROGRAMS = sorted(p for p in (Path(__file__).resolve().parents[2] / "programs").iterdir()
                  if p.is_dir())
ENV = {"x": Access((3, 4), (), "int8"), "y": Access((3, 4), (), "int8"),
       "z": Access((4, 3), (), "int8")}


def term(text: str):
    return parse_term(text)


def test_adding_a_term_twice_shares_every_node():
    eg = EGraph(ENV)
    text = "(access-pair (access (access-tensor x) 1) (access (access-tensor x) 1))"
    first = eg.add_term(term(text))
    size = eg.enodes
    assert eg.add_term(term(text)) == first and eg.enodes == size
    # access-tensor x, symbol x, int 1, access, access-pair: the two operands are one node.
    assert size == 5
    assert_invariants(eg)


def test_union_then_rebuild_merges_congruent_parents():
    eg = EGraph(ENV)
    fx = eg.add_term(term("(compute relu (access (access-tensor x) 1))"))
    fy = eg.add_term(term("(compute relu (access (access-tensor y) 1))"))
    assert eg.find(fx) != eg.find(fy)
    eg.union(eg.lookup_term(term("x")), eg.lookup_term(term("y")))
    assert not eg.clean
    eg.rebuild()
    assert eg.find(fx) == eg.find(fy)
    assert_invariants(eg)


def test_union_of_different_types_is_a_bug_report_naming_both_terms():
    eg = EGraph(ENV)
    a = eg.add_term(term("(access-tensor x)"))
    b = eg.add_term(term("(access-tensor z)"))
    with pytest.raises(AnalysisMismatch) as error:
        eg.union(a, b)
    assert "(access-tensor x)" in str(error.value) and "(access-tensor z)" in str(error.value)


def test_lookup_term_finds_only_terms_the_egraph_holds():
    eg = EGraph(ENV)
    root = eg.add_term(term("(access (access-tensor x) 1)"))
    assert eg.lookup_term(term("(access (access-tensor x) 1)")) == root
    assert eg.lookup_term(term("(access (access-tensor x) 0)")) is None


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), count=st.integers(1, 6), unions=st.integers(0, 8))
def test_random_terms_and_unions_match_naive_congruence_closure(seed, count, unions):
    rng = random.Random(seed)
    terms = [random_access_term(rng, ENV, rng.randrange(1, 5)) for _ in range(count)]
    eg = EGraph(ENV)
    for t in terms:
        eg.add_term(t)
    nodes = subterms(terms)
    types = {t: type_of(t, ENV) for t in nodes}
    ids = {t: eg.lookup_term(t) for t in nodes}  # lookups need a rebuilt e-graph: take them now
    pairs = []
    for _ in range(unions):
        a = rng.choice(nodes)
        same = [t for t in nodes if types[t] == types[a]]
        b = rng.choice(same)
        pairs.append((a, b))
        eg.union(ids[a], ids[b])
        if rng.random() < 0.5:
            eg.rebuild()
    eg.rebuild()
    assert_invariants(eg)
    model = congruence_classes(terms, pairs)
    found = {t: eg.lookup_term(t) for t in nodes}
    assert same_partition(model, found)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_zero_boxes_of_random_terms_are_zero_when_evaluated(seed):
    rng = random.Random(seed)
    t = random_access_term(rng, ENV, 6)
    eg = EGraph(ENV)
    eg.add_term(t)
    eg.rebuild()
    arrays = {name: np.asarray(rng.choice([-3, -1, 1, 2]) * np.ones(a.dims), "int8")
              for name, a in ENV.items()}
    for sub in subterms([t]):
        data = eg.data(eg.lookup_term(sub))
        if isinstance(data.type, Access):
            value, _ = interpret(sub, arrays)
            for box in data.zeros:
                assert not value[tuple(slice(lo, hi) for lo, hi in box)].any(), (sub, box)


def test_zero_padding_is_tracked_through_slice_transpose_and_cartesian_product():
    env = {"x": Access((2, 3), (), "int8"), "w": Access((4, 3), (), "int8")}
    eg = EGraph(env)
    padded = eg.add_term(term("(access-pad (access-tensor x) zero-padding 0 1 2)"))
    # Rows 0 and 3..4 of the padded (5, 3) tensor are zero.
    assert set(eg.data(padded).zeros) == {((0, 1), (0, 3)), ((3, 5), (0, 3))}
    sliced = eg.add_term(term("(access-slice (access-pad (access-tensor x) zero-padding 0 1 2)"
                              " 0 2 5)"))
    assert eg.data(sliced).zeros == (((1, 3), (0, 3)),)
    turned = eg.add_term(term("(access-transpose (access-pad (access-tensor x) zero-padding 0 1 2)"
                              " (list 1 0))"))
    assert set(eg.data(turned).zeros) == {((0, 3), (0, 1)), ((0, 3), (3, 5))}
    product = eg.add_term(term(
        "(compute dot-product (access-cartesian-product (access (access-pad (access-tensor x)"
        " zero-padding 0 1 2) 1) (access (access-tensor w) 1)))"))
    # Padded rows of the left operand give zero rows of the (5, 4) product.
    assert set(eg.data(product).zeros) == {((0, 1), (0, 4)), ((3, 5), (0, 4))}


def _class_terms(eg: EGraph) -> dict[int, object]:
    best = tree_costs(eg, node_count)
    choice = {cid: node for cid, (_, node) in best.items()}
    return {cid: build_term(eg, cid, choice) for cid in eg.classes}


@pytest.mark.parametrize("rules", ["tests", "default", "all"])
@pytest.mark.parametrize("folder", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_analysis_agrees_with_the_checker_on_every_class(folder, rules):
    """Every class of each program's saturated e-graph: its type is the shape checker's type of
    a term it holds, and its zero boxes are zero in that term's value."""
    bundle = load(folder)
    eg = EGraph(bundle.env)
    eg.add_term(bundle.program.body)
    table = {"tests": BASIC, "default": select(DEFAULT, 16), "all": select("all", 16)}[rules]
    # Every set of the rule table, exploratory ones included, for a few iterations.
    Runner(table, Limits(iter_limit=6 if rules == "all" else 30)).run(eg)
    assert_invariants(eg)
    for cid, t in _class_terms(eg).items():
        data = eg.data(cid)
        assert type_of(t, bundle.env) == data.type
        if isinstance(data.type, Access) and data.zeros:
            value, _ = interpret(t, bundle.arrays)
            for box in data.zeros:
                assert not value[tuple(slice(lo, hi) for lo, hi in box)].any()


def test_windows_wholly_inside_zero_padding_are_zero_boxes():
    env = {"x": Access((2, 3), (), "int8")}
    eg = EGraph(env)
    # Columns 0..2 and 6..8 of the (2, 9) padded tensor are zero; width-2 windows at positions
    # 0..1 and 6..7 lie inside them.
    cid = eg.add_term(term("(access-windows (access (access-pad (access-tensor x) zero-padding 1"
                           " 3 3) 1) (shape 2) (shape 1))"))
    assert eg.type_of(cid) == Access((2, 8), (2,), "int8")
    assert set(eg.data(cid).zeros) == {((0, 2), (0, 2), (0, 2)), ((0, 2), (6, 8), (0, 2))}


def test_equal_numbers_of_different_kinds_keep_their_types():
    eg = EGraph(ENV)
    whole = eg.add_term(term("(access-literal (literal 1))"))
    real = eg.add_term(term("(access-literal (literal 1.0))"))
    assert eg.type_of(whole) == Access((), (), "int32")
    assert eg.type_of(real) == Access((), (), "float64")
