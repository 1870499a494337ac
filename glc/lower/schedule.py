"""The schedule search: how one systolic node runs, chosen by the analytic cost model.

A node C = A·B can run in several ways that compute the same values (docs/lowering.md, "The
schedule search"):

- the **orientation**: C = A·B with B stationary, or Cᵀ = Bᵀ·Aᵀ with A stationary (C stored
  transposed, the node's value a transposed view of it);
- the **layout change** of each operand: its tiles loaded as they lie, or by transposing LOADs
  (docs/isa.md, "Transposing LOAD"), which turn a tile whose rows are contiguous in DRAM but
  whose columns are strided (weights stored out×in, K of Q·Kᵀ, an NCHW image's pixels) into
  runs;
- the **K order**: which of K's digits is walked innermost, which sets the K tiles (16
  channels of one tap, or one channel's taps, for an NCHW convolution);
- the **step order** (gemm.py's k-outer or j-outer), and with it the operand that stays
  (k-outer keeps a block's output tiles in the accumulator, j-outer the block's A in the
  scratchpad);
- the **block of A rows** (the M tile): the largest that fits, or a half, a quarter … of it.

Every candidate is costed by the analytic tile-level model (glc/cost/kernel.py, memoised per
signature and config) and the fastest kept; no rule picks a schedule by hand. A candidate whose
operand the transfers cannot walk, or whose buffers do not fit, is skipped.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, replace

from glc.cost.kernel import splittable
from glc.cost.tiles import NO_TABLE, TableCost
from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.lower.kernel import kernel_bound, kernel_estimate
from glc.lower.table import StoreTable
from glc.lower.tiling import column_orders, flat_k, k_digits, shape, shared_k, transposed
from glc.lower.transfer import STEPPED, OperandUnexpressible, Target
from glc.lower.view import Digit, View, merge, row_major

BLOCK_DIVISORS = (2, 4, 8, 16)  # the smaller blocks of A rows tried (_smaller_blocks)
NEAR = 0.1  # candidates within this fraction of the best are tried with smaller blocks too


@dataclass(frozen=True)
class Schedule:
    """The chosen way to run a node: the operands as A, B, C of the kernel built, whether C
    holds the node's value transposed, the step order and predicted cycles."""

    a: Target
    b: Target
    c: Target
    swap: bool
    order: str
    k_inner: int | None  # the K digit walked innermost (glc/lower/kernel.py, shared_k)
    flat: bool  # K tiles flat across the digits (glc/lower/kernel.py, flat_k)
    block_rows: int  # the block of A rows (gemm.py's Mb)
    cycles: int
    group: int = 1  # j-outer's weight tiles a LOAD (gemm.py)
    split: bool = False  # the last K tile's output tiles in pairs (gemm.py, split MATMULs)
    spread: bool = False  # k-outer's A slices loaded in parts (gemm_plan.py, step_plan)


def orient(targets: dict[str, Target], dims: tuple[int, ...], swap: bool, c_address: int,
           raw: bool, c_stride: int | None = None
           ) -> tuple[Target, Target, Target]:
    """The operands (A, B, C) of C = A·B, or with ``swap`` of Cᵀ = Bᵀ·Aᵀ: the other
    operand stationary. C is stored row-major either way (Cᵀ's rows) at ``c_address``; with
    ``c_stride``, the stored matrix's rows (C's, or Cᵀ's) lie that many elements apart: a block
    of a wider matrix (a depthwise group's channels, a concatenation's band)."""
    a, b = targets["a"], targets["b"]
    esize = 4 if raw else 1
    if not swap:
        c = row_major("C", dims) if c_stride is None else \
            View("C", 0, ((Digit(dims[0], c_stride, ()),), (Digit(dims[1], 1, ()),)), ())
        return a, b, Target(c, c_address, esize)
    if len(a.view.groups) != 2:
        raise GlcError("a vector operand is not swapped")
    c = Target(row_major("C", dims[::-1]) if c_stride is None else View(
        "C", 0, ((Digit(dims[1], c_stride, ()),), (Digit(dims[0], 1, ()),)), ()),
        c_address, esize)
    return (replace(b, view=transposed(b.view)), replace(a, view=transposed(a.view)), c)


def _transposable(target: Target, *walked: Digit) -> bool:
    """Whether a transposing LOAD moves the operand's tiles in runs: its rows contiguous in
    DRAM or 2 or 4 bytes apart (a stride-1, 2 or 4 innermost row digit, plain or strided).
    ``walked``: B's innermost K digits in the K orders costed (shared_k), which need not be its
    last as the term has it (an NHWC image's channels under NCHW-ordered windows)."""
    rows = merge(target.view.groups[0]) if len(target.view.groups) == 2 else ()
    return any(d.stride in STEPPED for d in (*rows[-1:], *walked))


def _layouts(target: Target, n: int, *walked: Digit) -> tuple[Target, ...]:
    """The operand as it lies and, where it is ``_transposable``, loaded transposed."""
    if _transposable(target, *walked):
        return target, replace(target, transpose=n)
    return (target,)


def _k_orders(a: Target, b: Target) -> dict[int | None, tuple[Digit, ...]]:
    """The K orders worth costing, each with B's innermost K digit in it: each refined digit
    innermost, and the default (shared_k), one per distinct order (a digit that is already
    innermost, or the default's choice, is the same kernel)."""
    found: dict[tuple, tuple[int | None, tuple[Digit, ...]]] = {}
    for inner in (None, *range(k_digits(a, b))):
        a_view, b_view = shared_k(a.view, b.view, inner)
        found.setdefault(a_view.groups[-1], (inner, b_view.groups[0][-1:]))
    return dict(found.values())


def search(targets: dict[str, Target], dims: tuple[int, ...], raw: bool, relu: bool,
           shift: int, c_address: int, config: HwConfig,
           tables: Mapping[bool, StoreTable | None] | None = None,
           c_stride: int | None = None) -> Schedule:
    """The fastest schedule of C = A·B (+ bias) by the analytic model over the orientations
    (the keys of ``tables``, those allowed: by default both, with no table; a table of biases
    and multipliers takes accumulator rows from the schedule, as in the build), the operands'
    layouts and the step orders. Raises the first candidate's error when none can be built (an
    operand no transfer walks: the caller copies it)."""
    n = config.array_size
    best: Schedule | None = None
    failures: list[Exception] = []
    candidates = []
    for swap, table in (tables or {False: None, True: None}).items():
        try:
            a, b, c = orient(targets, dims, swap, c_address, raw, c_stride)
        except GlcError as error:
            failures.append(error)
            continue
        here, cost = config, table.cost if table is not None else NO_TABLE
        if table is not None:
            m = a.view.dims[0] if len(a.view.groups) == 2 else 1
            rows = table.table_rows(m, -(-c.view.dims[-1] // n), n)
            here = replace(config, accumulator_rows=config.accumulator_rows - rows)
        try:
            inners = _k_orders(a, b)
        except OperandUnexpressible as error:
            failures.append(error)
            continue
        orders = [(k, flat) for k in inners for flat in (False, True)
                  if not flat or flat_k(a, b, k, n)]
        # The output columns in another order where that fills the array's columns; not
        # under a table read by column (its vectors are walked in C's column order).
        columns = column_orders(b.view, c.view, n) if table is None or table.by_rows else \
            [(b.view, c.view)]
        # B transposed where its innermost K digit in some costed K order is a run; costed
        # with the K orders whose innermost digit is one, or with all where its last is.
        for (b_columns, c_columns), (k_inner, flat) in itertools.product(columns, orders):
            walked, stored = replace(b, view=b_columns), replace(c, view=c_columns)
            for a_layout, b_layout in itertools.product(
                    _layouts(a, n), _layouts(walked, n, *itertools.chain(*inners.values()))):
                if not b_layout.transpose or _transposable(walked, *inners[k_inner]):
                    candidates.append((_streamed(a_layout, b_layout, config, k_inner, flat),
                                       swap, a_layout, b_layout, stored, k_inner, flat, here,
                                       cost))
    # The fewest streamed rows first; a candidate whose rows alone take as many cycles as
    # the best estimate cannot beat it and is not estimated (a K tiling of 9 rows a tile).
    # Nor is one whose plans' bounds (kernel_bound) put it past NEAR of the best: it can be
    # neither the best nor near it, whatever the best becomes (it only falls).
    costed: list[tuple[Schedule, HwConfig, TableCost, int]] = []
    for rows, swap, a, b, c, k_inner, flat, here, cost in sorted(
            candidates, key=lambda candidate: candidate[0]):
        if best is not None and rows >= best.cycles:
            break
        try:
            if best is not None and kernel_bound(a, b, c, raw, relu, shift, here, k_inner,
                                                 flat=flat, table=cost) > \
                    best.cycles * (1 + NEAR):
                continue
            found = kernel_estimate(a, b, c, raw, relu, shift, here, k_inner, flat=flat,
                                    table=cost)
        except (OperandUnexpressible, GlcError) as error:
            failures.append(error)
            continue
        costed.append((Schedule(a, b, c, swap, found.order, k_inner, flat, found.block_rows,
                                found.cycles, found.group, found.split, found.spread),
                       here, cost, rows))
        if best is None or found.cycles < best.cycles:
            best = costed[-1][0]
    if best is None:
        raise failures[0]
    # Smaller blocks for every candidate near the best, not the best alone: a candidate a
    # few % slower at the largest block may win with a smaller one (an NCHW 3×3 conv's
    # 7 394 cycles, 7 173 with blocks of 49 rows, against another's 7 347 at any block).
    # The first of the fastest wins; a candidate whose streamed rows (a bound at any block)
    # reach the fastest so far cannot be it.
    chosen: Schedule | None = None
    for schedule, here, cost, rows in costed:
        if schedule.cycles > best.cycles * (1 + NEAR) or \
                chosen is not None and rows >= chosen.cycles:
            continue
        found = _smaller_blocks(schedule, raw, relu, shift, here, cost)
        if chosen is None or found.cycles < chosen.cycles:
            chosen = found
    return chosen


def _streamed(a: Target, b: Target, config: HwConfig, k_inner: int | None, flat: bool) -> int:
    """A lower bound on a candidate's cycles: the rows its MATMULs stream, every A row once
    per K tile and output tile whatever the blocks (busy_exec, docs/isa.md "Counters"), a
    last K tile that may split once per pair of output tiles."""
    try:
        tiling = shape(a, b, config.array_size, k_inner, flat)
    except (OperandUnexpressible, GlcError):
        return 0
    tiles_k, tiles_j = len(tiling.k_tiles), len(tiling.o_tiles)
    if splittable(config, tiling.k_tiles, tiling.o_tiles):
        return tiling.m * ((tiles_k - 1) * tiles_j + -(-tiles_j // 2))
    return tiling.m * tiles_k * tiles_j


def _smaller_blocks(best: Schedule, raw: bool, relu: bool, shift: int,
                    config: HwConfig, table: TableCost) -> Schedule:
    """The best schedule with its block of A rows cut to a half, a quarter … (gemm.py takes the
    largest block that fits; a smaller one lets a block's STOREs overlap the next block's
    compute, at the cost of reloading the weights once more per block)."""
    for divisor in BLOCK_DIVISORS:
        cap = best.block_rows // divisor
        if cap < config.array_size:
            break
        try:
            # An estimate whose plans' bounds reach the best's cycles cannot replace it.
            if kernel_bound(best.a, best.b, best.c, raw, relu, shift, config, best.k_inner,
                            cap, best.flat, table) >= best.cycles:
                continue
            found = kernel_estimate(best.a, best.b, best.c, raw, relu, shift, config,
                                    best.k_inner, cap, best.flat, table)
        except (OperandUnexpressible, GlcError):
            continue
        if found.cycles < best.cycles:
            best = replace(best, order=found.order, block_rows=found.block_rows,
                           cycles=found.cycles, group=found.group, split=found.split,
                           spread=found.spread)
    return best
