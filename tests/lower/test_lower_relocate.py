"""Each distinct kernel built once and relocated (glc/lower/relocate.py): a lowering's
instructions, assembly and cycles equal those of building every kernel at its operands' real
addresses, on corpus programs and on a chain of identical layers, whose repeats are relocated."""

from __future__ import annotations

from pathlib import Path

import pytest

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.ir.types import Access
from glc.lower import lowering, relocate
from glc.lower.image import Image, schedule
from glc.lower.kernel import build_kernel
from glc.rewrites import DEFAULT, select
from glc.syntax.reader import parse_program

PROGRAMS = Path(__file__).parents[2] / "programs"
CONFIG = load_config("n16")

# Three dense layers of one shape, each requantized: three kernels of one signature.
CHAIN = """(input x (shape 40 64) int8)
(input w1 (shape 64 64) int8)
(input w2 (shape 64 64) int8)
(input w3 (shape 64 64) int8)
(define h1 (compute (requantize 7) (compute relu (compute dot-product
  (access-cartesian-product (access (access-tensor x) 1) (access (access-tensor w1) 1))))))
(define h2 (compute (requantize 7) (compute relu (compute dot-product
  (access-cartesian-product (access h1 1) (access (access-tensor w2) 1))))))
(compute (requantize 7) (compute relu (compute dot-product
  (access-cartesian-product (access h2 1) (access (access-tensor w3) 1)))))
"""


def _at_real_addresses(self, label, chosen, raw, relu, shift, config, table):
    """Kernels.build as it was before relocation: every kernel built where its operands lie."""
    return build_kernel(label, chosen.a, chosen.b, chosen.c, raw, relu, shift, config,
                        chosen.order, chosen.k_inner, chosen.block_rows, table, chosen.flat,
                        chosen.group, chosen.split, chosen.spread)


def _compiled(source):
    if isinstance(source, str):
        program = parse_program(source, "<chain>")
        env = {"x": Access((40, 64), (), "int8"),
               **{f"w{i}": Access((64, 64), (), "int8") for i in (1, 2, 3)}}
        return compile_program(program, env, rules=select(DEFAULT, CONFIG.array_size),
                               config=CONFIG)
    return compile_program(load(source), rules=select(DEFAULT, CONFIG.array_size),
                           config=CONFIG)


def _listing(result) -> tuple[list[str], list[list[int]], list[int]]:
    images = [run for run in schedule(result.lowered) if isinstance(run, Image)]
    return ([image.text() for image in images], [image.words for image in images],
            [image.predicted_cycles(CONFIG) for image in images])


def _both(source, monkeypatch):
    """(relocated, built at the real addresses) listings, and the Kernels of the first."""
    made: list[relocate.Kernels] = []

    class Recorded(relocate.Kernels):
        def __init__(self):
            super().__init__()
            made.append(self)

    with monkeypatch.context() as patch:
        patch.setattr(lowering, "Kernels", Recorded)
        relocated = _listing(_compiled(source))
    with monkeypatch.context() as patch:
        patch.setattr(relocate.Kernels, "build", _at_real_addresses)
        direct = _listing(_compiled(source))
    return relocated, direct, made


@pytest.mark.parametrize("name", ["resnet-block-28-int8", "attention-qkt-int8", "cnn-int8",
                                  "conv2d-nchw-int8", "dense-bias-int8"])
def test_relocated_kernels_equal_kernels_built_in_place(name, monkeypatch):
    relocated, direct, _ = _both(PROGRAMS / name, monkeypatch)
    assert relocated == direct


def test_a_chain_of_identical_layers_builds_one_kernel_and_relocates_the_others(monkeypatch):
    relocated, direct, made = _both(CHAIN, monkeypatch)
    assert relocated == direct
    # The extraction's costing lowers without building (glc/cost/extraction.py).
    assert [(k.built, k.relocated) for k in made if k.built] == [(1, 2)]
    (text,) = relocated[0]
    assert text.count("; ---- kernel") == 3
