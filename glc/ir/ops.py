"""The operator table: every Glenside operator defined once, as data.

Each row gives the operator's name, the kinds of its arguments, its shape rule (``infer``: argument
types → result type, raising ShapeError) and, for operators that yield access patterns, its numpy
evaluation (``evaluate``: argument values → result tensor). The reader, printer, shape checker,
interpreter and e-graph analysis all dispatch on this table. Shape rules and semantics are the
language contract's (docs/language.md), after Smith et al., MAPS 2021, §2–3.

Argument kinds: ``access`` (an access pattern or tensor symbol), ``int`` (a non-negative integer
literal), ``number`` (an int or float literal), ``shape``, ``list``, ``access-shape``, ``literal``
(expressions of those values), ``compute-type``, ``pad-type``; a trailing ``*`` repeats the last
kind.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from glc.errors import ShapeError
from glc.ir import dynamic, gather, gelu, normalize, recurrent, sgemm
from glc.ir import quantized as q
from glc.ir.compute import KINDS, Pairs
from glc.ir.types import (
    Access,
    AccessShape,
    ComputeKind,
    Lst,
    Shape,
    accumulator_dtype,
    common_dtype,
    dtype_class,
    fmt_dims,
    is_int,
    min_value,
)

PAD_TYPES = ("zero-padding", "min-padding")


@dataclass(frozen=True)
class Op:
    """One operator: its argument kinds, shape rule and (for access results) evaluation."""

    name: str
    params: tuple[str, ...]
    infer: Callable[..., object]
    evaluate: Callable[..., np.ndarray] | None = None
    doc: str = ""

    @property
    def variadic(self) -> bool:
        return bool(self.params) and self.params[-1].endswith("*")

    def kind_of(self, index: int) -> str:
        """The kind of argument ``index`` (the starred kind repeats)."""
        if self.variadic and index >= len(self.params) - 1:
            return self.params[-1].rstrip("*")
        return self.params[index]

    def arity_ok(self, count: int) -> bool:
        if self.variadic:
            return count >= len(self.params) - 1
        return count == len(self.params)


def _axis(a: Access, k: int, what: str = "axis", inclusive: bool = False) -> None:
    limit = a.ndim + (1 if inclusive else 0)
    if k >= limit:
        raise ShapeError(f"needs {what} {k} to be below {limit} for an access pattern of "
                         f"dims {fmt_dims(a.dims)}")


def _split(dims: tuple[int, ...], n: int, dtype: str) -> Access:
    return Access(tuple(dims[:n]), tuple(dims[n:]), dtype)


def _same_class(a: Access, b: Access) -> str:
    if dtype_class(a.dtype) != dtype_class(b.dtype):
        raise ShapeError(f"needs operands of one dtype class, got {a.dtype} and {b.dtype}")
    return common_dtype(a.dtype, b.dtype)


# --- access-pattern constructors and re-splits -------------------------------------------------

def _infer_access(a: Access, k: int) -> Access:
    _axis(a, k, "access axis", inclusive=True)
    return _split(a.dims, k, a.dtype)


def _infer_windows(a: Access, filters: Shape, strides: Shape) -> Access:
    f, st = filters.dims, strides.dims
    if not len(f) == len(st) == len(a.item):
        raise ShapeError(f"needs one filter and one stride per item dim {fmt_dims(a.item)}, "
                         f"got filters {fmt_dims(f)} and strides {fmt_dims(st)}")
    for j, (dim, fj, sj) in enumerate(zip(a.item, f, st, strict=True)):
        if not 1 <= fj <= dim:
            raise ShapeError(f"needs filter {fj} of item dim {j} within 1..{dim}", arg=1)
        if sj < 1:
            raise ShapeError(f"needs strides of at least 1, got {fmt_dims(st)}", arg=2)
    windows = tuple((i - fj) // sj + 1 for i, fj, sj in zip(a.item, f, st, strict=True))
    return Access(a.shape + windows, f, a.dtype)


def _eval_windows(out: Access, x: np.ndarray, filters: Shape, strides: Shape) -> np.ndarray:
    # R[s.., p.., q..] = T[s.., p*st + q ..] (language contract, access-windows).
    n = x.ndim - len(filters.dims)
    view = np.lib.stride_tricks.sliding_window_view(x, filters.dims, axis=tuple(range(n, x.ndim)))
    index = (slice(None),) * n + tuple(slice(None, None, s) for s in strides.dims)
    return np.ascontiguousarray(view[index])


def _infer_cartesian(a: Access, b: Access) -> Access:
    if a.item != b.item:
        raise ShapeError(f"needs equal item shapes, got {fmt_dims(a.item)} and {fmt_dims(b.item)}")
    return Access(a.shape + b.shape, (2,) + a.item, _same_class(a, b))


def _eval_cartesian(out: Access, x: np.ndarray, y: np.ndarray) -> np.ndarray | Pairs:
    pairs = Pairs.of(x, y, out)
    return pairs if is_int(out.dtype) else np.asarray(pairs)


def _infer_pair(a: Access, b: Access) -> Access:
    if (a.shape, a.item) != (b.shape, b.item):
        raise ShapeError(f"needs equal access shapes, got ({fmt_dims(a.shape)},{fmt_dims(a.item)})"
                         f" and ({fmt_dims(b.shape)},{fmt_dims(b.item)})")
    return Access(a.shape, (2,) + a.item, _same_class(a, b))


def _eval_pair(out: Access, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.stack([x, y], axis=len(out.shape)).astype(out.dtype)


def _infer_pad(a: Access, pad: str, k: int, before: int, after: int) -> Access:
    _axis(a, k)
    dims = list(a.dims)
    dims[k] += before + after
    return _split(tuple(dims), a.n, a.dtype)


def _eval_pad(out, x, pad, k, before, after):
    widths = [(0, 0)] * x.ndim
    widths[k] = (before, after)
    fill = 0 if pad == "zero-padding" else min_value(out.dtype)
    return np.pad(x, widths, constant_values=np.array(fill, dtype=x.dtype))


def _infer_slice(a: Access, k: int, lo: int, hi: int) -> Access:
    _axis(a, k)
    if not lo < hi <= a.dims[k]:
        raise ShapeError(f"needs 0 <= low < high <= {a.dims[k]} on axis {k}, got {lo} and {hi}")
    dims = list(a.dims)
    dims[k] = hi - lo
    return _split(tuple(dims), a.n, a.dtype)


def _eval_slice(out, x, k, lo, hi):
    return x[(slice(None),) * k + (slice(lo, hi),)]


def _infer_concatenate(a: Access, b: Access, k: int) -> Access:
    _axis(a, k)
    if a.n != b.n or a.ndim != b.ndim or any(
            da != db for j, (da, db) in enumerate(zip(a.dims, b.dims, strict=True)) if j != k):
        raise ShapeError(f"needs equal access axes and dims except axis {k}, got "
                         f"({fmt_dims(a.shape)},{fmt_dims(a.item)}) and "
                         f"({fmt_dims(b.shape)},{fmt_dims(b.item)})")
    dims = list(a.dims)
    dims[k] += b.dims[k]
    return _split(tuple(dims), a.n, _same_class(a, b))


def _eval_concatenate(out, x, y, k):
    return np.concatenate([x, y], axis=k).astype(out.dtype)


def _infer_transpose(a: Access, perm: Lst) -> Access:
    p = perm.items
    if sorted(p) != list(range(a.ndim)):
        raise ShapeError(f"needs a permutation of 0..{a.ndim - 1}, got {fmt_dims(p)}", arg=1)
    return _split(tuple(a.dims[j] for j in p), a.n, a.dtype)


def _eval_transpose(out, x, perm):
    return np.transpose(x, perm.items)


def _infer_squeeze(a: Access, k: int) -> Access:
    _axis(a, k)
    if a.dims[k] != 1:
        raise ShapeError(f"needs dim {k} to be 1, got {a.dims[k]} in {fmt_dims(a.dims)}")
    dims = a.dims[:k] + a.dims[k + 1:]
    return _split(dims, a.n - 1 if k < a.n else a.n, a.dtype)


def _infer_insert_axis(a: Access, k: int) -> Access:
    _axis(a, k, inclusive=True)
    dims = a.dims[:k] + (1,) + a.dims[k:]
    return _split(dims, a.n + 1 if k <= a.n else a.n, a.dtype)


def _infer_broadcast(a: Access, target: AccessShape) -> Access:
    dims = target.shape + target.item
    if len(dims) != a.ndim or any(d not in (1, t) for d, t in zip(a.dims, dims, strict=True)):
        raise ShapeError(f"needs each dim 1 or equal to the target's, got {fmt_dims(a.dims)} "
                         f"and target {fmt_dims(dims)}")
    return _split(dims, a.n, a.dtype)


def _infer_flatten(a: Access) -> Access:
    return Access((math.prod(a.shape),) if a.shape else (),
                  (math.prod(a.item),) if a.item else (), a.dtype)


def _infer_reshape(a: Access, target: AccessShape) -> Access:
    if math.prod(target.shape + target.item) != a.size():
        raise ShapeError(f"needs the same number of elements, got {fmt_dims(a.dims)} "
                         f"({a.size()}) and ({fmt_dims(target.shape)},{fmt_dims(target.item)})")
    return Access(target.shape, target.item, a.dtype)


def _eval_reshape(out, x, *static):
    return x.reshape(out.dims)


def _infer_literal_access(v: int | float) -> Access:
    return Access((), (), "int32" if isinstance(v, int) else "float64")


# --- compute and the hardware nodes ---------------------------------------------------------

def _infer_compute(kind: ComputeKind, a: Access) -> Access:
    return KINDS[kind.name].infer(a, kind)


def _eval_compute(out, kind, x):
    # Every compute kind keeps the shape dims, so the operand splits where the result does.
    operand = Access(x.shape[:out.n], x.shape[out.n:], str(x.dtype))
    return KINDS[kind.name].evaluate(x, operand, out, kind)


def _infer_systolic(rows: int, cols: int, a: Access, w: Access, blocking: bool = False) -> Access:
    if rows < 1 or cols < 1:
        raise ShapeError(f"needs an array of at least 1x1, got {rows}x{cols}")
    if w.shape or len(w.item) != 2:
        raise ShapeError(f"needs the weights as ((),(K,O)), got "
                         f"({fmt_dims(w.shape)},{fmt_dims(w.item)})", arg=3)
    k, o = w.item
    if len(a.shape) > 1 or a.item != (k,):
        raise ShapeError(f"needs the streamed operand as ((M),({k})) or ((),({k})), got "
                         f"({fmt_dims(a.shape)},{fmt_dims(a.item)})", arg=2)
    if not blocking and (k, o) != (rows, cols):
        raise ShapeError(f"needs weights of exactly ({rows},{cols}), got ({k},{o})", arg=3)
    if blocking and (k % rows or o % cols):
        raise ShapeError(f"needs K={k} a multiple of {rows} and O={o} a multiple of {cols}", arg=3)
    dtype = _same_class(a, w)
    return Access(a.shape + (o,), (), accumulator_dtype(dtype) if is_int(dtype) else dtype)


def _infer_blocking(rows: int, cols: int, a: Access, w: Access) -> Access:
    return _infer_systolic(rows, cols, a, w, blocking=True)


def _eval_systolic(out, rows, cols, x, w):
    # A0 @ A1 with A1 the stationary weights; integers accumulate in int32 with wrap-around.
    if is_int(out.dtype):
        return (x.astype(np.int64) @ w.astype(np.int64)).astype(out.dtype)
    return (x.astype(out.dtype) @ w.astype(out.dtype)).astype(out.dtype)


# --- auxiliary values -------------------------------------------------------------------------

def _shape_axis(s: Shape, k: int, inclusive: bool) -> None:
    if k > len(s.dims) - (0 if inclusive else 1):
        raise ShapeError(f"needs axis {k} within {fmt_dims(s.dims)}")


def _infer_shape_insert(s: Shape, k: int) -> Shape:
    _shape_axis(s, k, inclusive=True)
    return Shape(s.dims[:k] + (1,) + s.dims[k:])


def _infer_shape_remove(s: Shape, k: int) -> Shape:
    _shape_axis(s, k, inclusive=False)
    return Shape(s.dims[:k] + s.dims[k + 1:])


def _infer_slice_shape(s: Shape, k: int) -> Shape:
    _shape_axis(s, k, inclusive=True)
    return Shape(s.dims[k:])


def _identity(out, x, *static):
    return x


OPS: dict[str, Op] = {op.name: op for op in (
    Op("access-tensor", ("access",), lambda a: Access(a.dims, (), a.dtype), _identity,
       "the tensor, every dim a shape dim"),
    Op("access", ("access", "int"), _infer_access, _identity, "re-split at axis k"),
    Op("access-windows", ("access", "shape", "shape"), _infer_windows, _eval_windows,
       "sliding windows over the item dims"),
    Op("access-cartesian-product", ("access", "access"), _infer_cartesian, _eval_cartesian,
       "every item of A0 paired with every item of A1"),
    Op("access-pair", ("access", "access"), _infer_pair, _eval_pair, "items paired index by index"),
    Op("access-pad", ("access", "pad-type", "int", "int", "int"), _infer_pad, _eval_pad,
       "pad axis k with zeros or the dtype's minimum"),
    Op("access-pad-value", ("access", "number", "int", "int", "int"), q.infer_pad_value,
       q.pad_value, "pad axis k with the value v"),
    Op("access-slice", ("access", "int", "int", "int"), _infer_slice, _eval_slice,
       "T[..., lo:hi, ...] on axis k"),
    Op("access-concatenate", ("access", "access", "int"), _infer_concatenate, _eval_concatenate,
       "concatenate along axis k"),
    Op("access-transpose", ("access", "list"), _infer_transpose, _eval_transpose,
       "permute all dims"),
    Op("access-squeeze", ("access", "int"), _infer_squeeze, _eval_reshape, "remove a dim of 1"),
    Op("access-insert-axis", ("access", "int"), _infer_insert_axis, _eval_reshape,
       "insert a dim of 1"),
    Op("access-broadcast", ("access", "access-shape"), _infer_broadcast,
       lambda out, x, target: np.broadcast_to(x, out.dims).copy(), "broadcast to the target"),
    Op("access-flatten", ("access",), _infer_flatten, _eval_reshape,
       "((prod s),(prod i)), row-major"),
    Op("access-reshape", ("access", "access-shape"), _infer_reshape, _eval_reshape,
       "row-major reshape to the access shape"),
    Op("access-literal", ("literal",), _infer_literal_access,
       lambda out, v: np.array(v, dtype=out.dtype), "a scalar access pattern"),
    Op("compute", ("compute-type", "access"), _infer_compute, _eval_compute,
       "apply a compute kind to every item"),
    Op("systolic-array", ("int", "int", "access", "access"), _infer_systolic, _eval_systolic,
       "A0 @ A1 on a rows x cols weight-stationary array"),
    Op("systolic-array-with-blocking", ("int", "int", "access", "access"), _infer_blocking,
       _eval_systolic, "A0 @ A1 tiled onto a rows x cols array"),
    Op("requantize-linear", ("access", "access", "number"), q.infer_requantize,
       lambda out, acc, m, z: q.evaluate_requantize(acc, m, z),
       "clamp(rint(float32(A) * M) + z) to int8 (ONNX, onnxruntime's requantizer)"),
    Op("quantize-linear", ("access", "number", "number"), q.infer_quantize,
       lambda out, x, s, z: q.quantize_linear(x, s, z), "ONNX QuantizeLinear to int8"),
    Op("dequantize-linear", ("access", "number", "number"), q.infer_dequantize,
       lambda out, x, s, z: q.dequantize_linear(x, s, z), "ONNX DequantizeLinear to float32"),
    Op("add-linear", ("access", "access", "number", "number", "number", "number", "number",
                      "number", "number"), q.infer_add_linear,
       lambda out, a, b, sa, za, sb, zb, sc, zc, offset: q.add_linear(a, b, sa, za, sb, zb, sc,
                                                                      zc, offset),
       "onnxruntime's QLinearAdd of int8 A and B (two float32 FMAs, rint, clamp)"),
    Op("average-pool-linear", ("access", "access", "number", "number", "number", "number",
                               "number"), q.infer_average_pool,
       lambda out, w, d, sx, zx, sy, zy, offset: q.average_pool_linear(w, d, sx, zx, sy, zy,
                                                                       offset),
       "onnxruntime's QLinearAveragePool over int8 windows W with divisors D"),
    Op("table-lookup", ("access", "access"), q.infer_table_lookup,
       lambda out, a, table: q.table_lookup(a, table),
       "T[A + 128]: each int8 code of A through the 256-entry int8 table T"),
    Op("lrn", ("access", "int", "number", "number", "number"), normalize.infer_lrn,
       lambda out, x, size, alpha, beta, bias: normalize.lrn(x, size, alpha, beta, bias),
       "ONNX LRN over the channels of an NCHW float32 tensor (onnxruntime's kernel)"),
    Op("global-average-pool", ("access", "int"), normalize.infer_global_average_pool,
       lambda out, x, order: normalize.global_average_pool(x, order),
       "the mean over each map of a float32 tensor in an onnxruntime kernel's order (1, 4, 8)"),
    Op("average-pool", ("access", "access", "int"), normalize.infer_average_pool,
       lambda out, w, d, order: normalize.average_pool(w, d, order),
       "ONNX AveragePool of float32 windows W with divisors D in an onnxruntime kernel's order"),
    Op("gru", ("access", "access", "access", "access", "access", "int"),
       lambda *a: recurrent.infer("gru", *a), lambda out, *a: recurrent.gru(*a),
       "ONNX GRU over a fixed sequence, forward, every step's hidden state (float32)"),
    Op("lstm", ("access", "access", "access", "access", "access", "access"),
       lambda *a: recurrent.infer("lstm", *a), lambda out, *a: recurrent.lstm(*a),
       "ONNX LSTM over a fixed sequence, forward, every step's hidden state (float32)"),
    Op("gather", ("access", "access"), gather.infer_gather,
       lambda out, a, indices: gather.gather(a, indices),
       "the rows of A (axis 0) at the run-time integer indices I (ONNX Gather)"),
    Op("dynamic-quantize", ("access",), dynamic.infer_codes, lambda out, x: dynamic.codes(x),
       "ONNX DynamicQuantizeLinear's uint8 codes of float32 A, carried as int8"),
    Op("dynamic-scale", ("access",), dynamic.infer_scale,
       lambda out, x: np.array(dynamic.parameters(x)[0], np.float32),
       "ONNX DynamicQuantizeLinear's scale of float32 A (one value)"),
    Op("dynamic-zero-point", ("access",), dynamic.infer_zero_point,
       lambda out, x: np.array(dynamic.parameters(x)[1], np.int32),
       "ONNX DynamicQuantizeLinear's uint8 zero point of float32 A, as int32 (one value)"),
    Op("cast-float", ("access",), dynamic.infer_cast, lambda out, x: x.astype(np.float32),
       "ONNX Cast of an integer tensor to float32"),
    Op("matmul-float", ("access", "access"), sgemm.infer_matmul_float,
       lambda out, a, b: sgemm.matmul_float(a, b),
       "A @ B of float32 tensors, batch dims broadcast (onnxruntime's MLAS SGEMM order)"),
    Op("layer-norm", ("access", "access", "access", "number"), normalize.infer_layer_norm,
       lambda out, x, scale, bias, eps: normalize.layer_norm(x, scale, bias, eps),
       "ONNX LayerNormalization over the last dim (onnxruntime's MLAS kernel)"),
    Op("layer-norm-welford", ("access", "access", "access", "number"),
       normalize.infer_layer_norm,
       lambda out, x, scale, bias, eps: normalize.layer_norm_welford(x, scale, bias, eps),
       "LayerNormalization with Welford's running mean (onnxruntime's SkipLayerNormalization)"),
    Op("gelu", ("access",), gelu.infer_gelu, lambda out, x: gelu.gelu(x),
       "x·½(1 + erf(x/√2)) of float32 A (onnxruntime's Gelu kernel, MLAS's erf)"),
    Op("softmax-linear", ("access", "number", "number", "number", "number"),
       normalize.infer_softmax_linear,
       lambda out, x, sx, sy, zy, offset: normalize.softmax_linear(x, sx, sy, zy, offset),
       "onnxruntime's QLinearSoftmax over the last dim of an int8 tensor"),
    Op("access-shape", ("shape", "shape"), lambda s, i: AccessShape(s.dims, i.dims),
       doc="a literal access shape"),
    Op("get-access-shape", ("access",), lambda a: AccessShape(a.shape, a.item),
       doc="an access pattern's access shape"),
    Op("literal", ("number",), lambda v: v, doc="a scalar literal"),
    Op("shape", ("int*",), lambda *d: Shape(tuple(d)), doc="a shape literal"),
    Op("list", ("int*",), lambda *d: Lst(tuple(d)), doc="a list literal"),
    Op("shape-of", ("access",), lambda a: Shape(a.dims), doc="a tensor's dims"),
    Op("slice-shape", ("shape", "int"), _infer_slice_shape, doc="S[k:]"),
    Op("shape-insert-axis", ("shape", "int"), _infer_shape_insert, doc="insert a 1 at k"),
    Op("shape-remove-axis", ("shape", "int"), _infer_shape_remove, doc="drop dim k"),
)}

# Arguments of these kinds are literal tokens in the source, not expressions.
TOKEN_KINDS = ("int", "number", "compute-type", "pad-type")

KIND_TYPES: dict[str, tuple[type, ...]] = {
    "access": (Access,),
    "int": (int,),
    "number": (int, float),
    "literal": (int, float),
    "shape": (Shape,),
    "list": (Lst,),
    "access-shape": (AccessShape,),
    "compute-type": (ComputeKind,),
    "pad-type": (str,),
}

KIND_NAMES = {
    "access": "an access pattern",
    "int": "a non-negative integer",
    "number": "a number",
    "literal": "a (literal v)",
    "shape": "a (shape ...)",
    "list": "a (list ...)",
    "access-shape": "an (access-shape ...)",
    "compute-type": "a compute type",
    "pad-type": "a padding type (" + " or ".join(PAD_TYPES) + ")",
}
