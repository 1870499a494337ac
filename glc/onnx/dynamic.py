"""Dynamically quantized models (onnxruntime's ``quantize_dynamic``): DynamicQuantizeLinear,
MatMulInteger and ConvInteger, and the Cast of their int32 sums to float32 — the rest of the
rescale (Mul by the scales' product, Add of the bias) is the float Mul and Add of
glc/onnx/floats.py.

DynamicQuantizeLinear's scale and zero point come from its input's own min and max at run time
(``dynamic-quantize``, ``dynamic-scale``, ``dynamic-zero-point``, docs/language.md), host steps.
The product runs on the array on the codes as the program carries them (u − 128) with int8
weights of zero point 0, its padding the carried code 0 (u = 128), so its sums are
``S = Σ (u − 128)·w`` over the window's real taps; onnxruntime's are
``Σ (u − zx)·w = S + (128 − zx)·R``, R the sum of each filter's weights over the taps that meet
the image (a constant per output channel and pixel). zx is known only at run time, so that
term is an int32 host step, and so is the float rescale after it: onnxruntime's (fused
DynamicQuantizeMatMul or not) is ``float32(sum) · (sx · sw)``, then ``+ bias``, each rounded
to float32 (measured; a STORE's one rounding, ``requantize-linear``, is another function)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from glc.onnx.layers import conv_sum, depthwise_sum, dilated
from glc.onnx.program import Float, broadcast, shape


@dataclass(frozen=True)
class Codes:
    """A DynamicQuantizeLinear's uint8 codes (carried as int8) and the program tensors of its
    run-time zero point (int32, dims ())."""

    name: str
    dims: tuple[int, ...]
    zero: str


@dataclass(frozen=True)
class Integer:
    """An int32 program tensor: a zero point, or a product's sums."""

    name: str
    dims: tuple[int, ...]


def _dynamic_quantize(t, node, attrs) -> None:
    x = t.as_float(node, 0)
    source = f"(access-tensor {x.name})"
    hint = node.output[0]
    t.host_step(node)
    scale = t.b.define(hint + "_scale", f"(dynamic-scale {source})")
    zero = t.b.define(hint + "_zero", f"(dynamic-zero-point {source})")
    codes = t.b.define(hint, f"(dynamic-quantize {source})")
    outputs = [Codes(codes, x.dims, zero), Float(scale, ()), Integer(zero, ())]
    for name, value in zip(node.output, outputs, strict=False):
        if name:
            t.values[name] = value


def _operands(t, node) -> tuple[Codes, np.ndarray]:
    """Input 1 as a DynamicQuantizeLinear's codes read with its own zero point (input 3), and
    input 2 as int8 weights of zero point 0 (input 4)."""
    x = t.value(node, 0)
    if not isinstance(x, Codes):
        raise t.error(node, "input 1 must be a DynamicQuantizeLinear's codes")
    zero = t.value(node, 2)
    if not isinstance(zero, Integer) or zero.name != x.zero:
        raise t.error(node, "input 3 must be the zero point of the DynamicQuantizeLinear of "
                            "input 1")
    w = t.constant(node, 1)
    w_zero = t.constant(node, 3) if len(node.input) > 3 and node.input[3] else np.zeros((), w.dtype)
    return x, t.int8_weights(node, w, np.float32(1), w_zero)[0]


def _rescaled(t, node, s: str, reach: np.ndarray, x: Codes, dims: tuple[int, ...]) -> Integer:
    """``s + (128 − zx)·reach`` (int32, dims ``dims``): ``128·reach`` is a constant,
    ``zx·reach`` the host step."""
    hint = node.output[0]
    fixed = t.b.tensor(hint + "_fixed", (128 * reach).astype(np.int32))
    minus = t.b.tensor(hint + "_reach", (-reach).astype(np.int32))
    lifted = (f"(access-broadcast (access-reshape (access-tensor {x.zero}) (access-shape "
              f"{shape((1,) * len(dims))} (shape))) (access-shape {shape(dims)} (shape)))")
    summed = f"(compute elementwise-add (access-pair (access-tensor {s}) {broadcast(fixed, dims)}))"
    t.host_step(node)
    name = t.b.define(hint, f"(compute elementwise-add (access-pair {summed} (compute "
                            f"elementwise-mul (access-pair {lifted} {broadcast(minus, dims)}))))")
    return Integer(name, dims)


def _matmul_integer(t, node, attrs) -> None:
    """A matrix, or a batch of them over leading dims (a transformer's (batch, tokens,
    hidden)), times a constant matrix: one product whose rows are every leading index, as
    glc/onnx/attention.py writes a MatMul by a matrix."""
    x, w = _operands(t, node)
    if len(x.dims) < 2 or w.ndim != 2 or x.dims[-1] != w.shape[0]:
        raise t.error(node, f"only a matrix (or a batch of them) times a constant matrix is "
                            f"supported, got dims {x.dims} and {w.shape}")
    hint = node.output[0]
    rows = len(x.dims) - 1
    wt = t.b.tensor(hint + "_w", np.ascontiguousarray(w.T))
    s = t.b.define(hint + "_acc", f"(compute dot-product (access-cartesian-product "
                                  f"(access (access-tensor {x.name}) {rows}) "
                                  f"(access (access-tensor {wt}) 1)))")
    reach = w.astype(np.int64).sum(axis=0).reshape((1,) * rows + (-1,))
    t.bind(node, _rescaled(t, node, s, reach, x, x.dims[:-1] + (w.shape[1],)))


def _conv_integer(t, node, attrs) -> None:
    """A 2-d ConvInteger (pads, strides, dilations as zero taps, groups; depthwise as a
    windowed pair), or a 1-d one (a keyword spotter's Conv1d) as the 2-d convolution of a
    one-pixel-high signal, as the static import does (glc/onnx/layers.py)."""
    x, w = _operands(t, node)
    if w.ndim == 3 and len(x.dims) == 3:
        n, c, length = x.dims
        image = t.b.define(node.output[0] + "_2d", f"(access-reshape (access-tensor {x.name}) "
                                                   f"(access-shape {shape((n, c, 1, length))} "
                                                   "(shape)))")
        lo, hi = attrs.get("pads", [0, 0])
        flat = {**attrs, "pads": [0, lo, 0, hi], "strides": [1, *attrs.get("strides", [1])],
                "dilations": [1, *attrs.get("dilations", [1])]}
        y = _conv_integer_2d(t, node, flat, Codes(image, (n, c, 1, length), x.zero),
                             w[:, :, None, :])
        dims = (y.dims[0], y.dims[1], y.dims[3])
        t.bind(node, Integer(t.b.define(node.output[0] + "_1d", f"(access-reshape (access-tensor "
                                                                f"{y.name}) (access-shape "
                                                                f"{shape(dims)} (shape)))"),
                             dims))
        return
    if w.ndim != 4 or len(x.dims) != 4:
        raise t.error(node, "only 1-d and 2-d convolutions are supported")
    t.bind(node, _conv_integer_2d(t, node, attrs, x, w))


def _conv_integer_2d(t, node, attrs, x: Codes, w: np.ndarray) -> Integer:
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise t.error(node, "attribute auto_pad is not supported (give pads)")
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    strides = list(attrs.get("strides", [1, 1]))
    dilations = list(attrs.get("dilations", [1, 1]))
    if len(pads) != 4 or len(strides) != 2 or len(dilations) != 2 or min(strides) < 1 or \
            min(pads) < 0 or min(dilations) < 1:
        raise t.error(node, f"attributes pads {pads}, strides {strides} and dilations "
                            f"{dilations}: 4 pads of at least 0, 2 strides and 2 dilations of "
                            "at least 1 expected")
    groups = int(attrs.get("group", 1))
    w = dilated(w, dilations)
    n, c, h, wd = x.dims
    o, cg, kh, kw = w.shape
    if groups < 1 or c != cg * groups or o % groups:
        raise t.error(node, f"weights of dims {w.shape} in {groups} groups for an input of {c} "
                            "channels")
    oh = (h + pads[0] + pads[2] - kh) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - kw) // strides[1] + 1
    if oh < 1 or ow < 1:
        raise t.error(node, f"a {kh}×{kw} window does not fit the padded {h}×{wd} input")
    hint = node.output[0]
    padded = t.b.define(hint + "_pad", f"(access-pad-value (access-pad-value (access-tensor "
                                       f"{x.name}) 0 2 {pads[0]} {pads[2]}) 0 3 {pads[1]} "
                                       f"{pads[3]})")
    og = o // groups
    if groups > 1 and cg == 1 and og == 1:
        s = depthwise_sum(t, hint, padded, w, (kh, kw), strides, (n, o, oh, ow))
    else:  # a product per group, their sums side by side
        parts = [conv_sum(t, f"{hint}_g{g}" if groups > 1 else hint, w[g * og:(g + 1) * og],
                          padded if groups == 1 else
                          f"(access-slice (access-tensor {padded}) 1 {g * cg} {(g + 1) * cg})",
                          strides) for g in range(groups)]
        s = parts[0]
        if groups > 1:
            expr = f"(access-tensor {parts[0]})"
            for part in parts[1:]:
                expr = f"(access-concatenate {expr} (access-tensor {part}) 1)"
            s = t.b.define(hint + "_acc", expr)
    # R: each filter's weights summed over the taps inside the image, per output pixel (a
    # filter reads its group's channels only, so the sum over its own input channels).
    inside = np.pad(np.ones((h, wd), np.int64), ((pads[0], pads[2]), (pads[1], pads[3])))
    taps = w.astype(np.int64).sum(axis=1)  # (O, kh, kw)
    reach = np.zeros((o, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            seen = inside[i:i + (oh - 1) * strides[0] + 1:strides[0],
                          j:j + (ow - 1) * strides[1] + 1:strides[1]]
            reach += taps[:, i, j, None, None] * seen
    return _rescaled(t, node, s, reach[None], x, (n, o, oh, ow))


def _cast(t, node, attrs) -> None:
    x = t.value(node, 0)
    if not isinstance(x, Integer) or attrs.get("to") != 1:  # TensorProto.FLOAT
        raise t.error(node, "only a Cast of an integer product to float32 is supported")
    t.host_step(node)
    t.bind(node, Float(t.b.define(node.output[0], f"(cast-float (access-tensor {x.name}))"),
                       x.dims))


TABLE = {
    "DynamicQuantizeLinear": _dynamic_quantize,
    "MatMulInteger": _matmul_integer,
    "ConvInteger": _conv_integer,
    "Cast": _cast,
}
