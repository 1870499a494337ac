"""STORE `linear`, ONNX's requantization (docs/isa.md, "Conversion in STORE"): the integer
arithmetic of glc/isa/linear.py (the RTL's) against numpy's float32 (the interpreter's contract,
glc/ir/quantized.py) on millions of values, the special multipliers, the encoding rules and the
extra set-up cycle."""

import numpy as np
import pytest

from glc.hwconfig import load_config
from glc.ir.quantized import requantize_linear as float_contract
from glc.isa import simulator
from glc.isa.asm import assemble
from glc.isa.encoding import Instruction, decode, encode, illegal_reason
from glc.isa.linear import requantize_linear
from glc.isa.status import ErrorCode, MachineError

CHUNK = 1 << 18


def _values(rng, kind: str, size: int) -> np.ndarray:
    """int32 accumulators of one kind: every magnitude, near 2^24 (float32(x) ties), extremes."""
    x = rng.integers(-(1 << 31), 1 << 31, size, dtype=np.int64)
    if kind == "magnitudes":
        x >>= rng.integers(0, 32, size)
    elif kind == "boundary":
        x = np.sign(x) * ((1 << rng.integers(23, 31, size)) + rng.integers(-300, 300, size))
    elif kind == "extremes":
        x = rng.choice([-(1 << 31), (1 << 31) - 1, -1, 0, 1, (1 << 24) + 1, (1 << 24) + 3], size)
    return x.astype(np.int32)


def _multipliers(rng, kind: str, size: int) -> np.ndarray:
    """float32 multipliers: a quantized layer's range, every normal exponent, powers of two."""
    if kind == "layer":
        return (2.0 ** rng.uniform(-30, 4, size)).astype(np.float32)
    if kind == "exponents":
        bits = rng.integers(0, 1 << 32, size, dtype=np.uint64).astype(np.uint32)
        exponent = rng.integers(1, 255, size).astype(np.uint32)
        return ((bits & np.uint32(0x807FFFFF)) | (exponent << np.uint32(23))).view(np.float32)
    return np.ldexp(np.float32(1), rng.integers(-40, 8, size)).astype(np.float32)


@pytest.mark.parametrize("values", ["uniform", "magnitudes", "boundary", "extremes"])
@pytest.mark.parametrize("scales", ["layer", "exponents", "powers"])
def test_integer_requantization_equals_float32(values, scales):
    rng = np.random.default_rng(hash((values, scales)) % (1 << 32))
    for _ in range(2):
        x, m = _values(rng, values, CHUNK), _multipliers(rng, scales, CHUNK)
        zero = int(rng.integers(-128, 128))
        np.testing.assert_array_equal(requantize_linear(x, m.view(np.uint32), zero),
                                      float_contract(x, m, zero))


def test_rounding_ties_go_to_even():
    # x · 2^-e = k + 0.5 exactly: rint picks the even neighbour, both signs.
    rng = np.random.default_rng(5)
    e = rng.integers(1, 20, CHUNK)
    x = ((2 * rng.integers(-200, 200, CHUNK) + 1) << (e - 1)).astype(np.int32)
    m = np.ldexp(np.float32(1), -e).astype(np.float32)
    got = requantize_linear(x, m.view(np.uint32), 0)
    np.testing.assert_array_equal(got, float_contract(x, m, 0))
    assert set(np.abs(x.astype(np.int64) * 2 >> e) % 2) == {1}  # they are ties
    assert (got.astype(np.int64) % 2 == 0)[np.abs(got) < 127].all()


def test_float32_conversion_ties_above_2_to_the_24():
    # 2^24 + 1 and 2^24 + 3 are ties of float32(x): to even, 2^24 and 2^24 + 4; times 2^-17 the
    # results 128 and 128.03125 differ only through that rounding (zero point -1 keeps them apart).
    x = np.array([(1 << 24) + 1, (1 << 24) + 3, -(1 << 24) - 1], dtype=np.int32)
    m = np.full(3, 2.0 ** -17, np.float32)
    np.testing.assert_array_equal(requantize_linear(x, m.view(np.uint32), -1), [127, 127, -128])
    m = np.full(3, 2.0 ** -19 * 3, np.float32)  # 48 + ..: 2^24·3/2^19 = 96
    np.testing.assert_array_equal(requantize_linear(x, m.view(np.uint32), 0),
                                  float_contract(x, m, 0))


def test_special_multipliers():
    bits = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x807FFFFF, 0, 0x80000000,
                     0x7F7FFFFF, 0x00800000], dtype=np.uint32)
    x = np.array([5, 5, -5, (1 << 31) - 1, -(1 << 31), 7, 7, -1, (1 << 31) - 1], np.int32)
    # ∞ and NaN saturate by sign; subnormal and zero multipliers give the zero point; the
    # largest float32 overflows to ∞ (saturates); the smallest normal gives 0.
    np.testing.assert_array_equal(requantize_linear(x, bits, 3), [127, -128, -128, 3, 3, 3, 3,
                                                                  -128, 3])
    np.testing.assert_array_equal(requantize_linear(np.zeros(9, np.int32), bits, 3), [3] * 9)


def test_interpreter_saturates_products_beyond_int64():
    # float32(2^31 - 1) · 2^40 once converted to int64 wrapped to -2^63 and clamped to -128.
    x = np.array([(1 << 31) - 1, -(1 << 31)], dtype=np.int32)
    m = np.full(2, 2.0 ** 40, np.float32)
    np.testing.assert_array_equal(float_contract(x, m, 0), [127, -128])


def _store(**fields) -> Instruction:
    return Instruction.make("store", run=4, **fields)


@pytest.mark.parametrize(("fields", "reason"), [
    (dict(linear=1, raw=1), "raw and shift must be 0"),
    (dict(linear=1, shift=3), "raw and shift must be 0"),
    (dict(zero=-3), "without linear"),
    (dict(qrow=2), "without linear"),
    (dict(qrows=1), "qrows needs linear or bias"),
    (dict(brow=5), "brow must be 0 without bias"),
])
def test_linear_field_rules(fields, reason):
    assert reason in illegal_reason(_store(**fields), 4)


@pytest.mark.parametrize("fields", [dict(bias=1, brow=5), dict(bias=1, qrows=1, raw=1),
                                    dict(linear=1, bias=1, qrows=1, qrow=1, brow=2)])
def test_bias_fields_are_legal_with_any_conversion(fields):
    assert illegal_reason(_store(**fields), 4) is None


def test_linear_fields_round_trip():
    instruction = _store(linear=1, zero=-128, qrow=65535, relu=1)
    assert decode(encode(instruction)) == instruction
    assert illegal_reason(instruction, 4) is None


def test_linear_store_takes_one_more_setup_cycle():
    hw = load_config("n4")
    text = "store {}row=0, dram=0, run=4, count0=3, stride0=4\nhalt\n"
    plain, linear = (simulator.run(assemble(text.format(extra), hw).words, hw).counters
                     for extra in ("", "linear, qrow=5, "))
    # two set-up cycles (revision 3.1: the registered read of the first row), 3 beats, and
    # the multipliers' row
    assert linear.busy_store == plain.busy_store + 1 == 2 + 3 + 1
    assert linear.cycles == plain.cycles + 1


def test_multiplier_row_outside_the_accumulator_is_acc_range():
    hw = load_config("n4")
    program = assemble(f"store linear, qrow={hw.accumulator_rows}, row=0, dram=0, run=4\nhalt\n",
                       hw)
    with pytest.raises(MachineError) as caught:
        simulator.run(program.words, hw)
    assert (caught.value.code, caught.value.pc) == (ErrorCode.ACC_RANGE, 0)
