"""GRU and LSTM over a fixed sequence (glc/ir/recurrent.py: ``gru``, ``lstm``): forward, one
direction, the default activations, no clip or peepholes. onnxruntime's quantizers leave them
float, so each is a float host step whatever the model's form (docs/onnx.md, "Recurrent
layers"); the products before and after them stay quantized as usual."""

from __future__ import annotations

import numpy as np

from glc.onnx.program import Float, shape

ACTIVATIONS = {"GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _read(t, name: str) -> bool:
    return bool(name) and (name in t.graph.outputs or
                           any(name in n.input for n in t.graph.nodes))


def _recurrent(t, node, attrs) -> None:
    kind = node.op_type
    if _text(attrs.get("direction", "forward")) != "forward":
        raise t.error(node, "attribute direction: only forward is supported")
    if [_text(a) for a in attrs.get("activations", ACTIVATIONS[kind])] != ACTIVATIONS[kind]:
        raise t.error(node, f"attribute activations: only {', '.join(ACTIVATIONS[kind])} are "
                            "supported")
    if "clip" in attrs or attrs.get("layout", 0) or attrs.get("input_forget", 0):
        raise t.error(node, "attributes clip, layout and input_forget are not supported")
    state = 6 if kind == "LSTM" else 5  # the first input after initial_h
    if len(node.input) > 4 and node.input[4]:
        raise t.error(node, "input 5 (sequence_lens) is not supported: every sequence is whole")
    if kind == "LSTM" and len(node.input) > 7 and node.input[7]:
        raise t.error(node, "input 8 (peepholes) is not supported")
    if kind == "LSTM" and len(node.output) > 2 and _read(t, node.output[2]):
        raise t.error(node, "output 3 (the last cell state) is not supported")
    x = t.as_float(node, 0)
    if len(x.dims) != 3:
        raise t.error(node, f"input 1 must be (seq, batch, input), got dims {x.dims}")
    seq, batch, _ = x.dims
    w, r = (np.asarray(t.constant(node, i), np.float32) for i in (1, 2))
    if "hidden_size" not in attrs:
        raise t.error(node, "attribute hidden_size is missing")
    hidden = int(attrs["hidden_size"])
    gates = 4 if kind == "LSTM" else 3
    b = (np.asarray(t.constant(node, 3), np.float32) if len(node.input) > 3 and node.input[3]
         else np.zeros((1, 2 * gates * hidden), np.float32))
    if (w.ndim, r.ndim, b.ndim) != (3, 3, 2):
        raise t.error(node, f"weights of dims {w.shape}, {r.shape} and {b.shape}: W and R "
                            "need 3 dims, B 2")
    if w.shape[0] != 1 or r.shape[0] != 1 or b.shape[0] != 1:
        raise t.error(node, "only one direction is supported")
    hint = node.output[0] or node.output[1]
    operands = [w[0], r[0], b[0]]
    for index in range(5, state + 1):
        state = (np.asarray(t.constant(node, index), np.float32)
                 if len(node.input) > index and node.input[index]
                 else np.zeros((batch, hidden), np.float32))
        if state.size != batch * hidden:
            raise t.error(node, f"input {index + 1} of dims {state.shape}: one direction of "
                                f"({batch}, {hidden}) expected")
        operands.append(state.reshape(batch, hidden))
    names = [t.b.tensor(f"{hint}_{part}", value)
             for part, value in zip(("w", "r", "b", "h0", "c0"), operands, strict=False)]
    args = " ".join(f"(access-tensor {n})" for n in names)
    t.host_step(node)
    if kind == "GRU":
        steps = t.b.define(hint + "_steps", f"(gru (access-tensor {x.name}) {args} "
                                            f"{int(attrs.get('linear_before_reset', 0))})")
    else:
        steps = t.b.define(hint + "_steps", f"(lstm (access-tensor {x.name}) {args})")
    if node.output[0]:  # Y: (seq, directions, batch, hidden)
        dims = (seq, 1, batch, hidden)
        t.values[node.output[0]] = Float(t.b.define(node.output[0], (
            f"(access-reshape (access-tensor {steps}) (access-shape {shape(dims)} (shape)))")),
            dims)
    if len(node.output) > 1 and node.output[1]:  # Y_h: the last step, (directions, batch, hidden)
        t.values[node.output[1]] = Float(t.b.define(node.output[1], (
            f"(access-slice (access-tensor {steps}) 0 {seq - 1} {seq})")), (1, batch, hidden))


TABLE = {
    "GRU": _recurrent,
    "LSTM": _recurrent,
}
