"""One systolic-array node as an accelerator kernel: tiling, schedule, transfers.

The schedule is glc/isa/gemm.py's (multi-buffered weights, loads two steps ahead, stores
draining while the array computes), generated on its canonical layout: A a row-major M×K′
matrix, B K′×Nₒ′, C M×Nₒ′ with K′ and Nₒ′ padded to whole N×N tiles. Each LOAD and STORE of that
program is then *retargeted*: decoded back to the tile it moves (rows, K tile, output tile) and
replaced by the transfers of the operand's own view (glc/lower/transfer.py), keeping its token
flags (pops on the first replacement, pushes on the last). So im2col, transposes and zero padding
are address patterns, and the token protocol is exactly gemm.py's.

Tiles follow the digits of the views: a K tile is a run of K indices that is one box in both A's
columns and B's rows (e.g. one input channel's 3×3 taps, 9 of the N rows), so each LOAD writes
whole local rows; the unused rows and columns of a tile are the LOAD's zero fill (A) or are
multiplied by those zeros (B), and the STORE crops them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from glc.hwconfig import HwConfig
from glc.isa.asm import assemble, disassemble
from glc.isa.cycles import predict
from glc.isa.encoding import Instruction, encode
from glc.isa.gemm import gemm_program
from glc.lower.transfer import Target, Unexpressible, single_box, transfers
from glc.lower.view import Digit, merge

Range = tuple[int, int]  # (first index, count)


@dataclass
class Kernel:
    """An accelerator kernel: C = A·B (M×K·K×Nₒ) with the fused output conversion."""

    label: str  # the term it implements, for the assembly's comments
    m: int
    k: int
    n_out: int
    raw: bool
    relu: bool
    shift: int
    instructions: list[Instruction]

    @property
    def words(self) -> list[int]:
        return [encode(i) for i in self.instructions]

    def ideal_cycles(self, n: int) -> int:
        """⌈M·K·Nₒ / N²⌉ (architecture.md, "The limit we measure against")."""
        return -(-self.m * self.k * self.n_out // (n * n))

    def predicted_cycles(self, config: HwConfig) -> int:
        """The cycle model's count (glc.isa.cycles), the cost a later extraction can use."""
        return predict(self.instructions, config).counters.cycles

    def text(self) -> str:
        """Readable assembly: a comment naming the term, then one instruction per line."""
        comment = "".join(f"; {line}\n" for line in self.label.splitlines())
        mode = "int32" if self.raw else f"int8, relu={int(self.relu)}, shift={self.shift}"
        return (f"{comment}; C = A·B: {self.m}x{self.k} · {self.k}x{self.n_out}, "
                f"stored {mode}\n{disassemble(self.words)}")


class OperandUnexpressible(Exception):
    """Operand ``which`` ("a" or "b") has a view the transfers cannot walk."""

    def __init__(self, which: str, reason: str):
        super().__init__(f"operand {which}: {reason}")
        self.which = which


def tiles(group: tuple[Digit, ...], n: int) -> list[list[Range]]:
    """Candidate tilings of a dim into boxes of at most n indices, fewest tiles first: the
    innermost digits whole, the next one cut into chunks (the last chunk may be short)."""
    sizes = [d.size for d in merge(group)]
    if not sizes:
        return [[(0, 1)]]
    found = []
    for j in range(len(sizes) - 1, -1, -1):
        suffix = math.prod(sizes[j + 1:])
        if suffix > n:
            break
        x = min(sizes[j], n // suffix)
        found.append([((outer * sizes[j] + t * x) * suffix, min(x, sizes[j] - t * x) * suffix)
                      for outer in range(math.prod(sizes[:j]))
                      for t in range(-(-sizes[j] // x))])
    return sorted(found, key=len)


def common_tiles(first: tuple[Digit, ...], second: tuple[Digit, ...], n: int) -> list[Range]:
    """A tiling of a dim shared by two views (K: A's columns, B's rows): every tile one box in
    both. Raises OperandUnexpressible("a") when none exists (materialising A makes one)."""
    for candidate in tiles(first, n) + tiles(second, n):
        if all(single_box(merge(first), *r) and single_box(merge(second), *r)
               for r in candidate):
            return candidate
    raise OperandUnexpressible("a", "no K tiling is a box of both operands")


def build_kernel(label: str, a: Target, b: Target, c: Target, raw: bool, relu: bool,
                 shift: int, config: HwConfig) -> Kernel:
    """The kernel computing C = A·B on ``config``. A's view is ((M),(K)) or ((),(K)), B's
    ((),(K,Nₒ)), C's the result's row-major view."""
    n = config.array_size
    a_matrix, c_matrix = len(a.view.groups) == 2, len(c.view.groups) == 2
    m = a.view.dims[0] if a_matrix else 1
    k, n_out = b.view.dims
    k_tiles = common_tiles(b.view.groups[0], a.view.groups[-1], n)
    o_tiles = tiles(b.view.groups[1], n)[0]
    k_pad, o_pad = len(k_tiles) * n, len(o_tiles) * n
    text, layout = gemm_program(m, k_pad, o_pad, config, raw=raw, relu=relu, shift=shift)
    out: list[Instruction] = []
    esize = 4 if raw else 1
    for ins in assemble(text, config).instructions():
        name = ins.op.name
        if name == "load" and ins["dram"] < layout.b:
            first, rest = divmod(ins["dram"] - layout.a, k_pad)
            rows = (first, ins["count0"]) if a_matrix else None
            new = _retarget("a", a, rows, k_tiles[rest // n], ins, {})
        elif name == "load":
            kk, rest = divmod(ins["dram"] - layout.b, n * o_pad)
            new = _retarget("b", b, k_tiles[kk], o_tiles[rest // n], ins, {})
        elif name == "store":
            first, rest = divmod((ins["dram"] - layout.c) // esize, o_pad)
            rows = (first, ins["count0"]) if c_matrix else None
            mode = {"raw": int(raw), "relu": int(relu), "shift": shift}
            new = _retarget("c", c, rows, o_tiles[rest // n], ins, mode)
        else:
            out.append(ins)
            continue
        out += new
    return Kernel(label, m, k, n_out, raw, relu, shift, out)


def _retarget(which: str, target: Target, rows: Range | None, cols: Range, ins: Instruction,
              mode: dict[str, int]) -> list[Instruction]:
    """The transfers replacing ``ins``: its pops on the first, its pushes on the last."""
    try:
        values = transfers(target, rows, cols, ins["row"], mode)
    except Unexpressible as error:
        raise OperandUnexpressible(which, str(error)) from None
    name = ins.op.name
    flags = [f.name for f in ins.op.fields if f.flag and f.name.startswith(("pop", "push"))]
    result = []
    for index, fields in enumerate(values):
        for flag in flags:
            first_or_last = index == 0 if flag.startswith("pop") else index == len(values) - 1
            fields[flag] = ins[flag] if first_or_last else 0
        result.append(Instruction.make(name, **fields))
    return result
