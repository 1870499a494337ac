"""The machine's status when it stops: error codes, the error raised for them, and the counters.

The codes and counters are the ones the RTL exposes (docs/isa.md, "Errors and status" and
"Counters").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import IntEnum

from glc.errors import GlcError


class ErrorCode(IntEnum):
    """The machine-readable error status (docs/isa.md, "Errors and status")."""

    OK = 0
    ILLEGAL_OPCODE = 1
    ILLEGAL_FIELD = 2
    DRAM_RANGE = 3
    SP_RANGE = 4
    ACC_RANGE = 5
    FETCH_RANGE = 6
    DEADLOCK = 7
    TOKEN_OVERFLOW = 8


class MachineError(GlcError):
    """A program stopped with an error status: the code, the instruction index and its text."""

    def __init__(self, code: ErrorCode, pc: int, detail: str, text: str = "",
                 where: str | None = None):
        shown = f" `{text}`" if text else ""
        super().__init__(f"{code.name} at instruction {pc}{shown}: {detail}", where)
        self.code = code
        self.pc = pc
        self.detail = detail


@dataclass
class Counters:
    """The counters readable when the machine is done (docs/isa.md, "Counters")."""

    cycles: int = 0
    busy_load: int = 0
    busy_exec: int = 0
    busy_store: int = 0
    busy_vector: int = 0
    stall_token_load: int = 0
    stall_token_exec: int = 0
    stall_token_store: int = 0
    stall_token_vector: int = 0
    stall_dram_load: int = 0
    stall_dram_store: int = 0
    macs: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counters by name, in the documented order."""
        return asdict(self)
