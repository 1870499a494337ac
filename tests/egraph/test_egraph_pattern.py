"""E-matching: the compiled patterns find exactly the syntactic matches, through the index."""

from __future__ import annotations

import random

from egraph_model import random_access_term, subterms
from hypothesis import given, settings
from hypothesis import strategies as st

from glc.egraph.egraph import EGraph
from glc.egraph.pattern import Pattern
from glc.egraph.rewrite import match_term, substitute
from glc.ir.types import Access
from glc.syntax.reader import parse_term

ENV = {"x": Access((3, 4), (), "int8"), "y": Access((3, 4), (), "int8")}
PATTERNS = [
    "(access ?a ?k)",
    "(access (access ?a ?i) ?j)",
    "(access-transpose ?a (list 1 0))",
    "(access-pad ?a zero-padding ?k ?b ?e)",
    "(access-cartesian-product ?a ?a)",
    "(access-slice (access-pad ?a ?p ?k ?b ?e) ?k ?lo ?hi)",
    "(compute relu ?x)",
    "?x",
]


def pattern(text: str) -> Pattern:
    return Pattern(parse_term(text, allow_vars=True))


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), which=st.sampled_from(PATTERNS))
def test_ematching_a_term_finds_its_syntactic_matches(seed, which):
    """Without unions an e-graph holds each sub-term once, so the e-matches are exactly the
    sub-terms ``match_term`` matches, with the same bindings."""
    rng = random.Random(seed)
    terms = [random_access_term(rng, ENV, 5) for _ in range(3)]
    eg = EGraph(ENV)
    for t in terms:
        eg.add_term(t)
    eg.rebuild()
    pat = parse_term(which, allow_vars=True)
    expected = set()
    for sub in subterms(terms):
        bindings = match_term(pat, sub)
        if bindings is not None:
            expected.add((eg.lookup_term(sub), frozenset(
                (v, eg.lookup_term(b)) for v, b in bindings.items())))
    found = {(cid, frozenset(subst.items())) for cid, subst in Pattern(pat).search(eg)}
    assert found == expected


def test_a_match_through_a_union_needs_no_syntactic_witness():
    eg = EGraph(ENV)
    inner = eg.add_term(parse_term("(access (access-tensor x) 2)"))
    outer = eg.add_term(parse_term("(access (access-tensor y) 0)"))
    eg.union(eg.lookup_term(parse_term("(access-tensor y)")), inner)
    eg.rebuild()
    found = pattern("(access (access ?a ?i) ?j)").search(eg)
    x = eg.lookup_term(parse_term("(access-tensor x)"))
    two, zero = (eg.lookup(("int", k, ())) for k in (2, 0))
    assert (eg.find(outer), {"a": x, "i": two, "j": zero}) in found


def test_ground_subpatterns_are_looked_up_and_absent_ones_match_nothing():
    eg = EGraph(ENV)
    root = eg.add_term(parse_term("(access-transpose (access-tensor x) (list 1 0))"))
    eg.rebuild()
    assert pattern("(access-transpose ?a (list 1 0))").search_class(eg, root) != []
    assert pattern("(access-transpose ?a (list 0 1))").search(eg) == []


def test_instantiate_adds_nothing_when_a_shape_rule_fails():
    eg = EGraph(ENV)
    x = eg.add_term(parse_term("(access-tensor x)"))
    eg.rebuild()
    size = eg.enodes
    # Inserting an axis at 7 is ill-typed for a 2-d tensor: the outer node fails, and the
    # inner (access ?a 1), which would type, must not be left behind.
    bad = pattern("(access-insert-axis (access ?a 1) 7)")
    assert bad.instantiate(eg, {"a": x}) is None
    assert eg.enodes == size
    good = pattern("(access-insert-axis (access ?a 1) 2)")
    cid = good.instantiate(eg, {"a": x})
    assert eg.lookup_term(substitute(parse_term("(access-insert-axis (access ?a 1) 2)",
                                                allow_vars=True),
                                     {"a": parse_term("(access-tensor x)")})) == cid
