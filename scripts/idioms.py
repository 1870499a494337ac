"""Int8 network idioms in Glenside, each the text of one ``define`` with its value computed in
numpy: the pieces scripts/randcompose.py composes into programs.

A ``Graph`` holds a program's inputs and defines; each idiom adds a define in the form programs/
and ``glc import`` write it — the im2col convolution in NCHW or NHWC (OIHW or HWIO weights;
padding with zeros, the minimum or a zero point), the depthwise conv and the batched product
as glc import writes them (a QLinearConv over its channels, attention's MatMul), the matmul and
dense idioms, ``(requantize k)`` and ``requantize-linear`` (with a bias), ``add-linear`` and
int32 sums, max and global pools, concatenations — and computes its value without glc
(scripts/reference_numerics.py, from docs/language.md). Values are batch-1 images (NCHW or
NHWC) or matrices; a consumer reads one in the layout it wants (``Graph.view``: a transpose, or
a reshape between an NHWC image and its pixels × channels matrix). Each define records what it
read, in which layout, and tags what it is, from which randcompose tells a composition's
features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import reference_numerics as ref

MAX_CHANNELS = 48

# Each layout's channel axis, and the permutation reading it in the other image layout.
CHANNEL = {"nchw": 1, "nhwc": 3, "mat": 1}
TO = {("nchw", "nhwc"): (0, 2, 3, 1), ("nhwc", "nchw"): (0, 3, 1, 2)}


@dataclass
class Value:
    """A define (or input) of the graph: its name, layout and value; what it was computed from."""

    name: str
    layout: str  # "nchw", "nhwc" (int8 or int32, N = 1) or "mat" (rows × columns)
    value: np.ndarray
    kernel: bool = False  # computed from a product (through folds, pools, sums)
    sum: bool = False  # a residual sum
    concat: bool = False  # a concatenation of kernel results
    hw: tuple[int, int] | None = None  # a matrix's rows as an image's pixels

    @property
    def dims(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype


@dataclass
class Define:
    """A define's expression, what it reads and the tags of what it is."""

    text: str
    reads: list[tuple[str, str]]  # (value, the layout it was read in)
    tags: set[str]


def shape(dims) -> str:
    return "(shape" + "".join(f" {d}" for d in dims) + ")"


def transposed(text: str, perm) -> str:
    return f"(access-transpose {text} (list{''.join(f' {p}' for p in perm)}))"


def reshaped(text: str, dims) -> str:
    return f"(access-reshape {text} (access-shape {shape(dims)} (shape)))"


def spatial(v: Value) -> tuple[int, int]:
    """An image's height and width (a matrix's, read as one)."""
    return v.hw if v.layout == "mat" else v.dims[2:] if v.layout == "nchw" else v.dims[1:3]


def scale(s: np.float32) -> str:
    """A float32 literal that reads back to the same float32."""
    return repr(float(s))


def convert(value: np.ndarray, layout: str, want: str, hw) -> np.ndarray:
    """``value`` (in ``layout``) in the layout ``want``, as ``Graph.view`` reads it."""
    if layout == want:
        return value
    if layout == "mat":
        value, layout = value.reshape(1, *hw, value.shape[1]), "nhwc"
    if want == "mat":
        nhwc = value if layout == "nhwc" else value.transpose(TO["nchw", "nhwc"])
        return nhwc.reshape(-1, nhwc.shape[3])
    return value if layout == want else value.transpose(TO[layout, want])


class Graph:
    """One program's inputs and defines; ``rng`` decides each idiom's free choices and
    ``macs`` bounds the products' multiply-accumulates."""

    def __init__(self, rng: np.random.Generator, macs: int):
        self.rng = rng
        self.inputs: dict[str, np.ndarray] = {}
        self.values: list[Value] = []
        self.defines: dict[str, Define] = {}
        self.macs = macs

    # ---- leaves and reads -------------------------------------------------------------------

    def constant(self, value: np.ndarray) -> str:
        name = f"x{len(self.inputs)}"
        self.inputs[name] = value
        return name

    def int8(self, dims) -> np.ndarray:
        return self.rng.integers(-128, 128, dims).astype(np.int8)

    def leaf(self, dims, layout: str, hw: tuple[int, int] | None = None) -> Value:
        """A fresh int8 input."""
        name = self.constant(self.int8(dims))
        v = Value(name, layout, self.inputs[name], hw=hw)
        self.values.append(v)
        return v

    def image(self, layout: str, c: int, h: int, w: int) -> Value:
        return self.leaf((1, c, h, w) if layout == "nchw" else (1, h, w, c), layout)

    def ref(self, v: Value) -> str:
        """``v`` as an access pattern ((dims),()): a define by its name or as access-tensor."""
        if v.name in self.defines and self.rng.random() < 0.5:
            return v.name
        return f"(access-tensor {v.name})"

    def view(self, v: Value, want: str, reads: list) -> tuple[str, np.ndarray] | None:
        """``v`` read in the layout ``want`` (a transpose, or a reshape between an NHWC image and
        its matrix of pixels × channels), or None where it has no such reading."""
        if v.layout == "mat" and want != "mat" and v.hw is None:
            return None
        text = self.ref(v)
        if v.layout == "mat" and want != "mat":
            text = reshaped(text, (1, *v.hw, v.dims[1]))
            if want == "nchw":
                text = transposed(text, TO["nhwc", "nchw"])
        elif want == "mat" and v.layout != "mat":
            if v.layout == "nchw":
                text = transposed(text, TO["nchw", "nhwc"])
            h, w = spatial(v)
            text = reshaped(text, (h * w, v.dims[CHANNEL[v.layout]]))
        elif want != v.layout:
            text = transposed(text, TO[v.layout, want])
        reads.append((v.name, want))
        return text, convert(v.value, v.layout, want, v.hw)

    def define(self, text: str, value: np.ndarray, layout: str, reads: list, tags: set,
               **flags) -> Value:
        name = f"v{len(self.defines)}"
        self.defines[name] = Define(text, reads, tags)
        v = Value(name, layout, value, **flags)
        self.values.append(v)
        return v

    # ---- padding ------------------------------------------------------------------------------

    def pad(self, text: str, value: np.ndarray, axes, pads, fill) -> tuple[str, np.ndarray]:
        """Pad ``axes`` by ``pads`` with "zero", "min" or an integer (access-pad-value)."""
        widths = [(0, 0)] * value.ndim
        for k, (before, after) in zip(axes, pads, strict=True):
            widths[k] = (before, after)
            if before or after:
                text = (f"(access-pad-value {text} {fill} {k} {before} {after})"
                        if isinstance(fill, int) else
                        f"(access-pad {text} {fill}-padding {k} {before} {after})")
        constant = {"zero": 0, "min": np.iinfo(value.dtype).min}.get(fill, fill)
        return text, np.pad(value, widths, constant_values=constant)

    def fill(self, minimum: bool) -> str | int:
        """A padding: zeros (or the minimum, for a pool), or a zero point as a value."""
        if self.rng.random() < 0.4:
            return int(self.rng.integers(-128, 128)) if not minimum else -128
        return "min" if minimum else str(self.rng.choice(["zero", "zero", "min"]))

    # ---- kernels ------------------------------------------------------------------------------

    def conv(self, x: Value, layout: str, out: int, kernel, stride, pads, fill, oihw: bool,
             fold: str | None) -> Value | None:
        """The im2col conv2d idiom in ``layout`` (language.md; programs/conv2d-*), int32."""
        reads: list = []
        h, w = spatial(x)
        oh = (h + sum(pads[0]) - kernel[0]) // stride[0] + 1
        ow = (w + sum(pads[1]) - kernel[1]) // stride[1] + 1
        c = x.dims[CHANNEL[x.layout]]
        if oh < 1 or ow < 1 or out * c * kernel[0] * kernel[1] * oh * ow > self.macs:
            return None
        self.macs -= out * c * kernel[0] * kernel[1] * oh * ow
        text, data = self.view(x, layout, reads)
        text, padded = self.pad(text, data, (2, 3) if layout == "nchw" else (1, 2), pads, fill)
        if layout == "nhwc":
            text, padded = transposed(text, TO["nhwc", "nchw"]), padded.transpose(0, 3, 1, 2)
        filters = self.int8((out, c, *kernel))
        weights = f"(access-tensor {self.constant(filters)})" if oihw else transposed(
            f"(access-tensor {self.constant(filters.transpose(2, 3, 1, 0))})", (3, 2, 0, 1))
        acc = ref.conv2d_nchw(padded, filters, stride, ((0, 0), (0, 0)))
        text = transposed(
            f"(compute dot-product (access-cartesian-product (access {weights} 1) (access "
            f"(access-squeeze (access-windows (access {text} 1) {shape((c, *kernel))} "
            f"{shape((1, *stride))}) 1) 3)))", (1, 0, 2, 3) if layout == "nchw" else (1, 2, 3, 0))
        if layout == "nhwc":
            acc = acc.transpose(0, 2, 3, 1)
        tags = {f"conv {layout}"} | self.operand_tags(x, "kernel")
        tags |= {"strided conv"} if max(stride) > 1 else set()
        tags |= {"padded conv"} | ({"pad-value"} if isinstance(fill, int) else set()) \
            if np.any(pads) else set()
        return self.folded(text, acc, layout, reads, tags, fold)

    def depthwise(self, x: Value, layout: str, kernel, stride, pads, fill, taps: str,
                  fold: str | None, relu: bool = False) -> Value | None:
        """A depthwise conv of int8 ``x`` in ``layout`` as glc import writes a QLinearConv over
        its channels (glc/onnx/layers.py ``depthwise_sum``): the padded NCHW image's windows
        paired with each channel's taps broadcast over the output pixels, summed — the taps a
        (1, C, 1, 1, kh, kw) constant ("import"), or OIHW (C, 1, kh, kw) or HWIO (kh, kw, C, 1)
        filters reshaped to it; an NHWC result transposed back. ``fold`` as ``folded``'s, a
        relu between the bias and ``requantize-linear`` where ``relu`` (ONNX's fused ReLU)."""
        reads: list = []
        got = self.view(x, layout, reads) if x.dtype == np.int8 else None
        h, w = spatial(x)
        oh = (h + sum(pads[0]) - kernel[0]) // stride[0] + 1
        ow = (w + sum(pads[1]) - kernel[1]) // stride[1] + 1
        c = x.dims[CHANNEL[x.layout]]
        if got is None or oh < 1 or ow < 1 or c * kernel[0] * kernel[1] * oh * ow > self.macs:
            return None
        self.macs -= c * kernel[0] * kernel[1] * oh * ow
        text, data = got
        text, padded = self.pad(text, data, (2, 3) if layout == "nchw" else (1, 2), pads, fill)
        if layout == "nhwc":
            text, padded = transposed(text, TO["nhwc", "nchw"]), padded.transpose(0, 3, 1, 2)
        filters = self.int8((c, *kernel))
        six = (1, c, 1, 1, *kernel)
        if taps == "import":
            weights = f"(access-tensor {self.constant(filters.reshape(six))})"
        else:
            weights = (f"(access-tensor {self.constant(filters[:, None])})" if taps == "oihw"
                       else transposed(f"(access-tensor "
                                       f"{self.constant(filters.transpose(1, 2, 0)[..., None])})",
                                       (2, 3, 0, 1)))
            weights = reshaped(weights, six)
        weights = (f"(access (access-broadcast {weights} (access-shape "
                   f"{shape((1, c, oh, ow, *kernel))} (shape))) 4)")
        text = (f"(compute dot-product (access-pair (access-windows (access {text} 2) "
                f"{shape(kernel)} {shape(stride)}) {weights}))")
        acc = ref.depthwise2d_nchw(padded, filters, stride)
        if layout == "nhwc":
            text, acc = transposed(text, TO["nchw", "nhwc"]), acc.transpose(0, 2, 3, 1)
        tags = {"depthwise conv", f"depthwise {taps}"} | self.operand_tags(x, "kernel")
        tags |= {"strided conv"} if max(stride) > 1 else set()
        tags |= {"padded conv"} | ({"pad-value"} if isinstance(fill, int) else set()) \
            if np.any(pads) else set()
        if fold is not None:
            text, acc, more = self.requantized(text, acc, layout, fold, relu)
            tags |= more | ({f"depthwise {fold}"} if fold == "requantize-linear" else set())
        return self.define(text, acc, layout, reads, tags, kernel=True)

    def matmul(self, x: Value, n: int, dense: bool, fold: str | None) -> Value | None:
        """``x @ w`` by the matmul idiom, or ``x @ wᵀ`` with w's rows the items (dense), int32."""
        reads: list = []
        rows, k = x.value.size // x.dims[CHANNEL[x.layout]], x.dims[CHANNEL[x.layout]]
        if n * rows * k > self.macs:
            return None
        self.macs -= n * rows * k
        text, a = self.view(x, "mat", reads)
        w = self.int8((n, k))
        b = f"(access-tensor {self.constant(w if dense else w.T.copy())})"
        text = (f"(compute dot-product (access-cartesian-product (access {text} 1) "
                f"(access {b if dense else transposed(b, (1, 0))} 1)))")
        tags = {"matmul"} | self.operand_tags(x, "kernel")
        return self.folded(text, ref.matmul(a, w.T), "mat", reads, tags, fold,
                           hw=x.hw if x.layout == "mat" else spatial(x))

    def batched(self, x: Value, layout: str, n: int | None, broadcast: bool,
                fold: str | None) -> Value | None:
        """A batched product as glc import writes attention's (glc/onnx/attention.py): int8
        image ``x`` read in ``layout`` as a batch of matrices (its dims 1 and 2 the batch and
        the rows, its last the K), times a batch of ``n``-column matrices (a fresh input; one
        matrix broadcast over the batch where ``broadcast``) or, where ``n`` is None, times its
        own transpose (Q·Kᵀ of one value: x read twice); both operands broadcast to (1, β, M, N,
        K) and paired. The int32 result is an image of the same layout, N its last dim."""
        reads: list = []
        got = self.view(x, layout, reads) if x.dtype == np.int8 else None
        if got is None:
            return None
        text, a = got
        _, beta, m, k = a.shape
        cols = m if n is None else n
        if beta * m * cols * k > self.macs:
            return None
        self.macs -= beta * m * cols * k
        if n is None:
            bt, b = self.view(x, layout, reads)
        else:
            b = self.int8((1, 1 if broadcast else beta, k, n))
            bt = transposed(f"(access-tensor {self.constant(b)})", (0, 1, 3, 2))
        target = f"(access-shape {shape((1, beta, m, cols, k))} (shape))"
        pair = (f"(access (access-broadcast (access-insert-axis {text} 3) {target}) 4)",
                f"(access (access-broadcast (access-insert-axis {bt} 2) {target}) 4)")
        acc = ref.wrap_int32(np.einsum("bmk,bnk->bmn", a[0].astype(np.int64),
                                       np.broadcast_to(b[0], (beta, cols, k)).astype(np.int64)
                                       if n is None else np.broadcast_to(
                                           b[0].transpose(0, 2, 1), (beta, cols, k))
                                       .astype(np.int64)))[None]
        tags = {"batched product", f"batched {layout}"} | self.operand_tags(x, "kernel")
        tags |= {"batched self-product"} if n is None else \
            {"batched broadcast"} if broadcast else set()
        return self.folded(f"(compute dot-product (access-pair {pair[0]} {pair[1]}))", acc,
                           layout, reads, tags, fold)

    def operand_tags(self, x: Value, consumer: str) -> set[str]:
        """What reading ``x`` makes of a kernel or an add."""
        tags = set()
        if consumer == "kernel" and x.kernel:
            tags.add("kernel-fold-kernel")
        if consumer == "kernel" and x.sum:
            tags.add("residual sum into conv")
        if x.concat:
            tags.add(f"concat of kernels into {consumer}")
        return tags

    # ---- folds --------------------------------------------------------------------------------

    def folded(self, text: str, acc: np.ndarray, layout: str, reads: list, tags: set,
               fold: str | None, **flags) -> Value:
        """An int32 result, defined as it is or through ``fold`` in the same define."""
        if fold is not None:
            text, acc, more = self.requantized(text, acc, layout, fold)
            tags |= more
        return self.define(text, acc, layout, reads, tags, kernel=True, **flags)

    def requantized(self, text: str, acc: np.ndarray, layout: str, kind: str,
                    relu: bool = False) -> tuple[str, np.ndarray, set[str]]:
        """int32 → int8: ``(requantize k)`` (after a relu, sometimes) with k from the values'
        size, or ``requantize-linear`` (a bias first, sometimes, then a relu where ``relu``) by
        per-channel or per-tensor multipliers that keep most results inside int8."""
        if kind == "requantize":
            if self.rng.random() < 0.4:
                text, acc = f"(compute relu {text})", ref.relu(acc)
            top = int(np.percentile(np.abs(acc.astype(np.int64)), 90))
            k = int(np.clip(top.bit_length() - 6 + self.rng.integers(-1, 2), 0, 31))
            return f"(compute (requantize {k}) {text})", ref.requantize(acc, k), {"requantize"}
        axis = CHANNEL[layout]
        dims = acc.shape
        if self.rng.random() < 0.7:
            channel = [1] * acc.ndim
            channel[axis] = dims[axis]
            spread = max(float(np.std(acc)), 1.0)
            bias = self.rng.integers(-2 * spread, 2 * spread + 1, channel).astype(np.int32)
            text = (f"(compute elementwise-add (access-pair {text} (access-broadcast "
                    f"(access-tensor {self.constant(bias)}) (access-shape {shape(dims)} "
                    "(shape)))))")
            acc = ref.wrap_int32(acc.astype(np.int64) + bias)
        if relu:
            text, acc = f"(compute relu {text})", ref.relu(acc)
        per = [1] * acc.ndim
        if self.rng.random() < 0.7:
            per[axis] = dims[axis]
        others = tuple(k for k in range(acc.ndim) if per[k] == 1)
        spread = np.maximum(np.std(acc.astype(np.float64), axis=others, keepdims=True), 1.0)
        m = (self.rng.uniform(15, 60, per) / spread).astype(np.float32)
        z = int(self.rng.integers(-128, 128))
        text = (f"(requantize-linear {text} (access-broadcast (access-tensor {self.constant(m)}) "
                f"(access-shape {shape(dims)} (shape))) {z})")
        return text, ref.requantize_linear(acc, m, z), {"requantize-linear"}

    def fold(self, x: Value) -> Value:
        reads: list = []
        text, acc = self.view(x, x.layout, reads)
        text, value, tags = self.requantized(text, acc, x.layout, self.fold_kind())
        return self.define(text, value, x.layout, reads, tags, kernel=x.kernel, sum=x.sum,
                           concat=x.concat, hw=x.hw)

    def fold_kind(self) -> str:
        return str(self.rng.choice(["requantize", "requantize-linear"]))

    def relu(self, x: Value) -> Value:
        reads: list = []
        text, value = self.view(x, x.layout, reads)
        return self.define(f"(compute relu {text})", ref.relu(value), x.layout, reads, set(),
                           kernel=x.kernel, sum=x.sum, concat=x.concat, hw=x.hw)

    def lookup(self, x: Value, layout: str) -> Value | None:
        """``table-lookup`` of int8 ``x`` read in ``layout`` through a fresh 256-entry table (a
        quantized graph's float island, docs/onnx.md: VECTOR lut)."""
        reads: list = []
        got = self.view(x, layout, reads) if x.dtype == np.int8 else None
        if got is None:
            return None
        text, value = got
        table = self.constant(self.int8(256))
        return self.define(f"(table-lookup {text} (access-tensor {table}))",
                           ref.table_lookup(value, self.inputs[table]), layout, reads,
                           {"table-lookup"}, kernel=x.kernel, hw=x.hw)

    # ---- pools --------------------------------------------------------------------------------

    def max_pool(self, x: Value, layout: str, size: int, stride: int, pads) -> Value | None:
        """A max pool by access-windows and reduce-max (programs/maxpool*), in ``layout``."""
        reads: list = []
        got = self.view(x, layout, reads)
        if got is None:
            return None
        text, data = got
        axes = (2, 3) if layout == "nchw" else (1, 2)
        if any(data.shape[a] + sum(p) < size for a, p in zip(axes, pads, strict=True)):
            return None
        fill = self.fill(minimum=True)
        fill = "min" if fill == -128 and data.dtype != np.int8 else fill
        text, padded = self.pad(text, data, axes, pads, fill)
        if layout == "nchw":
            text = (f"(compute reduce-max (access-windows (access {text} 2) "
                    f"{shape((size, size))} {shape((stride, stride))}))")
            value = ref.maxpool2d_nchw(padded, size, stride, ((0, 0), (0, 0)))
        else:
            text = (f"(compute reduce-max (access-windows (access {text} 1) "
                    f"{shape((size, size, 1))} {shape((stride, stride, 1))}))")
            value = ref.maxpool2d_nchw(padded.transpose(0, 3, 1, 2), size, stride,
                                       ((0, 0), (0, 0))).transpose(0, 2, 3, 1)
        tags = {"max pool over conv"} if x.kernel else set()
        return self.define(text, value, layout, reads, tags, kernel=x.kernel)

    def global_pool(self, x: Value) -> Value:
        """Each channel's pixels summed (programs/global-avgpool-7): ((1, C),()) int32."""
        reads: list = []
        text, data = self.view(x, "nchw", reads)
        total = ref.wrap_int32(data.astype(np.int64).sum(axis=(2, 3)))
        return self.define(f"(compute reduce-sum (access {text} 2))", total, "mat", reads,
                           {"global pool"}, kernel=x.kernel)

    # ---- sums and concatenations ----------------------------------------------------------

    def add(self, x: Value, y: Value, linear: bool, layout: str | None = None,
            zc: int | None = None) -> Value:
        """``add-linear`` of two int8 values, or their int32 sum (elementwise-add of a pair), in
        ``layout`` (x's by default)."""
        reads: list = []
        layout = layout or x.layout
        a_text, a = self.view(x, layout, reads)
        b_text, b = self.view(y, layout, reads)
        tags = self.operand_tags(x, "add") | self.operand_tags(y, "add")
        flags = {"kernel": x.kernel or y.kernel, "sum": True, "hw": x.hw or y.hw}
        if not linear:
            total = ref.wrap_int32(a.astype(np.int64) + b.astype(np.int64))
            return self.define(f"(compute elementwise-add (access-pair {a_text} {b_text}))",
                               total, layout, reads, tags, **flags)
        f = np.float32
        sa, sb = (f(self.rng.uniform(0.005, 0.1)) for _ in "ab")
        sc = f((sa + sb) * self.rng.uniform(0.4, 1.0))
        za, zb = (int(self.rng.integers(-128, 128)) for _ in "ab")
        zc = int(self.rng.integers(-128, 128)) if zc is None else zc
        offset = int(self.rng.choice([0, 128]))
        text = (f"(add-linear {a_text} {b_text} {scale(sa)} {za} {scale(sb)} {zb} {scale(sc)} "
                f"{zc} {offset})")
        value = ref.add_linear(a, b, sa, za, sb, zb, sc, zc, offset)
        return self.define(text, value, layout, reads, tags | {"add-linear"}, **flags)

    def concatenate(self, x: Value, y: Value) -> Value:
        reads: list = []
        a_text, a = self.view(x, x.layout, reads)
        b_text, b = self.view(y, x.layout, reads)
        axis = CHANNEL[x.layout]
        return self.define(f"(access-concatenate {a_text} {b_text} {axis})",
                           np.concatenate([a, b], axis=axis), x.layout, reads, set(),
                           kernel=x.kernel or y.kernel, concat=x.kernel and y.kernel,
                           hw=x.hw or y.hw)

    # ---- channel splits and shuffles (ShuffleNet) ------------------------------------------

    def channels(self, x: Value, lo: int, hi: int) -> Value:
        """Channels ``lo`` … ``hi`` − 1 of image ``x`` (access-slice: an ONNX Split or Slice)."""
        reads: list = []
        text, value = self.view(x, x.layout, reads)
        axis = CHANNEL[x.layout]
        index = tuple(slice(lo, hi) if k == axis else slice(None) for k in range(4))
        return self.define(f"(access-slice {text} {axis} {lo} {hi})", value[index], x.layout,
                           reads, {"channel slice"}, kernel=x.kernel, hw=x.hw)

    def shuffle(self, x: Value, groups: int) -> Value:
        """ShuffleNet's channel shuffle of image ``x``: its channels as ``groups`` × (C / groups),
        transposed — a reshape, a transpose and a reshape, no affine view of x's layout."""
        reads: list = []
        text, value = self.view(x, x.layout, reads)
        c = value.shape[CHANNEL[x.layout]]
        if x.layout == "nchw":
            split, perm = (1, groups, c // groups, *value.shape[2:]), (0, 2, 1, 3, 4)
        else:
            split, perm = (*value.shape[:3], groups, c // groups), (0, 1, 2, 4, 3)
        shuffled = value.reshape(split).transpose(perm).reshape(value.shape)
        return self.define(reshaped(transposed(reshaped(text, split), perm), value.shape),
                           shuffled, x.layout, reads, {"channel shuffle"}, kernel=x.kernel,
                           hw=x.hw)
