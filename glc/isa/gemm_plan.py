"""The plan of a multi-buffered GEMM on the N×N array (glc/isa/gemm.py emits it as
instructions, glc/cost/steps.py as tile operations): where A's rows come from, the blocking
that fits the memories (``plan``), and the steps in exec order with the load step of each A
slice (``step_plan``), split steps (``paired``) and grouped weight loads (``group_load_at``)
included. docs/lowering.md, "Tiling and the schedule"."""

from __future__ import annotations

import math
from dataclasses import dataclass

from glc.errors import GlcError
from glc.hwconfig import HwConfig

# A field's value: a number, a flag (True), or a DRAM address relative to operand "A", "B" or "C".
Fields = dict[str, int | bool | tuple[str, int]]


@dataclass(frozen=True)
class GemmLayout:
    """Where the operands live in DRAM, and the blocking chosen."""

    a: int
    b: int
    c: int
    order: str  # "k-outer" or "j-outer"
    block_rows: int  # Mb
    chunks: int  # MATMUL/STORE chunks per step
    weight_buffers: int  # D
    acc_slots: int  # k-outer: blocks of J tiles; j-outer: tiles (2, or 4 with split)
    weight_group: int = 1  # G: weight tiles one LOAD brings (j-outer: 1 or a divisor of K/N)
    # the last K tile (at most N/2 rows) feeds output tiles j, j+1 in one split MATMUL
    split: bool = False
    # k-outer: each A slice loaded in parts of N rows over the load steps from its buffer's
    # release to its first step (``step_plan``), not all at once
    spread: bool = False

    @property
    def acc_stride(self) -> int:
        """Accumulator rows from one output tile of a block to the next: a split MATMUL's two
        tiles must start an odd number of rows apart (docs/isa.md, MATMUL `split`)."""
        return self.block_rows + (self.split and self.block_rows % 2 == 0)


@dataclass(frozen=True)
class MatrixRows:
    """A as a row-major M×K int8 matrix: A rows are DRAM rows `k` bytes apart."""

    k: int
    granule: int = 1  # blocks and chunks of A rows are multiples of this

    def operands(self, first: int, count: int, kk: int, n: int) -> Fields:
        """LOAD operands for rows first … first+count−1 of K tile kk."""
        return {"dram": ("A", first * self.k + kk * n), "run": n, "count0": count,
                "stride0": self.k}


@dataclass(frozen=True)
class Im2colRows:
    """A as the im2col matrix of an NHWC int8 image (H×W×C, C a multiple of N): row = output
    pixel (oy, ox), K = (ky, kx, c). A block of whole output rows is one LOAD, the padding border
    read as zeros through the virtual coordinates (docs/isa.md, transfer pattern)."""

    h: int
    w: int
    c: int
    kw: int
    stride: int
    pad: int
    out_w: int

    @property
    def granule(self) -> int:
        """Blocks are whole output rows (one LOAD covers rows of pixels)."""
        return self.out_w

    def operands(self, first: int, count: int, kk: int, n: int) -> Fields:
        """LOAD operands for output pixels first … first+count−1 and K tile kk."""
        ky, rest = divmod(kk * n, self.kw * self.c)
        kx, channel = divmod(rest, self.c)
        s, c = self.stride, self.c
        y0, x0 = (first // self.out_w) * s + ky - self.pad, kx - self.pad
        if not -512 <= y0 < 512 or self.h >= 1024 or self.w >= 1024:
            raise GlcError(f"image {self.h}x{self.w} too large for the 10-bit virtual coordinates")
        return {"dram": ("A", (y0 * self.w + x0) * c + channel), "run": n,
                "count0": self.out_w, "stride0": s * c, "xcoef0": s,
                "count1": count // self.out_w, "stride1": s * self.w * c, "ycoef1": s,
                "y0": y0, "x0": x0, "ylim": self.h, "xlim": self.w}


def plan(m: int, k: int, n_out: int, config: HwConfig, source, order: str,
          raw: bool, cap: int = 0, group: int = 1, ragged: bool = False,
          split: bool = False, spread: bool = False) -> GemmLayout | None:
    """The blocking of one step order: the largest block of A rows (at most ``cap``, if not 0)
    whose buffers fit, dividing M or with ``ragged`` the fewest rows that make its number of
    blocks (``block_sizes``); ``group`` > 1: j-outer's weights that many tiles a LOAD;
    ``split``: the last K tile's output tiles in pairs; ``spread`` (k-outer, A rows whose
    granule divides N): the A slices loaded in parts."""
    n = config.array_size
    tiles_k, tiles_j = k // n, n_out // n
    # An A slice reuses the buffer of the slice two before it (k-outer: the K tile two before;
    # j-outer: the same K tile two blocks before), so its LOAD, which pops the token of the
    # step D (weight buffers) before it, must come D steps after that slice's last step: D is
    # at most one more than the steps between (k-outer: the shortest slice's, J or a split
    # last K tile's ⌈J/2⌉ pairs; j-outer: a block's, fewer with split pairs). With D = 3 and
    # J = 2, a block's next slice was loaded over one a step still read (issue 37's 5×5 conv;
    # j-outer with one K tile likewise, found by glc/isa/races.py).
    if order == "k-outer":
        between = -(-tiles_j // 2) if split else tiles_j
    else:
        between = (tiles_j // 2) * (2 * tiles_k - 1) + (tiles_j % 2) * tiles_k if split \
            else tiles_j * tiles_k
    buffers = min(3, between + 1)
    largest = min(m, 2047 * source.granule, cap or m)
    grouped = group > 1
    if grouped:  # one block of A rows (its slices in the first pass: _grouped); whole groups
        buffers, largest = 2 * group, m if largest == m and tiles_k % group == 0 else 0
    a_bytes = m * k if isinstance(source, MatrixRows) else source.h * source.w * source.c
    c_end = a_bytes + k * n_out + m * n_out * (4 if raw else 1)
    if c_end > config.dram_bytes:
        raise GlcError(f"gemm {m}x{k}x{n_out} does not fit in {config.dram_bytes} bytes of DRAM")
    for rows in block_sizes(m, source.granule, largest, ragged):
        if grouped and rows < m:
            break
        if order == "k-outer":
            a_rows, acc_rows = 2 * rows, (rows + (split and rows % 2 == 0)) * tiles_j
            slots = 2 if 2 * acc_rows <= config.accumulator_rows else 1
        else:
            slots = 4 if split else 2  # two pairs of tiles in flight
            a_rows = min(2, -(-m // rows)) * rows * tiles_k
            acc_rows = slots * (rows + (split and rows % 2 == 0))
        if acc_rows <= config.accumulator_rows and a_rows + buffers * n <= config.scratchpad_rows:
            quarter = rows // 4
            chunks = 4 if rows % 4 == 0 and quarter % source.granule == 0 and quarter >= 2 * n \
                else 1
            return GemmLayout(a=0, b=a_bytes, c=a_bytes + k * n_out, order=order,
                              block_rows=rows, chunks=chunks, weight_buffers=buffers,
                              acc_slots=slots, weight_group=group, split=split,
                              spread=spread and order == "k-outer" and n % source.granule == 0)
    return None


def block_sizes(m: int, granule: int, largest: int, ragged: bool) -> list[int]:
    """The blocks of A rows ``plan`` may take, largest first, at most ``largest``: multiples
    of ``granule`` dividing M, and with ``ragged`` for each number of blocks b the fewest
    rows making b blocks, granule·⌈(M/granule)/b⌉ (the last block overlapping the one
    before by fewer than that many rows)."""
    units = m // granule
    sizes = {d for d in range(1, math.isqrt(units) + 1) if units % d == 0}
    sizes |= {units // d for d in sizes}
    if ragged:  # ⌈units/b⌉ takes O(√units) values: from each, b jumps to where it drops
        b = 1
        while True:
            q = -(-units // b)
            sizes.add(q)
            if q == 1:
                break
            b = -(-units // (q - 1))
    return sorted((granule * q for q in sizes if granule * q <= largest), reverse=True)


def first_row(mb: int, rows: int, m: int) -> int:
    """The first A row of block ``mb`` of ``rows`` rows: the last block is the last ``rows``
    rows (ragged blocks)."""
    return min(mb * rows, m - rows)


def step_plan(m: int, k: int, n_out: int, n: int, layout: GemmLayout
              ) -> tuple[list[tuple[int, int, int]], dict[int, list[tuple[int, int, int, int]]]]:
    """The steps (block, k tile, output tile) in exec order, and which load step brings each A
    slice (block, k tile, its first row in the block, rows): the schedule's shape, shared by
    the emitter and the analytic cost model (glc/cost/kernel.py)."""
    tiles_k, tiles_j, blocks = k // n, n_out // n, -(-m // layout.block_rows)
    if layout.order == "k-outer":
        # A split last K tile takes its output tiles in pairs: step (mb, K/N − 1, j) for even j
        # covers j and j + 1 (``paired``), an odd J's last tile alone.
        steps = [(mb, kk, j) for mb in range(blocks) for kk in range(tiles_k)
                 for j in range(0, tiles_j, 2 if layout.split and kk == tiles_k - 1 else 1)]
    else:  # a pair's other K tiles, j's then j + 1's, then its split step (``paired``)
        steps = []
        for mb in range(blocks):
            for j in range(0, tiles_j, 2 if layout.split else 1):
                if layout.split and j + 1 < tiles_j:
                    steps += [(mb, kk, t) for t in (j, j + 1) for kk in range(tiles_k - 1)]
                    steps.append((mb, tiles_k - 1, j))
                else:
                    steps += [(mb, kk, j) for kk in range(tiles_k)]
    # A slice a = mb·K/N + kk loads by its first step. k-outer: it shares a buffer with slice
    # a − 2, so it loads at the earliest step whose buffer-free token (from step s − D) proves
    # slice a − 2's last step done. j-outer: at its first step (the block's first pass).
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for s, (mb, kk, _) in enumerate(steps):
        first.setdefault(mb * tiles_k + kk, s)
        last[mb * tiles_k + kk] = s
    slice_step: dict[int, list[tuple[int, int, int, int]]] = {}
    rows = layout.block_rows
    for a, needed in first.items():
        at = needed
        # The slice whose buffer it takes, and the first step whose LOADs may overwrite it.
        before = a - (2 if layout.order == "k-outer" else 2 * tiles_k)
        free = last[before] + layout.weight_buffers if before >= 0 else 0
        if layout.order == "k-outer":
            at = min(layout.weight_buffers - 1, needed) if before < 0 else free
        if free > at or at > needed:  # it would overwrite a slice a step still reads
            raise GlcError(f"{layout.order} slice {a} is needed at step {needed} but its "
                           f"buffer is free from step {free} (an internal error of plan())")
        # Spread: a slice of many LOADs (a transposing one is a LOAD per N rows) would fill
        # the LOAD queue, and the dispatcher, in program order, would hold the array's next
        # steps behind it; in parts of N rows, a part a load step, up to its first step, it
        # does not (gemm.py, "A slices in parts").
        parts = min(needed - at + 1, -(-rows // n)) if layout.spread else 1
        part = n * -(-rows // (n * parts)) if parts > 1 else rows
        for p, offset in enumerate(range(0, rows, part)):
            slice_step.setdefault(at + p, []).append(
                (*divmod(a, tiles_k), offset, min(part, rows - offset)))
    return steps, slice_step


def paired(layout: GemmLayout, kk: int, j: int, tiles_k: int, tiles_j: int) -> bool:
    """Whether step (·, kk, j) is a split MATMUL's, for output tiles j and j + 1."""
    return layout.split and kk == tiles_k - 1 and j + 1 < tiles_j


def acc_tile(layout: GemmLayout, mb: int, j: int, blocks: int, tiles_j: int
             ) -> tuple[int, bool, bool]:
    """Accumulator tile (mb, j): its slot (its first row is slot · acc_stride, k-outer's
    tiles of a block side by side), whether its first write waits for the store of the tile
    before it in the same rows (pop st2ex), and whether its store frees the rows for a later
    tile (push st2ex). Shared by the emitter and the analytic model."""
    slots = layout.acc_slots
    if layout.order == "k-outer":
        return (mb % slots) * tiles_j + j, mb >= slots, mb + slots < blocks
    tile = mb * tiles_j + j
    return tile % slots, tile >= slots, tile + slots < blocks * tiles_j


def group_load_at(g: int, size: int, tiles_k: int) -> int:
    """The exec step before which a grouped schedule emits group g + 1's LOAD (after that
    step's A slice, if any). ld2ex's pops take its pushes in order, and in the first pass over
    K each step's A slice is loaded a step ahead, pushed for its step: there group g + 1's
    LOAD goes between the slices of the steps either side of the groups' boundary (the last
    step of group g pops its slice's push, the first of group g + 1 the group's, then its
    MATMUL its slice's). Past the first pass, at the second step of group g."""
    boundary = (g + 1) * size
    return boundary - 2 if boundary <= tiles_k else g * size + 1
