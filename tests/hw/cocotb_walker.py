"""cocotb tests of the DMA address generation (transfer_walker): nested strided loops, beats
of P bytes, padding bounds per run or per element (xrun), rows and columns, against the transfer
pattern's definition (glc/isa/transfer.py)."""

from __future__ import annotations

import math

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer
from tbutil import env_int

from glc.isa.encoding import Instruction, encode
from glc.isa.transfer import element_bytes, expand, pitch

FIELDS = ("beat_addr", "elem_lo", "elem_hi", "row_index", "column", "row_first", "row_last",
          "last")


def element_range(inside: np.ndarray) -> tuple[int, int]:
    """The in-bounds elements of a run as [lo, hi) ((0, 0) when none): always contiguous."""
    where = np.flatnonzero(inside)
    if not where.size:
        return 0, 0
    assert where[-1] - where[0] + 1 == where.size, "in-bounds elements are contiguous"
    return int(where[0]), int(where[-1]) + 1


def expected_beats(instruction: Instruction, port: int) -> list[tuple[int, ...]]:
    """One tuple of FIELDS per beat, from the runs of glc/isa/transfer.py's expand."""
    runs = expand(instruction)
    size = instruction["run"] * pitch(instruction)
    per_run = math.ceil(size / port)
    inner = math.prod(instruction[f"count{k}"] for k in range(instruction["inner"]))
    beats = []
    for i in range(runs.address.size):
        for b in range(per_run):
            last_beat = b == per_run - 1
            beats.append((
                (int(runs.address[i]) + b * port) % (1 << 32), *element_range(runs.inside[i]),
                int(runs.row[i]), int(runs.column[i]),
                i % inner == 0 and b == 0, i % inner == inner - 1 and last_beat,
                i == runs.address.size - 1 and last_beat,
            ))
    return beats


class TB:
    """Clock and reset of the walker, and a driver that runs one instruction through it."""

    def __init__(self, dut):
        self.dut = dut
        Clock(dut.clk, 10, unit="ns").start()

    async def reset(self):
        self.dut.start.value = 0
        self.dut.rst.value = 1
        await RisingEdge(self.dut.clk)
        await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0

    async def walk(self, instruction: Instruction) -> list[tuple]:
        """Start the walker on `instruction` and record every beat until it goes idle."""
        dut = self.dut
        await RisingEdge(dut.clk)
        dut.word.value = encode(instruction)
        dut.wide.value = int(element_bytes(instruction) == 4)
        dut.start.value = 1
        await RisingEdge(dut.clk)
        dut.start.value = 0
        beats = []
        await Timer(1, unit="ns")
        while int(dut.active.value):
            beats.append(tuple(int(getattr(dut, name).value) for name in FIELDS))
            await RisingEdge(dut.clk)
            await Timer(1, unit="ns")
        # An empty range is any lo >= hi (elements 2^step apart can all miss a short row: the
        # walker does not compare the two, the units read it as empty): shown as (0, 0).
        return [(b[0], *(b[1:3] if b[1] < b[2] else (0, 0)), *b[3:5], bool(b[5]), bool(b[6]),
                 bool(b[7])) for b in beats]


@cocotb.test()
async def padding_runs_are_out_of_bounds(dut):
    """A 1-D row with one pad element each side: x = -1 … 4 against xlim = 4."""
    tb = TB(dut)
    await tb.reset()
    load = Instruction.make("load", run=1, dram=100, count0=6, stride0=1, xcoef0=1, x0=-1,
                            xlim=4, inner=1)
    beats = await tb.walk(load)
    assert [b[1:3] for b in beats] == [(0, 0), (0, 1), (0, 1), (0, 1), (0, 1), (0, 0)]
    assert [b[0] for b in beats] == [100 + i for i in range(6)]
    assert [b[4] for b in beats] == list(range(6))  # one row, runs side by side
    assert beats[-1][6] and beats[-1][7]


@cocotb.test()
async def xrun_bounds_each_element(dut):
    """Runs of 4 elements from x = -2 in steps of 3 against xlim = 5 (ISA v2 A1, xrun)."""
    tb = TB(dut)
    await tb.reset()
    load = Instruction.make("load", run=4, dram=1000, count0=3, stride0=3, xcoef0=3, x0=-2,
                            xlim=5, xrun=1, inner=1)
    beats = await tb.walk(load)
    # x of the runs: -2 (elements at -2 … 1), 1 (1 … 4), 4 (4 … 7)
    assert [b[1:3] for b in beats] == [(2, 4), (0, 4), (0, 1)]


@cocotb.test()
async def strided_runs_bound_every_other_element(dut):
    """Runs of 4 elements 2 bytes apart (`step` 1) from x = -3 in steps of 8 against xlim = 9:
    x of the elements -3 … 3, 5 … 11, 13 … 19 (ISA 2.4); each run spans 8 bytes."""
    tb = TB(dut)
    await tb.reset()
    port = env_int("GLC_PORT_BYTES")
    load = Instruction.make("load", run=4, step=1, dram=500, count0=3, stride0=8, xcoef0=8,
                            x0=-3, xlim=9, xrun=1, inner=1)
    beats = await tb.walk(load)
    assert len(beats) == 3 * math.ceil(8 / port)
    runs = [b[1:3] for b in beats[::math.ceil(8 / port)]]
    assert runs == [(2, 4), (0, 2), (0, 0)]
    assert beats == expected_beats(load, port)


@cocotb.test()
async def nested_strided_loops_match_the_transfer_pattern(dut):
    """Random legal LOADs/STOREs: levels, negative strides, 2-D bounds, int32 elements."""
    tb = TB(dut)
    await tb.reset()
    port = env_int("GLC_PORT_BYTES")
    n = 16
    rng = np.random.default_rng(port)
    for _ in range(12):
        inner = int(rng.integers(0, 3))
        counts = [int(c) for c in rng.integers(1, 4, 4)]
        wide = bool(rng.integers(0, 2))
        per_row = math.prod(counts[:inner])
        run = int(rng.integers(1, n // per_row + 1))
        fields = {"inner": inner, "run": run, "dram": int(rng.integers(0, 1 << 32)),
                  "xrun": int(rng.integers(0, 2)),
                  "y0": int(rng.integers(-2, 2)), "x0": int(rng.integers(-2, 2)),
                  "ylim": int(rng.integers(0, 4)), "xlim": int(rng.integers(0, 4))}
        for k in range(4):
            fields |= {f"count{k}": counts[k], f"stride{k}": int(rng.integers(-5000, 5000)),
                       f"ycoef{k}": int(rng.integers(-2, 3)), f"xcoef{k}": int(rng.integers(-2, 3))}
        name = "store" if rng.integers(0, 2) else "load"
        wide_field = {"raw": int(wide)} if name == "store" else {"acc": int(wide)}
        if name == "load" and not wide:  # a strided run (ISA 2.4) reads the scratchpad's bytes
            wide_field["step"] = int(rng.integers(0, 3))
        instruction = Instruction.make(name, **fields, **wide_field)
        assert await tb.walk(instruction) == expected_beats(instruction, port), instruction
