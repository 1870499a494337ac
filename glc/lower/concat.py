"""Concatenations on the vector unit in the lowering (docs/lowering.md, "Concatenations"): an int8
``access-concatenate`` whose parts each fill one contiguous slice of the result (every dim before
the axis of size 1: a channel Concat of NCHW maps, batch 1) and are each a view of an input, of
a value in DRAM or of a kernel's product becomes one copy per part, a fold with op ``add`` over
the part alone and shift 0 (exact, as a repack's, glc/lower/repack.py), storing into the part's
slice. A grouped convolution's groups meet so; any other concatenation stays a host step."""

from __future__ import annotations

import math
from dataclasses import replace

from glc.errors import DoesNotFit
from glc.ir.term import Term
from glc.ir.types import Access
from glc.lower.fold import copy_kernel
from glc.lower.program import KernelStep
from glc.lower.transfer import OperandUnexpressible, Target
from glc.lower.view import NotAffine, View, access_chain, merge, row_major, view_of


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


class Concats:
    """The lowering's concatenations (a mixin of the lowering, which holds the memory plan)."""

    def _concat(self, node: Term) -> View | None:
        """The copies filling ``node``'s result, its view; None where it stays a host step (not
        int8, a slice that is not contiguous, a part the transfers cannot walk)."""
        ty = self.types[id(node)]
        axis = node.args[2].value
        if ty.dtype != "int8" or math.prod(ty.dims[:axis]) != 1:
            return None
        if not all(map(self._on_accelerator, parts(node))):
            return None
        try:
            views = [view_of(part, self.types, self._materialise) for part in parts(node)]
        except NotAffine:
            return None
        if not all(map(self._reaches, views)):
            return None
        out, kernels, offset = self._fresh("concat"), [], 0
        try:
            for view in views:
                size = math.prod(view.dims)
                kernels.append(self._copy(view, size, out, self.top + offset,
                                          self._label(node)))
                offset += size
        except (OperandUnexpressible, DoesNotFit):
            return None
        self._allocate(out, Access(ty.dims, (), "int8"), dram=True)
        inputs = sorted({view.buffer for view in views})
        for index, kernel in enumerate(kernels):
            self.program.steps.append(KernelStep(f"{out}.{index}", kernel, inputs, out))
        return row_major(out, ty.dims)

    def _on_accelerator(self, part: Term) -> bool:
        """Whether ``part`` is a view of an input, of a value already in DRAM or of a product a
        kernel computes: then copying it brings nothing into DRAM that a kernel would not. A
        part the host computes stays with the concatenation on the host (its tensors in the
        host's memory: a small configuration's DRAM need not hold them)."""
        base = access_chain(part)[1]
        return base.op == "symbol" or id(base) in self.in_dram or \
            self.rule.linear_plan(base) is not None or bool(self.rule.fusion(base, self.unfused))

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
