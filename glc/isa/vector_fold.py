"""VECTOR `add`, `max` and `mul`, the folds (docs/isa.md, VECTOR): their pipeline's timing.

Since revision 3.3 a fold's operands are registered as a row arrives (the source slice, and the
fold's start: the output row's old value or the op's identity), the combine is formed the cycle
after into the fold register, and an output row is written from that register the cycle after
its last slice: every multiplier of `mul` has a register before and after it, and no
multiplier sits between a memory read's forward and the accumulator's write data (on ecp5n8 the
worst paths were such: docs/benchmarks.md, "synth"). A fold's writes and completion come
LATENCY cycles after its reads (E = t + 1 + count·group·S + LATENCY + waits). The recurrence
of a group (each row combined with the fold so far) stays one cycle: the combine's other
operand is the fold register itself, so a row, or a slice of one, still goes in every cycle,
`mul` included.

Outputs are made in order: with `src_acc`, a source row an earlier output of the same
instruction wrote is read with its new value. An output's write now lands LATENCY cycles after
the next output's first read could see it, so a fold whose accumulator source rows may meet its
output rows (`self_reading`: the span of its source rows meets ``dst … dst + count − 1``) reads
each output after the first LATENCY cycles later. No compiled program does so (glc/lower/fold.py
keeps int32 sources and results in different quarters of the accumulator).
"""

from __future__ import annotations

from glc.isa.encoding import Instruction

LATENCY = 2  # cycles a fold's writes, completion and pushes come after its reads (revision 3.3)


def last_source_row(instruction: Instruction) -> int:
    """A VECTOR's highest source row (its fields are unsigned)."""
    return (instruction["src"] + (instruction["count"] - 1) * instruction["ostride"]
            + (instruction["group"] - 1) * instruction["gstride"])


def self_reading(instruction: Instruction) -> bool:
    """A fold whose accumulator source rows' span meets the rows it writes."""
    dst = instruction["dst"]
    return bool(instruction["src_acc"]) and instruction["src"] < dst + instruction["count"] \
        and dst <= last_source_row(instruction)


def waits(instruction: Instruction) -> int:
    """The cycles a fold's reads wait: LATENCY before each output after the first of a
    self-reading fold, none otherwise."""
    return LATENCY * (instruction["count"] - 1) if self_reading(instruction) else 0
