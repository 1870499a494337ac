"""The translation: ONNX nodes, in graph order, into ``define``s. ``TABLE`` maps each supported
op type to its translator; QDQ and QOperator forms meet in the same quantized translators
(glc/onnx/layers.py), so a QDQ Conv between DequantizeLinear and QuantizeLinear and a QLinearConv
become the same program."""

from __future__ import annotations

import numpy as np

from glc.errors import GlcError, printable
from glc.ir.types import fmt_dims
from glc.onnx import (
    attention,
    binary,
    dynamic,
    embeddings,
    floats,
    fused_gelu,
    islands,
    layers,
    movement,
    pools,
    recurrent,
)
from glc.onnx.graph import Graph, attributes, label
from glc.onnx.program import Builder, Constant, Dequantized, Float, Quantized, literal
from glc.onnx.quant import NodeError, scale_of, unsupported, zero_point

UNSCALED = float("nan")  # an integer model input's scale, until an op that reads it gives one


class Translator:
    """Walks a graph, binding every ONNX tensor name to a program value."""

    def __init__(self, graph: Graph, builder: Builder):
        self.graph = graph
        self.b = builder
        self.values: dict[str, object] = {}
        self.absorbed: set[int] = set()
        self._floats: dict[str, Float] = {}
        # An activation that is a table of another's codes: (that activation, its table)
        # (glc/onnx/islands.py).
        self.codes: dict[str, tuple[Quantized, np.ndarray]] = {}

    def error(self, node, what: str) -> GlcError:
        return unsupported(node, what, self.graph.path)

    def value(self, node, index: int):
        name = node.input[index] if index < len(node.input) else ""
        if not name:
            return None
        if name in self.graph.constants:
            return Constant(self.graph.constants[name])
        return self.values[name]

    def constant(self, node, index: int) -> np.ndarray:
        v = self.value(node, index)
        if not isinstance(v, Constant):
            raise self.error(node, f"input {index + 1} must be a constant")
        return v.value

    def quantized(self, node, index: int) -> Quantized:
        """Input ``index`` as an int8 activation (QOperator) or the dequantization of one (QDQ)."""
        v = self.value(node, index)
        if isinstance(v, Dequantized):
            return v.of
        if isinstance(v, Quantized):
            return v
        raise self.error(node, f"input {index + 1} is not quantized (only quantized models "
                               "are supported: quantize it with onnxruntime.quantization)")

    def as_float(self, node, index: int) -> Float:
        """Input ``index`` as a float32 program tensor (a DequantizeLinear is written here)."""
        v = self.value(node, index)
        if isinstance(v, Float):
            return v
        if isinstance(v, Dequantized):
            self.as_float_value(v)
            return self._floats[v.of.name]
        if isinstance(v, Constant) and v.value.dtype == np.float32:
            return Float(self.b.tensor(node.input[index], v.value), tuple(v.value.shape))
        raise self.error(node, f"input {index + 1} is not a float tensor")

    def as_float_value(self, value: Dequantized) -> str:
        """The float32 program tensor of a dequantized activation (written once)."""
        q = value.of
        if q.name not in self._floats:
            name = self.b.define(q.name + "_f", f"(dequantize-linear (access-tensor {q.name})"
                                                f" {literal(q.scale)} {q.zero})")
            self._floats[q.name] = Float(name, q.dims)
        return self._floats[q.name].name

    def requantized_output(self, node) -> tuple[float, int] | None:
        """QDQ: the scale and zero point of the QuantizeLinear that alone reads ``node``'s
        output, which is then absorbed (its output is bound to ``node``'s result)."""
        q = self.graph.only_consumer(node.output[0])
        if q is None or q.op_type != "QuantizeLinear":
            return None
        self.absorbed.add(id(q))
        return self.qparams(q, 1, 2)

    def qparams(self, node, scale_index: int, zero_index: int) -> tuple[float, int]:
        """A per-tensor scale and (int8-form) zero point from two of ``node``'s inputs."""
        scale = scale_of(self.constant(node, scale_index))
        zero = (zero_point(self.constant(node, zero_index))
                if zero_index < len(node.input) and node.input[zero_index]
                else np.zeros((), np.int32))
        if scale.size != 1 or zero.size != 1:
            raise self.error(node, "per-channel quantization of an activation is not supported")
        return float(scale.reshape(())), int(zero.reshape(()))

    def weights(self, node, index: int) -> tuple[np.ndarray, np.ndarray]:
        """A quantized weight's int8 values and scale(s); its zero points must be 0."""
        v = self.value(node, index)
        if isinstance(v, Constant) and v.quantized is not None:
            q, scale, zero = v.quantized
        else:
            raise self.error(node, f"input {index + 1} must be quantized weights")
        return self.int8_weights(node, q, scale, zero)

    def int8_weights(self, node, q, scale, zero):
        """Weights ``q`` with their scale(s), checked: int8, every zero point 0."""
        if q.dtype != np.int8:
            raise self.error(node, f"weights of type {q.dtype} are not supported (int8 only)")
        if np.any(np.asarray(zero) != 0):
            raise self.error(node, "weights with a nonzero zero point are not supported")
        return q, scale_of(scale)

    def qlinear_weights(self, node, index: int) -> tuple[np.ndarray, np.ndarray]:
        """QOperator weights: values, scale, zero point at ``index``, ``index+1``, ``index+2``."""
        return self.int8_weights(node, self.constant(node, index),
                                  self.constant(node, index + 1), self.constant(node, index + 2))

    def offset(self, node, index: int) -> int:
        """128 when the zero point at input ``index`` is uint8 (carried as int8,
        docs/language.md), else 0."""
        return 128 if self.constant(node, index).dtype == np.uint8 else 0

    def host_step(self, node, op: str | None = None) -> None:
        """List ``node`` among the import's host ops (a float step the program keeps), as
        ``op`` where it computes a fused kernel's result."""
        self.b.host_ops.append(f"{label(node)} ({op or node.op_type})")

    def bind(self, node, value) -> None:
        self.values[node.output[0]] = value

    def declare_inputs(self) -> None:
        """Bind each model input to a program input of its own: float32, int8/uint8 codes (an
        image already quantized) carried as int8 (a uint8 code u as u − 128, docs/language.md
        "uint8"), or int64 token ids (glc/onnx/embeddings.py). Codes have no scale until a
        DequantizeLinear or a QLinear op reads them with its own (``UNSCALED``: any use before
        is refused)."""
        for name, (dims, dtype) in self.graph.inputs.items():
            if dtype not in ("float32", "int8", "uint8", "int64"):
                raise GlcError(f"input '{printable(name)}' is {dtype}; glc imports float32, "
                               "int8, uint8 and int64 inputs", self.graph.path)
            symbol = self.b.fresh(name)
            if dtype == "int64":  # token ids (glc/onnx/embeddings.py)
                embeddings.id_bound(self.graph, name)
                self.b.declare(symbol, dims, "int64")
                self.values[name] = embeddings.Indices(symbol, dims)
                continue
            if dtype == "float32":
                self.b.declare(symbol, dims, "float32")
                self.values[name] = Float(symbol, dims)
                continue
            self.b.declare(symbol, dims, "int8")
            self.values[name] = Quantized(symbol, dims, UNSCALED, 0)

    def run(self) -> None:
        """Translate every node in graph order (the inputs declared first); a float island
        becomes one table lookup where it can (glc/onnx/islands.py)."""
        found = islands.find(self.graph, TABLE)
        inner = {id(n) for island in found.values() for n in island.inner}
        # each GELU onnxruntime fuses is one (gelu x) where its last node was
        gelus = {id(span.nodes[-1]): span for span in fused_gelu.find(self, inner)}
        self.absorbed.update(id(n) for span in gelus.values() for n in span.nodes[:-1])
        untabled: set[int] = set()  # shared float nodes already translated one by one
        for node in self.graph.nodes:
            if id(node) in self.absorbed or id(node) in inner:
                continue
            if id(node) in gelus:
                fused_gelu.translate(self, gelus[id(node)])
                continue
            island = found.get(id(node))
            if island is not None:
                try:
                    tabled = islands.translate(self, island)
                except NodeError as error:
                    raise self.error(node, str(error)) from None
                if tabled:
                    continue
                for part in island.inner:  # no table: its nodes one by one, here
                    if id(part) not in self.absorbed and id(part) not in untabled:
                        untabled.add(id(part))
                        self._node(part)
                if id(node) in self.absorbed:
                    continue
            self._node(node)

    def _node(self, node) -> None:
        if node.op_type in FOLDED and node.input and all(
                not name or name in self.graph.constants for name in node.input):
            self._fold(node)
            return
        translate = TABLE.get(node.op_type)
        if translate is None and node.op_type in islands.ELEMENTWISE:
            # a float op of the float model input (or of another float op's result) has
            # no codes to make a table of (docs/onnx.md, "Tables")
            raise self.error(node, f"a float {node.op_type} is supported only as a table of "
                                   "quantized codes (of a DequantizeLinear's input)")
        if translate is None:
            raise self.error(node, "this operator is not supported")
        self.b.comment(f"node {label(node)} ({node.op_type})")
        try:
            translate(self, node, attributes(node))
        except NodeError as error:
            raise self.error(node, str(error)) from None


    def _fold(self, node) -> None:
        """A movement of constants (quantize_dynamic's bias reshaped to (1, C, 1, 1)) as the
        constant it makes: moving elements is exact, so ONNX's reference evaluator computes it
        as onnxruntime does."""
        from onnx.reference import ReferenceEvaluator

        feeds = {name: self.graph.constants[name] for name in node.input if name}
        try:
            results = ReferenceEvaluator(node).run(None, feeds)
        except Exception as error:  # the evaluator's own errors derive from Exception only
            raise self.error(node, f"cannot fold its constants: {printable(str(error))}") \
                from None
        for name, value in zip(node.output, results, strict=False):
            if name:
                self.graph.constants[name] = np.asarray(value)


# The ops that only move elements, folded when every input is a constant (Translator._fold).
FOLDED = frozenset({"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Identity"})


# --- QuantizeLinear / DequantizeLinear ------------------------------------------------------

def _quantize(t: Translator, node, attrs) -> None:
    x = t.value(node, 0)
    scale, zero = t.qparams(node, 1, 2)
    if isinstance(x, Constant):
        t.bind(node, Constant(x.value))
        return
    if isinstance(x, Dequantized) and (x.of.scale, x.of.zero) == (scale, zero):
        t.bind(node, x.of)  # Q(DQ(q)) with the same parameters is q
        return
    f = t.as_float(node, 0)
    name = t.b.define(node.output[0], f"(quantize-linear (access-tensor {f.name}) "
                                      f"{literal(scale)} {zero})")
    t.bind(node, Quantized(name, f.dims, scale, zero))


def _dequantize(t: Translator, node, attrs) -> None:
    x = t.value(node, 0)
    if isinstance(x, Constant):
        q = x.value
        scale = scale_of(t.constant(node, 1))
        zero = (t.constant(node, 2) if len(node.input) > 2 and node.input[2]
                else np.zeros_like(scale, dtype=q.dtype))
        value = ((q.astype(np.int64) - _expand(zero, q, attrs)).astype(np.float32)
                 * _expand(scale, q, attrs))
        t.bind(node, Constant(value.astype(np.float32), (q, scale, zero), attrs.get("axis", 1)))
        return
    if isinstance(x, Quantized):
        scale, zero = t.qparams(node, 1, 2)
        if (scale, zero) != (x.scale, x.zero):
            x = Quantized(x.name, x.dims, scale, zero)
        t.bind(node, Dequantized(x, t.offset(node, 2) if len(node.input) > 2 and node.input[2]
                                 else 0))
        return
    raise t.error(node, "input 1 is not an int8 tensor")


def _expand(per_channel: np.ndarray, q: np.ndarray, attrs) -> np.ndarray:
    """A scale or zero point shaped to broadcast over ``q``: one value, or one per channel of
    ``q``'s axis (anything else is the node's error, not numpy's)."""
    per_channel = np.asarray(per_channel)
    if per_channel.size == 1:
        return per_channel.reshape(())
    axis = attrs.get("axis", 1)
    if not -q.ndim <= axis < q.ndim or per_channel.size != q.shape[axis]:
        raise NodeError(f"{per_channel.size} scales or zero points for axis {axis} of a "
                        f"tensor of dims {fmt_dims(q.shape)}: one, or one per channel")
    dims = [1] * q.ndim
    dims[axis % q.ndim] = per_channel.size
    return per_channel.reshape(dims)


def _gather(t: Translator, node, attrs) -> None:
    """A Gather by the model's int64 ids (a row of a constant table: glc/onnx/embeddings.py) or
    by constant indices (a view: glc/onnx/movement.py)."""
    if isinstance(t.value(node, 1), embeddings.Indices):
        embeddings.gather(t, node, attrs)
    else:
        movement.gather(t, node, attrs)


TABLE = {
    "QuantizeLinear": _quantize,
    "DequantizeLinear": _dequantize,
    **layers.TABLE,
    **attention.TABLE,
    **movement.TABLE,
    **pools.TABLE,
    **floats.TABLE,
    **binary.TABLE,
    **dynamic.TABLE,
    **recurrent.TABLE,
    "Gather": _gather,
    "Gelu": fused_gelu.gelu,
}
