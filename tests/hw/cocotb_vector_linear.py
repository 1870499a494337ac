"""cocotb test of VECTOR `lin`'s rounded sum (hw/vector_linear.sv), the fused multiply-add's
three-stage second half, against glc/isa/vector_linear.py, which tests/isa/test_isa_vector_linear.py
holds against exact rational arithmetic."""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

from glc.isa import vector_linear as vl


def _floats(rng: np.random.Generator, size: int) -> np.ndarray:
    """float32 bit patterns, exponent field ≤ 190: a layer's range, every legal exponent,
    subnormals and zero, either sign."""
    bits = rng.integers(0, 1 << 32, size, dtype=np.uint64).astype(np.int64)
    field = rng.choice([0, *range(1, vl.MAX_FIELD + 1)], size)
    near = rng.integers(110, 140, size)
    field = np.where(rng.random(size) < 0.5, near, field)
    bits = (bits & 0x807FFFFF) | (field << 23)
    bits[::17] &= 0x80000000  # ±0
    return bits


def _cases(rng: np.random.Generator, size: int):
    x = rng.integers(-384, 383, size)
    scale = _floats(rng, size)
    addend = vl.unpack(_floats(rng, size))
    # Half the addends are an earlier step's normalised result, some cancelling the product.
    earlier = vl.fma(rng.integers(-384, 383, size), vl.unpack(_floats(rng, size)), addend)
    cancel = vl.fma(-x, vl.unpack(scale), vl.unpack(rng.integers(0, 1 << 20, size)))
    pick = rng.integers(0, 3, size)
    addend = tuple(np.choose(pick, parts) for parts in zip(addend, earlier, cancel,
                                                          strict=True))
    return x, scale, addend, rng.integers(-256, 256, size)


def _product(x: np.ndarray, scale: np.ndarray):
    """Stage 1 (hw/vector_unit.sv): the exact product's sign, magnitude and exponent."""
    negative, mantissa, exponent = vl.unpack(scale)
    return (x < 0) != negative, np.abs(x) * mantissa, exponent


@cocotb.test()
async def vector_linear_equals_the_model(dut):
    """4000 sums, a new one entering each cycle, each read two cycles later: the rounded sum, and
    its exponent's differences from a next row's product exponent (any legal scale's)."""
    rng = np.random.default_rng(5)
    x, scale, (neg, mant, exp), _ = _cases(rng, 4000)
    r_neg, r_mant, r_exp = vl.fma(x, vl.unpack(scale), (neg, mant, exp))
    p_neg, product, p_exp = _product(x, scale)
    next_exp = vl.unpack(_floats(rng, x.size))[2]
    Clock(dut.clk, 10, unit="ns").start()
    for i in range(x.size + 2):
        if i < x.size:
            dut.p_neg.value = int(p_neg[i])
            dut.product.value = int(product[i])
            dut.p_exp.value = int(p_exp[i]) & 0xFFF
            dut.p_zero.value = int(product[i] == 0)
            dut.a_neg.value = int(neg[i])
            dut.a_mant.value = int(mant[i])
            dut.a_exp.value = int(exp[i]) & 0xFFF
            dut.a_zero.value = int(mant[i] == 0)
            dut.a_over.value = int(exp[i] - p_exp[i]) & 0x1FFF
            dut.a_under.value = int(p_exp[i] - exp[i]) & 0x1FFF
            dut.next_exp.value = int(next_exp[i]) & 0xFFF
        await Timer(1, unit="ns")
        if i >= 2:
            k = i - 2
            case = (int(x[k]), hex(int(scale[k])), int(neg[k]), int(mant[k]), int(exp[k]))
            assert (int(dut.r_neg.value), int(dut.r_mant.value), dut.r_exp.value.to_signed(),
                    int(dut.r_zero.value)) == \
                (int(r_neg[k]), int(r_mant[k]), int(r_exp[k]), int(r_mant[k] == 0)), case
            if r_mant[k] != 0:
                assert (dut.r_over.value.to_signed(), dut.r_under.value.to_signed()) == \
                    (int(r_exp[k] - next_exp[k]), int(next_exp[k] - r_exp[k])), case
        await RisingEdge(dut.clk)
