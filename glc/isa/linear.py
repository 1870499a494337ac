"""The STORE's `linear` conversion (docs/isa.md, "Conversion in STORE"): ONNX's requantization
`clamp(rint(float32(x) · M) + zero, −128, 127)` computed, as the RTL does (hw/requantize_linear.sv),
with integer operations only, so the hardware needs no floating-point unit.

`float32(x)` rounds |x| to a 24-bit mantissa (half to even: a tie only above 2^24); the float32
multiply is the exact 48-bit product of the two 24-bit mantissas rounded again to 24 bits; `rint`
is a third round-half-to-even, at the binary point. Subnormals never matter: a normal multiplier
has mantissa ≥ 2^23, so only a product below 2^-126 is subnormal in float32, and float32 rounds
it onto a grid of step 2^-149, to at most 2^-126 — far below ½, so rint gives 0 either way; a
subnormal multiplier (exponent field 0) times |x| ≤ 2^31 is below 2^-95, likewise 0. Likewise a
product ≥ 2^8 saturates whatever its rounding, so float32 overflow never matters. An exponent
field of 255 (±∞, NaN) acts as an infinite multiplier of that sign: x ≠ 0 saturates, x = 0
gives `zero`. tests/isa/test_linear.py holds this against numpy's float32 on millions of values.
"""

from __future__ import annotations

import numpy as np

MANTISSA = 23  # float32 fraction bits; a normal mantissa is 24 bits, 1.f
BIAS = 127  # float32 exponent bias
SATURATED = 256  # any magnitude ≥ 256 clamps to −128 or 127 whatever the zero point


def round_shift(value: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """value >> shift rounded half to even (value ≥ 0, int64; shift ≥ 0)."""
    shift = np.minimum(shift, 62)
    kept = value >> shift
    below = value - (kept << shift)
    half = np.where(shift > 0, np.int64(1) << np.maximum(shift - 1, 0), 0)
    up = (shift > 0) & ((below > half) | ((below == half) & (kept & 1 == 1)))
    return kept + up


def _msb(value: np.ndarray, bits: int) -> np.ndarray:
    """The index of the highest set bit of each value (−1 for 0)."""
    return (value[..., None] >> np.arange(bits) > 0).sum(axis=-1) - 1


def requantize_linear(x: np.ndarray, m_bits: np.ndarray, zero: int) -> np.ndarray:
    """int32 `x` times the float32 multipliers whose bit patterns are `m_bits` (uint32,
    broadcast against x), rounded half to even, plus `zero`, saturated to int8."""
    x = np.asarray(x, dtype=np.int64)
    m_bits = np.broadcast_to(np.asarray(m_bits, dtype=np.int64) & 0xFFFFFFFF, x.shape)
    magnitude = np.abs(x)
    # float32(x) = ma · 2^ea, ma a 24-bit mantissa (x = 0 gives ma = 0, handled below).
    p = _msb(magnitude, 32)
    shift = np.maximum(p - MANTISSA, 0)
    ma = np.where(p >= MANTISSA, round_shift(magnitude, shift),
                  magnitude << np.maximum(MANTISSA - p, 0))
    carry = ma >> (MANTISSA + 1)
    ma, ea = ma >> carry, p - MANTISSA + carry
    # M = mm · 2^eb for a normal multiplier.
    em = (m_bits >> MANTISSA) & 0xFF
    mm = (m_bits & ((1 << MANTISSA) - 1)) | (1 << MANTISSA)
    eb = em - BIAS - MANTISSA
    # The float32 product: the 48-bit product rounded to 24 bits, mp · 2^e.
    product = ma * mm
    s = _msb(product >> 46, 2) + 46 - MANTISSA  # the product's top bit is bit 46 or 47
    mp = round_shift(product, np.maximum(s, 0))
    carry = mp >> (MANTISSA + 1)
    mp, e = mp >> carry, s + carry + ea + eb
    # rint(mp · 2^e): saturated from e ≥ −15 (mp ≥ 2^23), 0 from e ≤ −25 (mp < 2^24).
    whole = np.where(e >= -15, SATURATED, round_shift(mp, np.clip(-e, 0, 25)))
    whole = np.where(em == 0xFF, SATURATED, whole)
    whole = np.where((x == 0) | (em == 0), 0, whole)
    negative = (x < 0) != (m_bits >> 31 == 1)
    return np.clip(np.where(negative, -whole, whole) + zero, -128, 127).astype(np.int8)
