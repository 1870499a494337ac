"""The static values the shape checker (and the e-graph analysis) give each node.

An access pattern's type is ``Access(shape, item, dtype)`` — the paper's ``((s),(i))`` plus a
dtype. Auxiliary nodes have their value as their type: an ``int``, a ``float``, a ``Shape``, a
``Lst``, an ``AccessShape``, a ``ComputeKind`` or a pad-type string. Because these are static,
the interpreter reads them from the types instead of evaluating them again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DTYPES = ("int8", "int16", "int32", "int64", "float32", "float64")
DEFAULT_DTYPE = "float64"
# The largest tensor glc handles, inputs and every intermediate (docs/frontend.md, "Limits"):
# 2^28 elements, 2 GiB once the interpreter widens integers to int64 to sum them.
MAX_ELEMENTS = 1 << 28
# Integer literals (axes, dims, pads, (literal k)) are int32 values on the accelerator.
INT_LIMIT = 1 << 31


def fmt_dims(dims: tuple[int, ...]) -> str:
    """Dims as the error messages and the CLI print them: ``(3,3,3)``."""
    return "(" + ",".join(str(d) for d in dims) + ")"


@dataclass(frozen=True)
class Access:
    """An access pattern: tensor of dims ``shape ++ item`` split at ``len(shape)``."""

    shape: tuple[int, ...]
    item: tuple[int, ...]
    dtype: str

    @property
    def dims(self) -> tuple[int, ...]:
        return self.shape + self.item

    @property
    def n(self) -> int:
        """The access axis: the number of shape dims."""
        return len(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape) + len(self.item)

    def size(self) -> int:
        return math.prod(self.dims)

    def __str__(self) -> str:
        return f"({fmt_dims(self.shape)},{fmt_dims(self.item)}) {self.dtype}"


@dataclass(frozen=True)
class Shape:
    """A ``(shape d...)`` value."""

    dims: tuple[int, ...]

    def __str__(self) -> str:
        return f"shape {fmt_dims(self.dims)}"


@dataclass(frozen=True)
class Lst:
    """A ``(list k...)`` value."""

    items: tuple[int, ...]

    def __str__(self) -> str:
        return f"list {fmt_dims(self.items)}"


@dataclass(frozen=True)
class AccessShape:
    """An ``(access-shape (shape s...) (shape i...))`` value: an access pattern's shape alone."""

    shape: tuple[int, ...]
    item: tuple[int, ...]

    def __str__(self) -> str:
        return f"access-shape ({fmt_dims(self.shape)},{fmt_dims(self.item)})"


@dataclass(frozen=True)
class ComputeKind:
    """The first argument of ``compute``: a name and, for ``requantize``, its shift."""

    name: str
    param: int | None = None

    def __str__(self) -> str:
        return self.name if self.param is None else f"({self.name} {self.param})"


def describe_type(value: object) -> tuple[str, dict]:
    """Any node's type as ``glc check`` prints it: one line, and its JSON object (``kind`` and
    the fields). A program's result may be any of them; only a tensor (``access``) can be
    evaluated or compiled."""
    if isinstance(value, Access):
        return str(value), {"kind": "access", "shape": value.shape, "item": value.item,
                            "dtype": value.dtype}
    if isinstance(value, Shape):
        return str(value), {"kind": "shape", "dims": value.dims}
    if isinstance(value, Lst):
        return str(value), {"kind": "list", "items": value.items}
    if isinstance(value, AccessShape):
        return str(value), {"kind": "access-shape", "shape": value.shape, "item": value.item}
    if isinstance(value, ComputeKind):
        return f"compute-type {value}", {"kind": "compute-type", "name": value.name,
                                         "param": value.param}
    if isinstance(value, str):
        return f"pad-type {value}", {"kind": "pad-type", "name": value}
    return f"number {value}", {"kind": "number", "value": value}


def is_int(dtype: str) -> bool:
    return dtype.startswith("int")


def dtype_class(dtype: str) -> str:
    return "int" if is_int(dtype) else "float"


def accumulator_dtype(dtype: str) -> str:
    """The dtype sums and products are carried in: int8/int16/int32 accumulate in int32 with
    two's-complement wrap (the hardware's accumulator, language contract "Numbers"); int64 and
    floats in their own dtype."""
    if dtype in ("int8", "int16", "int32"):
        return "int32"
    return dtype


def common_dtype(a: str, b: str) -> str:
    """The dtype of a node combining two operands of one dtype class (the wider one)."""
    return str(np.promote_types(a, b))


def min_value(dtype: str) -> int | float:
    """The fill value of ``min-padding``: the most negative finite value of the dtype."""
    if is_int(dtype):
        return int(np.iinfo(dtype).min)
    return float(np.finfo(dtype).min)
