"""The transfer pattern of LOAD and STORE: four nested strided loops of runs with virtual
coordinates for padding (docs/isa.md, "LOAD and STORE: the transfer pattern").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from glc.isa.encoding import Instruction
from glc.isa.fields import LEVELS

ADDRESS_BITS = 32  # the `dram` field's width: addresses are computed modulo 2**32
# Cycles before a transfer's first DRAM beat (docs/isa.md, "Timing"): a LOAD's issue; a STORE's
# issue and the accumulator's registered read of its first row (ISA revision 3.1: the row
# addressed in cycle c arrives in c + 2).
SETUP = {"load": 1, "store": 2}


def element_bytes(instruction: Instruction) -> int:
    """Bytes per element moved: int32 for LOAD to ACC and STORE raw, int8 otherwise."""
    wide = instruction["acc"] if instruction.op.name == "load" else instruction["raw"]
    return 4 if wide else 1


def pitch(instruction: Instruction) -> int:
    """DRAM bytes from one element of a run to the next: the element's size, or with a LOAD's
    `step` 2**step single bytes apart (a strided run: every other pixel of a stride-2 conv)."""
    return element_bytes(instruction) << instruction.get("step")


def counts(instruction: Instruction) -> list[int]:
    """Iterations of loop levels 0 … 3."""
    return [instruction[f"count{k}"] for k in range(LEVELS)]


def local_rows(instruction: Instruction) -> int:
    """Local rows the transfer writes (LOAD) or reads (STORE): the product of the outer counts."""
    return math.prod(counts(instruction)[instruction["inner"]:])


def beats(instruction: Instruction, port_bytes: int) -> int:
    """DRAM port cycles: one per `port_bytes` of each run's span (run · pitch bytes), padding
    runs included."""
    run_bytes = instruction["run"] * pitch(instruction)
    return math.prod(counts(instruction)) * -(-run_bytes // port_bytes)


def written_rows(instruction: Instruction, array_size: int) -> int:
    """Local rows a LOAD writes: its local rows, or whole N-row blocks when it transposes."""
    rows = local_rows(instruction)
    if instruction.get("transpose"):
        return -(-rows // array_size) * array_size
    return rows


@dataclass(frozen=True)
class Runs:
    """Every run of a transfer, in execution order (level 3 outermost)."""

    address: np.ndarray  # int64 DRAM byte address of each run (mod 2**32)
    inside: np.ndarray  # bool [runs, run]: each element's virtual coordinates are in bounds
    row: np.ndarray  # int64 local row of each run, relative to the `row` field
    column: np.ndarray  # int64 first column of each run


def expand(instruction: Instruction) -> Runs:
    """All runs of a LOAD or STORE as arrays (vectorised: one numpy op per loop level)."""
    levels = counts(instruction)
    inner = instruction["inner"]
    shape = tuple(reversed(levels))  # axis 0 = level 3 (outermost)
    address = np.full(shape, instruction["dram"], dtype=np.int64)
    y = np.full(shape, instruction["y0"], dtype=np.int64)
    x = np.full(shape, instruction["x0"], dtype=np.int64)
    row = np.zeros(shape, dtype=np.int64)
    run_index = np.zeros(shape, dtype=np.int64)
    outer_scale, inner_scale = 1, 1
    for k in range(LEVELS):
        view = [1] * LEVELS
        view[LEVELS - 1 - k] = levels[k]
        index = np.arange(levels[k], dtype=np.int64).reshape(view)
        address = address + index * instruction[f"stride{k}"]
        y = y + index * instruction[f"ycoef{k}"]
        x = x + index * instruction[f"xcoef{k}"]
        # Levels below `inner` place runs side by side in one row; the rest step the row.
        if k < inner:
            run_index = run_index + index * inner_scale
            inner_scale *= levels[k]
        else:
            row = row + index * outer_scale
            outer_scale *= levels[k]
    run = instruction["run"]
    y, x = y.reshape(-1, 1), x.reshape(-1, 1)
    # With `xrun` element j of a run sits at x + j·2**step and is bounds-checked alone;
    # otherwise the run is in or out as a whole.
    if instruction["xrun"]:
        x = x + (np.arange(run, dtype=np.int64) << instruction.get("step"))
    inside = np.ones((y.shape[0], run), dtype=bool)
    if instruction["ylim"]:
        inside &= (y >= 0) & (y < instruction["ylim"])
    if instruction["xlim"]:
        inside &= (x >= 0) & (x < instruction["xlim"])
    return Runs(
        address=(address % (1 << ADDRESS_BITS)).ravel(),
        inside=inside,
        row=row.ravel(),
        column=(run_index * instruction["run"]).ravel(),
    )


def dram_span(instruction: Instruction) -> tuple[int, int] | None:
    """The first DRAM byte a LOAD or STORE touches and one past its last (only in-bounds
    elements touch DRAM); None if it touches none."""
    runs = expand(instruction)
    if not runs.inside.any():
        return None
    starts = runs.address[:, None] + pitch(instruction) * np.arange(instruction["run"])
    touched = starts[runs.inside]
    return int(touched.min()), int(touched.max()) + element_bytes(instruction)
