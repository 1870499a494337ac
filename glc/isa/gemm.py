"""A hand-scheduled, multi-buffered int8 GEMM program: C = A·B on the N×N array.

The reference schedule the cycle model is measured on (scripts/benchmarks/isa.py) and a large
test program for the simulator and the RTL. A is M×K, B is K×Nₒ (row-major int8, K and Nₒ
multiples of N); C is M×Nₒ, int8 (ReLU/requantize) or raw int32.

Schedule: M in blocks of Mb rows; within a block, for each K tile `kk` and output tile `j`, one
*step*: PRELOAD the weight tile B[kk, j], MATMUL the block's A slice into the accumulator tile
(accumulating over kk). Weight tiles are triple-buffered in the scratchpad, A slices double-
buffered, accumulator blocks double-buffered when two fit. Loads run up to two steps ahead of
the array (tokens ld2ex/ex2ld), stores drain each finished tile in chunks (ex2st/st2ex), so DMA
hides behind compute and the array streams without bubbles (docs/isa.md, "Timing").
"""

from __future__ import annotations

from dataclasses import dataclass

from glc.errors import GlcError
from glc.hwconfig import HwConfig


@dataclass(frozen=True)
class GemmLayout:
    """Where the operands live in DRAM, and the blocking chosen."""

    a: int
    b: int
    c: int
    block_rows: int  # Mb
    chunks: int  # MATMUL/STORE chunks per step
    weight_buffers: int  # D
    acc_blocks: int  # R


@dataclass(frozen=True)
class MatrixRows:
    """A as a row-major M×K int8 matrix: A rows are DRAM rows `k` bytes apart."""

    k: int
    granule: int = 1  # blocks and chunks of A rows are multiples of this

    def operands(self, first: int, count: int, kk: int, n: int) -> str:
        """LOAD operands for rows first … first+count−1 of K tile kk."""
        return f"dram=A + {first * self.k + kk * n}, run=N, count0={count}, stride0={self.k}"


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
        return self.out_w

    def operands(self, first: int, count: int, kk: int, n: int) -> str:
        """LOAD operands for output pixels first … first+count−1 and K tile kk."""
        ky, rest = divmod(kk * n, self.kw * self.c)
        kx, channel = divmod(rest, self.c)
        s, c = self.stride, self.c
        y0, x0 = (first // self.out_w) * s + ky - self.pad, kx - self.pad
        if not -512 <= y0 < 512 or self.h >= 1024 or self.w >= 1024:
            raise GlcError(f"image {self.h}x{self.w} too large for the 10-bit virtual coordinates")
        return (f"dram=A + {(y0 * self.w + x0) * c + channel}, run=N, "
                f"count0={self.out_w}, stride0={s * c}, xcoef0={s}, "
                f"count1={count // self.out_w}, stride1={s * self.w * c}, ycoef1={s}, "
                f"y0={y0}, x0={x0}, ylim={self.h}, xlim={self.w}")


def gemm_program(m: int, k: int, n_out: int, config: HwConfig, raw: bool = False,
                 relu: bool = False, shift: int = 0,
                 source: MatrixRows | Im2colRows | None = None) -> tuple[str, GemmLayout]:
    """The assembly text of C = A·B and the DRAM layout it assumes (A at 0, then B, then C).

    `source` says how A's rows are gathered (default: a row-major M×K matrix).
    """
    n = config.array_size
    if m < 1 or k % n or n_out % n or not k or not n_out:
        raise GlcError(f"gemm {m}x{k}x{n_out}: K and Nout must be positive multiples of N={n}")
    source = source or MatrixRows(k)
    tiles_j = n_out // n
    buffers = min(3, tiles_j + 1)
    block = _block_rows(m, tiles_j, buffers, source.granule, config)
    quarter = block // 4
    chunks = 4 if quarter % source.granule == 0 and block % 4 == 0 and quarter >= 2 * n else 1
    acc_blocks = 2 if 2 * block * tiles_j <= config.accumulator_rows else 1
    esize = 4 if raw else 1
    a_bytes = m * k if isinstance(source, MatrixRows) else source.h * source.w * source.c
    layout = GemmLayout(a=0, b=a_bytes, c=a_bytes + k * n_out, block_rows=block, chunks=chunks,
                        weight_buffers=buffers, acc_blocks=acc_blocks)
    if layout.c + m * n_out * esize > config.dram_bytes:
        raise GlcError(f"gemm {m}x{k}x{n_out} does not fit in {config.dram_bytes} bytes of DRAM")
    return _Emitter(m, k, n_out, n, layout, source, (raw, relu, shift)).text(), layout


def conv2d_program(h: int, w: int, c: int, out_c: int, config: HwConfig, kernel: int = 3,
                   stride: int = 1, pad: int = 1, raw: bool = False, relu: bool = False,
                   shift: int = 0) -> tuple[str, GemmLayout]:
    """A 2-D convolution of an NHWC int8 image as an im2col GEMM: the image at `a`, the weights
    as the (KH·KW·C)×OC row-major matrix at `b` (rows ordered ky, kx, c), the NHWC output at
    `c`."""
    out_h, out_w = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
    source = Im2colRows(h, w, c, kernel, stride, pad, out_w)
    if c % config.array_size:
        raise GlcError(f"conv2d: C={c} must be a multiple of N={config.array_size}")
    return gemm_program(out_h * out_w, kernel * kernel * c, out_c, config, raw, relu, shift,
                        source)


def _block_rows(m: int, tiles_j: int, buffers: int, granule: int, config: HwConfig) -> int:
    """The largest divisor Mb of M (a multiple of `granule`) whose accumulator tiles and A
    slices fit."""
    n = config.array_size
    for rows in range(min(m, 2047 * granule), 0, -1):
        if (m % rows == 0 and rows % granule == 0 and rows * tiles_j <= config.accumulator_rows
                and 2 * rows + buffers * n <= config.scratchpad_rows):
            return rows
    raise GlcError(f"gemm with {tiles_j} output tiles does not fit the accumulator")


class _Emitter:
    def __init__(self, m, k, n_out, n, layout: GemmLayout, source, output):
        self.m, self.k, self.n_out, self.n, self.layout = m, k, n_out, n, layout
        self.source = source
        self.raw, self.relu, self.shift = output
        self.tiles_k, self.tiles_j = k // n, n_out // n
        self.blocks = m // layout.block_rows
        self.steps = [(mb, kk, j) for mb in range(self.blocks) for kk in range(self.tiles_k)
                      for j in range(self.tiles_j)]
        # A slice a (= mb·tiles_k + kk) is loaded with load step first_step(a): the earliest step
        # whose buffer-free token proves the slice two before it (same A buffer) is finished.
        self.slice_step = {}
        for a in range(self.blocks * self.tiles_k):
            at = max(0, (a - 1) * self.tiles_j - 1 + layout.weight_buffers)
            self.slice_step.setdefault(min(at, a * self.tiles_j), []).append(a)

    def text(self) -> str:
        lay = self.layout
        lines = [f"; C = A·B, A {self.m}x{self.k}, B {self.k}x{self.n_out}, int8 "
                 f"(glc/isa/gemm.py: Mb={lay.block_rows}, {lay.chunks} chunks, "
                 f"{lay.weight_buffers} weight buffers, {lay.acc_blocks} accumulator blocks)",
                 f".equ A, {lay.a}", f".equ B, {lay.b}", f".equ C, {lay.c}"]
        ahead = lay.weight_buffers - 1
        for s in range(min(ahead, len(self.steps))):
            lines += self._load_step(s)
        for s in range(len(self.steps)):
            if s + ahead < len(self.steps):
                lines += self._load_step(s + ahead)
            lines += self._exec_step(s)
        return "\n".join([*lines, "halt", ""])

    def _a_rows(self, a: int) -> int:
        return (a % 2) * self.layout.block_rows

    def _b_rows(self, s: int) -> int:
        return 2 * self.layout.block_rows + (s % self.layout.weight_buffers) * self.n

    def _load_step(self, s: int) -> list[str]:
        """Load step s: the A slices due now, then weight tile s; pushes ld2ex once per token the
        exec step pops (step 0 streams its first slice in chunks so compute starts early)."""
        lay, n = self.layout, self.n
        mb, kk, j = self.steps[s]
        pop = ", pop_next" if s >= lay.weight_buffers else ""
        weights = (f"load row={self._b_rows(s)}, dram=B + {kk * n * self.n_out + j * n}, "
                   f"run=N, count0=N, stride0={self.n_out}")
        lines = [f"; load step {s}: block {mb}, k tile {kk}, output tile {j}"]
        if s == 0:
            lines.append(weights + pop)
            rows = lay.block_rows // lay.chunks
            for c in range(lay.chunks):
                lines.append(f"load row={c * rows}, {self.source.operands(c * rows, rows, 0, n)}"
                             ", push_next")
            for a in self.slice_step.get(0, [])[1:]:
                lines.append(self._slice(a, ""))
            return lines
        for a in self.slice_step.get(s, []):
            lines.append(self._slice(a, pop))
            pop = ""
        lines.append(weights + pop + ", push_next")
        return lines

    def _slice(self, a: int, pop: str) -> str:
        mb, kk = divmod(a, self.tiles_k)
        rows = self.layout.block_rows
        return (f"load row={self._a_rows(a)}, "
                f"{self.source.operands(mb * rows, rows, kk, self.n)}{pop}")

    def _exec_step(self, s: int) -> list[str]:
        """Exec step s (PRELOAD, MATMUL chunks), then the stores of a finished output tile."""
        lay = self.layout
        mb, kk, j = self.steps[s]
        rows = lay.block_rows // lay.chunks
        region = (mb % lay.acc_blocks) * lay.block_rows * self.tiles_j + j * lay.block_rows
        last_k = kk == self.tiles_k - 1
        lines = [f"preload row={self._b_rows(s)}, pop_prev"]
        for c in range(lay.chunks):
            flags = []
            if kk:
                flags.append("accumulate")
            if s == 0 and c > 0:
                flags.append("pop_prev")
            if c == 0 and kk == 0 and mb >= lay.acc_blocks:
                flags.append("pop_next")
            if c == lay.chunks - 1 and s + lay.weight_buffers < len(self.steps):
                flags.append("push_prev")
            if last_k:
                flags.append("push_next")
            lines.append(f"matmul sp={self._a_rows(mb * self.tiles_k + kk) + c * rows}, "
                         f"acc={region + c * rows}, rows={rows}"
                         + "".join(", " + f for f in flags))
        if last_k:
            lines += self._store_tile(mb, j, region, rows)
        return lines

    def _store_tile(self, mb: int, j: int, region: int, rows: int) -> list[str]:
        lay, n = self.layout, self.n
        esize = 4 if self.raw else 1
        mode = "raw" if self.raw else ("relu, " if self.relu else "") + f"shift={self.shift}"
        lines = []
        for c in range(lay.chunks):
            first = mb * lay.block_rows + c * rows
            push = (", push_prev" if c == lay.chunks - 1 and mb + lay.acc_blocks < self.blocks
                    else "")
            lines.append(f"store {mode}, row={region + c * rows}, "
                         f"dram=C + {(first * self.n_out + j * n) * esize}, run=N, "
                         f"count0={rows}, stride0={self.n_out * esize}, pop_prev{push}")
        return lines
