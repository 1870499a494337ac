"""cocotb tests of the systolic array: back-to-back matmuls through the shadow weights, and with
SPLIT rows that use the array as two halves (docs/isa.md, MATMUL `split`)."""

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
        self.split = env_int("GLC_SPLIT")
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
        self.dut.in_split.value = 0
        self.dut.in_data.value = 0
        self.dut.in_tag.value = 0
        self.dut.w_we.value = 0
        self.dut.w_row.value = 0
        self.dut.w_data.value = 0


def expected_rows(x: np.ndarray, w: np.ndarray, split: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(out_data, out_upper) of each row of ``x`` against ``w``: x·W, or for a split row the lower
    half's x[:H]·W[H:] and the upper half's x[:H]·W[:H] (out_upper is not checked for whole
    rows: zero here)."""
    whole = x @ w
    if not split.any():  # N may be odd: no halves
        return whole, np.zeros_like(whole)
    h = len(w) // 2
    lower, upper = x[:, :h] @ w[h:], x[:, :h] @ w[:h]
    return (np.where(split[:, None], lower, whole),
            np.where(split[:, None], upper, np.zeros_like(upper)))


def schedule(n: int, weights: list[np.ndarray], inputs: list[np.ndarray],
             splits: list[np.ndarray]) -> list[dict]:
    """Per-cycle port values streaming each input block against its weight tile, as early as
    ISA revision 2.6 allows: a tile's writes (row r in its r-th cycle, one tile at a time) begin
    the cycle after the previous tile's first row entered, and its first row enters the cycle
    after its writes began (the writes and the swap travel the array in step)."""
    cycles: list[dict] = []

    def at(t: int) -> dict:
        while len(cycles) <= t:
            cycles.append({})
        return cycles[t]

    writes, start = 0, 1
    for j, x in enumerate(inputs):
        for r in range(n):
            at(writes + r)["w"] = (r, weights[j][r])
        for i, row in enumerate(x):
            at(start + i)["x"] = (row, i == 0, bool(splits[j][i]), (start + i) % 256)
        if j + 1 < len(inputs):
            writes = max(writes + n, start + 1)
            start = max(start + len(x), writes + 1)
    return cycles


@cocotb.test()
async def matmuls_stream_back_to_back(dut):
    """Four matmuls with different weight tiles, each swapping them in one cycle after their
    writes began (two of them shorter than N rows), match numpy; with SPLIT, random rows enter
    split, the rest whole, and the swapping first rows alternate between the two."""
    tb = TB(dut)
    n = tb.n
    rng = np.random.default_rng(n)
    weights = [rng.integers(-128, 128, (n, n)) for _ in range(4)]
    inputs = [rng.integers(-128, 128, (m, n)) for m in (n, n + 3, 2, n // 2 + 1)]
    splits = [rng.random(len(x)) < (0.5 if tb.split else 0) for x in inputs]
    for j, split in enumerate(splits):
        split[0] = tb.split and j % 2 == 0
    await tb.reset()
    outputs, uppers = [], []
    tags_in, tags_out = [], []
    first_in = None
    first_out = None
    cycles = schedule(n, weights, inputs, splits)
    for t in range(len(cycles) + 4 * n):
        step = cycles[t] if t < len(cycles) else {}
        tb.idle()
        if "w" in step:
            row, data = step["w"]
            dut.w_we.value = 1
            dut.w_row.value = row
            dut.w_data.value = pack(data, 8)
        if "x" in step:
            data, swap, split, tag = step["x"]
            dut.in_valid.value = 1
            dut.in_swap.value = int(swap)
            dut.in_split.value = int(split)
            dut.in_data.value = pack(data, 8)
            dut.in_tag.value = tag
            tags_in.append(tag)
            first_in = t if first_in is None else first_in
        await RisingEdge(dut.clk)
        if int(dut.out_valid.value):
            first_out = t if first_out is None else first_out
            outputs.append(unpack(int(dut.out_data.value), 32, n))
            uppers.append(unpack(int(dut.out_upper.value), 32, n))
            tags_out.append(int(dut.out_tag.value))
    rows = [expected_rows(x, w, s) for x, w, s in zip(inputs, weights, splits, strict=True)]
    expected = np.concatenate([data for data, _ in rows])
    expected_upper = np.concatenate([upper for _, upper in rows])
    split = np.concatenate(splits)
    assert first_out - first_in == 2 * n - 1, "result rows leave 2N-1 cycles after the input"
    assert len(outputs) == len(expected)
    assert 0 < split.sum() < len(split) if tb.split else not split.any()
    np.testing.assert_array_equal(np.array(outputs), expected)
    np.testing.assert_array_equal(np.array(uppers)[split], expected_upper[split])
    assert tags_out == tags_in, "each row leaves with the tag it entered with"
