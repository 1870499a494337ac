"""The instruction layout as data: every opcode, its fields, their bit positions and widths.

This table is the single definition of the encoding described in docs/isa.md ("Instruction
format"); the encoder, decoder, assembler and disassembler all derive from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

WORD_BITS = 512
WORD_BYTES = WORD_BITS // 8
OPCODE_BITS = 4
LEVELS = 4  # loop levels of the transfer pattern (docs/isa.md, LOAD and STORE)
UNITS = ("load", "exec", "store", "vector")
# VECTOR's `op` field (docs/isa.md, VECTOR): the folds, then the table's lookup and its fill
VECTOR_OPS = ("add", "max", "mul", "lin", "lut", "table")
LIN_SCALES = ("scale0", "scale1")  # VECTOR `lin`: the float32 multiplier of each row of a group
LIN_FIELDS = ("offset", "fixed", *LIN_SCALES)  # VECTOR `lin` only (0 otherwise)
MAX_STEP = 2  # LOAD `step`: a run's bytes 1, 2 or 4 apart (3 is ILLEGAL_FIELD)


@dataclass(frozen=True)
class Field:
    """One field: bits [lsb + width - 1 : lsb] of the instruction word.

    `flag` fields (1 bit) are written as a bare word in assembly when set; `names` gives symbolic
    values (SYNC's unit); `wrap` fields take any integer modulo 2**width (DRAM addresses).
    """

    name: str
    lsb: int
    width: int
    signed: bool = False
    default: int = 0
    flag: bool = False
    names: tuple[str, ...] = ()
    wrap: bool = False

    @property
    def low(self) -> int:
        """Smallest encodable value."""
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def high(self) -> int:
        """Largest encodable value."""
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    @property
    def mask(self) -> int:
        """The field's bits within the word."""
        return ((1 << self.width) - 1) << self.lsb


@dataclass(frozen=True, eq=False)
class Opcode:
    """An opcode: its number, mnemonic, the unit whose queue it goes to, and its fields."""

    name: str
    code: int
    unit: str | None  # None: SYNC (its `unit` field decides) and HALT (the dispatcher)
    fields: tuple[Field, ...]

    def field(self, name: str) -> Field:
        """The field called `name` (KeyError if the opcode has none)."""
        return self.fields[self.index[name]]

    @cached_property
    def index(self) -> dict[str, int]:
        """Each field's position in `fields` (instructions store values in that order)."""
        return {f.name: i for i, f in enumerate(self.fields)}

    @cached_property
    def checks(self) -> tuple[tuple[str, int, int, int, int], ...]:
        """Per field, in order: name, default, the modulus of a `wrap` field (else 0), lowest
        and highest value (what building an instruction checks, precomputed: the lowering
        builds hundreds of thousands)."""
        return tuple((f.name, f.default, (1 << f.width) if f.wrap else 0, f.low, f.high)
                     for f in self.fields)

    @cached_property
    def defaults(self) -> tuple[int, ...]:
        """Every field's default, in order: each checked against its range once here, so an
        instruction built checks only the fields it is given."""
        for name, default, _, low, high in self.checks:
            if not low <= default <= high:
                raise ValueError(f"{self.name} {name}'s default {default} outside {low} … {high}")
        return tuple(f.default for f in self.fields)

    @cached_property
    def mask(self) -> int:
        """Every assigned bit, opcode included; the rest must be zero (ILLEGAL_FIELD)."""
        bits = (1 << OPCODE_BITS) - 1
        for f in self.fields:
            bits |= f.mask
        return bits


def _flags(*names: str) -> tuple[Field, ...]:
    # The token flags sit at fixed bits [9:4]; only the ones towards existing units are fields.
    positions = {"pop_prev": 4, "pop_next": 5, "push_prev": 6, "push_next": 7,
                 "pop_vec": 8, "push_vec": 9}
    return tuple(Field(n, positions[n], 1, flag=True) for n in names)


def _transfer(first: tuple[Field, ...]) -> tuple[Field, ...]:
    """The transfer pattern shared by LOAD and STORE (docs/isa.md), after the op-specific bits."""
    levels = []
    for k in range(LEVELS):
        base = 104 + 64 * k
        levels += [
            Field(f"count{k}", base, 16, default=1),
            Field(f"stride{k}", base + 16, 32, signed=True),
            Field(f"ycoef{k}", base + 48, 8, signed=True),
            Field(f"xcoef{k}", base + 56, 8, signed=True),
        ]
    return (
        *first,
        Field("xrun", 19, 1, flag=True),
        Field("inner", 40, 3),
        Field("run", 48, 8),
        Field("row", 56, 16),
        Field("dram", 72, 32, wrap=True),
        *levels,
        Field("y0", 360, 16, signed=True),
        Field("x0", 376, 16, signed=True),
        Field("ylim", 392, 16),
        Field("xlim", 408, 16),
    )


ALL_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")
VEC_FLAGS = ("pop_vec", "push_vec")  # LOAD's and STORE's tokens to and from the vector unit

OPCODES: tuple[Opcode, ...] = (
    Opcode("load", 1, "load", (
        *_flags("pop_next", "push_next", *VEC_FLAGS),
        *_transfer((Field("acc", 16, 1, flag=True), Field("transpose", 18, 1, flag=True),
                    Field("pad", 32, 8, signed=True), Field("step", 43, 2))),
    )),
    Opcode("store", 2, "store", (
        *_flags("pop_prev", "push_prev", *VEC_FLAGS),
        *_transfer((Field("raw", 16, 1, flag=True), Field("relu", 17, 1, flag=True),
                    Field("shift", 20, 5), Field("linear", 25, 1, flag=True),
                    Field("qrows", 26, 1, flag=True), Field("bias", 27, 1, flag=True),
                    Field("zero", 424, 8, signed=True), Field("qrow", 432, 16),
                    Field("brow", 448, 16))),
    )),
    Opcode("preload", 3, "exec", (
        *_flags(*ALL_FLAGS),
        Field("row", 32, 16),
    )),
    Opcode("matmul", 4, "exec", (
        *_flags(*ALL_FLAGS),
        Field("accumulate", 16, 1, flag=True),
        Field("split", 17, 1, flag=True),
        Field("sp", 32, 16),
        Field("acc", 48, 16),
        Field("rows", 64, 16, default=1),
        Field("acc2", 80, 16),
    )),
    Opcode("sync", 5, None, (
        *_flags(*ALL_FLAGS, *VEC_FLAGS),
        Field("unit", 16, 2, names=UNITS),
    )),
    Opcode("halt", 6, None, ()),
    Opcode("vector", 7, "vector", (
        *_flags(*ALL_FLAGS),
        Field("op", 16, 3, names=VECTOR_OPS),
        Field("accumulate", 19, 1, flag=True),
        Field("src_acc", 20, 1, flag=True),
        Field("src", 32, 16),
        Field("dst", 48, 16),
        Field("count", 64, 16, default=1),
        Field("group", 80, 16, default=1),
        Field("ostride", 96, 16),
        Field("gstride", 112, 16),
        Field("offset", 128, 9, signed=True),
        Field("fixed", 160, 32),
        Field("scale0", 192, 32),
        Field("scale1", 224, 32),
    )),
)

BY_NAME = {op.name: op for op in OPCODES}
BY_CODE = {op.code: op for op in OPCODES}

# The flags each unit may carry: the chains LOAD -> EXEC -> STORE and LOAD -> VECTOR -> STORE
# (docs/isa.md, tokens).
UNIT_FLAGS = {
    "load": ("pop_next", "push_next", *VEC_FLAGS),
    "exec": ALL_FLAGS,
    "store": ("pop_prev", "push_prev", *VEC_FLAGS),
    "vector": ALL_FLAGS,
}
