"""A kernel's STOREs add its bias and requantize from accumulator rows it loads first
(glc/lower/table.py, docs/isa.md STORE ``bias`` and ``linear``): a product whose C has more
rows than the accumulator holds stays one kernel with its bias and requantization (before ISA
revision 2.5 the bias was loaded into every accumulator row a STORE drains, and such a C was cut
into kernels of chunks); the result equals the interpreter's on the ISA simulator and on the
RTL. The table goes by column or by local row, or refuses a vector that varies both ways."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.interp import interpret
from glc.lower.execute import execute
from glc.lower.table import StoreTable
from glc.lower.transfer import OperandUnexpressible, Target
from glc.lower.view import Digit, View
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
def test_a_c_taller_than_the_accumulator_keeps_its_bias_in_one_kernel(tmp_path, convert):
    m, k, n = 128, 16, 32  # n4: 8 output tiles of 128 rows, 256 accumulator rows
    bundle = load(_folder(tmp_path, dense(m, k, n, convert), m, k, n))
    lowered = compile_program(bundle, rules=select(DEFAULT, N4.array_size), config=N4).lowered
    figures = lowered.figures()
    assert figures["host_steps"] == 0 and figures["kernels"] == 1
    kernel = lowered.steps[0].kernel
    assert kernel.kind == "matmul" and kernel.bias
    stores = [i for i in kernel.instructions if i.op.name == "store"]
    assert stores and all(i["bias"] for i in stores)
    assert all(i["linear"] for i in stores) == (convert == "linear")
    # No MATMUL adds onto a preloaded bias: each tile's first K step writes fresh.
    assert any(i.op.name == "matmul" and not i["accumulate"] for i in kernel.instructions)
    expected, _ = interpret(bundle.program.body, bundle.arrays)
    outcome = execute(lowered, bundle.arrays, "isa")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == figures["predicted_cycles"]


@pytest.mark.rtl
def test_a_stored_bias_runs_on_the_rtl_in_the_models_cycles(tmp_path):
    m, k, n = 128, 16, 32
    bundle = load(_folder(tmp_path, dense(m, k, n, "linear"), m, k, n))
    lowered = compile_program(bundle, rules=select(DEFAULT, N4.array_size), config=N4).lowered
    expected, _ = interpret(bundle.program.body, bundle.arrays)
    outcome = execute(lowered, bundle.arrays, "rtl")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == lowered.figures()["predicted_cycles"]


def _vector(rows: int, cols: int, row_stride: int, col_stride: int) -> Target:
    """An int32 matrix view of C's dims repeating along a dim of stride 0."""
    return Target(View("v", 0, ((Digit(rows, row_stride, ()),), (Digit(cols, col_stride, ()),)),
                       ()), 0, 4)


def test_the_table_goes_by_column_by_row_or_not_at_all():
    by_column, by_row, both = _vector(8, 4, 0, 1), _vector(8, 4, 1, 0), _vector(8, 4, 4, 1)
    scalar = _vector(8, 4, 0, 0)
    for bias, multipliers, rows in ((by_column, None, False), (by_row, None, True),
                                    (by_row, scalar, True), (scalar, by_column, False)):
        table = StoreTable(multipliers, 0, bias)
        table.check()
        assert table.by_rows == rows
    for bias, multipliers in ((both, None), (by_row, by_column)):
        with pytest.raises(OperandUnexpressible):
            StoreTable(multipliers, 0, bias).check()
    table = StoreTable(scalar, -3, by_row)
    table.check()
    table.table_row = 100
    # Runs of at most N = 4 rows, each its multipliers' row then its biases'.
    assert table.pieces((2, 6), 0, 4) == [
        ((2, 4), {"qrows": 1, "linear": 1, "zero": -3, "qrow": 100, "bias": 1, "brow": 101}),
        ((6, 2), {"qrows": 1, "linear": 1, "zero": -3, "qrow": 102, "bias": 1, "brow": 103})]
    assert table.table_rows(8, 1, 4) == 2 * 2 * 2
