"""The program being written: its tensors (each a ``.npy`` input), its ``define``s (one per ONNX
node, the node's name and op in a comment above), and the values the translation passes between
nodes: int8 activations with their scale and zero point, float32 tensors, and constants."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from glc.errors import printable
from glc.inputs import EXPECTED
from glc.ir.compute import KINDS
from glc.ir.ops import OPS, PAD_TYPES
from glc.onnx.quant import NodeError

_BAD = re.compile(r"[^A-Za-z0-9_]")
# Names a tensor or define may not take: the language's words (an input named ``shape`` would
# read as the operator), and the file the folder's expected result is saved as (an input named
# ``output`` would be saved as output.npy, then overwritten by onnxruntime's result).
RESERVED = frozenset({*OPS, *KINDS, *PAD_TYPES, "input", "define", Path(EXPECTED).stem})


@dataclass(frozen=True)
class Quantized:
    """An int8 program tensor and its quantization (a uint8 tensor is carried shifted by -128,
    docs/language.md)."""

    name: str
    dims: tuple[int, ...]
    scale: float
    zero: int


@dataclass(frozen=True)
class Float:
    """A float32 program tensor."""

    name: str
    dims: tuple[int, ...]


@dataclass(frozen=True)
class Dequantized:
    """An ONNX DequantizeLinear of an int8 activation, not written until a float op needs it;
    ``offset`` 128 when the model's tensor is uint8 (docs/language.md)."""

    of: Quantized
    offset: int = 0


@dataclass(frozen=True)
class Constant:
    """An initializer (after DequantizeLinear, ``quantized`` holds its integers, scale(s) and
    zero point(s), and ``axis`` the per-channel axis)."""

    value: np.ndarray
    quantized: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    axis: int = 1


@dataclass
class Builder:
    """Collects the program text and its input arrays."""

    lines: list[str] = field(default_factory=list)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    declared: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)
    names: set[str] = field(default_factory=lambda: set(RESERVED))
    host_ops: list[str] = field(default_factory=list)

    def fresh(self, hint: str) -> str:
        """A unique name of the language's syntax derived from an ONNX name."""
        base = _BAD.sub("_", hint).strip("_") or "t"
        if not base[0].isalpha():
            base = "t_" + base
        name, k = base, 1
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def tensor(self, hint: str, value: np.ndarray) -> str:
        """A new program input holding ``value`` (written as ``<name>.npy``)."""
        name = self.fresh(hint)
        self.arrays[name] = np.array(value, order="C")  # ascontiguousarray makes () (1,)
        self.declared[name] = (tuple(value.shape), str(value.dtype))
        return name

    def declare(self, name: str, dims: tuple[int, ...], dtype: str) -> None:
        """A program input supplied from outside (the model's own input)."""
        self.declared[name] = (dims, dtype)

    def comment(self, text: str) -> None:
        """A ``;`` comment line (``text`` escaped: a newline in an ONNX name would end it)."""
        self.lines.append(f"; {printable(text)}")

    def define(self, hint: str, expr: str) -> str:
        """``(define NAME expr)``; returns NAME."""
        name = self.fresh(hint)
        self.lines.append(f"(define {name} {expr})")
        return name

    def text(self, result: str, header: str) -> str:
        """The whole program: header comment, input declarations, defines, the result."""
        decls = [f"(input {n} (shape {' '.join(map(str, d))}) {t})"
                 for n, (d, t) in self.declared.items()]
        return "\n".join([f"; {printable(header)}", *decls, *self.lines, result]) + "\n"


def shape(dims) -> str:
    """``(shape d...)``."""
    return "(shape" + "".join(f" {d}" for d in dims) + ")"


def broadcast(name: str, dims: tuple[int, ...]) -> str:
    """Tensor ``name`` broadcast to ``dims`` (every dim a shape dim)."""
    return f"(access-broadcast (access-tensor {name}) (access-shape {shape(dims)} (shape)))"


def literal(value: float) -> str:
    """A float32 value as a literal that reads back to the same float32 (a NaN or an infinity
    has no literal: the node is refused)."""
    with np.errstate(over="ignore"):
        number = np.float32(value)
    if not np.isfinite(number):
        raise NodeError(f"the value {value} has no literal (it is not finite in float32)")
    return repr(float(number))
