"""The float GELUs onnxruntime fuses. A model's float ``x · ½(1 + erf(x/√2))`` — ONNX ops (Div
or Mul by a constant, Erf, Add, Mul, Mul) between a dynamically quantized transformer's products
— is fused by onnxruntime's optimizer into its com.microsoft ``Gelu`` kernel (``BiasGelu`` where
a bias Add precedes it), whose float32 arithmetic is not the ops' one by one: it multiplies by
1/√2 instead of dividing by √2, and rounds ``(0.5·x)·(erf + 1)`` in its own order. The import
asks onnxruntime's optimized graph (glc/onnx/fusions.py) which Erf it fused, and writes each such
GELU as one ``(gelu x)`` (glc/ir/gelu.py, the kernel's arithmetic bit for bit); the bias Add of
a BiasGelu stays the float Add before it, the same one rounding. An Erf onnxruntime leaves alone
is translated op by op, its ``(compute erf)`` MLAS's erf too. An ONNX ``Gelu`` (opset 20, or
com.microsoft's) in the model itself is the same kernel."""

from __future__ import annotations

from dataclasses import dataclass

from glc.onnx.fusions import fused_node
from glc.onnx.graph import label
from glc.onnx.program import Float

# The most nodes a fused GELU spans: the scaling, Erf, Add and two Muls.
MOST_NODES = 5
FUSED = ("Gelu", "BiasGelu")


@dataclass(frozen=True)
class Span:
    """A GELU onnxruntime fuses: ``argument`` the tensor it is of; ``nodes`` the model's nodes
    it replaces, in graph order, the last writing the GELU."""

    argument: str
    nodes: tuple


def find(t, skipped: set[int]) -> list[Span]:
    """The GELUs of ``t``'s graph that onnxruntime fuses, outside the nodes ``skipped`` (float
    islands' tables). onnxruntime's graph is read only where the model has an Erf."""
    graph = t.graph
    erfs = [n for n in graph.nodes if n.op_type == "Erf" and id(n) not in skipped]
    if not erfs:
        return []
    writers = {out: n for n in graph.nodes for out in n.output if out}
    spans = [_span(t, erf, writers) for erf in erfs]
    return [span for span in spans
            if span is not None and not any(id(n) in skipped for n in span.nodes)]


def _span(t, erf, writers) -> Span | None:
    """The fused GELU around ``erf``, or None where onnxruntime's graph has none there."""
    graph = t.graph
    scaling = writers.get(erf.input[0])
    if scaling is None or scaling.op_type not in ("Div", "Mul"):
        return None
    argument = next((name for name in scaling.input if name not in graph.constants), None)
    if argument is None:
        return None
    last = erf
    for _ in range(MOST_NODES - 2):  # Erf → Add → Mul (→ Mul): where onnxruntime's Gelu writes
        last = graph.only_consumer(last.output[0])
        if last is None:
            return None
        fused = fused_node(t, last)
        if fused is not None and fused[0] in FUSED:
            break
    else:
        return None
    if not _fuses(fused, argument, writers):
        return None
    nodes = _between(graph, argument, last, writers)
    if nodes is None or id(erf) not in {id(n) for n in nodes}:
        return None
    inside = {id(n) for n in nodes}
    return Span(argument, tuple(n for n in graph.nodes if id(n) in inside))


def _fuses(fused, argument: str, writers) -> bool:
    """Whether onnxruntime's fused node is the GELU of ``argument``: a Gelu reading it, or a
    BiasGelu reading the inputs of the Add writing it."""
    op, inputs = fused
    if op == "Gelu":
        return inputs[:1] == (argument,)
    add = writers.get(argument)
    return add is not None and add.op_type == "Add" and sorted(add.input) == sorted(inputs)


def _between(graph, argument: str, last, writers) -> list | None:
    """The nodes from ``argument`` to ``last``'s output (constants aside), each of whose
    outputs but the last only they read; None where there are more than a GELU's or a value
    escapes."""
    found = {}
    stack = [last]
    while stack:
        node = stack.pop()
        if id(node) in found:
            continue
        found[id(node)] = node
        if len(found) > MOST_NODES:
            return None
        for name in node.input:
            if name and name != argument and name not in graph.constants:
                if name not in writers:
                    return None
                stack.append(writers[name])
    for node in found.values():
        if node is last:
            continue
        for out in node.output:
            if out in graph.outputs or any(id(r) not in found
                                           for r in graph.consumers.get(out, [])):
                return None
    return list(found.values())


def translate(t, span: Span) -> None:
    """``span``'s GELU as one ``(gelu x)``, bound to its last node's output."""
    first, last = span.nodes[0], span.nodes[-1]
    scaling = next(n for n in span.nodes if span.argument in n.input)
    x = t.as_float(scaling, list(scaling.input).index(span.argument))
    t.host_step(last, "Gelu")
    t.b.comment(f"nodes {label(first)} to {label(last)}: onnxruntime's Gelu")
    t.bind(last, Float(t.b.define(last.output[0], f"(gelu (access-tensor {x.name}))"), x.dims))


def gelu(t, node, attrs) -> None:
    """An ONNX Gelu (opset 20, or com.microsoft's) of a float tensor: onnxruntime's kernel;
    its tanh approximation is another kernel, refused."""
    approximate = attrs.get("approximate", b"none")
    approximate = approximate.decode() if isinstance(approximate, bytes) else approximate
    if approximate != "none":
        raise t.error(node, f"attribute approximate: only 'none' is supported, got "
                            f"'{approximate}'")
    x = t.as_float(node, 0)
    t.host_step(node)
    t.bind(node, Float(t.b.define(node.output[0], f"(gelu (access-tensor {x.name}))"),
                       x.dims))
