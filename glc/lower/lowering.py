"""The lowering: an extracted term → a Program (memory plan, kernels, host steps).

Walks the term from its root. A systolic-array node with what it absorbs (glc/lower/fusion.py: an
int32 bias, a relu and/or ``(requantize k)``, all applied by its STOREs) becomes an accelerator
kernel run the way the schedule search picks (glc/lower/products.py, glc/lower/schedule.py), its
operands views of DRAM tensors (glc/lower/view.py); an operand that is no affine view, or whose view
the transfers cannot walk, is first materialised into DRAM by a host *copy*; one the search reads
faster from another layout is repacked first (glc/lower/relayout.py). A fold the vector unit runs
becomes a fold kernel (glc/lower/folds.py, glc/lower/fold.py), a depthwise product one kernel per N
channels (glc/lower/depthwise.py), a band kernel or a kernel on the vector unit
(glc/lower/depthwise_lowering.py), a concatenation of kernels' results copies into its slices
(glc/lower/concat.py). Every other node is computed by a host step: the interpreter on the sub-term,
with the kernels' results read from DRAM. The result is read back through its view (a transpose or
reshape of a kernel's result costs nothing). Every tensor gets an address: the memory plan."""

from __future__ import annotations

import contextlib
import sys
from collections import Counter
from collections.abc import Collection, Mapping

import numpy as np

from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.ir.check import check
from glc.ir.term import Term, leaf, rebuild, walk
from glc.ir.types import Access
from glc.lower.batched import Batches
from glc.lower.concat import Band, Concats
from glc.lower.depthwise_lowering import Depthwises
from glc.lower.folds import Folds
from glc.lower.fusion import SYSTOLIC, Absorb
from glc.lower.names import renumber
from glc.lower.products import Products, Unfused
from glc.lower.program import Buffer, HostStep, Program, aligned
from glc.lower.relayout import Relayout
from glc.lower.relocate import Kernels
from glc.lower.reorient import Reorient
from glc.lower.view import NotAffine, View, row_major, view_of
from glc.rewrites.tensorise import refusal

FRAMES_PER_KERNEL = 8  # Python frames one kernel nested in another's operand takes to lower


def lower(term: Term, env: Mapping[str, Access], config: HwConfig, build: bool = True,
          disabled: Collection[str] = frozenset()) -> Program:
    """Lower an extracted term for ``config``; a GlcError if its tensors do not fit DRAM.
    Without ``build`` the systolic kernels are chosen and costed by the analytic model but get
    no instructions (what the extraction's costing needs: ``Program.estimated_cycles``).
    ``disabled``: optimizations (glc/lower/optimizations.py) the lowering does without.

    A lowering whose steps read a buffer an optimization took away (a value moved while a
    consumer held a view of it, ``_Lowerer.verify``) is lowered again with that value kept
    where it was: it is never run.

    The walks over the term are iterative, but a kernel whose operand is another kernel's result
    materialises that one first, by recursion (``_materialise`` → ``_kernel`` → ``_operand``):
    the recursion limit is raised by a few frames per systolic node for the call, so a chain of
    thousands of kernels lowers, and exhausting even that is a GlcError at the term. A host step
    between two kernels (``_host`` → ``_materialise``) nests as deep, so every node that computes
    (not an access pattern, not a leaf) counts too: a dynamically quantized EfficientNet-B0's 66
    systolic nodes alone left too few frames for the float host steps between them."""
    nodes = walk(term)
    nested = sum(node.op in SYSTOLIC for node in nodes)
    steps = sum(bool(node.args) and not node.op.startswith("access") for node in nodes)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + FRAMES_PER_KERNEL * (nested + steps))
    try:
        kept: set[int] = set()
        kernels = Kernels()  # each distinct kernel built once (glc/lower/relocate.py)
        while True:
            lowerer = _Lowerer(term, env, config, build, frozenset(disabled), kept, kernels)
            program = lowerer.run()
            stale = lowerer.verify()
            if stale is None:  # its buffers named as its steps run (glc/lower/names.py)
                program.check_stores(term.span)
                return renumber(program) if build else program
            if stale in kept:
                raise GlcError("the lowering reads a buffer no step writes (an internal "
                               "error)", term.span)
            kept.add(stale)
    except RecursionError:
        raise GlcError(f"the lowering cannot follow {nested} kernels nested in each other's "
                       "operands", term.span) from None
    finally:
        sys.setrecursionlimit(limit)


def predicted_cycles(term: Term, env: Mapping[str, Access], config: HwConfig) -> int:
    """The cycle model's count for ``term`` lowered on ``config``, summed over its kernels: the
    hardware cost an extraction can compare candidate terms by (host steps cost 0 here)."""
    return lower(term, env, config).figures()["predicted_cycles"]


class _Lowerer(Products, Relayout, Depthwises, Batches, Folds, Concats, Reorient):
    def __init__(self, term: Term, env: Mapping[str, Access], config: HwConfig, build: bool,
                 disabled: frozenset[str] = frozenset(), kept: Collection[int] = (),
                 kernels: Kernels | None = None):
        self.term, self.config, self.build = term, config, build
        self.kernels = kernels or Kernels()
        self.disabled = disabled
        self.fired: Counter[str] = Counter()  # each optimization's firings kept
        self.types = check(term, env)
        self.rule = Absorb(term, self.types)
        symbols = list(dict.fromkeys(t.value for t in walk(term) if t.op == "symbol"))
        self.program = Program(config, {}, symbols)
        self.top = 0  # the next free DRAM address
        self.host_top = aligned(config.dram_bytes)  # ... in the host's memory
        self.env = env
        self.in_dram: dict[int, View] = {}
        self.unfused: set[int] = set()  # bias adds that could not join their kernel
        self.repacked: dict[tuple[View, int], str] = {}  # (tensor, dim moved last) → its copy
        # Each kernel's result buffer → the node it computes and whether it ran as Cᵀ; the
        # orientation a node's kernel must take (glc/lower/reorient.py).
        self.oriented: dict[str, tuple[int, bool]] = {}
        self.forced: dict[int, bool] = {}
        self.folds: dict[str, Term] = {}  # each fold's result buffer → its node
        # A node whose kernel stores its result into a band of a concatenation's buffer
        # (glc/lower/concat.py).
        self.placed: dict[int, Band] = {}
        # Who has taken each node's value (the node being lowered when it asked; None: the
        # program's result), and the nodes being lowered, innermost last: a value may move
        # (glc/lower/reorient.py, ``_sole_kernel_step``) only while no other node holds a view
        # of where it lay.
        self.readers: dict[int, set[int | None]] = {}
        self.lowering: list[int] = []
        # Buffers whose step an optimization dropped → the node whose value they held. Their
        # names are not given again, so a view left over one is found (``verify``) and the
        # program lowered again with that node in ``kept``, whose value then does not move.
        self.retired: dict[str, int] = {}
        self.kept = frozenset(kept)
        # Each node's parent (the last seen; ``_only_below`` follows single-use nodes only) and
        # the kernel results whose DRAM a host step gave back (``_release_read``): their
        # addresses are reused, so execute keeps their values for --check-each.
        self.parent = {id(a): id(t) for t in walk(term) for a in t.args}
        self.released: dict[str, tuple[int, int, int]] = {}  # → start, end, the step freeing it
        # The views taken by the host steps being built (outermost first): ``_release_read``
        # keeps their buffers, which the enclosing step reads after the nested one.
        self.building: list[dict[str, View]] = []

    def run(self) -> Program:
        root = self.term
        self.program.output = None
        if self.rule.fusion(root, self.unfused) is None and self.rule.affine(root):
            # A kernel's result stored transposed may be no view of it any more.
            with contextlib.suppress(NotAffine):
                self.program.output = view_of(root, self.types, self._materialise)
        if self.program.output is None:
            self.program.output = self._materialise(root)
        self.program.output_dtype = self.types[id(root)].dtype
        # An input read only for its shape ((get-access-shape x), (shape-of x)) takes no memory.
        self.program.inputs = [s for s in self.program.inputs if s in self.program.buffers]
        self.program.values = {id(t): (t, self.in_dram[id(t)]) for t in walk(root)
                               if id(t) in self.in_dram}
        self.program.freed = set(self.released)
        self.program.fired = dict(self.fired)
        return self.program

    def enabled(self, optimization: str) -> bool:
        """Whether the lowering may make ``optimization``'s choice (not ``--disable``d)."""
        return optimization not in self.disabled

    # --- the memory plan ---------------------------------------------------------------------

    def _allocate(self, name: str, ty: Access, dram: bool = False) -> str:
        """The next free address: in DRAM for what a kernel touches (its result, a host copy of
        its operand), else in the host's memory beyond DRAM, whence a kernel's first use moves it
        (``_to_dram``). So only what the accelerator touches takes DRAM, in the order the kernels
        need it: a large input only host steps read costs none of it."""
        top = self.top if dram else self.host_top
        buffer = Buffer(name, ty.dims, ty.dtype, top)
        self.program.buffers[name] = buffer
        end = aligned(buffer.address + buffer.nbytes)
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
            writer = next((i for i, step in enumerate(self.program.steps)
                           if step.output == name), None)
            if writer is not None:
                # A host step's result, written when that step ran, not now: DRAM a later host
                # step gave back (``_release_read``) may hold a kernel result between the two.
                self.top = max([self.top] + [end for _, end, at in self.released.values()
                                             if at > writer])
            self._allocate(name, Access(buffer.shape, (), buffer.dtype), dram=True)
        return self.program.buffers[name]

    def _reaches(self, view: View) -> bool:
        """Whether ``view``'s buffer lies in DRAM with room below it for the view's lowest
        element address. A padded row's runs start before the tensor, and a run's address
        does not wrap into its elements (docs/isa.md, "Range checks"): a padded image at
        address 0 would fault. So a tensor a kernel reads first through such a view enters DRAM
        no lower than that; one already placed lower is copied by the caller (or its node is a
        host step)."""
        buffer = self.program.buffers[view.buffer]
        size = np.dtype(buffer.dtype).itemsize
        low = (view.offset + sum(min(0, d.stride) * (d.size - 1) for d in view.digits())) * size
        if buffer.address >= self.config.dram_bytes:
            self.top = max(self.top, aligned(-low))
        return self._to_dram(view.buffer).address + low >= 0

    def _fresh(self, stem: str, taken: Collection[str] = ()) -> str:
        """A new buffer name: the stem numbered among its own kind (kernel1, host1, copy1),
        none of ``taken`` (names promised but not allocated yet) nor a retired one."""
        count = 1
        name = f"{stem}{count}"
        while name in self.program.buffers or name in taken or name in self.retired:
            count += 1
            name = f"{stem}{count}"
        return name

    # --- which nodes become what ---------------------------------------------------------------

    def _materialise(self, node: Term) -> View:
        """``node``'s value in DRAM (a view of the buffer holding it), emitting the steps that
        compute it; the node being lowered is recorded as one of its readers."""
        self.readers.setdefault(id(node), set()).add(self.lowering[-1] if self.lowering
                                                       else None)
        self.lowering.append(id(node))
        try:
            return self._computed(node)
        finally:
            self.lowering.pop()

    def _computed(self, node: Term) -> View:
        if node.op == "symbol":
            if node.value not in self.program.buffers:
                self._allocate(node.value, self.env[node.value])
            return row_major(node.value, self.program.buffers[node.value].shape)
        if id(node) not in self.in_dram and (plan := self.rule.linear_plan(node)) is not None:
            with contextlib.suppress(Unfused):
                self.in_dram[id(node)] = self._kernel(node, plan.systolic, plan.relu, None,
                                                      plan.bias, plan)
        if id(node) not in self.in_dram and (plan := self.rule.batched_plan(node)) is not None:
            # A depthwise product's kernels, or else a batched product's, requantizing in
            # their STOREs (both are dot products over a pair of int8 views).
            result = self._depthwise(node, plan.systolic, plan.relu, None, None, plan)
            if result is None:
                result = self._batched(node, plan.systolic, plan.relu, None, None, plan)
            if result is not None:
                self.in_dram[id(node)] = result
        if id(node) not in self.in_dram:
            fused = self.rule.fusion(node, self.unfused)
            if fused:
                systolic, relu, shift, bias, views = fused
                try:
                    result = self._kernel(node, systolic, relu, shift, bias)
                    if views is not None:  # the data movement over the converted result
                        result = view_of(views, self.types,
                                         lambda t: result if t is systolic else None)
                    self.in_dram[id(node)] = result
                    return result
                except Unfused:  # the bias add stays on the host, over the product's kernel
                    add = node
                    while self.types[id(add.args[0])].name != "elementwise-add":
                        add = add.args[1]
                    self.unfused.add(id(add))
            if id(node) not in self.in_dram and (found := self.rule.depthwise(node)):
                result = self._depthwise(node, *found)
                if result is None:
                    result = self._batched(node, *found)
                if result is not None:
                    self.in_dram[id(node)] = result
            if id(node) not in self.in_dram and self.rule.fold_plan(node) is not None:
                folded = self._fold(node)
                if folded is not None:
                    self.in_dram[id(node)] = folded
            if id(node) not in self.in_dram and node.op == "access-concatenate":
                copied = self._concat(node)
                if copied is not None:
                    self.in_dram[id(node)] = copied
            if id(node) not in self.in_dram:
                name = self._host(node)
                self.in_dram[id(node)] = row_major(name, self.program.buffers[name].shape)
        return self.in_dram[id(node)]

    def _read_over(self, operand: Term, base: Term, value: View) -> View:
        """``operand`` (an access chain over ``base``) read over ``value`` as base's value: a
        copy of the tensor, or its producer's result laid out anew."""
        return view_of(operand, self.types,
                       lambda t: value if t is base else self._materialise(t))

    # --- steps ------------------------------------------------------------------------------

    def _host(self, node: Term, copy: bool = False) -> str:
        """A host step computing ``node`` from the DRAM values of its kernel and input leaves;
        returns the buffer it writes."""
        views: dict[str, View] = {}

        def in_dram(t: Term) -> Term | None:
            if not (t.op == "symbol" or (t is not node and (
                    id(t) in self.in_dram or self.rule.fusion(t, self.unfused) is not None
                    or self.rule.linear_plan(t) is not None
                    or self.rule.fold_plan(t) is not None))):
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

        # The views this step has taken stay live while its body is built: a host step nested
        # in it (an operand of a kernel its body reads) must not give their DRAM back.
        self.building.append(views)
        try:
            body = rebuild(node, in_dram)
        finally:
            self.building.pop()
        out = self._allocate(self._fresh("copy" if copy else "host"), self.types[id(node)],
                             dram=copy)
        why = "" if copy else _why_host(node, self.types)
        self.program.steps.append(HostStep(out, body, views, out, copy, why))
        self._release_read(node, views)
        return out

    def _release_read(self, node: Term, views: dict[str, View]) -> None:
        """Give back the DRAM of the kernel results that only the host step of ``node`` reads:
        once it has run they are dead, and the kernels after it may use their space (a host step
        between two kernels counted its input against the second: n4 refused kernels that fit).
        Such a result's every holder is a single-use descendant of ``node``, and no host step
        being built around this one has read it (its body may read the result beside the
        kernel that needed this step); its space is freed where it lies on top of the plan (it
        grows upward), with any freed space below it."""
        outputs = {s.output for s in self.program.kernels}
        building = {view.buffer for taken in self.building for view in taken.values()}
        for name in dict.fromkeys(view.buffer for view in views.values()):
            holders = [i for i, view in self.in_dram.items() if view.buffer == name]
            if name not in outputs or name in building or \
                    not all(self._only_below(i, node) for i in holders):
                continue
            buffer = self.program.buffers[name]
            self.released[name] = (buffer.address, aligned(buffer.address + buffer.nbytes),
                                   len(self.program.steps) - 1)
        ends = {end: start for start, end, _ in self.released.values()}
        while self.top in ends:
            self.top = ends.pop(self.top)

    def _only_below(self, child: int, node: Term) -> bool:
        """Whether every use of the node ``child`` (an id) lies under ``node``: a chain of
        single uses up to it."""
        while child != id(node):
            if self.rule.uses[child] != 1 or child not in self.parent:
                return False
            child = self.parent[child]
        return True


def _why_host(node: Term, types: Mapping[int, object]) -> str:
    """Why a product the host computes is not on the array ("" for any other node): its shapes
    (glc/rewrites/tensorise.py, ``refusal``), else its operands' dtype."""
    if node.op == "compute" and node.args[0].value[0] == "dot-product" and \
            node.args[1].op == "access-cartesian-product":
        a, b = (types[id(x)] for x in node.args[1].args)
        operands = node.args[1].args
        why = refusal(a, b)
        if why is not None:
            return f"a product of {a} by {b}: {why}"
    elif node.op == "compute" and node.args[0].value[0] == "dot-product" and \
            node.args[1].op == "access-pair":
        a, b = (types[id(x)] for x in node.args[1].args)
        operands = node.args[1].args
        if a.dtype == b.dtype == "int8":
            # Paired item by item, and neither a depthwise convolution the depthwise kernels
            # take (glc/lower/depthwise_lowering.py) nor a batch of products (glc/lower/batched.py).
            return (f"a product of {a} and {b} paired item by item (access-pair): the array "
                    "multiplies every item of one operand by every item of the other "
                    "(access-cartesian-product), the depthwise kernels take only windows "
                    "paired with their channel's taps, and the batched ones only a batch of "
                    "matrix products (the first operand broadcast over the last output dim, "
                    "the second over the one before)")
    elif node.op in SYSTOLIC:
        operands = node.args[2:]
    else:
        return ""
    dtypes = sorted({types[id(x)].dtype for x in operands} - {"int8"})
    return f"its operands are {', '.join(dtypes)}: the array multiplies int8" if dtypes else ""
