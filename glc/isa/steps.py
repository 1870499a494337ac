"""What the timing rules read of each instruction (docs/isa.md, "Timing"), decoded before a
run of the cycle model (glc/isa/cycles.py), each distinct instruction once (``decode_all``):
its unit, the token counters it pops and pushes, its DRAM port and accumulator port use, and its
cycle costs. The model's cache key is these steps, so two programs that differ only where the
model reads nothing (DRAM addresses) share a count.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, fields

from glc.hwconfig import HwConfig
from glc.isa import vector_fold, vector_linear, vector_table
from glc.isa.encoding import Instruction
from glc.isa.fields import OPCODES, UNITS, VECTOR_OPS, Opcode
from glc.isa.transfer import SETUP, beats, local_rows

# Which counter each (unit, flag) pops or pushes: the chains LOAD -> EXEC -> STORE and
# LOAD -> VECTOR -> STORE (docs/isa.md, "Dependency tokens").
TOKENS = {
    ("load", "pop_next"): "ex2ld", ("load", "push_next"): "ld2ex",
    ("load", "pop_vec"): "vu2ld", ("load", "push_vec"): "ld2vu",
    ("exec", "pop_prev"): "ld2ex", ("exec", "pop_next"): "st2ex",
    ("exec", "push_prev"): "ex2ld", ("exec", "push_next"): "ex2st",
    ("store", "pop_prev"): "ex2st", ("store", "push_prev"): "st2ex",
    ("store", "pop_vec"): "vu2st", ("store", "push_vec"): "st2vu",
    ("vector", "pop_prev"): "ld2vu", ("vector", "pop_next"): "st2vu",
    ("vector", "push_prev"): "vu2ld", ("vector", "push_next"): "vu2st",
}
POPS = ("pop_prev", "pop_next", "pop_vec")
PUSHES = ("push_prev", "push_next", "push_vec")


@dataclass(frozen=True, slots=True)
class Step:
    """What the timing rules read of one instruction, decoded before the run: the model visits an
    instruction at every event until it issues (most of a compile's time was field lookups).
    ``cost``: a VECTOR's cycles from issue to completion; a LOAD's or STORE's set-up and beats
    (its DRAM port time); a SYNC's one cycle. ``moved``: a transfer's beats, ``rows`` its local
    rows (a transposing LOAD's completion depends on both); a MATMUL's rows."""

    unit: str | None  # the queue it goes to; None for HALT
    name: str
    pops: tuple[str, ...]  # the counters it pops and pushes (TOKENS)
    pushes: tuple[str, ...]
    port: bool  # LOAD and STORE hold the DRAM port
    reads_acc: bool  # a VECTOR reading ACC, a LOAD writing it (the shared ports)
    transpose: bool
    cost: int
    moved: int
    rows: int


STEP_FIELDS = operator.attrgetter(*(f.name for f in fields(Step)))  # a step as a tuple


def _token_fields(op: Opcode, unit: str | None) -> tuple[tuple[tuple[int, str], ...], ...]:
    """The (field position, counter) of each pop and each push flag an opcode has, for the
    unit it goes to (a SYNC's unit is a field of its own)."""
    return tuple(tuple((op.index[f], TOKENS[unit, f]) for f in flags
                       if f in op.index and (unit, f) in TOKENS) for flags in (POPS, PUSHES))


# Per (opcode, unit): the (field position, counter) of its pops and of its pushes.
TOKEN_FIELDS = {(op.code, unit): _token_fields(op, unit) for op in OPCODES
                for unit in (UNITS if op.name == "sync" else (op.unit,))}


def decode(instruction: Instruction, config: HwConfig) -> Step:
    unit, name, values = instruction.unit, instruction.op.name, instruction.values
    pop_fields, push_fields = TOKEN_FIELDS[instruction.op.code, unit]
    pops = tuple(counter for position, counter in pop_fields if values[position])
    pushes = tuple(counter for position, counter in push_fields if values[position])
    cost, moved, rows = 1, 0, 0  # SYNC takes a cycle
    reads_acc = transpose = False
    if name == "vector":
        passes = config.vector_passes  # cycles a source row takes, N / L
        cost = 1 + instruction["count"] * instruction["group"] * passes
        op = VECTOR_OPS[instruction["op"]]
        if op == "lin":  # its reads' waits, then its pipeline's last write
            cost += vector_linear.waits(instruction["count"], instruction["group"], passes)
            cost += vector_linear.LATENCY
        elif op == "lut":  # the tables' registered read
            cost += vector_table.LATENCY
        elif op != "table":  # a fold: its operands' and its combine's registers (revision 3.3)
            cost += vector_fold.waits(instruction) + vector_fold.LATENCY
        reads_acc = _reads_acc(instruction)
    elif name in ("load", "store"):
        moved = beats(instruction, config.dram_port_bytes)
        # A `linear` STORE first reads its multipliers' row, a `bias` STORE its biases' row:
        # one more set-up cycle each.
        cost = SETUP[name] + int(bool(instruction.get("linear"))) + \
            int(bool(instruction.get("bias"))) + moved
        transpose = bool(instruction.get("transpose"))
        rows = local_rows(instruction) if transpose else 0
        reads_acc = name == "load" and bool(instruction["acc"])
    elif name == "matmul":
        rows = instruction["rows"]
    return Step(unit, name, pops, pushes, name in ("load", "store"), reads_acc, transpose,
                 cost, moved, rows)


def decode_all(program: list[Instruction], config: HwConfig) -> list[Step]:
    """``decode`` of each instruction, computed once per distinct one (by opcode and field
    values, all ``decode`` reads besides the config) and remembered across calls: a compile
    models each kernel, then each image holding it again (ResNet-50 224×224's two images are
    603 874 instructions, 158 177 distinct; decoding them took a third of their modelling)."""
    memo = _DECODED.setdefault(config, {})
    if len(memo) > _DECODED_SIZE:
        memo.clear()
    out = []
    for instruction in program:
        key = (instruction.op.code, instruction.values)
        step = memo.get(key)
        if step is None:
            step = memo[key] = decode(instruction, config)
        out.append(step)
    return out


# Each configuration's decoded steps by (opcode, values), emptied when it grows past the size
# (a few hundred bytes an entry).
_DECODED: dict[HwConfig, dict[tuple[int, tuple[int, ...]], Step]] = {}
_DECODED_SIZE = 1 << 19


def _reads_acc(instruction: Instruction) -> bool:
    """A VECTOR that reads the accumulator: its sources (`src_acc`) or its outputs' old values
    (`accumulate`)."""
    return bool(instruction["src_acc"] or instruction["accumulate"])
