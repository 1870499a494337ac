"""The shared programs (tests/isa/programs/*.s) and generated GEMMs on the ISA simulator, at N = 4
and N = 16, against numpy computed independently (glc/isa/cases.py)."""

import dataclasses
import itertools
import time

import numpy as np
import pytest

from glc.hwconfig import load_config
from glc.isa import simulator
from glc.isa.asm import assemble
from glc.isa.cases import CASES, build_case
from glc.isa.encoding import encode
from glc.isa.gemm import conv2d_program, gemm_instructions, gemm_program
from glc.isa.gemm_plan import MatrixRows, block_sizes, plan, step_plan
from glc.isa.status import MachineError

GOOD = [name for name, spec in CASES.items() if not isinstance(spec, tuple)]
BAD = [name for name, spec in CASES.items() if isinstance(spec, tuple)]


@pytest.mark.parametrize("config", ["n4", "n16"])
@pytest.mark.parametrize("name", GOOD)
def test_program_matches_numpy(name, config):
    hw = load_config(config)
    case = build_case(name, hw, seed=1)
    result = simulator.run(case.program.words, hw, case.dram, case.program.spans)
    assert case.expected
    for address, expected in case.expected:
        np.testing.assert_array_equal(result.dram[address:address + expected.size], expected)
    assert result.counters.cycles > 0


@pytest.mark.parametrize("config", ["n4", "n16"])
@pytest.mark.parametrize("name", BAD)
def test_bad_program_stops_with_its_error_code(name, config):
    hw = load_config(config)
    case = build_case(name, hw)
    start = time.perf_counter()
    with pytest.raises(MachineError) as caught:
        simulator.run(case.program.words, hw, case.dram, case.program.spans)
    assert time.perf_counter() - start < 5  # an error, never a hang
    assert (caught.value.code, caught.value.pc) == (case.error, case.error_pc)
    assert f"at instruction {case.error_pc}" in str(caught.value)


def _gemm_reference(a, b, raw, relu, shift):
    exact = a.astype(np.int64) @ b.astype(np.int64)
    if raw:
        return exact.astype("<i4")
    if relu:
        exact = np.maximum(exact, 0)
    if shift:
        exact = (exact + (1 << (shift - 1))) >> shift
    return np.clip(exact, -128, 127).astype(np.int8)


GEMMS = [
    (40, 12, 16, False, True, 7),  # one M block, 4 chunks, 3 weight buffers
    (40, 12, 16, True, False, 0),
    (9, 8, 4, True, False, 0),  # one output tile: 2 weight buffers, no chunks
    (300, 16, 8, False, False, 5),  # three M blocks
    (96, 8, 8, False, False, 3),
    (200, 24, 12, True, False, 0),  # four M blocks, both A regions reused
]
# Grouped weights (one block of A rows; the group size last): two groups of all K tiles, one
# group, many; groups of 2 and 3 of 6 K tiles, whose later groups' first steps also wait for
# their own A slice. (That each A slice has its own token is a timing property the simulator,
# executing each instruction at its issue, cannot see: tests/lower/test_lower_schedule.py
# holds it on the RTL.)
GROUPED = [(40, 12, 16, False, True, 7, 3), (6, 8, 40, True, False, 0, 2),
           (5, 24, 8, False, False, 4, 6), (9, 8, 4, True, False, 0, 2),
           (40, 24, 8, True, False, 0, 2), (40, 24, 8, False, False, 6, 3)]


@pytest.mark.parametrize(("m", "k", "n_out", "raw", "relu", "shift", "order", "group"),
                         [(*g, o, 1) for o in ("k-outer", "j-outer") for g in GEMMS]
                         + [(*g[:-1], "j-outer", g[-1]) for g in GROUPED])
def test_generated_gemm_matches_numpy_at_n4(m, k, n_out, raw, relu, shift, order, group):
    hw = load_config("n4")
    text, layout = gemm_program(m, k, n_out, hw, raw=raw, relu=relu, shift=shift, order=order,
                                group=group)
    assert layout.order == order and layout.weight_group == group
    result = _run_gemm(hw, text, layout, m, k, n_out, raw, relu, shift)
    assert result.counters.busy_exec * 16 == m * k * n_out


# Ragged blocks (glc/isa/gemm.py): a cap under which no block divides M, so the last block
# overlaps the one before: 37 rows in 3 blocks of 13, 301 in 3 of 101, 130 in 3 of 44 (in
# chunks of 11).
RAGGED = [(37, 12, 16, False, True, 7, 13), (301, 8, 8, True, False, 0, 128),
          (130, 8, 12, False, False, 4, 50)]


@pytest.mark.parametrize("order", ["k-outer", "j-outer"])
@pytest.mark.parametrize(("m", "k", "n_out", "raw", "relu", "shift", "cap"), RAGGED)
def test_ragged_blocks_match_numpy_at_n4(m, k, n_out, raw, relu, shift, cap, order):
    """Each block of A rows as large as the others, the last one the last rows: the rows it
    shares with the block before are computed and stored twice, to the same values."""
    hw = load_config("n4")
    text, layout = gemm_program(m, k, n_out, hw, raw=raw, relu=relu, shift=shift, order=order,
                                block_rows=cap, ragged=True)
    blocks = -(-m // layout.block_rows)
    assert m % layout.block_rows and (blocks - 1) * layout.block_rows < m
    result = _run_gemm(hw, text, layout, m, k, n_out, raw, relu, shift)
    assert result.counters.busy_exec * 16 == blocks * layout.block_rows * k * n_out
    divided, _ = gemm_program(m, k, n_out, hw, raw=raw, relu=relu, shift=shift, order=order,
                              block_rows=cap)
    assert divided != text  # without ragged, blocks that divide M: another program


# Split last K tiles (glc/isa/gemm.py): K = 6 and 2 of N = 4 (a last K tile of 2 rows, the
# rest of its A columns and B rows zero), output tiles in pairs and an odd one alone, blocks
# of an odd and an even number of rows (an even block's tiles one accumulator row apart more);
# a K of one tile in several blocks, whose split steps write two tiles fresh, each waiting for
# a store (with three output tiles, j-outer's pairs start on odd tiles too).
SPLIT = [(40, 6, 16, False, True, 7, 0), (37, 6, 12, True, False, 0, 13),
         (9, 2, 8, True, False, 0, 0), (130, 6, 20, False, False, 4, 50),
         (300, 2, 16, True, False, 0, 60), (130, 2, 12, False, False, 3, 26)]


@pytest.mark.parametrize("order", ["k-outer", "j-outer"])
@pytest.mark.parametrize(("m", "k", "n_out", "raw", "relu", "shift", "cap"), SPLIT)
def test_split_last_k_tiles_match_numpy_at_n4(m, k, n_out, raw, relu, shift, cap, order):
    """The last K tile's output tiles in pairs, one split MATMUL each: exact, and the array
    streams that tile's A rows once per pair."""
    hw = load_config("n4")
    k_pad = -(-k // 4) * 4
    text, layout = gemm_program(m, k_pad, n_out, hw, raw=raw, relu=relu, shift=shift,
                                order=order, block_rows=cap, ragged=bool(cap), split=True)
    assert ", split, acc2=" in text
    result = _run_gemm(hw, text, layout, m, k_pad, n_out, raw, relu, shift, k_real=k)
    blocks, tiles_j = -(-m // layout.block_rows), n_out // 4
    streamed = (k_pad // 4 - 1) * tiles_j + -(-tiles_j // 2)
    assert result.counters.busy_exec == blocks * layout.block_rows * streamed


# A slices in parts (gemm_plan.py, ``spread``): k-outer blocks of several N-row parts, a last
# part shorter, ragged blocks; two output tiles or one (a window of one step: slices whole).
SPREAD = [(40, 12, 16, 0), (130, 8, 12, 50), (64, 16, 8, 0), (22, 8, 4, 0)]


@pytest.mark.parametrize(("m", "k", "n_out", "cap"), SPREAD)
def test_a_slices_in_parts_match_numpy_at_n4(m, k, n_out, cap):
    """k-outer with each A slice loaded in parts over the load steps before its first step:
    exact, and another program than the slices whole where a slice has a window."""
    hw = load_config("n4")
    text, layout = gemm_program(m, k, n_out, hw, shift=3, order="k-outer", block_rows=cap,
                                ragged=bool(cap), spread=True)
    assert layout.spread and "A slices in parts" in text
    _run_gemm(hw, text, layout, m, k, n_out, False, False, 3)
    whole, _ = gemm_program(m, k, n_out, hw, shift=3, order="k-outer", block_rows=cap,
                            ragged=bool(cap))
    def instructions(program: str) -> list[str]:
        return [line for line in program.splitlines() if not line.startswith(";")]

    _, parts = step_plan(m, k, n_out, 4, layout)
    cut = any(count < layout.block_rows for found in parts.values() for *_, count in found)
    assert cut == (n_out > 8)  # a window of one step where the weight buffers cover the tiles
    assert (instructions(whole) != instructions(text)) == cut


def test_each_a_slice_in_parts_covers_its_rows_between_its_release_and_its_first_step():
    """step_plan with ``spread``, against its definition on every k-outer plan of a range of
    shapes: each slice's parts cover its rows once, in order, one a load step from the step
    that loads the slice whole (its buffer's release) on, no later than its first step; all
    but the last of one size, a multiple of N, the least that fits them in those steps."""
    hw = load_config("n4")
    n = hw.array_size
    for m, k, n_out, cap in itertools.product((7, 40, 130), (4, 12, 32), (4, 12, 28), (0, 16)):
        layout = plan(m, k, n_out, hw, MatrixRows(k), "k-outer", False, cap, ragged=True,
                      spread=True)
        steps, parts = step_plan(m, k, n_out, n, layout)
        _, whole = step_plan(m, k, n_out, n, dataclasses.replace(layout, spread=False))
        released = {(mb, kk): s for s, found in whole.items() for mb, kk, _, _ in found}
        first: dict[tuple[int, int], int] = {}
        for s, (mb, kk, _) in enumerate(steps):
            first.setdefault((mb, kk), s)
        covered: dict[tuple[int, int], list] = {}
        for s, found in sorted(parts.items()):
            for mb, kk, offset, count in found:
                assert released[mb, kk] <= s <= first[mb, kk]
                covered.setdefault((mb, kk), []).append((s, offset, count))
        rows = layout.block_rows
        for key, found in covered.items():
            assert [s for s, _, _ in found] == list(range(released[key],
                                                          released[key] + len(found)))
            assert sum(count for _, _, count in found) == rows
            assert [offset for _, offset, _ in found] == \
                [sum(count for _, _, count in found[:i]) for i in range(len(found))]
            size = found[0][2]
            assert all(count == size for _, _, count in found[:-1]) and found[-1][2] <= size
            window = first[key] - released[key] + 1
            assert len(found) <= window
            if len(found) > 1:
                assert size % n == 0 and (size == n or -(-rows // (size - n)) > window)


@pytest.mark.parametrize("ragged", [False, True])
def test_block_sizes_are_the_divisors_and_the_fewest_rows_of_each_block_count(ragged):
    """block_sizes against its definition, by enumeration: multiples of the granule dividing
    M, and with ragged blocks granule·⌈(M/granule)/b⌉ for every count of blocks b."""
    for m, granule in itertools.product(range(1, 200), (1, 3, 7)):
        if m % granule:
            continue
        units = m // granule
        expected = {granule * d for d in range(1, units + 1) if units % d == 0}
        if ragged:
            expected |= {granule * -(-units // b) for b in range(1, units + 1)}
        for largest in (m, m // 2):
            assert block_sizes(m, granule, largest, ragged) == \
                sorted((r for r in expected if r <= largest), reverse=True)


def _run_gemm(hw, text, layout, m, k, n_out, raw, relu, shift, k_real=None):
    """Assemble and simulate a generated GEMM over random operands; assert numpy's result.
    ``k_real``: A's columns and B's rows from it on are zero (K padded to whole tiles)."""
    program = assemble(text, hw)
    rng = np.random.default_rng(m)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n_out), dtype=np.int8)
    a[:, k_real or k:], b[k_real or k:] = 0, 0
    dram = np.zeros(hw.dram_bytes, dtype=np.uint8)
    dram[layout.a:layout.a + a.size] = a.view(np.uint8).ravel()
    dram[layout.b:layout.b + b.size] = b.view(np.uint8).ravel()
    result = simulator.run(program.words, hw, dram, program.spans)
    expected = _gemm_reference(a, b, raw, relu, shift)
    got = result.dram[layout.c:layout.c + expected.nbytes].view(expected.dtype)
    np.testing.assert_array_equal(got.reshape(m, n_out), expected)
    return result


@pytest.mark.parametrize("config", ["n4", "n16"])
@pytest.mark.parametrize(("m", "k", "n_out", "raw", "relu", "shift", "order", "cap"), [
    (40, 3, 1, False, True, 7, "k-outer", 0),  # K and Nout in tiles of N
    (300, 4, 2, True, False, 0, "j-outer", 0),
    (100, 2, 5, False, False, 3, "auto", 0),
    (256, 8, 4, False, True, 8, "auto", 32),  # a capped block of A rows
    (24, 9, 3, False, False, 8, "j-outer", -3),  # weights in groups of 3
])
def test_gemm_instructions_are_the_assembled_text(config, m, k, n_out, raw, relu, shift, order,
                                                  cap):
    """The lowering builds kernels from gemm_instructions; the reference schedules are text:
    the same words either way (``cap`` −G: weights in groups of G)."""
    hw = load_config(config)
    n = hw.array_size
    options = {"raw": raw, "relu": relu, "shift": shift, "order": order,
               "block_rows": max(cap, 0), "group": max(-cap, 1)}
    text, layout = gemm_program(m, k * n, n_out * n, hw, **options)
    built, built_layout = gemm_instructions(m, k * n, n_out * n, hw, **options)
    assert built_layout == layout
    assert [encode(i) for i in built] == assemble(text, hw).words


def test_gemm_256_cubed_simulates_in_seconds_and_exactly():
    hw = load_config("n16")
    text, layout = gemm_program(256, 256, 256, hw, shift=8)
    program = assemble(text, hw)
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (256, 256), dtype=np.int8)
    b = rng.integers(-128, 128, (256, 256), dtype=np.int8)
    dram = np.zeros(hw.dram_bytes, dtype=np.uint8)
    dram[layout.a:layout.a + a.size] = a.view(np.uint8).ravel()
    dram[layout.b:layout.b + b.size] = b.view(np.uint8).ravel()
    start = time.perf_counter()
    result = simulator.run(program.words, hw, dram)
    assert time.perf_counter() - start < 10
    got = result.dram[layout.c:layout.c + 256 * 256].view(np.int8).reshape(256, 256)
    np.testing.assert_array_equal(got, _gemm_reference(a, b, False, False, 8))


@pytest.mark.parametrize(("h", "w", "c", "out_c", "stride", "pad"), [
    (6, 6, 8, 8, 1, 1),
    (7, 5, 4, 8, 2, 1),  # stride 2, odd sizes
    (8, 8, 4, 4, 1, 0),  # no padding
])
def test_im2col_conv2d_schedule_matches_numpy_at_n4(h, w, c, out_c, stride, pad):
    hw = load_config("n4")
    text, layout = conv2d_program(h, w, c, out_c, hw, stride=stride, pad=pad, relu=True, shift=7)
    program = assemble(text, hw)
    rng = np.random.default_rng(h * w)
    image = rng.integers(-128, 128, (h, w, c), dtype=np.int8)
    weights = rng.integers(-128, 128, (3, 3, c, out_c), dtype=np.int8)
    dram = np.zeros(hw.dram_bytes, dtype=np.uint8)
    dram[layout.a:layout.a + image.size] = image.view(np.uint8).ravel()
    dram[layout.b:layout.b + weights.size] = weights.view(np.uint8).ravel()
    result = simulator.run(program.words, hw, dram)
    out_h, out_w = (h + 2 * pad - 3) // stride + 1, (w + 2 * pad - 3) // stride + 1
    padded = np.pad(image.astype(np.int64), ((pad, pad), (pad, pad), (0, 0)))
    exact = np.zeros((out_h, out_w, out_c), dtype=np.int64)
    for ky in range(3):
        for kx in range(3):
            window = padded[ky:ky + stride * out_h:stride, kx:kx + stride * out_w:stride]
            exact += window @ weights[ky, kx].astype(np.int64)
    expected = np.clip((np.maximum(exact, 0) + 64) >> 7, -128, 127).astype(np.int8)
    got = result.dram[layout.c:layout.c + expected.size].view(np.int8)
    np.testing.assert_array_equal(got.reshape(expected.shape), expected)


@pytest.mark.parametrize("name", GOOD)
def test_programs_are_independent_of_the_configuration(name):
    # an array size and port width neither shipped config has: 3-byte beats split every run
    odd = dataclasses.replace(load_config("n4"), array_size=8, dram_port_bytes=3, queue_depth=2)
    case = build_case(name, odd, seed=2)
    result = simulator.run(case.program.words, odd, case.dram)
    for address, expected in case.expected:
        np.testing.assert_array_equal(result.dram[address:address + expected.size], expected)



# docs/isa.md allows N from 2; im2col_nchw packs the three kx taps into one row, so needs N >= 3;
# an array of odd N does not split (column_split needs halves).
SMALLEST = [(name, size) for size in (2, 3) for name in GOOD
            if not (name == "im2col_nchw" and size < 3)
            and not (name == "matmul_split" and size % 2)]


@pytest.mark.parametrize(("name", "size"), SMALLEST)
def test_programs_run_on_the_smallest_arrays(name, size):
    tiny = dataclasses.replace(load_config("n4"), array_size=size, dram_port_bytes=size,
                               vector_lanes=1, column_split=1 - size % 2)
    case = build_case(name, tiny, seed=3)
    result = simulator.run(case.program.words, tiny, case.dram)
    assert case.expected
    for address, expected in case.expected:
        np.testing.assert_array_equal(result.dram[address:address + expected.size], expected)
