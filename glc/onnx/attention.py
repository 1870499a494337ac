"""Attention's operators: QLinearSoftmax (a host step, ``softmax-linear``: onnxruntime's table
kernel), and MatMul of two activations (Q·Kᵀ and P·V), QDQ and QLinearMatMul: onnxruntime sums
``(a - za)(b - zb)`` in int32 and requantizes like a dense layer. The accelerator multiplies int8
``a·b``; the zero points come off as data-dependent terms, all int32:

    Σ (a - za)(b - zb) = Σ a·b - zb·Σ_k a[m, k] - za·Σ_k b[k, n] + K·za·zb

the row sums of ``a`` and column sums of ``b`` are reductions, the last term joins the bias."""

from __future__ import annotations

import numpy as np

from glc.onnx import layers
from glc.onnx.layers import bind_absorbed, qdense, requantize_sum
from glc.onnx.program import Constant, Dequantized, Quantized, broadcast, literal, shape
from glc.onnx.quant import multiplier


def _scaled(t, hint: str, expr: str, dims_of: tuple[int, ...], dims: tuple[int, ...],
            factor: int) -> str:
    """``factor · expr`` (int32, of dims ``dims_of``) reshaped and broadcast to ``dims``."""
    c = t.b.tensor(hint, np.full((1, 1), factor, np.int32))
    spread = (f"(access-broadcast (access-reshape {expr} (access-shape {shape(dims_of)} "
              f"(shape))) (access-shape {shape(dims)} (shape)))")
    return f"(compute elementwise-mul (access-pair {spread} {broadcast(c, dims)}))"


def qmatmul(t, node, a: Quantized, b: Quantized, y_scale: float, y_zero: int) -> None:
    """``node``'s product of the int8 matrices ``a`` (M, K) and ``b`` (K, N), requantized."""
    if len(a.dims) != 2 or len(b.dims) != 2 or a.dims[1] != b.dims[0]:
        raise t.error(node, f"only a product of matrices is supported, got dims {a.dims} and "
                            f"{b.dims}")
    (m, k), n = a.dims, b.dims[1]
    hint = node.output[0]
    bt = f"(access-transpose (access-tensor {b.name}) (list 1 0))"
    terms = [f"(compute dot-product (access-cartesian-product (access (access-tensor {a.name}) 1)"
             f" (access {bt} 1)))"]
    if b.zero:
        terms.append(_scaled(t, hint + "_zb", f"(compute reduce-sum (access (access-tensor "
                                              f"{a.name}) 1))", (m, 1), (m, n), -b.zero))
    if a.zero:
        terms.append(_scaled(t, hint + "_za", f"(compute reduce-sum (access {bt} 1))",
                             (1, n), (m, n), -a.zero))
    acc = terms[0]
    for term in terms[1:]:
        acc = f"(compute elementwise-add (access-pair {acc} {term}))"
    acc = t.b.define(hint + "_acc", acc)
    bias = np.full((1, n), k * a.zero * b.zero, np.int64)
    m_ = np.full((1, n), multiplier(a.scale, np.float32(b.scale), y_scale), np.float32)
    name = requantize_sum(t, hint, acc, (m, n), bias, m_, y_zero)
    t.bind(node, Quantized(name, (m, n), y_scale, y_zero))


def _matmul(t, node, attrs) -> None:
    out = t.requantized_output(node)
    if out is None:
        raise t.error(node, "a float MatMul is not supported (its output must be quantized)")
    if isinstance(t.value(node, 1), Constant):
        w, w_scale = t.weights(node, 1)
        qdense(t, node, t.quantized(node, 0), w, w_scale, None, *out)
    else:
        qmatmul(t, node, t.quantized(node, 0), t.quantized(node, 1), *out)
    bind_absorbed(t, node)


def _qlinear_matmul(t, node, attrs) -> None:
    x = t.quantized(node, 0)
    x = Quantized(x.name, x.dims, *t.qparams(node, 1, 2))
    y_scale, y_zero = t.qparams(node, 6, 7)
    if isinstance(t.value(node, 3), Constant):
        w, w_scale = t.qlinear_weights(node, 3)
        qdense(t, node, x, w, w_scale, None, y_scale, y_zero)
        return
    b = t.quantized(node, 3)
    qmatmul(t, node, x, Quantized(b.name, b.dims, *t.qparams(node, 4, 5)), y_scale, y_zero)


def qsoftmax(t, node, attrs, x: Quantized, y_scale: float, y_zero: int, offset: int) -> None:
    """``node``'s QLinearSoftmax of ``x`` over its last axis (``softmax-linear``)."""
    if attrs.get("axis", -1) % len(x.dims) != len(x.dims) - 1:
        raise t.error(node, "attribute axis: only the last axis is supported")
    t.host_step(node)
    name = t.b.define(node.output[0], f"(softmax-linear (access-tensor {x.name}) "
                                      f"{literal(x.scale)} {literal(y_scale)} {y_zero} {offset})")
    t.bind(node, Quantized(name, x.dims, y_scale, y_zero))


def _qlinear_softmax(t, node, attrs) -> None:
    """com.microsoft QLinearSoftmax: X, x scale, x zero, y scale, y zero (opset 13 and later:
    over one axis)."""
    if attrs.get("opset", 13) < 13:
        raise t.error(node, "attribute opset below 13 (softmax over flattened axes) is not "
                            "supported")
    x = t.quantized(node, 0)
    x = Quantized(x.name, x.dims, *t.qparams(node, 1, 2))
    qsoftmax(t, node, attrs, x, *t.qparams(node, 3, 4), t.offset(node, 4))


def _softmax(t, node, attrs) -> None:
    """QDQ: a Softmax between a DequantizeLinear and a lone QuantizeLinear is what onnxruntime
    fuses into QLinearSoftmax, after its x86 optimizer turned the int8 pairs into uint8 (as for
    AveragePool, glc/onnx/pools.py); any other Softmax is float (glc/onnx/layers.py)."""
    q = t.graph.only_consumer(node.output[0])
    if not isinstance(t.value(node, 0), Dequantized) or q is None or \
            q.op_type != "QuantizeLinear":
        layers.TABLE["Softmax"](t, node, attrs)
        return
    qsoftmax(t, node, attrs, t.quantized(node, 0), *t.requantized_output(node), 128)
    bind_absorbed(t, node)


TABLE = {
    "MatMul": _matmul,
    "QLinearMatMul": _qlinear_matmul,
    "QLinearSoftmax": _qlinear_softmax,
    "Softmax": _softmax,
}
