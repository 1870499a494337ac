"""Softmax of float32 as onnxruntime's x86 CPU kernel computes it (MlasComputeSoftmax on AVX2
with FMA3: the sum-of-exponentials kernel MlasComputeSumExpF32KernelFma3, then the output
kernel), which ``(compute softmax)`` of a float32 tensor evaluates (docs/language.md): the float
Softmax a dynamically quantized attention keeps. Measured bit for bit against onnxruntime 1.32
(tests/ir/test_softmax.py)."""

from __future__ import annotations

import numpy as np

from glc.ir.float32 import fma32

F = np.float32

# MLAS's exp constants for the sum of exponentials (mlas/lib/compute.cpp, MlasExpConstants):
# x = m·ln 2 + r with m rounded by adding and subtracting 1.5·2²³ (ROUNDER) and r by a two-part
# ln 2 (Cody–Waite), exp(r) a degree-6 polynomial whose last two coefficients are both 1
# (poly_56, used twice), 2^m from m's bits shifted into the exponent field.
LOWER = F(-88.3762626647949)  # x is clamped below here first
LOG2E = F(1.44269504088896341)
ROUNDER = F(12582912.0)
LN2_HI, LN2_LO = F(-6.93145752e-1), F(-1.42860677e-6)
POLY = tuple(F(float.fromhex(h)) for h in ("0x1.694000p-10", "0x1.125edcp-7", "0x1.555b5ap-5",
                                           "0x1.555450p-3", "0x1.fffff6p-2", "0x1.000000p+0",
                                           "0x1.000000p+0"))
ONE_BITS = 0x3F800000  # the exponent bias, added to m << 23
LANES = 8  # one ymm register of float32 accumulates the row's exponentials


def _full(value, like: np.ndarray) -> np.ndarray:
    return np.full(like.shape, value, F)


def sum_exp_terms(x: np.ndarray) -> np.ndarray:
    """``exp(x)`` of float32 ``x`` (x ≤ 0: the row less its maximum) as the kernel's vector
    loop computes each element: clamped below at ``LOWER``, reduced, a polynomial by FMAs, then
    one multiply by 2^m."""
    x = np.asarray(x, F)
    x = np.where(x < LOWER, LOWER, x).astype(F)  # vmaxps(LOWER, x): a NaN x stays
    biased = fma32(_full(LOG2E, x), x, _full(ROUNDER, x))
    m = (biased - ROUNDER).astype(F)
    r = fma32(m, _full(LN2_LO, x), fma32(m, _full(LN2_HI, x), x))
    p = _full(POLY[0], x)
    for c in POLY[1:]:
        p = fma32(p, r, _full(c, x))
    # 2^m: biased's low bits are m (the rounder's exponent leaves them alone), shifted by 23
    scale = ((biased.view(np.int32) << 23) + ONE_BITS).astype(np.int32).view(F)
    return (p * scale).astype(F)


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis of float32 ``x`` as onnxruntime's kernel computes each row:
    its maximum, ``e = exp(x + (-max))`` (``sum_exp_terms``), the e summed in eight float32
    lanes (lane j takes elements 8k + j in order, from 0; a short last vector's missing lanes
    add 0), the lanes reduced ``((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))`` (two
    vhaddps, the halves added), then ``e · (1 / Σ)``, each step rounded to float32."""
    x = np.asarray(x, F)
    negative = (-x.max(axis=-1, keepdims=True)).astype(F)
    e = sum_exp_terms((x + negative).astype(F))
    n = x.shape[-1]
    padded = np.zeros(x.shape[:-1] + (-(-n // LANES) * LANES,), F)
    padded[..., :n] = e
    lanes = np.zeros(x.shape[:-1] + (LANES,), F)
    for k in range(0, padded.shape[-1], LANES):
        lanes = (lanes + padded[..., k:k + LANES]).astype(F)
    pairs = (lanes[..., 0::2] + lanes[..., 1::2]).astype(F)
    halves = (pairs[..., 0::2] + pairs[..., 1::2]).astype(F)
    total = (halves[..., 1] + halves[..., 0]).astype(F)
    return (e * (F(1) / total).astype(F)[..., None]).astype(F)
