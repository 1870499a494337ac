"""VECTOR `lin` (docs/isa.md, VECTOR): the integer arithmetic of glc/isa/vector_linear.py (the
RTL's) against exact rational arithmetic rounded to float32, and against the interpreter's
QLinearAdd contract (float64 TwoSum, glc/ir/quantized.py) on every pair of int8 operands; the
encoding rules."""

from fractions import Fraction

import numpy as np
import pytest

from glc.ir.quantized import add_linear, add_linear_constants
from glc.isa import vector_linear as vl
from glc.isa.encoding import Instruction, illegal_reason


def _float32(value: Fraction) -> Fraction:
    """``value`` rounded half to even to float32 (no overflow: |value| < 2^128)."""
    if value == 0:
        return value
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    exponent += 1 if Fraction(2) ** (exponent + 1) <= magnitude else 0
    exponent -= 1 if Fraction(2) ** exponent > magnitude else 0
    step = Fraction(2) ** max(exponent - 23, -149)  # subnormals: the grid of 2^-149
    whole, rest = divmod(magnitude / step, 1)
    whole += rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1)
    return (1 if value > 0 else -1) * whole * step


def _exact(triple) -> list[Fraction]:
    return [(-1 if n else 1) * int(m) * Fraction(2) ** int(e) for n, m, e in zip(*triple,
                                                                                 strict=True)]


def _operands(rng, kind: str, size: int):
    x = rng.integers(-384, 383, size)
    if kind == "layer":
        scale = 2.0 ** rng.uniform(-10, 5, size)
        addend = rng.standard_normal(size) * 2.0 ** rng.uniform(-10, 12, size)
    elif kind == "far apart":
        scale = 2.0 ** rng.uniform(-120, 60, size)
        addend = rng.standard_normal(size) * 2.0 ** rng.uniform(-140, 60, size)
    elif kind == "cancelling":  # the addend within a few ulps of -x·scale
        scale = 2.0 ** rng.uniform(-10, 5, size)
        addend = -x * scale.astype(np.float32) * (1 + rng.integers(-3, 4, size) * 2.0 ** -24)
    else:  # subnormal scales and addends
        scale = rng.integers(1, 1 << 23, size).astype(np.uint32).view(np.float32) * \
            np.where(rng.random(size) < 0.5, 1, 2.0 ** 30)
        addend = rng.integers(0, 1 << 24, size).astype(np.uint32).view(np.float32)
    sign = np.where(rng.random((2, size)) < 0.3, -1, 1)
    return (x, (scale * sign[0]).astype(np.float32).view(np.uint32),
            (addend * sign[1]).astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("kind", ["layer", "far apart", "cancelling", "subnormal"])
def test_the_fma_is_the_exact_sum_rounded_once_to_float32(kind):
    rng = np.random.default_rng(len(kind))
    x, scale, addend = _operands(rng, kind, 4000)
    got = _exact(vl.fma(x, vl.unpack(scale), vl.unpack(addend)))
    floats = [[Fraction(float(v)) for v in bits.view(np.float32)] for bits in (scale, addend)]
    for i in range(x.size):
        assert got[i] == _float32(int(x[i]) * floats[0][i] + floats[1][i]), \
            (int(x[i]), hex(int(scale[i])), hex(int(addend[i])))


def _bits(value) -> int:
    return int(np.float32(value).view(np.uint32))


@pytest.mark.parametrize("scales, offset", [
    ((0.0213, 3, 0.0311, -7, 0.0427, 5), 0),
    ((0.1, 0, 0.2, 12, 0.25, 2), 128),
    ((0.05, -128, 0.05, -128, 0.05, -128), 128),
    ((1.3e-3, 0, 7.7e-3, 2, 3.1e-3, -1), 0),
    ((0.3, 0, 0.3, 0, 1e-3, 0), 0),  # the ratio 300: saturating sums, exact zeros
    ((0.3, 0, 0.3, 0, 1e-8, 0), 0),  # sums past 2^31: INT_MIN, low
])
def test_lin_is_qlinearadd_on_every_pair_of_operands(scales, offset):
    sa, za, sb, zb, sc, zc = scales
    a = np.repeat(np.arange(-128, 128), 256).astype(np.int8)
    b = np.tile(np.arange(-128, 128), 256).astype(np.int8)
    ra, rb, fixed = add_linear_constants(sa, za, sb, zb, sc, zc, offset)
    got = vl.combine([b, a], offset, _bits(fixed), [_bits(rb), _bits(ra)])
    np.testing.assert_array_equal(got, add_linear(a, b, sa, za, sb, zb, sc, zc, offset))


def _lin(**fields) -> Instruction:
    return Instruction.make("vector", op=3, **{"count": 1, "group": 2, **fields})


@pytest.mark.parametrize("fields, reason", [
    ({"group": 3}, "lin folds at most 2 rows"),
    ({"src_acc": 1}, "no src_acc"),
    ({"accumulate": 1}, "no accumulate"),
    ({"fixed": _bits(2.0 ** 64)}, "fixed's magnitude is not below 2^64"),
    ({"scale1": _bits(-np.inf)}, "scale1's magnitude"),
    ({"scale0": 0x7FC00000}, "scale0's magnitude"),  # NaN
])
def test_lin_refuses_what_it_cannot_compute_exactly(fields, reason):
    assert reason in illegal_reason(_lin(**fields), 4)


def test_lin_takes_the_largest_legal_constants_and_the_other_ops_none():
    assert illegal_reason(_lin(fixed=_bits(-(2.0 ** 64) * (1 - 2.0 ** -24)), offset=-256,
                               scale0=_bits(2.0 ** -149), scale1=0x80000000), 4) is None
    for field in ("offset", "fixed", "scale0", "scale1"):
        add = Instruction.make("vector", op=0, count=1, **{field: 1})
        assert "must be 0 without lin" in illegal_reason(add, 4)
