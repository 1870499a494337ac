"""Float islands as tables: a quantized graph's elementwise float ops between one activation's
DequantizeLinear and a QuantizeLinear (QDQ), or a com.microsoft unary QLinear op (QOperator),
become one ``table-lookup`` (docs/onnx.md, "Tables").

Such an island is a function of one int8 code: whatever its ops (Sigmoid, GELU's Div, Erf, Add
and Mul, HardSwish, Clip, LeakyRelu, …), its 256 results are its whole behaviour. They are
computed by onnxruntime itself, running the island's own nodes (the constants they read, and
the nodes computing those, included) as a model of its own on the 256 codes, with the reference
run's session options: the table is what onnxruntime computes, by construction, however its
kernels evaluate the float ops (MLAS's polynomial Erf and Logistic, or a fused QLinearSigmoid's
own table). The accelerator reads it with VECTOR ``lut`` (docs/isa.md).

An island's ops act elementwise and every constant they read is one value, or one per channel
where it holds a BatchNormalization (axis 1: DenseNet's after a Concat, with (C, 1, 1)
constants broadcast over the map after it): then it is a function of the code and the
channel, a table per channel (``table-lookup-channels``), computed by onnxruntime on every
code in every channel. (A Mul or Add by a per-channel constant alone is left to
glc/onnx/binary.py: whether onnxruntime fuses it depends on the model around it.) It may
read several activations where each is itself a table of one activation's codes — SiLU,
``x · σ(x)``, reads ``x`` and the Sigmoid island's result, GELU reads ``x`` and
``erf(x / √2) + 1`` — and is then a table of those codes too: onnxruntime runs it on the 256
codes of that activation and, for each activation read, the codes its table gives
(``Translator.codes`` records what each activation is a table of). Where the activations it
reads are no tables of one, its nodes are translated one by one as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from glc.ir.quantized import TABLE_ENTRIES

# Float ops that act elementwise on their varying input, the rest of their inputs constants.
ELEMENTWISE = frozenset({
    "Abs", "Add", "Ceil", "Celu", "Clip", "Cos", "Div", "Elu", "Erf", "Exp", "Floor", "Gelu",
    "HardSigmoid", "HardSwish", "Identity", "LeakyRelu", "Log", "Max", "Min", "Mish", "Mul",
    "Neg", "Pow", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Softplus",
    "Softsign", "Sqrt", "Sub", "Tanh", "ThresholdedRelu"})
# Float ops whose constants act per channel (axis 1) whatever their shape.
PER_CHANNEL = frozenset({"BatchNormalization"})
# QOperator's elementwise ops (com.microsoft) by the indices of their activations (each followed
# by its scale and zero point); with all but one constant, an op is a function of one code.
QLINEAR = {"QLinearSigmoid": (0,), "QLinearLeakyRelu": (0,), "QLinearAdd": (0, 3),
           "QLinearMul": (0, 3)}


@dataclass
class Island:
    """The nodes from activations' codes to the codes of ``last``'s output: ``sources``, the
    tensors of codes read (each a DequantizeLinear's input, or a QOperator op's activation);
    ``nodes`` in graph order, the constants' producers and ``last`` included; ``inner``, the
    float nodes only the island reads (the translator skips them)."""

    sources: list[str]
    nodes: list
    last: object
    inner: list
    # Per-channel constants: (channels, axis) each, the axis counted from the start (a
    # PER_CHANNEL op's) or, negative, from the end (a broadcast constant's); empty when every
    # constant is one value.
    channels: frozenset = frozenset()


def find(graph) -> dict[int, Island]:
    """Every island of ``graph``, by the id of its last node (a QuantizeLinear, or a QOperator
    unary op); the nodes before it in each are the translator's to skip."""
    producer = {out: node for node in graph.nodes for out in node.output}
    constant = _constants(graph)
    found: dict[int, Island] = {}
    for node in graph.nodes:
        if node.op_type in QLINEAR and node.domain == "com.microsoft":
            island = _qlinear(graph, node, producer, constant)
        elif node.op_type == "QuantizeLinear":
            island = _qdq(graph, node, producer, constant)
        else:
            continue
        if island is not None:
            found[id(node)] = island
    return found


def _constants(graph) -> set[str]:
    """The tensors that are constants: initializers, and the outputs of nodes reading only
    constants (a DequantizeLinear of quantized constants). One pass in graph order (ONNX's
    nodes are topologically sorted); computed once, so a deep network costs one walk."""
    constant = set(graph.constants)
    for node in graph.nodes:
        if all(i in constant for i in node.input if i):
            constant.update(node.output)
    return constant


def _constant_cone(name: str, producer, constant: set[str], cone: list) -> bool:
    """Whether ``name`` is a constant; the nodes computing it join ``cone``. The walk goes
    back through constants only, never along an activation's chain of producers."""
    if name not in constant:
        return False
    todo = [name]
    while todo:
        node = producer.get(todo.pop())
        if node is not None and node not in cone:
            cone.append(node)
            todo.extend(i for i in node.input if i)
    return True


def _qdq(graph, quantize, producer, constant: set[str]) -> Island | None:
    """The island ending in ``quantize``: elementwise float nodes back to one activation's
    DequantizeLinear, each output read only inside the island."""
    first = producer.get(quantize.input[0])
    if first is None or first.op_type not in ELEMENTWISE | PER_CHANNEL:
        return None
    inside, cone, sources, todo = [first], [], set(), [first]
    while todo:
        node = todo.pop()
        for name in (i for i in node.input if i):
            if _constant_cone(name, producer, constant, cone):
                continue
            before = producer.get(name)
            if before is None:  # a graph input: float, not codes
                return None
            if before.op_type == "DequantizeLinear":
                sources.add(name)
            elif before.op_type in ELEMENTWISE | PER_CHANNEL:
                if before not in inside:
                    inside.append(before)
                    todo.append(before)
            else:
                return None
    if not sources:
        return None
    for node in inside:
        for out in node.output:
            readers = graph.consumers.get(out, [])
            if out in graph.outputs or any(r not in inside and r is not quantize
                                           for r in readers):
                return None
    channels = _channels(graph, cone, [*inside, quantize])
    if channels is None or channels and not any(n.op_type in PER_CHANNEL for n in inside):
        # A Mul or Add of a per-channel constant is onnxruntime's QLinearMul / QLinearAdd where
        # its optimizer fuses it, which depends on the model around it (its int8-to-uint8
        # rewrite needs the QuantizeLinear before the DequantizeLinear): the island run alone
        # would not be fused alike. glc/onnx/binary.py follows that rule.
        return None
    dequantizes = [producer[name] for name in sorted(sources)]
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    nodes = sorted([*dequantizes, *cone, *inside, quantize], key=lambda n: order[id(n)])
    return Island([d.input[0] for d in dequantizes], nodes, quantize,
                  sorted(inside, key=lambda n: order[id(n)]), channels)


def _qlinear(graph, node, producer, constant: set[str]) -> Island | None:
    """The QOperator op ``node`` as an island: its activations read, the rest constants."""
    cone: list = []
    varying = {k for k in QLINEAR[node.op_type]
               if not _constant_cone(node.input[k], producer, constant, cone)}
    others = [name for k, name in enumerate(node.input) if name and k not in varying]
    if not varying or not all(_constant_cone(name, producer, constant, cone) for name in others):
        return None
    if _channels(graph, cone, [node], skip=varying) != frozenset():
        return None
    return Island([node.input[k] for k in sorted(varying)], [*cone, node], node, [])


def _channels(graph, cone: list, nodes: list, skip: set[int] = frozenset()) -> frozenset | None:
    """What the constants the ``nodes`` read (but their inputs at ``skip``) vary along: an
    empty set when each is one value (one function of a code, whatever the element), else the
    (channels, axis) of each per-channel one (a function of the code and the channel, see
    ``Island.channels``); None when a constant varies otherwise."""
    found = set()
    made = {out for n in cone for out in n.output}
    for node in nodes:
        for k, name in enumerate(node.input):
            if k in skip or not name or (name not in graph.constants and name not in made):
                continue
            dims = _shape(name, graph, cone)
            if dims is None:
                return None
            if math.prod(dims) == 1:
                continue
            if node.op_type in PER_CHANNEL and len(dims) == 1:
                found.add((dims[0], 1))
                continue
            varying = [a for a, d in enumerate(dims) if d != 1]
            if len(varying) != 1:
                return None
            found.add((dims[varying[0]], varying[0] - len(dims)))
    return frozenset(found)


def _shape(name: str, graph, cone: list) -> tuple[int, ...] | None:
    """The dims of a constant, made by the cone's nodes or not: a DequantizeLinear's are its
    codes', an elementwise op's its inputs' broadcast; None where that does not say."""
    if name in graph.constants:
        return tuple(graph.constants[name].shape)
    node = next(n for n in cone if name in n.output)
    inputs = [_shape(i, graph, cone) for i in node.input if i]
    if node.op_type == "DequantizeLinear":
        return inputs[0]
    if node.op_type not in ELEMENTWISE or any(d is None for d in inputs):
        return None
    try:
        return tuple(np.broadcast_shapes(*inputs))
    except ValueError:
        return None


def table(graph, island: Island, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The island's results, as int8 codes (uint8 ones carried as int8, u − 128,
    docs/language.md), for ``feeds``, the codes of each source (256 each, or any dims, in the
    model's own type), by onnxruntime on the island alone."""
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    out = island.last.output[0]
    used = {i for n in island.nodes for i in n.input if i in graph.constants}
    last = island.last
    out_zero = last.input[-1] if last.op_type != "QuantizeLinear" else \
        (last.input[2] if len(last.input) > 2 else "")
    out_type = graph.constants[out_zero].dtype if out_zero else np.dtype(np.uint8)
    model = helper.make_model(
        helper.make_graph(
            island.nodes, "island",
            [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype),
                                           list(v.shape)) for name, v in feeds.items()],
            [helper.make_tensor_value_info(out, helper.np_dtype_to_tensor_dtype(out_type),
                                           list(next(iter(feeds.values())).shape))],
            [numpy_helper.from_array(graph.constants[name], name) for name in sorted(used)]),
        opset_imports=graph.opsets)
    model.ir_version = graph.ir_version
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return _as_int8(session.run(None, feeds)[0])


def _as_int8(codes: np.ndarray) -> np.ndarray:
    """int8 or uint8 codes as the program carries them: int8, uint8 less 128."""
    return codes.astype(np.int8) if codes.dtype == np.int8 else \
        (codes.astype(np.int16) - 128).astype(np.int8)


def _in_type(codes: np.ndarray, signed: bool) -> np.ndarray:
    """int8 codes as the model's tensor holds them: int8, or uint8 (plus 128)."""
    return codes if signed else (codes.astype(np.int16) + 128).astype(np.uint8)


IDENTITY = np.arange(-128, 128, dtype=np.int8)  # an activation as a table of its own codes


def translate(t, island: Island) -> bool:
    """Bind the island's last output to the ``table-lookup`` of the activation every source is
    a table of; False (nothing bound) where they are tables of no one activation."""
    from glc.onnx.program import Dequantized, Quantized

    last = island.last
    read = []  # (source tensor, its activation, whether its codes are int8)
    for name in island.sources:
        if last.op_type == "QuantizeLinear":  # the codes' DequantizeLinear says their type
            dequantize = next(n for n in island.nodes if n.op_type == "DequantizeLinear"
                              and n.input[0] == name)
            value = t.values.get(dequantize.output[0])
            if not isinstance(value, Dequantized):
                return False
            read.append((name, value.of, value.offset == 0))
        else:  # a QOperator activation: its zero point follows its scale
            value = t.values.get(name)
            if not isinstance(value, Quantized):
                return False
            read.append((name, value, t.offset(last, list(last.input).index(name) + 2) == 0))
    bases = {t.codes.get(q.name, (q, IDENTITY))[0].name for _, q, _ in read}
    if len(bases) != 1:
        return False
    base = t.codes.get(read[0][1].name, (read[0][1], IDENTITY))[0]
    feeds = {name: _in_type(t.codes.get(q.name, (q, IDENTITY))[1], signed)
             for name, q, signed in read}
    out = len(last.input) - 2  # a QOperator op's output scale and zero point come last
    scale, zero = t.qparams(last, 1, 2) if last.op_type == "QuantizeLinear" else \
        t.qparams(last, out, out + 1)
    name = last.output[0]
    op = "table-lookup"
    if island.channels:
        entries = _per_channel(t, island, feeds, base.dims)
        if entries is None:
            return False
        op = "table-lookup-channels"
    else:
        entries = table(t.graph, island, feeds)
    tensor = t.b.tensor(name + "_table", entries)
    t.b.comment(f"float island ({', '.join(n.op_type for n in island.nodes)}) as a table"
                f"{' per channel' if island.channels else ''}")
    value = t.b.define(name, f"({op} (access-tensor {base.name}) (access-tensor {tensor}))")
    result = Quantized(value, base.dims, scale, zero)
    if not island.channels:
        t.codes[value] = (base, entries)
    t.bind(last, result)
    return True


def _per_channel(t, island: Island, feeds: dict[str, np.ndarray],
                 dims: tuple[int, ...]) -> np.ndarray | None:
    """The island's (C, 256) tables, its constants all along axis 1 of an activation of
    ``dims``: onnxruntime runs it on an input of those dims' rank holding every code twice in
    every channel (along axis 2, or 0 for a matrix); None unless the constants lie along axis
    1 with C channels and both copies of each code give one result (so the result is a
    function of the code and the channel, whatever the element's place)."""
    rank = len(dims)
    if rank < 2 or any(c != dims[1] or (axis if axis >= 0 else rank + axis) != 1
                       for c, axis in island.channels):
        return None
    along = 0 if rank == 2 else 2
    shape = [1] * rank
    shape[1], shape[along] = dims[1], 2 * TABLE_ENTRIES
    tiled = {}
    for name, codes in feeds.items():
        line = np.concatenate([codes, codes]).reshape([-1 if a == along else 1
                                                       for a in range(rank)])
        tiled[name] = np.ascontiguousarray(np.broadcast_to(line, shape))
    results = np.moveaxis(table(t.graph, island, tiled), [1, along], [0, 1])
    results = results.reshape(dims[1], 2, TABLE_ENTRIES)
    if not np.array_equal(results[:, 0], results[:, 1]):
        return None
    return results[:, 0]
