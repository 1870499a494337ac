"""The rule table on the program corpus (programs/): the default sets tensorise every product and
saturate; under every set, terms drawn from the root class at random still compute the expected
output. The second is the whole table's soundness in the e-graph, where rows combine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from glc.egraph.egraph import EGraph
from glc.egraph.extract import greedy
from glc.egraph.runner import Limits, Runner
from glc.inputs import load
from glc.interp import interpret
from glc.ir.term import walk
from glc.rewrites import DEFAULT, select
from glc.rewrites.cost import ARRAYS, tensorised

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"
FOLDERS = sorted(p for p in PROGRAMS.iterdir() if p.is_dir())


def saturated(folder: Path, rules: str, size: int, limits: Limits):
    bundle = load(folder)
    eg = EGraph(bundle.env)
    root = eg.add_term(bundle.program.body)
    report = Runner(select(rules, size), limits).run(eg)
    return bundle, eg, eg.find(root), report


def assert_expected(bundle, term) -> None:
    got, _ = interpret(term, bundle.arrays)
    assert got.shape == bundle.expected.shape and got.dtype == bundle.expected.dtype
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, bundle.expected, rtol=1e-10)
    else:
        assert np.array_equal(got, bundle.expected)


def is_dot(t) -> bool:
    return t.op == "compute" and t.args[0].value == ("dot-product",)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_default_rules_tensorise_every_product(folder):
    bundle, eg, root, report = saturated(folder, DEFAULT, 16, Limits(time_limit=2.0))
    assert report.stop_reason == "saturated"
    term = greedy(eg, root, tensorised).term
    had_products = any(is_dot(t) for t in walk(bundle.program.body))
    assert not any(is_dot(t) for t in walk(term))
    assert any(t.op in ARRAYS for t in walk(term)) == had_products
    assert_expected(bundle, term)


def random_cost(seed: int):
    """A fixed random cost per e-node: each seed extracts another term of the class."""
    rng = np.random.default_rng(seed)
    costs: dict = {}

    def cost(eg, cid, node) -> float:
        if node not in costs:
            costs[node] = float(10 ** rng.uniform(-3, 3))
        return costs[node]

    return cost


# (program, whether its root class has acyclic alternatives for the extractor to choose: the
# products' tensorised forms; the other rows' alternatives reach back into their own class).
SMALL = [("conv1d-int8", True), ("conv2d-stride2-asym-int8", True), ("dense-bias-int8", True),
         ("residual-add-int8", True), ("maxpool2x2-int8", False), ("concat-slice-int8", False),
         ("softmax-f64", False)]


@pytest.mark.parametrize(("name", "varied"), SMALL, ids=[n for n, _ in SMALL])
def test_random_terms_of_the_root_class_compute_the_expected_output(name, varied):
    bundle, eg, root, _ = saturated(PROGRAMS / name, "all", 4,
                                    Limits(iter_limit=4, node_limit=5000, time_limit=2.0))
    terms = {greedy(eg, root, random_cost(seed)).term for seed in range(6)}
    assert len(terms) > 1 or not varied
    for term in terms:
        assert_expected(bundle, term)
