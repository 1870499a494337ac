"""Each distinct kernel built once and relocated (glc/lower/relocate.py): a lowering's
instructions, assembly and cycles equal those of building every kernel at its operands' real
addresses, on corpus programs and on a chain of identical layers, whose repeats are relocated."""

from __future__ import annotations

import re
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

M, K = 40, 64
ZEROS = (-3, 5, 0)  # the layers' output zero points (ONNX's requantization)


def _chain(convert: str) -> str:
    """Three dense layers of one shape, each with a bias and converted to int8 by
    ``(requantize 7)`` after a relu ("shift") or by ONNX's requantization with the zero points
    ``ZEROS`` ("linear"): three kernels of one signature."""
    text, value = f"(input x (shape {M} {K}) int8)\n", "(access (access-tensor x) 1)"
    for i, zero in enumerate(ZEROS, 1):
        text += (f"(input w{i} (shape {K} {K}) int8)\n(input b{i} (shape {K}) int32)\n"
                 f"(input s{i} (shape {K}) float32)\n")
        vector = (f"(access-broadcast (access (access-insert-axis (access-tensor {{}}{i}) 0) 1) "
                  f"(access-shape (shape {M}) (shape {K})))")
        product = (f"(compute elementwise-add (access-pair (access (compute dot-product "
                   f"(access-cartesian-product {value} (access (access-tensor w{i}) 1))) 1) "
                   f"{vector.format('b')}))")
        layer = f"(compute (requantize 7) (compute relu {product}))" if convert == "shift" \
            else f"(requantize-linear {product} {vector.format('s')} {zero})"
        if i < len(ZEROS):
            text += f"(define h{i} {layer})\n"
            value = f"(access h{i} 1)"
        else:
            text += layer + "\n"
    return text


def _env() -> dict[str, Access]:
    env = {"x": Access((M, K), (), "int8")}
    for i in range(1, len(ZEROS) + 1):
        env |= {f"w{i}": Access((K, K), (), "int8"), f"b{i}": Access((K,), (), "int32"),
                f"s{i}": Access((K,), (), "float32")}
    return env


def _at_real_addresses(self, label, chosen, raw, relu, shift, config, table):
    """Kernels.build as it was before relocation: every kernel built where its operands lie."""
    return build_kernel(label, chosen.a, chosen.b, chosen.c, raw, relu, shift, config,
                        chosen.order, chosen.k_inner, chosen.block_rows, table, chosen.flat,
                        chosen.group, chosen.split, chosen.spread)


def _compiled(source):
    if isinstance(source, str):
        return compile_program(parse_program(source, "<chain>"), _env(),
                               rules=select(DEFAULT, CONFIG.array_size), config=CONFIG)
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


@pytest.mark.parametrize("convert", ["shift", "linear"])
def test_a_chain_of_identical_layers_builds_one_kernel_and_relocates_the_others(convert,
                                                                              monkeypatch):
    relocated, direct, made = _both(_chain(convert), monkeypatch)
    assert relocated == direct
    # The extraction's costing lowers without building (glc/cost/extraction.py).
    assert [(k.built, k.relocated) for k in made if k.built] == [(1, 2)]
    (text,) = relocated[0]
    assert text.count("; ---- kernel") == 3
    if convert == "linear":  # each layer's STOREs with its own zero point
        zeros = [int(z) for z in re.findall(r"zero=(-?\d+)", text)]
        assert set(zeros) == set(ZEROS) - {0}
