"""Normalisations that quantized networks keep on the host, with onnxruntime's CPU kernels'
arithmetic (docs/language.md, "Float host operators"): ``lrn`` (AlexNet, ZFNet, Inception v1),
``layer-norm``, ``layer-norm-welford`` and ``softmax-linear`` (transformers),
``global-average-pool`` (a float pool a QOperator model keeps, a ReduceMean) and
``average-pool`` (a dynamically quantized model's). Each computes in float32 in the kernel's
order."""

from __future__ import annotations

import math

import numpy as np

from glc.errors import ShapeError
from glc.ir.float32 import fma32
from glc.ir.types import Access, fmt_dims


def _float32(a: Access, arg: int = 0) -> None:
    if a.dtype != "float32":
        raise ShapeError(f"needs a float32 tensor, got {a.dtype}", arg=arg)


def infer_lrn(a: Access, size: int, alpha, beta, bias) -> Access:
    """``(lrn A size alpha beta bias)``: A float32 NCHW, size ≥ 1."""
    _float32(a)
    if len(a.dims) != 4:
        raise ShapeError(f"needs an NCHW tensor, got dims {fmt_dims(a.dims)}", arg=0)
    if size < 1:
        raise ShapeError(f"needs a window of at least 1 channel, got {size}", arg=1)
    return Access(a.dims, (), "float32")


def lrn(x: np.ndarray, size: int, alpha: float, beta: float, bias: float) -> np.ndarray:
    """ONNX LRN as onnxruntime's kernel computes it: the channel window's sum of squares is a
    running sum (the first window summed, then per channel plus the square entering, minus the one
    leaving, each term scaled by alpha/size first), so its roundings are the kernel's; then
    ``x · scale^-beta`` in float32."""
    n, c, h, w = x.shape
    before = (size - 1) // 2
    squares = np.zeros((n, c + size - 1, h, w), np.float32)
    squares[:, before:before + c] = x * x
    step = np.float32(np.float32(alpha) / np.float32(size))
    scale = np.full(x.shape, np.float32(bias), np.float32)
    for k in range(size):
        scale[:, 0] += step * squares[:, k]
    for ch in range(1, c):
        scale[:, ch] = scale[:, ch - 1] + step * squares[:, ch + size - 1]
        scale[:, ch] += -step * squares[:, ch - 1]
    return (x * np.power(scale, np.float32(-beta))).astype(np.float32)


# The summation orders of onnxruntime's x86 kernels that take a float mean over each map, by
# ``global-average-pool``'s order argument: its NCHWc pool (1), MLAS's NCHW pool (4), and Eigen's
# sum under ReduceMean (8: two 4-lane SSE packets).
POOL_ORDERS = (1, 4, 8)


def infer_global_average_pool(a: Access, order: int) -> Access:
    """``(global-average-pool A order)``: A float32 (N, C, spatial...), the mean over each map;
    ``order`` one of ``POOL_ORDERS``."""
    _float32(a)
    if len(a.dims) < 3:
        raise ShapeError(f"needs (N, C, spatial...) dims, got {fmt_dims(a.dims)}", arg=0)
    if order not in POOL_ORDERS:
        raise ShapeError(f"needs an order of {', '.join(map(str, POOL_ORDERS))}, got {order}",
                         arg=1)
    return Access(a.dims[:2] + (1,) * (len(a.dims) - 2), (), "float32")


def global_average_pool(x: np.ndarray, order: int) -> np.ndarray:
    """The mean over each map of ``x`` (N, C, spatial...) as onnxruntime's x86 kernels sum:
    order 1 (its NCHWc kernel, a vector of channels added pixel by pixel) each map in memory
    order from 0; 4 (MLAS's MlasPoolGlobalKernel over NCHW) four float32 lanes take the map's
    elements 4k+i, are reduced as ``(l0 + l2) + (l1 + l3)`` (SSE's shuffles), and the tail is
    added in order; 8 Eigen's ``sum()`` (``_eigen_sum``). Then the sum is divided by the map's
    size in float32."""
    n, c = x.shape[:2]
    flat = x.reshape(n * c, -1).astype(np.float32)
    size = flat.shape[1]
    if order == 8:
        total = _eigen_sum(flat)
    else:
        body = size // order * order
        acc = np.zeros((n * c, order), np.float32)
        for k in range(0, body, order):
            acc += flat[:, k:k + order]
        total = acc[:, 0] if order == 1 else (acc[:, 0] + acc[:, 2]) + (acc[:, 1] + acc[:, 3])
        for k in range(body, size):
            total += flat[:, k]
    return (total / np.float32(size)).reshape((n, c) + (1,) * (x.ndim - 2))


def _eigen_sum(flat: np.ndarray) -> np.ndarray:
    """Each row's float32 sum as Eigen's vectorized ``redux`` (compiled for SSE: packets of 4)
    computes it for onnxruntime's ReduceMean over trailing axes (``ReduceAggregatorSum::
    FastReduceKR``, one row per map): from the row's first 16-byte-aligned element, two packet
    accumulators take alternate packets (an odd last packet joins the first), are added, and
    reduced ``(l0 + l2) + (l1 + l3)``; then the elements before the aligned start and after
    the last packet are added in order. The rows lie end to end in one buffer whose start is
    aligned (onnxruntime's allocator aligns to 64 bytes), so row r's aligned start is element
    ``(−r·size) mod 4``. Fewer than 4 elements from it: the row in order."""
    rows, size = flat.shape
    total = np.zeros(rows, np.float32)
    for head in range(4):
        picked = np.flatnonzero((-np.arange(rows) * size) % 4 == head)
        part = flat[picked]
        packets = max(size - head, 0) // 4
        if packets == 0:
            sums = part[:, 0].copy()
            for k in range(1, size):
                sums += part[:, k]
        else:
            pairs = head + packets // 2 * 8
            acc = _packets(part, head, pairs, 0)
            if packets > 1:
                acc += _packets(part, head, pairs, 4)
                if packets % 2:
                    acc += part[:, pairs:pairs + 4]
            sums = (acc[:, 0] + acc[:, 2]) + (acc[:, 1] + acc[:, 3])
            for k in [*range(head), *range(head + packets * 4, size)]:
                sums += part[:, k]
        total[picked] = sums
    return total


def _packets(part: np.ndarray, head: int, pairs: int, skip: int) -> np.ndarray:
    """One of Eigen's two packet accumulators: the packets at ``head + skip + 8k`` before
    ``pairs`` (the end of the whole pairs), added in order from the first."""
    acc = part[:, head + skip:head + skip + 4].copy()
    for k in range(head + skip + 8, pairs, 8):
        acc += part[:, k:k + 4]
    return acc


def infer_average_pool(w: Access, d: Access, order: int) -> Access:
    """``(average-pool W D order)``: W float32 windows (the pooled dims, then the window's
    (kh, kw)), D float32 divisors of W's shape dims; ``order`` 0 or 1."""
    _float32(w)
    if len(w.item) != 2:
        raise ShapeError(f"needs windows of two item dims, got {w}", arg=0)
    if d.dtype != "float32" or d.dims != w.shape:
        raise ShapeError(f"needs float32 divisors of the windows' shape dims {fmt_dims(w.shape)},"
                         f" got {fmt_dims(d.dims)} {d.dtype}", arg=1)
    if order not in (0, 1):
        raise ShapeError(f"needs an order of 0 or 1, got {order}", arg=2)
    return Access(w.shape, (), "float32")


def average_pool(w: np.ndarray, d: np.ndarray, order: int) -> np.ndarray:
    """ONNX AveragePool of float32 windows as onnxruntime's x86 kernels sum each window: order
    0 row by row, each row from its first element (MLAS's generic kernel, its NCHWc kernel,
    onnxruntime's own pool); order 1 each column over the rows first, then the column sums
    from the first (MLAS's MlasPool2DVectorKernel). Then divided by the divisor in float32."""
    if order == 0:
        flat = w.reshape(*d.shape, -1)
        total = flat[..., 0].astype(np.float32)
        for k in range(1, flat.shape[-1]):
            total = total + flat[..., k]
    else:
        columns = w[..., 0, :].astype(np.float32)
        for row in range(1, w.shape[-2]):
            columns = columns + w[..., row, :]
        total = columns[..., 0]
        for column in range(1, w.shape[-1]):
            total = total + columns[..., column]
    return (total / d.astype(np.float32)).astype(np.float32)


def infer_layer_norm(a: Access, scale: Access, bias: Access, eps) -> Access:
    """``(layer-norm A scale bias eps)``: A float32, scale and bias float32 of A's last dim."""
    _float32(a)
    for arg, t in ((1, scale), (2, bias)):
        if t.dtype != "float32" or t.dims != a.dims[-1:]:
            raise ShapeError(f"needs float32 of the last dim ({a.dims[-1]}), got "
                             f"{fmt_dims(t.dims)} {t.dtype}", arg=arg)
    return Access(a.dims, (), "float32")


def layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """ONNX LayerNormalization over the last axis as onnxruntime's x86 CPU kernel computes it
    (MLAS's AVX2 LayerNorm; bit for bit against onnxruntime 1.32 on rows of 8 to 768 elements,
    tests/ir/test_normalize.py). Rows of fewer than 8 elements take its scalar Welford loop."""
    x = np.asarray(x, np.float32)
    n = x.shape[-1]
    if n < 8:
        return layer_norm_welford(x, scale, bias, eps)
    f = np.float32
    # Pass 1: the mean from a float64 sum, four lanes of every fourth element, the lanes added
    # pairwise (0+2, 1+3, then the two), the tail after them in order.
    whole = n // 4 * 4
    lanes = x[..., :whole].astype(np.float64).reshape(x.shape[:-1] + (-1, 4)).sum(axis=-2)
    pairs = lanes[..., :2] + lanes[..., 2:]
    total = pairs[..., 0] + pairs[..., 1]
    for h in range(whole, n):
        total = total + x[..., h].astype(np.float64)
    mean = (total / n).astype(f)
    # Pass 2: the squared deviations, FMA into eight float32 lanes, reduced (lane i + lane i+4,
    # then 0+2 and 1+3, then the two); the tail's first four products rounded and added, the
    # rest fused (the compiler's code for the scalar tail, measured).
    centred = (x - mean[..., None]).astype(f)
    vector = n // 8 * 8
    acc = np.zeros(x.shape[:-1] + (8,), f)
    for start in range(0, vector, 8):
        d = centred[..., start:start + 8]
        acc = fma32(d, d, acc)
    quads = acc[..., :4] + acc[..., 4:]
    pairs32 = quads[..., :2] + quads[..., 2:]
    var = (pairs32[..., 0] + pairs32[..., 1]).astype(f)
    plain = vector + (n - vector) // 4 * 4
    for h in range(vector, n):
        d = centred[..., h]
        var = (var + d * d).astype(f) if h < plain else fma32(d, d, var)
    inv = (f(1) / np.sqrt((var / f(n) + f(eps)).astype(f))).astype(f)
    normal = (centred * inv[..., None]).astype(f)
    shape = normal.shape
    return fma32(normal, np.broadcast_to(np.asarray(scale, f), shape),
                 np.broadcast_to(np.asarray(bias, f), shape))


def layer_norm_welford(x: np.ndarray, scale: np.ndarray, bias: np.ndarray,
                        eps: float) -> np.ndarray:
    """onnxruntime's scalar LayerNorm — its LayerNormalization of rows shorter than 8, and its
    SkipLayerNormalization (measured bit for bit, tests/ir/test_normalize.py): Welford's running
    mean and sum of squared deviations in float32, then ``(x - mean) / sqrt(M2 / n + eps) ·
    scale + bias``."""
    f = np.float32
    mean = np.zeros(x.shape[:-1], f)
    m2 = np.zeros(x.shape[:-1], f)
    for h in range(x.shape[-1]):
        delta = (x[..., h] - mean).astype(f)
        mean = (mean + delta / f(h + 1)).astype(f)
        m2 = (m2 + delta * (x[..., h] - mean)).astype(f)
    d = np.sqrt((m2 / f(x.shape[-1]) + f(eps)).astype(f)).astype(f)
    return ((x - mean[..., None]) / d[..., None] * scale + bias).astype(f)


def infer_softmax_linear(a: Access, sx, sy, zy, offset) -> Access:
    """``(softmax-linear A sx sy zy offset)``: A int8, the softmax over its last dim."""
    if a.dtype != "int8":
        raise ShapeError(f"needs an int8 tensor, got {a.dtype}", arg=0)
    if offset not in (0, 128):
        raise ShapeError(f"needs an offset of 0 (int8) or 128 (uint8), got {offset}", arg=4)
    return Access(a.dims, (), "int8")


def softmax_linear(x: np.ndarray, sx: float, sy: float, zy: int, offset: int) -> np.ndarray:
    """onnxruntime's QLinearSoftmax (com.microsoft, its CPU kernel): a 256-entry table of
    float32(exp((i - 255 + shift) · sx)) in double, ``shift = max(0, log(FLT_MAX / n) - 5) / sx``
    so that n entries cannot overflow; per row, the table is indexed by each value's distance
    below the row's maximum, summed in float32 in order, and ``rint(e · floor(1 / sy) / Σ) + zy``
    is the result, in the model's own type (``offset`` 128: uint8 carried as int8), where the
    int8 kernel wraps past 127 as its cast does."""
    n = x.shape[-1]
    shift = max(0.0, math.log(float(np.float32(np.finfo(np.float32).max) / np.float32(n)))
                - 5.0) / float(np.float32(sx))
    table = np.array([math.exp((i - 255 + shift) * float(np.float32(sx))) for i in range(256)],
                     np.float32)
    distance = x.max(axis=-1, keepdims=True).astype(np.int32) - x.astype(np.int32)
    values = table[255 - distance]
    total = np.zeros(x.shape[:-1], np.float32)
    for h in range(n):
        total += values[..., h]
    scale = np.float32(math.floor(np.float32(1) / np.float32(sy)))
    q = np.rint(values * scale / total[..., None]).astype(np.int64) + (zy + offset)
    if offset:  # uint8: saturate at 255
        return (np.minimum(q, 255) - offset).astype(np.int8)
    return np.where(q > 255, 255, q).astype(np.int64).astype(np.uint8).view(np.int8)
