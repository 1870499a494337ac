"""Translators of the layers, one per ONNX op (QDQ and QOperator spellings share them): each
writes the node's program (int8 products summed in int32, an int32 bias, ``requantize-linear``;
``access-pad-value`` pads with the input's zero point, which dequantizes to 0) and binds its
output. The arithmetic is onnxruntime's (docs/onnx.md)."""

from __future__ import annotations

import numpy as np

from glc.ir.quantized import INT8
from glc.onnx import movement
from glc.onnx.fusions import float_outputs, fused_offset
from glc.onnx.graph import attributes
from glc.onnx.movement import move
from glc.onnx.program import Constant, Dequantized, Float, Quantized, broadcast, literal, shape
from glc.onnx.quant import carried, multiplier, pool_multiplier

# --- the quantized layers ---------------------------------------------------------------------

WIDE_CHANNELS = 16  # input channels from which a conv's filters are laid out HWIO (_filters)


def requantize_sum(t, hint, acc, dims, bias, m, zero) -> str:
    """``requantize-linear`` of ``acc`` (dims ``dims``) plus the int32 ``bias`` (broadcast)."""
    b = t.b.tensor(hint + "_bias", bias.astype(np.int32))
    mm = t.b.tensor(hint + "_m", m.astype(np.float32))
    summed = f"(compute elementwise-add (access-pair {acc} {broadcast(b, dims)}))"
    return t.b.define(hint, f"(requantize-linear {summed} {broadcast(mm, dims)} {zero})")


def _conv_attrs(t, node, attrs, w_dims):
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise t.error(node, "attribute auto_pad is not supported (give pads)")
    if len(w_dims) != 4:
        raise t.error(node, "only 1-d and 2-d convolutions are supported")
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    return pads, strides, dilations, int(attrs.get("group", 1))


def qconv(t, node, attrs, x: Quantized, w: np.ndarray, w_scale, bias, y_scale, y_zero) -> None:
    """A quantized 2-d convolution (NCHW, OIHW weights, pads, strides, dilations, groups); a
    1-d one (NCL, OIL) as the 2-d convolution of a one-pixel-high image."""
    if w.ndim == 3 and len(x.dims) == 3:
        _qconv1d(t, node, attrs, x, w, w_scale, bias, y_scale, y_zero)
        return
    pads, strides, dilations, groups = _conv_attrs(t, node, attrs, w.shape)
    hint = node.output[0]
    w = dilated(w, dilations)
    o, cg, kh, kw = w.shape
    n, c, h, wd = x.dims
    if c != cg * groups or o % groups:
        raise t.error(node, f"attribute group={groups} does not divide the channels")
    oh = (h + pads[0] + pads[2] - kh) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - kw) // strides[1] + 1
    dims = (n, o, oh, ow)
    padded = (f"(access-pad-value (access-pad-value (access-tensor {x.name}) {x.zero} 2 "
              f"{pads[0]} {pads[2]}) {x.zero} 3 {pads[1]} {pads[3]})")
    padded = t.b.define(hint + "_pad", padded)
    og = o // groups
    # The padding holds the zero point, so the sum is sum((x - zx) * w) + zx * sum(w):
    # the bias takes the constant term off (w's zero point is 0).
    correction = x.zero * w.reshape(o, -1).astype(np.int64).sum(axis=1)
    b = (bias if bias is not None else np.zeros(o, np.int64)).astype(np.int64) - correction
    m = np.broadcast_to(multiplier(x.scale, w_scale, y_scale), (o,))
    if cg == 1 and og == 1 and groups > 1:
        acc = depthwise_sum(t, hint, padded, w, (kh, kw), strides, dims)
        name = requantize_sum(t, hint, acc, dims, b.reshape(1, o, 1, 1), m.reshape(1, o, 1, 1),
                              y_zero)
    else:
        # Each group's sum is requantized on its own (the requantization is per channel), so
        # each is a kernel with its conversion in its STOREs, and the groups' int8 results are
        # placed side by side (a Concat).
        parts = []
        for g in range(groups):
            gh = f"{hint}_g{g}" if groups > 1 else hint
            data = padded if groups == 1 else (f"(access-slice (access-tensor {padded}) 1 "
                                              f"{g * cg} {(g + 1) * cg})")
            acc = conv_sum(t, gh, w[g * og:(g + 1) * og], data, strides)
            channels = slice(g * og, (g + 1) * og)
            parts.append(requantize_sum(t, gh, acc, (n, og, oh, ow),
                                        b[channels].reshape(1, og, 1, 1),
                                        m[channels].reshape(1, og, 1, 1), y_zero))
        name = parts[0]
        if groups > 1:
            expr = f"(access-tensor {parts[0]})"
            for part in parts[1:]:
                expr = f"(access-concatenate {expr} (access-tensor {part}) 1)"
            name = t.b.define(hint, expr)
    t.bind(node, Quantized(name, dims, y_scale, y_zero))


def dilated(w: np.ndarray, dilations) -> np.ndarray:
    """The OIHW filters ``w`` with ``dilations``: the kernel with zero taps between."""
    if list(dilations) == [1, 1]:
        return w
    taps = np.zeros(w.shape[:2] + tuple((k - 1) * d + 1 for k, d in
                                        zip(w.shape[2:], dilations, strict=True)), w.dtype)
    taps[:, :, ::dilations[0], ::dilations[1]] = w
    return taps


def conv_sum(t, hint: str, w: np.ndarray, data: str, strides) -> str:
    """The int32 sums of the OIHW filters ``w`` over the windows of the (padded) NCHW image
    ``data`` (an access expression or a define's name): one product on the array."""
    _, c, kh, kw = w.shape
    filters = _filters(t, hint + "_w", w)
    return t.b.define(hint + "_acc", (
        f"(access-transpose (compute dot-product (access-cartesian-product "
        f"(access {filters} 1) (access (access-squeeze (access-windows "
        f"(access {data} 1) (shape {c} {kh} {kw}) (shape 1 {strides[0]} {strides[1]})) 1)"
        f" 3))) (list 1 0 2 3))"))


def _qconv1d(t, node, attrs, x: Quantized, w: np.ndarray, w_scale, bias, y_scale,
             y_zero) -> None:
    """Conv1d (a keyword spotter's): the signal an image one pixel high, each filter one tap
    high, the 1-d pads, strides and dilations along the width — the same sums, in the same
    order, so the same requantized result."""
    n, c, length = x.dims
    image = t.b.define(node.output[0] + "_2d",
                       f"(access-reshape (access-tensor {x.name}) "
                       f"(access-shape {shape((n, c, 1, length))} (shape)))")
    lo, hi = attrs.get("pads", [0, 0])
    flat = {**attrs, "pads": [0, lo, 0, hi], "strides": [1, *attrs.get("strides", [1])],
            "dilations": [1, *attrs.get("dilations", [1])]}
    qconv(t, node, flat, Quantized(image, (n, c, 1, length), x.scale, x.zero),
          w[:, :, None, :], w_scale, bias, y_scale, y_zero)
    y = t.values[node.output[0]]
    dims = (y.dims[0], y.dims[1], y.dims[3])
    name = t.b.define(node.output[0] + "_1d", f"(access-reshape (access-tensor {y.name}) "
                                              f"(access-shape {shape(dims)} (shape)))")
    t.bind(node, Quantized(name, dims, y.scale, y.zero))


def _filters(t, hint: str, w: np.ndarray) -> str:
    """The OIHW filters ``w`` as an access expression. The weights are the model's constants,
    so the import lays them out for the accelerator: a window of more than one tap over at
    least WIDE_CHANNELS channels is written HWIO and read through a transpose back to OIHW.
    The kernel then walks its K (channels × taps) with the channels innermost in runs, and an
    NCHW image's K tiles hold 16 channels of one tap, not one channel's 9 taps (ResNet's NCHW
    3×3 convs at 14×14 and 7×7: 0.874 → 0.984 and 0.835 → 0.988 of their limit, docs/onnx.md).
    The rest stay OIHW: a 1×1 filter's K is the channels either way (its transposed weights
    were slower: MobileNet's 24→144 0.747 → 0.662), and a few channels fill no K tile of one
    tap (a 3×3 conv of 5 channels at 6×5: 492 → 549 cycles with its image repacked)."""
    if w.shape[2] * w.shape[3] == 1 or w.shape[1] < WIDE_CHANNELS:
        return f"(access-tensor {t.b.tensor(hint, w)})"
    hwio = t.b.tensor(hint, w.transpose(2, 3, 1, 0))
    return f"(access-transpose (access-tensor {hwio}) (list 3 2 0 1))"


def depthwise_sum(t, hint, padded, w, kernel, strides, dims) -> str:
    """One filter per channel: windows paired with the channel's taps, summed."""
    n, o, oh, ow = dims
    kh, kw = kernel
    taps = t.b.tensor(hint + "_w", w.reshape(1, o, 1, 1, kh, kw))
    windows = (f"(access-windows (access (access-tensor {padded}) 2) (shape {kh} {kw}) "
               f"(shape {strides[0]} {strides[1]}))")
    filters = (f"(access (access-broadcast (access-tensor {taps}) (access-shape "
               f"{shape((n, o, oh, ow, kh, kw))} (shape))) 4)")
    return t.b.define(hint + "_acc", f"(compute dot-product (access-pair {windows} {filters}))")


def _conv(t, node, attrs) -> None:
    out = t.requantized_output(node)
    if out is None:
        raise t.error(node, "a float convolution is not supported (its output must be "
                            "quantized by a QuantizeLinear)")
    x = t.quantized(node, 0)
    w, w_scale = t.weights(node, 1)
    bias = _bias(t, node, 2)
    qconv(t, node, attrs, x, w, w_scale, bias, *out)
    bind_absorbed(t, node)


def _bias(t, node, index):
    v = t.value(node, index)
    if v is None:
        return None
    if not isinstance(v, Constant) or v.quantized is None or v.quantized[0].dtype != np.int32:
        raise t.error(node, f"input {index + 1} must be an int32 quantized bias")
    return v.quantized[0]


def bind_absorbed(t, node) -> None:
    q = t.graph.only_consumer(node.output[0])
    t.values[q.output[0]] = t.values[node.output[0]]


def _qlinear_conv(t, node, attrs) -> None:
    x = t.quantized(node, 0)
    x_scale, x_zero = t.qparams(node, 1, 2)
    w, w_scale = t.qlinear_weights(node, 3)
    y_scale, y_zero = t.qparams(node, 6, 7)
    bias = t.constant(node, 8) if len(node.input) > 8 and node.input[8] else None
    qconv(t, node, attrs, Quantized(x.name, x.dims, x_scale, x_zero), w, w_scale, bias,
          y_scale, y_zero)


def qdense(t, node, x: Quantized, w_ko: np.ndarray, w_scale, bias, y_scale, y_zero) -> None:
    """``x @ W + b`` requantized; ``w_ko`` is (K, O) int8, x is (M, K) or (…, M, K): leading
    dims (a batch of token rows) are rows too, the weight broadcast over them (one product,
    ``((…, M),(K))`` by ``((O),(K))``, whose batch the rewrites flatten into its rows)."""
    hint = node.output[0]
    if len(x.dims) < 2:
        raise t.error(node, f"input 1 must be a matrix, got dims {x.dims}")
    k, o = w_ko.shape
    wt = t.b.tensor(hint + "_w", np.ascontiguousarray(w_ko.T))
    acc = t.b.define(hint + "_acc", f"(compute dot-product (access-cartesian-product "
                                    f"(access (access-tensor {x.name}) {len(x.dims) - 1}) "
                                    f"(access (access-tensor {wt}) 1)))")
    dims = x.dims[:-1] + (o,)
    row = (1,) * (len(dims) - 1) + (o,)
    correction = x.zero * w_ko.astype(np.int64).sum(axis=0)
    b = (bias if bias is not None else np.zeros(o, np.int64)).astype(np.int64) - correction
    m = np.broadcast_to(multiplier(x.scale, w_scale, y_scale), (o,))
    name = requantize_sum(t, hint, acc, dims, b.reshape(row), m.reshape(row), y_zero)
    t.bind(node, Quantized(name, dims, y_scale, y_zero))


def _gemm(t, node, attrs) -> None:
    if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0 or attrs.get("transA", 0):
        raise t.error(node, "attributes alpha, beta and transA must be 1, 1 and 0")
    out = t.requantized_output(node)
    if out is None:
        raise t.error(node, "a float Gemm is not supported (its output must be quantized)")
    w, w_scale = t.weights(node, 1)
    if attrs.get("transB", 0):
        w = w.T
        w_scale = w_scale
    qdense(t, node, t.quantized(node, 0), w, w_scale, _bias(t, node, 2), *out)
    bind_absorbed(t, node)


def _qgemm(t, node, attrs) -> None:
    """com.microsoft QGemm (onnxruntime's QOperator Gemm): A, scale, zero, B, scale, zero,
    int32 C, y scale, y zero."""
    if attrs.get("alpha", 1.0) != 1.0 or attrs.get("transA", 0) or len(node.input) < 9:
        raise t.error(node, "attributes alpha and transA must be 1 and 0, with an int8 output")
    x = t.quantized(node, 0)
    x = Quantized(x.name, x.dims, *t.qparams(node, 1, 2))
    w, w_scale = t.qlinear_weights(node, 3)
    if attrs.get("transB", 0):
        w = w.T
    bias = t.constant(node, 6) if node.input[6] else None
    qdense(t, node, x, w, w_scale, bias, *t.qparams(node, 7, 8))


def qglobal_pool(t, node, x: Quantized, y_scale, y_zero) -> None:
    """The mean over the spatial dims (H×W; L of a 1-d map): the int32 sum less zx·count,
    requantized by x_scale / (y_scale·count)."""
    hint = node.output[0]
    if len(x.dims) < 3:
        raise t.error(node, f"input of dims {x.dims}: a global pool needs (N, C, spatial...)")
    (n, c), spatial = x.dims[:2], x.dims[2:]
    count = int(np.prod(spatial))
    acc = t.b.define(hint + "_acc", f"(compute reduce-sum (access (access-tensor {x.name}) 2))")
    m = pool_multiplier(x.scale, y_scale, count)
    out = requantize_sum(t, hint + "_q", acc, (n, c), np.full((1, 1), -x.zero * count),
                      np.full((1, 1), m, np.float32), y_zero)
    dims = (n, c) + (1,) * len(spatial)
    name = t.b.define(hint, f"(access-reshape (access-tensor {out}) (access-shape "
                            f"{shape(dims)} (shape)))")
    t.bind(node, Quantized(name, dims, y_scale, y_zero))


def _global_average_pool(t, node, attrs) -> None:
    out = t.requantized_output(node)
    if out is None:
        raise t.error(node, "a float GlobalAveragePool is not supported (its output must be "
                            "quantized)")
    qglobal_pool(t, node, t.quantized(node, 0), *out)
    bind_absorbed(t, node)


def _qlinear_global_average_pool(t, node, attrs) -> None:
    if attrs.get("channels_last", 0):
        raise t.error(node, "attribute channels_last=1 is not supported")
    x = t.quantized(node, 0)
    x_scale, x_zero = t.qparams(node, 1, 2)
    qglobal_pool(t, node, Quantized(x.name, x.dims, x_scale, x_zero), *t.qparams(node, 3, 4))


# --- float steps between DequantizeLinear and QuantizeLinear ---------------------------------

def _add(t, node, attrs) -> None:
    """Add/Sum: float32 sums of the dequantized operands (the QuantizeLinear after rounds them),
    in order; but an Add of two dequantized activations of the type its one QuantizeLinear
    reader has is onnxruntime's fused QLinearAdd, which computes otherwise (``add-linear``),
    where onnxruntime fuses it (glc/onnx/fusions.py)."""
    if len(node.input) < 2:
        raise t.error(node, "needs at least two inputs")
    values = [t.value(node, i) for i in range(len(node.input))]
    relu = redundant_relu(t, node)
    last = relu or node
    reader = t.graph.only_consumer(last.output[0])
    if node.op_type == "Add" and all(isinstance(v, Dequantized) for v in values) and \
            reader is not None and reader.op_type == "QuantizeLinear" and \
            len(reader.input) > 2 and {v.offset for v in values} == {t.offset(reader, 2)} and \
            node.output[0] not in float_outputs(t, node):
        # onnxruntime's x86 optimizer turns a QDQ model's int8 QuantizeLinear/DequantizeLinear
        # pairs into uint8 (QDQS8ToU8Transformer) before fusing, so the kernel adds uint8
        # values (measured: tests/onnx/test_import_add.py), but for pairs it leaves int8 (a Q
        # read by several nodes), as for the pools (glc/onnx/fusions.py).
        out = t.requantized_output(last)
        _linear_add(t, node, *(v.of for v in values), *out, fused_offset(t, node, reader))
        if relu is not None:
            t.absorbed.add(id(relu))
            t.values[relu.output[0]] = t.values[node.output[0]]
        bind_absorbed(t, last)
        return
    operands = [t.as_float(node, i) for i in range(len(node.input))]
    dims = operands[0].dims
    if any(f.dims != dims for f in operands):
        raise t.error(node, "broadcasting operands are not supported")
    expr = f"(access-tensor {operands[0].name})"
    for f in operands[1:]:
        expr = f"(compute elementwise-add (access-pair {expr} (access-tensor {f.name})))"
    t.bind(node, Float(t.b.define(node.output[0], expr), dims))


def redundant_relu(t, node):
    """The Relu (or Clip(0, ∞)) that alone reads ``node`` when a QuantizeLinear whose zero point
    is its type's least value alone reads it: quantizing clamps there anyway, so onnxruntime
    drops it (its ReluQuantFusion) and fuses a QDQ Add under it into QLinearAdd (measured on
    every pair: tests/onnx/test_import_add.py). Else None."""
    relu = t.graph.only_consumer(node.output[0])
    if relu is None or relu.op_type not in ("Relu", "Clip") or \
            (relu.op_type == "Clip" and not clips_at_zero(t, relu)):
        return None
    q = t.graph.only_consumer(relu.output[0])
    if q is None or q.op_type != "QuantizeLinear" or len(q.input) < 3 or not q.input[2]:
        return None
    return relu if t.qparams(q, 1, 2)[1] == INT8[0] else None


def clips_at_zero(t, node) -> bool:
    """A Clip that is a ReLU: min 0 and no (or an infinite) max."""
    attrs = attributes(node)
    lo, hi = attrs.get("min"), attrs.get("max")
    lo = t.constant(node, 1) if len(node.input) > 1 and node.input[1] else lo
    hi = t.constant(node, 2) if len(node.input) > 2 and node.input[2] else hi
    return lo is not None and float(lo) == 0.0 and (hi is None or not np.isfinite(hi))


def _qlinear_add(t, node, attrs) -> None:
    a = t.quantized(node, 0)
    b = t.quantized(node, 3)
    a = Quantized(a.name, a.dims, *t.qparams(node, 1, 2))
    b = Quantized(b.name, b.dims, *t.qparams(node, 4, 5))
    _linear_add(t, node, a, b, *t.qparams(node, 6, 7), t.offset(node, 2))


def _linear_add(t, node, a: Quantized, b: Quantized, y_scale: float, y_zero: int,
                offset: int) -> None:
    """onnxruntime's QLinearAdd of two int8 activations (docs/language.md, ``add-linear``)."""
    if a.dims != b.dims:
        raise t.error(node, "broadcasting operands are not supported")
    name = t.b.define(node.output[0], f"(add-linear (access-tensor {a.name}) (access-tensor "
                                      f"{b.name}) {literal(a.scale)} {a.zero} {literal(b.scale)}"
                                      f" {b.zero} {literal(y_scale)} {y_zero} {offset})")
    t.bind(node, Quantized(name, a.dims, y_scale, y_zero))


def _relu(t, node, attrs) -> None:
    """A Relu, or a Clip that is one (any other Clip: glc/onnx/floats.py)."""
    f = t.as_float(node, 0)
    t.bind(node, Float(t.b.define(node.output[0], f"(compute relu (access-tensor {f.name}))"),
                       f.dims))


def _softmax(t, node, attrs) -> None:
    f = t.as_float(node, 0)
    axis = attrs.get("axis", -1) % len(f.dims)
    if axis != len(f.dims) - 1:
        raise t.error(node, "attribute axis: only the last axis is supported")
    t.host_step(node)
    name = t.b.define(node.output[0], f"(compute softmax (access (access-tensor {f.name}) "
                                      f"{len(f.dims) - 1}))")
    t.bind(node, Float(name, f.dims))


def _max_pool(t, node, attrs) -> None:
    kh, kw = attrs["kernel_shape"]
    sh, sw = attrs.get("strides", [1, 1])
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    if list(attrs.get("dilations", [1, 1])) != [1, 1] or attrs.get("storage_order", 0):
        raise t.error(node, "attributes dilations and storage_order are not supported")

    def make(expr, dims):
        n, c, h, w = dims
        extra = [0, 0]
        if attrs.get("ceil_mode", 0):  # more windows: pad the far side with the minimum
            for i, (size, k, s, lo, hi) in enumerate(((h, kh, sh, pads[0], pads[2]),
                                                      (w, kw, sw, pads[1], pads[3]))):
                out = -(-(size + lo + hi - k) // s) + 1
                if (out - 1) * s >= size + lo:
                    out -= 1
                extra[i] = (out - 1) * s + k - (size + lo + hi)
        padded = (f"(access-pad (access-pad {expr} min-padding 2 {pads[0]} "
                  f"{pads[2] + max(extra[0], 0)}) min-padding 3 {pads[1]} "
                  f"{pads[3] + max(extra[1], 0)})")
        oh = (h + pads[0] + pads[2] + max(extra[0], 0) - kh) // sh + 1
        ow = (w + pads[1] + pads[3] + max(extra[1], 0) - kw) // sw + 1
        return (f"(compute reduce-max (access-windows (access {padded} 2) (shape {kh} {kw}) "
                f"(shape {sh} {sw})))", (n, c, oh, ow))
    move(t, node, make)


def _concat(t, node, attrs) -> None:
    values = [t.value(node, i) for i in range(len(node.input))]
    axis = attrs["axis"]
    bases = [v.of if isinstance(v, Dequantized) else v for v in values]
    same = all(isinstance(b, Quantized) for b in bases) and len(
        {(b.scale, b.zero) for b in bases}) == 1
    if not same and all(isinstance(v, Dequantized) for v in values) and \
            (out := t.requantized_output(node)) is not None:
        # QDQ: DequantizeLinear → Concat → one QuantizeLinear. Quantizing is elementwise, so
        # the concatenation of each part quantized is the same tensor: the parts requantized
        # to the output's parameters (each a VECTOR `lin`, glc/lower/fusion.py), concatenated
        # as int8 on the accelerator rather than in float32 on the host (SqueezeNet's fires).
        _requantized_concat(t, node, bases, *out, axis)
        bind_absorbed(t, node)
        return
    # A constant among activations (a ViT's class token) is concatenated in float32 (as_float).
    parts = bases if same else [t.as_float(node, i) for i in range(len(values))]
    axis %= len(parts[0].dims)
    expr = f"(access-tensor {parts[0].name})"
    for p in parts[1:]:
        expr = f"(access-concatenate {expr} (access-tensor {p.name}) {axis})"
    dims = list(parts[0].dims)
    dims[axis] = sum(p.dims[axis] for p in parts)
    name = t.b.define(node.output[0], expr)
    if not same:
        t.bind(node, Float(name, tuple(dims)))
        return
    q = Quantized(name, tuple(dims), bases[0].scale, bases[0].zero)
    t.bind(node, Dequantized(q, values[0].offset) if isinstance(values[0], Dequantized) else q)


def _qlinear_concat(t, node, attrs) -> None:
    """com.microsoft QLinearConcat: y scale, y zero, then (x, scale, zero) per input."""
    y_scale, y_zero = t.qparams(node, 0, 1)
    inputs = []
    for i in range(2, len(node.input), 3):
        v = t.value(node, i)
        # A constant part (a ViT's class token): its codes a tensor of the program.
        x = Quantized(t.b.tensor(node.input[i], carried(v.value)), v.value.shape, 0.0, 0) \
            if isinstance(v, Constant) else t.quantized(node, i)
        inputs.append(Quantized(x.name, x.dims, *t.qparams(node, i + 1, i + 2)))
    _requantized_concat(t, node, inputs, y_scale, y_zero, attrs["axis"])


def _requantized_concat(t, node, inputs: list[Quantized], y_scale: float, y_zero: int,
                        axis: int) -> None:
    """The int8 concatenation of ``inputs``, each of other parameters than (``y_scale``,
    ``y_zero``) requantized as QuantizeLinear(DequantizeLinear(x)) computes, bound to
    ``node``'s output."""
    parts = []
    for x in inputs:
        if (x.scale, x.zero) == (y_scale, y_zero):
            parts.append(x)
            continue
        name = t.b.define(f"{x.name}_rq", f"(quantize-linear (dequantize-linear (access-tensor "
                                          f"{x.name}) {literal(x.scale)} {x.zero}) "
                                          f"{literal(y_scale)} {y_zero})")
        parts.append(Quantized(name, x.dims, y_scale, y_zero))
    axis %= len(parts[0].dims)
    expr = f"(access-tensor {parts[0].name})"
    for p in parts[1:]:
        expr = f"(access-concatenate {expr} (access-tensor {p.name}) {axis})"
    dims = list(parts[0].dims)
    dims[axis] = sum(p.dims[axis] for p in parts)
    t.bind(node, Quantized(t.b.define(node.output[0], expr), tuple(dims), y_scale, y_zero))


TABLE = {
    "Conv": _conv,
    "QLinearConv": _qlinear_conv,
    "Gemm": _gemm,
    "QGemm": _qgemm,
    "GlobalAveragePool": _global_average_pool,
    "QLinearGlobalAveragePool": _qlinear_global_average_pool,
    "Add": _add,
    "Sum": _add,
    "QLinearAdd": _qlinear_add,
    "Relu": _relu,
    "Clip": _relu,
    "Softmax": _softmax,
    "MaxPool": _max_pool,
    "Reshape": movement.reshape,
    "Flatten": movement.flatten,
    "Transpose": movement.transpose,
    "Slice": movement.slice_,
    "Split": movement.split,
    "Concat": _concat,
    "QLinearConcat": _qlinear_concat,
    "Dropout": movement.identity,
    "Identity": movement.identity,
}
