"""Layout and orientation on the e-graph: the alternatives the cost model chooses between."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from glc.egraph.egraph import EGraph
from glc.egraph.extract import greedy
from glc.egraph.pattern import Pattern
from glc.egraph.runner import Limits, Runner
from glc.inputs import load, random_inputs
from glc.interp import interpret
from glc.ir.types import Access
from glc.rewrites import select
from glc.rewrites.cost import tensorised
from glc.syntax.reader import parse_term

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"


def run(folder: str, rules: str):
    bundle = load(PROGRAMS / folder)
    eg = EGraph(bundle.env)
    root = eg.add_term(bundle.program.body)
    report = Runner(select(rules, 16), Limits(iter_limit=12, time_limit=2.0)).run(eg)
    return bundle, eg, eg.find(root), report


def test_nhwc_padding_has_its_nchw_variant():
    # The program pads NHWC data on H and W, then transposes to NCHW; moving the transpose
    # inward gives the NCHW layout padded on axes 2 and 3, in the same class.
    bundle, eg, root, _ = run("conv2d-nhwc-hwio-int8", "layout")
    written = parse_term("(access-transpose (access-pad (access-pad (access-tensor data) "
                         "zero-padding 1 1 1) zero-padding 2 1 1) (list 0 3 1 2))")
    nchw = parse_term("(access-pad (access-pad (access-transpose (access-tensor data) "
                      "(list 0 3 1 2)) zero-padding 2 1 1) zero-padding 3 1 1)")
    assert eg.lookup_term(written) is not None
    assert eg.lookup_term(written) == eg.lookup_term(nchw)


def test_nchw_padding_has_its_nhwc_variant():
    # The program pads NCHW data on axes 2 and 3; through the channels-last view, the same
    # class holds the data transposed to NHWC, padded on H and W (axes 1, 2), transposed back.
    bundle, eg, root, _ = run("conv2d-nchw-int8", "layout")
    written = parse_term("(access-pad (access-pad (access-tensor data) zero-padding 2 1 1) "
                         "zero-padding 3 1 1)")
    nhwc = parse_term("(access-transpose (access-pad (access-pad (access-transpose (access-tensor "
                      "data) (list 0 2 3 1)) zero-padding 1 1 1) zero-padding 2 1 1) "
                      "(list 0 3 1 2))")
    assert eg.lookup_term(written) is not None
    assert eg.lookup_term(written) == eg.lookup_term(nhwc)


def test_both_orientations_are_tensorised():
    # a (12x20) @ b (20x7): streaming a's 12 rows past b, or b's 7 columns past a, transposed.
    bundle, eg, root, _ = run("matmul-int8", "orientation,tensorise")
    found = {(eg.type_of(s["x"]), eg.type_of(s["w"])) for s in Pattern(parse_term(
        "(systolic-array 20 7 ?x ?w)", allow_vars=True)).search_class(eg, root)}
    assert (Access((12,), (20,), "int8"), Access((), (20, 7), "int8")) in found
    swapped = Pattern(parse_term("(access-transpose (systolic-array 20 12 ?x ?w) (list 1 0))",
                                 allow_vars=True)).search_class(eg, root)
    assert any(eg.type_of(s["x"]) == Access((7,), (20,), "int8") for s in swapped)
    term = greedy(eg, root, tensorised).term
    arrays = random_inputs(bundle.env, bundle.symbols, 0)
    assert np.array_equal(interpret(term, arrays)[0], interpret(bundle.program.body, arrays)[0])
