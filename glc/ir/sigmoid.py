"""The logistic function of float32 as onnxruntime's x86 CPU kernel computes it: ``(compute
sigmoid)`` of a float32 tensor (docs/language.md), the float activation a dynamically quantized
CNN keeps between its products (EfficientNet's SiLU and squeeze-excitation gates; a float
HardSigmoid is elementwise ops, glc/onnx/floats.py). Measured bit for bit against onnxruntime
1.32 on a dense sweep of float32 and the edge values (tests/ir/test_sigmoid.py)."""

from __future__ import annotations

import numpy as np

from glc.ir.float32 import fma32

F = np.float32

# MLAS's logistic (mlas/lib/logistic.cpp, MlasLogisticConstants; on x86-64 with FMA3 its
# assembly kernel MlasLogisticKernelFma3): x clamped to [LOWER, UPPER], then the rational
# x·P(x²) / Q(x²) + ½, P of degree 4 and Q of degree 5 in x², each step of both polynomials one
# fused multiply-add, the result clamped below at 0 only.
LOWER, UPPER = F(-18.0), F(18.0)
ALPHA = tuple(F(c) for c in (4.37031012579801e-11, 1.15627324459942e-07, 6.08574864600143e-05,
                             8.51377133304701e-03, 2.48287947061529e-01))
BETA = tuple(F(c) for c in (6.10247389755681e-13, 5.76102136993427e-09, 6.29106785017040e-06,
                            1.70198817374094e-03, 1.16817656904453e-01, 9.93151921023180e-01))


def horner(coefficients: tuple, x2: np.ndarray) -> np.ndarray:
    """The polynomial of ``coefficients`` (highest degree first) at ``x2``, each step one fused
    multiply-add, as MLAS's FMA3 kernels evaluate theirs (its tanh too, glc/ir/tanh.py)."""
    acc = np.full(x2.shape, coefficients[0], F)
    for c in coefficients[1:]:
        acc = fma32(acc, x2, np.full(x2.shape, c, F))
    return acc


def mlas_logistic(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + e^-x)`` of float32 ``x`` as MLAS's FMA3 kernel computes every element (its
    masked tail too): ``v`` = x clamped to ±18 (vmaxps, vminps: a NaN stays NaN), ``v²``,
    ``p = v·P(v²)``, ``q = Q(v²)``, then ``max(0, p/q + ½)``, each step rounded to float32.
    onnxruntime's Sigmoid kernel and its com.microsoft QuickGelu (the SiLU ``x·σ(x)`` it
    fuses, alpha 1) both call it."""
    x = np.asarray(x, F)
    v = np.where(x < LOWER, LOWER, np.where(x > UPPER, UPPER, x)).astype(F)
    v2 = (v * v).astype(F)
    p = (v * horner(ALPHA, v2)).astype(F)
    q = horner(BETA, v2)
    return np.maximum(F(0), ((p / q).astype(F) + F(0.5)).astype(F)).astype(F)

