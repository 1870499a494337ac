"""Kernels on random shapes: a systolic array over plain or transposed int8 matrices (or a
vector), with a fused relu and/or requantize, lowered for N = 4 and run on the ISA simulator,
equals the interpreter bit for bit."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from glc.hwconfig import load_config
from glc.interp import env_types, interpret
from glc.ir.check import check
from glc.isa import simulator
from glc.isa.cycles import predict
from glc.isa.encoding import encode
from glc.lower.execute import execute
from glc.lower.kernel import build_kernel
from glc.lower.lowering import lower, predicted_cycles
from glc.lower.tiling import flat_k, shape
from glc.lower.transfer import Target
from glc.lower.view import row_major, view_of
from glc.syntax.printer import print_term
from glc.syntax.reader import parse_term


def _operand(name: str, transposed: bool, axis: int) -> str:
    tensor = f"(access-tensor {name})"
    if transposed:
        tensor = f"(access-transpose {tensor} (list 1 0))"
    return f"(access {tensor} {axis})"


def _case(seed: int):
    rng = np.random.default_rng(seed)
    m, k, o = (int(x) for x in rng.integers(1, 23, 3))
    ta, tb, vector = (bool(x) for x in rng.integers(0, 2, 3))
    a_dims = (k,) if vector else ((k, m) if ta else (m, k))
    arrays = {"a": rng.integers(-128, 128, a_dims).astype(np.int8),
              "b": rng.integers(-128, 128, (o, k) if tb else (k, o)).astype(np.int8)}
    a = "(access (access-tensor a) 0)" if vector else _operand("a", ta, 1)
    text = f"(systolic-array {k} {o} {a} {_operand('b', tb, 0)})"
    for kind in rng.permutation(["relu", "(requantize 5)", ""])[:int(rng.integers(0, 3))]:
        if kind:
            text = f"(compute {kind} {text})"
    return parse_term(text), arrays


@pytest.mark.parametrize("seed", range(24))
def test_random_kernel_matches_the_interpreter(seed):
    term, arrays = _case(seed)
    program = lower(term, env_types(arrays), load_config("n4"))
    assert len(program.kernels) == 1 and not program.host_steps
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "isa")
    assert outcome.result.dtype == expected.dtype
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]


def _conv(seed: int):
    """The conv2d form extraction yields (filters streamed, im2col windows stationary), NCHW or
    NHWC (the image transposed to NCHW inside the term), random sizes, strides and padding."""
    rng = np.random.default_rng(seed)
    c, h, w, out = (int(x) for x in rng.integers(1, 7, 4))
    kh, kw = int(rng.integers(1, min(h, 3) + 1)), int(rng.integers(1, min(w, 3) + 1))
    sh, sw = (int(x) for x in rng.integers(1, 3, 2))
    pt, pb, pl, pr = (int(x) for x in rng.integers(0, 2, 4))
    nhwc = bool(rng.integers(0, 2))
    image = "(access-tensor data)"
    if nhwc:
        image = f"(access-transpose {image} (list 0 3 1 2))"
    padded = f"(access-pad (access-pad {image} zero-padding 2 {pt} {pb}) zero-padding 3 {pl} {pr})"
    oh, ow = (h + pt + pb - kh) // sh + 1, (w + pl + pr - kw) // sw + 1
    windows = (f"(access (access-squeeze (access-windows (access {padded} 1) (shape {c} {kh} {kw})"
               f" (shape 1 {sh} {sw})) 1) 3)")
    text = (f"(systolic-array {c * kh * kw} {oh * ow} "
            f"(access-flatten (access (access-tensor filters) 1)) "
            f"(access (access-transpose (access-flatten {windows}) (list 1 0)) 0))")
    arrays = {"data": rng.integers(-128, 128, (1, h, w, c) if nhwc else (1, c, h, w)
                                   ).astype(np.int8),
              "filters": rng.integers(-128, 128, (out, c, kh, kw)).astype(np.int8)}
    return parse_term(text), arrays


@pytest.mark.parametrize("seed", range(16))
def test_random_im2col_kernel_matches_the_interpreter(seed):
    """One product kernel, after the repacks of its operands the schedule search chose
    (glc/lower/repack.py); their cycles as the model predicts."""
    term, arrays = _conv(seed)
    program = lower(term, env_types(arrays), load_config("n4"))
    kinds = [k.kernel.kind for k in program.kernels]
    assert kinds == ["repack"] * (len(kinds) - 1) + ["matmul"] and not program.host_steps
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "isa")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]


def _padded_operand(padding: str) -> tuple:
    rng = np.random.default_rng(7)
    arrays = {"a": rng.integers(-128, 128, (5, 6)).astype(np.int8),
              "b": rng.integers(-128, 128, (8, 3)).astype(np.int8)}
    term = parse_term(f"(systolic-array 8 3 (access {padding} 1) (access (access-tensor b) 0))")
    return term, arrays, lower(term, env_types(arrays), load_config("n4"))


def test_a_min_padded_operand_is_loaded_with_the_pad_value():
    # min-padding fills with -128: the LOAD's pad value (docs/isa.md, LOAD), no host copy.
    term, arrays, program = _padded_operand("(access-pad (access-tensor a) min-padding 1 0 2)")
    figures = program.figures()
    assert (figures["kernels"], figures["host_copies"], figures["host_steps"]) == (1, 0, 0)
    pads = {i["pad"] for i in program.kernels[0].kernel.instructions if i.op.name == "load"}
    assert -128 in pads
    expected, _ = interpret(term, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)


def test_an_operand_that_is_no_view_is_copied_by_the_host_and_counted():
    # zero padding, then min padding: one LOAD pads with one value, so the host materialises it.
    term, arrays, program = _padded_operand(
        "(access-pad (access-pad (access-tensor a) zero-padding 0 1 0) min-padding 1 0 2)")
    figures = program.figures()
    assert (figures["kernels"], figures["host_copies"], figures["host_steps"]) == (1, 1, 0)
    expected, _ = interpret(term, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)


def test_predicted_cycles_of_a_term_is_the_cycle_model_over_its_kernels():
    term, arrays = _case(3)
    config = load_config("n4")
    program = lower(term, env_types(arrays), config)
    expected = sum(predict(s.kernel.instructions, config).counters.cycles
                   for s in program.kernels)
    assert predicted_cycles(term, env_types(arrays), config) == expected > 0


def _dense_bias(seed: int, m_range=(1, 23)):
    """x·wᵀ + bias broadcast over the rows (the dense-bias idiom), maybe under relu/requantize."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(*m_range))
    k, o = (int(x) for x in rng.integers(1, 23, 2))
    arrays = {"x": rng.integers(-128, 128, (m, k)).astype(np.int8),
              "w": rng.integers(-128, 128, (o, k)).astype(np.int8),
              "bias": rng.integers(-2**31, 2**31, (o,)).astype(np.int32)}
    product = (f"(access (systolic-array {k} {o} (access (access-tensor x) 1) (access "
               f"(access-transpose (access-tensor w) (list 1 0)) 0)) 1)")
    bias = (f"(access-broadcast (access (access-insert-axis (access-tensor bias) 0) 1) "
            f"(access-shape (shape {m}) (shape {o})))")
    pair = [product, bias][::1 if rng.integers(0, 2) else -1]
    text = f"(compute elementwise-add (access-pair {pair[0]} {pair[1]}))"
    for kind in ["relu", "(requantize 9)"][:int(rng.integers(0, 3))]:
        text = f"(compute {kind} {text})"
    return parse_term(text), arrays


@pytest.mark.parametrize("seed", range(12))
def test_a_bias_is_added_in_the_accumulator(seed):
    term, arrays = _dense_bias(seed)
    program = lower(term, env_types(arrays), load_config("n4"))
    figures = program.figures()
    assert (figures["kernels"], figures["host_steps"], figures["host_copies"]) == (1, 0, 0)
    assert program.kernels[0].kernel.bias
    expected, _ = interpret(term, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)


def test_a_bias_over_more_tiles_than_the_accumulator_holds_stays_in_one_kernel():
    # 600 rows of 22 outputs: more tiles than n4's 256 accumulator rows hold at once. The
    # STOREs add the bias (one accumulator row per output tile, glc/lower/table.py), so one
    # kernel computes it all. Before ISA revision 2.5 the bias was loaded into every accumulator
    # row first: a raw kernel and a fold adding it (16 323 cycles), then kernels of row chunks
    # (10 014 cycles).
    term, arrays = _dense_bias(2, m_range=(600, 601))
    program = lower(term, env_types(arrays), load_config("n4"))
    assert program.figures()["host_steps"] == 0 and len(program.kernels) == 1
    assert program.kernels[0].kernel.kind == "matmul" and program.kernels[0].kernel.bias
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "isa")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"] < 10014


@pytest.mark.parametrize("seed", range(10))
def test_relu_and_requantize_over_a_reshaped_transposed_result_fuse_into_the_store(seed):
    # The conv2d root (NCHW: a reshape and transpose of the product), then relu / requantize.
    term, arrays = _conv(seed)
    o, pixels = arrays["filters"].shape[0], term.args[1].value
    rows = max(d for d in range(1, pixels + 1) if pixels % d == 0 and d <= 3)
    text = (f"(compute (requantize 4) (compute relu (access-transpose (access-reshape "
            f"{print_term(term)} (access-shape (shape {o} 1 {rows} {pixels // rows}) (shape))) "
            f"(list 1 0 2 3))))")
    term = parse_term(text)
    program = lower(term, env_types(arrays), load_config("n4"))
    *repacks, last = program.kernels
    kernel = last.kernel
    assert all(r.kernel.kind == "repack" for r in repacks) and not program.host_steps
    assert (kernel.relu, kernel.shift, kernel.raw) == (True, 4, False)
    expected, _ = interpret(term, arrays)
    result = execute(program, arrays, "isa").result
    assert result.dtype == np.int8 and np.array_equal(result, expected)


@pytest.mark.parametrize("seed", range(12))
def test_flat_k_tiles_compute_the_product(seed):
    """K tiles flat across the channel boundaries (glc/lower/kernel.py, flat_k): the filters
    (A, K merged into one digit) against the im2col windows (B, several boxes per tile), both
    tilings equal to the interpreter on the ISA simulator; flat has fewer K tiles."""
    term, arrays = _conv(seed)
    config = load_config("n4")
    n = config.array_size
    types = check(term, env_types(arrays))
    address = {"filters": 0, "data": 4096}

    def base(t):
        return row_major(t.value, arrays[t.value].shape) if t.op == "symbol" else None

    a, b = (Target(view_of(x, types, base), 0, 1) for x in term.args[2:])
    a, b = (replace(t, address=address[t.view.buffer]) for t in (a, b))
    m, p = a.view.dims[0], b.view.dims[1]
    c = Target(row_major("c", (m, p)), 16384, 4)
    expected, _ = interpret(term, arrays)
    assert flat_k(a, b, None, n) == (len(shape(a, b, n).k_tiles) >
                                     len(shape(a, b, n, flat=True).k_tiles))
    for flat in (False, True):
        kernel = build_kernel("t", a, b, c, True, False, 0, config, flat=flat)
        dram = np.zeros(config.dram_bytes, np.uint8)
        for name, at in address.items():
            dram[at:at + arrays[name].size] = arrays[name].reshape(-1).view(np.uint8)
        machine = simulator.run([encode(i) for i in kernel.instructions], config, dram)
        result = machine.dram[16384:16384 + 4 * m * p].view("<i4").reshape(m, p)
        assert np.array_equal(result, expected)


@pytest.mark.parametrize("nhwc", [False, True], ids=["nchw", "nhwc"])
def test_a_padded_image_read_first_gets_room_below_it(nhwc):
    """The windows of a padded image as A, so the image is the first tensor in DRAM: its
    padded rows' runs start before it, and a run's address does not wrap into its elements
    (docs/isa.md, "Range checks"), so it is placed high enough (not at 0), with no copy."""
    rng = np.random.default_rng(5)
    c, size, out = 4, 8, 6
    arrays = {"data": rng.integers(-128, 128, (1, size, size, c) if nhwc else (1, c, size, size)
                                   ).astype(np.int8),
              "filters": rng.integers(-128, 128, (out, c, 3, 3)).astype(np.int8)}
    image = ("(access-transpose (access-tensor data) (list 0 3 1 2))" if nhwc
             else "(access-tensor data)")
    padded = f"(access-pad (access-pad {image} zero-padding 2 1 1) zero-padding 3 1 1)"
    windows = (f"(access (access-squeeze (access-windows (access {padded} 1) (shape {c} 3 3) "
               f"(shape 1 1 1)) 1) 3)")
    term = parse_term(f"(systolic-array {c * 9} {out} (access-flatten {windows}) (access "
                      f"(access-transpose (access-flatten (access (access-tensor filters) 1)) "
                      f"(list 1 0)) 0))")
    program = lower(term, env_types(arrays), load_config("n4"))
    assert program.buffers["data"].address > 0 and program.figures()["host_copies"] == 0
    expected, _ = interpret(term, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)


def test_a_fold_lays_out_its_columns_along_the_operands_contiguous_dim(tmp_path):
    # An NCHW view of NHWC tensors: the last logical dim (W) is strided by C. The fold puts C
    # last instead (its LOADs move N-element runs, one beat each, not one element a run) and
    # its result is the same view of a buffer stored that way.
    rng = np.random.default_rng(3)
    arrays = {k: rng.integers(-128, 128, (1, 8, 8, 32), dtype=np.int8) for k in ("a", "b")}
    nchw = "(access-transpose (access-tensor {}) (list 0 3 1 2))"
    term = parse_term(f"(add-linear {nchw.format('a')} {nchw.format('b')} 0.0213 -125 0.0311 -120"
                      f" 0.0427 -100 128)")
    n16 = load_config("n16")
    program = lower(term, env_types(arrays), n16)
    loads = [i for s in program.kernels for i in s.kernel.instructions if i.op.name == "load"]
    assert loads and all(i["run"] == n16.array_size for i in loads)
    expected, _ = interpret(term, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)
