"""Comparing a result with the reference: integers bit for bit, floats element by element.

A float element matches when ``|result - expected| <= atol + rtol * |expected|`` (numpy's
``isclose`` convention: the tolerance of each element scales with that element, so a large
element elsewhere cannot hide a wrong small one); NaN matches NaN, and an infinity only the same
infinity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Float programs may sum in another order once rewritten; these bound that rounding difference.
DEFAULT_RTOL = {"float32": 1e-4, "float64": 1e-9}
DEFAULT_ATOL = {"float32": 1e-6, "float64": 1e-12}


@dataclass(frozen=True)
class FloatTolerance:
    """``--rtol`` / ``--atol``: None takes the result dtype's default."""

    rtol: float | None = None
    atol: float | None = None

    def of(self, dtype: np.dtype) -> tuple[float, float]:
        """(rtol, atol) for results of ``dtype``."""
        name = str(dtype)
        return (DEFAULT_RTOL[name] if self.rtol is None else self.rtol,
                DEFAULT_ATOL[name] if self.atol is None else self.atol)


DEFAULT_TOLERANCE = FloatTolerance()


@dataclass(frozen=True)
class Comparison:
    """Whether two tensors agree, and how they differ if not."""

    match: bool
    detail: str
    max_abs_diff: float | None = None


def compare(result: np.ndarray, expected: np.ndarray,
            tolerance: FloatTolerance = DEFAULT_TOLERANCE) -> Comparison:
    """Integers must be equal; floats close element by element (see the module docstring)."""
    if result.shape != expected.shape:
        return Comparison(False, f"shape {result.shape} differs from the expected {expected.shape}")
    if result.dtype != expected.dtype:
        return Comparison(False, f"dtype {result.dtype} differs from the expected {expected.dtype}")
    if result.size == 0:
        return Comparison(True, "equal (empty)", 0.0)
    got, want = result.astype(np.float64), expected.astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf is NaN here, and judged by isclose below
        diff = np.abs(got - want)
    finite = diff[np.isfinite(diff)]
    worst = float(finite.max()) if finite.size else 0.0
    if result.dtype.kind in "iu":
        differs = result != expected
        if differs.any():
            first = _first(differs)
            return Comparison(False, f"{_count(differs)} (first at {first}: {result[first]}, "
                                     f"expected {expected[first]}; max |diff| {worst:g})", worst)
        return Comparison(True, "equal, bit for bit", 0.0)
    rtol, atol = tolerance.of(result.dtype)
    close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    bound = f"{atol:g} + {rtol:g}·|expected|"
    if not close.all():
        first = _first(~close)
        return Comparison(False, f"{_count(~close)} by more than {bound} "
                                 f"(first at {first}: {got[first]:g}, expected {want[first]:g}; "
                                 f"max |diff| {worst:g})", worst)
    return Comparison(True, f"equal within {bound} (max |diff| {worst:g})", worst)


def _count(differs: np.ndarray) -> str:
    return f"{int(np.count_nonzero(differs))} of {differs.size} elements differ"


def _first(differs: np.ndarray) -> tuple[int, ...]:
    """The first differing index in C order: the one a user looks at first."""
    return tuple(int(i) for i in np.argwhere(differs)[0])
