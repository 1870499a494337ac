"""The rewrite demonstrations: e-graph size, iterations and time to reach each target form.

The four programs and their rule sets are tests/rewrites/programs/demonstrations.json (the same
rows tests/rewrites/test_demonstrations.py asserts on). Each row runs the rules with that file's
iteration limit and a 2 s time limit, then extracts with the cost that forbids un-tensorised
dot-products (``glc.rewrites.cost.tensorised``: is every product tensorised?) and with the one
that also requires every array to be 16x16 (``fits``: how many such arrays, or - if it cannot).
"""

from __future__ import annotations

import json
from pathlib import Path

from glc.egraph.egraph import EGraph
from glc.egraph.extract import greedy
from glc.egraph.runner import Limits, Runner
from glc.inputs import load
from glc.ir.term import walk
from glc.rewrites import select
from glc.rewrites.cost import ARRAYS, PROHIBITIVE, fits, tensorised

SECTION = "rewrites"
TITLE = "im2col discovery and array mapping by rewriting (tests/rewrites/programs)"

PROGRAMS = Path(__file__).resolve().parents[2] / "tests" / "rewrites" / "programs"


def _arrays(term) -> list:
    return [t for t in walk(term) if t.op in ARRAYS]


def _dots(term) -> int:
    return sum(t.op == "compute" and t.args[0].value == ("dot-product",) for t in walk(term))


def run() -> list[dict]:
    """One row per demonstration."""
    rows = []
    for name, demo in json.loads((PROGRAMS / "demonstrations.json").read_text()).items():
        bundle = load(PROGRAMS / demo["program"])
        eg = EGraph(bundle.env)
        root = eg.add_term(bundle.program.body)
        size = demo["array_size"]
        report = Runner(select(demo["rules"], size),
                        Limits(iter_limit=demo["iter_limit"], time_limit=2.0)).run(eg)
        fast = greedy(eg, root, tensorised)
        fitted = greedy(eg, root, fits(size, blocking=False))
        rows.append({
            "demonstration": name,
            "rules": demo["rules"],
            "e-nodes": report.enodes,
            "e-classes": report.eclasses,
            "iterations": len(report.iterations),
            "stop": report.stop_reason,
            "seconds": round(report.seconds, 3),
            "tensorised": "yes" if _arrays(fast.term) and not _dots(fast.term) else "no",
            f"{size}x{size} arrays": (len(_arrays(fitted.term)) if fitted.dag_cost < PROHIBITIVE
                                      else "-"),
        })
    return rows
