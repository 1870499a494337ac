"""AveragePool and QLinearAveragePool: onnxruntime's QLinearAveragePool kernel, which dequantizes,
sums in float32, divides by the window's count and quantizes with the zero point added before
rounding (docs/language.md, ``average-pool-linear``), except for a window that is the whole
unpadded map, which the kernel hands to its integer global average pool. The window is taken over
the input padded with its zero point (which dequantizes to 0.0, so the float sum is unchanged);
the divisor of each output pixel is computed here, as the kernel counts it. A float AveragePool
(of a float tensor, or read by no QuantizeLinear) is onnxruntime's float kernel on the host
(``average-pool``)."""

from __future__ import annotations

import numpy as np

from glc.onnx import fusions, kernels
from glc.onnx.layers import bind_absorbed, qglobal_pool
from glc.onnx.program import Dequantized, Float, Quantized, broadcast, literal


def _divisors(h: int, w: int, out: tuple[int, int], kernel, strides, pads,
              include_pad) -> np.ndarray:
    """The kernel's count per output pixel: the whole window with ``count_include_pad``, else
    the pixels of the window inside the image (its ``hend = min(hstart + k, size)``)."""
    counts = np.zeros(out, np.float32)
    for ph in range(out[0]):
        top = ph * strides[0] - pads[0]
        rows = min(top + kernel[0], h) - max(top, 0)
        for pw in range(out[1]):
            left = pw * strides[1] - pads[1]
            cols = min(left + kernel[1], w) - max(left, 0)
            counts[ph, pw] = kernel[0] * kernel[1] if include_pad else rows * cols
    return counts


def _window(t, node, attrs, dims) -> tuple[list, list, list, tuple[int, int], list]:
    """A 2-d pool's kernel, strides, pads, output size (ceil_mode's last window must start
    inside the image or its leading pad) and the trailing pads every window needs."""
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise t.error(node, "attribute auto_pad is not supported (give pads)")
    kernel = list(attrs["kernel_shape"])
    if len(kernel) != 2 or len(dims) != 4:
        raise t.error(node, "only 2-d pooling is supported")
    if list(attrs.get("dilations", [1, 1])) != [1, 1]:
        raise t.error(node, "attribute dilations is not supported")
    strides = list(attrs.get("strides", [1, 1]))
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    out = []
    for size, k, s, lo, hi in ((dims[2], kernel[0], strides[0], pads[0], pads[2]),
                               (dims[3], kernel[1], strides[1], pads[1], pads[3])):
        span = size + lo + hi - k
        count = (-(-span // s) if attrs.get("ceil_mode", 0) else span // s) + 1
        if attrs.get("ceil_mode", 0) and (count - 1) * s >= size + lo:
            count -= 1
        out.append(count)
    # Pad far enough for every window (ceil_mode's last one may run past the pads).
    far = [max(pads[2], (out[0] - 1) * strides[0] + kernel[0] - dims[2] - pads[0]),
           max(pads[3], (out[1] - 1) * strides[1] + kernel[1] - dims[3] - pads[1])]
    return kernel, strides, pads, tuple(out), far


def _windows(t, hint: str, name: str, pad, kernel, strides, pads, far) -> str:
    padded = (f"(access-pad-value (access-pad-value (access-tensor {name}) {pad} 2 "
              f"{pads[0]} {far[0]}) {pad} 3 {pads[1]} {far[1]})")
    return t.b.define(hint + "_win", f"(access-windows (access {padded} 2) (shape {kernel[0]} "
                                     f"{kernel[1]}) (shape {strides[0]} {strides[1]}))")


def qaverage_pool(t, node, attrs, x: Quantized, y_scale: float, y_zero: int, offset: int) -> None:
    """``node``'s average pool of the int8 ``x`` into int8 of (``y_scale``, ``y_zero``)."""
    kernel, strides, pads, out, far = _window(t, node, attrs, x.dims)
    n, c, h, w = x.dims
    if kernel == [h, w] and not any(pads):  # the kernel's own fallback: the integer global pool
        qglobal_pool(t, node, x, y_scale, y_zero)
        return
    hint = node.output[0]
    windows = _windows(t, hint, x.name, x.zero, kernel, strides, pads, far)
    divisors = _divisors(h, w, out, kernel, strides, pads, attrs.get("count_include_pad", 0))
    d = t.b.tensor(hint + "_count", divisors.reshape(1, 1, *out))
    dims = (n, c, *out)
    name = t.b.define(hint, f"(average-pool-linear {windows} {broadcast(d, dims)} "
                            f"{literal(x.scale)} {x.zero} {literal(y_scale)} {y_zero} {offset})")
    t.bind(node, Quantized(name, dims, y_scale, y_zero))


# MLAS's vectorized 2-d pool takes a width stride of at most 2, kernels of at most 32 and a
# padded row that fits its reduction buffer (MLAS_POOL_REDUCTION_BUFFER_STACK less 3).
VECTOR_ROW = 2045


def _float_average_pool(t, node, attrs) -> None:
    """A float AveragePool (a dynamically quantized DenseNet's: its activations between the
    products are float) on the host in the order of the kernel onnxruntime runs, bit for bit:
    its NCHWc pool where its optimizer chose it (glc/onnx/kernels.py) and its own pool under
    ceil_mode with count_include_pad sum each window row by row; else MLAS's global pool takes
    a window of the whole map (``global-average-pool``), its vectorized pool (``VECTOR_ROW``)
    sums each window column first, its generic one row by row (measured,
    tests/onnx/test_import_pools.py). A padded window with count_include_pad divides by its
    part inside the padded image (the whole window but past ceil_mode's end)."""
    x = t.as_float(node, 0)
    kernel, strides, pads, out, far = _window(t, node, attrs, x.dims)
    n, c, h, w = x.dims
    hint = node.output[0]
    nchwc = hint in kernels.nchwc_nodes(t.graph.path)
    if kernel == [h, w] and strides == [1, 1] and not any(pads) and not nchwc:
        t.host_step(node)  # MLAS's own choice: its global pool
        t.bind(node, Float(t.b.define(hint, f"(global-average-pool (access-tensor {x.name}) 4)"),
                           (n, c, 1, 1)))
        return
    windows = _windows(t, hint, x.name, "0.0", kernel, strides, pads, far)
    include = attrs.get("count_include_pad", 0)
    if include:
        rows = [min(r * strides[0] - pads[0] + kernel[0], h + pads[2]) - (r * strides[0] - pads[0])
                for r in range(out[0])]
        cols = [min(k * strides[1] - pads[1] + kernel[1], w + pads[3]) - (k * strides[1] - pads[1])
                for k in range(out[1])]
        divisors = np.outer(rows, cols).astype(np.float32)
    else:
        divisors = _divisors(h, w, out, kernel, strides, pads, 0)
    own = include and attrs.get("ceil_mode", 0)
    vector = (not own and not nchwc and strides[1] <= 2 and max(kernel) <= 32
              and w + pads[1] + pads[3] <= VECTOR_ROW)
    d = t.b.tensor(hint + "_count", divisors.reshape(1, 1, *out))
    dims = (n, c, *out)
    t.host_step(node)
    name = t.b.define(hint, f"(average-pool {windows} {broadcast(d, dims)} {int(vector)})")
    t.bind(node, Float(name, dims))


def _average_pool(t, node, attrs) -> None:
    """A QDQ AveragePool is onnxruntime's QLinearAveragePool where its optimizer fuses it; one
    it leaves float (DequantizeLinear → AveragePool → QuantizeLinear: with int8 activations, a
    Q/DQ pair of its neighbours' not turned into uint8, netgen's seed 7103) is its float kernel
    on the dequantized values, which rounds otherwise (glc/onnx/fusions.py)."""
    if not isinstance(t.value(node, 0), Dequantized) or \
            fusions.pool_left_float(t, node):
        _float_average_pool(t, node, attrs)
        return
    out = t.requantized_output(node)
    if out is None:
        _float_average_pool(t, node, attrs)
        return
    # QLinearAveragePool's rint(a + zero) rounds in its type: uint8 where onnxruntime's x86
    # optimizer turned the int8 pairs into uint8 before fusing (QDQS8ToU8Transformer; measured,
    # tests/onnx/test_import_pools.py), int8 where it left them (glc/onnx/fusions.py).
    offset = fusions.fused_offset(t, node, t.graph.only_consumer(node.output[0]))
    qaverage_pool(t, node, attrs, t.quantized(node, 0), *out, offset)
    bind_absorbed(t, node)


def _qlinear_average_pool(t, node, attrs) -> None:
    if attrs.get("channels_last", 0):
        raise t.error(node, "attribute channels_last=1 is not supported")
    x = t.quantized(node, 0)
    x = Quantized(x.name, x.dims, *t.qparams(node, 1, 2))
    qaverage_pool(t, node, attrs, x, *t.qparams(node, 3, 4), t.offset(node, 4))


TABLE = {
    "AveragePool": _average_pool,
    "QLinearAveragePool": _qlinear_average_pool,
}
