"""QDQ folding: the quantization of ONNX values (scale, zero point, int8 or uint8) read from
QuantizeLinear/DequantizeLinear nodes and QOperator inputs, and the multiplier onnxruntime's
requantizer uses.

uint8 activations are carried as int8 shifted by -128 (docs/language.md): ``zero_point``
returns the zero point in that int8 form.
"""

from __future__ import annotations

import numpy as np

from glc.errors import GlcError


def unsupported(node, what: str, path: str) -> GlcError:
    """The one-line refusal: the node, its op, and what is not supported."""
    return GlcError(f"node '{node.name or node.output[0]}' ({node.op_type}): {what}", path)


def scale_of(value: np.ndarray) -> np.ndarray:
    """A scale as float32 (a scalar or one per channel)."""
    return np.asarray(value, dtype=np.float32)


def zero_point(value: np.ndarray) -> np.ndarray:
    """Zero point(s) in the int8 carrying form: uint8 ones shifted by -128."""
    array = np.asarray(value)
    if array.dtype == np.uint8:
        return array.astype(np.int32) - 128
    if array.dtype != np.int8:
        raise ValueError(array.dtype)
    return array.astype(np.int32)


def carried(q: np.ndarray) -> np.ndarray:
    """Quantized integers in the int8 carrying form."""
    if q.dtype == np.uint8:
        return (q.astype(np.int16) - 128).astype(np.int8)
    return q


def multiplier(x_scale: float, w_scale: np.ndarray, y_scale: float) -> np.ndarray:
    """``float32(float32(x_scale · w_scale) / y_scale)``, per tensor or per output channel: the
    multiplier onnxruntime's QLinearConv / QGemm / QLinearMatMul requantize with."""
    product = np.float32(x_scale) * np.asarray(w_scale, dtype=np.float32)
    return (product / np.float32(y_scale)).astype(np.float32)


def pool_multiplier(x_scale: float, y_scale: float, count: int) -> np.float32:
    """``float32(x_scale / float32(y_scale · float32(count)))``: QLinearGlobalAveragePool's."""
    return np.float32(np.float32(x_scale) / (np.float32(y_scale) * np.float32(count)))
