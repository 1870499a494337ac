"""cocotb tests of the store path's conversion: ReLU, rounding shift, saturation to int8."""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import Timer

EDGES = [-(1 << 31), (1 << 31) - 1, -1, 0, 1, 127, 128, -128, -129, 16, -16, -17, 4095, -4096,
         255, 256, -255, -256, 383, 384, -383, -384]


def reference(x: int, relu: bool, shift: int) -> tuple[int, int]:
    """docs/isa.md: ReLU, then clamp((x + 2^(k-1)) >> k) (k >= 1) or clamp(x) (k = 0), with an
    exact add and a flooring shift (Python's integers and >> are both)."""
    if relu:
        x = max(x, 0)
    rounded = (x + (1 << (shift - 1))) >> shift if shift else x
    return x, max(-128, min(127, rounded))


class TB:
    """Drives the combinational converter: one element in, its raw and int8 forms out."""

    def __init__(self, dut):
        self.dut = dut

    async def convert(self, x: int, relu: bool, shift: int) -> tuple[int, int]:
        self.dut.x.value = x & 0xFFFFFFFF
        self.dut.relu.value = int(relu)
        self.dut.shift.value = shift
        await Timer(1, unit="ns")
        return self.dut.raw.value.to_signed(), self.dut.narrow.value.to_signed()


@cocotb.test()
async def requantize_rounds_half_up_and_saturates(dut):
    """Every edge value and 200 random ones, for every shift, with and without ReLU."""
    tb = TB(dut)
    rng = np.random.default_rng(7)
    values = EDGES + [int(v) for v in rng.integers(-(1 << 31), 1 << 31, 200)]
    for shift in range(32):
        for relu in (False, True):
            for x in values:
                got = await tb.convert(x, relu, shift)
                assert got == reference(x, relu, shift), (x, relu, shift)
