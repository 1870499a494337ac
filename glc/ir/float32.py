"""float32 arithmetic as onnxruntime's x86 kernels do it, where numpy has no operator for it: the
fused multiply-add (FMA3), rounded once. MLAS's SGEMM (glc/ir/sgemm.py), its QLinearAdd and
requantizing kernels (glc/ir/quantized.py) and its LayerNorm kernel (glc/ir/normalize.py) use it."""

from __future__ import annotations

import numpy as np


def fma32(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``x·y + z`` rounded once to float32, for float32 values (or integers float32 holds
    exactly): the product is exact in float64, the sum's float64 rounding error exact by TwoSum
    (Knuth), and the one case where rounding the float64 sum to float32 is not rounding the
    exact sum — the float64 sum on a float32 midpoint — is decided by the error's sign."""
    p = x.astype(np.float64) * y.astype(np.float64)  # exact: 24 + 24 bits
    zz = z.astype(np.float64)
    s = p + zz
    back = s - p  # TwoSum: p + zz = s + err exactly
    err = (p - (s - back)) + (zz - back)
    r = s.astype(np.float32)
    lo = r.astype(np.float64)
    toward = np.nextafter(r, np.where(s > lo, np.inf, -np.inf).astype(np.float32))
    half = (toward.astype(np.float64) - lo) / 2
    tie = (err != 0) & (s != lo) & (s - lo == half)
    # s is a float32 midpoint and the exact sum lies past it on err's side: round that way
    return np.where(tie, np.where((err > 0) == (toward > r), toward, r), r).astype(np.float32)
