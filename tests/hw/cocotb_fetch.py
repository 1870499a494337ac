"""cocotb tests of the instruction fetch (fetch_unit): words come out in order with the DRAM's
contents, each first valid exactly in the cycle the fetch timing of docs/isa.md (instruction
fetch) gives for the dispatches the test makes, and the word past DRAM's end is never fetched."""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer
from tbutil import env_int

WORD_BYTES = 64


@cocotb.test()
async def words_arrive_on_the_fetch_schedule(dut):
    """Random dispatches; arrival a_p = s_p + fb with s_p = max(s_{p-1} + fb, d_{p-F} + 1)."""
    buffer_words, port = env_int("GLC_FETCH_BUFFER_WORDS"), env_int("GLC_FETCH_PORT_BYTES")
    size, base = env_int("GLC_DRAM_BYTES"), 128
    rng = np.random.default_rng(port)
    dram = rng.integers(0, 256, size, dtype=np.uint8)
    words = (size - base) // WORD_BYTES
    fb = -(-WORD_BYTES // port)
    Clock(dut.clk, 10, unit="ns").start()
    dut.base.value = base
    dut.dispatch.value = 0
    dut.rst.value = 1
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    dut.rst.value = 0
    first_valid, dispatched, got = {}, [], []
    # Cycle c runs from the edge that ends c - 1 (cycle 0: the first after reset) to the next:
    # give the fetch port its bytes, then sample the buffer's head and dispatch at random.
    for cycle in range(words * (fb + 3) + 20):
        await Timer(1, unit="ns")
        address = int(dut.fetch_addr.value)
        dut.fetch_rdata.value = int.from_bytes(
            bytes(int(dram[a]) if a < size else 0 for a in range(address, address + port)),
            "little")
        await Timer(1, unit="ns")
        pc, valid = int(dut.pc.value), int(dut.word_valid.value)
        if pc == words:
            assert int(dut.pc_outside.value) and not valid
            break
        assert not int(dut.pc_outside.value)
        take = bool(valid and rng.integers(0, 3))
        if valid:
            first_valid.setdefault(pc, cycle)
        if take:
            got.append(int(dut.word.value))
            dispatched.append(cycle)
        dut.dispatch.value = int(take)
        await RisingEdge(dut.clk)
    # the schedule the rules give for these dispatches
    start = []
    for p in range(len(dispatched)):
        s = start[-1] + fb if p else 0
        if p >= buffer_words:
            s = max(s, dispatched[p - buffer_words] + 1)
        start.append(s)
    assert [first_valid[p] for p in range(len(dispatched))] == \
        [max(s + fb, dispatched[p - 1] + 1 if p else 0) for p, s in enumerate(start)]
    expected = [int.from_bytes(dram[base + WORD_BYTES * p:base + WORD_BYTES * (p + 1)].tobytes(),
                               "little") for p in range(len(got))]
    assert got == expected
    assert len(got) == words
