"""cocotb tests of the RTL decoder against the Python encoding (glc/isa/encoding.py)."""

from __future__ import annotations

import cocotb
import numpy as np
from cocotb.triggers import Timer
from tbutil import env_int

from glc.isa.encoding import DecodeError, Instruction, decode, encode, illegal_reason
from glc.isa.fields import BY_NAME, LIN_FIELDS, OPCODES, UNITS, VECTOR_OPS
from glc.isa.status import ErrorCode
from glc.isa.vector_table import ENTRIES as TABLE_ENTRIES

HALT = len(UNITS)  # the TB's name for "goes to no queue"
MATMUL = BY_NAME["matmul"]
VECTOR = BY_NAME["vector"]


def python_view(word: int, n: int, column_split: int) -> tuple[int, int | None]:
    """(error code, unit index) of a word according to the Python decoder; unit None = HALT."""
    try:
        instruction = decode(word)
    except DecodeError as error:
        return int(error.code), None
    reason = illegal_reason(instruction, n, column_split)
    unit = instruction.unit
    code = ErrorCode.ILLEGAL_FIELD if reason else ErrorCode.OK
    return int(code), (HALT if unit is None else UNITS.index(unit))


def random_word(rng: np.random.Generator, n: int) -> int:
    """An instruction with random field values (legal or not), sometimes with a stray bit."""
    op = OPCODES[int(rng.integers(0, len(OPCODES)))]
    values = {}
    for f in op.fields:
        if f.name.startswith("count") or f.name == "run":
            values[f.name] = int(rng.choice([0, 1, 2, 3, n, n + 1, f.high]))
        elif f.name == "inner":
            values[f.name] = int(rng.integers(0, 6))
        else:
            values[f.name] = int(rng.integers(f.low, f.high + 1))
    if op.name == "matmul" and rng.random() < 0.5:
        # acc2 near acc's rows: either side of |acc2 - acc| = rows, of either parity; or 0.
        step = values["rows"] + int(rng.integers(-2, 3))
        acc2 = values["acc"] + int(rng.choice([-1, 1])) * step
        values["acc2"] = acc2 if 0 <= acc2 <= 0xFFFF and rng.random() < 0.8 else 0
    if op.name == "vector" and rng.random() < 0.5:
        # table and lut: group 1, no src_acc or accumulate, the lin fields 0; table's entries
        # either side of the table's end
        values.update(op=int(rng.choice([VECTOR_OPS.index("lut"), VECTOR_OPS.index("table")])),
                      group=int(rng.choice([0, 1, 1, 1, 2])), **dict.fromkeys(LIN_FIELDS, 0),
                      src_acc=int(rng.random() < 0.2), accumulate=int(rng.random() < 0.2),
                      count=int(rng.integers(1, 40)))
        values["dst"] = max(0, TABLE_ENTRIES - values["count"] + int(rng.integers(-3, 3)))
    word = encode(Instruction.make(op.name, **values))
    if rng.random() < 0.2:
        word |= 1 << int(rng.integers(0, 256))
    if rng.random() < 0.05:
        word = (word & ~0xF) | int(rng.choice([0, 7, 15]))
    return word


@cocotb.test()
async def decoder_agrees_with_the_python_encoding(dut):
    """Random words: the same error code, and the same queue for the legal ones; split
    MATMULs legal and not (only not without `column_split`)."""
    n, column_split = env_int("GLC_ARRAY_SIZE"), env_int("GLC_COLUMN_SPLIT")
    rng = np.random.default_rng(n)
    seen, seen_split, seen_table = set(), set(), set()
    for _ in range(3000):
        word = random_word(rng, n)
        dut.word.value = word
        await Timer(1, unit="ns")
        code, unit = python_view(word, n, column_split)
        assert int(dut.error.value) == code, hex(word)
        if code == ErrorCode.OK:
            got = HALT if int(dut.is_halt.value) else int(dut.unit.value)
            assert got == unit, hex(word)
        seen.add(code)
        if word & 0xF == MATMUL.code and word >> MATMUL.field("split").lsb & 1:
            seen_split.add(code)
        if word & 0xF == VECTOR.code and (word >> VECTOR.field("op").lsb & 7) >= 4:
            seen_table.add(code)
    assert {ErrorCode.OK, ErrorCode.ILLEGAL_OPCODE, ErrorCode.ILLEGAL_FIELD} <= seen
    assert seen_split == ({ErrorCode.OK, ErrorCode.ILLEGAL_FIELD} if column_split
                          else {ErrorCode.ILLEGAL_FIELD})
    assert seen_table == {ErrorCode.OK, ErrorCode.ILLEGAL_FIELD}  # lut and table, legal and not
