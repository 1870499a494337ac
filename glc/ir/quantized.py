"""Quantized arithmetic with ONNX's semantics as onnxruntime's CPU kernels compute it (the
contracts are in docs/language.md, "Quantized operators"): the shape rules and numpy evaluation of
``requantize-linear``, ``quantize-linear``, ``dequantize-linear`` and ``access-pad-value``, which
the operator table (glc/ir/ops.py) lists.

Every float operation is float32 and in the kernels' order, so numpy reproduces them exactly:
float32 multiply and divide are IEEE-754 round-to-nearest-even on every platform, and
``np.rint`` rounds half to even like the x86 ``cvtps2dq`` the kernels use. Activations are int8:
a uint8 tensor of zero point z is carried as int8 ``u - 128`` with zero point ``z - 128``, which
leaves every ``q - z`` and every clamp unchanged (docs/language.md).
"""

from __future__ import annotations

import numpy as np

from glc.errors import ShapeError
from glc.ir.types import Access, fmt_dims, is_int

INT8 = (-128, 127)


def _zero_point(z: int | float, arg: int) -> int:
    if not isinstance(z, int) or not INT8[0] <= z <= INT8[1]:
        raise ShapeError(f"needs an int8 zero point (an integer from -128 to 127), got {z}",
                         arg=arg)
    return z


def _scale(s: int | float, arg: int) -> None:
    if not np.float32(s) > 0 or not np.isfinite(np.float32(s)):
        raise ShapeError(f"needs a positive finite float32 scale, got {s}", arg=arg)


def _saturate(values: np.ndarray) -> np.ndarray:
    return np.clip(values, *INT8).astype(np.int8)


def infer_requantize(a: Access, m: Access, z: int | float) -> Access:
    """``(requantize-linear A M z)``: A integer, M float32 of A's dims, z an int8 zero point."""
    if not is_int(a.dtype):
        raise ShapeError(f"needs an integer accumulator, got {a.dtype}", arg=0)
    if m.dtype != "float32" or m.dims != a.dims:
        raise ShapeError(f"needs float32 multipliers of the accumulator's dims {fmt_dims(a.dims)},"
                         f" got {fmt_dims(m.dims)} {m.dtype}", arg=1)
    _zero_point(z, 2)
    return Access(a.shape, a.item, "int8")


def requantize_linear(acc: np.ndarray, m: np.ndarray, z: int) -> np.ndarray:
    """``clamp(rint(float32(acc) · m) + z, -128, 127)``: onnxruntime's MlasRequantizeOutput
    (QLinearConv, QGemm, QLinearMatMul, QLinearGlobalAveragePool)."""
    with np.errstate(over="ignore"):  # an infinite product saturates like any large one
        product = acc.astype(np.int32).astype(np.float32) * m.astype(np.float32)
    # onnxruntime clamps to [-128 - z, 127 - z] before rounding (the same as after, the bounds
    # being integers), which also keeps a product beyond 2^63 from wrapping in the conversion.
    bounded = np.clip(product, np.float32(INT8[0] - z), np.float32(INT8[1] - z))
    return _saturate(np.rint(bounded).astype(np.int64) + z)


def _infer_conversion(a: Access, s, z, operand: str, result: str) -> Access:
    if a.dtype != operand:
        raise ShapeError(f"needs a{'n' if operand[0] == 'i' else ''} {operand} operand, "
                         f"got {a.dtype}", arg=0)
    _scale(s, 1)
    _zero_point(z, 2)
    return Access(a.shape, a.item, result)


def infer_quantize(a: Access, s: int | float, z: int | float) -> Access:
    """``(quantize-linear A s z)``: A float32, the result int8."""
    return _infer_conversion(a, s, z, "float32", "int8")


def quantize_linear(x: np.ndarray, s: float, z: int) -> np.ndarray:
    """``clamp(rint(x / float32(s)) + z, -128, 127)``: ONNX QuantizeLinear (MlasQuantizeLinear
    divides, it does not multiply by a reciprocal)."""
    with np.errstate(over="ignore", invalid="ignore"):
        quotient = np.rint(x.astype(np.float32) / np.float32(s))
    return _saturate(np.nan_to_num(quotient, nan=0.0).astype(np.float64) + z)


def infer_dequantize(a: Access, s: int | float, z: int | float) -> Access:
    """``(dequantize-linear A s z)``: A int8, the result float32."""
    return _infer_conversion(a, s, z, "int8", "float32")


def dequantize_linear(q: np.ndarray, s: float, z: int) -> np.ndarray:
    """``float32(int32(q) - z) · float32(s)``: ONNX DequantizeLinear."""
    return (q.astype(np.int32) - np.int32(z)).astype(np.float32) * np.float32(s)


def infer_pad_value(a: Access, v: int | float, k: int, before: int, after: int) -> Access:
    """``(access-pad-value A v k before after)``: v must be a value of A's dtype."""
    if k >= a.ndim:
        raise ShapeError(f"needs axis {k} to be below {a.ndim} for an access pattern of "
                         f"dims {fmt_dims(a.dims)}", arg=2)
    if is_int(a.dtype):
        info = np.iinfo(a.dtype)
        if not isinstance(v, int) or not info.min <= v <= info.max:
            raise ShapeError(f"needs a padding value of dtype {a.dtype}, got {v}", arg=1)
    dims = list(a.dims)
    dims[k] += before + after
    return Access(tuple(dims[:a.n]), tuple(dims[a.n:]), a.dtype)


def pad_value(out: Access, x: np.ndarray, v, k: int, before: int, after: int) -> np.ndarray:
    """Axis k padded with v (an input zero point, so padding dequantizes to 0)."""
    widths = [(0, 0)] * x.ndim
    widths[k] = (before, after)
    return np.pad(x, widths, constant_values=np.array(v, dtype=x.dtype))
