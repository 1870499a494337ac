"""ONNX's requantization (``requantize-linear``) fused into a kernel's STORE.

A quantized conv or dense layer is ``(requantize-linear (compute elementwise-add (access-pair X
B)) M z)``: X the int32 product, seen through data-moving operators (a conv's NCHW transpose of
the array's result), B the int32 bias, M the float32 multipliers, z the zero point. The kernel's
STOREs add the bias (STORE ``bias``) and requantize (docs/isa.md, STORE ``linear``) with
multipliers and biases from accumulator rows the kernel loads first from their tensors in DRAM,
the zero point a STORE field.

The bias and the multipliers are given over the layer's dims; the kernel needs them over the
array's (glc/lower/table.py holds them for its STOREs). The operators between are bijective
(transpose, reshape, flatten, squeeze, insert-axis, re-split), so each operand is pulled back
through their inverses (``pulled_back``). A fold on the vector unit (glc/lower/fold.py: a global
average pool's sum plus its bias) requantizes the same way, by column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from glc.ir.check import check
from glc.ir.term import Term, walk
from glc.ir.types import Access, ComputeKind
from glc.lower.view import View, view_of
from glc.syntax.reader import parse_term

# Data-moving operators that are bijections of the elements: requantize-linear (which maps 0 to
# z, not 0) commutes with them, and each has an inverse to pull an operand back through.
BIJECTIVE = ("access", "access-tensor", "access-transpose", "access-reshape", "access-flatten",
             "access-squeeze", "access-insert-axis")
OPERAND = "__operand"  # the placeholder symbol an operand is pulled back from


@dataclass(frozen=True)
class LinearPlan:
    """A ``requantize-linear`` the lowering makes one kernel: ``systolic`` (int8 × int8), seen
    through ``chain`` (the topmost data-moving operator over it; None: the array itself), plus
    ``bias``, under ``relu``, requantized with ``multipliers`` and ``zero`` (terms over the
    layer's dims; a batched product's bias alone has no ``multipliers``, glc/lower/fusion.py)."""

    systolic: Term
    chain: Term | None
    relu: bool
    bias: Term | None
    multipliers: Term | None
    zero: int


def match(node: Term, types: dict[int, object], uses: dict[int, int],
          is_array: Callable[[Term], bool]) -> LinearPlan | None:
    """The plan when ``node`` is ``requantize-linear`` of an int8 systolic array (through
    bijective views) plus at most an int32 bias, under at most a relu, each used only there."""
    if node.op != "requantize-linear" or uses[id(node.args[0])] > 1:
        return None
    current, multipliers, zero = node.args
    relu, bias = False, None
    if _kind(current, types) == "relu":
        relu, current = True, current.args[1]
        if uses[id(current)] > 1:
            return None
    if _kind(current, types) == "elementwise-add" and uses[id(current)] == 1:
        pair = current.args[1]
        if pair.op != "access-pair" or uses[id(pair)] > 1:
            return None
        for first, other in (pair.args, pair.args[::-1]):
            if types[id(other)].dtype == "int32" and under(first, uses, is_array) is not None:
                current, bias = first, other
                break
        else:
            return None
    systolic = under(current, uses, is_array)
    if systolic is None or any(types[id(x)].dtype != "int8" for x in systolic.args[2:]):
        return None
    return LinearPlan(systolic, None if current is systolic else current, relu, bias,
                      multipliers, zero.value)


def _kind(node: Term, types: dict[int, object]) -> str | None:
    if node.op != "compute":
        return None
    kind: ComputeKind = types[id(node.args[0])]
    return kind.name


def under(node: Term, uses: dict[int, int], is_array: Callable[[Term], bool]) -> Term | None:
    """The systolic array ``node`` is, or views through bijective operators used only here."""
    if uses[id(node)] > 1:
        return None
    while node.op in BIJECTIVE and not is_array(node):
        node = node.args[0]
        if uses[id(node)] > 1:
            return None
    return node if is_array(node) else None


def vectors(plan: LinearPlan, types: dict[int, object], affine: Callable[[Term], bool],
            materialise: Callable[[Term], View]) -> dict[str, View] | None:
    """The plan's bias (``"bias"``) and multipliers (``"m"``), those it has, as views over the
    product's dims (pulled back through the chain); None where one is no view."""
    found = {}
    for which, term in (("bias", plan.bias), ("m", plan.multipliers)):
        if term is None:
            continue
        if not affine(term):
            return None
        view = view_of(term, types, materialise)
        found[which] = pulled_back(view, types[id(term)], plan.chain, types)
    return found


def pulled_back(operand: View, operand_type: Access, chain: Term | None,
                types: dict[int, object]) -> View:
    """``operand`` (a view over the layer's dims) over the array's dims: the inverses of the
    chain's operators, applied in reverse order."""
    text = f"(access-tensor {OPERAND})"
    node = chain
    while node is not None and node.op in BIJECTIVE:
        source: Access = types[id(node.args[0])]
        if node.op == "access-transpose":
            order = [int(x.value) for x in node.args[1].args]
            inverse = sorted(range(len(order)), key=order.__getitem__)
            text = f"(access-transpose {text} (list {' '.join(map(str, inverse))}))"
        elif node.op == "access-squeeze":
            text = f"(access-insert-axis {text} {node.args[1].value})"
        elif node.op == "access-insert-axis":
            text = f"(access-squeeze {text} {node.args[1].value})"
        else:  # re-split, flatten, reshape: back to the source's shape and item
            text = (f"(access-reshape {text} (access-shape (shape {_dims(source.shape)}) "
                    f"(shape {_dims(source.item)})))")
        node = node.args[0]
    term = parse_term(text)
    pulled_types = check(term, {OPERAND: operand_type})
    leaf = next(t for t in walk(term) if t.op == "symbol")
    return view_of(term, pulled_types, lambda t: operand if t is leaf else None)


def _dims(dims: tuple[int, ...]) -> str:
    return " ".join(map(str, dims))
