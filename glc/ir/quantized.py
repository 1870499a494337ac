"""Quantized arithmetic with ONNX's semantics as onnxruntime's CPU kernels compute it (the
contracts are in docs/language.md, "Quantized operators"): the shape rules and numpy evaluation of
``requantize-linear``, ``quantize-linear``, ``dequantize-linear``, ``add-linear``,
``average-pool-linear``, ``table-lookup`` and ``access-pad-value``, which the operator table
(glc/ir/ops.py) lists.

Every float operation is float32 and in the kernels' order, so numpy reproduces them exactly:
float32 multiply and divide are IEEE-754 round-to-nearest-even on every platform, and
``np.rint`` rounds half to even like the x86 ``cvtps2dq`` the kernels use. Activations are int8:
a uint8 tensor of zero point z is carried as int8 ``u - 128`` with zero point ``z - 128``, which
leaves every ``q - z`` and every clamp unchanged (docs/language.md).
"""

from __future__ import annotations

import functools

import numpy as np

from glc.errors import ShapeError
from glc.ir.float32 import fma32
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


def evaluate_requantize(acc: np.ndarray, m: np.ndarray, z: int) -> np.ndarray:
    """The language's ``requantize-linear``: ``requantize_linear`` of multipliers that are
    finite and positive, as every product of ONNX scales is. A NaN's conversion to an integer
    is undefined (numpy's and the hardware's differ) and no quantizer writes a zero or a
    negative one: they are refused at the form (the hardware's own treatment of such bits,
    docs/isa.md, is the ISA's, not the language's)."""
    bad = ~(np.isfinite(m) & (m > 0))
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ShapeError(f"needs finite positive multipliers, got {m[at]} at index {at}", arg=1)
    return requantize_linear(acc, m, z)


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


def infer_average_pool(w: Access, d: Access, sx: int | float, zx: int | float,
                       sy: int | float, zy: int | float, offset: int | float) -> Access:
    """``(average-pool-linear W D sx zx sy zy offset)``: W int8 windows (the pooled dims, then
    the window's item dims), D float32 divisors of W's shape dims."""
    if w.dtype != "int8" or not w.item:
        raise ShapeError(f"needs int8 windows (an access pattern with item dims), got {w}", arg=0)
    if d.dtype != "float32" or d.dims != w.shape:
        raise ShapeError(f"needs float32 divisors of the windows' shape dims {fmt_dims(w.shape)},"
                         f" got {fmt_dims(d.dims)} {d.dtype}", arg=1)
    _scale(sx, 2)
    _zero_point(zx, 3)
    _scale(sy, 4)
    _zero_point(zy, 5)
    if offset not in (0, 128):
        raise ShapeError(f"needs an offset of 0 (int8) or 128 (uint8), got {offset}", arg=6)
    return Access(w.shape, (), "int8")


def average_pool_linear(w: np.ndarray, d: np.ndarray, sx: float, zx: int, sy: float, zy: int,
                        offset: int) -> np.ndarray:
    """onnxruntime's QLinearAveragePool: each window's elements dequantized
    (``float32(x - zx) · sx``), summed in float32 in row-major window order, divided by the
    divisor D, then ``clamp(rint(a / sy + zy))`` with the zero point added *before* rounding, in
    the model's own type (``offset`` 128: uint8 carried as int8, docs/language.md)."""
    shape = d.shape
    items = (w.astype(np.int32) - np.int32(zx)).astype(np.float32).reshape(*shape, -1)
    total = np.zeros(shape, np.float32)
    for k in range(items.shape[-1]):  # sequentially, as the kernel: a float sum's order matters
        total += items[..., k] * np.float32(sx)
    mean = total / d.astype(np.float32)
    rounded = np.rint(mean / np.float32(sy) + np.float32(zy + offset)).astype(np.int64)
    return _saturate(np.clip(rounded, -128 + offset, 127 + offset) - offset)


def infer_add_linear(a: Access, b: Access, sa: int | float, za: int | float, sb: int | float,
                     zb: int | float, sc: int | float, zc: int | float,
                     offset: int | float) -> Access:
    """``(add-linear A B sa za sb zb sc zc offset)``: A and B int8 of one dims."""
    for arg, x in ((0, a), (1, b)):
        if x.dtype != "int8":
            raise ShapeError(f"needs an int8 operand, got {x.dtype}", arg=arg)
    if b.dims != a.dims:
        raise ShapeError(f"needs operands of one dims, got {fmt_dims(a.dims)} and "
                         f"{fmt_dims(b.dims)}", arg=1)
    for arg, (s, z) in enumerate(((sa, za), (sb, zb), (sc, zc))):
        _scale(s, 2 + 2 * arg)
        _zero_point(z, 3 + 2 * arg)
    if offset not in (0, 128):
        raise ShapeError(f"needs an offset of 0 (int8) or 128 (uint8), got {offset}", arg=8)
    return Access(a.shape, a.item, "int8")


def add_linear(a: np.ndarray, b: np.ndarray, sa: float, za: int, sb: float, zb: int, sc: float,
               zc: int, offset: int) -> np.ndarray:
    """onnxruntime's QLinearAdd on x86-64 with AVX2 (MlasQLinearAddKernelAvx2Helper), which
    it also runs for a QDQ Add it fuses: with the ratios ``ra = sa / sc``, ``rb = sb / sc`` and
    ``F = zc - fma(za, ra, rb · zb)`` (its compiler contracts that sum into an FMA), each
    element is ``clamp(rint(fma(a, ra, fma(b, rb, F))))`` on the model's own values (``offset``
    128: uint8 carried as int8), every fma rounded once to float32."""
    ra, rb, fixed = add_linear_constants(sa, za, sb, zb, sc, zc, offset)
    return linear_fold([b, a], offset, fixed, [rb, ra])


def add_linear_constants(sa: float, za: int, sb: float, zb: int, sc: float, zc: int,
                         offset: int) -> tuple[np.float32, np.float32, np.float32]:
    """QLinearAdd's float32 ``ra``, ``rb`` and ``F`` (see ``add_linear``)."""
    f = np.float32
    ra, rb = f(f(sa) / f(sc)), f(f(sb) / f(sc))
    fixed = f(f(zc + offset) - fma32(np.array([za + offset], f), ra, rb * f(zb + offset))[0])
    return ra, rb, fixed


# How far (in units in the last place) from the plain ratio and intercept ``requantize_constants``
# looks for a pair that rounds like the division (the ratio is one rounding, the intercept two).
NEAR_ULPS = 4


@functools.lru_cache(maxsize=1024)
def requantize_constants(s: float, z: int, sc: float, zc: int
                         ) -> tuple[np.float32, np.float32] | None:
    """A float32 ``scale`` and ``fixed`` for which ``linear_fold([x], 0, fixed, [scale])``
    equals ``quantize_linear(dequantize_linear(x, s, z), sc, zc)`` for every int8 x — an
    activation requantized from one scale and zero point to another (a Concat of differently
    quantized inputs) as one ``lin`` of the vector unit — or None. The division's two roundings
    are not one fma's, so the pair is searched near ``s / sc`` and ``zc - z · s / sc`` and
    checked on all 256 inputs: exact by construction, or not offered."""
    f = np.float32
    x = np.arange(INT8[0], INT8[1] + 1, dtype=np.int8)
    target = quantize_linear(dequantize_linear(x, s, z), sc, zc)
    ratio = f(f(s) / f(sc))
    intercept = f(zc - z * np.float64(ratio))
    steps = sorted(range(-NEAR_ULPS, NEAR_ULPS + 1), key=abs)
    for i in steps:
        scale = _ulps(ratio, i)
        for j in steps:
            fixed = _ulps(intercept, j)
            if np.array_equal(linear_fold([x], 0, fixed, [scale]), target):
                return scale, fixed
    return None


def _ulps(value: np.float32, count: int) -> np.float32:
    """``value`` moved ``count`` float32 steps (up for a positive count)."""
    for _ in range(abs(count)):
        value = np.nextafter(value, np.float32(np.inf if count > 0 else -np.inf))
    return np.float32(value)


def linear_fold(rows: list[np.ndarray], offset: int, fixed: np.float32,
                scales: list[np.float32]) -> np.ndarray:
    """``v = fixed``, then ``v = fma(row + offset, scale, v)`` for each int8 row and its scale
    in order, each rounded once to float32; ``clamp(rint(v), -128 + offset, 127 + offset) -
    offset``. A v whose rint leaves int32 (or NaN) converts to INT_MIN and so saturates low, as
    ``cvtps2dq`` does (the VECTOR unit's ``lin``, docs/isa.md)."""
    f = np.float32
    value = np.full(np.shape(rows[0]), fixed, f)
    for row, scale in zip(rows, scales, strict=True):
        value = fma32(row.astype(np.int32) + offset, f(scale), value)
    with np.errstate(invalid="ignore"):
        fits = np.abs(value) < f(2 ** 31)
        rounded = np.where(fits, np.rint(np.where(fits, value, 0)), -2.0 ** 31).astype(np.int64)
    return (np.clip(rounded, INT8[0] + offset, INT8[1] + offset) - offset).astype(np.int8)


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


TABLE_ENTRIES = 256  # one per int8 code: ``table-lookup``'s tables (VECTOR lut, docs/isa.md)


def infer_table_lookup(a: Access, table: Access) -> Access:
    """``(table-lookup A T)``: A int8, T an int8 tensor of 256 entries (entry k for the code
    k − 128)."""
    if a.dtype != "int8":
        raise ShapeError(f"needs int8 codes, got {a.dtype}", arg=0)
    if table.dtype != "int8" or table.dims != (TABLE_ENTRIES,):
        raise ShapeError(f"needs an int8 table of dims ({TABLE_ENTRIES}), got "
                         f"{fmt_dims(table.dims)} {table.dtype}", arg=1)
    return Access(a.shape, a.item, "int8")


def table_lookup(a: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Each int8 code ``x`` of ``a`` mapped to ``table[x + 128]``: any function of one int8
    code, such as a quantized graph's elementwise float island (docs/onnx.md)."""
    return table.astype(np.int8)[a.astype(np.int64) + TABLE_ENTRIES // 2]
