"""The zero-region analysis: every fact it proves holds on the interpreted tensors, and the facts
the padding rows rely on are found."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rewrite_cases import APPLIES, PADDED_PRODUCT, REFUSES, decl

from glc.inputs import load, random_inputs
from glc.interp import interpret
from glc.ir.term import walk
from glc.ir.types import Access
from glc.rewrites.zeros import AccessZeros, merge, normal, zero_outside, zero_types
from glc.syntax.printer import print_term
from glc.syntax.reader import parse_program

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"


def facts_hold(source: str, seed: int = 0) -> int:
    """Check every proven zero slab of every node against the interpreter; the number checked."""
    program = parse_program(source)
    env = {d.name: Access(d.dims, (), d.dtype) for d in program.inputs.values()}
    arrays = random_inputs(env, list(env), seed)
    types = zero_types(program.body, env)
    checked = 0
    for node in walk(program.body):
        ty = types[id(node)]
        if not isinstance(ty, AccessZeros) or not ty.zeros:
            continue
        value, _ = interpret(node, arrays)
        for axis, intervals in ty.zeros.items():
            for lo, hi in intervals:
                slab = np.take(value, range(lo, hi), axis=axis)
                assert not slab.any(), f"{node}: axis {axis} [{lo},{hi}) is not zero"
                checked += 1
    return checked


SOURCES = [s for group in (APPLIES, REFUSES) for sources in group.values() for s in sources]


@pytest.mark.parametrize("source", SOURCES)
def test_every_proven_zero_slab_is_zero(source):
    facts_hold(source)


@pytest.mark.parametrize("folder", sorted(p for p in PROGRAMS.iterdir() if p.is_dir()),
                         ids=lambda p: p.name)
def test_facts_hold_on_the_program_corpus(folder):
    bundle = load(folder)
    source = "".join(f"(input {d.name} (shape {' '.join(map(str, d.dims))}) {d.dtype})\n"
                     for d in bundle.program.inputs.values())
    if not source:
        return  # plain Glenside (no declarations): its facts are covered by the cases above
    facts_hold(source + print_term(bundle.program.body))


def test_padding_of_both_operands_is_proven_zero_in_the_product():
    source = decl(a="2 5 int8", c="3 5 int8") + PADDED_PRODUCT
    program = parse_program(source)
    env = {d.name: Access(d.dims, (), d.dtype) for d in program.inputs.values()}
    product = zero_types(program.body, env)[id(program.body)]
    assert product.zeros == {3: ((5, 8),)}
    assert zero_outside(product, 3, 0, 5) and not zero_outside(product, 3, 0, 4)
    assert facts_hold(source) == 3


def test_zeros_take_no_part_in_equality_and_merge_as_a_union():
    a = AccessZeros((2,), (8,), "int8", {1: ((0, 2),)})
    b = AccessZeros((2,), (8,), "int8", {1: ((6, 8),), 0: ((0, 1),)})
    assert a == b == Access((2,), (8,), "int8")
    assert merge(a, b).zeros == {1: ((0, 2), (6, 8)), 0: ((0, 1),)}
    assert normal([(3, 5), (0, 2), (2, 3), (7, 7)]) == ((0, 5),)
