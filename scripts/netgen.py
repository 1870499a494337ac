"""Random quantized networks for differential testing of ``glc import`` and the compiler.

``make(seed)`` builds a small random float32 CNN with ``onnx.helper`` — a DAG over one NCHW image
(batch 1, 3–32 channels, 5–24 pixels a side, odd and even) — and quantizes it with onnxruntime's
``quantize_static``, calibrated on seeded random images, or (one seed in five) its
``quantize_dynamic``. Per seed it picks the QDQ, QOperator or dynamic form, uint8 or int8
activations (int8 ones symmetric or, half of them, asymmetric; a dynamic network's are float)
and per-tensor or per-channel weights.

The graph grows block by block from the image, every block reading the current tensor and
sometimes an earlier one of the same map size (so the image and other tensors are read by several
consumers): convolutions (kernels 1/3/5/7, strides 1/2/3, symmetric and lopsided pads, grouped and
depthwise, some dilated), max and average pools, residual Adds whose sum a convolution reads,
branches joined by a Concat, Concats of Concats feeding Adds and convolutions, chains of
elementwise ops (Relu, Clip, Add, Mul and Add by a constant; activations of one input — Sigmoid,
Tanh, HardSwish, LeakyRelu, SiLU — which the import makes tables, or host steps with
onnxruntime's float arithmetic in a dynamic network), ShuffleNet's unit (a Split or
two Slices, a branch conv, a Concat and the channel shuffle), a crop (a Slice of rows and
columns), a squeeze-and-excitation gate (a Mul of the map by a pooled, convolved Sigmoid) and a
convolution whose result nothing reads. The head is a global average pool or a ReduceMean over
H and W, Flatten and Gemm, the pool alone, or the last feature map itself.
Only what docs/onnx.md says the importer takes is generated.

``python scripts/netgen.py --seed S -o model.onnx`` writes one network (and prints its line), for
``glc import model.onnx -o DIR`` and ``glc run DIR --engine isa``; scripts/fuzz.py --networks runs
many against onnxruntime.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from glc.onnx.kernels import session_options

MAX_CHANNELS = 32
KERNELS = (1, 3, 5, 7)
# What the coverage test asks of a sample: every feature of the graph and of the quantization.
FEATURES = ("fan-out", "residual-add-into-conv", "concat-of-concats", "concat-into-add",
            "concat-into-conv", "depthwise", "grouped", "stride-3", "kernel-7", "dead-conv",
            "max-pool", "average-pool", "global-average-pool", "gemm", "map-output",
            "channel-shuffle", "activation", "float-activation", "dilated", "clip",
            "spatial-slice", "gate-mul", "reduce-mean", "QDQ", "QOperator", "dynamic", "uint8",
            "int8", "int8-asymmetric", "per-tensor", "per-channel")


@dataclass
class Network:
    """One generated network: its seed, a line describing its graph and quantization, the
    features it has (of ``FEATURES``) and the quantized model."""

    seed: int
    description: str
    features: frozenset[str]
    model: bytes

    def write(self, path: Path) -> Path:
        path = Path(path)
        path.write_bytes(self.model)
        return path

    def float_products(self) -> int:
        """How many convs and Gemms onnxruntime's optimized graph runs in float32 (its QDQ
        fusion leaves some DequantizeLinear -> Conv -> QuantizeLinear unfused with int8
        activations, docs/onnx.md): their rounding is its sgemm's, which no integer reading
        reproduces, so a disagreement with such a reference may be onnxruntime's."""
        import onnx
        import onnxruntime as ort

        with tempfile.TemporaryDirectory() as tmp:
            options = session_options(Path(tmp) / "optimized.onnx")
            ort.InferenceSession(self.model, options, providers=["CPUExecutionProvider"])
            graph = onnx.load(options.optimized_model_filepath).graph
        return sum(node.op_type in ("Conv", "Gemm", "MatMul") for node in graph.node)


class _Graph:
    """The float graph being built: nodes, seeded initializers, each tensor's (C, H, W), and a
    line per node for the description."""

    def __init__(self, rng: np.random.Generator, shape: tuple[int, int, int]):
        self.rng = rng
        self.nodes: list = []
        self.inits: dict[str, np.ndarray] = {}
        self.shape = {"x": shape}
        self.lines: list[str] = []
        self.count = 0

    def _fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def _weights(self, shape: tuple[int, ...]) -> str:
        from glc.onnx.zoo import _init_values

        name = self._fresh("w")
        self.inits[name] = _init_values(name, shape, self.rng)
        return name

    def _node(self, op: str, inputs: list[str], shape: tuple[int, ...], text: str,
              **attrs) -> str:
        """A node of one output, of ``shape`` without the batch: (C, H, W) or (width,)."""
        from onnx import helper

        out = self._fresh(op[0].lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        self.shape[out] = shape
        self.lines.append(f"{out}={text}")
        return out

    def same_size(self, x: str) -> list[str]:
        """The tensors of ``x``'s map size made so far (the image among them), ``x`` not."""
        return [t for t, s in self.shape.items()
                if len(s) == 3 and t != x and s[1:] == self.shape[x][1:]]

    # The layers ------------------------------------------------------------------------------

    def conv(self, x: str, out: int, kernel: int = 1, stride: int = 1,
             pads: tuple[int, int, int, int] = (0, 0, 0, 0), group: int = 1,
             dilation: int = 1) -> str:
        c, h, w = self.shape[x]
        reach = dilation * (kernel - 1) + 1  # the window's extent, its taps dilation apart
        oh = (h + pads[0] + pads[2] - reach) // stride + 1
        ow = (w + pads[1] + pads[3] - reach) // stride + 1
        inputs = [x, self._weights((out, c // group, kernel, kernel)), self._weights((out,))]
        shown = "" if not any(pads) else f" p{','.join(map(str, pads))}"
        shown += "" if group == 1 else f" g{group}"
        shown += "" if dilation == 1 else f" d{dilation}"
        return self._node("Conv", inputs, (out, oh, ow),
                          f"conv{kernel}x{kernel}/{stride}{shown}({x})->{out}x{oh}x{ow}",
                          kernel_shape=[kernel, kernel], strides=[stride, stride],
                          pads=list(pads), group=group, dilations=[dilation, dilation])

    def same_conv(self, x: str, out: int | None = None) -> str:
        """A stride-1 conv keeping ``x``'s map (kernel 1, 3 or 5), sometimes depthwise."""
        c, h, w = self.shape[x]
        kernel = int(self.rng.choice([k for k in (1, 3, 5) if k // 2 < min(h, w)]))
        pad = kernel // 2
        if out is None and kernel > 1 and c > 1 and self.rng.random() < 0.25:
            return self.conv(x, c, kernel, 1, (pad,) * 4, group=c)
        return self.conv(x, out or self._channels(), kernel, 1, (pad,) * 4)

    def random_conv(self, x: str) -> str:
        """Any conv the map allows: kernel 1/3/5/7, stride 1/2/3, pads of 0 up to half the
        kernel on each side, plain, grouped or depthwise; a 3×3 or 5×5 one sometimes dilated
        by 2 (its taps two pixels apart, the import's zero taps)."""
        rng = self.rng
        c, h, w = self.shape[x]
        kernel = int(rng.choice(KERNELS, p=[0.3, 0.35, 0.2, 0.15]))
        stride = int(rng.choice([1, 2, 3], p=[0.5, 0.3, 0.2])) if min(h, w) >= 6 else 1
        pads = tuple(int(rng.integers(0, kernel // 2 + 1)) for _ in range(4))
        if rng.random() < 0.5:  # mostly the symmetric "same" padding networks use
            pads = (kernel // 2,) * 4
        while kernel > 1 and (h + pads[0] + pads[2] < kernel or w + pads[1] + pads[3] < kernel):
            kernel -= 2
            pads = tuple(min(p, kernel // 2) for p in pads)
        dilation = 2 if kernel in (3, 5) and rng.random() < 0.2 \
            and min(h + pads[0] + pads[2], w + pads[1] + pads[3]) >= 2 * kernel - 1 else 1
        style = rng.random()
        divisors = [g for g in range(2, c) if c % g == 0]
        if style < 0.2 and c > 1:
            return self.conv(x, c, kernel, stride, pads, group=c, dilation=dilation)
        if style < 0.4 and divisors:
            group = int(rng.choice(divisors))
            per = max(1, self._channels() // group)
            return self.conv(x, group * per, kernel, stride, pads, group=group,
                             dilation=dilation)
        return self.conv(x, self._channels(), kernel, stride, pads, dilation=dilation)

    def _channels(self) -> int:
        return int(self.rng.integers(2, 17))

    def pool(self, x: str, op: str) -> str:
        rng = self.rng
        c, h, w = self.shape[x]
        kernel = int(rng.choice([2, 3])) if min(h, w) >= 3 else 2
        stride = int(rng.integers(1, 4)) if min(h, w) >= 6 else 1
        pads = tuple(int(rng.integers(0, kernel)) if rng.random() < 0.4 else 0 for _ in range(4))
        attrs = dict(kernel_shape=[kernel, kernel], strides=[stride, stride], pads=list(pads))
        oh, ow = (-(-(size + begin + end - kernel) // stride) + 1
                  for size, begin, end in ((h, pads[0], pads[2]), (w, pads[1], pads[3])))
        # ceil_mode, but not where its last window would start in the end padding: onnxruntime
        # drops that window and ONNX's shape inference (the quantizer's) keeps it.
        if rng.random() < 0.25 and (oh - 1) * stride < h + pads[0] \
                and (ow - 1) * stride < w + pads[1]:
            attrs["ceil_mode"] = 1
        else:
            oh, ow = ((h + pads[0] + pads[2] - kernel) // stride + 1,
                      (w + pads[1] + pads[3] - kernel) // stride + 1)
        if op == "AveragePool" and any(pads) and rng.random() < 0.5:
            attrs["count_include_pad"] = 1
        shown = "".join(f" {k}" for k in ("ceil_mode", "count_include_pad") if k in attrs)
        shown += "" if not any(pads) else f" p{','.join(map(str, pads))}"
        name = "maxpool" if op == "MaxPool" else "avgpool"
        return self._node(op, [x], (c, oh, ow),
                          f"{name}{kernel}x{kernel}/{stride}{shown}({x})->{c}x{oh}x{ow}", **attrs)

    def add(self, a: str, b: str) -> str:
        return self._node("Add", [a, b], self.shape[a], f"add({a},{b})")

    def relu(self, x: str) -> str:
        return self._node("Relu", [x], self.shape[x], f"relu({x})")

    def activation(self, x: str) -> str:
        kind = str(self.rng.choice(["Sigmoid", "Tanh", "HardSwish", "LeakyRelu", "SiLU"]))
        if kind == "SiLU":
            s = self._node("Sigmoid", [x], self.shape[x], f"sigmoid({x})")
            return self._node("Mul", [x, s], self.shape[x], f"mul({x},{s})")
        attrs = {"alpha": 0.1} if kind == "LeakyRelu" else {}
        return self._node(kind, [x], self.shape[x], f"{kind.lower()}({x})", **attrs)

    def by_constant(self, x: str, op: str) -> str:
        c = self.shape[x][0]
        name = self._fresh("k")
        low, high = (0.5, 1.5) if op == "Mul" else (-0.5, 0.5)
        self.inits[name] = self.rng.uniform(low, high, (c, 1, 1)).astype(np.float32)
        return self._node(op, [x, name], self.shape[x], f"{op.lower()}({x},const)")

    def clip(self, x: str) -> str:
        """ReLU6 (Clip(0, 6): MobileNet's) or a Clip of random bounds around 0."""
        low, high = (0.0, 6.0) if self.rng.random() < 0.5 else \
            (float(self.rng.uniform(-1, 0)), float(self.rng.uniform(0.25, 2)))
        bounds = []
        for value in (low, high):
            bounds.append(self._fresh("k"))
            self.inits[bounds[-1]] = np.array(value, np.float32)
        return self._node("Clip", [x, *bounds], self.shape[x],
                          f"clip({x},{low:.2f},{high:.2f})")

    def crop(self, x: str) -> str:
        """A Slice of the map's rows and columns (constant starts and ends, some negative or
        past the end, as exporters write ``x[:, :, a:b, c:]``), at least 3 pixels left a side."""
        c, h, w = self.shape[x]
        names, spans = {}, []
        for size in (h, w):
            start = int(self.rng.integers(0, size - 2))
            stop = int(self.rng.integers(start + 3, size + 1))
            end = stop - size if stop < size and self.rng.random() < 0.5 else stop
            spans.append((start, stop, int(np.iinfo(np.int64).max) if stop == size
                          and self.rng.random() < 0.5 else end))
        for key, value in (("starts", [s[0] for s in spans]), ("ends", [s[2] for s in spans]),
                           ("axes", [2, 3])):
            names[key] = self._fresh("k")
            self.inits[names[key]] = np.array(value, np.int64)
        (top, bottom, _), (left, right, _) = spans
        shape = (c, bottom - top, right - left)
        return self._node("Slice", [x, names["starts"], names["ends"], names["axes"]], shape,
                          f"slice({x},{top}:{bottom},{left}:{right})->{c}x{shape[1]}x{shape[2]}")

    def gate(self, x: str) -> str:
        """A squeeze-and-excitation gate: the global pool, a 1×1 conv down and one back up,
        a Sigmoid, and the map times the gate: a Mul of two activations broadcast over the
        map."""
        c = self.shape[x][0]
        squeezed = self.relu(self.conv(self.global_pool(x), max(1, c // 4)))
        up = self.conv(squeezed, c)
        gated = self._node("Sigmoid", [up], self.shape[up], f"sigmoid({up})")
        return self._node("Mul", [x, gated], self.shape[x], f"mul({x},{gated})")

    def concat(self, parts: list[str]) -> str:
        c = sum(self.shape[p][0] for p in parts)
        _, h, w = self.shape[parts[0]]
        return self._node("Concat", parts, (c, h, w), f"concat({','.join(parts)})->{c}", axis=1)

    def global_pool(self, x: str) -> str:
        c = self.shape[x][0]
        return self._node("GlobalAveragePool", [x], (c, 1, 1), f"gap({x})")

    def flatten(self, x: str) -> str:
        return self._node("Flatten", [x], self.shape[x][:1], f"flatten({x})")

    def gemm(self, x: str, width: int, out: int) -> str:
        inputs = [x, self._weights((out, width)), self._weights((out,))]
        return self._node("Gemm", inputs, (out,), f"gemm({x})->{out}", transB=1)

    # The blocks: each reads the current tensor and returns the next -------------------------

    def block(self, x: str) -> str:
        rng = self.rng
        if self.shape[x][0] > MAX_CHANNELS:  # concatenations grow: a 1x1 conv narrows again
            return self.conv(x, self._channels())
        kind = rng.choice(["conv", "pool", "residual", "branches", "nested", "dead", "chain",
                           "shuffle", "crop", "gate"],
                          p=[0.12, 0.1, 0.12, 0.12, 0.12, 0.07, 0.12, 0.06, 0.1, 0.07])
        # Not a crop of the image: the quantizer leaves that Slice float, and a float Slice
        # then a table activation is refused (a float op of the float input, docs/onnx.md).
        if kind == "crop" and min(self.shape[x][1:]) >= 6 and x != "x":
            return self.crop(x)
        if kind == "gate" and x != "x":
            return self.gate(x)
        # Not a pool of the image itself: onnxruntime's quantizer leaves that pool float when it
        # is the image's only reader (the import refuses a float pool).
        if kind == "pool" and min(self.shape[x][1:]) >= 2 and x != "x":
            return self.pool(x, str(rng.choice(["MaxPool", "AveragePool"])))
        if kind in ("conv", "pool", "crop", "gate"):  # what is not pooled is convolved
            y = self.random_conv(x)
            return self.relu(y) if rng.random() < 0.5 else y
        if kind == "residual":
            y = self.same_conv(x, self.shape[x][0])
            if rng.random() < 0.3:
                y = self.same_conv(self.relu(y), self.shape[x][0])
            s = self.add(*((x, y) if rng.random() < 0.5 else (y, x)))
            s = self.relu(s) if rng.random() < 0.5 else s
            return self.random_conv(s)
        if kind == "branches":  # one tensor read by two or three branches, then joined
            parts = [self._branch(x) for _ in range(int(rng.integers(2, 4)))]
            if rng.random() < 0.4:
                parts.insert(int(rng.integers(0, len(parts) + 1)), x)
            return self.concat(parts)
        if kind == "nested":
            return self._nested(x)
        if kind == "shuffle":
            return self._shuffle(x)
        if kind == "dead":  # a conv nothing reads: the import and the lowering must drop it
            self.random_conv(x)
            return self.block(x)
        return self._chain(x)

    def _branch(self, x: str) -> str:
        c, h, w = self.shape[x]
        choice = self.rng.integers(0, 4)
        if choice == 0 and min(h, w) >= 2 and x != "x":
            return self._node("MaxPool", [x], (c, h, w), f"maxpool3x3/1 p1({x})",
                              kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
        if choice == 1:
            return self.same_conv(self.conv(x, self._channels()))
        return self.same_conv(x)

    def _shuffle(self, x: str) -> str:
        """ShuffleNetV2's unit: the channels split in two (a Split, or two Slices as torch
        exports ``x[:, :c]``), one half through a conv, concatenated with the other half and
        shuffled (Reshape → Transpose → Reshape)."""
        from onnx import helper

        c, h, w = self.shape[x]
        if c % 2 or c < 4:
            x = self.conv(x, 2 * int(self.rng.integers(2, MAX_CHANNELS // 4 + 1)))
            c = self.shape[x][0]
        half = c // 2
        left, right = self._fresh("s"), self._fresh("s")
        if self.rng.random() < 0.5:
            sizes = self._fresh("k")
            self.inits[sizes] = np.array([half, half], np.int64)
            self.nodes.append(helper.make_node("Split", [x, sizes], [left, right], axis=1,
                                               name=left))
        else:
            bounds = {}
            for name, value in (("lo0", 0), ("hi0", half), ("lo1", -half),
                                ("hi1", np.iinfo(np.int64).max), ("axis", 1)):
                bounds[name] = self._fresh("k")
                self.inits[bounds[name]] = np.array([value], np.int64)
            for out, lo, hi in ((left, "lo0", "hi0"), (right, "lo1", "hi1")):
                self.nodes.append(helper.make_node(
                    "Slice", [x, bounds[lo], bounds[hi], bounds["axis"]], [out], name=out))
        self.shape[left] = self.shape[right] = (half, h, w)
        self.lines.append(f"{left},{right}=split({x})")
        branch = self.same_conv(right, half)
        joined = self.concat([left, branch])
        grouped, flat = self._fresh("k"), self._fresh("k")
        self.inits[grouped] = np.array([1, 2, half, h, w], np.int64)
        self.inits[flat] = np.array([1, c, h, w], np.int64)
        g = self._node("Reshape", [joined, grouped], (2, half, h, w), f"reshape({joined})")
        t = self._node("Transpose", [g], (half, 2, h, w), f"transpose({g})",
                       perm=[0, 2, 1, 3, 4])
        return self._node("Reshape", [t, flat], (c, h, w), f"shuffle({joined})")

    def _earlier(self, x: str) -> str:
        """An earlier tensor of ``x``'s shape, or an earlier one of its map (the image, when
        nothing else) through a 1x1 conv to ``x``'s channels: a second reader either way."""
        same = self.same_size(x)
        exact = [t for t in same if self.shape[t] == self.shape[x]]
        if exact and self.rng.random() < 0.6:
            return str(self.rng.choice(exact))
        if same:
            return self.conv(str(self.rng.choice(same)), self.shape[x][0])
        return self.same_conv(x, self.shape[x][0])

    def _nested(self, x: str) -> str:
        """Concats of Concats, the outer read by an Add or a conv."""
        rng = self.rng
        inner = self.concat([x, self.same_conv(x)] if rng.random() < 0.5
                            else [self.same_conv(x), x])
        others = [t for t in self.same_size(x) if t != inner]
        parts = [self.same_conv(inner), inner]
        if others and rng.random() < 0.5:
            parts.append(str(rng.choice(others)))
        if rng.random() < 0.4:
            parts = [self.concat([inner, self.same_conv(x)]), *parts[:1]]
        rng.shuffle(parts)
        outer = self.concat(parts)
        if self.shape[outer][0] <= MAX_CHANNELS and rng.random() < 0.5:
            return self.add(outer, self._earlier(outer))
        return self.random_conv(outer)

    def _chain(self, x: str) -> str:
        """Two to four elementwise ops in a row (folds on the vector unit); an activation of
        one input (Sigmoid, Tanh, HardSwish, LeakyRelu, SiLU as x·σ(x)) is a float island the
        import makes a table (VECTOR lut), a Clip (ReLU6, or other bounds) one too; in a
        dynamically quantized network both are float host steps."""
        for _ in range(int(self.rng.integers(2, 5))):
            op = self.rng.choice(["relu", "add", "mul", "addc", "activation", "clip"],
                                 p=[0.25, 0.3, 0.1, 0.1, 0.15, 0.1])
            if op == "activation":
                x = self.activation(x)
            elif op == "clip":
                x = self.clip(x)
            elif op == "relu":
                x = self.relu(x)
            elif op == "add":
                x = self.add(x, self._earlier(x))
            else:
                x = self.by_constant(x, "Mul" if op == "mul" else "Add")
        return x

    def head(self, x: str) -> str:
        """The output: a global pool (or a ReduceMean over H and W, torchvision's
        ``x.mean([2, 3])``, keeping its dims or not), flattened, and a Gemm; the pool alone; or
        ``x`` itself. (In the QOperator form with symmetric activations onnxruntime's quantizer
        leaves a Relu before the head float, and the global pool after it: a float host
        step; a ReduceMean is float in every form.)"""
        kind = self.rng.choice(["gemm", "pool", "map"], p=[0.45, 0.2, 0.35])
        if kind == "map":
            return x
        c = self.shape[x][0]
        if self.rng.random() < 0.35:
            keep = int(self.rng.integers(0, 2))
            flat = self._node("ReduceMean", [x], (c, 1, 1) if keep else (c,),
                              f"mean({x},keepdims={keep})", axes=[2, 3], keepdims=keep)
            flat = self.flatten(flat) if keep else flat
        else:
            flat = self.flatten(self.global_pool(x))
        return flat if kind == "pool" else self.gemm(flat, c, int(self.rng.integers(2, 13)))


def _features(graph: _Graph, output: str) -> set[str]:
    """What the float graph holds, read off its nodes (not the generator's choices)."""
    producer = {n.output[0]: n for n in graph.nodes}
    readers = Counter(i for n in graph.nodes for i in n.input if i not in graph.inits)
    found = set()
    if any(count > 1 for count in readers.values()):
        found.add("fan-out")

    def made_by(name: str) -> str:
        node = producer.get(name)
        while node is not None and node.op_type == "Relu":  # a Relu after an op keeps its kind
            node = producer.get(node.input[0])
        return node.op_type if node is not None else "input"

    for node in graph.nodes:
        sources = {made_by(i) for i in node.input if i not in graph.inits}
        if node.op_type == "Conv":
            group = next((a.i for a in node.attribute if a.name == "group"), 1)
            channels = graph.shape[node.input[0]][0]
            kernel = next(a.ints for a in node.attribute if a.name == "kernel_shape")
            strides = next(a.ints for a in node.attribute if a.name == "strides")
            found |= {"residual-add-into-conv"} if "Add" in sources else set()
            found |= {"concat-into-conv"} if "Concat" in sources else set()
            found |= {"depthwise"} if group == channels > 1 else set()
            found |= {"grouped"} if 1 < group < channels else set()
            found |= {"stride-3"} if 3 in strides else set()
            found |= {"kernel-7"} if 7 in kernel else set()
            dilations = next((a.ints for a in node.attribute if a.name == "dilations"), [1])
            found |= {"dilated"} if max(dilations) > 1 else set()
            if not readers[node.output[0]] and node.output[0] != output:
                found.add("dead-conv")
        found |= {"concat-of-concats"} if node.op_type == "Concat" and "Concat" in sources \
            else set()
        found |= {"concat-into-add"} if node.op_type == "Add" and "Concat" in sources else set()
        found |= {"channel-shuffle"} if node.op_type == "Transpose" else set()
        found |= {"spatial-slice"} if node.op_type == "Slice" and len(node.input) > 3 \
            and set(graph.inits[node.input[3]].tolist()) & {2, 3} else set()
        found |= {"gate-mul"} if node.op_type == "Mul" and not set(node.input) & set(
            graph.inits) and graph.shape[node.input[0]] != graph.shape[node.input[1]] else set()
        found |= {"activation"} if node.op_type in ("Sigmoid", "Tanh", "HardSwish",
                                                   "LeakyRelu") else set()
        found |= {{"MaxPool": "max-pool", "AveragePool": "average-pool", "Gemm": "gemm",
                   "GlobalAveragePool": "global-average-pool", "Clip": "clip",
                   "ReduceMean": "reduce-mean"}.get(node.op_type, "")}
    found.discard("")
    if len(graph.shape[output]) == 3 and graph.shape[output][1:] != (1, 1):
        found.add("map-output")
    return found


def _quantize(model, form: str, activations: str, per_channel: bool, seed: int,
              symmetric: bool = True) -> bytes:
    """``model`` quantized as glc/onnx/zoo.py's ``quantize`` does (7-bit weights, seeded
    calibration), but with int8 activations symmetric (unless not ``symmetric``), which that
    helper does not offer; no
    pre-processing, as these graphs have no BatchNormalization to fold. The ``dynamic`` form
    is ``quantize_dynamic``'s (7-bit weights too): ConvInteger products of run-time quantized
    float activations, everything between them float."""
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    from glc.onnx.zoo import _Calibration

    shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)
    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "float.onnx", Path(tmp) / "model.onnx"
        onnx.save(model, source)
        if form == "dynamic":
            quantize_dynamic(str(source), str(out), weight_type=QuantType.QInt8,
                             per_channel=per_channel, reduce_range=True)
            return out.read_bytes()
        quantize_static(
            str(source), str(out), _Calibration("x", shape, 4, seed),
            quant_format=QuantFormat.QDQ if form == "QDQ" else QuantFormat.QOperator,
            activation_type=QuantType.QInt8 if activations == "int8" else QuantType.QUInt8,
            weight_type=QuantType.QInt8, per_channel=per_channel, reduce_range=True,
            extra_options={"ActivationSymmetric": activations == "int8" and symmetric})
        return out.read_bytes()


def make(seed: int) -> Network:
    """The network of ``seed``: the same graph, weights and quantization every time."""
    import logging

    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    channels = int(rng.choice([3, int(rng.integers(3, 33))]))
    height, width = (int(v) for v in rng.integers(5, 25, 2))
    form = str(rng.choice(["QDQ", "QOperator", "dynamic"], p=[0.4, 0.4, 0.2]))
    graph = _Graph(rng, (channels, height, width))
    # A dynamic network's activations are float, quantized to uint8 before each product.
    activations = "float" if form == "dynamic" else str(rng.choice(["uint8", "int8"]))
    per_channel = bool(rng.integers(0, 2))
    x = "x"
    for _ in range(int(rng.integers(2, 6))):
        x = graph.block(x)
    output = graph.head(x)

    model = helper.make_model(
        helper.make_graph(graph.nodes, f"net{seed}",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                         [1, channels, height, width])],
                          [helper.make_tensor_value_info(output, TensorProto.FLOAT,
                                                         [1, *graph.shape[output]])],
                          [numpy_helper.from_array(v, k) for k, v in graph.inits.items()]),
        opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    # The quantizer warns that the model was not pre-processed, once per network.
    logging.getLogger().setLevel(logging.ERROR)
    # Half the int8 networks asymmetric (quantize_static's own default), drawn from a stream of
    # their own so that each seed keeps its graph: onnxruntime fuses their QDQ Adds and pools in
    # int8 where it keeps a tensor's pair int8 (docs/onnx.md, "The type of a fused QDQ kernel").
    asymmetric = activations == "int8" and np.random.default_rng((seed, 1)).random() < 0.5
    quantized = _quantize(model, form, activations, per_channel, seed, not asymmetric)
    granularity = "per-channel" if per_channel else "per-tensor"
    kind = "int8-asymmetric" if asymmetric else activations
    description = (f"{form} {kind} {granularity} x=1x{channels}x{height}x{width}: "
                   + "; ".join(graph.lines) + f" => {output}")
    features = _features(graph, output) | {form, granularity} | ({activations, kind} - {"float"})
    if form == "dynamic" and "activation" in features:
        features |= {"float-activation"}
    return Network(seed, description, frozenset(features), quantized)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("-o", "--out", type=Path, required=True, help="The .onnx file to write.")
    args = parser.parse_args()
    network = make(args.seed)
    network.write(args.out)
    print(f"wrote {args.out}: {network.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
