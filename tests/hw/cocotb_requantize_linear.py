"""cocotb test of the STORE's `linear` conversion: ONNX's requantization in integer logic against
numpy's float32 (the interpreter's contract), bit for bit."""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import Timer

from glc.isa.cases import SPECIAL_MULTIPLIERS, linear_reference


def _batch(rng: np.random.Generator, size: int):
    """Accumulators of every magnitude, near 2^24 and at the extremes; multipliers from a layer's
    range, powers of two (with their rounding ties) and the special ones."""
    x = rng.integers(-(1 << 31), 1 << 31, size, dtype=np.int64) >> rng.integers(0, 32, size)
    m = (2.0 ** rng.uniform(-30, 4, size)).astype(np.float32).view(np.uint32)
    quarter = size // 4
    e = rng.integers(1, 24, quarter)
    m[:quarter] = ((127 - e) << 23).astype(np.uint32)
    x[:quarter] = (2 * rng.integers(-300, 300, quarter) + 1) << (e - 1)  # x · 2^-e ends in .5
    x[quarter:2 * quarter] = (1 << 24) + rng.integers(-40, 40, quarter) * \
        rng.choice([1, -1], quarter) * rng.choice([1, 2, 8], quarter)
    specials = np.array(SPECIAL_MULTIPLIERS, dtype=np.uint32)
    m[-3 * specials.size:] = np.tile(specials, 3)
    x[-4:] = [-(1 << 31), (1 << 31) - 1, 0, -1]
    return x.astype(np.int32), m, rng.integers(-128, 128, size)


@cocotb.test()
async def requantize_linear_equals_float32(dut):
    """A batch of 3000 (x, m, zero) triples, each converted combinationally."""
    rng = np.random.default_rng(11)
    x, m, zero = _batch(rng, 3000)
    for i in range(x.size):
        dut.x.value = int(x[i]) & 0xFFFFFFFF
        dut.m.value = int(m[i])
        dut.zero.value = int(zero[i]) & 0xFF
        await Timer(1, unit="ns")
        expected = int(linear_reference(x[i:i + 1], m[i:i + 1], int(zero[i]))[0])
        assert dut.q.value.to_signed() == expected, (int(x[i]), hex(int(m[i])), int(zero[i]))
