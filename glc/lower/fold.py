"""A fold on the vector unit as an accelerator kernel: pooling, reductions, elementwise pairs.

The vector unit folds ``group`` local rows into one accumulator row, elementwise over the N
columns (docs/isa.md, VECTOR). A fold node's result is laid out as a matrix whose last dim is the
columns (N outputs side by side) and whose other dims are the rows; each output row's operand
elements are local rows: for one operand, the folded indices of that row, innermost (a max
pool's window taps, a reduce-sum's item); for a pair, one row of each operand. The operand views
are transfers like a product's (glc/lower/transfer.py: windows, padding with the view's fill,
strides are address patterns), so a pool gathers its windows in the LOAD.

Tiles of output rows × N columns alternate between two halves of the local memories: LOADs
(int8 operands into the scratchpad, int32 ones into the accumulator), one VECTOR, STOREs (with the
fused relu/requantize), ordered by the vector tokens (ld2vu, vu2ld, vu2st, st2vu) so the next
tile's loads and the previous tile's stores overlap the fold.

A depthwise product on the vector unit (glc/lower/depthwise.py, ``Depthwise.matrices``) is a
pair ``mul`` reduced over its taps (``reduce``): the first operand's rows are (pixel, tap), the
second's the taps alone, loaded once a tile and shared by its pixels. Per pixel a VECTOR ``mul``
of its tap rows by the weights' (``gstride`` from one to the other) writes its products to the
accumulator half's first rows; one VECTOR ``add`` then sums each pixel's taps into the rows
after them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from glc.errors import DoesNotFit
from glc.hwconfig import HwConfig
from glc.isa.encoding import Instruction
from glc.isa.fields import VECTOR_OPS
from glc.lower import lookup
from glc.lower.fusion import Lin
from glc.lower.kernel import Kernel, OperandUnexpressible
from glc.lower.table import StoreTable
from glc.lower.transfer import Target, Unexpressible, transfers

MAX_FIELD = (1 << 16) - 1  # VECTOR's count and group, a transfer's count (docs/isa.md)


@dataclass(frozen=True)
class Fold:
    """``op`` over ``group`` indices of each operand (a pair: two operands, group 1), for a
    result of ``rows`` × ``cols``; each operand is a matrix view whose rows are the result's
    rows with the folded indices innermost and whose columns are the result's columns."""

    op: str
    operands: tuple[Target, ...]
    group: int
    rows: int
    cols: int
    wide: bool  # int32 operands: folded from the accumulator
    lin: Lin | None = None  # op `lin`: its offset and float32 constants
    table: Target | None = None  # op `lut`: its 256 entries (glc/lower/lookup.py)
    # A depthwise product's taps (0: none): operand b's rows, shared by operand a's outputs,
    # each output summing this many products.
    reduce: int = 0

    @property
    def per_row(self) -> int:
        """Local rows each of the first VECTOR's rows folds."""
        return self.group * len(self.operands)

    @property
    def outputs(self) -> int:
        """The result's rows."""
        return self.rows // max(self.reduce, 1)


def build_fold_kernel(label: str, fold: Fold, c: Target, raw: bool, relu: bool, shift: int,
                      config: HwConfig, table: StoreTable | None = None,
                      tile_rows: int = 0) -> Kernel:
    """The kernel computing ``fold`` into ``c`` (a row-major matrix view of the result);
    ``table``: its STOREs requantize by column (glc/lower/table.py), the multipliers in the
    accumulator's top rows; ``tile_rows``: a cap on the output rows of a tile (0: as many as
    half the buffers hold). Its LOADs of a tile wait for the STORE two tiles before or not,
    whichever the cycle model counts fewer.

    The LOAD unit wins the DRAM port on a tie (docs/isa.md, "Timing"): where the port is the
    bound (a pair: two rows in, one out, per VECTOR row of two), tile i + 2's LOADs, free to
    go once VECTOR i has read its rows, take the port before tile i's STORE, and VECTOR i + 2
    then waits for that STORE to free its accumulator half: a 512×28×28 add took 87 701
    cycles against the port's 75 264. Ordered through the EXEC unit, idle in a fold (the
    STORE pushes ``st2ex``, an EXEC SYNC passes it on as ``ex2ld``, the LOADs pop it), the
    same add takes 75 972; a fold bound by its VECTOR can lose a little so (a row sum of
    32×28×28: 6 481 → 6 563), hence the choice. (Figures of ISA revision 3.2. Since 3.3 a
    VECTOR completes 2 cycles after its last read, the STORE and the LOADs no longer meet on
    the port, and the same add takes 75 976 cycles unordered, 76 023 ordered.)"""
    # The two kernels move the same tiles: each tile's transfers are walked once, for both.
    walked: dict[tuple, list[dict[str, int]]] = {}
    kernel = _fold_kernel(label, fold, c, raw, relu, shift, config, table, tile_rows, walked,
                          False)
    ordered = _fold_kernel(label, fold, c, raw, relu, shift, config, table, tile_rows, walked,
                           True)
    if ordered.instructions == kernel.instructions or \
            kernel.predicted_cycles(config) <= ordered.predicted_cycles(config):
        return kernel
    return ordered


def _fold_kernel(label: str, fold: Fold, c: Target, raw: bool, relu: bool, shift: int,
                 config: HwConfig, table: StoreTable | None, tile_rows: int,
                 walked: dict[tuple, list[dict[str, int]]], ordered: bool) -> Kernel:
    """``build_fold_kernel``'s kernel, each tile's LOADs after the STORE two tiles before
    where ``ordered``; ``walked`` the transfers found so far, by operand and tile (the
    field values, which the instructions made from them copy)."""
    if fold.op not in VECTOR_OPS:
        raise ValueError(f"no vector operation {fold.op}")
    n = config.array_size
    columns = [(col, min(n, fold.cols - col)) for col in range(0, fold.cols, n)]
    if table is not None:
        reserved = table.reserve(fold.outputs, columns, n, config.accumulator_rows)
        config = replace(config, accumulator_rows=table.table_row)
    prelude = []
    if fold.table is not None:  # the vector unit's table first, in the top scratchpad rows
        prelude = lookup.table_instructions(fold.table, config)
        config = replace(config, scratchpad_rows=config.scratchpad_rows - lookup.rows(config))
    per_row = fold.per_row
    # Two halves of the source memory and of the accumulator rows written; int32 operands share
    # the accumulator with the results: four quarters.
    if fold.wide:
        source_half = out_half = config.accumulator_rows // 4
        out_base = 2 * source_half
    else:
        source_half, out_half, out_base = config.scratchpad_rows // 2, \
            config.accumulator_rows // 2, 0
    # A depthwise product's products fill the accumulator half's first rows and their sums the
    # rows after them, and its taps' weights (a transposing LOAD writes blocks of N rows) the
    # source half's last rows: whole outputs a tile.
    reduce = max(fold.reduce, 1)
    if fold.reduce:
        rows = min(fold.rows, source_half - -(-reduce // n) * n,
                   out_half * reduce // (reduce + 1), MAX_FIELD)
    else:
        rows = min(fold.rows, source_half // per_row, out_half, MAX_FIELD // per_row)
    if tile_rows:
        rows = min(rows, tile_rows * reduce)
    rows -= rows % reduce
    if rows < 1:
        raise DoesNotFit(f"a fold of {per_row} rows per output needs more than the "
                         f"{source_half} local rows of half a buffer on {config.name}")
    tiles = [(r, min(rows, fold.rows - r), col, min(n, fold.cols - col))
             for col in range(0, fold.cols, n) for r in range(0, fold.rows, rows)]
    loads = [_loads(fold, tile, index % 2 * source_half, source_half, index, ordered, walked)
             for index, tile in enumerate(tiles)]
    out: list[Instruction] = [*prelude, *loads[0], *(loads[1] if len(tiles) > 1 else [])]
    for index, (r0, count, col, width) in enumerate(tiles):
        later = index + 2 < len(tiles)
        dst = out_base + index % 2 * out_half
        tokens = {"pop_prev": 1, "pop_next": int(index >= 2)}
        done = {"push_prev": int(later), "push_next": 1}
        src = index % 2 * source_half
        if fold.reduce:
            out += _depthwise_vectors(reduce, src, dst, count, tokens, done)
            if reduce > 1:  # the sums, after the products
                dst += count
            r0, count = r0 // reduce, count // reduce
        else:
            out.append(Instruction.make(
                "vector", op=VECTOR_OPS.index(fold.op), src_acc=int(fold.wide), src=src,
                dst=dst, count=count, group=per_row,
                ostride=fold.group if len(fold.operands) == 1 else 1,
                gstride=1 if len(fold.operands) == 1 else count,
                **(fold.lin.fields if fold.lin is not None else {}), **tokens, **done))
        mode = {"raw": int(raw), "relu": int(relu), "shift": shift,
                **(table.column(col // n) if table is not None else {})}
        stores = _transfers(c, (r0, count), (col, width), dst, mode, "c", walked)
        out += flagged("store", stores, first={"pop_vec": 1},
                       last={"push_vec": int(later), "push_prev": int(later and ordered)})
        if later:
            if ordered:
                out.append(Instruction.make("sync", unit=1, pop_next=1, push_prev=1))
            out += loads[index + 2]
    out.append(Instruction.make("halt"))
    if table is not None:
        out = table.loads(columns, reserved) + out
    bias = table is not None and table.bias is not None
    if fold.reduce:  # a depthwise product: its useful MACs, one per product
        return Kernel(label, fold.outputs, reduce * fold.cols, 1, raw, relu, shift, out, bias,
                      kind="vector-depthwise")
    return Kernel(label, fold.rows * fold.cols, per_row, 1, raw, relu, shift, out, bias,
                  kind="fold")


def _depthwise_vectors(taps: int, src: int, dst: int, count: int, tokens: dict[str, int],
                       done: dict[str, int]) -> list[Instruction]:
    """A depthwise tile's VECTORs: its ``count`` image rows (pixel, tap) from ``src``, the taps'
    weights right after them; per pixel a ``mul`` of its taps by the weights into the
    accumulator from ``dst``, then one ``add`` of each pixel's ``taps`` products into the rows
    after them (none where a pixel has one tap: its product is its output). The vector unit
    runs its queue in order, so each reads what the one before wrote."""
    weights, pixels = src + count, count // taps
    out = [Instruction.make("vector", op=VECTOR_OPS.index("mul"), src=src + p * taps,
                            dst=dst + p * taps, count=taps, group=2, ostride=1,
                            gstride=weights - (src + p * taps),
                            **(tokens if p == 0 else {}),
                            **(done if taps == 1 and p == pixels - 1 else {}))
           for p in range(pixels)]
    if taps > 1:
        out.append(Instruction.make("vector", op=VECTOR_OPS.index("add"), src_acc=1, src=dst,
                                    dst=dst + count, count=pixels, group=taps, ostride=taps,
                                    gstride=1, **done))
    return out


def copy_kernel(label: str, source: Target, c: Target, config: HwConfig,
                tile_rows: int = 0) -> Kernel:
    """The fold copying the int8 matrix ``source`` into ``c`` (a row-major matrix of its
    shape): op ``add`` over one operand, stored with shift 0, so exact (a repack, a slice of a
    concatenation)."""
    rows, cols = source.view.dims
    fold = Fold("add", (source,), 1, rows, cols, wide=False)
    return build_fold_kernel(label, fold, c, raw=False, relu=False, shift=0, config=config,
                             tile_rows=tile_rows)


def _loads(fold: Fold, tile, base: int, half: int, index: int, ordered: bool,
           walked: dict[tuple, list[dict[str, int]]]) -> list[Instruction]:
    """The LOADs of one tile's operands into the source rows from ``base``: a pair's second
    operand after the first one's rows. The last operand may write past its rows to the end
    of the ``half`` (a transposing LOAD writes whole blocks of N rows: a copy of 9-row tiles,
    OIHW depthwise weights, moves a run per channel instead of a byte)."""
    r0, count, col, width = tile
    rows = count * fold.group
    fields = []
    for slot, operand in enumerate(fold.operands):
        last = slot == len(fold.operands) - 1
        # A depthwise product's weights: its taps, the same rows for every tile.
        which = (0, fold.reduce) if slot and fold.reduce else (r0 * fold.group, rows)
        fields += _transfers(operand, which, (col, width),
                             base + slot * rows, {"acc": int(fold.wide)}, "ab"[slot], walked,
                             half - slot * rows if last else rows)
    return flagged("load", fields, first={"pop_vec": int(index >= 2),
                                          "pop_next": int(index >= 2 and ordered)},
                   last={"push_vec": 1})


def _transfers(target: Target, rows, cols, local_row: int, mode: dict[str, int],
               which: str, walked: dict[tuple, list[dict[str, int]]],
               room: int | None = None) -> list[dict[str, int]]:
    """The transfers of operand ``which`` (of one kernel: "a", "b" or "c"), from ``walked``
    where found before."""
    key = (which, rows, cols, local_row, tuple(mode.items()), room)
    found = walked.get(key)
    if found is None:
        try:
            found = walked[key] = transfers(target, rows, cols, local_row, mode, room)
        except Unexpressible as error:
            raise OperandUnexpressible(which, str(error)) from None
    return found


def flagged(name: str, fields: list[dict[str, int]], first: dict[str, int],
             last: dict[str, int]) -> list[Instruction]:
    """The instructions, the token pops on the first and the pushes on the last."""
    out = []
    for index, values in enumerate(fields):
        flags = {**(first if index == 0 else {}), **(last if index == len(fields) - 1 else {})}
        out.append(Instruction.make(name, **values, **flags))
    return out
