"""The instruction layout as data: every opcode, its fields, their bit positions and widths.

This table is the single definition of the encoding described in docs/isa.md ("Instruction
format"); the encoder, decoder, assembler and disassembler all derive from it.
"""

from __future__ import annotations

from dataclasses import dataclass

WORD_BITS = 256
WORD_BYTES = WORD_BITS // 8
OPCODE_BITS = 4
LEVELS = 4  # loop levels of the transfer pattern (docs/isa.md, LOAD and STORE)
UNITS = ("load", "exec", "store")


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


@dataclass(frozen=True)
class Opcode:
    """An opcode: its number, mnemonic, the unit whose queue it goes to, and its fields."""

    name: str
    code: int
    unit: str | None  # None: SYNC (its `unit` field decides) and HALT (the dispatcher)
    fields: tuple[Field, ...]

    def field(self, name: str) -> Field:
        """The field called `name` (KeyError if the opcode has none)."""
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def mask(self) -> int:
        """Every assigned bit, opcode included; the rest must be zero (ILLEGAL_FIELD)."""
        bits = (1 << OPCODE_BITS) - 1
        for f in self.fields:
            bits |= f.mask
        return bits


def _flags(*names: str) -> tuple[Field, ...]:
    # The token flags sit at fixed bits [7:4]; only the ones towards existing units are fields.
    positions = {"pop_prev": 4, "pop_next": 5, "push_prev": 6, "push_next": 7}
    return tuple(Field(n, positions[n], 1, flag=True) for n in names)


def _transfer(first: tuple[Field, ...]) -> tuple[Field, ...]:
    """The transfer pattern shared by LOAD and STORE (docs/isa.md), after the op-specific bits."""
    levels = []
    for k in range(LEVELS):
        base = 67 + 37 * k
        levels += [
            Field(f"count{k}", base, 11, default=1),
            Field(f"stride{k}", base + 11, 20, signed=True),
            Field(f"ycoef{k}", base + 31, 3),
            Field(f"xcoef{k}", base + 34, 3),
        ]
    return (
        *first,
        Field("inner", 16, 3),
        Field("run", 19, 8),
        Field("row", 27, 16),
        Field("dram", 43, 24, wrap=True),
        *levels,
        Field("y0", 215, 10, signed=True),
        Field("x0", 225, 10, signed=True),
        Field("ylim", 235, 10),
        Field("xlim", 245, 10),
    )


ALL_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")

OPCODES: tuple[Opcode, ...] = (
    Opcode("load", 1, "load", (
        *_flags("pop_next", "push_next"),
        *_transfer((Field("acc", 8, 1, flag=True),)),
    )),
    Opcode("store", 2, "store", (
        *_flags("pop_prev", "push_prev"),
        *_transfer((Field("raw", 8, 1, flag=True), Field("relu", 9, 1, flag=True),
                    Field("shift", 10, 5))),
    )),
    Opcode("preload", 3, "exec", (
        *_flags(*ALL_FLAGS),
        Field("row", 16, 16),
    )),
    Opcode("matmul", 4, "exec", (
        *_flags(*ALL_FLAGS),
        Field("accumulate", 8, 1, flag=True),
        Field("sp", 16, 16),
        Field("acc", 32, 16),
        Field("rows", 48, 16, default=1),
    )),
    Opcode("sync", 5, None, (
        *_flags(*ALL_FLAGS),
        Field("unit", 8, 2, names=UNITS),
    )),
    Opcode("halt", 6, None, ()),
)

BY_NAME = {op.name: op for op in OPCODES}
BY_CODE = {op.code: op for op in OPCODES}

# The flags each unit may carry: the chain is LOAD -> EXEC -> STORE (docs/isa.md, tokens).
UNIT_FLAGS = {
    "load": ("pop_next", "push_next"),
    "exec": ALL_FLAGS,
    "store": ("pop_prev", "push_prev"),
}
