"""Accesses the dependency tokens leave unordered (docs/isa.md, "Machine model": the units run
concurrently and only tokens order them, so every data race between units must be ordered by
the compiler; an unordered one has an unspecified result).

A schedule that races can still compute the right numbers on one timing and the wrong ones on
another: issue 37's split GEMM loaded a block's next A slice over rows a MATMUL of the same
block still read, and the token it waited for was the MATMUL before. So the check is on the
order, not the values: over the cycle model's timeline (the RTL's, cycle for cycle), a vector
clock per unit — each instruction after the ones before it on its unit, and a pop after the
push it consumed (the k-th pop of a counter after its k-th push in completion order: when it
issues, at least k pushes have completed) — and for each scratchpad and accumulator row the
last write and each unit's last read. An access of a row by one unit must come after the last
write of it by another (and a write after their reads) in that order; where it does not, the
two instructions race.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np

from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.isa.cycles import Timeline
from glc.isa.encoding import Instruction
from glc.isa.fields import UNITS
from glc.isa.steps import POPS, PUSHES, TOKENS
from glc.isa.transfer import local_rows, written_rows


class Unordered(GlcError):
    """A run whose image's tokens leave two units' accesses of a local row unordered."""


@dataclass(frozen=True)
class Race:
    """Instruction ``second`` (of ``unit``) reaches ``memory`` row ``row`` unordered with
    ``first`` (of ``other``), at least one of them writing it."""

    memory: str
    row: int
    first: int
    other: str
    second: int
    unit: str

    def line(self) -> str:
        return (f"{self.unit} pc {self.second} and {self.other} pc {self.first} both reach "
                f"{self.memory} row {self.row}, one writing it, and no token orders them")


def accesses(instruction: Instruction, n: int) -> list[tuple[str, np.ndarray, bool]]:
    """The local rows an instruction reads and writes: (memory, rows, written)."""
    name = instruction.op.name
    span = np.arange
    if name == "load":
        memory = "accumulator" if instruction["acc"] else "scratchpad"
        return [(memory, instruction["row"] + span(written_rows(instruction, n)), True)]
    if name == "store":
        return [("accumulator", instruction["row"] + span(local_rows(instruction)), False)]
    if name == "preload":
        return [("scratchpad", instruction["row"] + span(n), False)]
    if name == "matmul":
        rows = span(instruction["rows"])
        found = [("scratchpad", instruction["sp"] + rows, False),
                 ("accumulator", instruction["acc"] + rows, True)]
        if instruction["split"]:
            found.append(("accumulator", instruction["acc2"] + rows, True))
        return found
    if name == "vector":
        source = "accumulator" if instruction["src_acc"] else "scratchpad"
        rows = (instruction["src"] + instruction["ostride"] * span(instruction["count"])[:, None]
                + instruction["gstride"] * span(instruction["group"]))
        return [(source, np.unique(rows), False),
                ("accumulator", instruction["dst"] + span(instruction["count"]), True)]
    return []  # SYNC, HALT


def races(program: list[Instruction], timeline: Timeline, config: HwConfig, most: int = 8
          ) -> list[Race]:
    """Up to ``most`` pairs of instructions of ``program`` that, on ``timeline`` (the cycle
    model's, of a run that ended without an error), reach a scratchpad or accumulator row
    unordered by tokens."""
    units = timeline.units
    pushes: dict[str, list[int]] = defaultdict(list)  # each counter's pushes, as completed
    for pc in sorted(timeline.complete, key=lambda p: (timeline.complete[p], p)):
        for flag in PUSHES:
            if program[pc].get(flag) and (units[pc], flag) in TOKENS:
                pushes[TOKENS[units[pc], flag]].append(pc)
    popped: Counter[str] = Counter()
    clocks = {u: np.zeros(len(UNITS), dtype=np.int64) for u in UNITS}
    seen: dict[int, np.ndarray] = {}  # each instruction's vector clock
    n = config.array_size
    rows = {"scratchpad": config.scratchpad_rows, "accumulator": config.accumulator_rows}
    written = {m: np.full(size, -1) for m, size in rows.items()}
    read = {m: np.full((len(UNITS), size), -1) for m, size in rows.items()}
    found: list[Race] = []
    for pc in timeline.issue_order():
        unit = units[pc]
        index = UNITS.index(unit)
        clock = clocks[unit].copy()
        for flag in POPS:
            if program[pc].get(flag) and (unit, flag) in TOKENS:
                counter = TOKENS[unit, flag]
                clock = np.maximum(clock, seen[pushes[counter][popped[counter]]])
                popped[counter] += 1
        clock[index] += 1
        seen[pc], clocks[unit] = clock, clock

        for memory, at, write in accesses(program[pc], n):
            earlier = [written[memory][at]]
            if write:
                earlier += list(read[memory][:, at])
            for others in earlier:
                for other in np.unique(others[others >= 0]):
                    o = UNITS.index(units[other])
                    if o != index and clock[o] < seen[other][o] and len(found) < most:
                        row = int(at[np.argmax(others == other)])
                        found.append(Race(memory, row, int(other), units[other], pc, unit))
            if write:
                written[memory][at] = pc
                read[memory][:, at] = -1
            else:
                read[memory][index, at] = pc
    return found
