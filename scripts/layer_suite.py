"""The layer suite (issue 10): real networks' layers at their real shapes, in the layouts users
write, as programs with independently computed expected outputs.

ResNet-18/50's convolutions at 224×224 input (the 7×7/2 stem with 3 channels, the 3×3 convs at
56/28/14/7, a stride-2 3×3, the 1×1 bottleneck reductions and expansions, the 1×1 stride-2
projections), MobileNet-v2's 1×1 expansions and projections and its depthwise 3×3, BERT-base's
GEMMs at sequence 128, ViT-B/16's FFN down-projection at its 197 tokens, attention's Q·Kᵀ and
P·V at sequence 128 / head 64, and a GEMV. Each conv
in NCHW data with OIHW weights and in NHWC data with HWIO weights; each GEMM with its weights
in×out (x·W) and out×in (x·Wᵀ). A conv's output is requantized int8 (after a relu where the
network has one); a GEMM's is requantized int8 but for attention scores (int32, softmax follows).
The expected outputs come from reference_numerics.py's plain numpy, never from glc.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from corpus_layers import int8, spread_shift
from reference_numerics import conv2d_nchw, matmul, relu, requantize, widen, wrap_int32

CONV_LAYOUTS = ("nchw-oihw", "nhwc-hwio")
GEMM_LAYOUTS = ("w-in-out", "w-out-in")


@dataclass(frozen=True)
class Conv:
    """A 2-d convolution: ``channels`` → ``filters`` over a ``size``×``size`` image, a
    ``kernel``×``kernel`` window, ``stride``, zero padding ``pad`` on every side; ``depthwise``:
    one filter per channel (``filters`` = ``channels``)."""

    name: str
    network: str
    channels: int
    filters: int
    size: int
    kernel: int
    stride: int = 1
    pad: int = 0
    relu: bool = True
    depthwise: bool = False

    @property
    def out(self) -> int:
        return (self.size + 2 * self.pad - self.kernel) // self.stride + 1

    @property
    def macs(self) -> int:
        per_output = self.kernel ** 2 * (1 if self.depthwise else self.channels)
        return self.out ** 2 * self.filters * per_output

    layouts = CONV_LAYOUTS


@dataclass(frozen=True)
class Gemm:
    """An (M×K)·(K×N) product: ``raw`` keeps the int32 result."""

    name: str
    network: str
    m: int
    k: int
    n: int
    raw: bool = False

    @property
    def macs(self) -> int:
        return self.m * self.k * self.n

    layouts = GEMM_LAYOUTS


LAYERS = [
    Conv("stem 7x7/2 3->64 @224", "ResNet-18/50", 3, 64, 224, 7, 2, 3),
    Conv("3x3 64 @56", "ResNet-18/50", 64, 64, 56, 3, 1, 1),
    Conv("3x3 128 @28", "ResNet-18/50", 128, 128, 28, 3, 1, 1),
    Conv("3x3 256 @14", "ResNet-18/50", 256, 256, 14, 3, 1, 1),
    Conv("3x3 512 @7", "ResNet-18/50", 512, 512, 7, 3, 1, 1),
    Conv("3x3/2 64->128 @56", "ResNet-18", 64, 128, 56, 3, 2, 1),
    Conv("proj 1x1/2 64->128 @56", "ResNet-18", 64, 128, 56, 1, 2, 0, relu=False),
    Conv("1x1 256->64 @56", "ResNet-50", 256, 64, 56, 1),
    Conv("1x1 64->256 @56", "ResNet-50", 64, 256, 56, 1, relu=False),
    Conv("1x1 1024->256 @14", "ResNet-50", 1024, 256, 14, 1),
    Conv("1x1 256->1024 @14", "ResNet-50", 256, 1024, 14, 1, relu=False),
    Conv("proj 1x1/2 256->512 @56", "ResNet-50", 256, 512, 56, 1, 2, 0, relu=False),
    Conv("proj 1x1/2 1024->2048 @14", "ResNet-50", 1024, 2048, 14, 1, 2, 0, relu=False),
    Conv("expand 1x1 24->144 @56", "MobileNet-v2", 24, 144, 56, 1),
    Conv("project 1x1 144->24 @56", "MobileNet-v2", 144, 24, 56, 1, relu=False),
    Conv("expand 1x1 64->384 @14", "MobileNet-v2", 64, 384, 14, 1),
    Conv("dw 3x3 144 @56", "MobileNet-v2", 144, 144, 56, 3, 1, 1, depthwise=True),
    Conv("dw 3x3/2 144 @56", "MobileNet-v2", 144, 144, 56, 3, 2, 1, depthwise=True),
    Conv("dw 3x3 384 @14", "MobileNet-v2", 384, 384, 14, 3, 1, 1, depthwise=True),
    Gemm("QKV/out 128x768x768", "BERT-base", 128, 768, 768),
    Gemm("FFN up 128x768x3072", "BERT-base", 128, 768, 3072),
    Gemm("FFN down 128x3072x768", "BERT-base", 128, 3072, 768),
    # 197 tokens (196 patches and the class token): M prime, too many rows for one block.
    Gemm("FFN down 197x3072x768", "ViT-B/16", 197, 3072, 768),
    Gemm("Q.K^T 128x64x128", "attention", 128, 64, 128, raw=True),
    Gemm("P.V 128x128x64", "attention", 128, 128, 64),
    Gemm("1x1024x1024", "GEMV", 1, 1024, 1024),
]


def rows() -> list[tuple[Conv | Gemm, str]]:
    """Every (layer, layout) of the suite, in table order."""
    return [(layer, layout) for layer in LAYERS for layout in layer.layouts]


def program_name(layer: Conv | Gemm, layout: str) -> str:
    """A folder name for the row."""
    stem = "".join(c if c.isalnum() else "-" for c in f"{layer.network} {layer.name}".lower())
    return "-".join(filter(None, stem.split("-"))) + "-" + layout


def make(layer: Conv | Gemm, layout: str, rng: np.random.Generator) -> dict:
    """The row's program: ``body`` (Glenside), ``inputs`` (symbol → array), ``output``."""
    if isinstance(layer, Gemm):
        return _gemm(layer, layout, rng)
    return _depthwise(layer, layout, rng) if layer.depthwise else _conv(layer, layout, rng)


def _converted(wide: np.ndarray, with_relu: bool) -> tuple[np.ndarray, int]:
    """The int8 output (relu first if asked) and the requantize shift that spreads it."""
    if with_relu:
        wide = relu(wide)
    shift = spread_shift(wide)
    return requantize(wide, shift), shift


def _wrap(body: str, with_relu: bool, shift: int) -> str:
    inner = f"(compute relu {body})" if with_relu else body
    return f"(compute (requantize {shift}) {inner})"


def _padded(x: str, axes: tuple[int, int], pad: int, kind: str = "zero-padding") -> str:
    if not pad:
        return f"(access-tensor {x})"
    return (f"(access-pad (access-pad (access-tensor {x}) {kind} {axes[0]} {pad} {pad}) "
            f"{kind} {axes[1]} {pad} {pad})")


def _conv(layer: Conv, layout: str, rng) -> dict:
    c, o, s, k = layer.channels, layer.filters, layer.size, layer.kernel
    if layout == "nchw-oihw":
        x, w = int8(rng, 1, c, s, s), int8(rng, o, c, k, k)
        data, weights = x, w
        image = f"(access {_padded('x', (2, 3), layer.pad)} 1)"
        filters = "(access (access-tensor w) 1)"
        back = "(list 1 0 2 3)"
    else:
        x, w = int8(rng, 1, s, s, c), int8(rng, k, k, c, o)
        data, weights = x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1)
        image = f"(access (access-transpose {_padded('x', (1, 2), layer.pad)} (list 0 3 1 2)) 1)"
        filters = "(access (access-transpose (access-tensor w) (list 3 2 0 1)) 1)"
        back = "(list 1 2 3 0)"
    wide = conv2d_nchw(data, weights, (layer.stride,) * 2, ((layer.pad,) * 2,) * 2)
    if layout == "nhwc-hwio":
        wide = wide.transpose(0, 2, 3, 1)
    out, shift = _converted(wide, layer.relu)
    body = (f"(access-transpose (compute dot-product (access-cartesian-product {filters} "
            f"(access (access-squeeze (access-windows {image} (shape {c} {k} {k}) "
            f"(shape 1 {layer.stride} {layer.stride})) 1) 3))) {back})")
    return dict(body=_wrap(body, layer.relu, shift) + "\n", inputs={"x": x, "w": w},
                output=out)


def _depthwise(layer: Conv, layout: str, rng) -> dict:
    """Each channel's windows paired with its own taps, summed (the form glc import writes)."""
    c, s, k, n = layer.channels, layer.size, layer.kernel, layer.out
    if layout == "nchw-oihw":
        x, w = int8(rng, 1, c, s, s), int8(rng, c, 1, k, k)
        data, taps = x, w[:, 0]
        image = _padded("x", (2, 3), layer.pad)
        filters = "(access-tensor w)"
        back = ""
    else:
        x, w = int8(rng, 1, s, s, c), int8(rng, k, k, c, 1)
        data, taps = x.transpose(0, 3, 1, 2), w[..., 0].transpose(2, 0, 1)
        image = f"(access-transpose {_padded('x', (1, 2), layer.pad)} (list 0 3 1 2))"
        filters = "(access-transpose (access-tensor w) (list 2 3 0 1))"
        back = "(list 0 2 3 1)"
    padded = np.pad(widen(data), ((0, 0), (0, 0), (layer.pad,) * 2, (layer.pad,) * 2))
    wide = np.zeros((1, c, n, n), dtype=np.int64)
    for dy in range(k):  # one tap at a time: the channel's weight times the shifted image
        for dx in range(k):
            window = padded[:, :, dy:dy + layer.stride * n:layer.stride,
                            dx:dx + layer.stride * n:layer.stride]
            wide += window * widen(taps)[None, :, dy, dx, None, None]
    wide = wrap_int32(wide)
    if back:
        wide = wide.transpose(0, 2, 3, 1)
    out, shift = _converted(wide, layer.relu)
    weights = (f"(access (access-broadcast (access-reshape {filters} (access-shape "
               f"(shape 1 {c} 1 1 {k} {k}) (shape))) (access-shape (shape 1 {c} {n} {n} {k} {k}) "
               f"(shape))) 4)")
    body = (f"(compute dot-product (access-pair (access-windows (access {image} 2) "
            f"(shape {k} {k}) (shape {layer.stride} {layer.stride})) {weights}))")
    if back:
        body = f"(access-transpose {body} {back})"
    return dict(body=_wrap(body, layer.relu, shift) + "\n", inputs={"x": x, "w": w},
                output=out)


def _gemm(layer: Gemm, layout: str, rng) -> dict:
    m, k, n = layer.m, layer.k, layer.n
    x = int8(rng, m, k)
    w = int8(rng, k, n) if layout == "w-in-out" else int8(rng, n, k)
    wide = matmul(x, w if layout == "w-in-out" else w.T)
    # The whole product as one dot product: its cartesian product (M×N×2×K, 604 M elements
    # for BERT's FFN) is never materialised, so glc's tensor limit spares it.
    columns = "(access-transpose (access-tensor w) (list 1 0))" if layout == "w-in-out" \
        else "(access-tensor w)"
    product = (f"(compute dot-product (access-cartesian-product (access (access-tensor x) 1) "
               f"(access {columns} 1)))")
    if layer.raw:
        return dict(body=product + "\n", inputs={"x": x, "w": w}, output=wide)
    out, shift = _converted(wide, False)
    return dict(body=_wrap(product, False, shift) + "\n", inputs={"x": x, "w": w}, output=out)


def write(folder: Path, layer: Conv | Gemm, layout: str, rng: np.random.Generator) -> dict:
    """Write the row's program folder (its .gls, one .npy per input, output.npy); returns
    what ``make`` made."""
    made = make(layer, layout, rng)
    folder.mkdir(parents=True)
    declarations = "".join(f"(input {s} (shape {' '.join(map(str, a.shape))}) {a.dtype})\n"
                           for s, a in made["inputs"].items())
    (folder / f"{folder.name}.gls").write_text(
        f"; {layer.network}: {layer.name}, {layout}\n" + declarations + made["body"])
    for symbol, array in made["inputs"].items():
        np.save(folder / f"{symbol}.npy", array)
    np.save(folder / "output.npy", made["output"])
    return made
