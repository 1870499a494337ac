"""Address-pattern lowering: an access expression's view reads the same elements as the
interpreter's value of the expression, and the LOADs made from a view's tiles put exactly those
elements into the scratchpad (random shapes)."""

from __future__ import annotations

import numpy as np
import pytest

from glc.hwconfig import load_config
from glc.interp import env_types, interpret
from glc.ir.check import check
from glc.isa import simulator
from glc.isa.encoding import Instruction, encode
from glc.lower.kernel import tiles
from glc.lower.transfer import Target, transfers
from glc.lower.view import NotAffine, gather, merge, row_major, view_of
from glc.syntax.reader import parse_term


def _im2col(rng) -> tuple[str, tuple[int, ...]]:
    """The conv2d operand the rewrites extract: im2col windows of a padded NCHW image."""
    c, h, w = (int(x) for x in rng.integers(1, 6, 3))
    kh, kw = int(rng.integers(1, h + 1)), int(rng.integers(1, w + 1))
    sh, sw = (int(x) for x in rng.integers(1, 3, 2))
    p = [int(x) for x in rng.integers(0, 3, 4)]
    text = (f"(access-flatten (access (access-squeeze (access-windows (access (access-pad "
            f"(access-pad (access-tensor t) zero-padding 2 {p[0]} {p[1]}) zero-padding 3 {p[2]} "
            f"{p[3]}) 1) (shape {c} {kh + p[0] // 2} {kw}) (shape 1 {sh} {sw})) 1) 3))")
    return text, (1, c, h, w)


def _im2col_zero_point(rng) -> tuple[str, tuple[int, ...]]:
    """An imported conv's operand: the image padded with its zero point (access-pad-value, a
    LOAD's ``pad``); padding by nothing is the view itself."""
    text, dims = _im2col(rng)
    v = int(rng.integers(-128, 128))
    return text.replace("access-pad (access-pad", "access-pad-value (access-pad-value").replace(
        "zero-padding", str(v)), dims


def _transposed(rng) -> tuple[str, tuple[int, ...]]:
    """A transpose, slice and pad of a rank-3 tensor, re-split and flattened."""
    dims = tuple(int(x) for x in rng.integers(1, 7, 3))
    perm = [int(x) for x in rng.permutation(3)]
    axis = int(rng.integers(0, 3))
    lo = int(rng.integers(0, dims[perm[axis]]))
    hi = int(rng.integers(lo + 1, dims[perm[axis]] + 1))
    text = (f"(access-flatten (access (access-pad (access-slice (access-transpose "
            f"(access-tensor t) (list {' '.join(map(str, perm))})) {axis} {lo} {hi}) "
            f"zero-padding {axis} 1 2) 1))")
    return text, dims


def _broadcast(rng) -> tuple[str, tuple[int, ...]]:
    """A vector with an inserted axis broadcast over rows (the dense-bias idiom)."""
    n, rows = int(rng.integers(1, 9)), int(rng.integers(1, 6))
    text = (f"(access-broadcast (access (access-insert-axis (access-tensor t) 0) 1) "
            f"(access-shape (shape {rows}) (shape {n})))")
    return text, (n,)


TEMPLATES = [_im2col, _im2col_zero_point, _transposed, _broadcast]


def _case(template, seed):
    rng = np.random.default_rng(seed)
    text, dims = template(rng)
    arrays = {"t": rng.integers(-128, 128, dims).astype(np.int8)}
    term = parse_term(text)
    types = check(term, env_types(arrays))
    view = view_of(term, types, lambda t: row_major(t.value, dims) if t.op == "symbol" else None)
    return term, arrays, view


@pytest.mark.parametrize("template", TEMPLATES, ids=[t.__name__.strip("_") for t in TEMPLATES])
@pytest.mark.parametrize("seed", range(12))
def test_view_reads_what_the_interpreter_computes(template, seed):
    term, arrays, view = _case(template, seed)
    expected, _ = interpret(term, arrays)
    assert np.array_equal(gather(view, arrays["t"].reshape(-1)), expected)


def test_a_concatenation_is_not_a_view():
    term = parse_term("(access-concatenate (access-tensor t) (access-tensor t) 0)")
    types = check(term, {"t": env_types({"t": np.zeros((2, 3), np.int8)})["t"]})
    with pytest.raises(NotAffine):
        view_of(term, types, lambda t: row_major("t", (2, 3)) if t.op == "symbol" else None)


@pytest.mark.parametrize("template", [_im2col, _im2col_zero_point, _transposed])
@pytest.mark.parametrize("seed", range(8))
def test_loads_of_each_tile_fill_the_scratchpad_with_the_view(template, seed):
    config = load_config("n4")
    n = config.array_size
    term, arrays, view = _case(template, seed)
    matrix = gather(view, arrays["t"].reshape(-1))
    address = 96  # not at 0, so a pattern that ignores the base address fails
    dram = np.zeros(1024, np.uint8)
    dram[address:address + arrays["t"].size] = arrays["t"].reshape(-1).view(np.uint8)
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(0, matrix.shape[0]))
    count = int(rng.integers(1, matrix.shape[0] - rows + 1))
    for first, size in tiles([d.size for d in merge(view.groups[1])], n):
        loads = transfers(Target(view, address, 1), (rows, count), (first, size), 0, {})
        words = [encode(Instruction.make("load", **f)) for f in loads]
        machine = simulator.run(words + [encode(Instruction.make("halt"))], config, dram)
        expected = np.zeros((count, n), np.int8)
        expected[:, :size] = matrix[rows:rows + count, first:first + size]
        assert np.array_equal(machine.scratchpad[:count], expected)
