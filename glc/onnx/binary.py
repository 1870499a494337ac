"""Mul and Add of an int8 activation and a quantized constant, and Mul of two activations, as
onnxruntime's integer kernels compute them: QLinearMul and QLinearAdd. DenseNet scales and
shifts the channels after each Concat by (C, 1, 1) constants; the quantizer quantizes those
constants like activations (a DequantizeLinear of an initializer, or the QOperator nodes' own
inputs), and onnxruntime's x86 optimizer fuses DequantizeLinear → Mul/Add → QuantizeLinear into
QLinearMul / QLinearAdd when the three types agree (``fused``, ``fused_product``). A node it
does not fuse stays float (glc/onnx/floats.py)."""

from __future__ import annotations

import numpy as np

from glc.onnx import layers
from glc.onnx.fusions import float_outputs, fused_offset
from glc.onnx.program import Constant, Dequantized, Quantized, broadcast, literal
from glc.onnx.quant import carried, multiplier, scale_of, zero_point


def fused(t, node) -> bool:
    """QDQ: ``node`` (Mul or Add of a dequantized activation and a dequantized constant) written
    as the QLinearMul / QLinearAdd onnxruntime fuses it into, when it does; else False.

    Its QDQ selector fuses when the DequantizeLinear inputs and the one QuantizeLinear reader
    (through a Relu the quantization makes redundant, which it drops) have one type, after its
    x86 QDQS8ToU8Transformer has turned the int8 QuantizeLinear/DequantizeLinear pairs of the
    activations into uint8, so the fused kernel adds and multiplies uint8 values. Whether a
    constant's int8 DequantizeLinear becomes uint8 too depends on the host: with exact products
    (glc/onnx/kernels.py) on x86 without VNNI its weight transformer converts it and the node
    fuses; elsewhere it stays float. So this asks onnxruntime's optimized graph (fusions.py);
    an int8 constant's integers, carried as int8, are the uint8 ones less 128 either way."""
    values = [t.value(node, i) for i in range(len(node.input))]
    if len(values) != 2 or not any(isinstance(v, Dequantized) for v in values):
        return False
    k = next(i for i, v in enumerate(values) if isinstance(v, Dequantized))
    x, c = values[k], values[1 - k]
    if not isinstance(c, Constant) or c.quantized is None:
        return False
    q, scale, zero = c.quantized
    relu = layers.redundant_relu(t, node)
    last = relu or node
    reader = t.graph.only_consumer(last.output[0])
    if reader is None or reader.op_type != "QuantizeLinear" or len(reader.input) < 3 or \
            not reader.input[2] or x.offset != t.offset(reader, 2) or \
            np.size(scale) != 1 or np.size(zero) != 1 or node.output[0] in float_outputs(t, node):
        return False
    y_scale, y_zero = t.requantized_output(last)
    _write(t, node, k, x.of, q, float(scale_of(scale).reshape(())), zero, y_scale, y_zero,
           fused_offset(t, node, reader))
    if relu is not None:
        t.absorbed.add(id(relu))
        t.values[relu.output[0]] = t.values[node.output[0]]
    layers.bind_absorbed(t, last)
    return True


def fused_product(t, node) -> bool:
    """QDQ: a Mul of two dequantized activations that one QuantizeLinear reads (through a Relu
    it makes redundant) in their type — the QLinearMul onnxruntime fuses it into (its x86
    optimizer turns int8 pairs into uint8 first, as for an Add: glc/onnx/layers.py ``_add``);
    else False."""
    values = [t.value(node, i) for i in range(len(node.input))]
    if len(values) != 2 or not all(isinstance(v, Dequantized) for v in values) or \
            node.output[0] in float_outputs(t, node):
        return False
    relu = layers.redundant_relu(t, node)
    last = relu or node
    reader = t.graph.only_consumer(last.output[0])
    if reader is None or reader.op_type != "QuantizeLinear" or len(reader.input) < 3 or \
            not reader.input[2] or {v.offset for v in values} != {t.offset(reader, 2)}:
        return False
    _product(t, node, values[0].of, values[1].of, *t.requantized_output(last),
             fused_offset(t, node, reader))
    if relu is not None:
        t.absorbed.add(id(relu))
        t.values[relu.output[0]] = t.values[node.output[0]]
    layers.bind_absorbed(t, last)
    return True


def _qlinear(t, node, attrs) -> None:
    """QOperator QLinearMul, and QLinearAdd with a constant operand (of two activations it is
    glc/onnx/layers.py's)."""
    values = [t.value(node, i) for i in (0, 3)]
    constants = [i for i, v in enumerate(values) if isinstance(v, Constant)]
    if len(constants) != 1:
        if node.op_type == "QLinearAdd" and not constants:
            layers.TABLE["QLinearAdd"](t, node, attrs)
            return
        if node.op_type == "QLinearMul" and not constants:  # two activations: a gate
            a, b = (Quantized(v.name, v.dims, *t.qparams(node, i + 1, i + 2))
                    for v, i in ((t.quantized(node, 0), 0), (t.quantized(node, 3), 3)))
            _product(t, node, a, b, *t.qparams(node, 6, 7), t.offset(node, 2))
            return
        raise t.error(node, "both operands are constants")
    k = 1 - constants[0]
    x = t.quantized(node, 3 * k)
    x = Quantized(x.name, x.dims, *t.qparams(node, 3 * k + 1, 3 * k + 2))
    c = 3 * constants[0]
    q, zero = t.constant(node, c), t.constant(node, c + 2)
    scale = scale_of(t.constant(node, c + 1))
    if q.dtype != t.constant(node, 3 * k + 2).dtype or scale.size != 1 or np.size(zero) != 1:
        raise t.error(node, "the constant operand needs the activation's type and one scale")
    _write(t, node, k, x, q, float(scale.reshape(())), zero, *t.qparams(node, 6, 7),
           t.offset(node, 2))


def _write(t, node, k: int, x: Quantized, q: np.ndarray, scale: float, zero: np.ndarray,
           y_scale: float, y_zero: int, offset: int) -> None:
    """The kernel of ``node`` over the activation ``x`` (its operand ``k``, 0 or 1) and the
    constant of integers ``q`` (the model's type), ``scale`` and ``zero``; binds the output."""
    dims = x.dims
    if np.broadcast_shapes(q.shape, dims) != tuple(dims):
        raise t.error(node, f"a constant of dims {q.shape} does not broadcast to {dims}")
    shaped = (1,) * (len(dims) - q.ndim) + q.shape
    if node.op_type in ("Mul", "QLinearMul"):
        _mul(t, node, x, (q.astype(np.int32) - int(zero)).reshape(shaped), scale, y_scale,
             y_zero, offset)
        return
    c = Quantized(t.b.tensor(node.output[0] + "_c", carried(q).reshape(shaped)), dims, scale,
                  int(zero_point(zero).reshape(())))
    operands = [(f"(access-tensor {x.name})", x), (broadcast(c.name, dims), c)]
    if _kernel_a(q.shape, dims, k) != k:  # the constant is the kernel's first operand
        operands.reverse()
    (a, qa), (b, qb) = operands
    name = t.b.define(node.output[0], f"(add-linear {a} {b} {literal(qa.scale)} {qa.zero} "
                                      f"{literal(qb.scale)} {qb.zero} {literal(y_scale)} "
                                      f"{y_zero} {offset})")
    t.bind(node, Quantized(name, dims, y_scale, y_zero))


def _mul(t, node, x: Quantized, c: np.ndarray, c_scale: float, y_scale: float, y_zero: int,
         offset: int) -> None:
    """QLinearMul as its x86 kernel computes it (MlasQLinearMulKernel, SSE2): the integer product
    ``p = (a - za) · (c - zc)``, then ``rint(float32(p) · M + zy)`` with the zero point added in
    float32 before rounding, in the kernel's type (``offset``), and
    ``M = float32(float32(sa · sc) / sy)``. Written with float32 host operators: ``p`` is
    exact in float32 (|p| ≤ 255², below 2^24), then one multiply and one add, each rounded
    once, and ``quantize-linear`` by 1 rounds and saturates. Not the dequantize-multiply-quantize
    of the QDQ graph: that rounds three times and differs near halves (DenseNet-121 at 64×64:
    34 of 861 184 products, enough to move 562 of its 1000 logits)."""
    dims = x.dims
    m = np.float32(multiplier(x.scale, c_scale, y_scale))
    # The kernel's conversion gives INT_MIN past int32 (saturating low); quantize-linear would
    # saturate high. No quantizer's scales come near it.
    if 255.0 * float(np.max(np.abs(c), initial=0)) * float(m) + 256 >= 2.0 ** 31:
        raise t.error(node, f"a multiplier of {float(m)} takes products past int32")
    ones = (1,) * len(dims)
    hint = node.output[0]
    cn = t.b.tensor(hint + "_c", c.astype(np.float32))
    mn = t.b.tensor(hint + "_m", np.full(ones, m, np.float32))
    zn = t.b.tensor(hint + "_zero", np.full(ones, y_zero + offset, np.float32))
    product = (f"(compute elementwise-mul (access-pair (dequantize-linear (access-tensor "
               f"{x.name}) 1.0 {x.zero}) {broadcast(cn, dims)}))")
    scaled = f"(compute elementwise-mul (access-pair {product} {broadcast(mn, dims)}))"
    shifted = f"(compute elementwise-add (access-pair {scaled} {broadcast(zn, dims)}))"
    t.host_step(node)
    name = t.b.define(hint, f"(quantize-linear {shifted} 1.0 {-offset})")
    t.bind(node, Quantized(name, dims, y_scale, y_zero))


def _product(t, node, a: Quantized, b: Quantized, y_scale: float, y_zero: int,
             offset: int) -> None:
    """QLinearMul of two activations (an SE block's gate, a gating product) as the same x86
    kernel computes it (``_mul``): ``p = (a - za) · (b - zb)``, exact in float32, then
    ``rint(float32(p) · M + zy)`` with ``M = float32(float32(sa · sb) / sy)`` — symmetric in
    a and b, so the broadcaster's choice of operands does not matter. One operand may
    broadcast to the other's dims (the gate's (N, C, 1, 1) over the map)."""
    if len(a.dims) != len(b.dims):
        raise t.error(node, f"operands of dims {a.dims} and {b.dims} must have one rank")
    try:
        dims = tuple(np.broadcast_shapes(a.dims, b.dims))
    except ValueError:
        raise t.error(node, f"operands of dims {a.dims} and {b.dims} do not broadcast") from None
    m = np.float32(multiplier(a.scale, b.scale, y_scale))
    if 255.0 * 255.0 * float(m) + 256 >= 2.0 ** 31:
        raise t.error(node, f"a multiplier of {float(m)} takes products past int32")
    hint = node.output[0]
    operands = []
    for index, x in enumerate((a, b)):
        codes = t.b.define(f"{hint}_{index}", f"(dequantize-linear (access-tensor {x.name}) "
                                              f"1.0 {x.zero})")
        operands.append(broadcast(codes, dims) if x.dims != dims else f"(access-tensor {codes})")
    ones = (1,) * len(dims)
    mn = t.b.tensor(hint + "_m", np.full(ones, m, np.float32))
    zn = t.b.tensor(hint + "_zero", np.full(ones, y_zero + offset, np.float32))
    product = f"(compute elementwise-mul (access-pair {operands[0]} {operands[1]}))"
    scaled = f"(compute elementwise-mul (access-pair {product} {broadcast(mn, dims)}))"
    shifted = f"(compute elementwise-add (access-pair {scaled} {broadcast(zn, dims)}))"
    t.host_step(node)
    name = t.b.define(hint, f"(quantize-linear {shifted} 1.0 {-offset})")
    t.bind(node, Quantized(name, dims, y_scale, y_zero))


def _kernel_a(constant: tuple[int, ...], dims: tuple[int, ...], k: int) -> int:
    """Which node input (0 or 1) QLinearAdd's kernel takes as its first operand A, the
    activation being input ``k``: onnxruntime's broadcaster runs the kernel once per span of
    the innermost dims both inputs share, and an input that is one value per span (input 0
    checked first) is its scalar B, the other A (qlinear_binary_op.cc). A (C, 1, 1) constant
    over an NCHW map with more than one pixel is one value per span, so the activation is A
    whatever the node's order; a constant that varies along the innermost axis, or a 1×1 map,
    keeps the node's order. Which operand is A matters (add-linear's two FMAs are not
    symmetric). The import sees the graph as written: a QLinearAdd that onnxruntime's layout
    transformer runs channels-last (its neighbours all integer NHWC kernels) sees a constant
    varying along its innermost axis, so the node's order, which the import does not know."""
    shapes = [constant, dims] if k == 1 else [dims, constant]
    common = min(len(s) for s in shapes)
    scalar = [len(s) == 0 for s in shapes]
    for j in range(1, common + 1):
        sizes = [s[-j] for s in shapes]
        if max(sizes) > 1 or j == common:  # the innermost dim either input spans
            scalar = [size <= 1 for size in sizes]
            break
    return 1 if scalar[0] else 0


TABLE = {  # after glc/onnx/layers.py's in glc/onnx/translate.py: this QLinearAdd replaces that one
    "QLinearMul": _qlinear,
    "QLinearAdd": _qlinear,
}
