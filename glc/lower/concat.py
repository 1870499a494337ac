"""Concatenations on the vector unit in the lowering (docs/lowering.md, "Concatenations"): an int8
``access-concatenate`` whose parts are each a view of an input, of a value in DRAM or of a
kernel's product or fold becomes one copy per part, a fold with op ``add`` over the part alone
and shift 0 (exact, as a repack's, glc/lower/repack.py). Where every part walks the axis in runs
(channels-last maps concatenated along their channels: SqueezeNet's fires) the result is stored
with the axis last and each part copied into a band of its columns; otherwise each part must
fill one contiguous slice of the result (every dim before the axis of size 1: a channel Concat
of NCHW maps, batch 1). A grouped convolution's groups meet so; any other concatenation stays a
host step."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from glc.errors import DoesNotFit, GlcError
from glc.ir.term import Term
from glc.ir.types import Access
from glc.lower.fold import copy_kernel
from glc.lower.kernel import Kernel
from glc.lower.program import KernelStep
from glc.lower.transfer import OperandUnexpressible, Target
from glc.lower.view import Digit, NotAffine, View, access_chain, merge, row_major, view_of


def parts(node: Term) -> list[Term]:
    """The operands of a chain of concatenations along one axis, in order (the import nests
    them to the left: ``(concat (concat a b) c)``)."""
    axis = node.args[2].value
    found, stack = [], [node]
    while stack:
        term = stack.pop()
        if term.op == "access-concatenate" and term.args[2].value == axis:
            stack += [term.args[1], term.args[0]]
        else:
            found.append(term)
    return found


@dataclass(frozen=True)
class Band:
    """Columns ``first`` … of buffer ``buffer``, a row-major matrix ``width`` columns wide, as a
    matrix of ``shape``: a part of a concatenation stored with its axis last, which the kernel
    computing the part writes as its result (its step named ``step``)."""

    buffer: str
    first: int
    width: int
    shape: tuple[int, int]
    step: str

    def view(self) -> View:
        rows, cols = self.shape
        return View(self.buffer, self.first, ((Digit(rows, self.width, ()),),
                                              (Digit(cols, 1, ()),)), ())

    def target(self, address: int) -> Target:
        """The band as a kernel's C, its buffer at ``address``."""
        return Target(replace(self.view(), buffer="C", offset=0), address + self.first, 1)


def _runs_along(view: View, axis: int) -> bool:
    """Whether ``view`` walks dim ``axis`` in runs: its innermost digit of more than one index
    has stride 1."""
    digits = [d for d in view.groups[axis] if d.size > 1]
    return bool(digits) and digits[-1].stride == 1


class Concats:
    """The lowering's concatenations (a mixin of the lowering, which holds the memory plan)."""

    def _concat(self, node: Term) -> View | None:
        """The copies filling ``node``'s result, its view; None where it stays a host step (not
        int8, a slice that is not contiguous, a part the transfers cannot walk). Where every
        part walks the axis contiguously (channels-last products concatenated along their
        channels) the result is stored with the axis last instead, each part a band of its
        columns: a copy then moves runs of a part's channels, not an element a run."""
        ty = self.types[id(node)]
        axis = node.args[2].value
        if ty.dtype != "int8" or not all(map(self._on_accelerator, parts(node))):
            return None
        try:
            views = [view_of(part, self.types, self._materialise) for part in parts(node)]
        except NotAffine:
            return None
        if not all(map(self._reaches, views)):
            return None
        last = axis < len(ty.dims) - 1 and all(_runs_along(v, axis) for v in views) and \
            self.enabled("concat-axis-last")
        if not last and math.prod(ty.dims[:axis]) != 1:
            return None
        order = [k for k in range(len(ty.dims)) if k != axis] + [axis] if last else \
            list(range(len(ty.dims)))
        stored = tuple(ty.dims[k] for k in order)
        saved = self._state()
        out = self._allocate(self._fresh("concat"), Access(stored, (), "int8"), dram=True)
        address, first = self.program.buffers[out].address, 0
        rest = math.prod(ty.dims[axis + 1:])  # a slice's columns (as one row-major block)
        try:
            for index, (part, view) in enumerate(zip(parts(node), views, strict=True)):
                size, count = math.prod(view.dims), view.dims[axis]
                if last:  # columns first … of rows of the whole axis
                    band = Band(out, first, ty.dims[axis], (size // count, count),
                                f"{out}.{index}")
                    copy = self._copy_band(view, order, band, address, self._label(node))
                else:  # the slice of elements first … first + size
                    band = Band(out, first * rest, rest, (count, rest), f"{out}.{index}")
                    copy = self._copy(view, size, out, address + first * rest,
                                      self._label(node))
                if not self._placed_into(node, part, order, band, copy):
                    self.program.steps.append(KernelStep(band.step, copy, [view.buffer], out))
                first += count
        except (OperandUnexpressible, DoesNotFit):
            self._restore(saved)
            return None
        if last:
            self.fired["concat-axis-last"] += 1
        value = row_major(out, stored)  # in the stored order: its dims back in the node's
        return replace(value, groups=tuple(value.groups[order.index(k)]
                                           for k in range(len(order))))

    def _placed_into(self, node: Term, part: Term, order: list[int], band: Band, copy: Kernel
                     ) -> bool:
        """Where ``part`` (of the concatenation ``node``) is the whole result of a kernel step
        (a product or a fold) that no later step reads and no other part reads, that kernel
        lowered again to write its result straight into ``band`` (a product's C or Cᵀ,
        whichever has the band's shape, its rows the band's width apart:
        glc/lower/lowering.py; a fold's rows × columns), where its cycles are at most the
        kernel's and the ``copy``'s: the step replaced, the node's value the band, True.
        Else the lowering as it was (SqueezeNet at 224: its fires' copies, 375 924 cycles, all
        but gone)."""
        base = access_chain(part)[1]
        source = self.in_dram.get(id(base))
        # A base two parts read: the other part's view was taken before this one moves it.
        shared = sum(access_chain(p)[1] is base for p in parts(node)) > 1
        at = self._sole_kernel_step(base, source.buffer) \
            if source is not None and not shared and self.enabled("concat-in-place") else None
        if at is None or self.program.steps[at].kernel.kind not in ("matmul", "fold"):
            return False
        saved, old = self._state(), self.program.steps[at]
        try:
            placed = self._read_over(part, base,
                                     self._lowered_again(base, at, self.placed, band))
            fits = placed.buffer == band.buffer and placed.offset == band.first and \
                not placed.coords and merge(tuple(
                    d for k in order for d in placed.groups[k])) == merge(band.view().digits())
        except (GlcError, OperandUnexpressible, NotAffine):
            fits = False
        if fits and self._cost(self.program.steps[-1], self.build) <= \
                self._cost(old, self.build) + copy.predicted_cycles(self.config):
            self.fired["concat-in-place"] += 1
            return True
        self._restore(saved)
        return False

    def _copy_band(self, view: View, order: list[int], band: Band, address: int, label: str
                   ) -> Kernel:
        """The fold copying the int8 part ``view`` into ``band`` of the concatenation (stored
        with its axis, the last of ``order``, last; its buffer at ``address``): rows the
        part's other dims, columns its axis."""
        buffer = self.program.buffers[view.buffer]
        *others, axis = order
        matrix = replace(view, groups=(tuple(d for k in others for d in view.groups[k]),
                                       tuple(view.groups[axis])))
        return copy_kernel(label, Target(matrix, buffer.address, 1), band.target(address),
                           self.config)

    def _on_accelerator(self, part: Term) -> bool:
        """Whether ``part`` is a view of an input, of a value already in DRAM or of a product or
        fold a kernel computes (a part requantized to the concatenation's parameters): then
        copying it brings nothing into DRAM that a kernel would not. A part the host computes
        stays with the concatenation on the host (its tensors in the host's memory: a small
        configuration's DRAM need not hold them)."""
        base = access_chain(part)[1]
        return base.op == "symbol" or id(base) in self.in_dram or \
            self.rule.linear_plan(base) is not None or \
            bool(self.rule.fusion(base, self.unfused)) or self.rule.fold_plan(base) is not None

    def _copy(self, view: View, size: int, out: str, address: int, label: str):
        """The fold copying the int8 ``view`` (``size`` elements) row-major to ``address`` in
        ``out``, labelled as the concatenation: N columns where the view is one contiguous run (a
        beat a row), else its last dim's."""
        n = self.config.array_size
        buffer = self.program.buffers[view.buffer]
        digits = merge(view.digits())
        if not view.coords and len(digits) <= 1 and all(d.stride == 1 for d in digits) \
                and size % n == 0:
            rows, cols = size // n, n
            matrix = replace(row_major(view.buffer, (rows, cols)), offset=view.offset)
        else:
            cols = view.dims[-1] if view.dims else 1
            rows = size // cols
            matrix = replace(view, groups=(tuple(d for g in view.groups[:-1] for d in g),
                                           tuple(view.groups[-1]) if view.groups else ()))
        return copy_kernel(label, Target(matrix, buffer.address, 1),
                           Target(row_major(out, (rows, cols)), address, 1), self.config)
