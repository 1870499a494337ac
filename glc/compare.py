"""Comparing a result with the reference: integers bit for bit, floats to rounding error."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Float programs may sum in another order once rewritten; these bound that rounding difference.
FLOAT_RTOL = {"float32": 1e-4, "float64": 1e-9}


@dataclass(frozen=True)
class Comparison:
    """Whether two tensors agree, and how they differ if not."""

    match: bool
    detail: str
    max_abs_diff: float | None = None


def compare(result: np.ndarray, expected: np.ndarray) -> Comparison:
    """Integers must be equal; floats equal up to FLOAT_RTOL of the result's scale."""
    if result.shape != expected.shape:
        return Comparison(False, f"shape {result.shape} differs from the expected {expected.shape}")
    if result.dtype != expected.dtype:
        return Comparison(False, f"dtype {result.dtype} differs from the expected {expected.dtype}")
    if result.size == 0:
        return Comparison(True, "equal (empty)", 0.0)
    diff = np.abs(result.astype(np.float64) - expected.astype(np.float64))
    worst = float(diff.max())
    if result.dtype.kind in "iu":
        wrong = int(np.count_nonzero(result != expected))
        if wrong:
            return Comparison(False, f"{wrong} of {result.size} elements differ "
                                     f"(max |diff| {worst:g})", worst)
        return Comparison(True, "equal, bit for bit", 0.0)
    scale = max(1.0, float(np.abs(expected).max()))
    tol = FLOAT_RTOL[str(result.dtype)] * scale
    if not np.all(diff <= tol) or np.isnan(result).any() != np.isnan(expected).any():
        return Comparison(False, f"max |diff| {worst:g} exceeds {tol:g}", worst)
    return Comparison(True, f"equal within {tol:g} (max |diff| {worst:g})", worst)
