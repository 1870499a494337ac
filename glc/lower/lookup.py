"""The vector unit's tables in a fold kernel (docs/isa.md, VECTOR "Tables"): a ``table-lookup``
node is a fold of one operand with VECTOR ``lut``, after its table is written into the unit.

One table serves every column (the language's tables are per tensor), so the 256 int8 entries
go to the top 256 scratchpad rows as rows each holding one entry N times: one transposing LOAD
of the 256 contiguous bytes, each block's N local rows the same run of N entries, turns block b
into rows b·N … b·N + N − 1 (docs/isa.md, "Transposing LOAD"); VECTOR ``table`` then writes the
rows into the tables. The fold's tiles take the scratchpad below those rows, so nothing they
load overwrites the table while ``table`` reads it; ``lut`` follows ``table`` in the vector
unit's queue, in order.
"""

from __future__ import annotations

import math

from glc.hwconfig import HwConfig
from glc.isa.encoding import Instruction
from glc.isa.fields import VECTOR_OPS
from glc.isa.vector_table import ENTRIES
from glc.lower.transfer import Target


def loadable(table: Target, config: HwConfig) -> bool:
    """Whether ``table`` is 256 int8 entries one byte apart, in whole blocks of N: what the
    transposing LOAD reads."""
    digits = [d for g in table.view.groups for d in g if d.size > 1]
    return table.element == 1 and not table.view.coords and \
        ENTRIES % config.array_size == 0 and \
        math.prod(d.size for d in digits) == ENTRIES and len(digits) == 1 and \
        digits[0].stride == 1


def rows(config: HwConfig) -> int:
    """Scratchpad rows the table takes."""
    return ENTRIES


def table_instructions(table: Target, config: HwConfig) -> list[Instruction]:
    """The LOAD of ``table`` into the top scratchpad rows and the VECTOR ``table`` writing them
    into the unit: the kernel's first instructions (the LOAD pushes ``ld2vu``, ``table`` pops
    it)."""
    n = config.array_size
    first = config.scratchpad_rows - rows(config)
    load = Instruction.make("load", transpose=1, row=first,
                            dram=table.address + table.view.offset, run=n, count0=n, stride0=0,
                            count1=ENTRIES // n, stride1=n, push_vec=1)
    fill = Instruction.make("vector", op=VECTOR_OPS.index("table"), src=first, dst=0,
                            count=ENTRIES, ostride=1, pop_prev=1)
    return [load, fill]
