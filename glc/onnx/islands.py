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

An island's ops act elementwise and every constant they read is one value (a per-channel
constant would make a table per channel; not yet). It may read several activations where each
is itself a table of one activation's codes — SiLU, ``x · σ(x)``, reads ``x`` and the Sigmoid
island's result, GELU reads ``x`` and ``erf(x / √2) + 1`` — and is then a table of those codes
too: onnxruntime runs it on the 256 codes of that activation and, for each activation read, the
codes its table gives (``Translator.codes`` records what each activation is a table of). Where
the activations it reads are no tables of one, its nodes are translated one by one as before.

An island read as float (no QuantizeLinear after it: a graph output, or a float MaxPool of a
Tanh that the quantizer left last) is a float table: its 256 float32 results by onnxruntime,
gathered by code on the host (``gather``) — exact where its op has no float host step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from glc.ir.quantized import TABLE_ENTRIES
from glc.onnx import kernels
from glc.onnx.fusions import float_outputs

# Float ops that act elementwise on their varying input, the rest of their inputs constants.
ELEMENTWISE = frozenset({
    "Abs", "Add", "Ceil", "Celu", "Clip", "Cos", "Div", "Elu", "Erf", "Exp", "Floor", "Gelu",
    "HardSigmoid", "HardSwish", "Identity", "LeakyRelu", "Log", "Max", "Min", "Mish", "Mul",
    "Neg", "Pow", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Softplus",
    "Softsign", "Sqrt", "Sub", "Tanh", "ThresholdedRelu"})
# The readers of an island's float node that may belong to another island.
SHARED = ELEMENTWISE | {"QuantizeLinear"}
# QOperator's elementwise ops (com.microsoft) by the indices of their activations (each followed
# by its scale and zero point); with all but one constant, an op is a function of one code.
QLINEAR = {"QLinearSigmoid": (0,), "QLinearLeakyRelu": (0,), "QLinearAdd": (0, 3),
           "QLinearMul": (0, 3)}


@dataclass
class Island:
    """The nodes from activations' codes to the codes of ``last``'s output: ``sources``, the
    tensors of codes read (each a DequantizeLinear's input, or a QOperator op's activation);
    ``nodes`` in graph order, the constants' producers and ``last`` included; ``inner``, the
    float nodes only islands read (the translator skips them; another island may share
    some)."""

    sources: list[str]
    nodes: list
    last: object
    inner: list


def find(graph, translated=frozenset()) -> dict[int, Island]:
    """Every island of ``graph``, by the id of its last node (a QuantizeLinear, a QOperator
    unary op, or a float op read as float); the nodes before it in each are the translator's
    to skip. ``translated``: the op types the import writes as float host steps of their own
    (a float table is made only of a chain with an op that has none)."""
    producer = {out: node for node in graph.nodes for out in node.output}
    constant = _constants(graph)
    found: dict[int, Island] = {}
    for node in graph.nodes:
        if node.op_type in QLINEAR and node.domain == "com.microsoft":
            island = _qlinear(graph, node, producer, constant)
        elif node.op_type == "QuantizeLinear":
            island = _qdq(graph, node, producer, constant)
        elif _read_as_float(graph, node):
            # a chain the import writes as float host steps (a Relu, a Mul by a constant)
            # stays as it was; one with an op that has none (a Tanh: onnxruntime's
            # polynomial) is a float table
            island = _qdq(graph, node, producer, constant)
            if island is not None and all(n.op_type in translated for n in island.inner
                                          + [node]):
                island = None
        else:
            continue
        if island is not None:
            found[id(node)] = island
    return _shared(graph, found)


def _shared(graph, found: dict[int, Island]) -> dict[int, Island]:
    """The islands whose float nodes are read only by islands: a float op may be read by
    several (MobileNetV3's HardSwish by its QuantizeLinear and by a Relu before another, each
    island a table of the same codes, computing the op again), but a reader that is in no
    island would read a value no island binds. Dropping an island may strand another's
    reader, so the check runs until none is dropped."""
    while True:
        covered = {id(n) for island in found.values() for n in (*island.inner, island.last)}
        stranded = [key for key, island in found.items()
                    if any(id(reader) not in covered
                           for node in island.inner for out in node.output
                           for reader in graph.consumers.get(out, []))]
        if not stranded:
            return found
        for key in stranded:
            del found[key]


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


def _qdq(graph, end, producer, constant: set[str]) -> Island | None:
    """The island ending in ``end``: elementwise float nodes back to one activation's
    DequantizeLinear, each output read only inside the island (or by another). ``end`` is a
    QuantizeLinear, or the island's last float node, read as float (a float table)."""
    quantize = end if end.op_type == "QuantizeLinear" else None
    first = producer.get(end.input[0]) if quantize is not None else end
    if first is None or first.op_type not in ELEMENTWISE:
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
            elif before.op_type in ELEMENTWISE:
                if before not in inside:
                    inside.append(before)
                    todo.append(before)
            else:
                return None
    if not sources:
        return None
    inner = [node for node in inside if node is not end]
    for node in inner:
        for out in node.output:
            readers = graph.consumers.get(out, [])
            # a reader outside may be another island's (kept if it is one: _shared)
            if out in graph.outputs or any(r not in inside and r.op_type not in SHARED
                                           for r in readers):
                return None
    if not _scalars(graph, cone, [*inside, *([quantize] if quantize else [])]):
        return None
    dequantizes = [producer[name] for name in sorted(sources)]
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    nodes = sorted({id(n): n for n in [*dequantizes, *cone, *inside, end]}.values(),
                   key=lambda n: order[id(n)])
    return Island([d.input[0] for d in dequantizes], nodes, end,
                  sorted(inner, key=lambda n: order[id(n)]))


def _read_as_float(graph, node) -> bool:
    """Whether ``node`` may end a float table: an elementwise float op whose output is read as
    float — a graph output, or by a node that is neither elementwise nor a QuantizeLinear (a
    MaxPool of its floats)."""
    if node.op_type not in ELEMENTWISE or node.domain not in ("", "ai.onnx"):
        return False
    out = node.output[0]
    return out in graph.outputs or any(r.op_type not in SHARED
                                       for r in graph.consumers.get(out, []))


def _qlinear(graph, node, producer, constant: set[str]) -> Island | None:
    """The QOperator op ``node`` as an island: its activations read, the rest constants."""
    cone: list = []
    varying = {k for k in QLINEAR[node.op_type]
               if not _constant_cone(node.input[k], producer, constant, cone)}
    others = [name for k, name in enumerate(node.input) if name and k not in varying]
    if not varying or not all(_constant_cone(name, producer, constant, cone) for name in others):
        return None
    if not _scalars(graph, cone, [node], skip=varying):
        return None
    return Island([node.input[k] for k in sorted(varying)], [*cone, node], node, [])


def _scalars(graph, cone: list, nodes: list, skip: set[int] = frozenset()) -> bool:
    """Whether every constant the ``nodes`` read (but their inputs at ``skip``) is one value:
    the island is then one function of a code, whatever the element."""
    made = {out for n in cone for out in n.output}
    for node in nodes:
        for name in (name for k, name in enumerate(node.input) if k not in skip):
            if name in graph.constants and graph.constants[name].size != 1:
                return False
            if name in made and not _one_value(name, graph, cone):
                return False
    return True


def _one_value(name: str, graph, cone: list) -> bool:
    """Whether a constant made by the cone's nodes is one value (its inputs all are)."""
    node = next(n for n in cone if name in n.output)
    return all(graph.constants[i].size == 1 if i in graph.constants else
               _one_value(i, graph, cone) for i in node.input if i)


def table(graph, island: Island, feeds: dict[str, np.ndarray], fuse: bool = True) -> np.ndarray:
    """The island's results, as int8 codes (uint8 ones carried as int8, u − 128,
    docs/language.md), for ``feeds``, the codes of each source (256 each, in the model's own
    type), by onnxruntime on the island alone; without ``fuse`` node by node, its optimizer
    off (the island alone it may fuse where the whole model's graph does not)."""
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    out = island.last.output[0]
    used = {i for n in island.nodes for i in n.input if i in graph.constants}
    last = island.last
    if last.op_type == "QuantizeLinear":
        out_zero = last.input[2] if len(last.input) > 2 else ""
    else:  # a QOperator op's output zero point comes last; a float table has none
        out_zero = last.input[-1] if last.op_type in QLINEAR else None
    out_type = graph.constants[out_zero].dtype if out_zero else \
        np.dtype(np.float32 if out_zero is None else np.uint8)
    model = helper.make_model(
        helper.make_graph(
            island.nodes, "island",
            [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype),
                                           [TABLE_ENTRIES]) for name, v in feeds.items()],
            [helper.make_tensor_value_info(out, helper.np_dtype_to_tensor_dtype(out_type),
                                           [TABLE_ENTRIES])],
            [numpy_helper.from_array(graph.constants[name], name) for name in sorted(used)]),
        opset_imports=graph.opsets)
    model.ir_version = graph.ir_version
    session = ort.InferenceSession(model.SerializeToString(), kernels.session_options(fuse=fuse),
                                   providers=["CPUExecutionProvider"])
    entries = session.run(None, feeds)[0].reshape(TABLE_ENTRIES)
    return entries if out_type == np.float32 else _as_int8(entries)


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
    from glc.onnx.program import Dequantized, Float, Quantized

    last = island.last
    read = []  # (source tensor, its activation, whether its codes are int8)
    for name in island.sources:
        if last.op_type not in QLINEAR:  # the codes' DequantizeLinear says their type
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
    # A QDQ Mul or Add of the island that onnxruntime leaves float in the whole model (an int8
    # GELU's x·(erf(x/√2) + 1)) must be float in the table too: alone, it would be fused into
    # QLinearMul/QLinearAdd, which rounds otherwise (glc/onnx/fusions.py).
    binary = [n for n in island.nodes if n.op_type in ("Mul", "Add")]
    fuse = not binary or not all(n.output[0] in float_outputs(t, n) for n in binary)
    entries = table(t.graph, island, feeds, fuse)
    name = last.output[0]
    if last.op_type not in QLINEAR and last.op_type != "QuantizeLinear":
        # read as float: the island's float32 values, a host gather of the entry of code k
        # at k (a negative code from the end: docs/language.md, gather)
        tensor = t.b.tensor(name + "_table", np.roll(entries, -TABLE_ENTRIES // 2))
        t.b.comment(f"float island ({', '.join(n.op_type for n in island.nodes)}) as a "
                    "float table")
        t.host_step(last)
        t.bind(last, Float(t.b.define(name, f"(gather (access-tensor {tensor}) "
                                            f"(access-tensor {base.name}))"), base.dims))
        return True
    out = len(last.input) - 2  # a QOperator op's output scale and zero point come last
    scale, zero = t.qparams(last, 1, 2) if last.op_type == "QuantizeLinear" else \
        t.qparams(last, out, out + 1)
    tensor = t.b.tensor(name + "_table", entries)
    t.b.comment(f"float island ({', '.join(n.op_type for n in island.nodes)}) as a table")
    value = t.b.define(name, f"(table-lookup (access-tensor {base.name}) "
                             f"(access-tensor {tensor}))")
    result = Quantized(value, base.dims, scale, zero)
    t.codes[value] = (base, entries)
    t.bind(last, result)
    return True
