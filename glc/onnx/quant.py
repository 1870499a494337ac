"""QDQ folding: the quantization of ONNX values (scale, zero point, int8 or uint8) read from
QuantizeLinear/DequantizeLinear nodes and QOperator inputs, and the multiplier onnxruntime's
requantizer uses.

uint8 activations are carried as int8 shifted by -128 (docs/language.md): ``zero_point``
returns the zero point in that int8 form.
"""

from __future__ import annotations

import numpy as np

from glc.errors import GlcError
from glc.onnx.graph import label


class NodeError(Exception):
    """What is wrong with the node being translated, raised where it is found (a scale, a zero
    point, a multiplier, a literal); the translation adds the node (``unsupported``)."""


def unsupported(node, what: str, path: str) -> GlcError:
    """The one-line refusal: the node, its op, and what is not supported."""
    return GlcError(f"node '{label(node)}' ({node.op_type}): {what}", path)


def positive(values: np.ndarray, what: str) -> np.ndarray:
    """``values`` (float32) unless one is not a finite positive number: ONNX scales are, and so
    is every multiplier made of them; a NaN's integer conversion is undefined (numpy and the
    hardware disagree on it), a zero or a negative one no quantizer writes."""
    bad = values[~(np.isfinite(values) & (values > 0))]
    if bad.size or not values.size:
        shown = f" {bad.flat[0]}" if bad.size else "s (none given)"
        raise NodeError(f"{what}{shown} is not a finite positive float32")
    return values


def scale_of(value: np.ndarray) -> np.ndarray:
    """A scale as float32 (a scalar or one per channel), each finite and positive."""
    array = np.asarray(value)
    if array.dtype != np.float32:
        raise NodeError(f"scales of type {array.dtype} are not supported (float32)")
    return positive(array, "scale")


def zero_point(value: np.ndarray) -> np.ndarray:
    """Zero point(s) in the int8 carrying form: uint8 ones shifted by -128."""
    array = np.asarray(value)
    if array.dtype == np.uint8:
        return array.astype(np.int32) - 128
    if array.dtype != np.int8:
        raise NodeError(f"zero points of type {array.dtype} are not supported (int8 or uint8)")
    return array.astype(np.int32)


def carried(q: np.ndarray) -> np.ndarray:
    """Quantized integers in the int8 carrying form."""
    if q.dtype == np.uint8:
        return (q.astype(np.int16) - 128).astype(np.int8)
    return q


def multiplier(x_scale: float, w_scale: np.ndarray, y_scale: float) -> np.ndarray:
    """``float32(float32(x_scale · w_scale) / y_scale)``, per tensor or per output channel: the
    multiplier onnxruntime's QLinearConv / QGemm / QLinearMatMul requantize with."""
    with np.errstate(over="ignore", under="ignore"):  # judged by ``positive``
        product = np.float32(x_scale) * np.asarray(w_scale, dtype=np.float32)
        quotient = (product / np.float32(y_scale)).astype(np.float32)
    return positive(quotient, "the requantization multiplier")


def pool_multiplier(x_scale: float, y_scale: float, count: int) -> np.float32:
    """``float32(x_scale / float32(y_scale · float32(count)))``: QLinearGlobalAveragePool's."""
    with np.errstate(over="ignore", under="ignore"):
        m = np.float32(np.float32(x_scale) / (np.float32(y_scale) * np.float32(count)))
    positive(np.asarray(m), "the requantization multiplier")
    return m
