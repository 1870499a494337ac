"""Faults built in Python that the shared .s programs cannot express compactly: token overflow,
running off the program or DRAM, SYNC flags, the first instruction's error location."""

import numpy as np
import pytest

from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.isa import simulator
from glc.isa.asm import assemble
from glc.isa.encoding import Instruction, encode
from glc.isa.status import ErrorCode, MachineError

N4 = load_config("n4")


def _run(words, config=N4):
    with pytest.raises(MachineError) as caught:
        simulator.run(words, config)
    return caught.value


def test_256_unconsumed_tokens_overflow_the_counter():
    push = encode(Instruction.make("sync", unit=1, push_next=1))
    error = _run([push] * 256 + [encode(Instruction.make("halt"))])
    assert error.code == ErrorCode.TOKEN_OVERFLOW
    assert error.pc == 255  # the 256th push finds the counter at 255


def test_255_unconsumed_tokens_are_fine():
    push = encode(Instruction.make("sync", unit=1, push_next=1))
    result = simulator.run([push] * 255 + [encode(Instruction.make("halt"))], N4)
    # Dispatch-bound: the last SYNC dispatches in cycle 255, issues in 256, completes in 257.
    assert result.counters.cycles == 257


def test_running_past_the_end_of_dram_is_fetch_range():
    nop = encode(Instruction.make("sync", unit=0))
    with pytest.raises(MachineError) as caught:
        simulator.run([nop] * 3, N4, base=N4.dram_bytes - 3 * 64)
    assert (caught.value.code, caught.value.pc) == (ErrorCode.FETCH_RANGE, 3)


def test_running_past_the_program_into_zeroed_dram_is_an_illegal_opcode():
    nop = encode(Instruction.make("sync", unit=0))
    with pytest.raises(MachineError) as caught:
        simulator.run([nop] * 3, N4, base=0)
    assert (caught.value.code, caught.value.pc) == (ErrorCode.ILLEGAL_OPCODE, 3)


def test_an_image_over_the_programs_data_is_refused():
    dram = np.zeros(N4.dram_bytes, dtype=np.uint8)
    dram[100] = 1
    with pytest.raises(GlcError, match="overlaps the program's data"):
        simulator.run([encode(Instruction.make("halt"))] * 4, N4, dram, base=64)


def test_a_sync_flag_towards_a_missing_unit_is_an_illegal_field():
    word = encode(Instruction.make("sync", unit=0, pop_prev=1))
    error = _run([word])
    assert (error.code, error.pc) == (ErrorCode.ILLEGAL_FIELD, 0)
    assert "load unit has no pop_prev" in str(error)


def test_a_load_pattern_wider_than_a_row_is_an_illegal_field():
    word = encode(Instruction.make("load", run=3, inner=1, count0=2))
    error = _run([word])
    assert error.code == ErrorCode.ILLEGAL_FIELD


def test_an_error_names_the_source_line_of_the_instruction():
    program = assemble("sync unit=exec\n\nmatmul sp=SP_ROWS, rows=1\nhalt\n", N4, "k.s")
    with pytest.raises(MachineError) as caught:
        simulator.run(program.words, N4, spans=program.spans)
    assert str(caught.value).startswith("k.s:3:1: error: SP_RANGE at instruction 1 `matmul")


def test_padding_runs_are_never_range_checked():
    # Every run of this load lies before address 0 but is out of bounds: zeros, no error.
    program = assemble("load row=0, dram=-100, run=N, count0=4, stride0=N, xcoef0=1, x0=-9, "
                       "xlim=2\nhalt\n", N4)
    result = simulator.run(program.words, N4, np.full(64, 7, dtype=np.uint8))
    assert not result.scratchpad[:4].any()


def test_a_dram_image_larger_than_dram_is_an_error():
    with pytest.raises(GlcError, match="exceed"):
        simulator.run([encode(Instruction.make("halt"))], N4, bytes(N4.dram_bytes + 1))


def test_overlapping_store_runs_are_written_in_loop_order():
    # Four rows stored to the same N bytes: the last row wins.
    program = assemble("""
    load acc, row=0, dram=0, run=N, count0=4, stride0=4*N, push_next
    sync unit=exec, pop_prev, push_next
    store row=0, dram=256, run=N, count0=4, stride0=0, pop_prev
    halt
    """, N4)
    values = np.arange(16, dtype="<i4")
    result = simulator.run(program.words, N4, values.view(np.uint8))
    assert list(result.dram[256:260]) == [12, 13, 14, 15]
