"""The program being written: its tensors (each a ``.npy`` input), its ``define``s (one per ONNX
node, the node's name and op in a comment above), and the values the translation passes between
nodes: int8 activations with their scale and zero point, float32 tensors, and constants."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

_BAD = re.compile(r"[^A-Za-z0-9_]")


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
    names: set[str] = field(default_factory=set)
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
        self.arrays[name] = np.ascontiguousarray(value)
        self.declared[name] = (tuple(value.shape), str(value.dtype))
        return name

    def declare(self, name: str, dims: tuple[int, ...], dtype: str) -> None:
        """A program input supplied from outside (the model's own input)."""
        self.declared[name] = (dims, dtype)

    def comment(self, text: str) -> None:
        self.lines.append(f"; {text}")

    def define(self, hint: str, expr: str) -> str:
        """``(define NAME expr)``; returns NAME."""
        name = self.fresh(hint)
        self.lines.append(f"(define {name} {expr})")
        return name

    def text(self, result: str, header: str) -> str:
        """The whole program: header comment, input declarations, defines, the result."""
        decls = [f"(input {n} (shape {' '.join(map(str, d))}) {t})"
                 for n, (d, t) in self.declared.items()]
        return "\n".join([f"; {header}", *decls, *self.lines, result]) + "\n"


def shape(dims) -> str:
    """``(shape d...)``."""
    return "(shape" + "".join(f" {d}" for d in dims) + ")"


def broadcast(name: str, dims: tuple[int, ...]) -> str:
    """Tensor ``name`` broadcast to ``dims`` (every dim a shape dim)."""
    return f"(access-broadcast (access-tensor {name}) (access-shape {shape(dims)} (shape)))"


def literal(value: float) -> str:
    """A float32 value as a literal that reads back to the same float32."""
    return repr(float(np.float32(value)))
