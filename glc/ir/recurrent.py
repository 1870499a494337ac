"""Recurrent layers with a fixed sequence, unrolled over its steps (ONNX GRU and LSTM, forward,
one direction, the default activations): float32 host operators. onnxruntime runs them as float
kernels (its quantizers leave them float), whose products are MLAS's sgemm and whose sigmoid and
tanh are MLAS's polynomials: the order here is theirs as far as its source shows it (the input
products for every step first, then each step's recurrent product added, then the two biases'
sum), but not their roundings, so the result is within float32 rounding of onnxruntime's, not
bit for bit (docs/onnx.md, "Recurrent layers")."""

from __future__ import annotations

import numpy as np

from glc.errors import ShapeError
from glc.ir.types import Access, fmt_dims

GATES = {"gru": 3, "lstm": 4}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


def infer(kind: str, x: Access, w: Access, r: Access, b: Access, h0: Access, *rest) -> Access:
    """``(gru X W R B H0 lbr)`` / ``(lstm X W R B H0 C0)``: X (seq, batch, input); W (gates·
    hidden, input); R (gates·hidden, hidden); B (2·gates·hidden); H0 (and C0) (batch, hidden);
    all float32. The result is every step's hidden state, (seq, batch, hidden)."""
    gates = GATES[kind]
    for arg, a in enumerate((x, w, r, b, h0, *[t for t in rest if isinstance(t, Access)])):
        if a.dtype != "float32":
            raise ShapeError(f"needs float32 operands, got {a.dtype}", arg=arg)
    if len(x.dims) != 3 or len(w.dims) != 2 or len(r.dims) != 2:
        raise ShapeError(f"needs X of 3 dims and W, R of 2, got {fmt_dims(x.dims)}, "
                         f"{fmt_dims(w.dims)}, {fmt_dims(r.dims)}")
    seq, batch, width = x.dims
    hidden = r.dims[1]
    expected = [(gates * hidden, width), (gates * hidden, hidden), (2 * gates * hidden,),
                (batch, hidden)]
    operands = [w, r, b, h0] + ([rest[0]] if kind == "lstm" else [])
    expected += [(batch, hidden)] if kind == "lstm" else []
    for arg, (a, dims) in enumerate(zip(operands, expected, strict=True), start=1):
        if a.dims != dims:
            raise ShapeError(f"needs dims {fmt_dims(dims)}, got {fmt_dims(a.dims)}", arg=arg)
    return Access((seq, batch, hidden), (), "float32")


def _inputs(x, w, b, gates):
    """Every step's input products (one sgemm over the sequence, as onnxruntime computes them
    first) and the per-gate sum of the two biases."""
    seq, batch, width = x.shape
    products = (x.reshape(seq * batch, width) @ w.T).astype(np.float32)
    half = b.shape[0] // 2
    return products.reshape(seq, batch, -1), (b[:half] + b[half:]).astype(np.float32)


def gru(x, w, r, b, h0, linear_before_reset: int) -> np.ndarray:
    """ONNX GRU (gates z, r, h): ``z = σ(xWz + hRz + Wbz + Rbz)``, ``r`` likewise,
    ``n = tanh(xWh + (r ⊙ h)Rh + Rbh + Wbh)`` (with ``linear_before_reset``,
    ``tanh(xWh + r ⊙ (hRh + Rbh) + Wbh)``), ``h' = (1 − z) ⊙ n + z ⊙ h``."""
    hidden = r.shape[1]
    products, bias = _inputs(x, w, b, 3)
    wb, rb = b[:3 * hidden], b[3 * hidden:]
    h = h0.astype(np.float32)
    out = []
    for step in products:
        zr = (step[:, :2 * hidden] + (h @ r[:2 * hidden].T).astype(np.float32)
              + bias[:2 * hidden]).astype(np.float32)
        z, rg = _sigmoid(zr[:, :hidden]), _sigmoid(zr[:, hidden:])
        rh = r[2 * hidden:]
        if linear_before_reset:
            recurrent = (rg * ((h @ rh.T).astype(np.float32) + rb[2 * hidden:])).astype(np.float32)
            n = np.tanh(step[:, 2 * hidden:] + recurrent + wb[2 * hidden:])
        else:
            n = np.tanh(step[:, 2 * hidden:] + ((rg * h) @ rh.T).astype(np.float32)
                        + bias[2 * hidden:])
        h = ((np.float32(1) - z) * n.astype(np.float32) + z * h).astype(np.float32)
        out.append(h)
    return np.stack(out).astype(np.float32)


def lstm(x, w, r, b, h0, c0) -> np.ndarray:
    """ONNX LSTM (gates i, o, f, c; no peepholes): ``i = σ(xWi + hRi + Wbi + Rbi)``, ``o``, ``f``
    likewise, ``g = tanh(xWc + hRc + Wbc + Rbc)``, ``C' = f ⊙ C + i ⊙ g``,
    ``h' = o ⊙ tanh(C')``."""
    hidden = r.shape[1]
    products, bias = _inputs(x, w, b, 4)
    h, c = h0.astype(np.float32), c0.astype(np.float32)
    out = []
    for step in products:
        gates = (step + (h @ r.T).astype(np.float32) + bias).astype(np.float32)
        i, o, f = (_sigmoid(gates[:, k * hidden:(k + 1) * hidden]) for k in range(3))
        g = np.tanh(gates[:, 3 * hidden:]).astype(np.float32)
        c = (f * c + i * g).astype(np.float32)
        h = (o * np.tanh(c)).astype(np.float32)
        out.append(h)
    return np.stack(out).astype(np.float32)
