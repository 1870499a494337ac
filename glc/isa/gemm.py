"""Hand-scheduled, multi-buffered int8 GEMM and im2col conv2d programs: C = A·B on the N×N array.

The reference schedules the cycle model is measured on (scripts/benchmarks/isa.py) and large
test programs for the simulator and the RTL. A is M×K (a row-major matrix, or gathered from an
NHWC image by im2col), B is K×Nₒ (row-major int8, K and Nₒ multiples of N); C is M×Nₒ, int8
(ReLU/requantize) or raw int32.

A *step* is one weight tile: PRELOAD B[kk, j], then MATMUL a block of Mb A rows (in chunks) into
the accumulator tile (mb, j), accumulating over kk. Blocks are ⌈M/Mb⌉ of Mb rows each; with
``ragged`` Mb need not divide M, and the last block is the last Mb rows, overlapping the one
before it (its rows computed twice and stored twice, the same values): M = 361 (a 19×19 image)
has no divisor between 19 and 361, and blocks of 19 rows reload every weight tile 19 times.
Two step orders:
- "k-outer" (block, kk, j): one A slice at a time (double-buffered); all J tiles of a block stay
  in the accumulator until the last kk, so stores come at the end of each block.
- "j-outer" (block, j, kk): the block's whole A stays in the scratchpad, each output tile
  finishes every K/N steps and is stored while the next one computes (best for int32 output).
With ``split`` (configurations with `column_split`) the last K tile, whose K rows the caller
guarantees are at most N/2 (the rest of its A columns zero), takes its output tiles in pairs:
one weight buffer holds tile j's rows in its upper half and tile j+1's in its lower half, and
one split MATMUL streams the A slice once for both (docs/isa.md, MATMUL `split`). k-outer's
last K tile steps through the pairs; j-outer computes a pair's other K tiles, tile j's then
tile j+1's, then their split step, with four accumulator tiles (two pairs) instead of two.
Weight tiles are triple-buffered; loads run two steps ahead of the array (tokens ld2ex/ex2ld),
stores drain each finished tile in chunks (ex2st/st2ex), so DMA hides behind compute and the
array streams without bubbles (docs/isa.md, "Timing"). "auto" keeps whichever order the cycle
model predicts faster.

j-outer may load its weights in *groups*: G tiles of one output tile (G dividing K/N), B's N
columns of G·N consecutive K rows, as one LOAD into G consecutive buffers (two groups,
double-buffered), one token each way per group. A transposing LOAD of several N×N blocks
drains each block while the next one's beats arrive (docs/isa.md, "Transposing LOAD"); one
LOAD a tile waits for every drain, so a kernel streaming fewer than 2N rows a weight tile
from transposed tiles (Cᵀ = Bᵀ·Aᵀ of a layer with 24 output channels) was bound by its
LOADs, not its MATMULs.
"""

from __future__ import annotations

import functools

from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.isa.cycles import predict
from glc.isa.encoding import Instruction
from glc.isa.fields import UNITS
from glc.isa.gemm_plan import (
    Fields,
    GemmLayout,
    Im2colRows,
    MatrixRows,
    acc_tile,
    first_row,
    group_load_at,
    paired,
    plan,
    step_plan,
)


def gemm_program(m: int, k: int, n_out: int, config: HwConfig, raw: bool = False,
                 relu: bool = False, shift: int = 0,
                 source: MatrixRows | Im2colRows | None = None,
                 order: str = "auto", block_rows: int = 0,
                 group: int = 1, ragged: bool = False, split: bool = False,
                 spread: bool = False) -> tuple[str, GemmLayout]:
    """The assembly text of C = A·B and the DRAM layout it assumes (A at 0, then B, then C).

    `source` says how A's rows are gathered (default: a row-major M×K matrix); `order` is
    "k-outer", "j-outer" or "auto" (the one the cycle model predicts faster); `block_rows`, if
    not 0, caps the block of A rows (a schedule search may prefer smaller blocks); `group`
    (j-outer only), if above 1, loads that many weight tiles of an output tile as one LOAD;
    ``ragged``: the block need not divide M (the last block overlaps the one before);
    ``split``: the last K tile's steps pair their output tiles (its K rows at most N/2);
    ``spread``: k-outer's A slices loaded in parts of N rows (``step_plan``).
    """
    emitter = _schedule(m, k, n_out, config, raw, relu, shift, source, order, block_rows,
                        group, ragged, split, spread)
    return emitter.text(), emitter.layout


def gemm_instructions(m: int, k: int, n_out: int, config: HwConfig, raw: bool = False,
                      relu: bool = False, shift: int = 0, order: str = "auto",
                      block_rows: int = 0, group: int = 1, ragged: bool = False,
                      split: bool = False, spread: bool = False
                      ) -> tuple[list[Instruction], GemmLayout]:
    """``gemm_program``'s program as instructions (what assembling its text gives, without
    writing and parsing the text: the lowering builds every kernel from it)."""
    emitter = _schedule(m, k, n_out, config, raw, relu, shift, None, order, block_rows,
                        group, ragged, split, spread)
    return emitter.instructions(), emitter.layout


@functools.lru_cache(maxsize=256)
def _schedule(m: int, k: int, n_out: int, config: HwConfig, raw: bool, relu: bool, shift: int,
              source: MatrixRows | Im2colRows | None, order: str,
              block_rows: int, group: int, ragged: bool, split: bool,
              spread: bool) -> _Emitter:
    """The program's emitter for the chosen plan. Memoised: the extraction's costing and the
    lowering ask for the same schedules."""
    n = config.array_size
    if m < 1 or k % n or n_out % n or not k or not n_out:
        raise GlcError(f"gemm {m}x{k}x{n_out}: K and Nout must be positive multiples of N={n}")
    if group > 1 and order != "j-outer":
        raise GlcError("grouped weight loads are a j-outer schedule")
    if split and (group > 1 or not config.column_split):
        raise GlcError(f"split MATMULs load their weights a tile at a time, on an array that "
                       f"splits (column_split = {config.column_split})")
    source = source or MatrixRows(k)
    output = (raw, relu, shift)
    orders = ("k-outer", "j-outer") if order == "auto" else (order,)
    plans = [p for p in (plan(m, k, n_out, config, source, o, raw, block_rows, group, ragged,
                               split, spread) for o in orders) if p]
    if not plans:
        raise GlcError(f"gemm {m}x{k}x{n_out} ({order}) does not fit the memories of "
                       f"{config.name}")
    emitters = [_Emitter(m, k, n_out, n, plan, source, output) for plan in plans]
    if len(emitters) == 1:
        return emitters[0]
    return min(emitters, key=lambda e: predict(e.instructions(), config).counters.cycles)


def conv2d_program(h: int, w: int, c: int, out_c: int, config: HwConfig, kernel: int = 3,
                   stride: int = 1, pad: int = 1, raw: bool = False, relu: bool = False,
                   shift: int = 0, order: str = "auto") -> tuple[str, GemmLayout]:
    """A 2-D convolution of an NHWC int8 image as an im2col GEMM: the image at `a`, the weights
    as the (KH·KW·C)×OC row-major matrix at `b` (rows ordered ky, kx, c), the NHWC output at
    `c`."""
    out_h, out_w = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
    source = Im2colRows(h, w, c, kernel, stride, pad, out_w)
    if c % config.array_size:
        raise GlcError(f"conv2d: C={c} must be a multiple of N={config.array_size}")
    return gemm_program(out_h * out_w, kernel * kernel * c, out_c, config, raw, relu, shift,
                        source, order)



# A line of the program: a comment, or an instruction (mnemonic, fields).
Line = str | tuple[str, Fields]


class _Emitter:
    """The program of one plan, as lines: written as assembly text (``text``) or built as
    instructions (``instructions``), the same program either way."""

    def __init__(self, m, k, n_out, n, layout: GemmLayout, source, output):
        self.m, self.k, self.n_out, self.n, self.layout = m, k, n_out, n, layout
        self.source = source
        self.raw, self.relu, self.shift = output
        self.tiles_k, self.tiles_j = k // n, n_out // n
        self.blocks = -(-m // layout.block_rows)
        self.steps, self.slice_step = step_plan(m, k, n_out, n, layout)

    def lines(self) -> list[Line]:
        """The program: loads emitted D−1 steps ahead of the exec step that uses them, so every
        pop refers to a push from an instruction dispatched earlier (no deadlock)."""
        lay = self.layout
        lines: list[Line] = [
            f"C = A·B, A {self.m}x{self.k}, B {self.k}x{self.n_out}, int8 "
            f"(glc/isa/gemm.py: {lay.order}, Mb={lay.block_rows}, {lay.chunks} chunks, "
            f"{lay.weight_buffers} weight buffers, {lay.acc_slots} accumulator slots"
            f"{f', weights in groups of {lay.weight_group}' if lay.weight_group > 1 else ''}"
            f"{', A slices in parts' if lay.spread else ''})"]
        if lay.weight_group > 1:
            return [*lines, *self._grouped(), ("halt", {})]
        ahead = lay.weight_buffers - 1
        for s in range(min(ahead, len(self.steps))):
            lines += self._load_step(s)
        for s in range(len(self.steps)):
            if s + ahead < len(self.steps):
                lines += self._load_step(s + ahead)
            lines += self._exec_step(s)
        return [*lines, ("halt", {})]

    def _grouped(self) -> list[Line]:
        """The program with each group's weights one LOAD (one block of A rows: its K slices
        come in the first pass over K, each a step ahead of its step, each pushed for it), the
        next group's LOAD early in a group (``group_load_at``), so the dispatcher, in program
        order, never holds the array's steps behind a queue of LOADs."""
        size = self.layout.weight_group
        groups = len(self.steps) // size
        lines = [*self._load_group(0), *self._first_slice()]
        for s in range(len(self.steps)):
            g = s // size
            lines += self._slice(s + 1)
            if s == group_load_at(g, size, self.tiles_k) and g + 1 < groups:
                lines += self._load_group(g + 1)
            lines += self._exec_step(s)
        return lines

    def _load_group(self, g: int) -> list[Line]:
        """Group g's weight tiles (of one output tile, B's rows contiguous in its column box)
        as one LOAD; from group 2 on into the buffers of group g − 2, awaited."""
        n, size = self.n, self.layout.weight_group
        mb, kk, j = self.steps[g * size]
        weights = {"row": self._b_row(g * size), "dram": ("B", kk * n * self.n_out + j * n),
                   "run": n, "count0": size * n, "stride0": self.n_out}
        if g == 0:
            return [f"load group 0: k tiles 0..{size - 1}, output tile {j}", ("load", weights)]
        return [f"load group {g}: k tiles {kk}..{kk + size - 1}, output tile {j}",
                ("load", {**weights, **({"pop_next": True} if g >= 2 else {}),
                          "push_next": True})]

    def _slice(self, s: int) -> list[Line]:
        """The A slices due at step s (of the first pass over K), each pushed for its step."""
        rows = self.layout.block_rows
        return [("load", {"row": self._a_row(mb, kk) + offset,
                          **self.source.operands(first_row(mb, rows, self.m) + offset, count,
                                                 kk, self.n),
                          "push_next": True})
                for mb, kk, offset, count in self.slice_step.get(s, [])]

    def _first_slice(self) -> list[Line]:
        """Step 0's A slice in chunks, each pushed, so the array starts on the first."""
        rows = self.layout.block_rows // self.layout.chunks
        return [("load", {"row": c * rows, **self.source.operands(c * rows, rows, 0, self.n),
                          "push_next": True}) for c in range(self.layout.chunks)]

    def _waits_weights(self, s: int) -> bool:
        """Whether exec step s's PRELOAD pops ld2ex: every step, or with groups the first of
        each and the steps whose A slice was pushed on its own."""
        size = self.layout.weight_group
        return size == 1 or s % size == 0 or s in self.slice_step

    def _waits_slice(self, s: int) -> bool:
        """Whether exec step s's first MATMUL pops ld2ex too: a group's first step after the
        first whose A slice came on its own (its PRELOAD popped the group's push)."""
        size = self.layout.weight_group
        return size > 1 and s and s % size == 0 and s in self.slice_step

    def _frees_weights(self, s: int) -> bool:
        """Whether exec step s's last MATMUL pushes ex2ld: a buffer (or a group's buffers)
        that a later load reuses."""
        size, total = self.layout.weight_group, len(self.steps)
        if size == 1:
            return s + self.layout.weight_buffers < total
        return s % size == size - 1 and s // size + 2 < total // size

    def text(self) -> str:
        """The program as assembly, its operands' addresses as A, B and C plus an offset."""
        lay = self.layout
        title, *lines = self.lines()
        out = [f"; {title}", f".equ A, {lay.a}", f".equ B, {lay.b}", f".equ C, {lay.c}"]
        for line in lines:
            if isinstance(line, str):
                out.append(f"; {line}")
                continue
            mnemonic, fields = line
            operands = [name if value is True else
                        f"{name}={value[0]} + {value[1]}" if isinstance(value, tuple) else
                        f"{name}={value}" for name, value in fields.items()]
            out.append(f"{mnemonic} {', '.join(operands)}".rstrip())
        return "\n".join([*out, ""])

    def instructions(self) -> list[Instruction]:
        """The program as instructions."""
        lay = self.layout
        base = {"A": lay.a, "B": lay.b, "C": lay.c}
        return [Instruction.make(line[0], **{
            name: base[value[0]] + value[1] if isinstance(value, tuple) else int(value)
            for name, value in line[1].items()})
            for line in self.lines() if not isinstance(line, str)]

    def _a_row(self, mb: int, kk: int) -> int:
        """First scratchpad row of A slice (mb, kk)."""
        rows = self.layout.block_rows
        if self.layout.order == "k-outer":
            return ((mb * self.tiles_k + kk) % 2) * rows
        return (mb % 2) * rows * self.tiles_k + kk * rows

    def _b_row(self, s: int) -> int:
        """First scratchpad row of step s's weight tile: after the A buffers."""
        lay = self.layout
        if lay.order == "k-outer":
            base = 2 * lay.block_rows
        else:
            base = min(2, self.blocks) * lay.block_rows * self.tiles_k
        return base + (s % lay.weight_buffers) * self.n

    def _acc(self, mb: int, j: int) -> tuple[int, bool, bool]:
        """Accumulator tile (mb, j): its first row, whether it waits for a store and frees
        its rows (``acc_tile``)."""
        slot, wait, frees = acc_tile(self.layout, mb, j, self.blocks, self.tiles_j)
        return slot * self.layout.acc_stride, wait, frees

    def _load_step(self, s: int) -> list[Line]:
        """Load step s: the A slices due now, then weight tile s; pushes ld2ex once per token the
        exec step pops (step 0 streams its first slice in chunks so compute starts early)."""
        lay, n = self.layout, self.n
        mb, kk, j = self.steps[s]
        pop = {"pop_next": True} if s >= lay.weight_buffers else {}
        weights = {"row": self._b_row(s), "dram": ("B", kk * n * self.n_out + j * n), "run": n,
                   "count0": n, "stride0": self.n_out}
        lines: list[Line] = [f"load step {s}: block {mb}, k tile {kk}, output tile {j}"]
        if paired(lay, kk, j, self.tiles_k, self.tiles_j):
            # The upper N/2 rows of tile j, then of tile j + 1 below them: count0 N/2 marks a
            # half tile for the lowering's retargeting (glc/lower/kernel.py).
            half = n // 2
            lines[0] += f" and {j + 1} (split)"
            weights = {**weights, "count0": half}
            lines.append(("load", {**weights, **pop}))
            pop = {}
            weights = {**weights, "row": weights["row"] + half,
                       "dram": ("B", kk * n * self.n_out + (j + 1) * n)}
        if s == 0:
            return [*lines, ("load", weights), *self._first_slice()]
        for slice_mb, slice_kk, offset, count in self.slice_step.get(s, []):
            lines.append(("load", {"row": self._a_row(slice_mb, slice_kk) + offset,
                                   **self.source.operands(
                                       first_row(slice_mb, lay.block_rows, self.m) + offset,
                                       count, slice_kk, n),
                                   **pop}))
            pop = {}
        lines.append(("load", {**weights, **pop, "push_next": True}))
        return lines

    def _exec_step(self, s: int) -> list[Line]:
        """Exec step s (PRELOAD, MATMUL chunks), then the stores of a finished output tile."""
        lay = self.layout
        mb, kk, j = self.steps[s]
        rows = lay.block_rows // lay.chunks
        region, wait_store, _ = self._acc(mb, j)
        last_k = kk == self.tiles_k - 1
        split = paired(lay, kk, j, self.tiles_k, self.tiles_j)
        lines: list[Line] = [("preload", {"row": self._b_row(s),
                                          **({"pop_prev": True} if self._waits_weights(s)
                                             else {})})]
        # The stores the first MATMUL waits for: its tiles' of a block before, where it writes
        # them fresh (a split step of a K of one tile writes two: a SYNC pops the first).
        fresh = (wait_store + (split and self._acc(mb, j + 1)[1])) if kk == 0 else 0
        if fresh == 2:
            lines.append(("sync", {"unit": UNITS.index("exec"), "pop_next": True}))
        for c in range(lay.chunks):
            fields: Fields = {"sp": self._a_row(mb, kk) + c * rows, "acc": region + c * rows,
                              "rows": rows}
            if split:
                fields |= {"split": True, "acc2": self._acc(mb, j + 1)[0] + c * rows}
            if kk:
                fields["accumulate"] = True
            if (s == 0 and c > 0) or (c == 0 and self._waits_slice(s)):
                fields["pop_prev"] = True
            if c == 0 and fresh:
                fields["pop_next"] = True
            if c == lay.chunks - 1 and self._frees_weights(s):
                fields["push_prev"] = True
            if last_k and (c == lay.chunks - 1 or not split):
                fields["push_next"] = True
            lines.append(("matmul", fields))
        if split:
            # Each tile one STORE, the first popping the last chunk's push, the second after
            # it: in chunks, a pair's eight STOREs a step would fill the store queue and hold
            # the dispatcher (in program order) behind them.
            lines += self._store_tile(mb, j, lay.block_rows, 1)
            lines += self._store_tile(mb, j + 1, lay.block_rows, 1, waits=False)
        elif last_k:
            lines += self._store_tile(mb, j, rows, lay.chunks)
        return lines

    def _store_tile(self, mb: int, j: int, rows: int, chunks: int, waits: bool = True
                    ) -> list[Line]:
        lay, n = self.layout, self.n
        region, _, frees = self._acc(mb, j)
        esize = 4 if self.raw else 1
        mode: Fields = {"raw": True} if self.raw else \
            {**({"relu": True} if self.relu else {}), "shift": self.shift}
        lines: list[Line] = []
        for c in range(chunks):
            first = first_row(mb, lay.block_rows, self.m) + c * rows
            fields: Fields = {**mode, "row": region + c * rows,
                              "dram": ("C", (first * self.n_out + j * n) * esize), "run": n,
                              "count0": rows, "stride0": self.n_out * esize,
                              **({"pop_prev": True} if waits else {})}
            if c == chunks - 1 and frees:
                fields["push_prev"] = True
            lines.append(("store", fields))
        return lines
