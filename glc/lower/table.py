"""The accumulator rows a kernel's STOREs read: ONNX's float32 multipliers (STORE ``linear``,
glc/lower/linear.py) and the int32 bias (STORE ``bias``, docs/isa.md revision 2.5), each a
vector over C's dims that the kernel loads into the accumulator's top rows before its first
MATMUL.

Each vector varies along at most one of C's dims. Along its columns (a per-channel bias with the
channels as C's columns, per-tensor multipliers) each output tile's STOREs read one row by
column; along its rows (the channels as C's rows: a kernel computing Cᵀ) each STORE is cut into
runs of at most N rows, each reading its own row by local row (``qrows``). A key — an output
tile, or a run of C's rows — has one table row per vector: its multipliers', then its biases'.

Before revision 2.5 a kernel's bias was a LOAD to the accumulator of every row a STORE drains:
N int32 a row, as many DRAM beats as the row's MATMUL cycles at N = P = 16, and no accumulator
row could hold two output tiles (a large C was cut into kernels of chunks).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from glc.cost.tiles import TableCost
from glc.errors import DoesNotFit, GlcError
from glc.isa.encoding import Instruction
from glc.lower.transfer import OperandUnexpressible, Target, Unexpressible, transfers
from glc.lower.view import merge


@dataclass
class StoreTable:
    """A kernel's table: the multipliers (``linear``, with the zero point ``zero``) and the bias,
    each a matrix view of C's dims or None; ``table_row``, the accumulator row it starts at."""

    multipliers: Target | None
    zero: int = 0
    bias: Target | None = None
    table_row: int = 0
    by_rows: bool = False
    table: dict[tuple[int, int] | tuple[str, int], int] = field(default_factory=dict)  # key → index

    @property
    def vectors(self) -> list[tuple[str, Target]]:
        """(operand name, view) of the vectors the table holds, in their row order."""
        return [(name, t) for name, t in (("m", self.multipliers), ("bias", self.bias))
                if t is not None]

    @property
    def cost(self) -> TableCost:
        """What the table adds to the kernel, for the analytic model."""
        return TableCost(len(self.vectors), self.by_rows)

    def check(self) -> None:
        """Choose by column or by row; OperandUnexpressible when a vector varies along both of
        C's dims, or one along its rows and another along its columns."""
        along_rows, along_columns = [], []
        for which, target in self.vectors:
            groups = target.view.groups
            rows_alike = len(groups) == 1 or _broadcast(groups[0])
            columns_alike = len(groups) == 2 and _broadcast(groups[1])
            if not rows_alike and not columns_alike:
                raise OperandUnexpressible(which, "it varies along C's rows and columns")
            if not rows_alike:
                along_rows.append(which)
            elif not columns_alike:
                along_columns.append(which)
        if along_rows and along_columns:
            raise OperandUnexpressible(along_rows[0], "it varies along C's rows, "
                                       f"{along_columns[0]} along its columns")
        self.by_rows = bool(along_rows)

    def reserve(self, m: int, o_tiles: list[tuple[int, int]], n: int,
                accumulator_rows: int) -> int:
        """The accumulator rows the table may take (at most half of them); the table starts
        where the kernel's own rows end."""
        rows = self.table_rows(m, len(o_tiles), n)
        if 2 * rows > accumulator_rows:
            raise DoesNotFit(f"{rows} table rows (multipliers, biases) do not fit beside the "
                             f"kernel's {accumulator_rows} accumulator rows")
        self.table_row = accumulator_rows - rows
        return rows

    def table_rows(self, m: int, o_tiles: int, n: int) -> int:
        """The table's rows for a C of ``m`` rows in ``o_tiles`` output tiles: per vector, one
        per tile by column; by row one per N rows of C, twice (a store's rows split at most once
        more than N does)."""
        keys = 2 * -(-m // n) if self.by_rows else o_tiles
        return keys * len(self.vectors)

    def pieces(self, rows: tuple[int, int] | None, tile: int, n: int):
        """A STORE of C's ``rows`` (None: C is a vector) in output tile ``tile`` as (rows,
        fields) pieces: one piece by column; runs of at most N rows with ``qrows``."""
        if not self.by_rows:
            return [(rows, self.column(tile))]
        first, count = rows
        return [((r, min(n, first + count - r)), self._fields((r, min(n, first + count - r))))
                for r in range(first, first + count, n)]

    @property
    def uniform(self) -> bool:
        """Whether every vector repeats one value along C's columns (a per-tensor bias and
        multiplier: a global average pool's requantization): every output tile's STOREs then
        read the same rows, loaded once (a 1 280-channel pool on n16 loaded 80 tiles' rows, a
        scalar repeated N times each, in 3 482 cycles)."""
        return not self.by_rows and all(_broadcast(t.view.groups[-1]) for _, t in self.vectors)

    def column(self, tile: int) -> dict[str, int]:
        """The STORE fields for output tile ``tile`` (its N columns) by column."""
        return self._fields(("column", 0 if self.uniform else tile))

    def _fields(self, key) -> dict[str, int]:
        row = self.table_row + self.table.setdefault(key, len(self.table)) * len(self.vectors)
        fields = {"qrows": 1} if self.by_rows else {}
        if self.multipliers is not None:
            fields |= {"linear": 1, "zero": self.zero, "qrow": row}
            row += 1
        if self.bias is not None:
            fields |= {"bias": 1, "brow": row}
        return fields

    def loads(self, o_tiles: list[tuple[int, int]], reserved: int) -> list[Instruction]:
        """LOADs to ACC of the table rows the STOREs use (float32 bits or int32); the kernel's
        first instructions, so every STORE (which waits for a MATMUL, which waits for a later
        LOAD's token) finds them."""
        return [ins for _, ins in self.vector_loads(o_tiles, reserved)]

    def vector_loads(self, o_tiles: list[tuple[int, int]], reserved: int
                     ) -> list[tuple[str, Instruction]]:
        """``loads``, each with the vector it reads ("m" or "bias"): the operand whose DRAM
        address its own is relative to (glc/lower/relocate.py)."""
        if len(self.table) * len(self.vectors) > reserved:
            raise GlcError(f"{len(self.table) * len(self.vectors)} table rows exceed the "
                           f"{reserved} reserved")
        out = []
        for key, index in self.table.items():
            row = self.table_row + index * len(self.vectors)
            for which, target in self.vectors:
                view = target.view
                if key[0] == "column":
                    source = target
                    rows, cols = ((0, 1) if len(view.groups) == 2 else None), o_tiles[key[1]]
                else:  # C's rows key[0] … as the columns of one row
                    source = replace(target, view=replace(view, groups=view.groups[::-1]))
                    rows, cols = (0, 1), key
                try:
                    values = transfers(source, rows, cols, row, {"acc": 1})
                except Unexpressible as error:
                    raise OperandUnexpressible(which, str(error)) from None
                out += [(which, Instruction.make("load", **v)) for v in values]
                row += 1
        return out


def _broadcast(group) -> bool:
    """Whether a dim's digits all repeat one element (stride 0, no bound depends on them)."""
    return not any(d.stride or any(d.coefs) for d in merge(group))
