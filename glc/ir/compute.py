"""The kinds of ``(compute KIND A)``, defined once: the result's type and its numpy evaluation.

Integer semantics follow the language contract ("Numbers"): sums and products of int8/int16/int32
operands are carried in int64 and wrapped to the int32 accumulator (two's complement is a ring
homomorphism, so wrapping once at the end equals wrapping at every step, in any order); max, relu
and negative keep the dtype; requantize rounds half up by an arithmetic shift and saturates to int8.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from glc.errors import ShapeError
from glc.ir.gelu import mlas_erf
from glc.ir.sigmoid import mlas_logistic
from glc.ir.softmax import softmax as mlas_softmax
from glc.ir.tanh import mlas_tanh
from glc.ir.types import Access, ComputeKind, accumulator_dtype, fmt_dims, is_int


@dataclass(frozen=True)
class Kind:
    """One compute kind: how it types an access pattern and how it evaluates the tensor."""

    name: str
    infer: Callable[[Access, ComputeKind], Access]
    evaluate: Callable[[np.ndarray, Access, Access, ComputeKind], np.ndarray]
    has_param: bool = False
    doc: str = ""


def _item_axes(a: Access) -> tuple[int, ...]:
    return tuple(range(a.n, a.ndim))


def _needs_items(a: Access, name: str, least: int = 1) -> None:
    if len(a.item) < least:
        raise ShapeError(f"{name} needs at least {least} item dim(s), "
                         f"got item shape {fmt_dims(a.item)}", arg=1)


def _needs_float(a: Access, name: str) -> None:
    if is_int(a.dtype):
        raise ShapeError(f"{name} needs a float dtype, got {a.dtype}", arg=1)


def _wide(x: np.ndarray) -> np.ndarray:
    """Integers widened to int64 before summing or multiplying (wrapped back by the caller)."""
    return x.astype(np.int64) if x.dtype.kind == "i" else x


def _infer_dot(a: Access, kind: ComputeKind) -> Access:
    _needs_items(a, "dot-product")
    return Access(a.shape, (), accumulator_dtype(a.dtype))


@dataclass(frozen=True)
class Pairs:
    """An integer access-cartesian-product, unmaterialised: every item of ``left`` paired with
    every item of ``right``, each operand held as a matrix (its items flattened to rows).
    ``out`` is the product's type, or that of a reshape of it which keeps the pair axis outermost
    in the item (the im2col rewrites' ``(access-reshape (access-cartesian-product ..) ..)``): the
    value is the pairs of ``left``'s rows with ``right``'s, in row-major order, reshaped to
    ``out``'s dims. A dot product over it is a matrix product (``_eval_dot``); any other consumer
    reads the full array (``np.asarray``), which for a convolution's im2col pairs would be
    items × pixels × filters large."""

    left: np.ndarray
    right: np.ndarray
    out: Access

    @classmethod
    def of(cls, x: np.ndarray, y: np.ndarray, out: Access) -> Pairs:
        """The cartesian product of ``x`` and ``y`` (their items the last ``len(out.item) - 1``
        dims), of type ``out``."""
        width = math.prod(out.item[1:])
        return cls(x.reshape(-1, width), y.reshape(-1, width), out)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.out.dims

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.out.dtype)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        (a, width), b = self.left.shape, len(self.right)
        value = np.stack([np.broadcast_to(self.left[:, None, :], (a, b, width)),
                          np.broadcast_to(self.right[None, :, :], (a, b, width))], axis=2)
        value = value.reshape(self.out.dims).astype(self.out.dtype)
        return value if dtype is None else value.astype(dtype)


def _eval_dot(x, a, out, kind):
    # Item [t, r...]: multiply the t tuple members elementwise, then sum over r (paper §2).
    if isinstance(x, Pairs):
        # Over a cartesian product (Pairs): Σ_r L[s0, r]·R[s1, r], the same exact int64
        # sums, without the pairs (an im2col convolution's would be gigabytes).
        product = _wide(x.left) @ _wide(x.right).T
        return product.reshape(out.dims).astype(out.dtype)
    product = np.prod(_wide(np.asarray(x)), axis=a.n)
    return np.sum(product, axis=tuple(range(a.n, product.ndim))).astype(out.dtype)


def _reduce(name: str, fn, keeps_dtype: bool, float_only: bool = False) -> Kind:
    def infer(a: Access, kind: ComputeKind) -> Access:
        if float_only:
            _needs_float(a, name)
        dtype = a.dtype if keeps_dtype else accumulator_dtype(a.dtype)
        return Access(a.shape, (), dtype)

    def evaluate(x, a, out, kind):
        return np.asarray(fn(_wide(x) if not keeps_dtype else x, axis=_item_axes(a))).astype(
            out.dtype)

    return Kind(name, infer, evaluate, doc=f"{fn.__name__} over each item")


def _elementwise(name: str, fn, float_only: bool = False) -> Kind:
    def infer(a: Access, kind: ComputeKind) -> Access:
        if float_only:
            _needs_float(a, name)
        return Access(a.shape, a.item, a.dtype)

    def evaluate(x, a, out, kind):
        return fn(x).astype(out.dtype)

    return Kind(name, infer, evaluate, doc="elementwise")


def _fold(name: str, fn, float_only: bool = False) -> Kind:
    """elementwise-add/-mul/-div/-max/-min: fold over the first item axis (language
    contract)."""

    def infer(a: Access, kind: ComputeKind) -> Access:
        _needs_items(a, name)
        if float_only:
            _needs_float(a, name)
        dtype = a.dtype if float_only else accumulator_dtype(a.dtype)
        return Access(a.shape, a.item[1:], dtype)

    def evaluate(x, a, out, kind):
        parts = np.moveaxis(_wide(x), a.n, 0)
        result = parts[0]
        for part in parts[1:]:
            result = fn(result, part)
        return np.asarray(result).astype(out.dtype)

    return Kind(name, infer, evaluate, doc="fold over the first item axis")


def _infer_softmax(a: Access, kind: ComputeKind) -> Access:
    if len(a.item) != 1:
        raise ShapeError(f"softmax needs exactly 1 item dim, got item shape {fmt_dims(a.item)}",
                         arg=1)
    _needs_float(a, "softmax")
    return a


def _eval_softmax(x, a, out, kind):
    """float32 as onnxruntime's kernel rounds it (glc/ir/softmax.py); float64 in numpy."""
    if x.dtype == np.float32:
        return mlas_softmax(x)
    shifted = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return (shifted / np.sum(shifted, axis=-1, keepdims=True)).astype(out.dtype)


def _infer_requantize(a: Access, kind: ComputeKind) -> Access:
    if not is_int(a.dtype):
        raise ShapeError(f"(requantize {kind.param}) needs an integer dtype, got {a.dtype}", arg=1)
    if not 0 <= kind.param <= 62:
        raise ShapeError(f"requantize needs a shift from 0 to 62, got {kind.param}", arg=0)
    return Access(a.shape, a.item, "int8")


def requantize(x: np.ndarray, shift: int) -> np.ndarray:
    """``clamp((x + 2^(k-1)) >> k, -128, 127)`` for k ≥ 1, ``clamp(x)`` for k = 0 (glc extension;
    the store unit's int8 path computes exactly this)."""
    wide = x.astype(np.int64)
    if shift > 0:
        # (x + 2^(k-1)) >> k is floor(x / 2^k) plus bit k-1 of x (the half that rounds up):
        # exact over all of int64, where adding 2^(k-1) first would wrap near the top.
        wide = (wide >> shift) + ((wide >> (shift - 1)) & 1)
    return np.clip(wide, -128, 127).astype(np.int8)


def _relu(x):
    return np.maximum(x, np.zeros((), x.dtype))


# The error function of float32 as onnxruntime's Erf kernel computes it (MLAS's polynomial,
# glc/ir/gelu.py); of float64 in double (math.erf, within an ulp).
def _erf(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float32:
        return mlas_erf(x)
    return np.vectorize(math.erf, otypes=[np.float64])(x)


# The logistic function of float32 as onnxruntime's Sigmoid kernel computes it (MLAS's rational
# approximation, glc/ir/sigmoid.py); of float64 in double.
def _sigmoid(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float32:
        return mlas_logistic(x)
    with np.errstate(over="ignore"):  # e^-x overflows to inf below -709: the result is 0
        return 1 / (1 + np.exp(-x))


# The hyperbolic tangent of float32 as onnxruntime's Tanh kernel computes it (MLAS's rational
# approximation, glc/ir/tanh.py); of float64 in double.
def _tanh(x: np.ndarray) -> np.ndarray:
    return mlas_tanh(x) if x.dtype == np.float32 else np.tanh(x)


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("dot-product", _infer_dot, _eval_dot,
         doc="item [t, r...]: product of the t members, summed over r"),
    _reduce("reduce-sum", np.sum, keeps_dtype=False),
    _reduce("reduce-max", np.max, keeps_dtype=True),
    _reduce("reduce-mean", np.mean, keeps_dtype=True, float_only=True),
    _elementwise("relu", _relu),
    _elementwise("sqrt", np.sqrt, float_only=True),
    _elementwise("negative", np.negative),
    _elementwise("erf", _erf, float_only=True),
    _elementwise("sigmoid", _sigmoid, float_only=True),
    _elementwise("tanh", _tanh, float_only=True),
    _fold("elementwise-add", np.add),
    _fold("elementwise-mul", np.multiply),
    _fold("elementwise-div", np.divide, float_only=True),
    # a float Clip's bounds (glc/onnx/floats.py): exact, as onnxruntime's cwiseMax/cwiseMin
    _fold("elementwise-max", np.maximum, float_only=True),
    _fold("elementwise-min", np.minimum, float_only=True),
    Kind("softmax", _infer_softmax, _eval_softmax, doc="softmax over the one item dim"),
    Kind("requantize", _infer_requantize, lambda x, a, out, kind: requantize(x, kind.param),
         has_param=True, doc="round, shift and saturate to int8"),
)}
