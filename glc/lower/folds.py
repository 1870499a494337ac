"""Folds on the vector unit in the lowering (docs/lowering.md, "Folds on the vector unit"): a node
the vector unit computes becomes a fold kernel (glc/lower/fold.py) over its operands' views, laid
out with the dim its operands walk contiguously as its columns.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from glc.errors import DoesNotFit
from glc.ir.term import Term
from glc.ir.types import Access
from glc.lower import lookup
from glc.lower.concat import Band
from glc.lower.fold import Fold, build_fold_kernel
from glc.lower.kernel import Kernel
from glc.lower.program import Buffer, KernelStep, aligned
from glc.lower.repack import Repack, repacks
from glc.lower.table import StoreTable
from glc.lower.transfer import OperandUnexpressible, Target
from glc.lower.view import Digit, View, access_chain, merge, row_major, view_of

# The tile heights, in blocks of N rows, a fold reading transposed is tried at: one block a
# tile lets a lone operand's STORE fit in its LOAD's drain (glc/lower/repack.py); a pair's two
# LOADs a tile drain twice, so its tiles are taller (a 512×28×28 residual add stored
# channels-last: 105 112 cycles at one block, 82 210 at eight, 75 264 its port floor).
TILE_BLOCKS = (1, 2, 4, 8, 16)


class Folds:
    """The lowering's folds (a mixin of the lowering, which holds the memory plan)."""

    def _fold(self, node: Term) -> View | None:
        """The fold kernel for ``node``, its result's view; None if the transfers cannot walk
        an operand or the buffers cannot hold a fold (then it is a host step). A fold of one
        operand that no column walks contiguously (a strided pool over NCHW: an element a run)
        reads a repack of the operand's tensor instead (glc/lower/repack.py) where the copy and
        the fold over it take fewer cycles."""
        plan = self.rule.fold_plan(node)
        views = [view_of(operand, self.types, self._materialise) for operand in plan[1]]
        band = self.placed.get(id(node))
        if band is not None:  # its result into a concatenation's band (glc/lower/concat.py)
            return self._fold_placed(node, plan, views, band)
        built = self._fold_built(node, plan, views)
        if built is None:
            return None
        if built.strided and len(plan[1]) == 1:  # one operand, read an element a run
            built = self._fold_repacked(node, plan, built)
        elif built.strided:
            built = self._fold_reoriented(node, plan, views, built)
        return self._fold_step(node, built)

    def _fold_placed(self, node: Term, plan, views: list[View], band: Band) -> View | None:
        """The fold for ``node`` writing its result into ``band`` (its rows × columns the
        band's shape), made a kernel step; the node's value, or None where it cannot."""
        built = self._fold_built(node, plan, views, band=band)
        if built is None or built.strided:
            return None
        self.program.steps.append(KernelStep(band.step, built.kernel, built.inputs, band.buffer))
        if built.joined > 1:
            self.fired["fold-join"] += 1
        # The fold's dims: the last ``joined`` its columns (row-major), the others its rows,
        # the band's width apart.
        rows, cols = built.dims[:-built.joined], built.dims[-built.joined:]
        strides = [band.width * math.prod(rows[k + 1:]) for k in range(len(rows))] + \
            [math.prod(cols[k + 1:]) for k in range(len(cols))]
        stored = View(band.buffer, band.first, tuple(
            (Digit(d, stride, ()),) for d, stride in zip(built.dims, strides, strict=True)), ())
        return replace(stored, groups=tuple(stored.groups[built.order.index(k)]
                                            for k in range(len(built.order))))

    def _fold_step(self, node: Term, built: _Built) -> View:
        """``built`` allocated and made a kernel step; the node's value."""
        self._allocate(built.out, Access(built.dims, (), self.types[id(node)].dtype), dram=True)
        self.program.steps.append(KernelStep(built.out, built.kernel, built.inputs, built.out))
        self.folds[built.out] = node
        if built.joined > 1:
            self.fired["fold-join"] += 1
        stored = row_major(built.out, built.dims)  # in the fold's order: its dims in the node's
        return replace(stored, groups=tuple(stored.groups[built.order.index(k)]
                                            for k in range(len(built.order))))

    def _fold_into(self, repack: Repack, source: View, name: str) -> bool:
        """Where ``source`` is the whole result of a fold step that no later step reads, that
        fold built again to store its result in ``repack``'s order as ``name`` (operands whose
        columns are then strided read by transposing LOADs, docs/isa.md), where that takes
        fewer cycles than the fold and the copy: the step replaced, the node's value the new
        buffer, True. A stage's last residual add of NCHW ResNet-50 then writes the
        channels-last tensor its strided projection reads, not a copy of it."""
        node = self.folds.get(source.buffer)
        if not self.enabled("fold-into") or node is None or \
                self.in_dram.get(id(node)) != source:
            return False
        at = self._sole_kernel_step(node, source.buffer)
        if at is None:
            return False
        plan = self.rule.fold_plan(node)
        views = [view_of(operand, self.types, self._materialise) for operand in plan[1]]
        best, cycles = None, self.program.steps[at].kernel.predicted_cycles(self.config) + \
            repack.cycles(self.config)
        for blocks in TILE_BLOCKS:
            built = self._fold_built(node, plan, views, list(repack.order), name,
                                     blocks * self.config.array_size)
            if built is not None and not built.strided and \
                    built.kernel.predicted_cycles(self.config) < cycles:
                best, cycles = built, built.kernel.predicted_cycles(self.config)
        if best is None:
            return False
        self._retire(at, node)
        self.in_dram[id(node)] = self._fold_step(node, best)
        self.fired["fold-into"] += 1
        return True

    def _fold_repacked(self, node: Term, plan, built: _Built) -> _Built:
        """``built``, or the fold over a repack of its one operand's tensor (the copy a kernel
        step before it) where that takes fewer cycles, the copy's included."""
        operand = plan[1][0]
        base = access_chain(operand)[1]
        source = self._materialise(base)
        if self.program.buffers[source.buffer].dtype != "int8":
            return built
        best, cycles = None, built.kernel.predicted_cycles(self.config)
        result = int(np.prod(built.dims)) * np.dtype(self.types[id(node)].dtype).itemsize
        for repack in repacks(source) if self.enabled("fold-repack") else ():
            name = self.repacked.get((source, repack.dim))
            if name is None and aligned(self.top + repack.nbytes) + result > \
                    self.config.dram_bytes:
                continue  # no room for the copy beside the result
            cost = 0 if name is not None else repack.cycles(self.config)
            view = self._read_over(operand, base, repack.view(name or "repack"))
            trial = self._fold_built(node, plan, [view])
            if trial is not None and (total := trial.kernel.predicted_cycles(self.config)
                                      + cost) < cycles:
                best, cycles = repack, total

        def over(value: View) -> int | None:  # the fold over a reoriented producer's result
            trial = self._fold_built(node, plan, [self._read_over(operand, base, value)])
            return trial.kernel.predicted_cycles(self.config) if trial and not trial.strided \
                else None

        if (value := self._reoriented(base, over, cycles)) is not None:
            return self._fold_built(node, plan, [self._read_over(operand, base, value)])
        if best is None:
            return built
        view = self._read_over(operand, base, best.view(self._copy_of(best, source)))
        self.fired["fold-repack"] += 1
        return self._fold_built(node, plan, [view]) or built

    def _fold_reoriented(self, node: Term, plan, views: list[View], built: _Built) -> _Built:
        """``built``, or where one of its several operands is read an element a run (their
        layouts differ: a residual add of a pixels × channels result and a channels × pixels
        one) the fold over one operand's producer's result in the other orientation (the
        strided operand's first), where the producer and the fold, then reading every operand
        contiguously, take fewer cycles (glc/lower/reorient.py)."""
        cycles = built.kernel.predicted_cycles(self.config)
        for i in sorted(range(len(views)), key=lambda i: i not in built.strided):
            operand = plan[1][i]
            base = access_chain(operand)[1]

            def over(value: View, i=i, operand=operand, base=base) -> int | None:
                tried = [*views[:i], self._read_over(operand, base, value), *views[i + 1:]]
                trial = self._fold_built(node, plan, tried)
                return trial.kernel.predicted_cycles(self.config) \
                    if trial and not trial.strided else None

            if (value := self._reoriented(base, over, cycles)) is not None:
                read = [*views[:i], self._read_over(operand, base, value), *views[i + 1:]]
                return self._fold_built(node, plan, read) or built
        return built

    def _fold_built(self, node: Term, plan, views: list[View], order: list[int] | None = None,
                    out: str | None = None, tile_rows: int = 0, band: Band | None = None
                    ) -> _Built | None:
        """The fold kernel over ``views`` (the plan's operands), its result (``out``, or a
        fresh buffer) at the next free address, not yet allocated, its dims in ``order``;
        None where it cannot be built. With ``order`` given, int8 operands whose columns are
        strided but whose rows are a run are read by transposing LOADs, in tiles of
        ``tile_rows`` rows; with ``band``, its result into that band of a concatenation (its
        rows × columns the band's shape). Where rows short of N can be joined into longer
        columns (``_joined``) the fold is built both ways and the faster kept: joined, a tile
        holds fewer rows (an 8×7×7 add on n4: 49 columns of 8 rows, one cycle slower than 7
        of 56)."""
        op, operands, folded, dims, relu, shift, requant, lin, table, bias = plan
        transposing = order is not None
        if requant is not None:  # the multipliers' columns: the node's last dim
            if transposing and order != list(range(len(dims))):
                return None
            order = list(range(len(dims)))
        # The result's dims in the order the fold lays them out: as they are, or with the dim
        # the operands walk contiguously last (its columns: an N-wide run a beat, not an
        # element a run).
        elif order is None:
            order = _contiguous_last([[g for k, g in enumerate(v.groups) if k not in folded]
                                      for v in views])
        kept = [[[g for k, g in enumerate(view.groups) if k not in folded][k] for k in order]
                for view in views]
        multipliers = None
        if requant is not None:
            if not dims or not self.rule.affine(requant.args[1]):
                return None
            if bias is not None and not self.rule.affine(bias):
                return None
            vectors = [self._by_column(t) for t in (requant.args[1], bias) if t is not None]
            multipliers = StoreTable(vectors[0], requant.args[2].value,
                                     vectors[1] if bias is not None else None)
            try:
                multipliers.check()
            except OperandUnexpressible:
                return None
            if multipliers.by_rows:  # a fold's STOREs requantize by column only
                return None
        joined = _joined(kept, self.config.array_size) \
            if requant is None and dims and self.enabled("fold-join") else 1
        out = out or self._fresh("fold")
        best = None
        for join in sorted({1, joined}):
            built = self._fold_joined(node, plan, views, kept, order, join, transposing,
                                      multipliers, out, tile_rows, band)
            if built is not None and (best is None or built.kernel.predicted_cycles(
                    self.config) < best.kernel.predicted_cycles(self.config)):
                best = built
        return best

    def _by_column(self, vector: Term) -> Target:
        """A requantization's multipliers or bias over the result's dims as the matrix its
        STOREs read by column (the last dim its columns)."""
        view = view_of(vector, self.types, self._materialise)
        matrix = replace(view, groups=(tuple(d for g in view.groups[:-1] for d in g),
                                       view.groups[-1]))
        return Target(matrix, self._to_dram(view.buffer).address, 4)

    def _fold_joined(self, node: Term, plan, views: list[View], kept: list, order: list[int],
                     joined: int, transposing: bool, requantization: StoreTable | None,
                     out: str, tile_rows: int, band: Band | None = None) -> _Built | None:
        """``_fold_built``'s kernel with the result's last ``joined`` dims its columns."""
        op, operands, folded, dims, relu, shift, requant, lin, table, bias = plan
        dims = tuple(dims[k] for k in order)
        rows, cols = (math.prod(dims[:-joined]), math.prod(dims[-joined:])) if dims else (1, 1)
        targets, strided = {}, []
        for index, (which, view) in enumerate(zip("ab", views, strict=False)):
            if view.buffer not in self.program.buffers:  # a trial over a copy not made yet:
                buffer = Buffer(view.buffer, view.dims, "int8", 0)  # cycles see no addresses
            elif not self._reaches(view):
                return None
            else:
                buffer = self.program.buffers[view.buffer]
            groups = kept[index]
            row_digits = [d for g in groups[:-joined] for d in g] + \
                [d for k in folded for d in view.groups[k]]
            columns = tuple(d for g in groups[-joined:] for d in g) if groups else ()
            matrix = replace(view, groups=(tuple(row_digits), columns))
            transpose = 0
            if requant is None and dims and not _contiguous(groups[-1]):
                if transposing and not folded and buffer.dtype == "int8" and \
                        _contiguous(tuple(row_digits)):
                    transpose = self.config.array_size
                else:
                    strided.append(index)
            targets[which] = Target(matrix, buffer.address, np.dtype(buffer.dtype).itemsize,
                                    transpose)
        wide = self.types[id(operands[0])].dtype == "int32"
        raw = self.types[id(node)].dtype == "int32"
        if requantization is not None:
            targets["m"] = requantization.multipliers
            if requantization.bias is not None:
                targets["bias"] = requantization.bias
        if table is not None:  # op `lut`: its table, loaded whole (glc/lower/lookup.py)
            entries = view_of(table, self.types, self._materialise)
            if not self._reaches(entries):
                return None
            targets["t"] = Target(entries, self.program.buffers[entries.buffer].address, 1)
            if not lookup.loadable(targets["t"], self.config):
                return None
        if all(t.view.buffer in self.program.buffers for t in targets.values()):
            self._check_fits(targets, dims, raw)  # (a trial's copy: checked once it is made)
        multipliers, entries = targets.pop("m", None), targets.pop("t", None)
        added = targets.pop("bias", None)
        group = math.prod(self.types[id(operands[0])].dims[k] for k in folded)
        fold = Fold(op, tuple(targets.values()), group, rows, cols, wide, lin, entries)
        if band is None:
            c = Target(row_major(out, (rows, cols)), self.top, 4 if raw else 1)
        elif band.shape == (rows, cols) and not raw:
            c = band.target(self.program.buffers[band.buffer].address)
        else:
            return None
        if not any(t.transpose for t in targets.values()):
            tile_rows = 0
        try:
            kernel = build_fold_kernel(self._label(node), fold, c, raw, relu, shift or 0,
                                       self.config, requantization, tile_rows)
        except (OperandUnexpressible, DoesNotFit):
            return None
        inputs = sorted({t.view.buffer for t in (*targets.values(), multipliers, entries, added)
                         if t})
        return _Built(kernel, out, inputs, dims, order, tuple(strided), joined)


class _Built(NamedTuple):
    """A fold kernel built at the next free address, before its result is allocated."""

    kernel: Kernel
    out: str
    inputs: list[str]
    dims: tuple[int, ...]
    order: list[int]
    strided: tuple[int, ...]  # the operands read an element a run
    joined: int = 1  # the last dims that are its columns (``_joined``)


def _contiguous(group) -> bool:
    """Whether a dim's innermost digit of more than one index has stride 1."""
    digits = [d for d in group if d.size > 1]
    return bool(digits) and digits[-1].stride == 1


def _joined(operands: list, n: int) -> int:
    """How many of the result's last dims the fold takes as its columns: one, or while the
    columns are not a multiple of the array's N (an NCHW residual add's rows of 28 pixels fill
    28 of 32 lanes) more, where every operand walks them as one digit (merged: the next dim
    out steps over the inner ones' whole run), so a tile of N columns is one run per row; and
    where N rows are left, so a tile's instructions still move N runs each."""
    sizes = [math.prod(d.size for d in g) for g in operands[0]]
    joined = 1
    while joined < len(sizes) and math.prod(sizes[-joined:]) % n and \
            math.prod(sizes[:-joined - 1]) >= n and \
            all(len(merge(tuple(d for g in groups[-joined - 1:] for d in g))) <= 1
                for groups in operands):
        joined += 1
    return joined


def _contiguous_last(operands: list) -> list[int]:
    """The result's dims in order, or with the dim that most operands walk contiguously (their
    innermost digit of stride 1) moved last, when the last dim is walked so by fewer."""
    order = list(range(len(operands[0])))
    if not order:
        return order
    votes = [sum(_contiguous(groups[k]) for groups in operands) for k in order]
    best = max(votes)
    if votes[-1] == best:
        return order
    k = votes.index(best)
    return [*order[:k], *order[k + 1:], k]
