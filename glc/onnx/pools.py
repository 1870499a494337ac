"""AveragePool and QLinearAveragePool: onnxruntime's QLinearAveragePool kernel, which dequantizes,
sums in float32, divides by the window's count and quantizes with the zero point added before
rounding (docs/language.md, ``average-pool-linear``), except for a window that is the whole
unpadded map, which the kernel hands to its integer global average pool. The window is taken over
the input padded with its zero point (which dequantizes to 0.0, so the float sum is unchanged);
the divisor of each output pixel is computed here, as the kernel counts it."""

from __future__ import annotations

import numpy as np

from glc.onnx.layers import bind_absorbed, qglobal_pool
from glc.onnx.program import Quantized, broadcast, literal


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


def qaverage_pool(t, node, attrs, x: Quantized, y_scale: float, y_zero: int, offset: int) -> None:
    """``node``'s average pool of the int8 ``x`` into int8 of (``y_scale``, ``y_zero``)."""
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise t.error(node, "attribute auto_pad is not supported (give pads)")
    kernel = list(attrs["kernel_shape"])
    if len(kernel) != 2 or len(x.dims) != 4:
        raise t.error(node, "only 2-d pooling is supported")
    if list(attrs.get("dilations", [1, 1])) != [1, 1]:
        raise t.error(node, "attribute dilations is not supported")
    strides = list(attrs.get("strides", [1, 1]))
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    n, c, h, w = x.dims
    if kernel == [h, w] and not any(pads):  # the kernel's own fallback: the integer global pool
        qglobal_pool(t, node, x, y_scale, y_zero)
        return
    out = []
    for size, k, s, lo, hi in ((h, kernel[0], strides[0], pads[0], pads[2]),
                               (w, kernel[1], strides[1], pads[1], pads[3])):
        span = size + lo + hi - k
        count = (-(-span // s) if attrs.get("ceil_mode", 0) else span // s) + 1
        if attrs.get("ceil_mode", 0) and (count - 1) * s >= size + lo:
            count -= 1  # a window must start inside the image or its leading pad
        out.append(count)
    # Pad far enough for every window (ceil_mode's last one may run past the pads).
    far = [max(pads[2], (out[0] - 1) * strides[0] + kernel[0] - h - pads[0]),
           max(pads[3], (out[1] - 1) * strides[1] + kernel[1] - w - pads[1])]
    hint = node.output[0]
    padded = (f"(access-pad-value (access-pad-value (access-tensor {x.name}) {x.zero} 2 "
              f"{pads[0]} {far[0]}) {x.zero} 3 {pads[1]} {far[1]})")
    windows = t.b.define(hint + "_win", f"(access-windows (access {padded} 2) (shape {kernel[0]} "
                                        f"{kernel[1]}) (shape {strides[0]} {strides[1]}))")
    divisors = _divisors(h, w, tuple(out), kernel, strides, pads, attrs.get("count_include_pad", 0))
    d = t.b.tensor(hint + "_count", divisors.reshape(1, 1, *out))
    dims = (n, c, *out)
    name = t.b.define(hint, f"(average-pool-linear {windows} {broadcast(d, dims)} "
                            f"{literal(x.scale)} {x.zero} {literal(y_scale)} {y_zero} {offset})")
    t.bind(node, Quantized(name, dims, y_scale, y_zero))


def _average_pool(t, node, attrs) -> None:
    out = t.requantized_output(node)
    if out is None:
        raise t.error(node, "a float AveragePool is not supported (its output must be quantized)")
    # onnxruntime's x86 graph optimizer turns every int8 QuantizeLinear/DequantizeLinear pair of
    # a QDQ model into uint8 (QDQS8ToU8Transformer) before fusing the QLinearAveragePool, whose
    # rint(a + zero) then rounds in uint8 either way: measured, tests/onnx/test_import_pools.py.
    qaverage_pool(t, node, attrs, t.quantized(node, 0), *out, 128)
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
