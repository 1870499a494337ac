"""Repacks (glc/lower/repack.py): a layout change on the vector unit the schedule search
chooses when the copy and the kernel over it beat the kernel as it is."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from exactness import exact

from glc.cost.limit import kernel_limit
from glc.hwconfig import load_config
from glc.interp import env_types, interpret
from glc.lower.execute import execute, read_buffer
from glc.lower.lowering import lower
from glc.lower.repack import Repack, copy_cycles, gathers, repacks
from glc.lower.view import Digit, View, row_major
from glc.report import kernel_limits, step_rows
from glc.syntax.reader import parse_term


def _nchw_conv(c: int, hw: int, out: int, seed: int, k: int = 3, stride: int = 1):
    """A k×k same-padded conv over an NCHW image with OIHW filters, as the extraction spells it
    (filters streamed, the image's windows stationary): its channels are H·W bytes apart, so
    its loads run one byte at a time unless the image is repacked to NHWC."""
    rng = np.random.default_rng(seed)
    p = k // 2
    padded = (f"(access-pad (access-pad (access-tensor data) zero-padding 2 {p} {p}) "
              f"zero-padding 3 {p} {p})")
    windows = (f"(access (access-squeeze (access-windows (access {padded} 1) (shape {c} {k} {k})"
               f" (shape 1 {stride} {stride})) 1) 3)")
    pixels = ((hw + 2 * p - k) // stride + 1) ** 2
    text = (f"(systolic-array {c * k * k} {pixels} "
            f"(access-flatten (access (access-tensor filters) 1)) "
            f"(access (access-transpose (access-flatten {windows}) (list 1 0)) 0))")
    arrays = {"data": rng.integers(-128, 128, (1, c, hw, hw)).astype(np.int8),
              "filters": rng.integers(-128, 128, (out, c, k, k)).astype(np.int8)}
    return parse_term(text), arrays


def _no_copies(monkeypatch) -> None:
    """The lowering with no repack or gather to choose: the operands as they lie."""
    monkeypatch.setattr("glc.lower.relayout.repacks", lambda source: [])
    monkeypatch.setattr("glc.lower.relayout.gathers", lambda *args: [])


@pytest.mark.parametrize(("config", "c", "hw", "out"),
                         [("n4", 16, 7, 16), ("n4", 12, 6, 7), ("n16", 32, 20, 16)])
def test_a_repacked_conv_matches_the_interpreter_and_its_copy_is_the_transpose(config, c, hw,
                                                                               out):
    term, arrays = _nchw_conv(c, hw, out, seed=c + hw)
    program = lower(term, env_types(arrays), load_config(config))
    kinds = [s.kernel.kind for s in program.kernels]
    assert "repack" in kinds and kinds[-1] == "matmul" and not program.host_steps
    outcome = exact(term, arrays, program, "isa")
    for step in program.kernels[:-1]:
        (source,) = step.inputs
        order = next(r.order for r in repacks(row_major(source, arrays[source].shape))
                     if r.shape == program.buffers[step.output].shape)
        copy = read_buffer(outcome.dram, program.buffers[step.output])
        assert np.array_equal(copy, np.transpose(arrays[source], order))


def test_the_search_repacks_only_when_the_copy_pays():
    """A channel-deep NCHW layer on n16 is repacked and beats the kernel over the NCHW image
    by more than the copy costs; a one-channel image has nothing to gain and is not."""
    config = load_config("n16")
    term, arrays = _nchw_conv(32, 20, 16, seed=1)
    program = lower(term, env_types(arrays), config)
    copies = [s for s in program.kernels if s.kernel.kind == "repack"]
    assert copies
    term1, arrays1 = _nchw_conv(1, 20, 16, seed=1)
    assert [s.kernel.kind for s in lower(term1, env_types(arrays1), config).kernels] == \
        ["matmul"]


# n4's layer was 12→4 5×5 at 9×9 until ISA revision 3.1 gave every STORE a second set-up
# cycle: its filters' copy went from 760 to 834 cycles, and the image's copy alone (8 535
# cycles in all) now beats both copies (8 544; the ISA simulator's and the RTL's cycles alike),
# so the search rightly stops at one. At 24→4 5×5 on 17×17 both still pay: 53 689 cycles,
# against 55 482 with the image's copy alone and 66 064 with none.
@pytest.mark.parametrize(("config", "c", "hw", "out", "k", "stride"),
                         [("n16", 64, 17, 16, 5, 2), ("n16", 128, 17, 16, 7, 1),
                          ("n4", 24, 17, 4, 5, 1)])
def test_an_image_and_its_filters_are_repacked_together_where_neither_pays_alone(
        monkeypatch, config, c, hw, out, k, stride):
    """Few filters over many channels: K is walked channels innermost only if both the image
    (NHWC) and the filters (OHWI or IHWO) are copied; either copy alone leaves the other
    operand's channels strided. Both copies run first (chosen as a pair where neither pays
    alone, the 64→16 5×5/2 layer; where the image's does, the filters' then pays over it), the
    result is exact, the cycles the model's, and fewer than the kernel over the tensors as they
    lie."""
    hw_config = load_config(config)
    term, arrays = _nchw_conv(c, hw, out, seed=c + k, k=k, stride=stride)
    program = lower(term, env_types(arrays), hw_config)
    assert [s.kernel.kind for s in program.kernels] == ["repack", "repack", "matmul"]
    assert {s.inputs[0] for s in program.kernels[:2]} == {"data", "filters"}
    outcome = exact(term, arrays, program, "isa")
    _no_copies(monkeypatch)
    as_they_lie = lower(term, env_types(arrays), hw_config)
    assert [s.kernel.kind for s in as_they_lie.kernels] == ["matmul"]
    assert outcome.cycles < as_they_lie.figures()["predicted_cycles"]


def _im2col(data: np.ndarray, k: int) -> np.ndarray:
    """An NCHW image's same-padded k×k windows as (channel, ky, kx, y, x), by numpy alone."""
    p = k // 2
    padded = np.pad(data[0], ((0, 0), (p, p), (p, p)))
    height, width = data.shape[2:]
    return np.stack([np.stack([padded[:, ky:ky + height, kx:kx + width] for kx in range(k)],
                              axis=1) for ky in range(k)], axis=1)


@pytest.mark.parametrize(("config", "c", "hw", "out", "k"),
                         [("n4", 16, 3, 64, 3), ("n16", 256, 7, 512, 3)])
def test_a_small_image_under_many_filters_is_gathered_into_its_im2col(monkeypatch, config, c,
                                                                      hw, out, k):
    """A few pixels (fewer than 2N columns of weight tiles) under many filters: the windows of
    an NCHW image walk K with three strides, so only a copy of the im2col (K × pixels: taps ×
    the image, small here) lets the filters stream against full 16-row K tiles. The copy is
    numpy's im2col, the result exact, the cycles the model's and fewer than without it."""
    hw_config = load_config(config)
    term, arrays = _nchw_conv(c, hw, out, seed=c, k=k)
    program = lower(term, env_types(arrays), hw_config)
    assert [s.kernel.kind for s in program.kernels] == ["repack", "matmul"]
    outcome = exact(term, arrays, program, "isa")
    copy = program.buffers[program.kernels[0].output]
    assert np.array_equal(read_buffer(outcome.dram, copy), _im2col(arrays["data"], k))
    _no_copies(monkeypatch)
    as_it_lies = lower(term, env_types(arrays), hw_config)
    assert [s.kernel.kind for s in as_it_lies.kernels] == ["matmul"]
    assert outcome.cycles < as_it_lies.figures()["predicted_cycles"]


def test_only_a_view_that_rereads_its_tensor_is_gathered():
    """A 3×3 same-padded window over a 2-channel 3×3 image (K × pixels: 162 elements of 18) is
    gathered; a plain matrix is not, nor a view with a dim of no digits (one output pixel:
    ResNet-50's last layers at 32×32 raised on it)."""
    k = (Digit(2, 9, (0, 0)), Digit(3, 3, (1, 0)), Digit(3, 1, (0, 1)))
    m = (Digit(3, 3, (1, 0)), Digit(3, 1, (0, 1)))
    windows = View("x", -4, (k, m), ((-1, 3), (-1, 3)))
    assert [g.k_group for g in gathers(windows, "b", 18)] == [0]
    assert [g.shape for g in gathers(windows, "b", 18)] == [(2, 3, 3, 3, 3)]
    assert gathers(row_major("w", (16, 32)), "a", 16 * 32) == []
    assert gathers(replace(windows, groups=(k, ())), "b", 2) == []  # a 2-channel 1×1 image


@pytest.mark.parametrize("address", [0, 4096, 64 * 1001])
@pytest.mark.parametrize("dim", [0, 1])
def test_a_copys_cycles_do_not_depend_on_its_addresses(address, dim):
    config = load_config("n16")
    source = row_major("x", (32, 24, 3, 3))
    built = Repack(source, dim).kernel(address, "copy", address + 32 * 24 * 9 + 64, config)
    assert built.predicted_cycles(config) == copy_cycles(Repack(source, dim), config)
    assert Repack(source, dim).costed(config).estimated == built.predicted_cycles(config)


def test_only_a_change_of_the_non_unit_dims_order_is_a_repack():
    assert repacks(row_major("m", (64, 64))) == []  # the LOADs transpose a matrix themselves
    assert [r.order for r in repacks(row_major("x", (1, 64, 56, 56)))] == [(0, 2, 3, 1)]
    assert [r.order for r in repacks(row_major("w", (128, 64, 3, 3)))] == \
        [(1, 2, 3, 0), (0, 2, 3, 1)]
    assert repacks(row_major("v", (1, 64, 1, 1))) == []


def test_a_repack_has_no_limit_and_no_efficiency_of_its_own():
    config = load_config("n16")
    term, arrays = _nchw_conv(32, 20, 16, seed=2)
    program = lower(term, env_types(arrays), config)
    limits = kernel_limits(program)
    rows = {r.step: r for r in step_rows(program, limits)}
    for step in program.kernels:
        limit = kernel_limit(step.kernel, config)
        if step.kernel.kind == "repack":
            assert (limit.ideal, limit.limit, limit.macs) == (0, 0, 0)
            assert rows[step.name].unit == "vector" and rows[step.name].efficiency is None \
                and rows[step.name].roofline_efficiency is None
        else:
            assert limit.macs == 16 * 32 * 9 * 20 * 20


@pytest.mark.rtl
@pytest.mark.parametrize(("c", "hw", "out", "copy"), [(16, 7, 16, (1, 7, 7, 16)),
                                                      (16, 3, 64, (16, 3, 3, 3, 3))],
                         ids=["repacked", "gathered"])
def test_a_copied_conv_on_the_rtl_equals_the_interpreter_and_the_model(c, hw, out, copy):
    """The image repacked channels-last (a 7×7 image under 16 filters), or its im2col gathered
    (a 3×3 image under 64): on n4's RTL, exact and in the model's cycles."""
    config = load_config("n4")
    term, arrays = _nchw_conv(c, hw, out, seed=hw)
    program = lower(term, env_types(arrays), config)
    assert [s.kernel.kind for s in program.kernels] == ["repack", "matmul"]
    assert program.buffers[program.kernels[0].output].shape == copy
    exact(term, arrays, program, "rtl")


def _pool(layout: str, seed: int, window: int = 3):
    """A window×window/2 max pool over a 32-channel image: NCHW windows step 2 bytes along a
    row, so no column of the fold reads a run; NHWC windows read their channels in runs."""
    shape = (1, 32, 15, 15) if layout == "nchw" else (1, 15, 15, 32)
    size = f"(shape {window} {window}) (shape 2 2)"
    windows = (f"(access-windows (access (access-tensor x) 2) {size})"
               if layout == "nchw" else
               "(access-transpose (access-windows (access (access-transpose (access-tensor x) "
               f"(list 0 3 1 2)) 2) {size}) (list 0 2 3 1 4 5))")
    arrays = {"x": np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)}
    return parse_term(f"(compute reduce-max {windows})"), arrays


# n4's window is 5×5: its copy of the NCHW tensor STOREs a 4×4 tile at a time (456 STOREs),
# and ISA revision 3.1 gave each STORE a second set-up cycle, so a 3×3/2 pool's copy went from
# 4 557 to 5 005 cycles, and with the fold over it (9 349) no longer beats the fold as the
# tensor lies (8 991; the ISA simulator's and the RTL's cycles alike): the search is right not
# to copy. A 5×5 window reads each byte ~6 times, not ~2, and the copy pays: 13 612 < 15 344.
@pytest.mark.parametrize(("config", "window"), [("n4", 5), ("n16", 3)])
def test_a_strided_pool_over_nchw_reads_a_channels_last_copy(config, window):
    term, arrays = _pool("nchw", seed=7, window=window)
    hw_config = load_config(config)
    program = lower(term, env_types(arrays), hw_config)
    assert [s.kernel.kind for s in program.kernels] == ["repack", "fold"]
    outcome = exact(term, arrays, program, "isa")
    as_it_lies = lower(term, env_types(arrays), hw_config, disabled={"fold-repack"})
    assert [s.kernel.kind for s in as_it_lies.kernels] == ["fold"]
    assert outcome.cycles < as_it_lies.figures()["predicted_cycles"]


def test_a_pool_reading_runs_is_not_repacked():
    term, arrays = _pool("nhwc", seed=8)
    program = lower(term, env_types(arrays), load_config("n16"))
    assert [s.kernel.kind for s in program.kernels] == ["fold"]
    expected, _ = interpret(term, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)
