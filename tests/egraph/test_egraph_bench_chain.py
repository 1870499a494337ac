"""The benchmark's product chain and tiling rows (scripts/benchmarks/egraph.py) are what they
claim: the chain is x . W1 ... Wn, and its saturated, extracted form computes the same."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from glc.egraph.egraph import EGraph
from glc.egraph.extract import exact
from glc.egraph.runner import Runner
from glc.inputs import random_inputs
from glc.interp import interpret
from glc.ir.term import walk
from glc.rewrites import select
from glc.rewrites.cost import tensorised

BENCH = Path(__file__).resolve().parents[2] / "scripts" / "benchmarks" / "egraph.py"


def bench_module():
    spec = importlib.util.spec_from_file_location("bench_egraph", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_chain_is_a_product_of_matrices_and_tiles_onto_arrays():
    bench = bench_module()
    term, env = bench.chain(4, dim=4)
    arrays = random_inputs(env, list(env), seed=3)
    expected = arrays["x"].astype(np.int32)
    for i in range(1, 5):
        # int32 accumulation with two's-complement wrap after each product (language contract).
        expected = (expected.astype(np.int64) @ arrays[f"w{i}"].astype(np.int64)).astype(np.int32)
    value, _ = interpret(term, arrays)
    assert np.array_equal(value, expected)
    eg = EGraph(env)
    root = eg.add_term(term)
    rules = bench.tiling_rules(4) + select("cleanup", 4)
    assert len(bench.tiling_rules(4)) == 9  # rows, cols in {1, 2, 4}
    assert Runner(rules).run(eg).stop_reason == "saturated"
    best = exact(eg, root, tensorised).term
    assert any(t.op == "systolic-array-with-blocking" for t in walk(best))
    tiled, _ = interpret(best, arrays)
    assert np.array_equal(tiled, expected)
