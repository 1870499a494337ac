"""One systolic-array node as an accelerator kernel: schedule and transfers over the tiling of
glc/lower/tiling.py.

The schedule is glc/isa/gemm.py's (multi-buffered weights, loads two steps ahead, stores
draining while the array computes), generated on its canonical layout: A a row-major M×K′
matrix, B K′×Nₒ′, C M×Nₒ′ with K′ and Nₒ′ padded to whole N×N tiles. Each LOAD and STORE of that
program is then *retargeted*: decoded back to the tile it moves (rows, K tile, output tile) and
replaced by the transfers of the operand's own view (glc/lower/transfer.py), keeping its token
flags (pops on the first replacement, pushes on the last). So im2col, transposes and zero padding
are address patterns, and the token protocol is exactly gemm.py's.

Tiles follow the digits of the views (glc/lower/tiling.py: a K tile is a box of the digits A's
columns and B's rows share once refined, in one part of K), so each LOAD writes whole local
rows; the unused rows and columns of a tile are the LOAD's zero fill (A) or are multiplied by
those zeros (B), and the STORE crops them.
A bias, like ONNX's requantization multipliers, is one accumulator row per output tile that the
STOREs read (glc/lower/table.py); the first MATMUL of a tile writes the accumulator fresh.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from glc.cost.kernel import Estimate, estimate, lower_bound
from glc.cost.limit import compute_ideal
from glc.cost.tiles import NO_TABLE, TableCost
from glc.hwconfig import HwConfig
from glc.isa.cycles import steps_cycles
from glc.isa.encoding import Instruction, encode
from glc.isa.gemm import gemm_instructions
from glc.isa.steps import Step, decode_all
from glc.lower.table import StoreTable
from glc.lower.tiling import Range, k_segments, shape
from glc.lower.transfer import OperandUnexpressible, Target, Unexpressible, transfers


@dataclass
class Kernel:
    """An accelerator kernel with its fused output conversion: C = A·B (M×K·K×Nₒ) on the array
    (``kind`` "matmul"), or M outputs each folding K values on the vector unit ("fold",
    glc/lower/fold.py; Nₒ = 1), or a copy on the vector unit that changes a tensor's layout
    for the next kernel ("repack", glc/lower/repack.py), or a product whose B is diagonal in
    each K tile ("diagonal": N channels of a depthwise product, glc/lower/depthwise.py), or a
    depthwise product on the vector unit ("vector-depthwise": M pixels, K its taps × channels,
    glc/lower/fold.py)."""

    label: str  # the term it implements, for the assembly's comments
    m: int
    k: int
    n_out: int
    raw: bool
    relu: bool
    shift: int
    instructions: list[Instruction]
    bias: bool = False  # the STOREs add a bias (glc/lower/table.py)
    kind: str = "matmul"
    estimated: int = 0  # the analytic model's cycles (glc/cost/kernel.py); 0: not estimated
    _cycles: dict[HwConfig, int] = field(default_factory=dict, repr=False, compare=False)
    # The decoded instructions per config (decode_all), for the kernel's and its image's cycle
    # model; shared by relocated copies (decoding reads no DRAM address and no zero point),
    # and not pickled: a compile cache entry holds the instructions.
    _steps: dict[HwConfig, list[Step]] = field(default_factory=dict, repr=False,
                                               compare=False)

    @property
    def words(self) -> list[int]:
        return [encode(i) for i in self.instructions]

    def ideal_cycles(self, config: HwConfig) -> int:
        """The compute ideal on ``config``'s array or vector unit (glc/cost/limit.py)."""
        return compute_ideal(self.kind, self.m, self.k, self.n_out, config)

    def predicted_cycles(self, config: HwConfig) -> int:
        """The cycle model's count (glc.isa.cycles), the cost a later extraction can use;
        memoised per configuration (the instructions do not change once built)."""
        if config not in self._cycles:
            self._cycles[config] = steps_cycles(self.steps(config), config)
        return self._cycles[config]

    def steps(self, config: HwConfig) -> list[Step]:
        """The instructions as the cycle model reads them (decode_all), memoised per config."""
        if config not in self._steps:
            self._steps[config] = decode_all(self.instructions, config)
        return self._steps[config]

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_steps": {}}

    def estimated_cycles(self, config: HwConfig) -> int:
        """The analytic model's cycles, or where it gave none (a fold) the cycle model's: what
        the cost extraction compares (Program.estimated_cycles)."""
        return self.estimated or self.predicted_cycles(config)

    @property
    def on_vector(self) -> bool:
        """Run by the vector unit (a fold or a repack), not the array."""
        return self.kind in ("fold", "repack", "vector-depthwise")

    def header(self) -> str:
        """Assembly comments: the term it implements and the product it computes."""
        comment = "".join(f"; {line}\n" for line in self.label.splitlines())
        mode = "int32" if self.raw else f"int8, relu={int(self.relu)}, shift={self.shift}"
        if self.kind == "repack":
            return f"{comment}; vector repack: {self.m} bytes into the next kernel's layout\n"
        if self.kind == "fold":
            return f"{comment}; vector fold: {self.m} outputs of {self.k} rows, stored {mode}\n"
        if self.kind == "vector-depthwise":
            return (f"{comment}; depthwise on the vector unit: {self.m} pixels of {self.k} "
                    f"taps × channels, stored {mode}\n")
        if self.kind == "diagonal":
            return (f"{comment}; depthwise: C = A·B, B diagonal in each K tile: {self.m}x{self.k}"
                    f" · {self.k}x{self.n_out}, stored {mode}\n")
        return (f"{comment}; C = A·B{' + bias' if self.bias else ''}: {self.m}x{self.k} · "
                f"{self.k}x{self.n_out}, stored {mode}\n")


def kernel_estimate(a: Target, b: Target, c: Target, raw: bool, relu: bool, shift: int,
                    config: HwConfig, k_inner: int | None = None, block_rows: int = 0,
                    flat: bool = False, table: TableCost = NO_TABLE) -> Estimate:
    """The analytic model's cycles for build_kernel's kernel (glc/cost/kernel.py) and the step
    order they are for; ``table`` what its table of biases and multipliers adds."""
    tiling = shape(a, b, config.array_size, k_inner, flat)
    return estimate(tiling.a, tiling.b, c, raw, relu, shift, config, tiling.k_tiles,
                    tiling.o_tiles, block_rows=block_rows, table=table)


def kernel_bound(a: Target, b: Target, c: Target, raw: bool, relu: bool, shift: int,
                 config: HwConfig, k_inner: int | None = None, block_rows: int = 0,
                 flat: bool = False, table: TableCost = NO_TABLE) -> int:
    """A lower bound on kernel_estimate's cycles for the same arguments (glc/cost/kernel.py,
    ``lower_bound``: no schedule run); raises what kernel_estimate raises where there is no
    plan."""
    tiling = shape(a, b, config.array_size, k_inner, flat)
    return lower_bound(tiling.a, tiling.b, c, raw, relu, shift, config, tiling.k_tiles,
                       tiling.o_tiles, block_rows=block_rows, table=table)


def build_kernel(label: str, a: Target, b: Target, c: Target, raw: bool, relu: bool,
                 shift: int, config: HwConfig, order: str | None = None,
                 k_inner: int | None = None, block_rows: int = 0,
                 table: StoreTable | None = None, flat: bool = False,
                 group: int = 1, split: bool = False, spread: bool = False,
                 operands: list[str | None] | None = None) -> Kernel:
    """The kernel computing C = A·B (+ bias) on ``config``. A's view is ((M),(K)) or ((),(K)),
    B's ((),(K,Nₒ)), C's the result's row-major view; ``order`` the step order (default: the
    one kernel_estimate predicts faster), ``k_inner`` the K digit walked innermost (shared_k),
    ``flat`` its tiles flat (flat_k), ``block_rows`` a cap on the block of A rows (one not
    dividing M is taken as the schedule's ragged block: glc/isa/gemm.py), ``group``
    the weight tiles of an output tile one LOAD brings (j-outer, glc/isa/gemm.py), ``split``
    whether the last K tile's output tiles pair in split MATMULs (k-outer), ``spread``
    whether its A slices load in parts (k-outer, glc/isa/gemm_plan.py); ``table`` the bias
    and ONNX's requantization the STOREs apply (glc/lower/table.py), in the accumulator's top
    rows. ``operands``, when given, receives for each instruction the operand its DRAM address
    is relative to ("a", "b", "c", the table's "m" or "bias"; None: it has none): where a
    relocation adds each operand's address (glc/lower/relocate.py)."""
    n = config.array_size
    a_matrix, c_matrix = len(a.view.groups) == 2, len(c.view.groups) == 2
    if order is None:
        found = kernel_estimate(a, b, c, raw, relu, shift, config, k_inner, block_rows, flat,
                                table.cost if table is not None else NO_TABLE)
        order, group, block_rows = found.order, found.group, found.block_rows
        split, spread = found.split, found.spread
    tiling = shape(a, b, n, k_inner, flat)
    a, b, m, k, n_out = tiling.a, tiling.b, tiling.m, tiling.k, tiling.n_out
    k_tiles, o_tiles = tiling.k_tiles, tiling.o_tiles
    k_pad, o_pad = len(k_tiles) * n, len(o_tiles) * n
    # The canonical layout only names tiles (its addresses are decoded below, never used), so
    # it may exceed the real DRAM: give gemm.py the whole 32-bit address space to lay it out in.
    canonical = replace(config, dram_bytes=1 << 32)
    if table is not None:
        reserved = table.reserve(m, o_tiles, n, config.accumulator_rows)
        canonical = replace(canonical, accumulator_rows=table.table_row)
    program, layout = gemm_instructions(m, k_pad, o_pad, canonical, raw=raw, relu=relu,
                                        shift=shift, order=order, block_rows=block_rows,
                                        group=group, ragged=bool(block_rows and m % block_rows),
                                        split=split, spread=spread)
    out: list[Instruction] = []
    sources: list[str | None] = []
    esize = 4 if raw else 1
    for ins in program:
        name = ins.op.name
        if name == "load" and ins["dram"] < layout.b:
            first, rest = divmod(ins["dram"] - layout.a, k_pad)
            rows = (first, ins["count0"]) if a_matrix else None
            part, cols = k_tiles[rest // n]
            new, which = _retarget("a", a[part], rows, cols, ins, {}), "a"
        elif name == "load":
            kk, rest = divmod(ins["dram"] - layout.b, n * o_pad)
            # A LOAD of N/2 rows: half a buffer, one split step's tile (gemm.py).
            segments = k_segments(k_tiles[kk:kk + max(1, ins["count0"] // n)], n)
            new = _retarget_b(b, segments, o_tiles[rest // n], ins, min(n, ins["count0"]))
            which = "b"
        elif name == "store":
            first, rest = divmod((ins["dram"] - layout.c) // esize, o_pad)
            rows = (first, ins["count0"]) if c_matrix else None
            mode = {"raw": int(raw), "relu": int(relu), "shift": shift}
            pieces = table.pieces(rows, rest // n, n) if table is not None else None
            new, which = _retarget("c", c, rows, o_tiles[rest // n], ins, mode, pieces), "c"
        else:
            out.append(ins)
            sources.append(None)
            continue
        out += new
        sources += [which] * len(new)
    if table is not None:
        loads = table.vector_loads(o_tiles, reserved)
        out = [ins for _, ins in loads] + out
        sources = [which for which, _ in loads] + sources
    if operands is not None:
        operands[:] = sources
    return Kernel(label, m, k, n_out, raw, relu, shift, out,
                  table is not None and table.bias is not None)


def _retarget(which: str, target: Target, rows: Range | None, cols: Range, ins: Instruction,
              mode: dict[str, int], pieces=None) -> list[Instruction]:
    """The transfers replacing ``ins``: its pops on the first, its pushes on the last;
    ``pieces`` split its rows, each (rows, extra fields) (glc/lower/table.py). They write no
    local row ``ins`` does not (a transposing LOAD writes whole N-row blocks)."""
    try:
        values = []
        for part, extra in pieces or [(rows, {})]:
            skip = part[0] - rows[0] if part is not None else 0
            values += transfers(target, part, cols, ins["row"] + skip, {**mode, **extra},
                                ins["count0"] - skip)
    except Unexpressible as error:
        raise OperandUnexpressible(which, str(error)) from None
    return _flagged(ins, values)


def _retarget_b(b: list[Target], segments: list[tuple[int, Range]], cols: Range,
                ins: Instruction, n: int) -> list[Instruction]:
    """The transfers replacing a LOAD of weight tiles (one, or a group: ``k_segments``),
    each segment's from the local row of its first tile, ``n`` rows a tile (N, or N/2: a
    split step's half buffer)."""
    values, row = [], ins["row"]
    try:
        for part, rows in segments:
            room = -(-rows[1] // n) * n
            values += transfers(b[part], rows, cols, row, {}, room)
            row += room
    except Unexpressible as error:
        raise OperandUnexpressible("b", str(error)) from None
    return _flagged(ins, values)


def _flagged(ins: Instruction, values: list[dict[str, int]]) -> list[Instruction]:
    """``values`` as instructions of ``ins``'s opcode with its pops on the first and its
    pushes on the last."""
    name = ins.op.name
    flags = [f.name for f in ins.op.fields if f.flag and f.name.startswith(("pop", "push"))]
    result = []
    for index, fields in enumerate(values):
        for flag in flags:
            first_or_last = index == 0 if flag.startswith("pop") else index == len(values) - 1
            fields[flag] = ins[flag] if first_or_last else 0
        result.append(Instruction.make(name, **fields))
    return result
