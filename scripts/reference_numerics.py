"""Reference numerics for scripts/gen_programs.py and scripts/randcompose.py: plain numpy,
written without glc.

The numeric contract is the "Numbers" section of the language spec (docs/language.md): int8/int16
widen, dot products and elementwise add/mul accumulate in int32 with two's-complement wrap,
requantize rounds half up by an arithmetic shift and clamps to int8, min-padding pads with the
dtype's minimum. ``requantize_linear`` and ``add_linear`` follow its "Quantized operators": every
float operation float32, each fma computed exactly in rationals and rounded once.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def wrap_int32(x: np.ndarray) -> np.ndarray:
    """Exact integers reduced to int32 with two's-complement wrap-around (language.md, Numbers)."""
    x = np.asarray(x, dtype=np.int64)
    return ((x + 2**31) % 2**32 - 2**31).astype(np.int32)


def widen(x: np.ndarray) -> np.ndarray:
    """int64 for integer tensors (exact for every sum we form), the tensor itself for floats."""
    return x.astype(np.int64) if np.issubdtype(x.dtype, np.integer) else x


def narrow(x: np.ndarray, like: np.ndarray) -> np.ndarray:
    """An accumulated result in the contract's dtype: int32 (wrapped) for ints, else unchanged."""
    return wrap_int32(x) if np.issubdtype(like.dtype, np.integer) else x


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for 2-D tensors, accumulated as the contract says."""
    return narrow(np.einsum("ik,kj->ij", widen(a), widen(b)), a)


def conv2d_nchw(data: np.ndarray, weights: np.ndarray, stride: tuple[int, int],
                pad: tuple[tuple[int, int], tuple[int, int]]) -> np.ndarray:
    """NCHW data, OIHW weights, zero padding ((top, bottom), (left, right)) -> NCHW result.

    One explicit loop per output position: the window times each filter, summed.
    """
    padded = np.pad(widen(data), ((0, 0), (0, 0), pad[0], pad[1]))
    n, _, h, w = padded.shape
    o, _, kh, kw = weights.shape
    oh, ow = (h - kh) // stride[0] + 1, (w - kw) // stride[1] + 1
    filters = widen(weights)
    out = np.zeros((n, o, oh, ow), dtype=padded.dtype)
    for b in range(n):
        for y in range(oh):
            for x in range(ow):
                window = padded[b, :, y * stride[0]:y * stride[0] + kh,
                                x * stride[1]:x * stride[1] + kw]
                out[b, :, y, x] = (filters * window).sum(axis=(1, 2, 3))
    return narrow(out, data)


def depthwise2d_nchw(padded: np.ndarray, taps: np.ndarray,
                     stride: tuple[int, int]) -> np.ndarray:
    """A depthwise convolution of (already padded) NCHW data: channel c's windows times its own
    taps ``taps[c]`` (kh × kw), summed; one explicit loop per tap, accumulated as the contract
    says."""
    kh, kw = taps.shape[1:]
    h, w = padded.shape[2:]
    oh, ow = (h - kh) // stride[0] + 1, (w - kw) // stride[1] + 1
    wide, filters = widen(padded), widen(taps)
    out = np.zeros((padded.shape[0], padded.shape[1], oh, ow), dtype=wide.dtype)
    for ky in range(kh):
        for kx in range(kw):
            window = wide[:, :, ky:ky + (oh - 1) * stride[0] + 1:stride[0],
                          kx:kx + (ow - 1) * stride[1] + 1:stride[1]]
            out += window * filters[None, :, ky, kx, None, None]
    return narrow(out, padded)


def maxpool2d_nchw(data: np.ndarray, size: int, stride: int,
                   pad: tuple[tuple[int, int], tuple[int, int]]) -> np.ndarray:
    """Max over size x size windows of NCHW data padded with the dtype's minimum; dtype kept."""
    low = np.iinfo(data.dtype).min if np.issubdtype(data.dtype, np.integer) else -np.finfo(
        data.dtype).max
    padded = np.pad(data, ((0, 0), (0, 0), pad[0], pad[1]), constant_values=low)
    n, c, h, w = padded.shape
    oh, ow = (h - size) // stride + 1, (w - size) // stride + 1
    out = np.empty((n, c, oh, ow), dtype=data.dtype)
    for y in range(oh):
        for x in range(ow):
            window = padded[:, :, y * stride:y * stride + size, x * stride:x * stride + size]
            out[:, :, y, x] = window.max(axis=(2, 3))
    return out


def requantize(x: np.ndarray, k: int) -> np.ndarray:
    """int8 ``clamp((x + 2^(k-1)) >> k)`` (arithmetic shift; no rounding term for k = 0), on
    Python's unbounded integers, so int64 operands near the top of their range do not wrap."""
    wide = x.astype(object)
    if k >= 1:
        wide = (wide + (1 << (k - 1))) >> k
    return np.clip(wide, -128, 127).astype(np.int8)


def relu(x: np.ndarray) -> np.ndarray:
    """max(x, 0), dtype kept."""
    return np.maximum(x, np.zeros((), dtype=x.dtype))


def table_lookup(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``(table-lookup X T)``: the code x reads entry x + 128 (docs/language.md)."""
    return np.array([table[int(code) + 128] for code in x.ravel()],
                    dtype=np.int8).reshape(x.shape)


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """exp(x) / sum(exp(x)) along ``axis``, shifted by the maximum for range. exp is libm's,
    element by element: numpy's vectorised exp differs by CPU (its AVX-512 loop and the scalar
    fallback disagree in the last bit), and the committed corpus must not."""
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.vectorize(math.exp, otypes=[np.float64])(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def to_float32(q: Fraction) -> np.float32:
    """The float32 nearest the exact ``q``, ties to even: the float64 nearest ``q`` rounded to
    float32 can be one step off (a double rounding), so its neighbours are compared exactly."""
    near = np.float32(float(q))
    best = near
    for other in (np.nextafter(near, np.float32(-np.inf)), np.nextafter(near, np.float32(np.inf))):
        d, e = abs(Fraction(float(other)) - q), abs(Fraction(float(best)) - q)
        if d < e or d == e and int(np.float32(other).view(np.uint32)) % 2 == 0:
            best = other
    return np.float32(best)


def fma32(x: int, y: np.float32, z: np.float32) -> np.float32:
    """``x · y + z`` rounded once to float32."""
    return to_float32(Fraction(x) * Fraction(float(y)) + Fraction(float(z)))


def add_linear(a: np.ndarray, b: np.ndarray, sa, za: int, sb, zb: int, sc, zc: int,
               offset: int) -> np.ndarray:
    """docs/language.md's ``add-linear``: ``ra = sa / sc``, ``rb = sb / sc``,
    ``F = zc' - fma(za', ra, rb · zb')``, each element ``clamp(rint(fma(a', ra, fma(b', rb,
    F))))`` on the offset values, every operation float32. Computed once per distinct pair."""
    f = np.float32
    ra, rb = f(f(sa) / f(sc)), f(f(sb) / f(sc))
    fixed = f(f(zc + offset) - fma32(za + offset, ra, f(rb * f(zb + offset))))
    inner = {int(v): fma32(int(v) + offset, rb, fixed) for v in np.unique(b)}
    table = np.zeros((256, 256), np.int8)
    for x, y in np.unique(np.stack([a.ravel(), b.ravel()]), axis=1).T.tolist():
        r = np.rint(fma32(x + offset, ra, inner[y]))
        r = int(r) if -2.0 ** 31 <= r < 2.0 ** 31 else -2 ** 31  # cvtps2dq's INT_MIN
        table[x + 128, y + 128] = min(max(r, -128 + offset), 127 + offset) - offset
    return table[a.astype(np.int32) + 128, b.astype(np.int32) + 128]


def requantize_linear(acc: np.ndarray, m: np.ndarray, z: int) -> np.ndarray:
    """``clamp(rint(float32(A) · M) + z)``, one float32 multiply (docs/language.md)."""
    product = acc.astype(np.float32) * m.astype(np.float32)
    return np.clip(np.rint(product).astype(np.int64) + z, -128, 127).astype(np.int8)
