"""The four demonstrations: rewriting alone maps each program onto the systolic array.

Each runs the named rule sets on the e-graph within limits that end it in under 2 s, asserts the
target form is in the root's e-class, then extracts with the cost that makes an un-tensorised
dot-product prohibitive and checks the extracted term has none and interprets equal to the
program (bit for bit: the programs are int8).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from glc.egraph.egraph import EGraph
from glc.egraph.extract import greedy
from glc.egraph.pattern import Pattern
from glc.egraph.runner import Limits, Runner
from glc.inputs import load, random_inputs
from glc.interp import interpret
from glc.ir.term import Term, walk
from glc.ir.types import Access, AccessShape
from glc.rewrites import select
from glc.rewrites.cost import PROHIBITIVE, fits, tensorised
from glc.syntax.reader import parse_term

PROGRAMS = Path(__file__).resolve().parent / "programs"
DEMOS = json.loads((PROGRAMS / "demonstrations.json").read_text())
SECONDS = 2.0


def saturate(name: str):
    """The demonstration's program, its e-graph after the run, the root class and the report."""
    demo = DEMOS[name]
    bundle = load(PROGRAMS / demo["program"])
    eg = EGraph(bundle.env)
    root = eg.add_term(bundle.program.body)
    limits = Limits(iter_limit=demo["iter_limit"], time_limit=SECONDS)
    report = Runner(select(demo["rules"], demo["array_size"]), limits).run(eg)
    return bundle, eg, eg.find(root), report


def arrays_of(term: Term) -> list[Term]:
    return [t for t in walk(term) if t.op in ("systolic-array", "systolic-array-with-blocking")]


def dot_products(term: Term) -> list[Term]:
    return [t for t in walk(term) if t.op == "compute" and t.args[0].value == ("dot-product",)]


def assert_interprets_equal(bundle, term: Term) -> None:
    for seed in range(2):
        arrays = random_inputs(bundle.env, bundle.symbols, seed)
        expected, _ = interpret(bundle.program.body, arrays)
        got, _ = interpret(term, arrays)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)


def matches(eg: EGraph, root: int, text: str) -> list[dict[str, object]]:
    """The types bound by each match of a pattern at the root class."""
    found = Pattern(parse_term(text, allow_vars=True)).search_class(eg, root)
    return [{v: eg.type_of(c) for v, c in subst.items()} for subst in found]


def test_conv2d_im2col_is_discovered():
    bundle, eg, root, report = saturate("conv2d-im2col")
    assert report.seconds < SECONDS and report.stop_reason == "saturated"
    found = matches(eg, root, "(access-reshape (systolic-array 27 900 ?w ?x) ?s)")
    assert {"w": Access((8,), (27,), "int8"), "x": Access((), (27, 900), "int8"),
            "s": AccessShape((8, 30, 30), ())} in found
    # The stationary operand is the transposed flattened windows, the paper's im2col matrix.
    flat = [m for m in matches(eg, root, "(access-reshape (systolic-array 27 900 (access-flatten "
                                         "?wa) (access (access-transpose (access-flatten ?xa) "
                                         "(list 1 0)) 0)) ?s)")]
    assert {"wa": Access((8,), (3, 3, 3), "int8"), "xa": Access((30, 30), (3, 3, 3), "int8"),
            "s": AccessShape((8, 30, 30), ())} in flat


def test_nhwc_conv2d_with_padding_is_tensorised():
    bundle, eg, root, report = saturate("conv2d-nhwc-pad")
    assert report.seconds < SECONDS and report.stop_reason == "saturated"
    found = matches(eg, root, "(access-transpose (access-reshape (systolic-array 27 1024 ?w ?x) "
                              "?s) ?p)")
    assert any(m["w"] == Access((8,), (27,), "int8") and m["x"] == Access((), (27, 1024), "int8")
               and m["s"] == AccessShape((8, 1, 32, 32), ()) for m in found)


def test_vector_times_two_matrices_is_blocked_onto_16x16_arrays():
    bundle, eg, root, report = saturate("vector-two-matrices")
    assert report.seconds < SECONDS
    extraction = greedy(eg, root, fits(16, blocking=False))
    assert extraction.dag_cost < PROHIBITIVE
    arrays = arrays_of(extraction.term)
    # Each 32x32 product is 2 (reduced halves) x 2 (column halves) arrays of 16x16.
    assert len(arrays) == 8
    assert all(t.op == "systolic-array" and (t.args[0].value, t.args[1].value) == (16, 16)
               for t in arrays)
    sums = [t for t in walk(extraction.term) if t.op == "compute"
            and t.args[0].value == ("reduce-sum",)]
    assert sums and all(t.args[1].op == "access-pair" for t in sums)
    assert not dot_products(extraction.term)
    assert_interprets_equal(bundle, extraction.term)


def test_padded_conv2d_is_tensorised_onto_16x16_arrays():
    bundle, eg, root, report = saturate("conv2d-nhwc-pad-16x16")
    assert report.seconds < SECONDS
    extraction = greedy(eg, root, fits(16, blocking=False))
    assert extraction.dag_cost < PROHIBITIVE
    arrays = arrays_of(extraction.term)
    # 27 padded to 32 and split in two: two 16x16 arrays, each streaming all 1024 windows past
    # 16 (of 8, padded) output channels' weights.
    assert len(arrays) == 2
    assert all((t.args[0].value, t.args[1].value) == (16, 16) for t in arrays)
    assert any(t.op == "access-pad" for t in walk(extraction.term))
    assert not dot_products(extraction.term)
    assert_interprets_equal(bundle, extraction.term)


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_extraction_forbidding_dot_products_interprets_equal(name):
    bundle, eg, root, _ = saturate(name)
    extraction = greedy(eg, root, tensorised)
    assert not dot_products(extraction.term)
    assert arrays_of(extraction.term)
    assert_interprets_equal(bundle, extraction.term)


def test_padded_conv2d_needs_the_zero_analysis():
    # Without dropping the slice of zero padding, the padded product stays sliced to 27 and no
    # form of the root class runs on 16x16 arrays alone.
    demo = DEMOS["conv2d-nhwc-pad-16x16"]
    bundle = load(PROGRAMS / demo["program"])
    eg = EGraph(bundle.env)
    root = eg.add_term(bundle.program.body)
    rules = [r for r in select(demo["rules"], demo["array_size"])
             if r.name != "drop-zero-slice-under-dot-product"]
    Runner(rules, Limits(iter_limit=demo["iter_limit"], time_limit=SECONDS)).run(eg)
    assert greedy(eg, root, fits(16, blocking=False)).dag_cost >= PROHIBITIVE
