"""Reading an ONNX model: its nodes in order, its initializers as numpy arrays, its input and
output tensors, checked enough that everything after can trust them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from glc.errors import GlcError


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
    if value_info.name in overrides:
        return overrides[value_info.name]
    dims = value_info.type.tensor_type.shape.dim
    if any(not d.HasField("dim_value") for d in dims):
        raise GlcError(f"input '{value_info.name}' has a symbolic shape; give it with "
                       f"--input-shape {value_info.name}=1,3,224,224", path)
    return tuple(int(d.dim_value) for d in dims)


def read_graph(path: str | Path, input_shapes: dict[str, tuple[int, ...]]) -> Graph:
    """The model at ``path`` with ``input_shapes`` overriding its inputs' shapes."""
    import onnx
    from onnx import numpy_helper

    path = str(path)
    try:
        model = onnx.load(path)
    except (OSError, ValueError) as error:
        raise GlcError(f"cannot read ONNX model: {error}", path) from None
    except Exception as error:  # protobuf's DecodeError: not an ONNX file
        raise GlcError(f"not an ONNX model: {error.__class__.__name__}", path) from None
    graph = model.graph
    constants = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            value = next(a for a in node.attribute if a.name == "value")
            constants[node.output[0]] = numpy_helper.to_array(value.t)
    unknown = sorted(set(input_shapes) - {i.name for i in graph.input})
    if unknown:
        raise GlcError(f"--input-shape names no input of the model: {', '.join(unknown)}", path)
    inputs = {}
    for value in graph.input:
        if value.name in constants:
            continue
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        inputs[value.name] = (_dims(value, input_shapes, path), str(dtype))
    nodes = [n for n in graph.node if n.op_type != "Constant"]
    consumers: dict[str, list] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    return Graph(path, nodes, constants, inputs, [o.name for o in graph.output], consumers,
                 list(model.opset_import), model.ir_version)
