"""Dynamic quantization (onnxruntime's ``quantize_dynamic``, the usual way transformers are
quantized): a float32 tensor's uint8 codes with a scale and zero point that depend on the tensor
itself, and the Cast of an integer product back to float32 (docs/language.md, "Dynamic
quantization"). The codes are carried as int8 (a uint8 code u as u − 128, docs/language.md)."""

from __future__ import annotations

import numpy as np

from glc.errors import ShapeError
from glc.ir.types import Access, is_int

UINT8_MAX = 255


def _float32(a: Access) -> None:
    if a.dtype != "float32":
        raise ShapeError(f"needs a float32 tensor, got {a.dtype}", arg=0)


def parameters(x: np.ndarray) -> tuple[np.float32, int]:
    """The scale and uint8 zero point of ONNX DynamicQuantizeLinear as onnxruntime computes
    them (GetQuantizationParameter, quantization.h): the range [min(x, 0), max(x, 0)] in
    float32, ``scale = (hi - lo) / 255`` (1 when the range is empty),
    ``zero = round_half_even(clamp(0 - lo / scale, 0, 255))``, every step in float32."""
    lo = min(np.float32(x.min()), np.float32(0)) if x.size else np.float32(0)
    hi = max(np.float32(x.max()), np.float32(0)) if x.size else np.float32(0)
    scale = np.float32(1) if hi == lo else np.float32(hi - lo) / np.float32(UINT8_MAX)
    initial = np.float32(0) - np.float32(lo) / np.float32(scale)
    zero = int(np.rint(np.clip(initial, np.float32(0), np.float32(UINT8_MAX))))
    return np.float32(scale), zero


def infer_codes(a: Access) -> Access:
    """``(dynamic-quantize A)``: A float32, the result int8 (uint8 codes carried)."""
    _float32(a)
    return Access(a.shape, a.item, "int8")


def codes(x: np.ndarray) -> np.ndarray:
    """``clamp(rint(x / scale) + zero, 0, 255)`` (MlasQuantizeLinear divides), carried as int8."""
    scale, zero = parameters(x)
    with np.errstate(over="ignore", invalid="ignore"):
        quotient = np.nan_to_num(np.rint(x.astype(np.float32) / scale), nan=0.0)
    return (np.clip(quotient.astype(np.float64) + zero, 0, UINT8_MAX) - 128).astype(np.int8)


def infer_scale(a: Access) -> Access:
    """``(dynamic-scale A)``: A float32, the result one float32 value (dims ())."""
    _float32(a)
    return Access((), (), "float32")


def infer_zero_point(a: Access) -> Access:
    """``(dynamic-zero-point A)``: A float32, the result one int32 value (dims ())."""
    _float32(a)
    return Access((), (), "int32")


def infer_cast(a: Access) -> Access:
    """``(cast-float A)``: A integer, the result float32 of A's dims."""
    if not is_int(a.dtype):
        raise ShapeError(f"needs an integer tensor, got {a.dtype}", arg=0)
    return Access(a.shape, a.item, "float32")
