"""Float normalisations that quantized networks keep on the host, with onnxruntime's CPU kernels'
arithmetic (docs/language.md, "Float host operators"): ``lrn`` (AlexNet, ZFNet, Inception v1) and
``layer-norm`` (transformers). Each is float32 throughout, in the kernel's order."""

from __future__ import annotations

import numpy as np

from glc.errors import ShapeError
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
