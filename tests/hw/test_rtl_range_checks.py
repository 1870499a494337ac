"""The issue-time range checks at their edges on the RTL at N = 4, against the ISA simulator.

The RTL no longer multiplies at issue: row_factors and transfer_rows count a LOAD/STORE's local
rows (and a VECTOR's last source row) as the word arrives and is queued, saturating at 2^17 - 1,
and the decoder checks runs per row on clamped factors. These programs sit on each edge: rows
that end exactly at the memory's size or one past it, a transposing LOAD rounded up to whole
blocks, products far beyond 2^17 (where only the saturation keeps the answer), a `linear`
STORE's multipliers' row, a split MATMUL's lower half's rows (acc2), and runs per row at N
and N + 1."""

import numpy as np
import pytest

from glc.hwconfig import load_config
from glc.isa import simulator
from glc.isa.encoding import Instruction, encode
from glc.isa.status import ErrorCode, MachineError
from glc.sim.run import run_program

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent

N4 = load_config("n4")
N = N4.array_size
SP, ACC = N4.scratchpad_rows, N4.accumulator_rows
BIG = 65535  # the largest count or stride


def _load(**fields: int) -> Instruction:
    return Instruction.make("load", **({"run": 1} | fields))


def _store(**fields: int) -> Instruction:
    return Instruction.make("store", **({"run": 1} | fields))


def _vector(**fields: int) -> Instruction:
    return Instruction.make("vector", **fields)


def _split(**fields: int) -> Instruction:
    return Instruction.make("matmul", **({"split": 1, "rows": 3} | fields))


# name -> (instructions before HALT, the expected (error, instruction index) or None)
PROGRAMS = {
    "load_ends_at_the_scratchpad_end": ([_load(row=SP - 3, count1=3)], None),
    "load_ends_one_past_it": ([_load(row=SP - 3, count1=4)], (ErrorCode.SP_RANGE, 0)),
    "load_rows_far_beyond_2_17": (
        [_load(row=0, count0=BIG, count1=BIG, count2=BIG, count3=BIG)], (ErrorCode.SP_RANGE, 0)),
    "load_row_plus_rows_past_2_16": (
        [_load(row=SP - 1, count0=BIG)], (ErrorCode.SP_RANGE, 0)),
    "transposing_load_fills_the_last_block": (
        [_load(row=SP - N, count0=N - 1, transpose=1)], None),
    "transposing_load_rounds_up_past_the_end": (
        [_load(row=SP - N + 1, count0=N - 1, transpose=1)], (ErrorCode.SP_RANGE, 0)),
    "inner_levels_add_no_rows": (
        [_load(row=SP - 2, inner=2, run=1, count0=2, count1=2, count2=2)], None),
    "load_to_acc_ends_one_past_it": (
        [_load(acc=1, row=ACC - 1, count2=2)], (ErrorCode.ACC_RANGE, 0)),
    "store_ends_at_the_accumulator_end": ([_store(row=ACC - 2, count3=2)], None),
    "store_rows_far_beyond_2_17": (
        [_store(row=0, count0=BIG, count3=BIG)], (ErrorCode.ACC_RANGE, 0)),
    # A `linear` STORE checks its queued row end and its multipliers' row `qrow` together.
    "linear_store_ends_at_the_accumulator_end": (
        [_store(linear=1, qrow=ACC - 1, row=ACC - 2, count3=2)], None),
    "linear_store_ends_one_past_it": (
        [_store(linear=1, qrow=0, row=ACC - 1, count3=2)], (ErrorCode.ACC_RANGE, 0)),
    "linear_store_multipliers_one_past_it": (
        [_store(linear=1, qrow=ACC, row=0)], (ErrorCode.ACC_RANGE, 0)),
    "runs_per_row_at_n": ([_load(inner=2, run=1, count0=2, count1=N // 2)], None),
    "runs_per_row_past_n": (
        [_load(inner=2, run=1, count0=2, count1=N // 2 + 1)], (ErrorCode.ILLEGAL_FIELD, 0)),
    "runs_per_row_with_a_huge_count": (
        [_load(inner=1, run=1, count0=BIG)], (ErrorCode.ILLEGAL_FIELD, 0)),
    # A split MATMUL's lower half writes acc2 … acc2 + rows - 1 (acc2 - acc odd).
    "split_matmul_ends_at_the_accumulator_end": ([_split(acc=0, acc2=ACC - 3)], None),
    "split_matmul_ends_one_past_it": (
        [_split(acc=1, acc2=ACC - 2)], (ErrorCode.ACC_RANGE, 0)),
    "vector_reads_the_last_scratchpad_row": (
        [_vector(src=SP - 1 - 3 * 100 - 2 * 7, count=4, ostride=100, group=3, gstride=7)], None),
    "vector_reads_one_past_it": (
        [_vector(src=SP - 3 * 100 - 2 * 7, count=4, ostride=100, group=3, gstride=7)],
        (ErrorCode.SP_RANGE, 0)),
    "vector_source_far_beyond_2_17": (
        [_vector(src=0, count=2, ostride=BIG, group=BIG, gstride=BIG)], (ErrorCode.SP_RANGE, 0)),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_range_check_edge_agrees_with_the_isa_simulator(name):
    instructions, expected = PROGRAMS[name]
    words = [encode(i) for i in instructions] + [encode(Instruction.make("halt"))]
    dram = np.zeros(N4.dram_bytes, dtype=np.uint8)
    rtl = run_program(N4, words, dram, max_cycles=2_000_000)
    assert not rtl.timed_out
    if expected is None:
        model = simulator.run(words, N4, dram)
        assert rtl.error == ErrorCode.OK
        np.testing.assert_array_equal(rtl.dram, model.dram)
        assert rtl.counters.as_dict() == model.counters.as_dict()
    else:
        with pytest.raises(MachineError) as model:
            simulator.run(words, N4, dram)
        assert (model.value.code, model.value.pc) == expected
        assert (rtl.error, rtl.error_pc) == expected
