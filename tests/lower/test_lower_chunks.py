"""A product whose C has more rows than the accumulator holds with its bias (each accumulator
row may hold one output tile: the bias is loaded there first) is cut into kernels of
consecutive rows (glc/lower/chunks.py), bias and requantization included, instead of leaving
them to the host; the result equals the interpreter's on the ISA simulator and on the RTL."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.interp import interpret
from glc.lower import chunks
from glc.lower.execute import execute
from glc.lower.transfer import Target
from glc.lower.view import row_major
from glc.rewrites import DEFAULT, select

N4 = load_config("n4")


def dense(m: int, k: int, n: int, convert: str) -> str:
    """x·wᵀ + bias under ``convert``: ``(requantize 6)``, or requantize-linear by column."""
    product = (f"(compute elementwise-add (access-pair (access (compute dot-product "
               f"(access-cartesian-product (access (access-tensor x) 1) (access (access-tensor w)"
               f" 1))) 1) (access-broadcast (access (access-insert-axis (access-tensor bias) 0) 1)"
               f" (access-shape (shape {m}) (shape {n})))))")
    inputs = (f"(input x (shape {m} {k}) int8)\n(input w (shape {n} {k}) int8)\n"
              f"(input bias (shape {n}) int32)\n")
    if convert == "shift":
        return f"{inputs}(compute (requantize 6) {product})\n"
    return (f"{inputs}(input scale (shape {n}) float32)\n(requantize-linear {product} "
            f"(access-broadcast (access (access-insert-axis (access-tensor scale) 0) 1) "
            f"(access-shape (shape {m}) (shape {n}))) -3)\n")


def _folder(tmp_path: Path, text: str, m: int, k: int, n: int) -> Path:
    rng = np.random.default_rng(m + k + n)
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "p.gls").write_text(text)
    np.save(tmp_path / "x.npy", rng.integers(-128, 128, (m, k), dtype=np.int8))
    np.save(tmp_path / "w.npy", rng.integers(-128, 128, (n, k), dtype=np.int8))
    np.save(tmp_path / "bias.npy", rng.integers(-5000, 5000, n, dtype=np.int32))
    if "scale" in text:
        np.save(tmp_path / "scale.npy", (2.0 ** rng.uniform(-12, -7, n)).astype(np.float32))
    return tmp_path


@pytest.mark.parametrize("convert", ["shift", "linear"])
def test_a_c_too_tall_for_its_bias_runs_as_row_chunks_on_the_accelerator(tmp_path, convert):
    m, k, n = 128, 16, 32  # n4: 8 output tiles of a block, 256 accumulator rows
    bundle = load(_folder(tmp_path, dense(m, k, n, convert), m, k, n))
    lowered = compile_program(bundle, rules=select(DEFAULT, N4.array_size), config=N4).lowered
    figures = lowered.figures()
    assert figures["host_steps"] == 0 and figures["kernels"] > 1
    # Products only (before, the bias was a fold over the raw product), each chunk writing its
    # rows of one result.
    assert {step.kernel.kind for step in lowered.steps} == {"matmul"}
    assert len({step.output for step in lowered.steps}) == 1
    expected, _ = interpret(bundle.program.body, bundle.arrays)
    outcome = execute(lowered, bundle.arrays, "isa")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == figures["predicted_cycles"]


@pytest.mark.rtl
def test_row_chunks_run_on_the_rtl_in_the_models_cycles(tmp_path):
    m, k, n = 128, 16, 32
    bundle = load(_folder(tmp_path, dense(m, k, n, "linear"), m, k, n))
    lowered = compile_program(bundle, rules=select(DEFAULT, N4.array_size), config=N4).lowered
    assert lowered.figures()["kernels"] > 1
    expected, _ = interpret(bundle.program.body, bundle.arrays)
    outcome = execute(lowered, bundle.arrays, "rtl")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == lowered.figures()["predicted_cycles"]


def test_a_slice_is_whole_indices_of_the_outermost_digit():
    image = Target(row_major("x", (6, 5, 8)), 0, 1)
    rows = Target(image.view.__class__(
        "x", 0, (image.view.groups[0] + image.view.groups[1], image.view.groups[2]),
        image.view.coords), 0, 1)  # a (30, 8) matrix: rows are (6 image rows, 5 pixels)
    assert chunks.step(rows.view, 0) == (0, 5)
    part = chunks.sliced(rows, 0, 10, 25)
    assert part.view.dims == (15, 8) and part.view.offset == 10 * 8
    assert chunks.sliced(rows, 0, 10, 23) is None  # not whole image rows
    assert chunks.bounds(30, 10) == [(0, 10), (10, 20), (20, 30)]
    assert chunks.largest(6, 5, lambda rows: rows <= 17) == 15
    assert chunks.largest(6, 5, lambda rows: False) is None
