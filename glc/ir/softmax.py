"""Softmax of float32 as onnxruntime's x86 CPU kernel computes it on the machine it runs on,
which ``(compute softmax)`` of a float32 tensor evaluates (docs/language.md): the float Softmax a
dynamically quantized attention keeps. MLAS (MlasComputeSoftmax) takes the row's maximum, sums
the exponentials with the kernel its platform dispatch chose, then multiplies by 1/Σ (the AVX
output kernel on both paths). The dispatch (mlas/lib/platform.cpp) picks, on a processor with
AVX2 and FMA3, MlasComputeSumExpF32KernelFma3, and MlasComputeSumExpF32KernelAvx512F when
AVX512F is there and the operating system saves its state; ``mlas_kernel`` decides the same
way. Measured bit for bit against onnxruntime 1.32 (tests/ir/test_softmax.py): the FMA3 path
on AVX2 machines, the AVX512F path on an AMD EPYC with AVX-512."""

from __future__ import annotations

import numpy as np

from glc.ir.float32 import fma32

F = np.float32

# MLAS's exp constants for the sum of exponentials (mlas/lib/compute.cpp, MlasExpConstants):
# x = m·ln 2 + r with m rounded by adding and subtracting 1.5·2²³ (ROUNDER) and r by a two-part
# ln 2 (Cody–Waite), exp(r) a degree-6 polynomial whose last two coefficients are both 1
# (poly_56, used twice), then scaled by 2^m. Both kernels share these steps.
FMA3, AVX512F = "fma3", "avx512f"
# x is clamped below first: FMA3 at LowerRangeSumExp (2^m stays a normal float32), AVX512F at
# LowerRange, -150·ln 2, where its subnormal exp rounds to 0
LOWER = {FMA3: F(-88.3762626647949), AVX512F: F(-103.9720840454)}
LOG2E = F(1.44269504088896341)
ROUNDER = F(12582912.0)
LN2_HI, LN2_LO = F(-6.93145752e-1), F(-1.42860677e-6)
POLY = tuple(F(float.fromhex(h)) for h in ("0x1.694000p-10", "0x1.125edcp-7", "0x1.555b5ap-5",
                                           "0x1.555450p-3", "0x1.fffff6p-2", "0x1.000000p+0",
                                           "0x1.000000p+0"))
ONE_BITS = 0x3F800000  # the exponent bias, added to m << 23
LANES = {FMA3: 8, AVX512F: 16}  # one ymm / zmm register of float32 accumulates the exponentials


def mlas_kernel(features: dict[str, bool] | None = None) -> str:
    """The sum-of-exponentials kernel MLAS dispatches given the processor's ``features`` (numpy's
    names: ``{"AVX512F": True, ...}``); by default this machine's, as numpy detected them at
    import (its AVX512F already requires the operating system to save the zmm and opmask
    state, the xgetbv test MLAS makes too). ``AVX512F`` if present, else ``FMA3``: glc models
    no processor without AVX2 and FMA3."""
    if features is None:
        try:
            from numpy._core._multiarray_umath import __cpu_features__ as features
        except ImportError:  # numpy < 2 names its core module without the underscore
            from numpy.core._multiarray_umath import __cpu_features__ as features
    return AVX512F if features.get("AVX512F", False) else FMA3


def _full(value, like: np.ndarray) -> np.ndarray:
    return np.full(like.shape, value, F)


def sum_exp_terms(x: np.ndarray, kernel: str = FMA3) -> np.ndarray:
    """``exp(x)`` of float32 ``x`` (x ≤ 0: the row less its maximum) as ``kernel``'s vector loop
    computes each element: clamped below at ``LOWER[kernel]``, reduced, a polynomial by FMAs,
    then 2^m. FMA3 multiplies by 2^m built by shifting m into the exponent field, which is 0
    for m = -127 (the term flushes to 0); AVX512F scales by vscalefps, p·2^m rounded once, so
    terms below 2^-126 stay subnormal."""
    x = np.asarray(x, F)
    lower = LOWER[kernel]
    x = np.where(x < lower, lower, x).astype(F)  # vmaxps(lower, x): a NaN x stays
    biased = fma32(_full(LOG2E, x), x, _full(ROUNDER, x))
    m = (biased - ROUNDER).astype(F)
    r = fma32(m, _full(LN2_LO, x), fma32(m, _full(LN2_HI, x), x))
    p = _full(POLY[0], x)
    for c in POLY[1:]:
        p = fma32(p, r, _full(c, x))
    # biased's low bits are m (the rounder's exponent leaves them alone)
    if kernel == AVX512F:
        # p·2^m is exact in float64 (-150 ≤ m ≤ 0), so the cast is vscalefps's single rounding
        k = biased.view(np.int32) - ROUNDER.view(np.int32)
        return np.ldexp(p.astype(np.float64), k).astype(F)
    scale = ((biased.view(np.int32) << 23) + ONE_BITS).astype(np.int32).view(F)
    return (p * scale).astype(F)


def _reduce(lanes: np.ndarray) -> np.ndarray:
    """Eight float32 lanes to one as two vhaddps and the halves added:
    ``((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))``."""
    pairs = (lanes[..., 0::2] + lanes[..., 1::2]).astype(F)
    halves = (pairs[..., 0::2] + pairs[..., 1::2]).astype(F)
    return (halves[..., 1] + halves[..., 0]).astype(F)


def softmax(x: np.ndarray, kernel: str | None = None) -> np.ndarray:
    """Softmax over the last axis of float32 ``x`` as onnxruntime's ``kernel`` (default: the one
    MLAS dispatches here, ``mlas_kernel()``) computes each row: its maximum,
    ``e = exp(x + (-max))`` (``sum_exp_terms``), the e summed in ``LANES[kernel]`` float32 lanes
    (lane j takes elements L·k + j in order, from 0; a short last vector's missing lanes add
    nothing), the lanes reduced to one — FMA3's eight by ``_reduce``; AVX512F's sixteen first
    folded to eight, lane j + lane j+8 (vextractf64x4, vaddps), then ``_reduce`` — and
    ``e · (1 / Σ)``, each step rounded to float32."""
    kernel = kernel or mlas_kernel()
    width = LANES[kernel]
    x = np.asarray(x, F)
    negative = (-x.max(axis=-1, keepdims=True)).astype(F)
    e = sum_exp_terms((x + negative).astype(F), kernel)
    n = x.shape[-1]
    padded = np.zeros(x.shape[:-1] + (-(-n // width) * width,), F)
    padded[..., :n] = e
    lanes = np.zeros(x.shape[:-1] + (width,), F)
    for k in range(0, padded.shape[-1], width):
        lanes = (lanes + padded[..., k:k + width]).astype(F)
    if kernel == AVX512F:  # the zmm's halves added first
        lanes = (lanes[..., 8:] + lanes[..., :8]).astype(F)
    total = _reduce(lanes)
    return (e * (F(1) / total).astype(F)[..., None]).astype(F)
