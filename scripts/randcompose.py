"""Random compositions: int8 Glenside programs of several kernels, each with its expected result
computed here in numpy.

scripts/randprog.py grows one operator at a time and so rarely builds what the lowering's
placement optimizations act on: a kernel's result stored for the kernel that reads it, a fold
fused into a kernel's store, a concatenation written in place. A composition is a chain of
random blocks of int8 network idioms (scripts/idioms.py: convolutions NCHW and NHWC with random
kernels, strides and pads, matmuls, folds, pools, sums, concatenations), each block reading the
one before — a residual block (its input read by a conv and by the add), branches concatenated
(two or three convs of one value, each in its own layout), a skip from an earlier value, one
accumulator read by two folds — so that values are read by two or three consumers, in two
layouts, with kernel → fold → kernel chains, residual sums feeding convolutions and
concatenations of kernel results feeding kernels and adds; depthwise convs (alone, with the
import's bias and requantize-linear, or in MobileNet's inverted residual) and batched products
(attention's), each from a random stream of its own. One kind is fixed: a ResNet basic
block whose input is itself a residual sum, the shape of a known miscompile (issue 37).

``make(seed)`` gives a ``Composition``: a randprog ``Case`` (its expected result computed in
numpy, without glc) plus its kind and the features (``FEATURES``) its graph has.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from idioms import CHANNEL, MAX_CHANNELS, Graph, Value, convert, spatial
from randprog import Case, declare

# Multiply-accumulates per program on a 16×16 array: one compiles and runs on the ISA simulator
# in about a second. Scaled by the array's side cubed on others: the instructions grow as the
# MACs over its area, and a small array's DRAM holds fewer of them (n4's: 128 KiB).
MAX_MACS = 2_500_000
RESIDUAL = "residual block over a residual sum"
WIDE = "many filters over few pixels"
INVERTED = "inverted residual"
# What a composition's graph can have; Composition.features names those it has.
FEATURES = frozenset({
    "fan-out", "fan-out 3", "kernel-fold-kernel", "residual sum into conv", "two layouts",
    "concat of kernels into kernel", "concat of kernels into add", "max pool over conv",
    "conv nchw", "conv nhwc", "strided conv", "padded conv", "pad-value", "matmul",
    "add-linear", "requantize-linear", "requantize", "global pool", "table-lookup",
    "channel slice", "channel shuffle", "depthwise conv", "depthwise import", "depthwise oihw",
    "depthwise hwio", "depthwise requantize-linear", INVERTED, "batched product",
    "batched nchw", "batched nhwc", "batched self-product", "batched broadcast", RESIDUAL, WIDE})
# A block is drawn depthwise, or a batched product, this often (each from a stream of its own).
DEPTHWISE, BATCHED = 0.2, 0.1


@dataclass
class Composition(Case):
    """A randprog ``Case`` with the kind of graph it is and the features it has."""

    kind: str = ""
    features: set[str] = field(default_factory=set)


class Composer(Graph):
    """Builds one composition; ``rng`` decides everything but the depthwise blocks and the
    batched products, which streams of their own decide (``extra``, ``batches``): a graph that
    draws none is the one the generator drew before it made them, so the seeds the tests name
    keep their graphs."""

    def __init__(self, rng: np.random.Generator, macs: int, seed: int):
        super().__init__(rng, macs)
        self.extra, self.batches = (np.random.default_rng((seed, k)) for k in (1, 2))

    @contextmanager
    def drawing(self, rng: np.random.Generator):
        """The idioms draw from ``rng`` meanwhile."""
        main, self.rng = self.rng, rng
        try:
            yield
        finally:
            self.rng = main

    def batched_block(self, x: Value) -> Value | None:
        """A batched product over ``x`` read as a batch of matrices (attention's: one kernel
        per batch element), times fresh matrices or its own transpose, folded or not."""
        rng = self.rng
        layout = x.layout if x.layout != "mat" and rng.random() < 0.6 else \
            str(rng.choice(["nchw", "nhwc"]))
        n = None if rng.random() < 0.3 else int(rng.integers(1, MAX_CHANNELS + 1))
        return self.batched(x, layout, n, rng.random() < 0.3, self.maybe_fold())

    def depthwise_block(self, x: Value) -> Value | None:
        """A depthwise conv of ``x`` (MobileNet's): random layout, window, stride, pads, padding
        and taps' form, its fold one of the plain ones, or the import's per-channel bias and
        ``requantize-linear`` (under a relu, sometimes); or an inverted residual — a 1×1
        expansion, a same-padded depthwise conv and a 1×1 projection back to x's channels, all
        requantize-linear, summed with x by add-linear (x read by the conv and the add)."""
        rng = self.rng
        taps = str(rng.choice(["import", "oihw", "hwio"]))
        layout = x.layout if x.layout != "mat" and rng.random() < 0.6 else \
            str(rng.choice(["nchw", "nhwc"]))
        if rng.random() < 0.3:
            c = x.dims[CHANNEL[x.layout]]
            k = int(rng.choice([3, 3, 5]))
            fill = self.fill(minimum=False)
            y = self.conv(x, layout, int(rng.integers(c, 2 * c + 1)), (1, 1), (1, 1),
                          ((0, 0), (0, 0)), "zero", True, "requantize-linear")
            y = y and self.depthwise(y, layout, (k, k), (1, 1), (((k - 1) // 2, k // 2),) * 2,
                                     fill, taps, "requantize-linear", rng.random() < 0.5)
            y = y and self.conv(y, layout, c, (1, 1), (1, 1), ((0, 0), (0, 0)), "zero", True,
                                "requantize-linear")
            y = y and self.add(*((y, x) if rng.random() < 0.5 else (x, y)), True, x.layout)
            if y is not None:
                self.defines[y.name].tags.add(INVERTED)
            return y
        k = int(rng.choice([1, 2, 3, 3, 3, 5]))
        kernel = (k, k) if rng.random() < 0.85 else (k, int(rng.choice([1, 3])))
        s = int(rng.choice([1, 1, 1, 2, 2, 3]))
        stride = (s, s) if rng.random() < 0.9 else (s, int(rng.choice([1, 2])))
        draw = rng.random()
        pads = (((0, 0), (0, 0)) if draw < 0.3 else
                tuple(((d - 1) // 2, d // 2) for d in kernel) if draw < 0.75 else
                tuple(tuple(int(p) for p in rng.integers(0, 3, 2)) for _ in kernel))
        draw = rng.random()
        fold = "requantize-linear" if draw < 0.5 else None if draw < 0.65 else "requantize"
        return self.depthwise(x, layout, kernel, stride, pads, self.fill(minimum=False), taps,
                              fold, fold == "requantize-linear" and rng.random() < 0.4)

    def random_conv(self, x: Value) -> Value | None:
        """A convolution of ``x`` with random layout, kernel, stride, pads, padding and fold."""
        rng = self.rng
        if x.layout != "mat" and max(spatial(x)) <= 3 and rng.random() < 0.7:
            # Many filters over a few NCHW pixels, from 8 channels: the windows walk K with
            # three strides and the filters want whole K tiles, where the lowering's `gather`
            # copies an im2col (docs/lowering.md, "Optimizations by name"; on n4 it pays
            # from 8 channels of 3×3 pixels under 48 filters).
            narrow = self.conv(x, "nchw", 8, (1, 1), (1, 1), ((0, 0), (0, 0)), "zero", True,
                               "requantize")
            y = narrow and self.conv(narrow, "nchw", MAX_CHANNELS, (3, 3), (1, 1),
                                     ((1, 1), (1, 1)), "zero", True, self.maybe_fold())
            if y is not None:
                self.defines[y.name].tags.add(WIDE)
            return y
        layout = x.layout if x.layout != "mat" and rng.random() < 0.6 else \
            str(rng.choice(["nchw", "nhwc"]))
        k = int(rng.choice([1, 1, 2, 3, 3, 3, 5]))
        kernel = (k, k) if rng.random() < 0.8 else (k, int(rng.choice([1, 2, 3])))
        s = int(rng.choice([1, 1, 1, 2, 2, 3]))
        stride = (s, s) if rng.random() < 0.85 else (s, int(rng.choice([1, 2])))
        draw = rng.random()
        pads = (((0, 0), (0, 0)) if draw < 0.35 else
                tuple(((d - 1) // 2, d // 2) for d in kernel) if draw < 0.75 else
                tuple(tuple(int(p) for p in rng.integers(0, 3, 2)) for _ in kernel))
        return self.conv(x, layout, int(rng.integers(3, MAX_CHANNELS + 1)), kernel, stride, pads,
                         self.fill(minimum=False), rng.random() < 0.5, self.maybe_fold())

    def branches(self, x: Value) -> Value | None:
        """Two or three convolutions of ``x`` (each in its own layout) concatenated, as in
        SqueezeNet's fire and Inception's modules: same padding and one stride, so that their
        results have one size; folded all or none, so that they have one dtype."""
        rng = self.rng
        stride, fill, fold = int(rng.choice([1, 1, 2])), self.fill(minimum=False), \
            self.maybe_fold()
        parts = []
        for _ in range(int(rng.choice([2, 2, 3]))):
            k = int(rng.choice([1, 2, 3, 5]))
            part = self.conv(x, str(rng.choice(["nchw", "nhwc"])), int(rng.integers(3, 25)),
                             (k, k), (stride, stride), (((k - 1) // 2, k // 2),) * 2, fill,
                             rng.random() < 0.5, fold and self.fold_kind())
            parts += [part] if part else []
        joined = parts[0] if parts else None
        for part in parts[1:]:
            joined = self.concatenate(joined, part)
        return joined

    def shuffle_unit(self, x: Value) -> Value | None:
        """ShuffleNetV2's unit: x's channels split in two, one half through a conv (or two),
        concatenated with the other and shuffled — a concatenation of a slice and a kernel
        result that the next block reads through no affine view."""
        if x.layout == "mat" or x.dtype != np.int8 or x.dims[CHANNEL[x.layout]] < 4:
            return None
        c = x.dims[CHANNEL[x.layout]] // 2 * 2
        left, right = self.channels(x, 0, c // 2), self.channels(x, c // 2, c)
        for _ in range(int(self.rng.integers(1, 3))):
            k = int(self.rng.choice([1, 3]))
            right = right and self.conv(right, right.layout, c // 2, (k, k), (1, 1),
                                        (((k - 1) // 2, k // 2),) * 2, self.fill(minimum=False),
                                        self.rng.random() < 0.5, self.fold_kind())
        if right is None or right.dtype != np.int8:
            return None
        return self.shuffle(self.concatenate(left, right), 2)

    def maybe_fold(self) -> str | None:
        """A fold in the kernel's own define (fused into its store), or none."""
        return None if self.rng.random() < 0.4 else self.fold_kind()

    def residual(self, x: Value, layout: str, k: int, fills, mid: int, fold: str | None,
                 linear: bool) -> Value | None:
        """A residual block: same-padded convolutions of ``x`` (one per fill, folded, to ``mid``
        channels but the last, back to x's) summed with ``x`` in x's layout (add-linear, or an
        int32 sum)."""
        c, r = x.dims[CHANNEL[x.layout]], x
        for i, fill in enumerate(fills):
            out = c if i == len(fills) - 1 else mid
            r = self.conv(r, layout, out, (k, k), (1, 1), (((k - 1) // 2, k // 2),) * 2, fill,
                          self.rng.random() < 0.5, fold or self.fold_kind())
            if r is None:
                return None
        return self.add(*((r, x) if self.rng.random() < 0.5 else (x, r)), linear, x.layout)

    def skip(self, x: Value) -> Value | None:
        """``x`` summed with (or concatenated to) an earlier value of its size: a second reader
        of that value, far from its first; or with a fresh input."""
        def readable(v: Value) -> np.ndarray | None:
            fits = v is not x and v.dtype == x.dtype and not (
                v.layout == "mat" and x.layout != "mat" and v.hw is None)
            return convert(v.value, v.layout, x.layout, v.hw) if fits else None
        axis = CHANNEL[x.layout]
        rest = lambda dims: dims[:axis] + dims[axis + 1:]  # noqa: E731
        same, joinable = [], []
        for v in self.values:
            got = readable(v)
            same += [v] if got is not None and got.shape == x.dims else []
            joinable += [v] if got is not None and rest(got.shape) == rest(x.dims) else []
        if same and self.rng.random() < 0.6 or not joinable:
            y = same[int(self.rng.integers(len(same)))] if same else \
                self.leaf(x.dims, x.layout, x.hw) if x.dtype == np.int8 else None
            return y and self.add(x, y, x.dtype == np.int8 and self.rng.random() < 0.7)
        return self.concatenate(x, joinable[int(self.rng.integers(len(joinable)))])

    def block(self, x: Value) -> Value | None:
        """A random block over ``x`` (None when the draw does not apply)."""
        rng = self.rng
        if x.dtype == np.int32:
            draw = rng.random()
            if draw < 0.2:  # one accumulator read by two folds
                return self.add(self.fold(x), self.fold(x), rng.random() < 0.7)
            if draw < 0.35 and x.layout != "mat":
                return self.random_pool(x)
            return self.fold(x) if draw < 0.9 else self.skip(x)
        image = x.layout != "mat" or x.hw is not None
        if image and x.dtype == np.int8:
            for stream, p, make in ((self.extra, DEPTHWISE, self.depthwise_block),
                                    (self.batches, BATCHED, self.batched_block)):
                if stream.random() < p:
                    with self.drawing(stream):
                        y = make(x)
                    if y is not None:
                        return y
        block = str(rng.choice(["conv"] * 3 + ["residual"] * 3 + ["branches"] * 3 +
                               ["pool", "pool", "skip", "skip", "matmul", "global", "relu",
                                "lookup", "lookup", "shuffle", "shuffle"]
                               if image else ["matmul", "matmul", "skip", "relu", "lookup"]))
        if block == "conv":
            return self.random_conv(x)
        if block == "residual":
            fills = [self.fill(minimum=False) for _ in range(int(rng.integers(1, 3)))]
            layout = x.layout if x.layout != "mat" and rng.random() < 0.5 else \
                str(rng.choice(["nchw", "nhwc"]))
            return self.residual(x, layout, int(rng.choice([1, 2, 3, 3, 5])), fills,
                                 int(rng.integers(3, MAX_CHANNELS + 1)), None, rng.random() < 0.7)
        if block == "branches":
            return self.branches(x)
        if block == "shuffle":
            return self.shuffle_unit(x)
        if block == "pool":
            return self.random_pool(x)
        if block == "global":
            return self.global_pool(x)
        if block == "matmul":
            return self.matmul(x, int(rng.integers(3, MAX_CHANNELS + 1)), rng.random() < 0.5,
                               self.maybe_fold())
        if block == "lookup":
            return self.lookup(x, x.layout if x.layout == "mat" or rng.random() < 0.6 else
                               str(rng.choice(["nchw", "nhwc"])))
        return self.skip(x) if block == "skip" else self.relu(x)

    def random_pool(self, x: Value) -> Value | None:
        size = int(self.rng.choice([2, 3]))
        pads = ((0, 0), (0, 0)) if self.rng.random() < 0.5 else \
            tuple(tuple(int(p) for p in self.rng.integers(0, size, 2)) for _ in "hw")
        layout = x.layout if x.layout != "mat" and self.rng.random() < 0.7 else \
            str(self.rng.choice(["nchw", "nhwc"]))
        return self.max_pool(x, layout, size, int(self.rng.choice([1, 2, 2])), pads)

    def random_graph(self) -> Value:
        """An input (an image; a matrix one time in ten), a kernel over it, then 2 … 5 random
        blocks, each over the one before: every define is read by what follows."""
        rng = self.rng
        draw = lambda lo, hi: int(rng.integers(lo, hi + 1))  # noqa: E731
        if rng.random() < 0.1:
            m = self.leaf((draw(3, 64), draw(3, MAX_CHANNELS)), "mat")
            x = self.matmul(m, draw(3, MAX_CHANNELS), rng.random() < 0.5, self.maybe_fold()) \
                or self.matmul(m, 3, True, None)
        else:
            # One image in eight 3×3: a network's last stages, few pixels under many filters.
            side = 3 if rng.random() < 0.125 else None
            x = self.image(str(rng.choice(["nchw", "nhwc"])), draw(3, MAX_CHANNELS),
                           side or draw(3, 16), side or draw(3, 16))
            x = self.random_conv(x) or self.random_conv(x) or self.conv(
                x, x.layout, 3, (1, 1), (1, 1), ((0, 0), (0, 0)), "zero", True, None)
        for _ in range(draw(2, 5)):
            for _attempt in range(4):
                y = self.block(x)
                if y is not None:
                    x = y
                    break
        return x

    def residual_over_sum(self) -> Value:
        """The known miscompile's shape at a random size: s = add-linear(a, b) read by a basic
        block (two same-padded convolutions, each requantize-linear, the first padding with s's
        zero point) and by the block's own residual add-linear."""
        rng = self.rng
        layout = str(rng.choice(["nchw", "nhwc"]))
        c, h, w, k = (int(rng.integers(3, MAX_CHANNELS + 1)), int(rng.integers(3, 17)),
                      int(rng.integers(3, 17)), int(rng.choice([1, 3, 3, 3, 5])))
        while 2 * c * c * k * k * h * w > self.macs and c * h * w > 1:
            if c >= max(h, w):
                c -= 1
            elif h >= w:
                h -= 1
            else:
                w -= 1
        zero = int(rng.integers(-128, 128))
        s = self.add(self.image(layout, c, h, w), self.image(layout, c, h, w), True, None, zero)
        y = self.residual(s, layout, k, (zero, int(rng.integers(-128, 128))), c,
                          "requantize-linear", True)
        self.defines[y.name].tags.add(RESIDUAL)
        return y

    def composition(self, seed: int, kind: str, result: Value) -> Composition:
        """The program of the defines ``result`` reads, and the features of that graph."""
        live, todo = [], [result.name]
        while todo:
            name = todo.pop()
            if name in self.defines and name not in live:
                live.append(name)
                todo += [read for read, _ in self.defines[name].reads]
        order = [name for name in self.defines if name in live]
        features = set().union(*(self.defines[name].tags for name in order))
        readers: dict[str, list[str]] = {}
        for name in order:
            for read, layout in self.defines[name].reads:
                readers.setdefault(read, []).append(layout)
        for name, layouts in readers.items():
            if name in self.defines:
                features |= {"fan-out"} if len(layouts) >= 2 else set()
                features |= {"fan-out 3"} if len(layouts) >= 3 else set()
            features |= {"two layouts"} if len(set(layouts)) >= 2 else set()
        body = "".join(f"(define {name} {self.defines[name].text})\n" for name in order)
        text, used = declare(self.inputs, body + result.name)
        return Composition(seed, text, used, result.value, kind=kind, features=features)


def make(seed: int, array: int = 16) -> Composition:
    """The composition of ``seed``: one time in five the residual block over a residual sum,
    otherwise a random graph."""
    rng = np.random.default_rng(seed)
    composer = Composer(rng, MAX_MACS * array ** 3 // 16 ** 3, seed)
    with np.errstate(all="ignore"):  # the int32 accumulations wrap by design
        if rng.random() < 0.2:
            return composer.composition(seed, RESIDUAL, composer.residual_over_sum())
        return composer.composition(seed, "random graph", composer.random_graph())
