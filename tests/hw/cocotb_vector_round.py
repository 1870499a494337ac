"""cocotb test of VECTOR `lin`'s int8 conversion (hw/vector_round.sv) against
glc/isa/vector_linear.py's to_int8."""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

from glc.isa import vector_linear as vl


@cocotb.test()
async def vector_round_equals_the_model(dut):
    """4000 normalised sums of every magnitude, on rounding ties, past int32, and zero, a new
    one entering each cycle, each read a cycle later (its two stages, ISA revision 3.2)."""
    rng = np.random.default_rng(6)
    size = 4000
    mant = rng.integers(1 << 23, 1 << 24, size)
    exp = rng.integers(-40, 16, size)
    mant[::5] = ((2 * rng.integers(1 << 15, 1 << 16, size) + 1) << 7)[::5]  # ….5 at exp -8
    exp[::5] = -8
    mant[::11], exp[::11] = 0, 0
    neg = rng.random(size) < 0.5
    offset = rng.choice([0, 128, -100, 255, -256], size)
    Clock(dut.clk, 10, unit="ns").start()
    for i in range(size + 1):
        if i < size:
            dut.r_neg.value = int(neg[i])
            dut.r_mant.value = int(mant[i])
            dut.r_exp.value = int(exp[i]) & 0xFFF
            dut.offset.value = int(offset[i]) & 0x1FF
        await Timer(1, unit="ns")
        if i >= 1:
            k = i - 1
            expected = vl.to_int8((neg[k:k + 1], mant[k:k + 1], exp[k:k + 1]), int(offset[k]))[0]
            assert dut.q.value.to_signed() == int(expected), (bool(neg[k]), int(mant[k]),
                                                               int(exp[k]), int(offset[k]))
        await RisingEdge(dut.clk)
