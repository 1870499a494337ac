"""Folds on the vector unit in the lowering (docs/lowering.md, "Folds on the vector unit"): a node
the vector unit computes becomes a fold kernel (glc/lower/fold.py) over its operands' views, laid
out with the dim its operands walk contiguously as its columns.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from glc.errors import DoesNotFit
from glc.ir.term import Term
from glc.ir.types import Access
from glc.lower import linear
from glc.lower.fold import Fold, build_fold_kernel
from glc.lower.program import KernelStep
from glc.lower.transfer import OperandUnexpressible, Target
from glc.lower.view import View, row_major, view_of


class Folds:
    """The lowering's folds (a mixin of the lowering, which holds the memory plan)."""

    def _fold(self, node: Term) -> View | None:
        """The fold kernel for ``node``, its result's view; None if the transfers cannot walk
        an operand or the buffers cannot hold a fold (then it is a host step)."""
        op, operands, folded, dims, relu, shift, requant, lin = self.rule.fold_plan(node)
        views = [view_of(operand, self.types, self._materialise) for operand in operands]
        # The result's dims in the order the fold lays them out: as they are, or with the dim
        # the operands walk contiguously last (its columns: an N-wide run a beat, not an
        # element a run), when they are not the multipliers' columns.
        order = _contiguous_last([[g for k, g in enumerate(v.groups) if k not in folded]
                                  for v in views]) if requant is None else list(range(len(dims)))
        dims = tuple(dims[k] for k in order)
        rows, cols = (int(np.prod(dims[:-1])), dims[-1]) if dims else (1, 1)
        targets = {}
        for which, view in zip("ab", views, strict=False):
            if not self._reaches(view):
                return None
            buffer = self.program.buffers[view.buffer]
            kept = [g for k, g in enumerate(view.groups) if k not in folded]
            kept = [kept[k] for k in order]
            row_digits = [d for g in kept[:-1] for d in g] + \
                [d for k in folded for d in view.groups[k]]
            matrix = replace(view, groups=(tuple(row_digits), tuple(kept[-1]) if kept else ()))
            targets[which] = Target(matrix, buffer.address, np.dtype(buffer.dtype).itemsize)
        wide = self.types[id(operands[0])].dtype == "int32"
        result_dtype = self.types[id(node)].dtype
        raw = result_dtype == "int32"
        requantization = None
        if requant is not None:
            if not dims or not self.rule.affine(requant.args[1]):
                return None
            view = view_of(requant.args[1], self.types, self._materialise)
            matrix = replace(view, groups=(tuple(d for g in view.groups[:-1] for d in g),
                                           view.groups[-1]))
            requantization = linear.Linear(
                Target(matrix, self._to_dram(view.buffer).address, 4), requant.args[2].value)
            try:
                requantization.check()
            except OperandUnexpressible:
                return None
            if requantization.by_rows:  # a fold's STOREs requantize by column only
                return None
            targets["m"] = requantization.multipliers
        self._check_fits(targets, dims, raw)
        multipliers = targets.pop("m", None)
        group = int(np.prod([self.types[id(operands[0])].dims[k] for k in folded]))
        fold = Fold(op, tuple(targets.values()), group, rows, cols, wide, lin)
        out = self._fresh("fold")
        c = Target(row_major(out, (rows, cols)), self.top, 4 if raw else 1)
        try:
            kernel = build_fold_kernel(self._label(node), fold, c, raw, relu, shift or 0,
                                       self.config, requantization)
        except (OperandUnexpressible, DoesNotFit):
            return None
        self._allocate(out, Access(dims, (), result_dtype), dram=True)
        inputs = sorted({t.view.buffer for t in (*targets.values(), multipliers) if t})
        self.program.steps.append(KernelStep(out, kernel, inputs, out))
        stored = row_major(out, dims)  # in the fold's order: its dims back in the node's
        return replace(stored, groups=tuple(stored.groups[order.index(k)]
                                            for k in range(len(order))))


def _contiguous_last(operands: list) -> list[int]:
    """The result's dims in order, or with the dim that most operands walk contiguously (their
    innermost digit of stride 1) moved last, when the last dim is walked so by fewer."""
    def contiguous(group) -> bool:
        digits = [d for d in group if d.size > 1]
        return bool(digits) and digits[-1].stride == 1
    order = list(range(len(operands[0])))
    if not order:
        return order
    votes = [sum(contiguous(groups[k]) for groups in operands) for k in order]
    best = max(votes)
    if votes[-1] == best:
        return order
    k = votes.index(best)
    return [*order[:k], *order[k + 1:], k]
