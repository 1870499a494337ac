"""cocotb tests of the systolic array: back-to-back matmuls through the shadow weights."""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge
from tbutil import env_int, pack, unpack


class TB:
    """Clock, reset and the array's three port groups (input rows, weight rows, output rows)."""

    def __init__(self, dut):
        self.dut = dut
        self.n = env_int("GLC_N")
        cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())

    async def reset(self):
        self.idle()
        self.dut.rst.value = 1
        for _ in range(2):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0

    def idle(self):
        self.dut.in_valid.value = 0
        self.dut.in_swap.value = 0
        self.dut.in_data.value = 0
        self.dut.in_tag.value = 0
        self.dut.w_we.value = 0
        self.dut.w_row.value = 0
        self.dut.w_data.value = 0


def schedule(n: int, weights: list[np.ndarray], inputs: list[np.ndarray]) -> list[dict]:
    """Per-cycle port values streaming each input block against its weight tile back to back.

    Tile j+1's rows go into the shadow registers from N cycles after tile j's first row entered
    (the earliest moment the swap wave has left every row), never before tile j's swap.
    """
    cycles: list[dict] = []
    start = n  # tile 0 preloads in cycles 0..n-1
    for r in range(n):
        cycles.append({"w": (r, weights[0][r])})
    for j, x in enumerate(inputs):
        for i, row in enumerate(x):
            while len(cycles) <= start + i:
                cycles.append({})
            cycles[start + i]["x"] = (row, i == 0, (start + i) % 256)
        if j + 1 < len(inputs):
            for r in range(n):
                at = start + n + r
                while len(cycles) <= at:
                    cycles.append({})
                cycles[at]["w"] = (r, weights[j + 1][r])
        start += max(len(x), 2 * n)
    return cycles


@cocotb.test()
async def matmuls_stream_back_to_back(dut):
    """Three matmuls with different weight tiles match numpy, with no gap between them."""
    tb = TB(dut)
    n = tb.n
    rng = np.random.default_rng(n)
    weights = [rng.integers(-128, 128, (n, n)) for _ in range(3)]
    inputs = [rng.integers(-128, 128, (m, n)) for m in (2 * n, 2 * n + 3, 2 * n)]
    await tb.reset()
    outputs = []
    tags_in, tags_out = [], []
    first_in = None
    first_out = None
    cycles = schedule(n, weights, inputs)
    for t in range(len(cycles) + 4 * n):
        step = cycles[t] if t < len(cycles) else {}
        tb.idle()
        if "w" in step:
            row, data = step["w"]
            dut.w_we.value = 1
            dut.w_row.value = row
            dut.w_data.value = pack(data, 8)
        if "x" in step:
            data, swap, tag = step["x"]
            dut.in_valid.value = 1
            dut.in_swap.value = int(swap)
            dut.in_data.value = pack(data, 8)
            dut.in_tag.value = tag
            tags_in.append(tag)
            first_in = t if first_in is None else first_in
        await RisingEdge(dut.clk)
        if int(dut.out_valid.value):
            first_out = t if first_out is None else first_out
            outputs.append(unpack(int(dut.out_data.value), 32, n))
            tags_out.append(int(dut.out_tag.value))
    expected = np.concatenate([x @ w for x, w in zip(inputs, weights, strict=True)])
    assert first_out - first_in == 2 * n - 1, "result rows leave 2N-1 cycles after the input"
    assert len(outputs) == len(expected)
    np.testing.assert_array_equal(np.array(outputs), expected)
    assert tags_out == tags_in, "each row leaves with the tag it entered with"
