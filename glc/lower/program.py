"""The lowering: an extracted term → a Program (memory plan, kernels, host steps).

Walks the term from its root. A systolic-array node over int8 operands — plus an int32 bias,
which the accumulator starts from, and under a ``relu`` and/or ``(requantize k)``, which the STORE
applies (docs/isa.md, STORE conversion) — becomes an accelerator kernel whose operands are views
of DRAM tensors (glc/lower/view.py); an operand that is no affine view, or whose view the
transfers cannot walk, is first materialised into DRAM by a host *copy*. Every other node is
computed by a host step: the interpreter on the sub-term, with the kernels' results read from
DRAM. The result is read back through its view (a transpose or reshape of a kernel's result
costs nothing). Every tensor gets an address: the memory plan."""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from glc.errors import DoesNotFit, GlcError
from glc.hwconfig import HwConfig
from glc.ir.check import check
from glc.ir.term import Term, leaf, rebuild, walk
from glc.ir.types import Access, ComputeKind
from glc.lower import linear
from glc.lower.fold import Fold, build_fold_kernel
from glc.lower.kernel import Kernel, OperandUnexpressible, build_kernel, kernel_estimate, transposed
from glc.lower.transfer import Target
from glc.lower.view import NotAffine, View, row_major, view_of
from glc.syntax.printer import print_term

ALIGN = 64  # bytes: every tensor starts on a DRAM port beat boundary (P ≤ 64 in hw/configs)
SYSTOLIC = ("systolic-array", "systolic-array-with-blocking")
FRAMES_PER_KERNEL = 8  # Python frames one kernel nested in another's operand takes to lower
# Data-moving operators a relu or requantize commutes with (zero padding only: both keep 0).
COMMUTING = ("access", "access-transpose", "access-reshape", "access-flatten", "access-squeeze",
             "access-insert-axis", "access-slice", "access-broadcast", "access-windows",
             "access-pad")


@dataclass(frozen=True)
class Buffer:
    """A tensor in DRAM: row-major, little-endian, at ``address``."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    address: int

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass
class KernelStep:
    """Run ``kernel`` on the accelerator; it writes buffer ``output``."""

    name: str
    kernel: Kernel
    inputs: list[str]
    output: str


@dataclass
class HostStep:
    """Evaluate ``term`` with the interpreter into buffer ``output``, each of its symbols read
    from DRAM through its view in ``views``; ``copy``: it only materialises an operand view the
    DMA cannot walk."""

    name: str
    term: Term
    views: dict[str, View]
    output: str
    copy: bool = False

    @property
    def inputs(self) -> list[str]:
        """The buffers it reads."""
        return list(dict.fromkeys(v.buffer for v in self.views.values()))


@dataclass
class Program:
    """The lowered program: where every tensor lives, the steps in order, the result's view.

    Addresses below the config's ``dram_bytes`` are the accelerator's DRAM; a tensor only host
    steps touch may lie beyond it, in the host's memory."""

    config: HwConfig
    buffers: dict[str, Buffer]
    inputs: list[str]
    steps: list[KernelStep | HostStep] = field(default_factory=list)
    output: View | None = None
    output_dtype: str = ""
    _figures: dict | None = field(default=None, repr=False, compare=False)

    @property
    def kernels(self) -> list[KernelStep]:
        return [s for s in self.steps if isinstance(s, KernelStep)]

    @property
    def host_steps(self) -> list[HostStep]:
        return [s for s in self.steps if isinstance(s, HostStep)]

    @property
    def memory_bytes(self) -> int:
        """The end of the highest tensor (DRAM and the host memory beyond it)."""
        return max((b.address + b.nbytes for b in self.buffers.values()), default=0)

    @property
    def dram_bytes(self) -> int:
        """The end of the tensors in the accelerator's DRAM: the program images go above it."""
        return max((b.address + b.nbytes for b in self.buffers.values()
                    if b.address < self.config.dram_bytes), default=0)

    def estimated_cycles(self) -> int:
        """The analytic model's cycles summed over the kernels (a fold, not estimated
        analytically, by the instruction-level model): the cost extraction compares."""
        return sum(k.estimated or k.predicted_cycles(self.config)
                   for k in (s.kernel for s in self.kernels))

    def figures(self) -> dict:
        """instructions and predicted cycles (over the images the kernels run as, the
        instruction-level model once per image), ideal cycles (summed over kernels), host steps
        (counted, and each named with its operator). Computed once."""
        if self._figures is None:
            self._figures = self._compute_figures()
        return dict(self._figures)

    def _compute_figures(self) -> dict:
        from glc.lower.image import Image, schedule  # images are made of this module's steps

        n = self.config.array_size
        images = [run for run in schedule(self) if isinstance(run, Image)]
        return {"kernels": len(self.kernels),
                "images": len(images),
                "instructions": sum(len(i.instructions) for i in images),
                "predicted_cycles": sum(i.predicted_cycles(self.config) for i in images),
                "ideal_cycles": sum(s.kernel.ideal_cycles(n) for s in self.kernels),
                "host_steps": len([s for s in self.host_steps if not s.copy]),
                "host_copies": len([s for s in self.host_steps if s.copy]),
                "host": [f"{s.name}: {_describe(s.term)}" for s in self.host_steps]}


def _describe(term: Term) -> str:
    """A host step's operator, e.g. ``compute reduce-max``."""
    if term.op == "compute":
        return f"compute {term.args[0].value[0]}"
    return term.op


def lower(term: Term, env: Mapping[str, Access], config: HwConfig, build: bool = True) -> Program:
    """Lower an extracted term for ``config``; a GlcError if its tensors do not fit DRAM.
    Without ``build`` the systolic kernels are chosen and costed by the analytic model but get
    no instructions (what the extraction's costing needs: ``Program.estimated_cycles``).

    The walks over the term are iterative, but a kernel whose operand is another kernel's result
    materialises that one first, by recursion (``_materialise`` → ``_kernel`` → ``_operand``):
    the recursion limit is raised by a few frames per systolic node for the call, so a chain of
    thousands of kernels lowers, and exhausting even that is a GlcError at the term."""
    nested = sum(node.op in SYSTOLIC for node in walk(term))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + FRAMES_PER_KERNEL * nested)
    try:
        return _Lowerer(term, env, config, build).run()
    except RecursionError:
        raise GlcError(f"the lowering cannot follow {nested} kernels nested in each other's "
                       "operands", term.span) from None
    finally:
        sys.setrecursionlimit(limit)


class _Unfused(Exception):
    """The bias of a fused node cannot be added in the accumulator."""


def predicted_cycles(term: Term, env: Mapping[str, Access], config: HwConfig) -> int:
    """The cycle model's count for ``term`` lowered on ``config``, summed over its kernels: the
    hardware cost an extraction can compare candidate terms by (host steps cost 0 here)."""
    return lower(term, env, config).figures()["predicted_cycles"]


class _Lowerer:
    def __init__(self, term: Term, env: Mapping[str, Access], config: HwConfig, build: bool):
        self.term, self.config, self.build = term, config, build
        self.types = check(term, env)
        self.uses = Counter(id(a) for node in walk(term) for a in node.args)
        symbols = list(dict.fromkeys(t.value for t in walk(term) if t.op == "symbol"))
        self.program = Program(config, {}, symbols)
        self.top = 0  # the next free DRAM address
        self.host_top = -(-config.dram_bytes // ALIGN) * ALIGN  # ... in the host's memory
        self.env = env
        self.in_dram: dict[int, View] = {}
        self.unfused: set[int] = set()  # bias adds that could not join their kernel

    def run(self) -> Program:
        root = self.term
        self.program.output = None
        if self._fusion(root) is None and self._affine(root):
            # A kernel's result stored transposed may be no view of it any more.
            with contextlib.suppress(NotAffine):
                self.program.output = view_of(root, self.types, self._materialise)
        if self.program.output is None:
            self.program.output = self._materialise(root)
        self.program.output_dtype = self.types[id(root)].dtype
        # An input read only for its shape ((get-access-shape x), (shape-of x)) takes no memory.
        self.program.inputs = [s for s in self.program.inputs if s in self.program.buffers]
        return self.program

    # --- the memory plan ---------------------------------------------------------------------

    def _allocate(self, name: str, ty: Access, dram: bool = False) -> str:
        """The next free address: in DRAM for what a kernel touches (its result, a host copy of
        its operand), else in the host's memory beyond DRAM, whence a kernel's first use moves it
        (``_to_dram``). So only what the accelerator touches takes DRAM, in the order the kernels
        need it: a large input only host steps read costs none of it."""
        top = self.top if dram else self.host_top
        buffer = Buffer(name, ty.dims, ty.dtype, top)
        self.program.buffers[name] = buffer
        end = -(-(buffer.address + buffer.nbytes) // ALIGN) * ALIGN
        if dram:
            self.top = end
        else:
            self.host_top = end
        return name

    def _to_dram(self, name: str) -> Buffer:
        """The buffer ``name``, moved into DRAM if it lies in the host's memory. Safe: no kernel
        has used its address yet, and host steps and inputs find it by name."""
        buffer = self.program.buffers[name]
        if buffer.address >= self.config.dram_bytes:
            self._allocate(name, Access(buffer.shape, (), buffer.dtype), dram=True)
        return self.program.buffers[name]

    def _fresh(self, stem: str) -> str:
        """A new buffer name: the stem numbered among its own kind (kernel1, host1, copy1)."""
        count = 1
        name = f"{stem}{count}"
        while name in self.program.buffers:
            count += 1
            name = f"{stem}{count}"
        return name

    # --- which nodes become what ---------------------------------------------------------------

    def _affine(self, node: Term, over: Term | None = None) -> bool:
        """Whether ``node`` is a view (of ``over``, if given), without materialising anything
        to find out."""
        def base(t: Term) -> View | None:
            return row_major("?", self.types[id(t)].dims) if over in (None, t) else None

        try:
            view_of(node, self.types, base)
        except NotAffine:
            return False
        return True

    def _fusion(self, node: Term):
        """(systolic node, relu, requantize shift, bias, views) when ``node`` is an int8
        systolic array plus at most an int32 bias (``elementwise-add`` of an ``access-pair``),
        under at most one relu and one requantize, each used only there (the kernel adds the
        bias in the accumulator, the STORE converts), else None. Between the relu/requantize and
        the array may lie data-moving operators (``views``, their topmost node): relu and
        requantize act elementwise and keep 0, so they commute with every view."""
        relu, shift, bias, current = False, None, None, node
        while current.op == "compute":
            kind: ComputeKind = self.types[id(current.args[0])]
            if kind.name == "relu" and not relu and bias is None:
                relu = True
            elif kind.name == "requantize" and shift is None and kind.param < 32 and \
                    bias is None:
                shift = kind.param
            elif kind.name == "elementwise-add" and id(current) not in self.unfused:
                found = self._bias_pair(current.args[1])
                if found is None:
                    return None
                current, bias = found
                break
            else:
                return None
            current = current.args[1]
            if self.uses[id(current)] > 1:
                return None
        views = current if bias is None and (relu or shift is not None) else None
        while views is not None and current.op in COMMUTING and (
                current.op != "access-pad" or current.args[1].value == "zero-padding"):
            current = current.args[0]
            if self.uses[id(current)] > 1:
                return None
        if current.op not in SYSTOLIC:
            return None
        a, b = (self.types[id(x)] for x in current.args[2:])
        if a.dtype != "int8" or b.dtype != "int8":
            return None
        if views is current:
            views = None
        elif views is not None and not self._affine(views, over=current):
            return None
        return current, relu, shift, bias, views

    def _linear(self, node: Term) -> linear.LinearPlan | None:
        """The plan when ``node`` is a ``requantize-linear`` one kernel computes (its STOREs
        requantizing, glc/lower/linear.py), else None."""
        return linear.match(node, self.types, self.uses, lambda t: t.op in SYSTOLIC)

    def _bias_pair(self, pair: Term) -> tuple[Term, Term] | None:
        """(systolic node, bias) for ``(access-pair X B)`` or ``(access-pair B X)``, X a systolic
        array seen through re-splits only, B an int32 tensor of its dims."""
        if pair.op != "access-pair" or self.uses[id(pair)] > 1:
            return None
        for first, other in (pair.args, pair.args[::-1]):
            while first.op == "access" and self.uses[id(first)] == 1:
                first = first.args[0]
            if first.op in SYSTOLIC and self.uses[id(first)] == 1 and \
                    self.types[id(other)].dtype == "int32" and \
                    self.types[id(other)].dims == self.types[id(first)].dims:
                return first, other
        return None

    def _materialise(self, node: Term) -> View:
        """``node``'s value in DRAM (a view of the buffer holding it), emitting the steps that
        compute it."""
        if node.op == "symbol":
            if node.value not in self.program.buffers:
                self._allocate(node.value, self.env[node.value])
            return row_major(node.value, self.program.buffers[node.value].shape)
        if id(node) not in self.in_dram and (plan := self._linear(node)) is not None:
            with contextlib.suppress(_Unfused):
                self.in_dram[id(node)] = self._kernel(node, plan.systolic, plan.relu, None,
                                                      plan.bias, plan)
        if id(node) not in self.in_dram:
            fused = self._fusion(node)
            if fused:
                systolic, relu, shift, bias, views = fused
                try:
                    result = self._kernel(node, systolic, relu, shift, bias)
                    if views is not None:  # the data movement over the converted result
                        result = view_of(views, self.types,
                                         lambda t: result if t is systolic else None)
                    self.in_dram[id(node)] = result
                    return result
                except _Unfused:  # the bias add stays on the host, over the product's kernel
                    add = node
                    while self.types[id(add.args[0])].name != "elementwise-add":
                        add = add.args[1]
                    self.unfused.add(id(add))
            if id(node) not in self.in_dram and self._fold_plan(node) is not None:
                folded = self._fold(node)
                if folded is not None:
                    self.in_dram[id(node)] = folded
            if id(node) not in self.in_dram:
                name = self._host(node)
                self.in_dram[id(node)] = row_major(name, self.program.buffers[name].shape)
        return self.in_dram[id(node)]

    # --- folds on the vector unit -------------------------------------------------------------

    def _fold_plan(self, node: Term):
        """(op, operands, folded dims, result dims, relu, shift) when ``node`` is a fold the
        vector unit runs (glc/lower/fold.py) under at most one relu and one requantize, each used
        only there: reduce-max/-sum over the items of a view, elementwise-add/-mul over an
        access-pair of views (or over the first item dim of one view), or a relu/requantize of
        a view itself (a fold of one row); operands int8 or int32, all of one dtype."""
        relu, shift, current, requant = False, None, node, None
        if node.op == "requantize-linear":  # the STORE's `linear`, over any of the below
            if self.uses[id(node.args[0])] > 1:
                return None
            requant, current = node, node.args[0]
        while current.op == "compute":
            kind: ComputeKind = self.types[id(current.args[0])]
            # The STORE applies relu, then requantize; the two commute (requantize is monotone
            # and keeps 0), so either may be the outer one.
            if kind.name == "relu" and not relu:
                relu = True
            elif kind.name == "requantize" and shift is None and kind.param < 32 and \
                    requant is None:
                shift = kind.param
            else:
                break
            if self.uses[id(current.args[1])] > 1:
                return None
            current = current.args[1]
        kind = self.types[id(current.args[0])] if current.op == "compute" else None
        name = kind.name if kind is not None else "copy"
        if name == "copy" and not relu and shift is None and requant is None:
            return None
        operand = current.args[1] if kind is not None else current
        ty = self.types[id(operand)]
        folded: tuple[int, ...] = ()
        operands = (operand,)
        if name in ("reduce-max", "reduce-sum"):
            folded = tuple(range(len(ty.shape), len(ty.dims)))
        elif name in ("elementwise-add", "elementwise-mul"):
            if operand.op == "access-pair" and self.uses[id(operand)] == 1:
                operands = operand.args
            else:
                folded = (len(ty.shape),)
        elif name != "copy":
            return None
        dtypes = {self.types[id(o)].dtype for o in operands}
        if len(dtypes) != 1 or dtypes - {"int8", "int32"} or \
                self.types[id(node)].dtype not in ("int8", "int32") or \
                not all(self._affine(o) for o in operands):
            return None
        dims = tuple(d for k, d in enumerate(self.types[id(operands[0])].dims) if k not in folded)
        op = {"reduce-max": "max", "elementwise-mul": "mul"}.get(name, "add")
        return op, operands, folded, dims, relu, shift, requant

    def _fold(self, node: Term) -> View | None:
        """The fold kernel for ``node``, its result's view; None if the transfers cannot walk
        an operand or the buffers cannot hold a fold (then it is a host step)."""
        op, operands, folded, dims, relu, shift, requant = self._fold_plan(node)
        rows, cols = (int(np.prod(dims[:-1])), dims[-1]) if dims else (1, 1)
        targets = {}
        for which, operand in zip("ab", operands, strict=False):
            view = view_of(operand, self.types, self._materialise)
            buffer = self._to_dram(view.buffer)
            kept = [g for k, g in enumerate(view.groups) if k not in folded]
            row_digits = [d for g in kept[:-1] for d in g] + \
                [d for k in folded for d in view.groups[k]]
            matrix = replace(view, groups=(tuple(row_digits), tuple(kept[-1]) if kept else ()))
            targets[which] = Target(matrix, buffer.address, np.dtype(buffer.dtype).itemsize)
        wide = self.types[id(operands[0])].dtype == "int32"
        result_dtype = self.types[id(node)].dtype
        raw = result_dtype == "int32"
        requantization = None
        if requant is not None:
            if not dims or not self._affine(requant.args[1]):
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
        fold = Fold(op, tuple(targets.values()), group, rows, cols, wide)
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
        return row_major(out, dims)

    # --- steps ------------------------------------------------------------------------------

    def _kernel(self, node: Term, systolic: Term, relu: bool, shift: int | None,
                bias: Term | None, plan: linear.LinearPlan | None = None) -> View:
        """A kernel for the systolic node (its bias added in the accumulator, its relu and
        requantize — or with ``plan`` ONNX's requantization — fused into the STORE); its result
        is the view returned: row-major, or transposed when the kernel computes Cᵀ."""
        targets = {}
        for which, operand in zip("ab", systolic.args[2:], strict=True):
            targets[which] = self._operand(operand, copy=False)
        for which, term in (("bias", bias), ("m", plan and plan.multipliers)):
            if term is None:
                continue
            if not self._affine(term):
                raise _Unfused
            view = view_of(term, self.types, self._materialise)
            if plan is not None:  # over the layer's dims: pulled back to the array's
                view = linear.pulled_back(view, self.types[id(term)], plan.chain, self.types)
            targets[which] = Target(view, self._to_dram(view.buffer).address, 4)
        raw = shift is None and plan is None
        dims = self.types[id(systolic)].dims
        dtype = "int32" if raw else "int8"
        while True:
            self._check_fits(targets, dims, raw)
            found, failures = [], []
            for swap in (False, True):
                try:
                    oriented = self._orient(targets, dims, swap, raw)
                    a, b, c, bias_target = oriented
                    if plan is not None:
                        self._requantization(targets["m"], swap, plan)
                    found.append((kernel_estimate(a, b, c, raw, relu, shift or 0, self.config,
                                                  bias_target), oriented, swap))
                except (OperandUnexpressible, GlcError) as error:
                    if isinstance(error, OperandUnexpressible) and error.which == "bias" and \
                            plan is None:
                        raise _Unfused from None
                    if isinstance(error, OperandUnexpressible) and error.which in ("bias", "m"):
                        continue  # requantize-linear: the other orientation may do
                    failures.append(error)
            if found:
                estimate, oriented, swap = min(found, key=lambda f: f[0].cycles)
                break
            if plan is not None and not failures:
                raise _Unfused  # neither orientation takes the bias or the multipliers
            error = failures[0]
            if not isinstance(error, OperandUnexpressible) or error.which == "c" or \
                    self._is_row_major(targets[error.which]):
                raise error if isinstance(error, GlcError) else \
                    GlcError(f"cannot lower {print_term(systolic)[:60]}…: {error}")
            operand = systolic.args[2 if error.which == "a" else 3]
            targets[error.which] = self._operand(operand, copy=True)
        a, b, c, bias_target = oriented
        label = self._label(node)
        if self.build:
            try:
                kernel = build_kernel(label, a, b, c, raw, relu, shift or 0, self.config,
                                      bias_target, estimate.order,
                                      plan and self._requantization(targets["m"], swap, plan))
            except (OperandUnexpressible, GlcError):
                if plan is None:
                    raise
                raise _Unfused from None
        else:  # costing: the analytic figure, no instructions
            m = a.view.dims[0] if len(a.view.groups) == 2 else 1
            kernel = Kernel(label, m, *b.view.dims, raw, relu, shift or 0, [],
                            bias_target is not None)
        kernel.estimated = estimate.cycles
        name = self._fresh("kernel")
        out = self._allocate(name, Access(dims[::-1] if swap else dims, (), dtype), dram=True)
        inputs = sorted({t.view.buffer for t in targets.values()})
        self.program.steps.append(KernelStep(out, kernel, inputs, out))
        stored = row_major(out, self.program.buffers[out].shape)
        result = transposed(stored) if swap else stored
        if plan is not None and plan.chain is not None:  # the layer's view of the result
            result = view_of(plan.chain, self.types, lambda t: result if t is systolic else None)
        return result

    def _requantization(self, m: Target, swap: bool, plan: linear.LinearPlan) -> linear.Linear:
        """The kernel's requantization, its multipliers oriented like C."""
        found = linear.Linear(replace(m, view=transposed(m.view)) if swap else m, plan.zero)
        found.check()
        return found

    def _label(self, node: Term) -> str:
        """The node as Glenside text for the assembly's comments, the tensors already in DRAM
        (earlier kernels' and host steps' results) by their buffer names."""
        def named(t: Term) -> Term | None:
            if t is not node and id(t) in self.in_dram:
                return leaf("symbol", self.in_dram[id(t)].buffer)
            return None

        return print_term(rebuild(node, named))

    def _orient(self, targets: dict[str, Target], dims: tuple[int, ...], swap: bool,
                raw: bool) -> tuple[Target, Target, Target, Target | None]:
        """The operands (A, B, C, bias) of C = A·B, or with ``swap`` of Cᵀ = Bᵀ·Aᵀ: the other
        operand stationary, which may walk DRAM far better (e.g. im2col rows of an NHWC image).
        C is stored row-major either way (Cᵀ's rows), at the next free address."""
        a, b, bias = targets["a"], targets["b"], targets.get("bias")
        esize = 4 if raw else 1
        if not swap:
            return a, b, Target(row_major("C", dims), self.top, esize), bias
        if len(a.view.groups) != 2:
            raise GlcError("a vector operand is not swapped")
        c = Target(row_major("C", dims[::-1]), self.top, esize)
        flip = [None if t is None else replace(t, view=transposed(t.view)) for t in (b, a, bias)]
        return flip[0], flip[1], c, flip[2]

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
        if not copy and self._affine(operand):
            # Over a kernel's result stored transposed it may be none: copied instead.
            with contextlib.suppress(NotAffine):
                view = view_of(operand, self.types, self._materialise)
        if view is None:
            view = row_major(self._host(operand, copy=True), self.types[id(operand)].dims)
        buffer = self._to_dram(view.buffer)
        if buffer.dtype != "int8":
            raise GlcError(f"a systolic operand is {buffer.dtype} in DRAM, not int8")
        return Target(view, buffer.address, 1)

    def _host(self, node: Term, copy: bool = False) -> str:
        """A host step computing ``node`` from the DRAM values of its kernel and input leaves;
        returns the buffer it writes."""
        views: dict[str, View] = {}

        def in_dram(t: Term) -> Term | None:
            if not (t.op == "symbol" or (t is not node and (
                    id(t) in self.in_dram or self._fusion(t) is not None
                    or self._linear(t) is not None
                    or self._fold_plan(t) is not None))):
                return None
            view = self._materialise(t)
            buffer = self.program.buffers[view.buffer]
            symbol = view.buffer
            if view != row_major(buffer.name, buffer.shape):
                symbol = f"{view.buffer}_view{len(views)}"
            views[symbol] = view
            new = leaf("symbol", symbol)
            split = len(self.types[id(t)].shape)
            if split < len(view.dims):  # a symbol is all shape: keep t's item dims
                new = Term("access", (new, leaf("int", split)))
            return new

        body = rebuild(node, in_dram)
        out = self._allocate(self._fresh("copy" if copy else "host"), self.types[id(node)],
                             dram=copy)
        self.program.steps.append(HostStep(out, body, views, out, copy))
        return out
