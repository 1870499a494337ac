"""The limits measured cycles are held to (issue 10): each defined here, once.

* **Compute ideal** of a kernel: the cycles its unit needs at full throughput. The N×N array
  performs N² MACs a cycle, so an (M×K)·(K×Nₒ) product needs ⌈M·K·Nₒ / N²⌉ (docs/isa.md,
  "Counters"); the vector unit's L lanes (``vector_lanes``) read L source elements a cycle
  (docs/isa.md, VECTOR timing: ``E = t + 3 + count·group·N/L`` for a fold), so a fold of ``outputs``
  results, each over ``rows`` source elements, needs ⌈outputs · rows / L⌉.
* **Compulsory DRAM bytes** of a kernel: every DRAM byte it must move at least once — each
  operand element it reads (an element several windows share, counted once; padding, which
  reads no DRAM, not at all) and each result element it writes. Measured on the kernel's own
  transfers as the distinct addresses its LOADs read and its STOREs write (glc/isa/transfer.py):
  a schedule that re-reads a tile adds no compulsory byte.
* **Roofline limit**: ``max(compute ideal, ⌈compulsory bytes / P⌉)``, P = ``dram_port_bytes``,
  the bytes the one DRAM port moves a cycle (LOAD and STORE share it). No schedule of the kernel
  can beat it on this machine.

A program's ideal and limit are the sums over its kernels (host steps are not timed);
``efficiency = limit / cycles``. A repack (a layout change the schedule search chose,
glc/lower/repack.py) is no work of the program: its ideal, bytes and limit are 0, its cycles
count against the limits of the kernels it serves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from glc.hwconfig import HwConfig
from glc.isa.encoding import Instruction
from glc.isa.transfer import element_bytes, expand, pitch

TRANSFERS = ("load", "store")


def array_ideal(m: int, k: int, n_out: int, n: int) -> int:
    """⌈M·K·Nₒ / N²⌉: an (M×K)·(K×Nₒ) product on an N×N array at N² MACs a cycle."""
    return -(-m * k * n_out // (n * n))


def vector_ideal(outputs: int, rows: int, lanes: int) -> int:
    """⌈outputs · rows / L⌉: a fold reading ``rows`` source elements per output, L a cycle."""
    return -(-outputs * rows // lanes)


def roofline(ideal: int, compulsory_bytes: int, port_bytes: int) -> int:
    """``max(ideal, ⌈compulsory bytes / P⌉)``: the compute ideal or the DRAM port's floor."""
    return max(ideal, -(-compulsory_bytes // port_bytes))


def efficiency(limit: int, cycles: int | None) -> float | None:
    """``limit / cycles``, rounded to 4 places; None without cycles."""
    return round(limit / cycles, 4) if cycles else None


def compulsory_bytes(instructions: list[Instruction]) -> int:
    """The distinct DRAM bytes the LOADs read plus those the STOREs write (a byte both read and
    written counts twice: it crosses the port both ways)."""
    total = 0
    for name in TRANSFERS:
        starts, ends = [], []
        for instruction in instructions:
            if instruction.op.name != name:
                continue
            size = element_bytes(instruction)
            runs = expand(instruction)
            offsets = np.arange(instruction["run"], dtype=np.int64) * pitch(instruction)
            first = (runs.address[:, None] + offsets)[runs.inside]
            starts.append(first)
            ends.append(first + size)
        if starts:
            total += _union_bytes(np.concatenate(starts), np.concatenate(ends))
    return total


def _union_bytes(starts: np.ndarray, ends: np.ndarray) -> int:
    """The size of the union of the byte intervals [start, end)."""
    if starts.size == 0:
        return 0
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    # An interval opens a new stretch where it starts past every earlier interval's end.
    fresh = np.empty(starts.size, dtype=bool)
    fresh[0] = True
    fresh[1:] = starts[1:] >= ends[:-1]
    first = np.flatnonzero(fresh)
    last = np.append(first[1:] - 1, starts.size - 1)
    return int((ends[last] - starts[first]).sum())


@dataclass(frozen=True)
class KernelLimit:
    """One kernel's work and limits: MACs (array kernels; 0 for a fold), the compute ideal,
    the compulsory DRAM bytes and the roofline limit, all in cycles but ``macs`` and ``bytes``."""

    macs: int
    ideal: int
    bytes: int
    limit: int


def compute_ideal(kind: str, m: int, k: int, n_out: int, config: HwConfig) -> int:
    """The compute ideal of a kernel of ``kind`` ("matmul" on the array, "fold" on the vector
    unit: ``m`` outputs of ``k`` rows each; "repack": none, see above; "diagonal": a depthwise
    product's group, glc/lower/depthwise.py, whose useful MACs are m·k, one weight per A
    element; "vector-depthwise" the same product on the vector unit, held to the same ideal:
    a layer's limit does not depend on the unit it runs on)."""
    n = config.array_size
    if kind == "repack":
        return 0
    if kind in ("diagonal", "vector-depthwise"):
        return array_ideal(m, k, 1, n)
    return vector_ideal(m, k, config.vector_lanes) if kind == "fold" else \
        array_ideal(m, k, n_out, n)


def kernel_limit(kernel, config: HwConfig) -> KernelLimit:
    """The limits of a lowered kernel (glc/lower/kernel.py's Kernel) on ``config``."""
    if kernel.kind == "repack":
        return KernelLimit(0, 0, 0, 0)
    ideal = compute_ideal(kernel.kind, kernel.m, kernel.k, kernel.n_out, config)
    moved = compulsory_bytes(kernel.instructions)
    depthwise = kernel.kind in ("diagonal", "vector-depthwise")
    macs = 0 if kernel.on_vector and not depthwise else kernel.m * kernel.k * (
        1 if depthwise else kernel.n_out)
    return KernelLimit(macs, ideal, moved, roofline(ideal, moved, config.dram_port_bytes))
