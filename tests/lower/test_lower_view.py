"""Address-pattern lowering: an access expression's view reads the same elements as the
interpreter's value of the expression, and the LOADs made from a view's tiles put exactly those
elements into the scratchpad (random shapes)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from glc.hwconfig import load_config
from glc.interp import env_types, interpret
from glc.ir.check import check
from glc.isa import simulator
from glc.isa.encoding import Instruction, encode
from glc.isa.transfer import local_rows
from glc.lower.tiling import tiles
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


def _scratchpad(loads, config, dram) -> np.ndarray:
    words = [encode(Instruction.make("load", **f)) for f in loads]
    return simulator.run(words + [encode(Instruction.make("halt"))], config, dram).scratchpad


@pytest.mark.parametrize("template", [_im2col, _transposed])
@pytest.mark.parametrize("seed", range(8))
def test_transposing_loads_of_each_tile_fill_the_scratchpad_with_the_view(template, seed):
    """The same tiles through a target that transposes: whole N-row pieces as transposing
    LOADs, the rest as they lie, never a row past the tile's."""
    config = load_config("n4")
    n = config.array_size
    term, arrays, view = _case(template, seed)
    matrix = gather(view, arrays["t"].reshape(-1))
    dram = np.zeros(1024, np.uint8)
    dram[96:96 + arrays["t"].size] = arrays["t"].reshape(-1).view(np.uint8)
    count = matrix.shape[0]
    for first, size in tiles([d.size for d in merge(view.groups[1])], n):
        loads = transfers(Target(view, 96, 1, transpose=n), (0, count), (first, size), 0, {})
        assert all(f["row"] + n <= count for f in loads if f.get("transpose"))
        expected = np.zeros((count, n), np.int8)
        expected[:, :size] = matrix[:, first:first + size]
        assert np.array_equal(_scratchpad(loads, config, dram)[:count], expected)


def test_a_tile_strided_along_its_columns_loads_in_runs_by_transposing():
    """K^T of a row-major K (Q·K^T): each column of a tile is strided, each row contiguous.
    As it lies a tile is N² one-element runs; transposed, one LOAD of N runs of N."""
    config = load_config("n4")
    n = config.array_size
    keys = np.arange(8 * 12, dtype=np.int8).reshape(8, 12)  # 8 keys of 12
    view = replace(row_major("k", (8, 12)), groups=row_major("k", (8, 12)).groups[::-1])
    dram = keys.reshape(-1).view(np.uint8).copy()
    for transpose, runs in ((0, n * n), (n, n)):
        loads = transfers(Target(view, 0, 1, transpose), (4, n), (0, n), 0, {})
        assert sum(np.prod([f.get(f"count{k}", 1) for k in range(4)]) for f in loads) == runs
        assert np.array_equal(_scratchpad(loads, config, dram)[:n], keys.T[4:4 + n, :n])


def test_a_padded_nchw_window_row_is_one_run_with_per_element_bounds():
    """A 3-tap row of a padded NCHW window crosses the border at the image's edge: one xrun
    run of 3 (each element checked against x) instead of 3 runs of one."""
    config = load_config("n4")
    text = ("(access-flatten (access (access-squeeze (access-windows (access (access-pad "
            "(access-pad (access-tensor t) zero-padding 2 1 1) zero-padding 3 1 1) 1) "
            "(shape 1 3 3) (shape 1 1 1)) 1) 3))")
    term = parse_term(text)
    image = np.arange(1, 26, dtype=np.int8).reshape(1, 1, 5, 5)
    types = check(term, env_types({"t": image}))
    view = view_of(term, types, lambda t: row_major("t", image.shape) if t.op == "symbol"
                   else None)
    loads = transfers(Target(view, 0, 1), (0, 5), (0, 3), 0, {})  # the image's first row
    assert all(f["run"] == 3 and f.get("xrun") for f in loads)
    dram = image.reshape(-1).view(np.uint8).copy()
    expected = np.zeros((5, config.array_size), np.int8)
    expected[:, :3] = gather(view, image.reshape(-1))[:5, :3]
    assert np.array_equal(_scratchpad(loads, config, dram)[:5], expected)


@pytest.mark.parametrize("seed", range(6))
def test_transposing_loads_of_any_row_range_fill_the_scratchpad_with_the_view(seed):
    """A rank-3 tensor seen as a matrix in a random dim order (two dims the rows), random row
    ranges, most of them whole pieces of N rows (transfer.py's _blocks makes a tile's pieces
    one transposing LOAD of several blocks per box of its rows): exactly the view's tile in
    the scratchpad, no row past it; several-block LOADs among them."""
    config = load_config("n4")
    n = config.array_size
    rng = np.random.default_rng(seed)
    several = 0
    for _ in range(48):
        shape = (int(rng.integers(1, 6)), int(rng.choice([4, 6, 8, 12])), int(rng.integers(4, 10)))
        tensor = rng.integers(-128, 128, shape).astype(np.int8)
        order = [int(k) for k in rng.permutation(3)]
        stored = row_major("t", shape)
        view = replace(stored, groups=(tuple(d for k in order[:2] for d in stored.groups[k]),
                                       stored.groups[order[2]]))
        matrix = gather(view, tensor.reshape(-1))
        dram = np.zeros(1024, np.uint8)
        dram[96:96 + tensor.size] = tensor.reshape(-1).view(np.uint8)
        first = int(rng.integers(0, matrix.shape[0]))
        left = matrix.shape[0] - first
        count = n * int(rng.integers(1, left // n + 1)) if left >= n and rng.random() < 0.8 \
            else int(rng.integers(1, left + 1))
        for col, size in tiles([d.size for d in merge(view.groups[1])], n):
            loads = transfers(Target(view, 96, 1, transpose=n), (first, count), (col, size), 0,
                              {})
            several += any(f.get("transpose") and local_rows(Instruction.make("load", **f)) > n
                           for f in loads)
            expected = np.zeros((count + n, n), np.int8)
            expected[:count, :size] = matrix[first:first + count, col:col + size]
            assert np.array_equal(_scratchpad(loads, config, dram)[:count + n], expected)
    assert several


def test_whole_blocks_of_a_tile_are_one_transposing_load():
    """K^T of a row-major K (8 keys of 12): a tile of 12 rows × N columns is 3 blocks, one
    transposing LOAD (each block drains while the next one's beats arrive) rather than 3."""
    config = load_config("n4")
    n = config.array_size
    keys = np.arange(8 * 12, dtype=np.int8).reshape(8, 12)
    view = replace(row_major("k", keys.shape), groups=row_major("k", keys.shape).groups[::-1])
    dram = keys.reshape(-1).view(np.uint8).copy()
    loads = transfers(Target(view, 0, 1, n), (0, 12), (4, n), 0, {})
    assert len(loads) == 1 and loads[0]["transpose"] == 1
    assert np.array_equal(_scratchpad(loads, config, dram)[:12], keys.T[:12, 4:4 + n])
