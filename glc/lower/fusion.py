"""What one kernel can absorb, over the terms the lowering walks (docs/lowering.md, "Fusion").

A systolic-array node over int8 operands becomes a kernel together with an int32 bias, a relu
and/or ``(requantize k)``, all of which its STOREs apply (the bias from a table row,
glc/lower/table.py; one that varies along both of the product's dims the lowering leaves
unfused: a view's property, which the extraction's cost sees by lowering it), through any
data-moving operators between them (both act elementwise and keep 0, so they commute with every
view), or ONNX's ``requantize-linear`` the STORE applies (glc/lower/linear.py); a reduce or
elementwise node over views is a fold of the vector unit, with the same conversions. ``Absorb``
answers, for one checked term, which nodes join which kernel; the lowering
(glc/lower/lowering.py) builds them. The extraction's cost (glc/cost/extraction.py) asks the same
questions of e-classes through the same rule (``conversion``, ``commutes``, ``bias_fits``); what
only a term can answer is whether a node has one use (an e-class's uses are known only once a
term is extracted), so the cost may call fusable a node the lowering then leaves to a host step.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np

from glc.ir.quantized import add_linear_constants, requantize_constants
from glc.ir.term import Term, walk
from glc.ir.types import Access, ComputeKind
from glc.isa import vector_linear
from glc.isa.fields import LIN_SCALES
from glc.lower import linear
from glc.lower.view import NotAffine, View, row_major, view_of

SYSTOLIC = ("systolic-array", "systolic-array-with-blocking")
# Data-moving operators a relu or requantize commutes with (zero padding only: both keep 0).
COMMUTING = ("access", "access-transpose", "access-reshape", "access-flatten", "access-squeeze",
             "access-insert-axis", "access-slice", "access-broadcast", "access-windows",
             "access-pad")


def conversion(kind: object) -> str | None:
    """``"relu"`` or ``"requantize"`` when the STORE applies ``kind`` (docs/isa.md, STORE
    conversion: relu, and requantize by a shift below 32), else None. A kernel takes each at
    most once; both act elementwise, keep 0 and are monotone, so they commute with every view
    and with each other."""
    if isinstance(kind, ComputeKind):
        if kind.name == "relu":
            return "relu"
        if kind.name == "requantize" and kind.param < 32:
            return "requantize"
    return None


def commutes(op: str, pad_type: object = None) -> bool:
    """Whether the conversions commute with the data-moving node ``op`` (an ``access-pad``
    only with zero padding: the conversions keep 0)."""
    return op in COMMUTING and (op != "access-pad" or pad_type == "zero-padding")


def bias_fits(product: Access, bias: Access) -> bool:
    """Whether ``bias`` can be added to ``product`` by its kernel's STOREs: int32 and of its
    dims (and, a view's property the lowering checks, a vector along one of them)."""
    return bias.dtype == "int32" and bias.dims == product.dims


class Absorb:
    """The absorption rule over one term, its types checked (``types``: node id → type)."""

    def __init__(self, term: Term, types: dict[int, object]):
        self.types = types
        self.uses = Counter(id(a) for node in walk(term) for a in node.args)

    def affine(self, node: Term, over: Term | None = None) -> bool:
        """Whether ``node`` is a view (of ``over``, if given), without materialising anything
        to find out."""
        def base(t: Term) -> View | None:
            return row_major("?", self.types[id(t)].dims) if over in (None, t) else None

        try:
            view_of(node, self.types, base)
        except NotAffine:
            return False
        return True

    def fusion(self, node: Term, unfused: frozenset[int] | set[int] = frozenset()):
        """(systolic node, relu, requantize shift, bias, views) when ``node`` is an int8
        systolic array plus at most an int32 bias (``elementwise-add`` of an ``access-pair``),
        under at most one relu and one requantize, each used only there (the kernel's STOREs add
        the bias and convert), else None. Between the relu/requantize and
        the array may lie data-moving operators (``views``, their topmost node): relu and
        requantize act elementwise and keep 0, so they commute with every view."""
        found = self._conversions(node, unfused)
        if found is None or found[0].op not in SYSTOLIC:
            return None
        current, relu, shift, bias, views = found
        a, b = (self.types[id(x)] for x in current.args[2:])
        if a.dtype != "int8" or b.dtype != "int8":
            return None
        return current, relu, shift, bias, views

    def depthwise(self, node: Term):
        """(dot-product node, relu, requantize shift, views) when ``node`` is a dot product
        over an ``access-pair`` of two int8 views (a depthwise product, glc/lower/depthwise.py,
        if its operands read as one) under the conversions ``fusion`` takes, no bias; else
        None."""
        found = self._conversions(node, frozenset())
        if found is None:
            return None
        current, relu, shift, bias, views = found
        if bias is not None or current.op != "compute" or \
                self.types[id(current.args[0])].name != "dot-product":
            return None
        pair = current.args[1]
        if pair.op != "access-pair" or self.uses[id(pair)] > 1 or \
                any(self.types[id(x)].dtype != "int8" or not self.affine(x) for x in pair.args):
            return None
        return current, relu, shift, views

    def batched_plan(self, node: Term) -> linear.LinearPlan | None:
        """The plan when ``node`` is a ``requantize-linear`` of a dot product over an
        ``access-pair`` of two int8 views (a batched product's kernels requantizing in their
        STOREs, glc/lower/batched.py, if its operands read as one), or such a product plus an
        int32 bias (``multipliers`` None: the kernels add it, their result int32); else
        None."""
        found = linear.match(node, self.types, self.uses, self._paired)
        if found is not None or node.op != "compute" or \
                self.types[id(node.args[0])].name != "elementwise-add":
            return found
        pair = node.args[1]
        if pair.op != "access-pair" or self.uses[id(pair)] > 1:
            return None
        for first, other in (pair.args, pair.args[::-1]):
            core = linear.under(first, self.uses, self._paired)
            if core is not None and bias_fits(self.types[id(first)], self.types[id(other)]):
                return linear.LinearPlan(core, None if first is core else first, False, other,
                                         None, 0)
        return None

    def _paired(self, node: Term) -> bool:
        if node.op != "compute" or self.types[id(node.args[0])].name != "dot-product":
            return False
        pair = node.args[1]
        return pair.op == "access-pair" and self.uses[id(pair)] == 1 and all(
            self.types[id(x)].dtype == "int8" and self.affine(x) for x in pair.args)

    def _conversions(self, node: Term, unfused: frozenset[int] | set[int]):
        """(core, relu, requantize shift, bias, views): ``node`` under at most one relu and one
        requantize and an int32 bias pair (each used only there), with the data-moving
        operators between the conversions and the core; None where the views are no view of
        the core."""
        relu, shift, bias, current = False, None, None, node
        while current.op == "compute":
            kind: ComputeKind = self.types[id(current.args[0])]
            step = conversion(kind)
            if step == "relu" and not relu:
                relu = True
            elif step == "requantize" and shift is None:
                shift = kind.param
            elif kind.name == "elementwise-add" and id(current) not in unfused:
                found = self.bias_pair(current.args[1])
                if found is None:
                    return None
                current, bias = found
                break
            else:  # the core (a compute none of the conversions: fusion's callers check it)
                break
            current = current.args[1]
            if self.uses[id(current)] > 1:
                return None
        views = current if bias is None and (relu or shift is not None) else None
        while views is not None and commutes(
                current.op, current.args[1].value if current.op == "access-pad" else None):
            current = current.args[0]
            if self.uses[id(current)] > 1:
                return None
        if views is current:
            views = None
        elif views is not None and not self.affine(views, over=current):
            return None
        return current, relu, shift, bias, views

    def linear_plan(self, node: Term) -> linear.LinearPlan | None:
        """The plan when ``node`` is a ``requantize-linear`` one kernel computes (its STOREs
        requantizing, glc/lower/linear.py), else None."""
        return linear.match(node, self.types, self.uses, lambda t: t.op in SYSTOLIC)

    def bias_pair(self, pair: Term) -> tuple[Term, Term] | None:
        """(systolic node, bias) for ``(access-pair X B)`` or ``(access-pair B X)``, X a systolic
        array seen through re-splits only, B an int32 tensor of its dims."""
        if pair.op != "access-pair" or self.uses[id(pair)] > 1:
            return None
        for first, other in (pair.args, pair.args[::-1]):
            while first.op == "access" and self.uses[id(first)] == 1:
                first = first.args[0]
            if first.op in SYSTOLIC and self.uses[id(first)] == 1 and \
                    bias_fits(self.types[id(first)], self.types[id(other)]):
                return first, other
        return None

    def fold_plan(self, node: Term) -> FoldPlan | None:
        """The plan when ``node`` is a fold the vector unit runs (glc/lower/fold.py) under at
        most one relu and one requantize (or one ``requantize-linear`` outermost), each used
        only there: reduce-max/-sum over the items of a view, elementwise-add/-mul over an
        access-pair of views (or over the first item dim of one view), ``add-linear`` of two
        views (VECTOR ``lin``), ``table-lookup`` of a view through a view of its table (VECTOR
        ``lut``), or a relu/requantize of a view itself (a fold of one row); operands int8 or
        int32, all of one dtype."""
        relu, shift, current, requant = False, None, node, None
        if node.op == "requantize-linear":  # the STORE's `linear`, over any of the below
            if self.uses[id(node.args[0])] > 1:
                return None
            requant, current = node, node.args[0]
        while current.op == "compute":
            kind: ComputeKind = self.types[id(current.args[0])]
            # The STORE applies relu, then requantize; the two commute (conversion), so either
            # may be the outer one.
            step = conversion(kind)
            if step == "relu" and not relu:
                relu = True
            elif step == "requantize" and shift is None and requant is None:
                shift = kind.param
            else:
                break
            if self.uses[id(current.args[1])] > 1:
                return None
            current = current.args[1]
        if current.op == "add-linear":
            return self._lin_plan(current, relu, shift, requant)
        if current.op == "table-lookup":  # VECTOR lut (glc/lower/lookup.py)
            codes, table = current.args
            if not (self.affine(codes) and self.affine(table)):
                return None
            return FoldPlan("lut", (codes,), (), self.types[id(current)].dims, relu, shift,
                            requant, table=table)
        if current.op == "quantize-linear":
            return self._requantized_plan(current) if current is node else None
        bias = None
        if requant is not None and (found := self._fold_bias(current, relu)) is not None:
            current, bias = found  # added by the STOREs, as a product's bias
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
                not all(self.affine(o) for o in operands):
            return None
        dims = tuple(d for k, d in enumerate(self.types[id(operands[0])].dims) if k not in folded)
        op = {"reduce-max": "max", "elementwise-mul": "mul"}.get(name, "add")
        return FoldPlan(op, operands, folded, dims, relu, shift, requant, bias=bias)

    def _fold_bias(self, node: Term, relu: bool) -> tuple[Term, Term] | None:
        """Under a ``requantize-linear`` (and no relu between), ``(compute elementwise-add
        (access-pair F B))`` of an int32 reduce-sum F used only here and an int32 view B that
        varies along at most the result's last dim (a per-channel or per-tensor bias: an ONNX
        global average pool's zero-point correction): F, and B for the STOREs' table to add
        (STORE ``bias``), so the sum, the bias and the requantization are one fold, not a sum
        and then a pass over it."""
        if relu or node.op != "compute" or \
                self.types[id(node.args[0])].name != "elementwise-add":
            return None
        pair = node.args[1]
        if pair.op != "access-pair" or self.uses[id(pair)] > 1:
            return None
        total, bias = pair.args
        if total.op != "compute" or self.uses[id(total)] > 1 or \
                self.types[id(total.args[0])].name != "reduce-sum" or \
                self.types[id(total)].dtype != "int32" or \
                self.types[id(bias)].dtype != "int32" or not self.affine(bias):
            return None
        return total, bias

    def _lin_plan(self, node: Term, relu: bool, shift: int | None,
                  requant: Term | None) -> FoldPlan | None:
        """``(add-linear A B sa za sb zb sc zc offset)`` as VECTOR ``lin`` over the pair (B, A):
        B's row first, by ``sb / sc``, then A's by ``sa / sc``, from ``F`` (docs/isa.md, VECTOR;
        glc/ir/quantized.py); None when a constant lies past what ``lin`` takes (2^64)."""
        a, b, *numbers = node.args
        sa, za, sb, zb, sc, zc, offset = (x.value for x in numbers)
        ra, rb, fixed = add_linear_constants(sa, int(za), sb, int(zb), sc, int(zc), int(offset))
        lin = Lin.of(int(offset), fixed, rb, ra)
        if requant is not None or lin is None or not (self.affine(a) and self.affine(b)):
            return None
        return FoldPlan("lin", (b, a), (), self.types[id(node)].dims, relu, shift, None, lin)

    def _requantized_plan(self, node: Term) -> FoldPlan | None:
        """``(quantize-linear (dequantize-linear X s z) sc zc)`` of an int8 view X — an
        activation requantized to another scale and zero point (an ONNX Concat's part) — as
        VECTOR ``lin`` over X alone, with constants that give the two conversions' value on
        every int8 input (glc/ir/quantized.py, ``requantize_constants``); None where none do."""
        inner, sc, zc = node.args
        if inner.op != "dequantize-linear" or self.uses[id(inner)] > 1:
            return None
        x, s, z = inner.args
        if self.types[id(x)].dtype != "int8" or not self.affine(x):
            return None
        found = requantize_constants(s.value, int(z.value), sc.value, int(zc.value))
        lin = Lin.of(0, found[1], found[0]) if found is not None else None
        if lin is None:
            return None
        return FoldPlan("lin", (x,), (), self.types[id(node)].dims, False, None, None, lin)


class Lin(NamedTuple):
    """VECTOR ``lin``'s constants (docs/isa.md): the offset, and the float32 bits of ``fixed``
    and of each row's scale."""

    offset: int
    fixed: int
    scales: tuple[int, ...]

    @classmethod
    def of(cls, offset: int, fixed: np.float32, *scales: np.float32) -> Lin | None:
        """The constants as VECTOR fields (their float32 bits), or None where one lies past
        what ``lin`` takes (2^64, docs/isa.md)."""
        bits = [int(np.float32(v).view(np.uint32)) for v in (fixed, *scales)]
        if not all(map(vector_linear.takes, bits)):
            return None
        return cls(offset, bits[0], tuple(bits[1:]))

    @property
    def fields(self) -> dict[str, int]:
        """The VECTOR fields that carry them."""
        return {"offset": self.offset, "fixed": self.fixed,
                **dict(zip(LIN_SCALES, self.scales, strict=False))}


class FoldPlan(NamedTuple):
    """A fold the vector unit runs: ``op`` over ``operands`` (the ``folded`` dims of one, or a
    pair), of result ``dims``, under ``relu`` and a requantize ``shift`` or a
    ``requantize-linear`` node ``requant``; ``lin`` the constants of ``op`` ``lin``, ``table``
    the table of ``op`` ``lut``, ``bias`` the bias added before ``requant``."""

    op: str
    operands: tuple[Term, ...]
    folded: tuple[int, ...]
    dims: tuple[int, ...]
    relu: bool
    shift: int | None
    requant: Term | None
    lin: Lin | None = None
    table: Term | None = None  # op `lut`: the table-lookup's table
    bias: Term | None = None  # with ``requant``: an int32 bias the STOREs add first
