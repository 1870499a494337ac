"""More rules never make a program slower: a search with the whole rule table that stops at a
limit before it finds what the default rules find keeps the default rules' program."""

from __future__ import annotations

from pathlib import Path

from glc.compiler import _compile, compile_program, cost_function
from glc.egraph.runner import Limits
from glc.hwconfig import load_config
from glc.inputs import load
from glc.rewrites import DEFAULT, select

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"
CONFIG = load_config("n16")
# The whole table on cnn-int8 passes 300 e-nodes before it maps the conv onto the array.
TIGHT = Limits(node_limit=300)


def figures(result):
    f = result.lowered.figures()
    return f["host_steps"], f["predicted_cycles"], f["instructions"]


def compile_with(rules: str, limits: Limits, **kwargs):
    return compile_program(load(PROGRAMS / "cnn-int8"), rules=select(rules, 16), limits=limits,
                           config=CONFIG, extract_time_limit=10, **kwargs)


def test_a_stopped_search_keeps_the_default_rules_program():
    bundle = load(PROGRAMS / "cnn-int8")
    alone = _compile(bundle.program, bundle.env, select("all", 16), TIGHT,
                     cost_function("cycles", CONFIG), "exact", 10, CONFIG, lambda stage: None,
                     10**6, frozenset())
    default = compile_with(DEFAULT, TIGHT)
    assert figures(alone)[:2] > figures(default)[:2]  # the stopped search's own program is worse
    kept = compile_with("all", TIGHT)
    assert figures(kept) == figures(default)
    assert kept.fallback.startswith("the default rules' program")
    assert "node limit" in kept.fallback and kept.figures()["fallback"] == kept.fallback
    assert kept.figures()["search"]["stop_reason"] == "node limit"  # the search's own figures
    assert kept.figures()["stop_reason"] == "saturated"  # the kept program's compile
    assert any(line.startswith("kept: ") for line in kept.stage_lines())


def test_a_search_no_worse_than_the_default_keeps_its_own_program():
    result = compile_with("all", Limits())
    assert not result.fallback and "fallback" not in result.figures()
    assert figures(result)[:2] <= figures(compile_with(DEFAULT, Limits()))[:2]
