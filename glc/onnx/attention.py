"""Attention's operators: QLinearSoftmax (a host step, ``softmax-linear``: onnxruntime's table
kernel), and MatMul of two activations (Q·Kᵀ and P·V), QDQ and QLinearMatMul: onnxruntime sums
``(a - za)(b - zb)`` in int32 and requantizes like a dense layer. The accelerator multiplies int8
``a·b``; the zero points come off as data-dependent terms, all int32:

    Σ (a - za)(b - zb) = Σ a·b - zb·Σ_k a[m, k] - za·Σ_k b[k, n] + K·za·zb

each a vector over C: the row sums' the same for every n, the column sums' (with the last
term) the same for every m. Each is a product on the array by the constant vector ``-z`` (one
column of weights), and the requantization's STOREs add one of them as their bias; with both
zero points nonzero the other is the product's own bias (glc/lower/batched.py, a kernel's
STOREs), so no term is a pass of the vector unit over C but one bias add of a plain product."""

from __future__ import annotations

import numpy as np

from glc.ir.quantized import INT8
from glc.onnx import layers
from glc.onnx.fusions import float_outputs, fused_offset
from glc.onnx.layers import bind_absorbed, qdense
from glc.onnx.program import Constant, Dequantized, Float, Quantized, broadcast, literal, shape
from glc.onnx.quant import multiplier


def _sums(t, hint: str, k: int, zero: int, add: int, dims: tuple[int, ...], vector,
          operands) -> str:
    """``-zero · Σ_k x + add`` (int32, of ``dims``) over the K items of an int8 operand x: a
    product on the array by the constant vector ``-zero`` (``vector(tensor)`` its access,
    ``operands(access)`` the product's two in order). A zero point of -128 (uint8's 0) makes
    128, past int8: the vector is 64 and the sums are doubled."""
    factor = 2 if -zero > INT8[1] else 1
    ones = vector(f"(access-tensor {t.b.tensor(hint, np.full(k, -zero // factor, np.int8))})")
    expr = f"(compute dot-product (access-cartesian-product {' '.join(operands(ones))}))"

    def const(name: str, value: int) -> str:
        return broadcast(t.b.tensor(name, np.full((1,) * len(dims), value, np.int32)), dims)

    if factor != 1:
        expr = f"(compute elementwise-mul (access-pair {expr} {const(hint + '_2', factor)}))"
    if add:
        expr = f"(compute elementwise-add (access-pair {expr} {const(hint + '_k', add)}))"
    return expr


def _spread(expr: str, of: tuple[int, ...], dims: tuple[int, ...]) -> str:
    """``expr`` reshaped to ``of`` (``dims``' rank, 1 where it is broadcast) and broadcast to
    ``dims``."""
    return (f"(access-broadcast (access-reshape {expr} (access-shape {shape(of)} (shape))) "
            f"(access-shape {shape(dims)} (shape)))")


def _product(a: Quantized, b: Quantized, bt: str, dims: tuple[int, ...]) -> str:
    """The int32 product ``a @ b`` of dims ``dims`` (the batch, M, N); ``bt`` is b with its
    last two dims swapped, (…, N, K).

    With b one matrix (its batch dims 1) it is one product, a's batch its rows:
    ``((…, M),(K))`` by ``((N),(K))`` (the rewrites flatten the batch into M). Otherwise each
    batch element has its own pair of matrices: both operands broadcast to (batch, M, N, K),
    a over N and b over M, and the dot product over ``access-pair`` (the lowering runs one
    array product per batch element, glc/lower/batched.py)."""
    rank = len(dims)
    if all(d == 1 for d in b.dims[:-2]):
        flat = f"(access {bt} 1)" if len(b.dims) == 2 else \
            f"(access-reshape {bt} (access-shape {shape(b.dims[-1:])} {shape(b.dims[-2:-1])}))"
        product = (f"(compute dot-product (access-cartesian-product (access (access-tensor "
                   f"{a.name}) {len(a.dims) - 1}) {flat}))")
        produced = a.dims[:-1] + b.dims[-1:]
        if produced == dims:
            return product
        return f"(access-reshape {product} (access-shape {shape(dims)} (shape)))"
    target = f"(access-shape {shape(dims + (a.dims[-1],))} (shape))"

    def spread(expr: str, of: tuple[int, ...], axis: int) -> str:
        full = (1,) * (rank - len(of)) + of
        if full != of:
            expr = f"(access-reshape {expr} (access-shape {shape(full)} (shape)))"
        return f"(access (access-broadcast (access-insert-axis {expr} {axis}) {target}) {rank})"

    bt_dims = b.dims[:-2] + (b.dims[-1], b.dims[-2])
    pair = (spread(f"(access-tensor {a.name})", a.dims, rank - 1),
            spread(bt, bt_dims, rank - 2))
    return f"(compute dot-product (access-pair {pair[0]} {pair[1]}))"


def _batch(t, node, a, b) -> tuple[int, ...]:
    """The batch dims of ``a`` (…, M, K) times ``b`` (…, K, N): their leading dims broadcast as
    numpy's matmul does; a one-line error where the operands are no such pair."""
    if len(a.dims) < 2 or len(b.dims) < 2 or a.dims[-1] != b.dims[-2]:
        raise t.error(node, f"only a product of matrices (or of batches of matrices) is "
                            f"supported, got dims {a.dims} and {b.dims}")
    try:
        return tuple(np.broadcast_shapes(a.dims[:-2], b.dims[:-2]))
    except ValueError:
        raise t.error(node, f"the batch dims of {a.dims} and {b.dims} do not broadcast") \
            from None


def qmatmul(t, node, a: Quantized, b: Quantized, y_scale: float, y_zero: int) -> None:
    """``node``'s product of the int8 tensors ``a`` (…, M, K) and ``b`` (…, K, N), their
    leading (batch) dims broadcast as numpy's matmul does, requantized."""
    batch = _batch(t, node, a, b)
    m, k, n = a.dims[-2], a.dims[-1], b.dims[-1]
    dims = tuple(batch) + (m, n)
    rank = len(dims)
    hint = node.output[0]
    perm = list(range(len(b.dims) - 2)) + [len(b.dims) - 1, len(b.dims) - 2]
    bt = f"(access-transpose (access-tensor {b.name}) (list {' '.join(map(str, perm))}))"
    acc = _product(a, b, bt, dims)
    # The zero points' terms, each a vector spread over C: the column sums' the same for every
    # m, the row sums' for every n. The requantization's STOREs add one (its bias, a vector
    # along C's rows or columns, glc/lower/table.py); with both, the row sums are the
    # product's own bias (its kernels' STOREs) and the column sums the requantization's.
    terms = []
    if b.zero:  # -zb · Σ_k a[…, m, k]
        rows = f"(access (access-tensor {a.name}) {len(a.dims) - 1})"
        row_sums = _sums(t, hint + "_zb", k, b.zero, 0, a.dims[:-1] + (1,),
                         lambda ones: f"(access (access-reshape {ones} (access-shape "
                                      f"(shape 1 {k}) (shape))) 1)",
                         lambda ones: (rows, ones))
        terms.append(_spread(row_sums, (1,) * (rank - len(a.dims)) + a.dims[:-1] + (1,), dims))
    if a.zero:  # -za · Σ_k b[…, k, n] + K·za·zb
        columns = f"(access {bt} {len(b.dims) - 1})"
        column = _sums(t, hint + "_za", k, a.zero, k * a.zero * b.zero, b.dims[:-2] + (n,),
                       lambda ones: f"(access {ones} 0)", lambda ones: (ones, columns))
        terms.append(_spread(column, (1,) * (rank - len(b.dims)) + b.dims[:-2] + (1, n), dims))
    if len(terms) == 2:
        acc = f"(compute elementwise-add (access-pair {acc} {terms.pop(0)}))"
    bias = terms[0] if terms else \
        broadcast(t.b.tensor(hint + "_bias", np.zeros((1,) * rank, np.int32)), dims)
    acc = t.b.define(hint + "_acc", acc)
    # One multiplier (per tensor), broadcast along both of C's dims: the STOREs' table may
    # then read the row sums' bias along C's rows (glc/lower/table.py).
    m_ = broadcast(t.b.tensor(hint + "_m", np.full((1,) * rank, multiplier(
        a.scale, np.float32(b.scale), y_scale), np.float32)), dims)
    name = t.b.define(hint, f"(requantize-linear (compute elementwise-add (access-pair "
                            f"(access-tensor {acc}) {bias})) {m_} {y_zero})")
    t.bind(node, Quantized(name, dims, y_scale, y_zero))


def float_product(t, node, a: Float, b: Float, bias: Float | None = None) -> None:
    """onnxruntime's float MatMul (or Gemm, with ``bias``) of ``a`` (…, M, K) and ``b``
    (…, K, N): MLAS's SGEMM, ``matmul-float`` (docs/language.md), a host step. A Gemm's bias
    is added after the sum, where MLAS starts from it: the same float32 result while K is one
    of MLAS's slices (glc/ir/sgemm.py) or the bias is zero."""
    batch = _batch(t, node, a, b)
    dims = tuple(batch) + (a.dims[-2], b.dims[-1])
    t.host_step(node)
    expr = f"(matmul-float (access-tensor {a.name}) (access-tensor {b.name}))"
    if bias is not None:
        lifted = (1,) * (len(dims) - len(bias.dims)) + bias.dims
        row = t.b.define(bias.name + "_row", f"(access-reshape (access-tensor {bias.name}) "
                                             f"(access-shape {shape(lifted)} (shape)))")
        expr = f"(compute elementwise-add (access-pair {expr} {broadcast(row, dims)}))"
    t.bind(node, Float(t.b.define(node.output[0], expr), dims))


def _matmul(t, node, attrs) -> None:
    out = t.requantized_output(node)
    if out is None:  # a float product (a dynamically quantized attention's Q·Kᵀ, P·V)
        float_product(t, node, t.as_float(node, 0), t.as_float(node, 1))
        return
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
    qsoftmax(t, node, attrs, t.quantized(node, 0), *t.requantized_output(node),
             fused_offset(t, node, q))
    bind_absorbed(t, node)


def _gemm(t, node, attrs) -> None:
    """A QDQ Gemm whose bias is no int32 quantized bias is what onnxruntime leaves float: the
    quantizer writes a bias initializer that PyTorch's export shares with an Add (all of
    transformers' zero biases are one initializer) as a uint8 activation, and onnxruntime's
    QDQ fusion then keeps DequantizeLinear → Gemm → QuantizeLinear. Its float Gemm is
    ``matmul-float`` of the dequantized operands plus the dequantized bias; any other Gemm is
    glc/onnx/layers.py's."""
    bias = t.value(node, 2)
    if not isinstance(bias, Constant) or bias.quantized is None or \
            bias.quantized[0].dtype == np.int32 or node.output[0] not in float_outputs(t, node):
        layers.TABLE["Gemm"](t, node, attrs)
        return
    if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0 or attrs.get("transA", 0):
        raise t.error(node, "attributes alpha, beta and transA must be 1, 1 and 0")
    w = t.constant(node, 1)  # the dequantized weights, as onnxruntime's DequantizeLinear
    if attrs.get("transB", 0):
        w = w.T
    hint = node.output[0]
    b = Float(t.b.tensor(hint + "_bf", bias.value), tuple(bias.value.shape))
    float_product(t, node, t.as_float(node, 0),
                  Float(t.b.tensor(hint + "_wf", np.ascontiguousarray(w)), w.shape), b)


TABLE = {
    "Gemm": _gemm,
    "MatMul": _matmul,
    "QLinearMatMul": _qlinear_matmul,
    "QLinearSoftmax": _qlinear_softmax,
    "Softmax": _softmax,
}
