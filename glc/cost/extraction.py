"""The hardware cost model extraction minimises: an e-node's own cost in accelerator cycles.

``CycleCost(config)`` is a cost function for glc/egraph/extract.py, ``cost(egraph, class_id,
node) -> float``, so the exact (DAG) extractor picks the term predicted to run fastest on
``config`` (architecture.md, "The e-graph": extraction by the hardware cost model), a kernel
shared by two uses paid once. Per node:

- an int8 ``systolic-array`` / ``systolic-array-with-blocking``: the predicted cycles
  (glc/isa/cycles.py) of the kernel glc/lower/ makes of it. The node is lowered on its own, as
  ``(systolic-array r c A B)`` with A and B each a *view* of the inputs when its class holds one
  (any term of views over input symbols: equivalent terms are the same view, so the same DMA —
  docs/lowering.md, "Address patterns") and otherwise a fresh row-major tensor of the operand's
  type (a kernel's or host step's result); a host copy the lowering makes of an operand is
  charged as host work. Cached per kernel signature (the operands' address patterns), so
  candidates spelling the same views differently are lowered once. A systolic node the array
  cannot run (operands not int8, a kernel the lowering refuses), or not costed before the
  extraction's deadline (``stop_at``), costs the host estimate less REFUSED_MARGIN;
- host work — a ``compute`` that stays on the host (an un-tensorised ``dot-product`` above all),
  a systolic node over non-int8 operands, and the non-view access operators the lowering
  materialises (``access-concatenate``, non-zero padding): ``HOST_STEP + HOST_OP x`` the elements
  it reads (a dot-product reads 2·K per output element: elements x reduction length);
- a ``relu`` or ``requantize`` over an int8 systolic node, above any views over it: ``EPSILON``,
  the STORE applies it; an int32 bias added to one: what starting the accumulator from it adds to
  the kernel's predicted cycles;
- every other node (access patterns: address arithmetic; literals, shapes): ``EPSILON``, so
  among terms of equal cycles the smaller wins (twice that for a view over a fused conversion).
"""

from __future__ import annotations

import math
import time

from glc.egraph.egraph import EGraph, ENode
from glc.egraph.extract import build_term, tree_costs
from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.ir.check import check
from glc.ir.term import Term, leaf, walk
from glc.ir.types import Access, ComputeKind
from glc.lower.fusion import COMMUTING, SYSTOLIC, bias_fits, commutes, conversion
from glc.lower.lowering import lower
from glc.lower.view import NotAffine, row_major, view_of

# Per node, so that among equal-cycle terms the one with fewer nodes wins; far below one cycle,
# so no number of them outweighs a cycle in any program the e-graph can hold.
EPSILON = 1e-4
# The host estimates, in accelerator cycles. Assumptions, not measurements (host steps are not
# timed, docs/lowering.md "Images"): a host step first waits for the accelerator to drain and
# its results to reach the host, then restarts it (HOST_STEP; above any single-tile kernel's
# cycles, 55 on n16, so even the smallest product maps to the array), and a scalar host core
# spends HOST_OP cycles per element it reads (a load, an operation, a store: the array does
# N² multiply-accumulates per cycle). Large enough that the array wins whenever a node can map
# to it (tests/cost/test_cost_extraction.py), finite so a float program still extracts.
HOST_STEP = 1000.0
HOST_OP = 4.0
# Access operators that are views (docs/lowering.md, "Address patterns"): zero padding only.
VIEWS = frozenset(COMMUTING) | {"symbol", "access-tensor"}
# A systolic node the array cannot run (non-int8 operands, or a kernel the lowering refuses, e.g.
# one whose tiles the scratchpad cannot hold) costs the host estimate of its product
# less this: above every kernel that runs, below the un-tensorised product, so the tensorised
# spelling still wins (an oversized program fails in the lowering, saying why, rather than
# silently running on the host; a float one is a host step either way).
REFUSED_MARGIN = 1.0


class CycleCost:
    """The cost function of the hardware model of ``config`` (see the module docstring)."""

    def __init__(self, config: HwConfig, disabled: frozenset[str] = frozenset()):
        self.config = config
        self.disabled = disabled  # the lowering's optimizations it does without
        self._kernels: dict[tuple, float] = {}
        self._nodes: dict[ENode, float] = {}  # per e-graph state: the passes of an extraction
        self.deadline: float | None = None
        self.estimated = 0
        self._egraph: tuple | None = None
        self._views: dict[int, ENode] = {}
        self._chains: dict[tuple[int, frozenset[str] | None], bool] = {}

    def __call__(self, eg: EGraph, cid: int, node: ENode) -> float:
        self._follow(eg)
        op, _, kids = node
        if op in SYSTOLIC:
            return self.systolic(eg, node)
        if op == "compute":
            return self._compute(eg, node)
        if op in COMMUTING and self._converted(eg, kids[0]):
            return 2 * EPSILON
        if op == "access-concatenate" or (op == "access-pad" and
                                          eg.type_of(kids[1]) != "zero-padding"):
            return host_cost(_size(eg.type_of(cid)))
        return EPSILON

    def stop_at(self, deadline: float | None) -> None:
        """Lower no new candidate kernel after ``deadline`` (a ``time.perf_counter()`` value),
        so an extraction's time limit binds while costing too: a kernel not costed by then costs
        as refused (the host estimate), so the candidates costed in time win. ``estimated``
        counts those kernels."""
        self.deadline, self.estimated = deadline, 0

    def systolic(self, eg: EGraph, node: ENode) -> float:
        """A systolic node's predicted kernel cycles (host work when its operands are not
        int8, when the lowering refuses the kernel, e.g. too many weight tiles, or when it was
        not costed before the deadline). Remembered per node: an extraction asks several times."""
        self._follow(eg)
        if node not in self._nodes:
            refused = host_cost(_macs(eg, node) * 2) - REFUSED_MARGIN
            if not _int8_array(eg, node):
                self._nodes[node] = refused
            elif self.deadline is not None and time.perf_counter() > self.deadline:
                self.estimated += 1
                self._nodes[node] = refused
            else:
                env = dict(eg.env)
                self._nodes[node] = self._predict(self._synthetic(eg, node, env), env, refused)
        return self._nodes[node]

    def _predict(self, term: Term, env: dict, refused: float) -> float:
        """The predicted cycles of ``term`` lowered alone, or ``refused`` when the lowering
        refuses it or does not make it one kernel without a host step. Cached by the kernel's
        signature: candidates that differ only in how their operands' views are spelled are
        the same kernel, lowered once."""
        key = _signature(term, env)
        if key not in self._kernels:
            try:
                # On the real DRAM: a candidate whose own tensors do not fit is refused before
                # its schedule is estimated (a network's layer on n4 would take minutes); one
                # that fits alone may still not fit beside the rest, the real lowering's to say.
                program = lower(term, env, self.config, build=False, disabled=self.disabled)
                # A host copy of an operand the DMA cannot walk is host work the cycle count
                # leaves out (docs/lowering.md, "Address patterns"): charged here.
                cycles = program.estimated_cycles() + sum(
                    host_cost(math.prod(program.buffers[s.output].shape))
                    for s in program.host_steps if s.copy)
                # One kernel of the node's own (a repack the search chose before it is
                # counted in the cycles, glc/lower/repack.py).
                own = [s for s in program.kernels if s.kernel.kind != "repack"]
                if any(not s.copy for s in program.host_steps) or len(own) != 1:
                    cycles = refused
            except GlcError:
                cycles = refused
            self._kernels[key] = cycles
        return self._kernels[key]

    def _synthetic(self, eg: EGraph, node: ENode, env: dict) -> Term:
        """The systolic node as a term to lower alone: its operands views or fresh tensors."""
        op, _, (rows, cols, a, b) = node
        operands = tuple(self._operand(eg, k, which, env) for k, which in ((a, "a"), (b, "b")))
        return Term(op, (leaf("int", eg.type_of(rows)), leaf("int", eg.type_of(cols)))
                    + operands)

    # --- the e-graph's views ------------------------------------------------------------------

    def _follow(self, eg: EGraph) -> None:
        """Forget what was read from another e-graph (or this one before it grew)."""
        state = (id(eg), eg.enodes, eg.eclasses)
        if state != self._egraph:
            self._egraph = state
            self._nodes = {}
            self._views = {c: n for c, (_, n) in tree_costs(eg, _view_only).items()}
            self._chains = {}

    def _operand(self, eg: EGraph, cid: int, which: str, env: dict) -> Term:
        """A view term of the class over input symbols, else a fresh symbol of its type (added
        to ``env``): a row-major tensor, as the lowering materialises one."""
        cid = eg.find(cid)
        if cid in self._views:
            return build_term(eg, cid, self._views)
        return _fresh(eg, f"operand_{which}", eg.type_of(cid), env)

    def _chain(self, eg: EGraph, cid: int, seen: frozenset[str] | None) -> bool:
        """Whether the class holds what the lowering fuses into one kernel (glc/lower/fusion.py,
        ``Absorb.fusion``, by its rule: ``conversion``, ``commutes``, ``bias_fits``): further
        conversions (each at most once: ``seen`` holds those above; None below a view, where
        none may follow) over views over an int8 systolic node, or over a bias add to one."""
        key = (eg.find(cid), seen)
        if key not in self._chains:
            self._chains[key] = False  # a cycle of views leads nowhere new
            self._chains[key] = any(self._link(eg, node, seen)
                                    for node in eg.classes[key[0]].nodes)
        return self._chains[key]

    def _link(self, eg: EGraph, node: ENode, seen: frozenset[str] | None) -> bool:
        op, _, kids = node
        if op in SYSTOLIC:
            return _int8_array(eg, node)
        if op == "compute" and seen is not None:
            kind = eg.type_of(kids[0])
            if kind.name == "elementwise-add":
                return self._bias(eg, kids[1]) is not None
            step = conversion(kind)
            return step is not None and step not in seen and \
                self._chain(eg, kids[1], seen | {step})
        if commutes(op, eg.type_of(kids[1]) if op == "access-pad" else None):
            return self._chain(eg, kids[0], None)
        return False

    def _fused(self, eg: EGraph, kind: object, arg: int) -> bool:
        """Whether a compute of ``kind`` over class ``arg`` is a conversion the STORE of the
        kernel below applies."""
        step = conversion(kind)
        return step is not None and self._chain(eg, arg, frozenset((step,)))

    def _converted(self, eg: EGraph, cid: int) -> bool:
        """Whether the class holds a relu/requantize the STORE applies. A view over it costs a
        tie-breaking epsilon more: the same value with the conversion under the view (they
        commute) is what the lowering can still fuse a further conversion over."""
        return any(op == "compute" and self._fused(eg, eg.type_of(kids[0]), kids[1])
                   for op, _, kids in eg.classes[eg.find(cid)].nodes)

    # --- host work and fusion ------------------------------------------------------------------

    def _compute(self, eg: EGraph, node: ENode) -> float:
        _, _, (kind_id, arg) = node
        kind: ComputeKind = eg.type_of(kind_id)
        if self._fused(eg, kind, arg):
            return EPSILON
        if kind.name == "elementwise-add":
            bias = self._bias(eg, arg)
            if bias is not None:
                return self._bias_cost(eg, *bias)
        return host_cost(_size(eg.type_of(arg)))

    def _bias(self, eg: EGraph, pair_class: int) -> tuple[ENode, int] | None:
        """(systolic node, bias class) when the class holds ``(access-pair X B)`` or
        ``(access-pair B X)`` with X an int8 systolic node seen through re-splits and B an int32
        tensor of its dims (glc/lower/fusion.py, ``Absorb.bias_pair``); else None."""
        for op, _, kids in eg.classes[eg.find(pair_class)].nodes:
            if op != "access-pair":
                continue
            for first, other in (kids, kids[::-1]):
                ty = eg.type_of(other)
                array = _array_in(eg, first)
                if array is not None and bias_fits(eg.type_of(first), ty):
                    return array, other
        return None

    def _bias_cost(self, eg: EGraph, array: ENode, bias: int) -> float:
        """What adding the bias in the kernel's STOREs adds to its predicted cycles (its table
        LOADs and set-up cycles); host work if the lowering cannot fuse it (a bias that varies
        along both of the product's dims, glc/lower/table.py): the bias as the view of the
        input tensors it is, so a per-channel bias is seen as the vector it is."""
        env = dict(eg.env)
        product = self._synthetic(eg, array, env)
        ty = eg.type_of(bias)
        pair = Term("access-pair", (Term("access", (product, leaf("int", len(ty.shape)))),
                                    self._operand(eg, bias, "bias", env)))
        term = Term("compute", (leaf("compute-type", ("elementwise-add",)), pair))
        host = host_cost(2 * ty.size())
        return EPSILON + max(0.0, self._predict(term, env, host) - self.systolic(eg, array))


def _signature(term: Term, env: dict) -> tuple:
    """What a lowered kernel's cost depends on: the operator, its sizes and its operands as DRAM
    views (address patterns) of the input tensors, with those tensors' types; the term itself
    where an operand is no view (the lowering copies it) or the term is no systolic node."""
    symbols = sorted({t.value for t in walk(term) if t.op == "symbol"})
    types = tuple((s, env[s]) for s in symbols)
    if term.op not in SYSTOLIC:
        return term, types
    checked = check(term, env)
    views = []
    for operand in term.args[2:]:
        try:
            views.append(view_of(operand, checked, lambda t: row_major(
                t.value, env[t.value].dims) if t.op == "symbol" else None))
        except NotAffine:
            return term, types
    return (term.op, term.args[0].value, term.args[1].value, *views), types


def host_cost(elements: int) -> float:
    """The host estimate for a step reading ``elements`` elements, in accelerator cycles."""
    return HOST_STEP + HOST_OP * elements


def _int8_array(eg: EGraph, node: ENode) -> bool:
    return node[0] in SYSTOLIC and all(eg.type_of(k).dtype == "int8" for k in node[2][2:])


def _macs(eg: EGraph, node: ENode) -> int:
    """A systolic node's multiply-accumulates, M·K·Nₒ (M = 1 for a vector)."""
    a, b = (eg.type_of(k) for k in node[2][2:])
    return math.prod(a.shape) * b.size()


def _array_in(eg: EGraph, cid: int, depth: int = 3) -> ENode | None:
    """An int8 systolic node of the class, seen through at most ``depth`` re-splits."""
    for node in eg.classes[eg.find(cid)].nodes:
        if _int8_array(eg, node):
            return node
        if node[0] == "access" and depth:
            found = _array_in(eg, node[2][0], depth - 1)
            if found is not None:
                return found
    return None


def _fresh(eg: EGraph, stem: str, ty: Access, env: dict) -> Term:
    """A new input symbol of ``ty``'s dims (row-major in DRAM, added to ``env``), accessed at
    ``ty``'s split."""
    name = stem
    while name in eg.env:
        name += "_"
    env[name] = Access(ty.dims, (), ty.dtype)
    return Term("access", (leaf("symbol", name), leaf("int", len(ty.shape))))


def _size(ty: object) -> int:
    return ty.size() if isinstance(ty, Access) else 1


def _view_only(eg: EGraph, cid: int, node: ENode) -> float:
    """1 for a view node (or a non-tensor node: ints, shapes, pad types), else unextractable."""
    op, _, kids = node
    if not isinstance(eg.type_of(cid), Access):
        return 1.0
    if op == "access-pad" and eg.type_of(kids[1]) != "zero-padding":
        return float("inf")
    return 1.0 if op in VIEWS else float("inf")
