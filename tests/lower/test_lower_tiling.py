"""K tiles (glc/lower/tiling.py): an NHWC window row counted in bytes and its short chunk a
part of its own, checked against the views' own reading of the tensor and, lowered, against
the interpreter and an independent numpy convolution on the ISA simulator."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from glc.hwconfig import load_config
from glc.interp import env_types, interpret
from glc.ir.check import check
from glc.isa import simulator
from glc.isa.encoding import encode
from glc.lower.execute import execute
from glc.lower.kernel import build_kernel
from glc.lower.lowering import lower
from glc.lower.schedule import orient
from glc.lower.tiling import _channels_in_bytes, column_orders, k_digits, shape, shared_k, tiles
from glc.lower.transfer import Target
from glc.lower.view import gather, merge, row_major, view_of
from glc.syntax.reader import parse_term


def _nhwc_conv(c: int, size: int, k: int, stride: int, pad: int, out: int, seed: int):
    """A conv over an NHWC image with HWIO filters, as the layer suite writes it: the windows
    (A) against the filters (B), so the image's channels are A's innermost K digit."""
    rng = np.random.default_rng(seed)
    arrays = {"data": rng.integers(-128, 128, (1, size, size, c)).astype(np.int8),
              "filters": rng.integers(-128, 128, (k, k, c, out)).astype(np.int8)}
    image = (f"(access-transpose (access-pad (access-pad (access-tensor data) zero-padding 1 "
             f"{pad} {pad}) zero-padding 2 {pad} {pad}) (list 0 3 1 2))")
    windows = (f"(access (access-squeeze (access-windows (access {image} 1) (shape {c} {k} {k})"
               f" (shape 1 {stride} {stride})) 1) 3)")
    weights = ("(access (access-flatten (access (access-transpose (access-tensor filters) "
               "(list 2 0 1 3)) 3)) 0)")
    return parse_term(f"(systolic-array {c * k * k} {out} (access-flatten {windows}) "
                      f"{weights})"), arrays


def _reference(arrays, stride: int, pad: int) -> np.ndarray:
    """The convolution in numpy, pixels × filters (independent of the IR)."""
    x = np.pad(arrays["data"][0].astype(np.int64), ((pad, pad), (pad, pad), (0, 0)))
    w = arrays["filters"].astype(np.int64)
    k = w.shape[0]
    size = (x.shape[0] - k) // stride + 1
    return np.array([np.einsum("yxc,yxco->o", x[i * stride:i * stride + k,
                                                  j * stride:j * stride + k], w)
                     for i in range(size) for j in range(size)])


def _operands(term, arrays) -> tuple[Target, Target]:
    types = check(term, env_types(arrays))

    def base(t):
        return row_major(t.value, arrays[t.value].shape) if t.op == "symbol" else None

    a, b = (Target(view_of(x, types, base), 0, 1) for x in term.args[2:])
    return a, b


def test_the_stems_147_taps_take_ten_tiles_of_sixteen():
    """A 7×7/2 stem over 3 channels, pad 3: each kernel row's 21 bytes (7 pixels × 3
    channels) are one digit counted in bytes, cut into 16 and a part of 5, whose chunks go
    3 kernel rows to a tile: 7 + ⌈7/3⌉ = 10 tiles, not the 14 of 5 whole pixels a tile."""
    term, arrays = _nhwc_conv(3, 20, 7, 2, 3, 8, seed=0)
    a, b = _operands(term, arrays)
    n = 16
    plain = tiles([d.size for d in shared_k(a.view, b.view)[0].groups[-1]], n)
    assert len(plain) == 7 * math.ceil(7 / 5)
    tiling = shape(a, b, n)
    assert len(tiling.k_tiles) == 7 + math.ceil(7 / 3) and len(tiling.a) == 2
    assert sorted({count for _, (_, count) in tiling.k_tiles}) == [5, 15, 16]
    program = lower(term, env_types(arrays), load_config("n16"))
    outcome = execute(program, arrays, "isa")
    assert np.array_equal(outcome.result, _reference(arrays, 2, 3))
    assert outcome.cycles == program.figures()["predicted_cycles"]


@pytest.mark.parametrize("seed", range(12))
def test_a_window_row_counted_in_bytes_reads_the_same_elements(seed):
    """The view with x counted in channels (x′ = C·x + c, bound C·W) reads every element
    the original does, zero padding included: the views' own numpy reading (gather). (One
    channel has no digit of its own, and no padding no coordinate: nothing to count.)"""
    rng = np.random.default_rng(seed)
    c, k, stride, pad = (int(rng.integers(lo, hi)) for lo, hi in
                         ((2, 7), (2, 6), (1, 4), (1, 4)))
    size = int(rng.integers(k, k + 6))
    term, arrays = _nhwc_conv(c, size, k, stride, pad, 2, seed)
    a, b = _operands(term, arrays)
    view = shared_k(a.view, b.view)[0]
    scaled = _channels_in_bytes(view, -1)
    assert scaled is not None and scaled.coords != view.coords
    flat = arrays["data"].reshape(-1)
    assert np.array_equal(gather(scaled, flat), gather(view, flat))


def test_random_nhwc_convs_with_parts_match_the_interpreter_and_numpy():
    """NHWC convs of random channels, kernels, strides and padding on N = 4, lowered (the
    search takes the finer tiling where it has fewer tiles) and run on the ISA simulator:
    equal to the interpreter and to numpy, cycles as predicted; some of them cut into parts
    with the channels counted in bytes."""
    config = load_config("n4")
    parted = 0
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        c, k, stride, pad = (int(rng.integers(lo, hi)) for lo, hi in
                             ((1, 8), (1, 6), (1, 4), (0, 4)))
        size = int(rng.integers(k, k + 5))
        term, arrays = _nhwc_conv(c, size, k, stride, pad, int(rng.integers(1, 7)), seed)
        a, b = _operands(term, arrays)
        parted += len(shape(a, b, config.array_size).a) > 1
        program = lower(term, env_types(arrays), config)
        expected, _ = interpret(term, arrays)
        assert np.array_equal(expected.astype(np.int64), _reference(arrays, stride, pad))
        outcome = execute(program, arrays, "isa")
        assert np.array_equal(outcome.result, expected)
        assert outcome.cycles == program.figures()["predicted_cycles"]
    assert parted >= 3


@pytest.mark.rtl
def test_a_parted_nhwc_conv_on_the_rtl_equals_numpy_and_the_model():
    """Runs of bytes that straddle the padded border, checked element by element, and the
    short part's tiles on the Verilator RTL (n4): result and cycles."""
    term, arrays = _nhwc_conv(3, 9, 3, 2, 1, 6, seed=3)
    config = load_config("n4")
    a, b = _operands(term, arrays)
    assert len(shape(a, b, config.array_size).a) == 2
    program = lower(term, env_types(arrays), config)
    outcome = execute(program, arrays, "rtl")
    assert np.array_equal(outcome.result, _reference(arrays, 2, 1))
    assert outcome.cycles == program.figures()["predicted_cycles"]


def test_the_image_as_b_counts_its_channels_in_bytes_too():
    """The filters streamed and the windows stationary (Cᵀ = Bᵀ·Aᵀ, the image B): 12 channels,
    5×5, on n16. With the channels innermost the window row (kx, c) is one digit of 60 on both
    sides, whether merged as the K order puts it (no padding) or counted in bytes (padding):
    5·⌈60/16⌉ = 20 tiles, not the 25 of one tap's 12 channels a tile."""
    for pad in (0, 2):
        term, arrays = _nhwc_conv(12, 15, 5, 1, pad, 37, seed=pad)
        a, b = _operands(term, arrays)
        a, b, _ = orient({"a": a, "b": b}, (1, 1), True, 0, True)
        channels = next(i for i in range(k_digits(a, b))
                        if shared_k(a.view, b.view, i)[1].groups[0][-1].stride == 1)
        assert len(shape(a, b, 16, channels).k_tiles) == 5 * math.ceil(60 / 16)


@pytest.mark.parametrize("seed", range(6))
def test_every_k_order_and_orientation_of_an_nhwc_conv_computes_it(seed):
    """Random NHWC convs built in both orientations and every K order on n4, their tilings
    refined as shape() chooses, on the ISA simulator: numpy's result each time."""
    rng = np.random.default_rng(200 + seed)
    c, k, stride, pad = (int(rng.integers(lo, hi)) for lo, hi in
                         ((2, 8), (2, 6), (1, 3), (0, 3)))
    size, out = int(rng.integers(k, k + 5)), int(rng.integers(1, 7))
    term, arrays = _nhwc_conv(c, size, k, stride, pad, out, seed)
    config = load_config("n4")
    expected = _reference(arrays, stride, pad)
    a, b = _operands(term, arrays)
    a, b = replace(a, address=4096), replace(b, address=0)
    pixels = expected.shape[0]
    for swap in (False, True):
        x, y, c_target = orient({"a": a, "b": b}, (pixels, out), swap, 16384, True)
        for inner in (None, *range(k_digits(x, y))):
            kernel = build_kernel("t", x, y, c_target, True, False, 0, config, k_inner=inner)
            dram = np.zeros(config.dram_bytes, np.uint8)
            dram[4096:4096 + arrays["data"].size] = arrays["data"].reshape(-1).view(np.uint8)
            dram[:arrays["filters"].size] = arrays["filters"].reshape(-1).view(np.uint8)
            machine = simulator.run([encode(i) for i in kernel.instructions], config, dram)
            result = machine.dram[16384:16384 + 4 * pixels * out].view("<i4")
            result = result.reshape((out, pixels) if swap else (pixels, out))
            assert np.array_equal(result.T if swap else result, expected), (swap, inner)


def _pixels_as_columns(size: int, k: int, c: int, out: int, seed: int):
    """An NHWC conv in the orientation where the image is B (Cᵀ = Bᵀ·Aᵀ): its output pixels
    are the columns; with its arrays and numpy's result."""
    term, arrays = _nhwc_conv(c, size, k, 1, 0, out, seed)
    a, b = _operands(term, arrays)
    a, b = replace(a, address=4096), replace(b, address=0)
    pixels = (size - k + 1) ** 2
    x, y, c_target = orient({"a": a, "b": b}, (pixels, out), True, 16384, True)
    return x, y, c_target, arrays, _reference(arrays, 1, 0)


@pytest.mark.parametrize("size,n,tiles_as_lie,tiles_reordered", [
    (26, 16, 48, 36), (30, 16, 56, 49), (58, 16, 224, 196), (8, 4, 12, 9)])
def test_pixel_columns_walked_in_another_order_fill_the_array(size, n, tiles_as_lie,
                                                              tiles_reordered):
    """column_orders: output rows of 24 pixels (3×3 windows over 26) cut 16 + 8 use 3 of
    every 4 array columns; split 24 = 3 × 8 and walked 3 outermost, a tile is 2 rows of 8
    pixels: 36 tiles, not 48 (rows of 28: 7 × 4, 49 tiles; of 56: 7 × 8, 196; on n4 rows
    of 6: 3 × 2, 9). B and C walk one permutation of the columns: B's reordered columns are
    its columns in C's new order (the views' own numpy reading, gather)."""
    x, y, c_target, arrays, _ = _pixels_as_columns(size, 3, 2, 3, seed=size)
    found = column_orders(y.view, c_target.view, n)
    assert [len(tiles([d.size for d in merge(b.groups[-1])], n)) for b, _ in found] == \
        [tiles_as_lie, tiles_reordered]
    (b, c), (b_new, c_new) = found
    order = gather(c_new, np.arange(math.prod(c.dims)))  # C row-major: each index's place
    assert sorted(order[0]) == list(range(c.dims[1]))
    flat = arrays["data"].reshape(-1)
    assert np.array_equal(gather(b_new, flat), gather(b, flat)[:, order[0]])


@pytest.mark.parametrize("seed", range(4))
def test_a_conv_built_over_reordered_pixel_columns_computes_it(seed):
    """Random NHWC convs on n4 whose output rows are 2 pixels past a multiple of 4, the image as B,
    built (every K order) with the pixel columns as they lie and reordered, on the ISA
    simulator: numpy's result each time, and fewer MATMULs reordered."""
    rng = np.random.default_rng(300 + seed)
    width, k, c, out = (int(rng.integers(lo, hi)) for lo, hi in ((1, 3), (1, 4), (2, 5), (1, 5)))
    size = 4 * width + 2 + k - 1  # output rows of 4w + 2 pixels: 4w + 4 columns as they lie
    x, y, c_target, arrays, expected = _pixels_as_columns(size, k, c, out, seed)
    config = load_config("n4")
    orders = column_orders(y.view, c_target.view, config.array_size)
    assert len(orders) == 2
    matmuls = []
    for b_view, c_view in orders:
        for inner in (None, *range(k_digits(x, y))):
            kernel = build_kernel("t", x, replace(y, view=b_view),
                                  replace(c_target, view=c_view), True, False, 0, config,
                                  k_inner=inner)
            dram = np.zeros(config.dram_bytes, np.uint8)
            dram[4096:4096 + arrays["data"].size] = arrays["data"].reshape(-1).view(np.uint8)
            dram[:arrays["filters"].size] = arrays["filters"].reshape(-1).view(np.uint8)
            machine = simulator.run([encode(i) for i in kernel.instructions], config, dram)
            result = machine.dram[16384:16384 + 4 * expected.size].view("<i4")
            assert np.array_equal(result.reshape(expected.shape[::-1]).T, expected), inner
        matmuls.append(sum(i.op.name == "matmul" for i in kernel.instructions))
    assert matmuls[1] < matmuls[0]


@pytest.mark.rtl
def test_a_conv_over_reordered_pixel_columns_on_the_rtl_equals_numpy_and_the_model(monkeypatch):
    """An NHWC 3×3 conv of 8 channels into 6 filters at 6×6 on n4: the search streams the
    filters and walks the output pixels 3 × (6 rows of 2), faster than as they lie (the same
    search without the other order picks another kernel, slower); on the Verilator RTL the
    result is numpy's and the cycles the model's."""
    term, arrays = _nhwc_conv(8, 6, 3, 1, 1, 6, seed=5)
    config = load_config("n4")
    program = lower(term, env_types(arrays), config)
    with monkeypatch.context() as patched:
        patched.setattr("glc.lower.schedule.column_orders", lambda b, c, n: [(b, c)])
        as_they_lie = lower(term, env_types(arrays), config)
    assert program.figures()["predicted_cycles"] < as_they_lie.figures()["predicted_cycles"]
    outcome = execute(program, arrays, "rtl")
    assert np.array_equal(outcome.result, _reference(arrays, 1, 1))
    assert outcome.cycles == program.figures()["predicted_cycles"]
