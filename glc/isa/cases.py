"""The shared test programs (tests/isa/programs/*.s): inputs and independent numpy expectations.

Both the ISA-simulator tests (tests/isa/) and the RTL tests import this, so the same program, the
same seeded inputs and the same expected bytes are checked on both models (docs/isa.md, "Shared
test programs"). Each program is written in terms of N, so it assembles for any configuration.
The expectations here are computed directly from the mathematics (padding with np.pad, plain
matrix products), never through the ISA's own address arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from glc.hwconfig import HwConfig
from glc.ir.quantized import linear_fold, requantize_linear
from glc.isa.asm import Assembly, assemble
from glc.isa.status import ErrorCode

PROGRAMS = Path(__file__).resolve().parents[2] / "tests" / "isa" / "programs"


@dataclass
class Case:
    """A program ready to run: image, initial DRAM, and the expected outcome."""

    name: str
    program: Assembly
    dram: np.ndarray  # uint8[dram_bytes]
    expected: list[tuple[int, np.ndarray]] = field(default_factory=list)  # (address, uint8 bytes)
    error: ErrorCode | None = None
    error_pc: int | None = None


def _i8(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.integers(-128, 128, shape, dtype=np.int8)


def _put(dram: np.ndarray, address: int, values: np.ndarray) -> None:
    data = np.ascontiguousarray(values).view(np.uint8).ravel()
    dram[address:address + data.size] = data


def _bytes(values: np.ndarray, dtype: str) -> np.ndarray:
    return np.ascontiguousarray(values.astype(dtype)).view(np.uint8).ravel()


def _requantize(x: np.ndarray, shift: int) -> np.ndarray:
    # The language contract: clamp((x + 2^(k-1)) >> k) for k >= 1, clamp(x) for k = 0.
    wide = x.astype(np.int64)
    rounded = (wide + (1 << (shift - 1))) >> shift if shift else wide
    return np.clip(rounded, -128, 127)


def _matmul_tiled(s, n, rng, dram):
    a, b = _i8(rng, s["M"], s["K"]), _i8(rng, s["K"], s["NOUT"])
    _put(dram, s["A"], a)
    _put(dram, s["B"], b)
    return [(s["C"], _bytes(a.astype(np.int64) @ b.astype(np.int64), "<i4"))]


def _im2col_nhwc(s, n, rng, dram):
    image, weights = _i8(rng, s["H"], s["W"], n), _i8(rng, 9, n, n)  # (tap, cin, cout)
    _put(dram, s["IMG"], image)
    _put(dram, s["WT"], weights)
    padded = np.pad(image.astype(np.int64), ((1, 1), (1, 1), (0, 0)))
    out = np.zeros((s["OH"], s["OW"], n), dtype=np.int64)
    for ky in range(3):
        for kx in range(3):
            window = padded[ky:ky + 2 * s["OH"]:2, kx:kx + 2 * s["OW"]:2]
            out += window @ weights[3 * ky + kx].astype(np.int64)
    return [(s["OUT"], _bytes(out, "<i4"))]


def _im2col_nchw(s, n, rng, dram):
    image = _i8(rng, s["CIN"], s["H"], s["W"])
    tiles = _i8(rng, 6, n, n)  # tile (c, ky): row kx < 3 is used; rows 3 … N-1 must not matter
    _put(dram, s["IMG"], image)
    _put(dram, s["WT"], tiles)
    kernel = tiles[:, :3, :].reshape(2, 3, 3, n).astype(np.int64)  # (c, ky, kx, cout)
    padded = np.pad(image.astype(np.int64), ((0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, s["H"], s["W"]), dtype=np.int64)
    for c in range(2):
        for ky in range(3):
            for kx in range(3):
                window = padded[c, ky:ky + s["H"], kx:kx + s["W"]]
                out += kernel[c, ky, kx][:, None, None] * window[None]
    return [(s["OUT"], _bytes(out, "<i4"))]


def _store_requant(s, n, rng, dram):
    m = s["M"]
    bias = rng.integers(-(1 << 20), 1 << 20, n).astype(np.int32)
    a, w = _i8(rng, m, n), _i8(rng, n, n)
    x = rng.integers(-(1 << 31), 1 << 31, (m, n), dtype=np.int64)
    # The extremes, a rounding tie and values either side of it, wherever N puts them (N >= 2).
    x.flat[:8] = [-(1 << 31), (1 << 31) - 1, -1, 16, -17, -16, 4095, -4096]
    for name, values in (("BIAS", bias), ("A", a), ("WT", w), ("X", x.astype("<i4"))):
        _put(dram, s[name], values)
    product = a.astype(np.int64) @ w.astype(np.int64) + bias
    return [(s["OUT1"], _bytes(_requantize(np.maximum(product, 0), s["SHIFT"]), "i1")),
            (s["OUT2"], _bytes(_requantize(x, 0), "i1")),
            (s["OUT3"], _bytes(_requantize(x, 5), "i1"))]


# STORE `linear` multipliers with exponent field 255, and finite ones at the edges of float32.
SPECIAL_MULTIPLIERS = [0x7F800000, 0xFF800001, 0x00000001, 0x7F7FFFFF, 0x80800000, 0x00000000,
                       0x3F000000, 0xBF000000]


def linear_reference(x: np.ndarray, bits: np.ndarray, zero: int) -> np.ndarray:
    """STORE `linear` by its definition: ONNX's requantization in numpy float32 (the
    interpreter's contract, glc/ir/quantized.py), for the multipliers whose bits are `bits`;
    an exponent field of 255 acts as an infinite multiplier of its sign (docs/isa.md)."""
    infinite = (bits >> 23 & 0xFF) == 0xFF
    finite = np.where(infinite, 0, bits).astype(np.uint32).view(np.float32)
    out = requantize_linear(x, np.broadcast_to(finite, x.shape), zero).astype(np.int64)
    sign = np.where(bits >> 31 == 1, -1, 1) * np.sign(x)
    return np.where(infinite & (x != 0), np.clip(sign * 256, -128, 127),
                    np.where(infinite, zero, out))


def _store_linear(s, n, rng, dram):
    m, r = s["M"], s["R"]
    bias = rng.integers(-(1 << 16), 1 << 16, n).astype(np.int32)
    a, w = _i8(rng, m, n), _i8(rng, n, n)
    scales = (2.0 ** rng.uniform(-24, 2, (3, n))).astype(np.float32).view(np.uint32)
    exponents = rng.integers(1, 24, n)
    scales[1, ::2] = ((127 - exponents[::2]) << 23).astype(np.uint32)  # 2^-e: ties below
    scales[2] = (SPECIAL_MULTIPLIERS * n)[:n]
    x = rng.integers(-(1 << 31), 1 << 31, (r, n), dtype=np.int64)
    x[: r // 4] >>= rng.integers(0, 31, (r // 4, n))  # every magnitude
    odd = 2 * rng.integers(-(1 << 10), 1 << 10, (r // 4, n)) + 1
    ties = odd << np.maximum(exponents - 1, 0)  # x · 2^-e ends in .5
    x[r // 4:r // 2, ::2] = ties[:, ::2]
    x[r // 2:3 * r // 4] = (1 << 24) + rng.integers(-4, 5, (r // 4, n)) * \
        rng.choice([1, 1 << 4, 1 << 7], (r // 4, n))  # float32(x) ties and the 2^24 boundary
    x[3 * r // 4] = 0
    x.flat[-4:] = [-(1 << 31), (1 << 31) - 1, 1, -1]
    for name, values in (("BIAS", bias), ("A", a), ("WT", w), ("MUL", scales),
                         ("X", x.astype("<i4"))):
        _put(dram, s[name], values)
    product = np.maximum(a.astype(np.int64) @ w.astype(np.int64) + bias, 0)
    special = linear_reference(x, scales[2], s["ZC"])
    halves = np.stack([special[:, :n // 2], special[:, n // 2:2 * (n // 2)]])
    return [(s["OUT1"], _bytes(linear_reference(product, scales[0], s["ZA"]), "i1")),
            (s["OUT2"], _bytes(linear_reference(x, scales[1], s["ZB"]), "i1")),
            (s["OUT4"], _bytes(linear_reference(x, scales[1][np.arange(r) % n, None], s["ZB"]),
                               "i1")),
            (s["OUT3"], _bytes(halves, "i1"))]


def _store_bias(s, n, rng, dram):
    m, r, z = s["M"], s["R"], s["Z"]
    edges = np.array([(1 << 31) - 1, -(1 << 31), 1 << 30, -(1 << 30)])[:n]
    bias = rng.integers(-(1 << 20), 1 << 20, (2, n), dtype=np.int64)
    bias[1, :edges.size] = edges  # sums that wrap
    a, w = _i8(rng, m, n), _i8(rng, n, n)
    scales = (2.0 ** rng.uniform(-24, -8, n)).astype(np.float32).view(np.uint32)
    x = rng.integers(-(1 << 31), 1 << 31, (r, n), dtype=np.int64)
    x[:, :edges.size] = edges
    x[r // 2:] >>= 12  # values the multipliers keep inside int8
    for name, values in (("BIAS", bias.astype("<i4")), ("MUL", scales), ("A", a), ("WT", w),
                         ("X", x.astype("<i4"))):
        _put(dram, s[name], values)
    product = a.astype(np.int64) @ w.astype(np.int64) + bias[0]
    by_row = np.arange(r) % n
    wrapped = (x + bias[1] + (1 << 31)) % (1 << 32) - (1 << 31)
    wrapped_rows = (x + bias[1][by_row, None] + (1 << 31)) % (1 << 32) - (1 << 31)
    return [(s["OUT1"], _bytes(_requantize(np.maximum(product, 0), s["SH"]), "i1")),
            (s["OUT2"], _bytes(linear_reference(product, scales, z), "i1")),
            (s["OUT3"], _bytes(wrapped, "<i4")), (s["OUT4"], _bytes(wrapped_rows, "<i4")),
            (s["OUT5"], _bytes(linear_reference(wrapped_rows, scales[by_row, None], z), "i1"))]


def _weight_swap(s, n, rng, dram):
    data = _i8(rng, 4 * n, n)
    _put(dram, s["X"], data)
    x, w1, w3 = (data[i * n:(i + 1) * n].astype(np.int64) for i in (0, 1, 3))
    return [(s["OUT"], _bytes(np.concatenate([x @ w1, x @ w1, x @ w3]), "<i4"))]


def _matmul_split(s, n, rng, dram):
    data = _i8(rng, 4 * n, n)
    _put(dram, s["X"], data)
    x0, x1, w1, w2 = (data[i * n:(i + 1) * n].astype(np.int64) for i in range(4))
    h = n // 2  # each half of the array meets the row's first N/2 elements
    out = np.zeros((5 * n + 2, n), dtype=np.int64)
    out[0:n] = x0[:, :h] @ w1[:h] + x1[:, :h] @ w2[h:]
    out[n + 1:2 * n + 1] = x0[:, :h] @ w1[h:] + x1[:, :h] @ w2[:h]
    out[2 * n + 1:3 * n + 1] = x1 @ w1
    out[3 * n + 1:4 * n + 1] = x0[:, :h] @ w2[:h]
    out[4 * n + 2:5 * n + 2] = x0[:, :h] @ w2[h:]
    return [(s["OUT"], _bytes(out, "<i4"))]


def _transpose_pad(s, n, rng, dram):
    m, k2, length, pad = s["M"], s["K2"], s["L"], s["PADV"]
    a, w, w2, x = _i8(rng, m, n), _i8(rng, n, n), _i8(rng, k2, n), _i8(rng, length)
    for name, values in (("A", a), ("W", w), ("W2", w2), ("EYE", np.eye(n, dtype=np.int8)),
                         ("X", x)):
        _put(dram, s[name], values)
    block = np.zeros((n, n), dtype=np.int64)
    block[:, :k2] = w2.T
    signal = np.concatenate([[pad, pad], x, [pad]]).astype(np.int64)  # X with both borders
    rows = np.stack([signal[:n], signal[n:2 * n]])
    cropped = rows[0].astype(np.int8).view(np.uint8).copy()
    cropped[0] = 0  # element 0 lies outside xlim: never written
    return [(s["C1"], _bytes(a.astype(np.int64) @ w.T.astype(np.int64), "<i4")),
            (s["C2"], _bytes(block, "<i4")), (s["C3"], _bytes(rows, "<i4")),
            (s["C4"], cropped)]


def _load_step(s, n, rng, dram):
    hi, wi, pad = s["HI"], s["WI"], s["PADV"]
    img, y, z, v = _i8(rng, hi, wi), _i8(rng, 4 * n + 4), _i8(rng, n, 2 * n), _i8(rng, n)
    for name, values in (("IMG", img), ("Y", y), ("Z", z), ("V", v),
                         ("EYE", np.eye(n, dtype=np.int8))):
        _put(dram, s[name], values)
    framed = np.full((hi + 2, wi + 2 * n), pad, dtype=np.int64)  # the image with its border
    framed[1:hi + 1, 1:wi + 1] = img
    rows = [framed[r, 0:2 * n:2] for r in range(hi + 1)]  # y = -1 … HI-1, x = -1, 1, …
    rows += [y[0:4 * n:4], y[1:4 * n + 1:4]]
    rows += list(z[:, ::2].T)
    half, paired = n // 2, np.zeros(n, dtype=np.int64)  # two runs of N/2 side by side
    paired[:half], paired[half:2 * half] = v[0:2 * half:2], v[1:2 * half:2]
    rows.append(paired)
    return [(s["OUT"], _bytes(np.stack(rows).astype(np.int64), "<i4"))]


def _vector_pool(s, n, rng, dram):
    d = _i8(rng, 19, n)
    _put(dram, s["D"], d)
    x = d.astype(np.int64)
    acc = np.zeros((13, n), dtype=np.int64)
    acc[0:3] = x[:12].reshape(3, 4, n).max(axis=1)
    acc[4:6] = x[12:14] + x[14:16] + x[0:2]
    acc[6] = x[16] * x[17] * x[18]
    acc[7] = acc[0:3].max(axis=0)
    acc[8:10] = x[0:2] @ x[0:n]
    acc[10] = acc[8] + acc[9]
    acc[11] = acc[12] = acc[10]  # the second output reads the first one's row
    return [(s["OUT"], _bytes(acc, "<i4"))]


def _vector_chain(s, n, rng, dram):
    d = _i8(rng, 8, n)
    _put(dram, s["D"], d)
    x = d.astype(np.int64)
    acc = np.zeros((12, n), dtype=np.int64)
    acc[0:8] = x
    acc[1:4] = np.cumsum(x[0:4], axis=0)[1:]
    acc[5:8] = np.cumprod(x[4:8], axis=0)[1:]  # |x| ≤ 128: 2^28 at most, no wrap
    acc[8], acc[9] = x[0] * x[1] * x[2], x[3] * x[4] * x[5]
    acc[10] = np.maximum(acc[8], acc[9])
    acc[11] = np.maximum(acc[10], 0)  # row 11 was 0
    return [(s["OUT"], _bytes(acc, "<i4"))]


def _vector_linear(s, n, rng, dram):
    r = s["R"]
    d = _i8(rng, 2 * r, n)
    d[:4, 0], d[r:r + 4, 0] = [-128, 127, -128, 127], [-128, -128, 127, 127]  # the corners
    _put(dram, s["D"], d)
    bits = [np.uint32(s[k]).view(np.float32) for k in ("FIXED", "SB", "SA", "HUGE", "SMALL",
                                                       "HALF")]
    fixed, sb, sa, huge, small, half = bits
    added = linear_fold([d[:r], d[r:]], s["OFFSET"], fixed, [sb, sa])
    out = np.concatenate([added, linear_fold([d[:r]], -3, half, [huge]),
                          linear_fold([d[r:]], -100, half, [small])])
    return [(s["OUT"], _bytes(out, "i1")), (s["RAW"], _bytes(added, "<i4"))]


def _vector_table(s, n, rng, dram):
    tables, codes, patch = _i8(rng, 256, n), _i8(rng, s["R"], n), _i8(rng, 40, n)
    one = _i8(rng, 256)
    codes[:2, 0] = [-128, 127]  # the first and last entries
    for address, values in ((s["T"], tables), (s["D"], codes), (s["PT"], patch), (s["U"], one)):
        _put(dram, address, values)
    column = np.arange(n)
    first = tables[codes.astype(np.int64) + 128, column]
    tables[100:120] = patch[0:40:2]
    second = tables[codes.astype(np.int64) + 128, column]
    third = one[codes.astype(np.int64) + 128]
    return [(s["OUT"], _bytes(np.concatenate([first, second, third]), "i1"))]


Prepare = Callable[[dict, int, np.random.Generator, np.ndarray], list[tuple[int, np.ndarray]]]

# name -> (fill DRAM and return the expected regions, or the expected (error, instruction index))
CASES: dict[str, Prepare | tuple[ErrorCode, int]] = {
    "matmul_tiled": _matmul_tiled,
    "im2col_nhwc": _im2col_nhwc,
    "im2col_nchw": _im2col_nchw,
    "store_requant": _store_requant,
    "store_linear": _store_linear,
    "store_bias": _store_bias,
    "weight_swap": _weight_swap,
    "matmul_split": _matmul_split,
    "transpose_pad": _transpose_pad,
    "load_step": _load_step,
    "vector_pool": _vector_pool,
    "vector_chain": _vector_chain,
    "vector_linear": _vector_linear,
    "vector_table": _vector_table,
    "bad_opcode": (ErrorCode.ILLEGAL_OPCODE, 1),
    "bad_field": (ErrorCode.ILLEGAL_FIELD, 0),
    "bad_dram": (ErrorCode.DRAM_RANGE, 0),
    "bad_scratchpad": (ErrorCode.SP_RANGE, 1),
    "bad_accumulator": (ErrorCode.ACC_RANGE, 0),
    "deadlock": (ErrorCode.DEADLOCK, 1),
    "no_halt": (ErrorCode.FETCH_RANGE, 2),
}


def build_case(name: str, config: HwConfig, seed: int = 0) -> Case:
    """Assemble tests/isa/programs/<name>.s for `config` and prepare its seeded inputs."""
    path = PROGRAMS / f"{name}.s"
    program = assemble(path.read_text(), config, str(path))
    dram = np.zeros(config.dram_bytes, dtype=np.uint8)
    spec = CASES[name]
    if isinstance(spec, tuple):
        return Case(name, program, dram, error=spec[0], error_pc=spec[1])
    rng = np.random.default_rng(seed)
    expected = spec(program.symbols, config.array_size, rng, dram)
    return Case(name, program, dram, expected)
