"""LOAD and STORE transfer patterns on the simulator against a naive loop-by-loop reading of
docs/isa.md ("the transfer pattern"), on random patterns."""

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from glc.hwconfig import load_config
from glc.isa import simulator
from glc.isa.encoding import Instruction, encode
from glc.isa.status import ErrorCode, MachineError

N4 = load_config("n4")
N = N4.array_size
CODE_AT = N4.dram_bytes - 4096  # the programs' images go here, above every pattern's data


@st.composite
def patterns(draw):
    counts = [draw(st.integers(1, 4)) for _ in range(4)]
    inner = draw(st.integers(0, 4))
    per_row = math.prod(counts[:inner])
    if per_row > N:
        inner, per_row = 0, 1
    fields = {"inner": inner, "run": draw(st.integers(1, N // per_row)),
              "dram": draw(st.integers(0, 600)), "y0": draw(st.integers(-3, 3)),
              "x0": draw(st.integers(-3, 3)), "ylim": draw(st.integers(0, 5)),
              "xlim": draw(st.integers(0, 5)), "row": draw(st.integers(0, 8)),
              "xrun": draw(st.integers(0, 1))}
    for k in range(4):
        fields |= {f"count{k}": counts[k], f"stride{k}": draw(st.integers(-40, 120)),
                   f"ycoef{k}": draw(st.integers(-2, 2)), f"xcoef{k}": draw(st.integers(-2, 2))}
    return fields


def _runs(f):
    """Each run as (local row, column, address, in bounds per element), in loop order (level 3
    outermost); with `xrun` element e of a run has x + e."""
    counts = [f[f"count{k}"] for k in range(4)]
    inner = f["inner"]
    for index in itertools.product(*(range(c) for c in reversed(counts))):
        i = list(reversed(index))  # i[k] is level k's index
        address = (f["dram"] + sum(i[k] * f[f"stride{k}"] for k in range(4))) % (1 << 32)
        y = f["y0"] + sum(i[k] * f[f"ycoef{k}"] for k in range(4))
        x = f["x0"] + sum(i[k] * f[f"xcoef{k}"] for k in range(4))
        inside = [(not f["ylim"] or 0 <= y < f["ylim"])
                  and (not f["xlim"] or 0 <= x + e * f["xrun"] < f["xlim"])
                  for e in range(f["run"])]
        row, scale = 0, 1
        for k in range(inner, 4):
            row, scale = row + i[k] * scale, scale * counts[k]
        slot, scale = 0, 1
        for k in range(inner):
            slot, scale = slot + i[k] * scale, scale * counts[k]
        yield f["row"] + row, slot * f["run"], address, inside


def _dram_fault(runs, size):
    return any(inside and address + (e + 1) * size > N4.dram_bytes
               for _, _, address, elements in runs for e, inside in enumerate(elements))


def _expect_error(words, dram, *codes):
    """The program stops with one of `codes` (which one, when several faults, is unspecified)."""
    try:
        simulator.run(words, N4, dram, base=CODE_AT)
    except MachineError as error:
        assert error.code in codes
        return
    raise AssertionError(f"expected {codes}")


@settings(max_examples=200, deadline=None)
@given(patterns(), st.booleans(), st.booleans(), st.integers(-128, 127), st.integers(0, 2**32 - 1))
def test_load_places_every_run_like_the_loops_say(fields, to_acc, transpose, pad, seed):
    dram = np.random.default_rng(seed).integers(0, 256, N4.dram_bytes, dtype=np.uint8)
    dram[CODE_AT:] = 0
    size = 4 if to_acc else 1
    transpose = transpose and not to_acc
    # First fill rows 0 … 15 with nonzero data, so the pattern's zeros (row tails) and pads
    # must really be written.
    fill = Instruction.make("load", acc=int(to_acc), dram=30000, run=N, count0=16,
                            stride0=N * size)
    load = Instruction.make("load", acc=int(to_acc), transpose=int(transpose), pad=pad, **fields)
    words = [encode(fill), encode(load), encode(Instruction.make("halt"))]
    runs = list(_runs(fields))
    local_rows = math.prod(fields[f"count{k}"] for k in range(fields["inner"], 4))
    written = -(-local_rows // N) * N if transpose else local_rows
    rows = N4.accumulator_rows if to_acc else N4.scratchpad_rows
    row_fault = fields["row"] + written > rows
    dram_fault = _dram_fault(runs, size)
    if row_fault or dram_fault:
        local = ErrorCode.ACC_RANGE if to_acc else ErrorCode.SP_RANGE
        _expect_error(words, dram, *([local] * row_fault + [ErrorCode.DRAM_RANGE] * dram_fault))
        return
    memory = np.zeros((N4.accumulator_rows if to_acc else N4.scratchpad_rows, N), np.int64)
    filled = dram[30000:30000 + 16 * N * size].view("<i4" if to_acc else np.int8)
    memory[:16] = filled.reshape(16, N)
    block = np.zeros((written, N), np.int64)
    for row, column, address, elements in runs:
        for e, inside in enumerate(elements):
            raw = bytes(dram[address + e * size:address + (e + 1) * size]) if inside else b""
            value = int.from_bytes(raw, "little", signed=True) if inside else pad
            block[row - fields["row"], column + e] = value
    if transpose:  # each N-row block written transposed
        for b in range(0, written, N):
            block[b:b + N] = block[b:b + N].T.copy()
    memory[fields["row"]:fields["row"] + written] = block
    result = simulator.run(words, N4, dram, base=CODE_AT)
    got = result.accumulator if to_acc else result.scratchpad
    np.testing.assert_array_equal(got, memory)


@settings(max_examples=150, deadline=None)
@given(patterns(), st.booleans(), st.booleans(), st.integers(0, 31), st.integers(0, 2**32 - 1))
def test_store_writes_every_run_like_the_loops_say(fields, raw, relu, shift, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(-(1 << 31), 1 << 31, (16, N), dtype=np.int64)
    dram = np.zeros(N4.dram_bytes, dtype=np.uint8)
    dram[60000:60000 + values.size * 4] = values.astype("<i4").view(np.uint8).ravel()
    shift = 0 if raw else shift
    words = [encode(Instruction.make("load", acc=1, dram=60000, run=N, count0=16, stride0=4 * N,
                                     push_next=1)),
             encode(Instruction.make("sync", unit=1, pop_prev=1, push_next=1)),
             encode(Instruction.make("store", raw=int(raw), relu=int(relu), shift=shift,
                                     pop_prev=1, **fields)),
             encode(Instruction.make("halt"))]
    size = 4 if raw else 1
    runs = list(_runs(fields))
    row_fault = any(row >= N4.accumulator_rows for row, _, _, _ in runs)
    dram_fault = _dram_fault(runs, size)
    if row_fault or dram_fault:
        _expect_error(words, dram, *([ErrorCode.ACC_RANGE] * row_fault
                                     + [ErrorCode.DRAM_RANGE] * dram_fault))
        return
    accumulator = np.zeros((N4.accumulator_rows, N), dtype=np.int64)
    accumulator[:16] = values
    expected = dram.copy()
    for row, column, address, elements in runs:
        for e, inside in enumerate(elements):
            x = int(accumulator[row, column + e])
            x = max(x, 0) if relu else x
            if not raw:
                x = min(127, max(-128, (x + (1 << (shift - 1))) >> shift if shift else x))
            if inside:
                at = address + e * size
                expected[at:at + size] = list(x.to_bytes(size, "little", signed=True))
    result = simulator.run(words, N4, dram, base=CODE_AT)
    np.testing.assert_array_equal(result.dram[:CODE_AT], expected[:CODE_AT])
