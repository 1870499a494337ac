"""GELU as onnxruntime's x86 CPU kernels compute it: ``(gelu A)`` (docs/language.md), the float
GELU a dynamically quantized transformer keeps, which onnxruntime's optimizer fuses into its
com.microsoft ``Gelu`` (or ``BiasGelu``, the bias Add before it included) kernel. Both compute
``y = x · float32(1/√2)``, MLAS's error function of y (``mlas_erf``), then ``(0.5·x)·(erf + 1)``
in float32, each step rounded once. Measured bit for bit against onnxruntime 1.32 on every
float32 of a dense sweep and the edge values (tests/ir/test_gelu.py)."""

from __future__ import annotations

import math

import numpy as np

from glc.errors import ShapeError
from glc.ir.float32 import fma32
from glc.ir.types import Access

F = np.float32

# MLAS's erf constants (mlas/lib/erf.cpp, MlasErfConstants): below SPLIT an odd polynomial in
# x², above it 1 - exp(-p(|x|)) with p of degree 7; |x| is first clamped to UPPER, past where
# erf is 1 in float32: 3.925 in onnxruntime 1.32 (measured: older sources' 3.725 gives
# 1 - 2⁻²³ where onnxruntime 1.32 gives 1 - 2⁻²⁴, at |x| in 3.78…3.92).
UPPER = F(3.925)
SPLIT = F(0.921875)
SMALL = tuple(F(c) for c in (-5.99104969e-4, 4.99339588e-3, -2.67667342e-2, 1.12818025e-1,
                             -3.76124859e-1, 1.28379151e-1))
BIG = tuple(F(c) for c in (1.72948930e-5, -3.83208680e-4, 3.88393435e-3, -2.42545605e-2,
                           1.06777847e-1, 6.34846687e-1, 1.28717512e-1))
# Its exp, for exp(-p): x = r·ln 2 + f with r rounded by adding and subtracting 1.5·2²³
# (ROUNDER), f by a two-part ln 2 (Cody–Waite), exp(f) a degree-6 polynomial, 2^r by exponent
# bits.
EXP_LOWER = F(-88.3762626647949)
LOG2E = F(1.44269504088896341)
LN2_HI, LN2_LO = F(-6.93145752e-1), F(-1.42860677e-6)
EXP = tuple(F(c) for c in (1.38319808e-3, 8.37550033e-3, 4.16689515e-2, 1.66664466e-1,
                           4.99999851e-1, 1.0, 1.0))
ROUNDER = F(1.25829120e+7)
# The kernel's 1/√2: M_SQRT1_2 in Gelu, 1/√2 in float32 in BiasGelu; the same float32.
SQRT1_2 = F(math.sqrt(0.5))


def _horner(coefficients: tuple, x: np.ndarray) -> np.ndarray:
    """``c0·x^n + … + cn`` as MLAS's kernel evaluates it: one fused multiply-add per term."""
    acc = np.full(x.shape, coefficients[0], F)
    for c in coefficients[1:]:
        acc = fma32(acc, x, np.full(x.shape, c, F))
    return acc


def mlas_erf(x: np.ndarray) -> np.ndarray:
    """The error function of float32 ``x`` as MLAS's x86-64 kernel computes it (AVX2 with
    FMA3; every element the same arithmetic, a row's tail too): on |x| clamped to ``UPPER``,
    below ``SPLIT`` ``fma(P(x²), |x|, |x|)``, else ``1 - exp(-q(|x|))`` with its own exp; the
    sign bit of x then or'ed in (so erf(-0) = -0). Both branches run on every lane; the big one
    on 0 where the small one is taken, which gives +0 there, so the or is a choice."""
    x = np.asarray(x, F)
    sign = np.signbit(x)
    a = np.abs(x)
    a = np.minimum(a, UPPER)  # a NaN stays NaN, as onnxruntime's result is
    big = a >= SPLIT
    small = fma32(_horner(SMALL, (a * a).astype(F)), a, a)
    b = np.where(big, a, F(0)).astype(F)
    p = -fma32(_horner(BIG, b), b, b)
    p = np.where(p > EXP_LOWER, p, EXP_LOWER).astype(F)
    r = (fma32(np.full(p.shape, LOG2E, F), p, np.full(p.shape, ROUNDER, F)) - ROUNDER).astype(F)
    f = fma32(r, np.full(r.shape, LN2_LO, F), fma32(r, np.full(r.shape, LN2_HI, F), p))
    power = np.ldexp(F(1), r.astype(np.int32)).astype(F)  # 2^r from exponent bits, exact
    tail = (F(1) - (_horner(EXP, f) * power).astype(F)).astype(F)
    result = np.where(big, tail, small).astype(F)
    return np.where(sign, -result, result).astype(F)


def infer_gelu(a: Access) -> Access:
    """``(gelu A)``: A float32, the result of its dims."""
    if a.dtype != "float32":
        raise ShapeError(f"needs a float32 tensor, got {a.dtype}", arg=0)
    return Access(a.dims, (), "float32")


def gelu(x: np.ndarray) -> np.ndarray:
    """``x · ½(1 + erf(x/√2))`` as onnxruntime's Gelu and BiasGelu kernels round it in float32:
    ``y = x · SQRT1_2``, ``e = mlas_erf(y)``, then ``(0.5·x) · (e + 1)`` (0.5·x exact)."""
    x = np.asarray(x, F)
    e = mlas_erf((x * SQRT1_2).astype(F))
    with np.errstate(invalid="ignore"):  # -inf · 0 is NaN, as onnxruntime's
        return ((F(0.5) * x).astype(F) * (e + F(1)).astype(F)).astype(F)
