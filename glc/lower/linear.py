"""ONNX's requantization (``requantize-linear``) fused into a kernel's STORE.

A quantized conv or dense layer is ``(requantize-linear (compute elementwise-add (access-pair X
B)) M z)``: X the int32 product, seen through data-moving operators (a conv's NCHW transpose of
the array's result), B the int32 bias, M the float32 multipliers, z the zero point. The kernel
adds the bias in the accumulator and its STOREs requantize (docs/isa.md, STORE ``linear``) with
multipliers from accumulator rows the kernel loads first from M's tensor in DRAM, the zero point
a STORE field. M may vary along one of C's dims: along its columns (per tensor, or per channel
with the channels as C's columns) each output tile's STOREs take one row of multipliers by
column; along its rows (the channels as C's rows) each STORE is cut into runs of at most N rows,
each taking its own row of multipliers by local row (``qrows``).

The bias and the multipliers are given over the layer's dims; the kernel needs them over the
array's. The operators between are bijective (transpose, reshape, flatten, squeeze, insert-axis,
re-split), so each operand is pulled back through their inverses (``pulled_back``). A fold on
the vector unit (glc/lower/fold.py: a global average pool's sum plus its bias) requantizes the
same way, by column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from glc.errors import DoesNotFit, GlcError
from glc.ir.check import check
from glc.ir.term import Term, walk
from glc.ir.types import Access, ComputeKind
from glc.isa.encoding import Instruction
from glc.lower.transfer import OperandUnexpressible, Target, Unexpressible, transfers
from glc.lower.view import View, merge, view_of
from glc.syntax.reader import parse_term

# Data-moving operators that are bijections of the elements: requantize-linear (which maps 0 to
# z, not 0) commutes with them, and each has an inverse to pull an operand back through.
BIJECTIVE = ("access", "access-transpose", "access-reshape", "access-flatten", "access-squeeze",
             "access-insert-axis")
OPERAND = "__operand"  # the placeholder symbol an operand is pulled back from


@dataclass(frozen=True)
class LinearPlan:
    """A ``requantize-linear`` the lowering makes one kernel: ``systolic`` (int8 × int8), seen
    through ``chain`` (the topmost data-moving operator over it; None: the array itself), plus
    ``bias``, under ``relu``, requantized with ``multipliers`` and ``zero`` (terms over the
    layer's dims)."""

    systolic: Term
    chain: Term | None
    relu: bool
    bias: Term | None
    multipliers: Term
    zero: int


def match(node: Term, types: dict[int, object], uses: dict[int, int],
          is_array: Callable[[Term], bool]) -> LinearPlan | None:
    """The plan when ``node`` is ``requantize-linear`` of an int8 systolic array (through
    bijective views) plus at most an int32 bias, under at most a relu, each used only there."""
    if node.op != "requantize-linear" or uses[id(node.args[0])] > 1:
        return None
    current, multipliers, zero = node.args
    relu, bias = False, None
    if _kind(current, types) == "relu":
        relu, current = True, current.args[1]
        if uses[id(current)] > 1:
            return None
    if _kind(current, types) == "elementwise-add" and uses[id(current)] == 1:
        pair = current.args[1]
        if pair.op != "access-pair" or uses[id(pair)] > 1:
            return None
        for first, other in (pair.args, pair.args[::-1]):
            if types[id(other)].dtype == "int32" and _under(first, uses, is_array) is not None:
                current, bias = first, other
                break
        else:
            return None
    systolic = _under(current, uses, is_array)
    if systolic is None or any(types[id(x)].dtype != "int8" for x in systolic.args[2:]):
        return None
    return LinearPlan(systolic, None if current is systolic else current, relu, bias,
                      multipliers, zero.value)


def _kind(node: Term, types: dict[int, object]) -> str | None:
    if node.op != "compute":
        return None
    kind: ComputeKind = types[id(node.args[0])]
    return kind.name


def _under(node: Term, uses: dict[int, int], is_array: Callable[[Term], bool]) -> Term | None:
    """The systolic array ``node`` is, or views through bijective operators used only here."""
    if uses[id(node)] > 1:
        return None
    while node.op in BIJECTIVE and not is_array(node):
        node = node.args[0]
        if uses[id(node)] > 1:
            return None
    return node if is_array(node) else None


def pulled_back(operand: View, operand_type: Access, chain: Term | None,
                types: dict[int, object]) -> View:
    """``operand`` (a view over the layer's dims) over the array's dims: the inverses of the
    chain's operators, applied in reverse order."""
    text = f"(access-tensor {OPERAND})"
    node = chain
    while node is not None and node.op in BIJECTIVE:
        source: Access = types[id(node.args[0])]
        if node.op == "access-transpose":
            order = [int(x.value) for x in node.args[1].args]
            inverse = sorted(range(len(order)), key=order.__getitem__)
            text = f"(access-transpose {text} (list {' '.join(map(str, inverse))}))"
        elif node.op == "access-squeeze":
            text = f"(access-insert-axis {text} {node.args[1].value})"
        elif node.op == "access-insert-axis":
            text = f"(access-squeeze {text} {node.args[1].value})"
        else:  # re-split, flatten, reshape: back to the source's shape and item
            text = (f"(access-reshape {text} (access-shape (shape {_dims(source.shape)}) "
                    f"(shape {_dims(source.item)})))")
        node = node.args[0]
    term = parse_term(text)
    pulled_types = check(term, {OPERAND: operand_type})
    leaf = next(t for t in walk(term) if t.op == "symbol")
    return view_of(term, pulled_types, lambda t: operand if t is leaf else None)


def _dims(dims: tuple[int, ...]) -> str:
    return " ".join(map(str, dims))


@dataclass
class Linear:
    """A kernel's requantization: the multipliers as a float32 matrix view of C's dims, the
    zero point, and the accumulator rows from ``table_row`` on that hold them, one row per
    output tile (the multipliers vary along C's columns: STORE by column) or per run of at most
    N of C's rows (they vary along its rows: STORE ``qrows``, one STORE per such run)."""

    multipliers: Target
    zero: int
    table_row: int = 0
    by_rows: bool = False
    table: dict[tuple[int, int], int] = field(default_factory=dict)  # (first, count) → row

    def check(self) -> None:
        """Choose by column or by row; OperandUnexpressible("m") if the multipliers vary along
        both of C's dims."""
        groups = self.multipliers.view.groups
        if len(groups) == 1 or _broadcast(groups[0]):
            self.by_rows = False
        elif _broadcast(groups[1]):
            self.by_rows = True
        else:
            raise OperandUnexpressible("m", "the multipliers vary along C's rows and columns")

    def reserve(self, m: int, o_tiles: list[tuple[int, int]], n: int,
                accumulator_rows: int) -> int:
        """The accumulator rows the table may take (at most half of them); the table starts
        where the kernel's own rows end. A store's rows split at most once more than N does."""
        rows = self.table_rows(m, len(o_tiles), n)
        if 2 * rows > accumulator_rows:
            raise DoesNotFit(f"{rows} multiplier rows do not fit beside the kernel's "
                           f"{accumulator_rows} accumulator rows")
        self.table_row = accumulator_rows - rows
        return rows

    def table_rows(self, m: int, o_tiles: int, n: int) -> int:
        """The table's rows for a C of ``m`` rows in ``o_tiles`` output tiles: one per tile by
        column; by row one per N rows of C, twice (a store's rows split at most once more)."""
        return 2 * -(-m // n) if self.by_rows else o_tiles

    def pieces(self, rows: tuple[int, int] | None, tile: int, n: int):
        """A STORE of C's ``rows`` (None: C is a vector) in output tile ``tile`` as (rows,
        fields) pieces: one piece by column; runs of at most N rows with ``qrows``."""
        if not self.by_rows:
            return [(rows, self.column(tile))]
        first, count = rows
        return [((r, min(n, first + count - r)),
                 {**self._fields((r, min(n, first + count - r))), "qrows": 1})
                for r in range(first, first + count, n)]

    def column(self, tile: int) -> dict[str, int]:
        """The STORE fields for output tile ``tile`` (its N columns) by column."""
        return self._fields(("column", tile))

    def _fields(self, key) -> dict[str, int]:
        row = self.table.setdefault(key, self.table_row + len(self.table))
        return {"linear": 1, "zero": self.zero, "qrow": row}

    def loads(self, o_tiles: list[tuple[int, int]], reserved: int) -> list[Instruction]:
        """LOADs to ACC of the table rows the STOREs use (float32 bits as int32); the kernel's
        first instructions, so every STORE (which waits for a MATMUL, which waits for a later
        LOAD's token) finds them."""
        if len(self.table) > reserved:
            raise GlcError(f"{len(self.table)} multiplier rows exceed the {reserved} reserved")
        view = self.multipliers.view
        out = []
        for key, row in self.table.items():
            if key[0] == "column":
                source = self.multipliers
                rows, cols = ((0, 1) if len(view.groups) == 2 else None), o_tiles[key[1]]
            else:  # C's rows key[0] … as the columns of one row
                source = replace(self.multipliers, view=replace(view, groups=view.groups[::-1]))
                rows, cols = (0, 1), key
            try:
                values = transfers(source, rows, cols, row, {"acc": 1})
            except Unexpressible as error:
                raise OperandUnexpressible("m", str(error)) from None
            out += [Instruction.make("load", **v) for v in values]
        return out


def _broadcast(group) -> bool:
    """Whether a dim's digits all repeat one element (stride 0, no bound depends on them)."""
    return not any(d.stride or any(d.coefs) for d in merge(group))
