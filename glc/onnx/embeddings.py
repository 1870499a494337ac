"""Token ids: an int64 model input read by Gathers of constant tables (a transformer's word and
position embeddings) becomes an int64 program input, and each Gather a host step, ``gather``
(docs/language.md), that reads the table's rows — exact whatever the table holds:
- a float32 table (a float model, or the embeddings onnxruntime's quantizer leaves float):
  float32 rows;
- QDQ: the table's codes behind a DequantizeLinear, the Gather read by a QuantizeLinear of the
  same parameters (what the quantizer writes; ``Q(DQ(c)) = c``): the codes' rows, with those
  parameters, the QuantizeLinear absorbed;
- QOperator: an int8 or uint8 table (carried as int8, docs/language.md): the codes' rows, whose
  scale the QLinear op that reads them gives, as for an integer image (glc/onnx/translate.py).

The rows are read, not computed, so they stay on the host: a one-hot product on the array
would take vocabulary × width MACs per token (BERT's 30 522 × 768) to copy one row."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from glc.errors import GlcError, printable
from glc.onnx.program import Constant, Float, Quantized
from glc.onnx.quant import carried, scale_of, zero_point


@dataclass(frozen=True)
class Indices:
    """An int64 program input of token ids."""

    name: str
    dims: tuple[int, ...]


def _readers(graph, name: str) -> list:
    return [node for node in graph.nodes if name in node.input]


def _table(graph, name: str) -> np.ndarray | None:
    """The constant ``name`` is, or the constant a DequantizeLinear (QDQ) makes it from."""
    if name in graph.constants:
        return graph.constants[name]
    producer = next((n for n in graph.nodes if name in n.output), None)
    if producer is not None and producer.op_type == "DequantizeLinear" and \
            producer.input[0] in graph.constants:
        return graph.constants[producer.input[0]]
    return None


def id_bound(graph, name: str) -> int:
    """The rows of the smallest table the int64 input ``name`` indexes (its sample ids are drawn
    below it); a GlcError unless every reader is a Gather of a constant table on axis 0 by it."""
    rows = []
    for node in _readers(graph, name):
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        table = _table(graph, node.input[0])
        if node.op_type != "Gather" or list(node.input[1:]) != [name] or axis != 0 or \
                table is None or not table.ndim:
            raise GlcError(f"input '{printable(name)}' is int64; glc imports int64 ids read "
                           "only by Gathers of constant tables on axis 0", graph.path)
        rows.append(table.shape[0])
    if not rows:
        raise GlcError(f"input '{printable(name)}' is int64 and nothing reads it", graph.path)
    return min(rows)


def gather(t, node, attrs) -> None:
    """A Gather of a constant table by the model's int64 ids: a host step reading its rows."""
    ids = t.value(node, 1)
    table = t.value(node, 0)
    if not isinstance(ids, Indices) or not isinstance(table, Constant):
        raise t.error(node, "only a Gather of a constant table by the model's int64 ids is "
                            "supported")
    hint = node.output[0]
    dims = ids.dims + tuple(table.value.shape[1:])
    reader = t.graph.only_consumer(node.output[0])
    if table.quantized is not None and reader is not None and reader.op_type == "QuantizeLinear":
        codes, scale, zero = table.quantized
        if np.size(scale) == 1 and np.size(zero) == 1 and \
                t.qparams(reader, 1, 2) == (float(scale_of(scale).reshape(())),
                                            int(zero_point(zero).reshape(()))):
            name = _rows(t, node, hint, carried(codes), ids)
            out = t.requantized_output(node)
            t.bind(node, Quantized(name, dims, *out))
            t.values[reader.output[0]] = t.values[node.output[0]]
            return
    if table.quantized is None and table.value.dtype in (np.int8, np.uint8):
        from glc.onnx.translate import UNSCALED

        t.bind(node, Quantized(_rows(t, node, hint, carried(table.value), ids), dims,
                               UNSCALED, 0))
        return
    rows = np.asarray(table.value, np.float32)
    t.bind(node, Float(_rows(t, node, hint, rows, ids), dims))


def _rows(t, node, hint: str, table: np.ndarray, ids: Indices) -> str:
    name = t.b.tensor(hint + "_table", table)
    t.host_step(node)
    return t.b.define(hint, f"(gather (access-tensor {name}) (access-tensor {ids.name}))")

