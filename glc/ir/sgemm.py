"""``(matmul-float A B)``: a float32 product of two tensors as onnxruntime's CPU MatMul and Gemm
compute it (MLAS's SGEMM), for the float products a quantized model keeps: a dynamically
quantized transformer's Q·Kᵀ and P·V, and a QDQ Gemm onnxruntime leaves float (docs/onnx.md).

MLAS's x86 kernels (SgemmKernelFma3 and its AVX-512 sibling) keep one accumulator per output
element and add the products of a slice of K into it in order, each by one FMA (one rounding),
starting from 0; a product whose K is longer than the slice (``MLAS_SGEMM_STRIDEK``, widened
when N is short and narrowed when K is) adds each slice's accumulator to the output, a second
rounding per slice (MlasSgemmOperation in onnxruntime's mlas/lib/sgemm.cpp). numpy has no FMA,
so each one is computed in float64 — the product of two float32 values is exact there — and
the float64 sum's own rounding error, taken by TwoSum, decides the one case where rounding
twice would differ from rounding once: a float64 sum exactly halfway between two float32
values."""

from __future__ import annotations

import numpy as np

from glc.errors import ShapeError
from glc.ir.float32 import fma32
from glc.ir.types import Access, fmt_dims

STRIDE_N = 128  # MLAS_SGEMM_STRIDEN
STRIDE_K = 128  # MLAS_SGEMM_STRIDEK
PACKED_STRIDE_K = 256  # MLAS_SGEMM_PACKED_STRIDEK: a prepacked B (an RNN's weights), any N


def infer_matmul_float(a: Access, b: Access) -> Access:
    """``(matmul-float A B)``: A (…, M, K) and B (…, K, N) float32, their batch dims
    broadcast as numpy's matmul does."""
    for arg, t in ((0, a), (1, b)):
        if t.dtype != "float32" or len(t.dims) < 2:
            raise ShapeError(
                f"needs a float32 tensor of at least 2 dims, got {t.dtype} {fmt_dims(t.dims)}",
                arg=arg,
            )
    if a.dims[-1] != b.dims[-2]:
        raise ShapeError(
            f"needs A's last dim equal to B's next to last, got "
            f"{fmt_dims(a.dims)} and {fmt_dims(b.dims)}",
            arg=1,
        )
    try:
        batch = np.broadcast_shapes(a.dims[:-2], b.dims[:-2])
    except ValueError:
        raise ShapeError(
            f"batch dims of {fmt_dims(a.dims)} and {fmt_dims(b.dims)} do not broadcast", arg=1
        ) from None
    return Access(tuple(batch) + (a.dims[-2], b.dims[-1]), (), "float32")


def stride_k(n: int, k: int) -> int:
    """The K slice MLAS sums into one accumulator for an output N wide (A not transposed)."""
    stride_n, stride_k = STRIDE_N, STRIDE_K
    if n >= k:
        while stride_k // 2 >= k:
            stride_n, stride_k = stride_n * 2, stride_k // 2
    else:
        while stride_n > 16 and stride_n // 2 >= n:
            stride_n, stride_k = stride_n // 2, stride_k * 2
    return stride_k


def matmul_float(a: np.ndarray, b: np.ndarray, initial: np.ndarray | None = None,
                 step: int | None = None) -> np.ndarray:
    """A @ B in MLAS's order: per slice of K (``step``, else the one ``stride_k`` picks) an FMA
    chain from 0, the slices added in turn to ``initial`` (its C, with beta 1) or to the
    first."""
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    (m, k), n = a.shape[-2:], b.shape[-1]
    a = np.broadcast_to(a, batch + (m, k))[..., :, None, :]  # (…, M, 1, K)
    b = np.swapaxes(np.broadcast_to(b, batch + (k, n)), -1, -2)[..., None, :, :]  # (…, 1, N, K)
    out = None if initial is None else np.asarray(initial, np.float32)
    step = step or stride_k(n, k)
    for start in range(0, k, step):
        acc = np.zeros(batch + (m, n), np.float32)
        for i in range(start, min(start + step, k)):
            acc = fma32(a[..., i], b[..., i], acc)
        out = acc if out is None else (out + acc).astype(np.float32)
    return out
