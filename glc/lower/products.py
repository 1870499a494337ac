"""The lowering's systolic-array kernels (a mixin of glc/lower/lowering.py's walker): a systolic
node's operands as DRAM targets (views, or host copies where no view reaches), the table of
biases and multipliers its STOREs apply (glc/lower/table.py), the schedule search
(glc/lower/schedule.py) in each orientation the table allows, the kernel built from the schedule,
and its steps storing C — or Cᵀ, or C into a band of a concatenation — into a fresh result."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import numpy as np

from glc.errors import DoesNotFit, GlcError
from glc.ir.term import Term, leaf, rebuild
from glc.ir.types import Access
from glc.lower import linear
from glc.lower.concat import Band
from glc.lower.kernel import Kernel
from glc.lower.program import KernelStep
from glc.lower.schedule import Schedule, search
from glc.lower.table import StoreTable
from glc.lower.tiling import transposed
from glc.lower.transfer import OperandUnexpressible, Target
from glc.lower.view import NotAffine, View, row_major, view_of
from glc.syntax.printer import print_term


class Unfused(Exception):
    """The bias or requantization of a fused node cannot be applied by its kernel's STOREs (a
    bias that varies along both of C's dims: glc/lower/table.py)."""


class Products:
    """The systolic-node steps of the lowering. The walker (glc/lower/lowering.py) holds the
    state they use (``program``, ``types``, ``config``, ``top``, ``rule``, ``build``, ``forced``,
    ``placed``, ``oriented``, ``in_dram``) and the memory plan's and host steps' methods
    (``_allocate``, ``_to_dram``, ``_materialise``, ``_host``, ``_reaches``, ``_fresh``); the
    relayout mixin ``_relayout``."""

    def _kernel(self, node: Term, systolic: Term, relu: bool, shift: int | None,
                bias: Term | None, plan: linear.LinearPlan | None = None) -> View:
        """A kernel for the systolic node (its bias, relu and requantize — or with ``plan`` ONNX's
        requantization — fused into the STORE); its result is the view returned: row-major, or
        transposed when the kernel computes Cᵀ."""
        targets = {}
        for which, operand in zip("ab", systolic.args[2:], strict=True):
            targets[which] = self._operand(operand, copy=False)
        for which, term in (("bias", bias), ("m", plan and plan.multipliers)):
            if term is None:
                continue
            if not self.rule.affine(term):
                raise Unfused
            view = view_of(term, self.types, self._materialise)
            if plan is not None:  # over the layer's dims: pulled back to the array's
                view = linear.pulled_back(view, self.types[id(term)], plan.chain, self.types)
            targets[which] = Target(view, self._to_dram(view.buffer).address, 4)
        # Each orientation's table; only those whose STOREs can read the bias and multipliers.
        tables = {False: None, True: None} if bias is None and plan is None else {
            s: t for s in (False, True) if (t := self._table(targets, s, plan))}
        if not tables:
            raise Unfused
        if id(node) in self.forced:  # a reoriented producer (glc/lower/reorient.py)
            tables = {s: t for s, t in tables.items() if s == self.forced[id(node)]}
            if not tables:
                raise GlcError("the other orientation cannot apply this kernel's table")
        raw = shift is None and plan is None
        dims = self.types[id(systolic)].dims
        placed = self.placed.get(id(node))
        if placed is not None:  # the orientation whose stored matrix is the band's shape
            tables = {s: t for s, t in tables.items() if (dims[::-1] if s else dims) ==
                      placed.shape}
            if not tables or raw:
                raise GlcError("this kernel cannot store its result into the band")
        while True:
            self._check_fits(targets, dims, raw)
            try:
                chosen = search(targets, dims, raw, relu, shift or 0, self.top, self.config,
                                tables)
                break
            except (OperandUnexpressible, GlcError) as error:
                if not isinstance(error, OperandUnexpressible) or error.which == "c" or \
                        self._is_row_major(targets[error.which]):
                    raise error if isinstance(error, GlcError) else \
                        GlcError(f"cannot lower {print_term(systolic)[:60]}…: {error}") from None
                operand = systolic.args[2 if error.which == "a" else 3]
                targets[error.which] = self._operand(operand, copy=True)
        chosen, targets = self._relayout(systolic, targets, chosen, dims, raw, relu, shift or 0,
                                         tables)
        if placed is not None:
            # Searched again with the band as C (or Cᵀ), its rows the band's width apart: a
            # schedule walks B's columns and C's in one order (glc/lower/tiling.py
            # ``column_orders``), so its C cannot be swapped for the band after the search
            # (a 3×3 conv over NHWC pixels walked in 4×4 patches wrote them as rows of 16).
            address = self.program.buffers[placed.buffer].address + placed.first
            chosen = search(targets, dims, raw, relu, shift or 0, address, self.config,
                            {chosen.swap: tables[chosen.swap]}, c_stride=placed.width)
        try:
            kernel = self._built(node, chosen, raw, relu, shift, tables[chosen.swap])
        except (OperandUnexpressible, GlcError):
            if plan is None and bias is None:
                raise
            raise Unfused from None
        result = self._stored(systolic, [kernel], targets, chosen.swap, raw, plan, placed)
        if placed is None:
            self.oriented[result.buffer] = (id(node), chosen.swap)
        return result

    def _built(self, node: Term, chosen: Schedule, raw: bool, relu: bool, shift: int | None,
               table: StoreTable | None) -> Kernel:
        """The kernel of a schedule; costing: the analytic figure, no instructions."""
        if self.build:
            kernel = self.kernels.build(self._label(node), chosen, raw, relu, shift or 0,
                                        self.config, table)
        else:
            a = chosen.a
            m = a.view.dims[0] if len(a.view.groups) == 2 else 1
            kernel = Kernel(self._label(node), m, *chosen.b.view.dims, raw, relu, shift or 0,
                            [], table is not None and table.bias is not None)
        kernel.estimated = chosen.cycles
        return kernel

    def _stored(self, systolic: Term, kernels: list[Kernel], targets: dict[str, Target],
                swap: bool, raw: bool, plan: linear.LinearPlan | None,
                placed: Band | None = None) -> View:
        """The steps of the kernels computing the systolic node into one fresh result, C or with
        ``swap`` Cᵀ, or (``placed``) C into a band of another buffer; the node's value (with
        ``plan``, the layer's view)."""
        dims = self.types[id(systolic)].dims
        inputs = sorted({t.view.buffer for t in targets.values()})
        if placed is not None:
            (kernel,) = kernels
            self.program.steps.append(KernelStep(placed.step, kernel, inputs, placed.buffer))
            stored = placed.view()
        else:
            out = self._allocate(self._fresh("kernel"), Access(
                dims[::-1] if swap else dims, (), "int32" if raw else "int8"), dram=True)
            for index, kernel in enumerate(kernels):
                name = out if len(kernels) == 1 else f"{out}.{index}"
                self.program.steps.append(KernelStep(name, kernel, inputs, out))
            stored = row_major(out, self.program.buffers[out].shape)
        result = transposed(stored) if swap else stored
        if plan is not None and plan.chain is not None:  # the layer's view of the result
            result = view_of(plan.chain, self.types, lambda t: result if t is systolic else None)
        return result

    def _table(self, targets: dict[str, Target], swap: bool,
               plan: linear.LinearPlan | None) -> StoreTable | None:
        """The kernel's table of biases and multipliers (glc/lower/table.py), oriented like C;
        None if its STOREs cannot read them in that orientation."""
        def oriented(which: str) -> Target | None:
            target = targets.get(which)
            if target is None or not swap:
                return target
            return replace(target, view=transposed(target.view))

        found = StoreTable(oriented("m"), plan.zero if plan is not None else 0, oriented("bias"))
        try:
            found.check()
        except OperandUnexpressible:
            return None
        return found

    def _label(self, node: Term) -> str:
        """The node as Glenside text for the assembly's comments, the tensors already in DRAM
        (earlier kernels' and host steps' results) by their buffer names."""
        def named(t: Term) -> Term | None:
            if t is not node and id(t) in self.in_dram:
                return leaf("symbol", self.in_dram[id(t)].buffer)
            return None

        return print_term(rebuild(node, named))

    def _check_fits(self, targets: dict[str, Target], dims: tuple[int, ...], raw: bool) -> None:
        """Before scheduling: everything a kernel touches must lie in DRAM."""
        ends = {}
        for target in targets.values():
            buffer = self.program.buffers[target.view.buffer]
            ends[buffer.name] = buffer.address + buffer.nbytes
        ends["its result"] = self.top + int(np.prod(dims)) * (4 if raw else 1)
        name, end = max(ends.items(), key=lambda item: item[1])
        if end > self.config.dram_bytes:
            raise DoesNotFit(f"the accelerator's tensors need {end} bytes of DRAM ({name} ends "
                           f"there); {self.config.name} has {self.config.dram_bytes}")

    def _is_row_major(self, target: Target) -> bool:
        buffer = self.program.buffers[target.view.buffer]
        return target.view == row_major(buffer.name, buffer.shape)

    def _operand(self, operand: Term, copy: bool) -> Target:
        """A kernel operand as a DRAM target: its view, or a host copy of its value."""
        view = None
        if not copy and self.rule.affine(operand):
            # Over a kernel's result stored transposed it may be none: copied instead.
            with contextlib.suppress(NotAffine):
                view = view_of(operand, self.types, self._materialise)
        if view is None or not self._reaches(view):
            view = row_major(self._host(operand, copy=True), self.types[id(operand)].dims)
        buffer = self._to_dram(view.buffer)
        if buffer.dtype != "int8":
            raise GlcError(f"a systolic operand is {buffer.dtype} in DRAM, not int8")
        return Target(view, buffer.address, 1)
