"""Reading an ONNX model: its nodes in order, its initializers as numpy arrays, its input and
output tensors, checked enough that everything after can trust them: a file that is no model, a
model the ONNX checker refuses (dangling or cyclic inputs, nodes out of order, unknown domains,
initializers whose data disagrees with their dims), duplicate node names, inputs of no shape or
of dims glc cannot hold, an ``--input-shape`` that contradicts the model, and an output that is a
constant are each one line naming the file and, where there is one, the node or tensor."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from glc.errors import GlcError, printable
from glc.ir.check import size_problem
from glc.ir.types import fmt_dims


def label(node) -> str:
    """How errors and comments name a node: its name, else its first output, printable."""
    return printable(node.name or (node.output[0] if node.output else f"({node.op_type})"))


@dataclass
class Graph:
    """An ONNX graph as the importer walks it."""

    path: str
    nodes: list
    constants: dict[str, np.ndarray]
    inputs: dict[str, tuple[tuple[int, ...], str]]
    outputs: list[str]
    consumers: dict[str, list] = field(default_factory=dict)
    opsets: list = field(default_factory=list)  # the model's opset imports
    ir_version: int = 8

    def only_consumer(self, tensor: str):
        """The one node reading ``tensor`` (None if it has none or several, or is an output)."""
        readers = self.consumers.get(tensor, [])
        if len(readers) != 1 or tensor in self.outputs:
            return None
        return readers[0]


def attributes(node) -> dict:
    """A node's attributes as Python values."""
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _dims(value_info, overrides: dict[str, tuple[int, ...]], path: str) -> tuple[int, ...]:
    """An input's dims: the model's, with ``--input-shape`` giving those it leaves symbolic."""
    name = printable(value_info.name)
    tensor = value_info.type.tensor_type
    given = overrides.get(value_info.name)
    if not tensor.HasField("shape"):
        if given is None:
            raise GlcError(f"input '{name}' has no shape; give it with --input-shape "
                           f"{name}=1,3,224,224", path)
        return given
    dims = tensor.shape.dim
    if given is not None:
        if len(given) != len(dims):
            raise GlcError(f"--input-shape gives input '{name}' {len(given)} dims; the model "
                           f"gives it {len(dims)}", path)
        for k, (d, g) in enumerate(zip(dims, given, strict=True)):
            if d.HasField("dim_value") and d.dim_value != g:
                raise GlcError(f"--input-shape gives dim {k} of input '{name}' as {g}; the "
                               f"model fixes it at {d.dim_value}", path)
        return given
    if any(not d.HasField("dim_value") for d in dims):
        raise GlcError(f"input '{name}' has a symbolic shape; give it with --input-shape "
                       f"{name}=1,3,224,224", path)
    found = tuple(int(d.dim_value) for d in dims)
    if any(d < 1 for d in found):
        raise GlcError(f"input '{name}' has dims {fmt_dims(found)}; glc imports inputs whose "
                       "every dim is positive", path)
    return found


def _load(path: str):
    """The ModelProto at ``path``, or a GlcError saying why it is none."""
    import onnx

    try:
        empty = Path(path).stat().st_size == 0
        model = None if empty else onnx.load(path)
    except OSError as error:
        raise GlcError(f"cannot read ONNX model: {error.strerror or error}", path) from None
    except onnx.checker.ValidationError as error:  # raised reading external data
        raise GlcError(f"cannot load the model's external data: {_one_line(error)}",
                       path) from None
    except Exception as error:  # protobuf's DecodeError (its module varies): not an ONNX file
        raise GlcError(f"not an ONNX model (protobuf cannot decode it: "
                       f"{error.__class__.__name__})", path) from None
    if model is None:
        raise GlcError("the file is empty, not an ONNX model", path)
    if not model.HasField("graph") or not model.graph.output:
        raise GlcError("not an ONNX model: it holds no graph with an output", path)
    return model


def _one_line(error: Exception) -> str:
    return printable(" ".join(str(error).split()))


def _check_text(model, path: str) -> None:
    """Every name glc reads is text: ONNX strings are UTF-8, but protobuf hands a string field
    that is not back as bytes, which no name, comment or error can hold."""
    graph = model.graph
    named = [*graph.input, *graph.output, *graph.initializer, *graph.value_info]
    strings = [v.name for v in named]
    for node in graph.node:
        strings += [node.name, node.op_type, node.domain, *node.input, *node.output,
                    *(a.name for a in node.attribute)]
    strings += [o.domain for o in model.opset_import]
    bad = next((s for s in strings if not isinstance(s, str)), None)
    if bad is not None:
        raise GlcError(f"a name in the model is not UTF-8 text: {printable(repr(bad))}", path)


def _check(model, path: str) -> None:
    """The ONNX checker's verdict (without shape inference), then what it lets through and
    glc would trip on."""
    import onnx

    # The checker requires every graph input and output to give a shape; ONNX and onnxruntime
    # do not (an exporter may leave the output's out). An empty one stands in while it checks.
    unshaped = [v.type.tensor_type for v in [*model.graph.input, *model.graph.output]
                if v.type.HasField("tensor_type") and not v.type.tensor_type.HasField("shape")]
    for tensor in unshaped:
        tensor.shape.SetInParent()
    try:
        try:
            onnx.checker.check_model(model)
        except ValueError:  # past protobuf's 2 GB: the checker reads the file itself
            onnx.checker.check_model(path)
    except (onnx.checker.ValidationError, ValueError) as error:
        raise GlcError(f"invalid ONNX model: {_one_line(error)}", path) from None
    finally:
        for tensor in unshaped:
            tensor.ClearField("shape")
    newest = onnx.defs.onnx_opset_version()
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version > newest:
            raise GlcError(f"the model uses opset {opset.version}; this onnx knows opsets up to "
                           f"{newest}", path)
    named: set[str] = set()
    for node in model.graph.node:
        if node.name and node.name in named:
            raise GlcError(f"two nodes are named '{label(node)}'", path)
        named.add(node.name)


def _constants(model, path: str) -> dict[str, np.ndarray]:
    """The initializers and Constant nodes' tensors as numpy arrays (numbers only)."""
    from onnx import numpy_helper

    found = {}
    tensors = [(i.name, i) for i in model.graph.initializer]
    for node in model.graph.node:
        if node.op_type == "Constant":
            value = next((a for a in node.attribute if a.name == "value" and a.HasField("t")),
                         None)
            if value is None:
                raise GlcError(f"node '{label(node)}' (Constant): only a tensor 'value' is "
                               "supported", path)
            tensors.append((node.output[0], value.t))
    for name, tensor in tensors:
        try:
            array = numpy_helper.to_array(tensor)
        except Exception as error:  # onnx's own errors for data that disagrees with its dims
            raise GlcError(f"tensor '{printable(name)}' cannot be read: {_one_line(error)}",
                           path) from None
        if array.dtype.kind not in "biuf":
            raise GlcError(f"tensor '{printable(name)}' is of type {array.dtype}; glc reads "
                           "numbers", path)
        found[name] = array
    return found


def read_graph(path: str | Path, input_shapes: dict[str, tuple[int, ...]]) -> Graph:
    """The model at ``path`` with ``input_shapes`` overriding its inputs' shapes."""
    import onnx

    path = str(path)
    model = _load(path)
    _check_text(model, path)
    _check(model, path)
    graph = model.graph
    constants = _constants(model, path)
    unknown = sorted(set(input_shapes) - {i.name for i in graph.input})
    if unknown:
        raise GlcError(f"--input-shape names no input of the model: "
                       f"{', '.join(map(printable, unknown))}", path)
    inputs = {}
    for value in graph.input:
        if value.name in constants:
            continue
        try:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        except (KeyError, ValueError):
            raise GlcError(f"input '{printable(value.name)}' has no known element type "
                           f"({value.type.tensor_type.elem_type})", path) from None
        dims = _dims(value, input_shapes, path)
        problem = size_problem(dims)
        if problem:
            raise GlcError(f"input '{printable(value.name)}' has dims {fmt_dims(dims)}: "
                           f"{problem}", path)
        inputs[value.name] = (dims, str(dtype))
    outputs = [o.name for o in graph.output]
    for name in outputs:
        if name in constants or name in inputs:
            kind = "a constant" if name in constants else "an input"
            raise GlcError(f"output '{printable(name)}' is {kind}, not computed by the model",
                           path)
    nodes = [n for n in graph.node if n.op_type != "Constant"]
    consumers: dict[str, list] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    return Graph(path, nodes, constants, inputs, outputs, consumers, list(model.opset_import),
                 model.ir_version)
