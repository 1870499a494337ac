"""Float layers a quantized model keeps between a DequantizeLinear and a QuantizeLinear, written as
float32 host steps with onnxruntime's arithmetic: a standalone BatchNormalization (DenseNet's,
which no convolution precedes to fold it into), Mul and Add of an activation and a broadcast
constant (DenseNet's Caffe2-style scale and shift) that onnxruntime does not fuse into its integer
QLinearMul / QLinearAdd (glc/onnx/binary.py), LRN, a GlobalAveragePool of a float tensor, a
ReduceMean over the spatial axes and a Clip of a float tensor. Each is listed among the
import's host ops."""

from __future__ import annotations

import numpy as np

from glc.ir.types import fmt_dims
from glc.onnx import binary, kernels, layers
from glc.onnx.fusions import fused_node, pool_left_float
from glc.onnx.program import Constant, Float, broadcast, literal, shape


def _float_constant(t, node, index: int) -> np.ndarray:
    return np.asarray(t.constant(node, index), np.float32)


def _batch_norm(t, node, attrs) -> None:
    """Inference BatchNormalization as onnxruntime's kernel computes it: per channel
    ``s = scale / sqrt(var + eps)`` and ``b = B - mean · s`` (float32, here), then ``x · s + b``
    (float32, in the program)."""
    x = t.as_float(node, 0)
    scale, bias, mean, var = (_float_constant(t, node, i) for i in range(1, 5))
    eps = np.float32(attrs.get("epsilon", 1e-5))
    inv_std = np.float32(1) / np.sqrt(var + eps)
    s = (inv_std * scale).astype(np.float32)
    b = (bias - mean * s).astype(np.float32)
    c = x.dims[1]
    shape = (1, c) + (1,) * (len(x.dims) - 2)
    hint = node.output[0]
    sn = t.b.tensor(hint + "_scale", s.reshape(shape))
    bn = t.b.tensor(hint + "_shift", b.reshape(shape))
    scaled = (f"(compute elementwise-mul (access-pair (access-tensor {x.name}) "
              f"{broadcast(sn, x.dims)}))")
    t.host_step(node)
    name = t.b.define(hint, f"(compute elementwise-add (access-pair {scaled} "
                            f"{broadcast(bn, x.dims)}))")
    t.bind(node, Float(name, x.dims))


def _with_constant(t, node, compute: str) -> bool:
    """``x op c`` in float32 for an activation x and a constant c, both broadcast to one dims
    as numpy does (a dynamic quantization's one-value scale times per-channel weight scales),
    one rounding per element, as onnxruntime's elementwise kernels; False if neither input is
    a constant."""
    values = [t.value(node, i) for i in range(len(node.input))]
    constants = [i for i, v in enumerate(values) if isinstance(v, Constant)]
    if len(values) != 2 or len(constants) != 1:
        return False
    x = t.as_float(node, 1 - constants[0])
    c = np.asarray(values[constants[0]].value, np.float32)
    try:
        dims = tuple(np.broadcast_shapes(c.shape, x.dims))
    except ValueError:
        raise t.error(node, f"a constant of dims {c.shape} does not broadcast with an "
                            f"activation of dims {x.dims}") from None
    c = c.reshape((1,) * (len(dims) - c.ndim) + c.shape)
    name = t.b.tensor(node.output[0] + "_c", c)
    operands = [f"(access-tensor {x.name})" if x.dims == dims else _broadcast(x, dims),
                broadcast(name, dims)]
    if constants[0] == 0:  # keep the operands' order: float addition and product commute
        operands.reverse()
    t.host_step(node)
    t.bind(node, Float(t.b.define(node.output[0],
                                  f"(compute {compute} (access-pair {' '.join(operands)}))"),
                       dims))
    return True


def _mul(t, node, attrs) -> None:
    """A Mul with a constant, or of two activations (onnxruntime's QLinearMul when it fuses
    it, glc/onnx/binary.py; else float32, one rounding per element)."""
    if binary.fused(t, node) or binary.fused_product(t, node) or \
            _with_constant(t, node, "elementwise-mul"):
        return
    _of_activations(t, node, "elementwise-mul")


def _div(t, node, attrs) -> None:
    """A float Div (a dynamically quantized GELU's x / √2): float32, one rounding."""
    if not _with_constant(t, node, "elementwise-div"):
        _of_activations(t, node, "elementwise-div")


def _unary(compute: str):
    """The importer of a float elementwise function onnxruntime computes by an MLAS kernel that
    ``(compute <compute>)`` reproduces bit for bit: a host step."""
    def translate(t, node, attrs) -> None:
        x = t.as_float(node, 0)
        t.host_step(node)
        t.bind(node, Float(t.b.define(node.output[0],
                                      f"(compute {compute} (access-tensor {x.name}))"), x.dims))
    return translate


# A float Erf outside a float island and a GELU onnxruntime fuses (glc/onnx/fused_gelu.py):
# MLAS's error function. A float Sigmoid (EfficientNet's SiLU and squeeze-excitation gate
# between dynamic products): MLAS's logistic, as onnxruntime's Sigmoid kernel and the QuickGelu
# it fuses a SiLU ``x·σ(x)`` into (the logistic, then the product: the Mul here). A float Tanh
# (a BERT pooler's, kept float by quantize_dynamic): MLAS's tanh.
_erf, _sigmoid, _tanh = _unary("erf"), _unary("sigmoid"), _unary("tanh")


def hard_sigmoid(t, node, x, alpha: float, beta: float) -> str:
    """``max(0, min(1, alpha·x + beta))`` of the float tensor ``x`` as onnxruntime's kernel
    computes it: its Eigen expression rounds the product and the sum apart (no fused
    multiply-add: one would differ on 43 540 of 7.35 M float32; tests/onnx/test_import_sigmoid.py
    checks these, bit for bit), then clips, a NaN staying NaN. Returns the expression's text."""
    expr = f"(access-tensor {x.name})"
    for key, value, kind in (("alpha", alpha, "elementwise-mul"), ("beta", beta, "elementwise-add"),
                             ("one", 1.0, "elementwise-min"), ("zero", 0.0, "elementwise-max")):
        c = t.b.tensor(f"{node.output[0]}_{key}",
                       np.asarray(value, np.float32).reshape((1,) * len(x.dims)))
        expr = f"(compute {kind} (access-pair {expr} {broadcast(c, x.dims)}))"
    return expr


def _hard_sigmoid(t, node, attrs) -> None:
    """A float HardSigmoid (MobileNetV3's squeeze-excitation gate): the kernel's product, sum
    and clip in float32."""
    x = t.as_float(node, 0)
    t.host_step(node)
    expr = hard_sigmoid(t, node, x, attrs.get("alpha", 0.2), attrs.get("beta", 0.5))
    t.bind(node, Float(t.b.define(node.output[0], expr), x.dims))


def _hard_swish(t, node, attrs) -> None:
    """A float HardSwish (opset 14, MobileNetV3's activation): onnxruntime has no kernel of
    its own and runs ONNX's function body, ``x · HardSigmoid(x)`` (alpha 1/6, beta ½), the
    product rounded once more."""
    x = t.as_float(node, 0)
    t.host_step(node)
    gate = t.b.define(node.output[0] + "_gate", hard_sigmoid(t, node, x, 1 / 6, 0.5))
    t.bind(node, Float(t.b.define(node.output[0], f"(compute elementwise-mul (access-pair "
                                                  f"(access-tensor {x.name}) "
                                                  f"(access-tensor {gate})))"), x.dims))


def _leaky_relu(t, node, attrs) -> None:
    """A float LeakyRelu (a dynamically quantized detector's activation): onnxruntime's
    ``x >= 0 ? x : alpha·x``, the product rounded once, written as ``max(x, alpha·x)``
    (``min`` where alpha > 1): for every x, ±0 and NaN included, the one it selects is the
    larger (smaller) of the two. Not for a negative alpha, whose alpha·(±0) is ∓0, which
    neither picks as the select does (measured: 34 of 7.35 M float32 differed)."""
    x = t.as_float(node, 0)
    alpha = np.float32(attrs.get("alpha", 0.01))
    if alpha < 0:
        raise t.error(node, f"a float LeakyRelu with a negative alpha ({alpha:g}) is not "
                            "supported")
    t.host_step(node)
    c = t.b.tensor(f"{node.output[0]}_alpha", np.full((1,) * len(x.dims), alpha, np.float32))
    scaled = (f"(compute elementwise-mul (access-pair (access-tensor {x.name}) "
              f"{broadcast(c, x.dims)}))")
    pick = "elementwise-max" if alpha <= 1 else "elementwise-min"
    t.bind(node, Float(t.b.define(node.output[0], f"(compute {pick} (access-pair "
                                                  f"(access-tensor {x.name}) {scaled}))"), x.dims))


def _of_activations(t, node, compute: str) -> None:
    """``x op y`` in float32 of two float tensors broadcast to one dims (numpy's rule), in the
    node's order (a float product commutes, rounded once)."""
    if len(node.input) != 2:
        raise t.error(node, "needs two inputs")
    x, y = t.as_float(node, 0), t.as_float(node, 1)
    try:
        dims = tuple(np.broadcast_shapes(x.dims, y.dims))
    except ValueError:
        raise t.error(node, f"operands of dims {x.dims} and {y.dims} do not broadcast") from None
    pair = " ".join(f"(access-tensor {f.name})" if f.dims == dims else _broadcast(f, dims)
                    for f in (x, y))
    t.host_step(node)
    t.bind(node, Float(t.b.define(node.output[0], f"(compute {compute} (access-pair {pair}))"),
                       dims))


def _broadcast(f: Float, dims: tuple[int, ...]) -> str:
    """``f`` broadcast to ``dims`` as numpy does: a lower rank takes leading dims of 1 first (a
    dynamic quantization's scale, one value, times a product's every element)."""
    if len(f.dims) == len(dims):
        return broadcast(f.name, dims)
    lifted = (1,) * (len(dims) - len(f.dims)) + tuple(f.dims)
    return (f"(access-broadcast (access-reshape (access-tensor {f.name}) (access-shape "
            f"{shape(lifted)} (shape))) (access-shape {shape(dims)} (shape)))")


def _add(t, node, attrs) -> None:
    """An Add with a constant here (onnxruntime's QLinearAdd when it fuses it,
    glc/onnx/binary.py); of activations, the residual sum (glc/onnx/layers.py)."""
    if not binary.fused(t, node) and not _with_constant(t, node, "elementwise-add"):
        layers.TABLE["Add"](t, node, attrs)


def _lrn(t, node, attrs) -> None:
    x = t.as_float(node, 0)
    if len(x.dims) != 4:
        raise t.error(node, f"only NCHW inputs are supported, got dims {x.dims}")
    t.host_step(node)
    name = t.b.define(node.output[0], f"(lrn (access-tensor {x.name}) {int(attrs['size'])} "
                                      f"{literal(attrs.get('alpha', 1e-4))} "
                                      f"{literal(attrs.get('beta', 0.75))} "
                                      f"{literal(attrs.get('bias', 1.0))})")
    t.bind(node, Float(name, x.dims))


def _layer_norm(t, node, attrs) -> None:
    x = t.as_float(node, 0)
    if attrs.get("axis", -1) % len(x.dims) != len(x.dims) - 1:
        raise t.error(node, "attribute axis: only the last axis is supported")
    if attrs.get("stash_type", 1) != 1 or len(node.output) > 1 and any(node.output[1:]):
        raise t.error(node, "the mean and inverse deviation outputs are not supported")
    n = x.dims[-1]
    scale = _float_constant(t, node, 1).reshape(n)
    bias = (_float_constant(t, node, 2).reshape(n) if len(node.input) > 2 and node.input[2]
            else np.zeros(n, np.float32))
    hint = node.output[0]
    sn, bn = t.b.tensor(hint + "_scale", scale), t.b.tensor(hint + "_shift", bias)
    t.host_step(node)
    # onnxruntime fuses a LayerNormalization after a residual Add into SkipLayerNormalization,
    # whose kernel sums otherwise (Welford); the Add is the same float32 sum either way, but a
    # bias it also absorbs would be added after the residual, not before.
    fused = fused_node(t, node)
    op = "layer-norm"
    if fused is not None and fused[0] == "SkipLayerNormalization":
        if len(fused[1]) > 4 and fused[1][4]:
            raise t.error(node, "onnxruntime fuses this LayerNormalization with the residual Add "
                                "and a bias Add before it (SkipLayerNormalization with a bias), "
                                "which adds them in another order: not supported")
        op = "layer-norm-welford"
    name = t.b.define(hint, f"({op} (access-tensor {x.name}) (access-tensor {sn}) "
                            f"(access-tensor {bn}) {literal(attrs.get('epsilon', 1e-5))})")
    t.bind(node, Float(name, x.dims))


def _global_average_pool(t, node, attrs) -> None:
    """The integer pool (glc/onnx/layers.py) where a QuantizeLinear alone reads the pool of a
    quantized activation and onnxruntime fuses them; else onnxruntime's float kernel on the
    host (a QOperator model with symmetric int8 activations keeps the Relu before its head
    float, and the pool after it; a QDQ pool between an int8 pair and a uint8 one stays float,
    glc/onnx/fusions.py),
    with the summation order of the kernel its optimizer chose (glc/onnx/kernels.py): 1 lane
    for its NCHWc pool, MLAS's 4 for the NCHW one. The float sum is the kernel's, not the
    int32 sum of the codes: a pool on the accelerator would round otherwise."""
    reader = t.graph.only_consumer(node.output[0])
    if not isinstance(t.value(node, 0), Float) and reader is not None and \
            reader.op_type == "QuantizeLinear" and not pool_left_float(t, node):
        layers.TABLE["GlobalAveragePool"](t, node, attrs)
        return
    x = t.as_float(node, 0)
    if len(x.dims) < 3:
        raise t.error(node, f"needs (N, C, spatial...) dims, got {shape(x.dims)}")
    lanes = 1 if node.output[0] in kernels.nchwc_nodes(t.graph.path) else 4
    t.host_step(node)
    name = t.b.define(node.output[0], f"(global-average-pool (access-tensor {x.name}) {lanes})")
    t.bind(node, Float(name, x.dims[:2] + (1,) * (len(x.dims) - 2)))


def _clip(t, node, attrs) -> None:
    """A Clip: a ReLU where it is one (glc/onnx/layers.py); else, on a float tensor (ReLU6
    between a dynamically quantized MobileNetV2's products, whose activations are float),
    onnxruntime's ``cwiseMax(lo).cwiseMin(hi)`` in float32 — exact, nothing rounds. A Clip
    between a DequantizeLinear and a QuantizeLinear is an island's (glc/onnx/islands.py)."""
    if layers.clips_at_zero(t, node):
        layers.TABLE["Clip"](t, node, attrs)
        return
    x = t.as_float(node, 0)
    expr = f"(access-tensor {x.name})"
    for index, key, kind in ((1, "min", "elementwise-max"), (2, "max", "elementwise-min")):
        bound = (t.constant(node, index) if len(node.input) > index and node.input[index]
                 else attrs.get(key))  # opset 11 made the bounds inputs
        if bound is None:
            continue
        c = t.b.tensor(f"{node.output[0]}_{key}",
                       np.asarray(bound, np.float32).reshape((1,) * len(x.dims)))
        expr = f"(compute {kind} (access-pair {expr} {broadcast(c, x.dims)}))"
    t.host_step(node)
    t.bind(node, Float(t.b.define(node.output[0], expr), x.dims))


def _reduce_mean(t, node, attrs) -> None:
    """ReduceMean over every spatial axis of an (N, C, spatial...) tensor — torchvision's
    ``x.mean([2, 3])``, MnasNet's and ShuffleNetV2's global pool — on the host with the
    float32 arithmetic of onnxruntime's kernel: no optimizer of its fuses
    DequantizeLinear → ReduceMean → QuantizeLinear into an integer op, so it runs ReduceMean
    on the dequantized floats, summing each map by Eigen (``global-average-pool`` order 8,
    docs/language.md), then divides by the map's size. A float sum of rounded products is not
    the integer sum of the codes rescaled: the accelerator's integer pool would round
    otherwise near a quantization step's tie."""
    x = t.as_float(node, 0)
    rank = len(x.dims)
    if len(node.input) > 1 and node.input[1]:  # opset 18: the axes are an input
        axes = [int(a) for a in np.ravel(t.constant(node, 1))]
    else:
        axes = [int(a) for a in attrs.get("axes", [])]
    if not axes and attrs.get("noop_with_empty_axes", 0):
        t.bind(node, x)
        return
    spatial = list(range(2, rank))
    if rank < 3 or sorted(a % rank for a in axes or range(rank)) != spatial:
        raise t.error(node, f"only a mean over every spatial axis ({', '.join(map(str, spatial))}"
                            f") of an (N, C, spatial...) tensor is supported, got axes "
                            f"{axes or 'all'} of dims {fmt_dims(x.dims)}")
    t.host_step(node)
    pooled = f"(global-average-pool (access-tensor {x.name}) 8)"
    if attrs.get("keepdims", 1):
        t.bind(node, Float(t.b.define(node.output[0], pooled), x.dims[:2] + (1,) * (rank - 2)))
        return
    dims = x.dims[:2]
    t.bind(node, Float(t.b.define(node.output[0], f"(access-reshape {pooled} (access-shape "
                                                  f"{shape(dims)} (shape)))"), dims))


TABLE = {  # after layers.TABLE in glc/onnx/translate.py: this Add replaces that one
    "Add": _add,
    "Mul": _mul,
    "Div": _div,
    "Erf": _erf,
    "Sigmoid": _sigmoid,
    "Tanh": _tanh,
    "HardSigmoid": _hard_sigmoid,
    "HardSwish": _hard_swish,
    "LeakyRelu": _leaky_relu,
    "BatchNormalization": _batch_norm,
    "LRN": _lrn,
    "GlobalAveragePool": _global_average_pool,
    "ReduceMean": _reduce_mean,
    "Clip": _clip,
    "LayerNormalization": _layer_norm,
}
