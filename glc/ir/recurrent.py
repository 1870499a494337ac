"""Recurrent layers with a fixed sequence, unrolled over its steps (ONNX GRU and LSTM, forward,
one direction, the default activations): float32 host operators, bit for bit as onnxruntime's
x86 CPU kernels compute them (its quantizers leave them float). Their products are MLAS's
SGEMM of prepacked weights (glc/ir/sgemm.py, K in slices of 256); an LSTM's σ and tanh and a
GRU's update gate are MLAS's kernels (glc/ir/sigmoid.py, glc/ir/tanh.py); a GRU's reset and
output gates compute tanh inline in scalar C++ (MLAS's coefficients, no FMA), its reset gate
as ½(1 + tanh(x/2)). Read from onnxruntime's source (DeepCpuGru, the LSTM's GateComputations,
rnn_helpers) and checked against onnxruntime 1.32 (tests/onnx/test_import_recurrent.py;
docs/onnx.md, "Recurrent layers")."""

from __future__ import annotations

import numpy as np

from glc.errors import ShapeError
from glc.ir.sgemm import PACKED_STRIDE_K, matmul_float
from glc.ir.sigmoid import mlas_logistic
from glc.ir.tanh import ALPHA, BETA, mlas_tanh
from glc.ir.types import Access, fmt_dims

F = np.float32
FLT_MAX = np.finfo(F).max

GATES = {"gru": 3, "lstm": 4}


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


def _packed(a: np.ndarray, weights: np.ndarray, initial: np.ndarray | None = None):
    """``a`` times ``weights``ᵀ as onnxruntime's RNN kernels compute it: MLAS's SGEMM of a
    prepacked B (the constant W and R), its K in slices of 256, added to ``initial``."""
    return matmul_float(a, weights.T, initial, step=PACKED_STRIDE_K)


def _clip_add_bias(x: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``x + bias`` clipped to ±FLT_MAX (the default ``clip``) as ``std::min``/``std::max`` do:
    an infinity to ±FLT_MAX, a NaN to FLT_MAX."""
    v = (x + bias).astype(F)
    v = np.where(v < FLT_MAX, v, FLT_MAX)
    return np.where(v > -FLT_MAX, v, -FLT_MAX).astype(F)


def _inline_tanh(x: np.ndarray) -> np.ndarray:
    """The tanh onnxruntime's GRU gates compute inline (rnn_helpers, deepcpu): MLAS's
    coefficients (glc/ir/tanh.py), each product and sum rounded apart (scalar C++, no FMA)."""
    x2 = (x * x).astype(F)
    p = np.full(x.shape, ALPHA[0], F)
    for c in ALPHA[1:]:
        p = ((x2 * p).astype(F) + c).astype(F)
    q = np.full(x.shape, BETA[0], F)
    for c in BETA[1:]:
        q = ((x2 * q).astype(F) + c).astype(F)
    return ((x * p).astype(F) / q).astype(F)


def gru(x, w, r, b, h0, linear_before_reset: int) -> np.ndarray:
    """ONNX GRU (gates z, r, h): ``z = σ(xWz + hRz + Wbz + Rbz)``, ``r`` likewise,
    ``n = tanh(xWh + (r ⊙ h)Rh + Rbh + Wbh)`` (with ``linear_before_reset``,
    ``tanh(xWh + r ⊙ (hRh + Rbh) + Wbh)``), ``h' = (1 − z) ⊙ n + z ⊙ h``, in onnxruntime's
    order and roundings (its DeepCpuGru kernel): every step's input products first; then per
    step hR[zr] added to them; r as ½(1 + tanh(x/2)) inline, x clipped to ±20, times h (or
    times hRh + Rbh); (r ⊙ h)Rh added to the input product (or r ⊙ (hRh + Rbh) added to it);
    z as MLAS's logistic; n as the inline tanh, x clipped to ±10; each bias added with the
    default clip. An absent B is zeros here (onnxruntime then adds none: the two differ only
    in the sign of an exact zero)."""
    hidden = r.shape[1]
    seq, batch, width = x.shape
    products = _packed(x.reshape(seq * batch, width), w).reshape(seq, batch, 3 * hidden)
    wb, rb = b[:3 * hidden], b[3 * hidden:]
    both = (wb + rb).astype(F)
    bias_z, bias_r, bias_h = (both[k * hidden:(k + 1) * hidden] for k in range(3))
    rz, rh = r[:2 * hidden], r[2 * hidden:]
    h = h0.astype(F)
    out = []
    for step in products:
        zr = _packed(h, rz, step[:, :2 * hidden])
        reset = np.clip(_clip_add_bias(zr[:, hidden:], bias_r), F(-20), F(20))
        reset = (F(0.5) * (F(1) + _inline_tanh((F(0.5) * reset).astype(F))).astype(F)).astype(F)
        if linear_before_reset:
            linear = _packed(h, rh, np.broadcast_to(rb[2 * hidden:], (batch, hidden)))
            n = (step[:, 2 * hidden:] + (linear * reset).astype(F)).astype(F)
            n = _clip_add_bias(n, wb[2 * hidden:])
        else:
            n = _clip_add_bias(_packed((h * reset).astype(F), rh, step[:, 2 * hidden:]), bias_h)
        z = mlas_logistic(_clip_add_bias(zr[:, :hidden], bias_z))
        n = _inline_tanh(np.clip(n, F(-10), F(10)))
        h = (((F(1) - z).astype(F) * n).astype(F) + (z * h).astype(F)).astype(F)
        out.append(h)
    return np.stack(out).astype(F)


def lstm(x, w, r, b, h0, c0) -> np.ndarray:
    """ONNX LSTM (gates i, o, f, c; no peepholes): ``i = σ(xWi + hRi + Wbi + Rbi)``, ``o``, ``f``
    likewise, ``g = tanh(xWc + hRc + Wbc + Rbc)``, ``C' = f ⊙ C + i ⊙ g``,
    ``h' = o ⊙ tanh(C')``, in onnxruntime's order and roundings (its DeepCpuLstm kernel): every
    step's input products first, then per step hR added to them; each gate's two biases summed
    once and added with the default clip; σ and tanh MLAS's kernels; ``C ⊙ f`` and ``i ⊙ g``
    rounded apart, then summed (no FMA). An absent B is zeros, as for the GRU."""
    hidden = r.shape[1]
    seq, batch, width = x.shape
    products = _packed(x.reshape(seq * batch, width), w).reshape(seq, batch, 4 * hidden)
    half = b.shape[0] // 2
    bias = (b[:half] + b[half:]).astype(F)
    h, c = h0.astype(F), c0.astype(F)
    out = []
    for step in products:
        gates = _packed(h, r, step)
        i, o, f, g = (_clip_add_bias(gates[:, k * hidden:(k + 1) * hidden],
                                     bias[k * hidden:(k + 1) * hidden]) for k in range(4))
        i, o, f, g = mlas_logistic(i), mlas_logistic(o), mlas_logistic(f), mlas_tanh(g)
        c = ((c * f).astype(F) + (i * g).astype(F)).astype(F)
        h = (mlas_tanh(c) * o).astype(F)
        out.append(h)
    return np.stack(out).astype(F)
