"""Instructions as values, and their 512-bit encoding (the layout in glc/isa/fields.py).

`encode`/`decode` are exact inverses on every encodable instruction. Whether an instruction is
*legal* for a configuration (counts >= 1, run <= N, ...) is a separate question, answered by
`illegal_reason`, because the machine reports it as ILLEGAL_FIELD when it decodes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from glc.errors import GlcError, Span
from glc.isa import vector_linear, vector_table
from glc.isa.fields import (
    ALL_FLAGS,
    BY_CODE,
    BY_NAME,
    LEVELS,
    LIN_FIELDS,
    LIN_SCALES,
    MAX_STEP,
    OPCODE_BITS,
    UNIT_FLAGS,
    UNITS,
    VEC_FLAGS,
    VECTOR_OPS,
    WORD_BYTES,
    Opcode,
)
from glc.isa.status import ErrorCode

_HEX_WORD = re.compile(r"[0-9A-Fa-f]+")


@dataclass(frozen=True)
class Instruction:
    """One instruction: its opcode and the value of every field (in the opcode's field order)."""

    op: Opcode
    values: tuple[int, ...]

    @classmethod
    def make(cls, name: str, **values: int) -> Instruction:
        """Build an instruction by mnemonic; omitted fields take their defaults.

        Raises ValueError for an unknown field or a value that does not fit (a caller's bug;
        the assembler checks user input itself and reports it with a location).
        """
        op = BY_NAME[name]
        result, checks, index = list(op.defaults), op.checks, op.index
        for field_name, value in values.items():
            position = index.get(field_name)
            if position is None:
                break
            _, _, modulus, low, high = checks[position]
            if modulus:
                value %= modulus
            if not low <= value <= high:
                break
            result[position] = value
        else:
            return cls(op, tuple(result))
        # A bad field (the compiler builds hundreds of thousands of good ones, checked in
        # one pass): an unknown one is reported before any value out of range.
        if not values.keys() <= index.keys():
            raise ValueError(f"{name} has no field(s) {sorted(values.keys() - index.keys())}")
        raise ValueError(f"{name} {field_name}={value} outside {low} … {high}")

    def __repr__(self) -> str:
        shown = [f"{f.name}={v}" for f, v in zip(self.op.fields, self.values, strict=True)
                 if v != f.default]
        return f"Instruction({self.op.name}: {', '.join(shown)})"

    def __getitem__(self, name: str) -> int:
        return self.values[self.op.index[name]]

    def get(self, name: str, default: int = 0) -> int:
        """The field's value, or `default` if the opcode has no such field (e.g. a flag)."""
        position = self.op.index.get(name)
        return default if position is None else self.values[position]

    @property
    def unit(self) -> str | None:
        """The unit whose queue this instruction goes to (None for HALT)."""
        if self.op.name == "sync":
            return UNITS[self["unit"]]
        return self.op.unit


class DecodeError(ValueError):
    """A word that is not an instruction: an illegal opcode or a nonzero unassigned bit."""

    def __init__(self, code: ErrorCode, detail: str):
        super().__init__(detail)
        self.code = code
        self.detail = detail


def encode(instruction: Instruction) -> int:
    """The instruction as a 512-bit integer (docs/isa.md, "Instruction format")."""
    word = instruction.op.code
    for f, value in zip(instruction.op.fields, instruction.values, strict=True):
        word |= (value & ((1 << f.width) - 1)) << f.lsb
    return word


def decode(word: int) -> Instruction:
    """The instruction a 512-bit word encodes; DecodeError if it is not one."""
    code = word & ((1 << OPCODE_BITS) - 1)
    op = BY_CODE.get(code)
    if op is None:
        raise DecodeError(ErrorCode.ILLEGAL_OPCODE, f"opcode {code} is not an instruction")
    stray = word & ~op.mask
    if stray:
        bits = [i for i in range(stray.bit_length()) if stray >> i & 1]
        raise DecodeError(ErrorCode.ILLEGAL_FIELD,
                          f"{op.name}: bit(s) {bits[:8]} are not in any field and must be 0")
    values = []
    for f in op.fields:
        value = (word >> f.lsb) & ((1 << f.width) - 1)
        if f.signed and value >> (f.width - 1):
            value -= 1 << f.width
        values.append(value)
    return Instruction(op, tuple(values))


def illegal_reason(instruction: Instruction, array_size: int, column_split: int = 1
                   ) -> str | None:
    """Why an encodable instruction is illegal on an N×N array (ILLEGAL_FIELD), or None;
    ``column_split`` 0: on a configuration without MATMUL's `split`."""
    name = instruction.op.name
    if name in ("load", "store"):
        counts = [instruction[f"count{k}"] for k in range(LEVELS)]
        if 0 in counts:
            return f"count{counts.index(0)} is 0"
        run, inner = instruction["run"], instruction["inner"]
        if not 1 <= run <= array_size:
            return f"run={run} outside 1 … N={array_size}"
        if inner > LEVELS:
            return f"inner={inner} > {LEVELS}"
        if run * math.prod(counts[:inner]) > array_size:
            return f"the runs of one row ({run}·{math.prod(counts[:inner])}) exceed N={array_size}"
        if name == "store" and instruction["raw"] and instruction["shift"]:
            return "shift must be 0 when raw"
        if name == "store" and instruction["linear"] and (instruction["raw"]
                                                          or instruction["shift"]):
            return "linear requantizes to int8: raw and shift must be 0"
        if name == "store" and not instruction["linear"] and (
                instruction["zero"] or instruction["qrow"]):
            return "zero and qrow must be 0 without linear"
        if name == "store" and not instruction["bias"] and instruction["brow"]:
            return "brow must be 0 without bias"
        if name == "store" and instruction["qrows"] and not (instruction["linear"]
                                                             or instruction["bias"]):
            return "qrows needs linear or bias"
        if name == "load" and instruction["acc"] and instruction["transpose"]:
            return "a transposing LOAD writes the scratchpad, not the accumulator"
        if name == "load" and instruction["step"] > MAX_STEP:
            return f"step={instruction['step']} > {MAX_STEP}: elements 1, 2 or 4 bytes apart"
        if name == "load" and instruction["acc"] and instruction["step"]:
            return "a strided run (step) is read into the scratchpad, not the accumulator"
    elif name == "matmul":
        return _matmul_reason(instruction, column_split)
    elif name == "vector":
        if instruction["op"] >= len(VECTOR_OPS):
            return f"op={instruction['op']} is not a vector operation"
        for field in ("count", "group"):
            if instruction[field] == 0:
                return f"{field} is 0"
        return _vector_reason(instruction)
    elif name == "sync":
        unit = instruction.unit
        wrong = [f for f in (*ALL_FLAGS, *VEC_FLAGS) if instruction[f]
                 and f not in UNIT_FLAGS[unit]]
        if wrong:
            return f"the {unit} unit has no {wrong[0]} token"
    return None


def to_bytes(words: list[int]) -> bytes:
    """The .bin image: consecutive 64-byte little-endian words (docs/isa.md, "Binary images")."""
    return b"".join(w.to_bytes(WORD_BYTES, "little") for w in words)


def to_hex(words: list[int]) -> str:
    """The .hex image for $readmemh: one word per line, 128 hex digits, most significant first."""
    return "".join(f"{w:0{2 * WORD_BYTES}x}\n" for w in words)


def read_image(path: Path) -> list[int]:
    """Read a .bin or .hex image (by suffix) into words."""
    path = Path(path)
    if not path.is_file():
        raise GlcError("no such file", str(path))
    if path.suffix == ".hex":
        try:
            lines = path.read_text().splitlines()
        except UnicodeDecodeError as error:
            raise GlcError(f"not a text file: {error.reason}", str(path)) from None
        words = []
        for number, line in enumerate(lines, 1):
            code = line.split("//")[0]
            text = code.strip()
            if not text:
                continue
            where = Span(str(path), number, len(code) - len(code.lstrip()) + 1)
            # Hex digits only, as to_hex writes them: Python's int() would also take a sign
            # (a negative word), a 0x prefix and underscores, none of them a word of an image.
            if not _HEX_WORD.fullmatch(text):
                raise GlcError(f"not a word of hexadecimal digits: {text!r}", where)
            if len(text) > 2 * WORD_BYTES:
                raise GlcError(f"more than {WORD_BYTES} bytes ({len(text)} hex digits)", where)
            words.append(int(text, 16))
        return words
    data = path.read_bytes()
    if len(data) % WORD_BYTES:
        raise GlcError(f"{len(data)} bytes is not a whole number of {WORD_BYTES}-byte words",
                       str(path))
    return [int.from_bytes(data[i:i + WORD_BYTES], "little")
            for i in range(0, len(data), WORD_BYTES)]


def _matmul_reason(instruction: Instruction, column_split: int) -> str | None:
    """Why a MATMUL is illegal (docs/isa.md, MATMUL), or None."""
    rows, acc, acc2 = instruction["rows"], instruction["acc"], instruction["acc2"]
    if rows == 0:
        return "rows is 0"
    if not instruction["split"]:
        return "acc2 must be 0 without split" if acc2 else None
    if not column_split:
        return "split: this configuration's array does not split (column_split = 0)"
    if (acc2 - acc) % 2 == 0:
        return (f"split: acc2 - acc ({acc2 - acc}) must be odd (the accumulator's banks of "
                f"even and odd rows)")
    if abs(acc2 - acc) < rows:
        return f"split: the rows acc={acc} and acc2={acc2} write overlap ({rows} rows each)"
    return None


def _vector_reason(instruction: Instruction) -> str | None:
    """Why a VECTOR with a known op and nonzero count and group is illegal, or None."""
    op = VECTOR_OPS[instruction["op"]]
    if op != "lin":
        if any(instruction[f] for f in LIN_FIELDS):
            return f"{', '.join(LIN_FIELDS)} must be 0 without lin"
        if op in ("lut", "table") and (instruction["group"] != 1 or instruction["src_acc"]
                                       or instruction["accumulate"]):
            return f"{op} maps int8 scratchpad rows one by one: group 1, no src_acc, " \
                   "no accumulate"
        last = instruction["dst"] + instruction["count"] - 1
        if op == "table" and last >= vector_table.ENTRIES:
            return f"table entries {instruction['dst']} … {last} exceed its " \
                   f"{vector_table.ENTRIES}"
        return None
    if instruction["group"] > len(LIN_SCALES):
        return f"lin folds at most {len(LIN_SCALES)} rows, not group={instruction['group']}"
    if instruction["src_acc"] or instruction["accumulate"]:
        return "lin folds int8 scratchpad rows into a new value: no src_acc, no accumulate"
    for field in ("fixed", *LIN_SCALES):
        if not vector_linear.takes(instruction[field]):
            return f"{field}'s magnitude is not below 2^64"
    return None
