"""Random well-typed Glenside programs, each with its expected result computed here in numpy.

Every operator of the language (docs/language.md) is generated: the access operators, the shape
operators, every compute kind, the matmul idiom and both systolic-array nodes, over odd sizes,
1×1 and 0-d tensors, strides, pads and int8 … int64 and float dtypes. A program grows from one
input by random operators applicable to the value so far (binary ones take a fresh input of a
fitting shape); the expected value is computed alongside, from the language contract's numbers
("Numbers": int8/int16 widen to int32, accumulations wrap in two's complement, requantize rounds
half up by an arithmetic shift), written without glc's interpreter so that it tests it.

``make(seed)`` gives a ``Case``: the program text, its inputs, the expected result and the
operators it uses. scripts/fuzz.py runs many; tests/test_fuzz_programs.py runs a few hundred.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

INTS = ("int8", "int16", "int32", "int64")
FLOATS = ("float32", "float64")
MAX_ELEMENTS = 2048  # per value: keeps the numpy model, the interpreter and the ISA quick
MAX_DIM = 7


@dataclass
class Node:
    """A generated expression: its text, access shape (s, i), dtype and value (dims s ++ i)."""

    text: str
    s: tuple[int, ...]
    i: tuple[int, ...]
    dtype: str
    value: np.ndarray

    @property
    def dims(self) -> tuple[int, ...]:
        return self.s + self.i


@dataclass
class Case:
    """One program: its text, input arrays, expected result and the operators it uses."""

    seed: int
    text: str
    inputs: dict[str, np.ndarray]
    expected: np.ndarray
    ops: set[str] = field(default_factory=set)


def accumulator(dtype: str) -> str:
    """The dtype integer accumulations wrap in (language.md, "Numbers"); floats keep theirs."""
    return {"int8": "int32", "int16": "int32"}.get(dtype, dtype)


class Maker:
    """Grows one program; ``rng`` decides everything."""

    def __init__(self, rng: np.random.Generator, zero_d: bool = True):
        self.rng = rng
        self.zero_d = zero_d
        self.inputs: dict[str, np.ndarray] = {}
        self.ops: set[str] = set()

    # ---- leaves ---------------------------------------------------------------------------

    def tensor(self, dims: tuple[int, ...], dtype: str) -> Node:
        """A fresh input of ``dims`` as ``(access-tensor x)``, with random values."""
        name = f"x{len(self.inputs)}"
        if dtype in FLOATS:  # quarters: sums of a few are exact in either float dtype
            value = (self.rng.integers(-16, 17, dims) / 4).astype(dtype)
        elif dtype == "int8":
            value = self.rng.integers(-128, 128, dims).astype(dtype)
        elif dtype == "int16":
            value = self.rng.integers(-2000, 2001, dims).astype(dtype)
        else:  # wide enough to wrap the int32 accumulations, not requantize's int64 add
            bound = 1 << (30 if dtype == "int32" else 40)
            value = self.rng.integers(-bound, bound, dims).astype(dtype)
        self.inputs[name] = value
        self.ops.add("access-tensor")
        return Node(f"(access-tensor {name})", tuple(dims), (), dtype, value)

    def like(self, s: tuple[int, ...], i: tuple[int, ...], dtype: str) -> Node:
        """A fresh operand of access shape (s, i): an input re-split, sometimes negated."""
        node = self.split(self.tensor(s + i, dtype), len(s))
        if self.rng.random() < 0.2 and dtype != "int8":
            node = self.elementwise(node, "negative")
        return node

    def dims(self, rank: int) -> tuple[int, ...]:
        """Random dims, 1×1 and odd sizes often."""
        return tuple(int(self.rng.choice([1, 1, 2, 3, 4, 5, 7])) for _ in range(rank))

    # ---- access operators -----------------------------------------------------------------

    def split(self, a: Node, k: int) -> Node:
        if k == len(a.s) and a.text.startswith("(access-tensor") and k == len(a.dims):
            return a
        self.ops.add("access")
        dims = a.dims
        return Node(f"(access {a.text} {k})", dims[:k], dims[k:], a.dtype, a.value)

    def transpose(self, a: Node) -> Node:
        perm = tuple(int(p) for p in self.rng.permutation(len(a.dims)))
        dims = tuple(a.dims[p] for p in perm)
        n = len(a.s)
        self.ops.add("access-transpose")
        return Node(f"(access-transpose {a.text} (list{''.join(f' {p}' for p in perm)}))",
                    dims[:n], dims[n:], a.dtype, np.transpose(a.value, perm))

    def slice(self, a: Node) -> Node:
        k = int(self.rng.integers(len(a.dims)))
        lo = int(self.rng.integers(a.dims[k]))
        hi = int(self.rng.integers(lo + 1, a.dims[k] + 1))
        index = tuple(slice(lo, hi) if j == k else slice(None) for j in range(len(a.dims)))
        self.ops.add("access-slice")
        return self._reshaped(a, f"(access-slice {a.text} {k} {lo} {hi})", a.value[index])

    def pad(self, a: Node) -> Node:
        k = int(self.rng.integers(len(a.dims)))
        before, after = (int(v) for v in self.rng.integers(0, 3, 2))
        kind = str(self.rng.choice(["zero-padding", "min-padding"]))
        fill = 0
        if kind == "min-padding":
            fill = np.finfo(a.dtype).min if a.dtype in FLOATS else np.iinfo(a.dtype).min
        widths = [(before, after) if j == k else (0, 0) for j in range(len(a.dims))]
        value = np.pad(a.value, widths, constant_values=fill)
        self.ops.add("access-pad")
        return self._reshaped(a, f"(access-pad {a.text} {kind} {k} {before} {after})", value)

    def squeeze(self, a: Node) -> Node | None:
        ones = [k for k, d in enumerate(a.dims) if d == 1]
        if not ones:
            return None
        k = int(self.rng.choice(ones))
        n = len(a.s) - (k < len(a.s))
        dims = a.dims[:k] + a.dims[k + 1:]
        self.ops.add("access-squeeze")
        return Node(f"(access-squeeze {a.text} {k})", dims[:n], dims[n:], a.dtype,
                    a.value.reshape(dims))

    def insert_axis(self, a: Node) -> Node:
        k = int(self.rng.integers(len(a.dims) + 1))
        n = len(a.s) + (k <= len(a.s))
        dims = a.dims[:k] + (1,) + a.dims[k:]
        self.ops.add("access-insert-axis")
        return Node(f"(access-insert-axis {a.text} {k})", dims[:n], dims[n:], a.dtype,
                    a.value.reshape(dims))

    def broadcast(self, a: Node) -> Node | None:
        if 1 not in a.dims:
            return None
        dims = tuple(int(self.rng.integers(1, 4)) if d == 1 else d for d in a.dims)
        n = len(a.s)
        target = f"(access-shape {self.shape(dims[:n])} {self.shape(dims[n:])})"
        self.ops.update({"access-broadcast", "access-shape"})
        return Node(f"(access-broadcast {a.text} {target})", dims[:n], dims[n:], a.dtype,
                    np.broadcast_to(a.value, dims).copy())

    def flatten(self, a: Node) -> Node:
        s = (math.prod(a.s),) if a.s else ()
        i = (math.prod(a.i),) if a.i else ()
        self.ops.add("access-flatten")
        return Node(f"(access-flatten {a.text})", s, i, a.dtype, a.value.reshape(s + i))

    def reshape(self, a: Node) -> Node:
        dims = self.factors(math.prod(a.dims))
        n = int(self.rng.integers(len(dims) + 1))
        self.ops.add("access-reshape")
        if self.rng.random() < 0.3:  # the target as another access's shape
            other = self.split(self.tensor(dims, a.dtype), n)
            target = f"(get-access-shape {other.text})"
            self.ops.add("get-access-shape")
        else:
            target = f"(access-shape {self.shape(dims[:n])} {self.shape(dims[n:])})"
            self.ops.add("access-shape")
        return Node(f"(access-reshape {a.text} {target})", dims[:n], dims[n:], a.dtype,
                    a.value.reshape(dims))

    def windows(self, a: Node) -> Node | None:
        if not a.i:
            return None
        sizes = tuple(int(self.rng.integers(1, d + 1)) for d in a.i)
        strides = tuple(int(self.rng.integers(1, 3)) for _ in a.i)
        w = tuple((d - f) // st + 1 for d, f, st in zip(a.i, sizes, strides, strict=True))
        dims = a.s + w + sizes
        if math.prod(dims) > MAX_ELEMENTS:
            return None
        value = np.zeros(dims, a.dtype)
        # R[s.., p.., q..] = T[s.., p·st + q ..], one window position at a time.
        for p in itertools.product(*(range(x) for x in w)):
            start = [pj * st for pj, st in zip(p, strides, strict=True)]
            index = tuple(slice(b, b + f) for b, f in zip(start, sizes, strict=True))
            value[(Ellipsis, *p, *(slice(None),) * len(sizes))] = \
                a.value[(Ellipsis, *index)]
        self.ops.add("access-windows")
        return Node(f"(access-windows {a.text} {self.shape(sizes)} {self.shape(strides)})",
                    a.s + w, sizes, a.dtype, value)

    def _reshaped(self, a: Node, text: str, value: np.ndarray) -> Node:
        n = len(a.s)
        return Node(text, value.shape[:n], value.shape[n:], a.dtype, value)

    def shape(self, dims: tuple[int, ...]) -> str:
        """A shape expression for ``dims``: a literal, or through a shape operator."""
        choice = self.rng.random()
        literal = "(shape" + "".join(f" {d}" for d in dims) + ")"
        if choice < 0.1:
            match = [x for x, v in self.inputs.items() if v.shape == dims]
            if match:
                self.ops.add("shape-of")
                return f"(shape-of {match[0]})"
        if choice < 0.2:
            extra = self.dims(int(self.rng.integers(1, 3)))
            self.ops.add("slice-shape")
            return (f"(slice-shape (shape{''.join(f' {d}' for d in extra + dims)}) "
                    f"{len(extra)})")
        if choice < 0.3 and 1 in dims:
            k = dims.index(1)
            rest = dims[:k] + dims[k + 1:]
            self.ops.add("shape-insert-axis")
            return f"(shape-insert-axis (shape{''.join(f' {d}' for d in rest)}) {k})"
        if choice < 0.4:
            k = int(self.rng.integers(len(dims) + 1))
            more = dims[:k] + (int(self.rng.integers(1, 6)),) + dims[k:]
            self.ops.add("shape-remove-axis")
            return f"(shape-remove-axis (shape{''.join(f' {d}' for d in more)}) {k})"
        return literal

    def factors(self, total: int) -> tuple[int, ...]:
        """``total`` as a product of 0 … 3 random factors (ones included)."""
        dims = []
        left = total
        for _ in range(int(self.rng.integers(0, 3))):
            divisors = [d for d in range(1, left + 1) if left % d == 0]
            d = int(self.rng.choice(divisors))
            dims.append(d)
            left //= d
        if left > 1 or not dims and self.rng.random() < 0.5:
            dims.append(left)
        order = self.rng.permutation(len(dims))
        return tuple(dims[j] for j in order)

    # ---- binary access operators ----------------------------------------------------------

    def pair(self, a: Node) -> Node:
        b = self.like(a.s, a.i, a.dtype)
        self.ops.add("access-pair")
        return Node(f"(access-pair {a.text} {b.text})", a.s, (2,) + a.i, a.dtype,
                    np.stack([a.value, b.value], axis=len(a.s)))

    def cartesian(self, a: Node) -> Node | None:
        s1 = self.dims(int(self.rng.integers(0 if self.zero_d or a.i else 1, 2)))
        dims = a.s + s1 + (2,) + a.i
        if math.prod(dims) > MAX_ELEMENTS:
            return None
        b = self.like(s1, a.i, a.dtype)
        value = np.empty(dims, a.dtype)
        for x in itertools.product(*(range(d) for d in a.s)):
            for y in itertools.product(*(range(d) for d in s1)):
                value[x + y + (0,)] = a.value[x]
                value[x + y + (1,)] = b.value[y]
        self.ops.add("access-cartesian-product")
        return Node(f"(access-cartesian-product {a.text} {b.text})", a.s + s1, (2,) + a.i,
                    a.dtype, value)

    def concatenate(self, a: Node) -> Node:
        k = int(self.rng.integers(len(a.dims))) if a.dims else None
        if k is None:
            return a
        extra = int(self.rng.integers(1, 4))
        dims = a.dims[:k] + (extra,) + a.dims[k + 1:]
        b = self.like(dims[:len(a.s)], dims[len(a.s):], a.dtype)
        self.ops.add("access-concatenate")
        return self._reshaped(a, f"(access-concatenate {a.text} {b.text} {k})",
                              np.concatenate([a.value, b.value], axis=k))

    # ---- compute ----------------------------------------------------------------------------

    def elementwise(self, a: Node, kind: str) -> Node:
        v = a.value
        if kind == "relu":
            value = np.maximum(v, np.zeros((), a.dtype))
        elif kind == "negative":  # wraps at the integer minimum, as two's complement does
            value = (-v.astype(np.int64)).astype(a.dtype) if a.dtype in INTS[:3] else -v
        else:  # sqrt, of a relu so that it stays real
            inner = self.elementwise(a, "relu")
            self.ops.add("compute sqrt")
            return Node(f"(compute sqrt {inner.text})", a.s, a.i, a.dtype,
                        np.sqrt(inner.value).astype(a.dtype))
        self.ops.add(f"compute {kind}")
        return Node(f"(compute {kind} {a.text})", a.s, a.i, a.dtype, value)

    def requantize(self, a: Node) -> Node | None:
        if a.dtype not in INTS:
            return None
        k = int(self.rng.choice([0, 1, 4, 8, 31]))
        exact = np.array(a.value.tolist(), dtype=object)  # Python integers: exact arithmetic
        rounded = exact if k == 0 else (exact + (1 << (k - 1))) >> k
        value = np.clip(np.asarray(rounded, dtype=np.int64), -128, 127).astype("int8")
        self.ops.add("compute requantize")
        return Node(f"(compute (requantize {k}) {a.text})", a.s, a.i, "int8", value)

    def reduce(self, a: Node, kind: str) -> Node | None:
        if kind == "reduce-mean" and a.dtype not in FLOATS:
            return None
        axes = tuple(range(len(a.s), len(a.dims)))
        acc = accumulator(a.dtype)
        if kind == "reduce-max":
            value = a.value.max(axis=axes) if axes else a.value
            dtype = a.dtype
        else:
            total = np.sum(a.value.astype(acc), axis=axes, dtype=acc)
            count = math.prod(a.i)
            value = total if kind == "reduce-sum" else total / count
            dtype = acc
        self.ops.add(f"compute {kind}")
        return Node(f"(compute {kind} {a.text})", a.s, (), dtype,
                    np.asarray(value).astype(dtype))

    def fold(self, a: Node, kind: str) -> Node | None:
        if not a.i or kind == "elementwise-div" and a.dtype not in FLOATS:
            return None
        acc = accumulator(a.dtype)
        n = len(a.s)
        members = [np.take(a.value, t, axis=n).astype(acc) for t in range(a.i[0])]
        ops: dict[str, Callable] = {"elementwise-add": np.add, "elementwise-mul": np.multiply,
                                    "elementwise-div": np.divide}
        value = members[0]
        with np.errstate(all="ignore"):
            for member in members[1:]:
                value = ops[kind](value, member).astype(acc)
        self.ops.add(f"compute {kind}")
        return Node(f"(compute {kind} {a.text})", a.s, a.i[1:], acc, value)

    def dot(self, a: Node) -> Node | None:
        if not a.i:
            return None
        acc = accumulator(a.dtype)
        n = len(a.s)
        product = np.prod(a.value.astype(acc), axis=n, dtype=acc)
        value = np.sum(product, axis=tuple(range(n, product.ndim)), dtype=acc)
        self.ops.add("compute dot-product")
        return Node(f"(compute dot-product {a.text})", a.s, (), acc, np.asarray(value))

    def softmax(self, a: Node) -> Node | None:
        if len(a.i) != 1 or a.dtype not in FLOATS:
            return None
        shifted = a.value - a.value.max(axis=-1, keepdims=True)
        e = np.exp(shifted)
        self.ops.add("compute softmax")
        return Node(f"(compute softmax {a.text})", a.s, a.i, a.dtype,
                    (e / e.sum(axis=-1, keepdims=True)).astype(a.dtype))

    def matmul(self, a: Node) -> Node | None:
        """Glenside's matmul idiom on a 2-d int8 value (M×K) and a fresh K×Nₒ weight."""
        if len(a.dims) != 2 or a.dtype != "int8":
            return None
        m, k = a.dims
        w = self.tensor((k, int(self.rng.integers(1, 9))), "int8")
        text = (f"(compute dot-product (access-cartesian-product (access {a.text} 1) "
                f"(access (access-transpose {w.text} (list 1 0)) 1)))")
        self.ops.update({"access", "access-transpose", "access-cartesian-product",
                         "compute dot-product"})
        value = a.value.astype(np.int32) @ w.value.astype(np.int32)
        return Node(text, (m, w.value.shape[1]), (), "int32", value)

    def systolic(self, a: Node) -> Node | None:
        """``(systolic-array rows cols A W)``, or with blocking: A's items are K long."""
        if len(a.dims) not in (1, 2) or a.dtype != "int8":
            return None
        k = a.dims[-1]
        blocking = self.rng.random() < 0.5
        rows = int(self.rng.choice([d for d in range(1, k + 1) if k % d == 0])) if blocking \
            else k
        cols = int(self.rng.integers(1, 5))
        n_out = cols * (int(self.rng.integers(1, 3)) if blocking else 1)
        w = self.tensor((k, n_out), "int8")
        op = "systolic-array-with-blocking" if blocking else "systolic-array"
        self.ops.add(op)
        operand = self.split(a, len(a.dims) - 1)
        value = a.value.astype(np.int32) @ w.value.astype(np.int32)
        s = (a.dims[0], n_out) if len(a.dims) == 2 else (n_out,)
        return Node(f"({op} {rows} {cols} {operand.text} (access {w.text} 0))", s, (), "int32",
                    value)

    def literal(self) -> Node:
        v = float(self.rng.integers(-8, 9)) / 2
        self.ops.update({"access-literal", "literal"})
        return Node(f"(access-literal (literal {v}))", (), (), "float64",
                    np.asarray(v, dtype="float64"))

    # ---- the program -------------------------------------------------------------------------

    def step(self, a: Node) -> Node:
        """One random operator applicable to ``a`` (``a`` itself when the draw does not apply)."""
        choices: list[Callable[[Node], Node | None]] = [
            lambda x: self.split(x, int(self.rng.integers(len(x.dims) + 1))),
            self.transpose, self.slice, self.pad, self.squeeze, self.insert_axis,
            self.broadcast, self.flatten, self.reshape, self.windows, self.pair, self.cartesian,
            self.concatenate, self.requantize, self.dot, self.softmax, self.matmul,
            self.matmul, self.systolic, self.systolic,
            lambda x: self.elementwise(x, str(self.rng.choice(
                ["relu", "negative", "sqrt"] if x.dtype in FLOATS else ["relu", "negative"]))),
            lambda x: self.reduce(x, str(self.rng.choice(["reduce-sum", "reduce-max",
                                                          "reduce-mean"]))),
            lambda x: self.fold(x, str(self.rng.choice(["elementwise-add", "elementwise-mul",
                                                        "elementwise-div"]))),
        ]
        pick = choices[int(self.rng.integers(len(choices)))]
        if not a.dims and pick in (self.transpose, self.slice, self.pad, self.concatenate):
            return a
        out = pick(a)
        if out is None or math.prod(out.dims) > MAX_ELEMENTS or not (self.zero_d or out.dims):
            return a
        return out


def make(seed: int, steps: int | None = None, zero_d: bool = True) -> Case:
    """The program of ``seed``: an input (or a literal) and 1 … 6 random operators; without
    ``zero_d``, no value is 0-d (the same seed then gives another program)."""
    rng = np.random.default_rng(seed)
    maker = Maker(rng, zero_d)
    with np.errstate(all="ignore"):  # the integer accumulations wrap by design
        return _grow(seed, rng, maker, steps)


def _grow(seed: int, rng: np.random.Generator, maker: Maker, steps: int | None) -> Case:
    dtype = str(rng.choice(["int8"] * 5 + ["int16", "int32", "int64", "float32", "float64"]))
    if dtype == "float64" and rng.random() < 0.1 and maker.zero_d:
        node = maker.literal()
    else:
        rank = 2 if dtype == "int8" and rng.random() < 0.4 else \
            int(rng.integers(0 if maker.zero_d else 1, 4))
        node = maker.tensor(maker.dims(rank), dtype)
        node = maker.split(node, int(rng.integers(len(node.dims) + 1)))
    for _ in range(steps if steps is not None else int(rng.integers(1, 7))):
        # A product whenever one applies, often: the accelerator's kernels are what the
        # compiler lowers, and a uniform draw reaches a 2-d int8 value only now and then.
        if len(node.dims) == 2 and node.dtype == "int8" and rng.random() < 0.5:
            node = (maker.matmul if rng.random() < 0.5 else maker.systolic)(node) or node
            continue
        node = maker.step(node)
    text, used = declare(maker.inputs, node.text)
    return Case(seed, text, used, np.asarray(node.value).astype(node.dtype), maker.ops)


def declare(inputs: dict[str, np.ndarray], body: str) -> tuple[str, dict[str, np.ndarray]]:
    """The program ``body`` preceded by its inputs' declarations, and those inputs: only the ones
    it names (an operand made for a draw that then did not apply is not used)."""
    used = {name: v for name, v in inputs.items() if re.search(rf"\b{name}\b(?!\.)", body)}
    decls = "".join(f"(input {name} (shape{''.join(f' {d}' for d in v.shape)}) {v.dtype})\n"
                    for name, v in used.items())
    return decls + body + "\n", used


# Every operator of the language (docs/language.md), as ``make`` names them in Case.ops.
OPERATORS = frozenset({
    "access-tensor", "access", "access-windows", "access-cartesian-product", "access-pair",
    "access-pad", "access-slice", "access-concatenate", "access-transpose", "access-squeeze",
    "access-insert-axis", "access-broadcast", "access-flatten", "access-reshape", "access-shape",
    "get-access-shape", "access-literal", "literal", "shape-of", "slice-shape",
    "shape-insert-axis", "shape-remove-axis", "compute dot-product", "compute reduce-sum",
    "compute reduce-max", "compute reduce-mean", "compute relu", "compute sqrt",
    "compute negative", "compute elementwise-add", "compute elementwise-mul",
    "compute elementwise-div", "compute softmax", "compute requantize", "systolic-array",
    "systolic-array-with-blocking"})
