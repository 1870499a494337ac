"""The hyperbolic tangent of float32 as onnxruntime's x86 CPU kernel computes it: ``(compute tanh)``
of a float32 tensor (docs/language.md), the float activation a dynamically quantized model keeps
(a BERT pooler's, a gate's). Measured bit for bit against onnxruntime 1.32 on a dense sweep of
float32 and the edge values (tests/ir/test_tanh.py)."""

from __future__ import annotations

import numpy as np

from glc.ir.sigmoid import horner

F = np.float32

# MLAS's tanh (mlas/lib/tanh.cpp, MlasTanhConstants, Eigen's coefficients; on x86-64 with FMA3
# its assembly kernel): x clamped to [LOWER, UPPER], then the rational x·P(x²) / Q(x²), P of
# degree 6 and Q of degree 3 in x², each step of both polynomials one fused multiply-add.
LOWER, UPPER = F(-9.0), F(9.0)
ALPHA = tuple(F(c) for c in (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
                             5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
                             4.89352455891786e-03))
BETA = tuple(F(c) for c in (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
                            4.89352518554385e-03))


def mlas_tanh(x: np.ndarray) -> np.ndarray:
    """``tanh(x)`` of float32 ``x`` as MLAS's FMA3 kernel computes every element: ``v`` = x
    clamped to ±9 (a NaN stays NaN), ``v²``, ``p = v·P(v²)``, ``q = Q(v²)``, then ``p/q``, each
    step rounded to float32, and nothing clamps it after: near ±9 it exceeds 1 in magnitude
    (1.0000002 at 8.9862), as onnxruntime's does."""
    x = np.asarray(x, F)
    v = np.where(x < LOWER, LOWER, np.where(x > UPPER, UPPER, x)).astype(F)
    v2 = (v * v).astype(F)
    p = (v * horner(ALPHA, v2)).astype(F)
    return (p / horner(BETA, v2)).astype(F)
