"""The compute ideal of a program, from its source term (issue 41): the cycles its work needs at
full throughput, whatever the rewrites make of it.

The ideal of a lowered kernel (glc/cost/limit.py) counts the work that kernel does, and a
rewrite can add work: padding a product's operand up to a multiple of the array size adds zero
MACs (``--rules all`` raised one composition's ideal from 1 394 to 1 433 cycles), splitting it
rounds each piece up. The program's ideal is therefore counted on the source term, before any
rewriting, so that efficiencies of one program compiled two ways stay comparable:

* a product (``compute dot-product`` over a pair, a ``systolic-array`` node): its MACs at N² a
  cycle, ⌈MACs / N²⌉;
* a fold of the vector unit (``reduce-sum``, ``reduce-max``, ``elementwise-add``/``-mul``,
  ``add-linear``): its operand elements at L a cycle, ⌈outputs · rows / L⌉ — but for a
  product plus a broadcast, a bias the product's kernel absorbs (glc/lower/fusion.py), no work
  of the vector unit.

Work the lowered program leaves to host steps (numpy, not timed) is counted the same way on
their terms and taken off: the ideal is the accelerator's share of the source's work.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from glc.cost.limit import array_ideal, vector_ideal
from glc.hwconfig import HwConfig
from glc.ir.check import check
from glc.ir.term import Term, walk
from glc.ir.types import Access, ComputeKind

PRODUCTS = ("systolic-array", "systolic-array-with-blocking")
FOLDS = ("reduce-sum", "reduce-max", "elementwise-add", "elementwise-mul")
# Data movement between a bias-add's operands and the product or broadcast below them.
VIEWS = ("access", "access-transpose", "access-reshape", "access-flatten", "access-squeeze",
         "access-insert-axis")


def term_ideal(term: Term, env: Mapping[str, Access], config: HwConfig,
               counted: set[Term] | None = None) -> int:
    """The compute ideal of the work in ``term`` (typed with the input types ``env``); with
    ``counted``, the nodes in it (equal sub-terms, of other terms) are left out and ``term``'s
    are added to it."""
    types = check(term, env)
    total = 0
    for node in walk(term):
        if counted is not None:
            if node in counted:
                continue
            counted.add(node)
        if node.op in PRODUCTS:
            a, w = types[id(node.args[2])], types[id(node.args[3])]
            k, o = w.item
            total += array_ideal(math.prod(a.shape) or 1, k, o, config.array_size)
        elif node.op == "add-linear":
            total += vector_ideal(math.prod(types[id(node)].dims), 2, config.vector_lanes)
        elif node.op == "compute":
            total += _compute_ideal(node, types, config)
    return total


def _compute_ideal(node: Term, types: Mapping[int, object], config: HwConfig) -> int:
    kind: ComputeKind = types[id(node.args[0])]
    operand: Access = types[id(node.args[1])]
    if kind.name == "dot-product":  # item (tuple, reduced…): one MAC per pair of elements
        macs = math.prod(operand.shape) * math.prod(operand.item[1:])
        return array_ideal(macs, 1, 1, config.array_size)
    if kind.name not in FOLDS:
        return 0
    if kind.name.startswith("reduce"):  # every item element of each output
        return vector_ideal(math.prod(operand.shape), math.prod(operand.item),
                            config.vector_lanes)
    if _absorbed(node.args[1]):
        return 0
    rows = operand.item[0] if operand.item else 1  # elementwise: folds the first item axis
    outputs = math.prod(operand.shape) * math.prod(operand.item[1:])
    return vector_ideal(outputs, rows, config.vector_lanes)


def _absorbed(pair: Term) -> bool:
    """An elementwise pair of (a view of) a product and a broadcast (a bias): the product's
    kernel's STOREs add it, no fold."""
    if pair.op != "access-pair":
        return False
    first, second = pair.args
    return (_product_below(first) and _broadcast_below(second)) or \
        (_product_below(second) and _broadcast_below(first))


def _broadcast_below(term: Term) -> bool:
    while term.op in VIEWS:
        term = term.args[0]
    return term.op == "access-broadcast"


def _product_below(term: Term) -> bool:
    while term.op in VIEWS:
        term = term.args[0]
    return term.op in PRODUCTS or (term.op == "compute" and term.args[0].value is not None
                                   and term.args[0].value[0] == "dot-product")


def program_ideal(source: Term, env: Mapping[str, Access], program) -> int:
    """The ideal of the source term ``source`` on ``program``'s configuration, less the work
    ``program`` (a lowered Program of it) leaves to host steps."""
    config = program.config
    host = 0
    # Host steps may each hold a chain of float steps they share (a dynamic quantization's
    # codes and zero point both over one LayerNormalization): each node is taken off once.
    counted: set[Term] = set()
    for step in program.host_steps:
        if step.copy:
            continue
        inputs = {symbol: Access(view.dims, (), program.buffers[view.buffer].dtype)
                  for symbol, view in step.views.items()}
        host += term_ideal(step.term, inputs, config, counted)
    return max(0, term_ideal(source, env, config) - host)
