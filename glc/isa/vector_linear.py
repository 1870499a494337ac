"""VECTOR `lin` (docs/isa.md, VECTOR): a linear combination of int8 rows in float32, rounded to
int8, the way onnxruntime's QLinearAdd computes it (``add-linear``, docs/language.md) — computed,
as the RTL does (hw/vector_linear.sv), with integer operations only.

Each lane starts from the float32 constant ``fixed`` and folds the group's rows in order,
``v = fma(s + offset, scale_j, v)``, every fused multiply-add rounded once to float32 (half to
even); the result is ``clamp(rint(v), −128 + offset, 127 + offset) − offset``, where a ``v`` whose
rint leaves int32 reads as INT_MIN (x86's ``cvtps2dq``, which onnxruntime's kernel uses).

Why the integers are exact. A float32 is ``±m · 2^e`` with a 24-bit integer mantissa ``m`` and
``e`` its last bit's exponent (a subnormal: ``m < 2^23``, ``e = −149``). The product of the
integer ``s + offset`` (|·| < 2^9) and a mantissa is exact in 33 bits. The adder puts both terms
into a frame whose last bit is ``G`` bits below the larger exponent: a term within ``G`` bits of
it is shifted up, exactly; a term further down is shifted down and its lost bits are ORed into
the frame's last bit (a sticky bit). Bits are only lost when the exponents lie more than ``G``
apart; the larger term is then normalised (a subnormal has the least exponent, so it never is
the larger one), at least ``2^(e+23)``, the smaller below ``2^(e−G+33)``, so the sum keeps at
least ``2^(e+22)`` and its rounding point lies at least ``G − 2`` bits above the sticky bit:
every rounding decision of the exact sum and of the framed one agree. The sum is then rounded
to 24 bits (normalised upward when shorter). A result below ``2^−126`` is a multiple of
``2^−149`` (both terms are), so it has fewer than 24 bits and is exact, as float32's subnormal
is; the fields are below ``2^64`` (the decoder refuses larger ones), so nothing overflows
float32. ``tests/isa/test_isa_vector_linear.py`` holds this against exact rational arithmetic and
against the interpreter's float64 TwoSum on every pair of int8 operands.
"""

from __future__ import annotations

import numpy as np

from glc.isa.linear import round_shift

GUARD = 26  # frame bits below the larger term's last bit; ≥ 12 suffices, see above
MAX_FIELD = 190  # the largest exponent field of `fixed` and the scales: |value| < 2^64
MANTISSA = 23  # float32 fraction bits
# docs/isa.md, Timing. The RTL's pipeline registers a row's product's operands, forms the product,
# then its rounded sum in three stages (hw/vector_linear.sv), then the int8 in two
# (hw/vector_round.sv: the rounding, then the offset and the saturation); until revision 3.2 the
# operands were not registered and the int8 took one stage: lin's writes, completion and pushes
# come LATENCY cycles after its reads (a fold's 2: glc/isa/vector_fold.py). A group's next row
# needs the sum of the one before, so it is read at least WAYS cycles after it: lin reads its
# outputs in blocks of ⌈WAYS / passes⌉ (a row takes `passes` cycles on a vector unit narrower
# than the array).
LATENCY = 6
WAYS = 3


def block(passes: int) -> int:
    """The outputs of one of lin's blocks: enough rows that a row's next one comes WAYS cycles
    after it, at ``passes`` cycles a row."""
    return -(-WAYS // passes)


def waits(count: int, group: int, passes: int) -> int:
    """The cycles lin's row reads wait: a last block of r outputs short of a whole one waits
    WAYS − r·passes cycles (if positive) before each of its rows after the first."""
    short = count % block(passes)
    return (group - 1) * max(0, WAYS - short * passes) if short else 0


INT_MIN = -(1 << 31)


def takes(bits: int) -> bool:
    """Whether VECTOR ``lin`` takes the float32 ``bits`` as a constant: |value| < 2^64 (its
    exponent field at most MAX_FIELD; no ∞, no NaN)."""
    return (bits >> MANTISSA) & 0xFF <= MAX_FIELD


def unpack(bits) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float32 bit patterns → (negative, mantissa, exponent of its last bit)."""
    bits = np.asarray(bits, dtype=np.int64) & 0xFFFFFFFF
    field = (bits >> MANTISSA) & 0xFF
    mantissa = (bits & ((1 << MANTISSA) - 1)) | ((field != 0).astype(np.int64) << MANTISSA)
    return bits >> 31 == 1, mantissa, np.maximum(field, 1) - 150


def fma(x: np.ndarray, scale: tuple, addend: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x · scale + addend`` rounded once to float32: x integers (|x| < 2^9), scale and addend
    (negative, mantissa, exponent) triples; the result normalised (mantissa ≥ 2^23 unless 0)."""
    scale_negative, scale_mantissa, scale_exponent = scale
    addend_negative, addend_mantissa, addend_exponent = addend
    x = np.asarray(x, dtype=np.int64)
    product = np.abs(x) * scale_mantissa
    negative = (x < 0) != scale_negative
    # A zero term takes the other's exponent, so it cannot push the other out of the frame.
    ep = np.where(product == 0, addend_exponent, scale_exponent)
    ea = np.where(addend_mantissa == 0, ep, addend_exponent)
    low = np.maximum(ep, ea) - GUARD
    p, a = _framed(product, ep - low), _framed(addend_mantissa, ea - low)
    total = np.where(negative, -p, p) + np.where(addend_negative, -a, a)
    return _rounded(total, low)


def to_int8(value: tuple, offset: int) -> np.ndarray:
    """``clamp(rint(v), −128 + offset, 127 + offset) − offset`` for a normalised float32 v; a v
    of 2^31 or more in magnitude converts to INT_MIN."""
    negative, mantissa, exponent = value
    overflow = (exponent >= 31 - MANTISSA) & (mantissa != 0)  # mantissa ≥ 2^23: |v| ≥ 2^31
    large = (exponent >= 16 - MANTISSA) & (mantissa != 0)  # |v| ≥ 2^16: past any clamp bound
    whole = np.where(large, 1 << 16, round_shift(mantissa, np.clip(-exponent, 0, 62)))
    signed = np.where(overflow, INT_MIN, np.where(negative, -whole, whole))
    return (np.clip(signed, -128 + offset, 127 + offset) - offset).astype(np.int8)


def combine(rows: list[np.ndarray], offset: int, fixed: int, scales: list[int]) -> np.ndarray:
    """One VECTOR `lin` output per lane: ``rows[j]`` the group's int8 rows in order, ``fixed``
    and ``scales[j]`` float32 bit patterns."""
    value = unpack(np.broadcast_to(np.int64(fixed), np.shape(rows[0])))
    for row, bits in zip(rows, scales, strict=True):
        value = fma(np.asarray(row, dtype=np.int64) + offset, unpack(bits), value)
    return to_int8(value, offset)


def _framed(value: np.ndarray, up: np.ndarray) -> np.ndarray:
    """``value · 2^up`` in frame units: exact for up ≥ 0 (up ≤ GUARD), else truncated with the
    lost bits ORed into bit 0."""
    down = np.clip(-up, 0, 62)
    kept = value >> down
    lost = (kept << down) != value
    return np.where(up >= 0, value << np.clip(up, 0, GUARD), kept | lost)


def _rounded(total: np.ndarray, low: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The frame's signed sum (last bit at exponent ``low``) rounded half to even to 24 bits."""
    magnitude = np.abs(total)
    msb = np.frexp(magnitude.astype(np.float64))[1] - 1  # may be one high where float64 rounds
    msb = np.where((magnitude >> np.clip(msb, 0, 62)) == 0, msb - 1, msb)
    shift = msb - MANTISSA
    mantissa = np.where(shift > 0, round_shift(magnitude, np.clip(shift, 0, 62)),
                        magnitude << np.clip(-shift, 0, 62))
    carry = mantissa >> (MANTISSA + 1)
    return total < 0, mantissa >> carry, np.where(magnitude == 0, 0, low + shift + carry)

