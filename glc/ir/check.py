"""The shape checker: the access-pattern shape and dtype of every node, by the operator table.

``infer_node`` types one node from its arguments' types; the checker applies it bottom-up over a
term and the e-graph analysis applies it to e-nodes, so both follow the same rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from glc.errors import GlcError, ShapeError
from glc.ir.ops import KIND_NAMES, KIND_TYPES, OPS
from glc.ir.term import Term, walk
from glc.ir.types import MAX_ELEMENTS, Access, ComputeKind, fmt_dims, is_int


def describe(value: object) -> str:
    """A type as error messages name it."""
    if isinstance(value, Access):
        return f"an access pattern {value}"
    if isinstance(value, bool | int | float):
        return f"the number {value}"
    return str(value)


def infer_node(op: str, value: object, arg_types: list, env: Mapping[str, Access],
               lazy_args: Sequence[bool] = ()) -> object:
    """The type of one node from its arguments' types (``lazy_args``: which arguments are lazy
    products, ``lazy``); raises ShapeError if a rule is violated."""
    if op in ("int", "float", "pad-type"):
        return value
    if op == "compute-type":
        return ComputeKind(*value)
    if op == "symbol":
        if value not in env:
            raise ShapeError(f"no shape is known for '{value}': declare it with (input {value} "
                             "(shape ...) dtype), give --shapes, or supply its .npy input")
        problem = size_problem(env[value].dims)
        if problem:
            raise ShapeError(f"'{value}' has dims {fmt_dims(env[value].dims)}: {problem}")
        return env[value]
    if op == "var":
        raise ShapeError(f"pattern variable ?{value} outside a pattern")
    spec = OPS[op]
    for i, arg in enumerate(arg_types):
        kind = spec.kind_of(i)
        if not isinstance(arg, KIND_TYPES[kind]) or isinstance(arg, bool):
            raise ShapeError(f"needs {KIND_NAMES[kind]} as argument {i + 1}, got {describe(arg)}",
                             arg=i)
    result = spec.infer(*arg_types)
    if isinstance(result, Access) and not lazy(op, result, arg_types, lazy_args):
        problem = size_problem(result.dims)
        if problem:
            raise ShapeError(f"gives a tensor of dims {fmt_dims(result.dims)}: {problem}")
    return result


def lazy(op: str, ty: Access, arg_types: Sequence = (), lazy_args: Sequence[bool] = ()) -> bool:
    """An integer cartesian product is never materialised for the dot product over it (the
    interpreter's ``Pairs``, the array's operand pairs): a 1024³ GEMM's holds 2³¹ elements.
    Nor is a reshape of one that keeps the pair axis outermost in the item, as the im2col
    rewrites write it (glc/rewrites/im2col.py: a 200-channel 3×3 conv at 29×29 pairs 2³⁰
    elements). Its size is held to the limit where anything else consumes it (``check``)."""
    if op == "access-cartesian-product":
        return is_int(ty.dtype)
    if op != "access-reshape" or not lazy_args or not lazy_args[0]:
        return False
    source = arg_types[0]
    return ty.item[:1] == (2,) and math.prod(ty.shape) == math.prod(source.shape)


def _materialised(node: Term, types: Mapping[int, object], lazies: set[int]) -> None:
    """A ShapeError at the first lazy argument of ``node`` that ``node`` would materialise
    past the size limit (all but a dot product's compute over it, or a lazy reshape of it)."""
    if id(node) in lazies:
        return
    kind = types[id(node.args[0])] if node.op == "compute" else None
    contracts = isinstance(kind, ComputeKind) and kind.name == "dot-product"
    for i, arg in enumerate(node.args):
        ty = types[id(arg)]
        if id(arg) in lazies and not (contracts and i == 1):
            problem = size_problem(ty.dims)
            if problem:
                raise ShapeError(f"materialises a cartesian product of dims "
                                 f"{fmt_dims(ty.dims)}: {problem}", arg=i)


def size_problem(dims: tuple[int, ...]) -> str | None:
    """Why glc cannot hold a tensor of ``dims`` (a zero-size dimension, more than MAX_ELEMENTS
    elements), or None."""
    if 0 in dims:
        return "every dimension must be at least 1"
    if math.prod(dims) > MAX_ELEMENTS:
        return f"{math.prod(dims)} elements, more than glc's limit of {MAX_ELEMENTS} per tensor"
    return None


def located(error: ShapeError, node: Term) -> GlcError:
    """A shape rule's error at the offending form (or argument), prefixed by the operator."""
    span = node.span
    if error.arg is not None and error.arg < len(node.args) and node.args[error.arg].span:
        span = node.args[error.arg].span
    prefix = "" if not node.args else f"{node.op} "
    return GlcError(prefix + error.message, span)


def check(term: Term, env: Mapping[str, Access]) -> dict[int, object]:
    """Types of every node of ``term``, keyed by ``id(node)``; a GlcError at the first violation."""
    types: dict[int, object] = {}
    lazies: set[int] = set()
    for node in walk(term):
        try:
            arg_types = [types[id(a)] for a in node.args]
            lazy_args = [id(a) in lazies for a in node.args]
            ty = types[id(node)] = infer_node(node.op, node.value, arg_types, env, lazy_args)
            if isinstance(ty, Access) and lazy(node.op, ty, arg_types, lazy_args):
                lazies.add(id(node))
            _materialised(node, types, lazies)
        except ShapeError as error:
            raise located(error, node) from None
    root = types[id(term)]
    if id(term) in lazies and size_problem(root.dims):
        raise located(ShapeError(f"gives a tensor of dims {fmt_dims(root.dims)}: "
                                 f"{size_problem(root.dims)}"), term)
    return types


def type_of(term: Term, env: Mapping[str, Access]) -> object:
    """The type of a term's root."""
    return check(term, env)[id(term)]


def result_types(term: Term, env: Mapping[str, Access]) -> dict[int, object]:
    """``check``, and a GlcError at ``term`` unless it is an access pattern: a program's result
    is a tensor, not a literal, shape, list or access shape."""
    types = check(term, env)
    root = types[id(term)]
    if not isinstance(root, Access):
        hint = " (wrap it in (access-literal ...) for a 0-d tensor)" if isinstance(
            root, int | float) and not isinstance(root, bool) else ""
        raise GlcError(f"the result must be an access pattern (a tensor), got {describe(root)}"
                       + hint + "; only a tensor is evaluated or compiled (glc check types any "
                       "result)", term.span)
    return types


def result_type(term: Term, env: Mapping[str, Access]) -> Access:
    """The type of a program's result, an access pattern (``result_types``)."""
    return result_types(term, env)[id(term)]
