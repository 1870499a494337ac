"""The numpy interpreter: the single reference every other model of a program must equal.

Every node is evaluated, the hardware nodes included (language contract, deliberate difference 6).
Static nodes (ints, shapes, lists, compute types) need no evaluation: their value is their type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from glc.errors import ShapeError
from glc.ir.check import lazy, located, result_types
from glc.ir.compute import Pairs
from glc.ir.ops import OPS
from glc.ir.term import Term, walk
from glc.ir.types import Access


def env_types(arrays: Mapping[str, np.ndarray]) -> dict[str, Access]:
    """The type of each input tensor: every dim a shape dim."""
    return {name: Access(tuple(a.shape), (), str(a.dtype)) for name, a in arrays.items()}


def interpret(term: Term, arrays: Mapping[str, np.ndarray]) -> tuple[np.ndarray, Access]:
    """Evaluate ``term`` on the input tensors; returns the result tensor and its type."""
    values, types = evaluate(term, arrays)
    return np.asarray(values[id(term)]), types[id(term)]


def evaluate(term: Term, arrays: Mapping[str, np.ndarray]) -> tuple[dict[int, object],
                                                                    dict[int, object]]:
    """Every node's value (by ``id``: a tensor, an unmaterialised cartesian product, or a
    static node's type) and type: what ``glc run --check-each`` compares each step with."""
    types = result_types(term, env_types(arrays))
    values: dict[int, object] = {}
    for node in walk(term):
        ty = types[id(node)]
        if not isinstance(ty, Access):
            values[id(node)] = ty
            continue
        if node.op == "symbol":
            value = np.asarray(arrays[node.value])
        elif node.op == "access-reshape" and isinstance(values[id(node.args[0])], Pairs) and lazy(
                node.op, ty, [types[id(node.args[0])]], [True]):
            # A reshape of a cartesian product that keeps its pairs stays unmaterialised.
            value = replace(values[id(node.args[0])], out=ty)
        else:
            # A cartesian product stays unmaterialised for a dot product over it (Pairs).
            contracts = node.op == "compute" and types[id(node.args[0])].name == "dot-product"
            args = [values[id(a)] if contracts or not isinstance(values[id(a)], Pairs)
                    else np.asarray(values[id(a)]) for a in node.args]
            try:
                value = OPS[node.op].evaluate(ty, *args)
            except ShapeError as error:  # a value the operator refuses (a NaN multiplier)
                raise located(error, node) from None
        if value.shape != ty.dims or str(value.dtype) != ty.dtype:
            raise AssertionError(f"{node.op} evaluated to {value.shape} {value.dtype}, "
                                 f"its type is {ty}")
        values[id(node)] = value
    return values, types
