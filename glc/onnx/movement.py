"""Data movement: ONNX ops that only move elements (Reshape, Flatten, Transpose, Slice, Split,
Gather with constant indices, Squeeze, Unsqueeze, Expand, Identity) — the same on int8 values,
their dequantizations and floats, so each is one access pattern over its input, whatever the
input's form, and its output keeps the input's quantization. Views the lowering reads in place
where they are affine (docs/lowering.md, "Address patterns"); a Gather of indices that are no
run is a concatenation of slices, a copy. Over a constant each is computed here, in numpy."""

from __future__ import annotations

import numpy as np

from glc.onnx.program import Constant, Dequantized, Float, Quantized, shape


def move(t, node, make, output: int = 0, fold=None) -> None:
    """Apply ``make(expr, dims) -> (expr, dims)`` to the input whatever its form, binding
    ``node.output[output]``; a constant input is moved by ``fold(array) -> array`` (its
    integers too, quantized per tensor), or refused where there is none."""
    v = t.value(node, 0)
    if isinstance(v, Constant) and fold is not None:
        quantized = v.quantized
        if quantized is not None:
            q, scale, zero = quantized
            quantized = (fold(q), scale, zero) if np.size(scale) == 1 else None
        t.values[node.output[output]] = Constant(fold(v.value), quantized)
        return
    base = v.of if isinstance(v, Dequantized) else v
    if not isinstance(base, Quantized | Float):
        raise t.error(node, "input 1 must be a tensor")
    expr, dims = make(f"(access-tensor {base.name})", base.dims)
    out = node.output[output]
    name = t.b.define(out, expr)
    if isinstance(base, Float):
        t.values[out] = Float(name, dims)
        return
    moved = Quantized(name, dims, base.scale, base.zero)
    t.values[out] = Dequantized(moved, v.offset) if isinstance(v, Dequantized) else moved


def _dims(t, node) -> tuple[int, ...]:
    v = t.value(node, 0)
    if isinstance(v, Constant):
        return tuple(v.value.shape)
    return (v.of if isinstance(v, Dequantized) else v).dims


def _reshape_to(dims_out):
    def make(expr, dims):
        return f"(access-reshape {expr} (access-shape {shape(dims_out)} (shape)))", dims_out
    return make


def reshape(t, node, attrs) -> None:
    dims = _dims(t, node)
    target = [int(d) for d in t.constant(node, 1)]
    target = [dims[i] if d == 0 else d for i, d in enumerate(target)]
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1]))
        target[target.index(-1)] = int(np.prod(dims)) // known
    move(t, node, _reshape_to(tuple(target)), fold=lambda a: a.reshape(target))


def flatten(t, node, attrs) -> None:
    dims = _dims(t, node)
    axis = attrs.get("axis", 1) % (len(dims) + 1)
    move(t, node, _reshape_to((int(np.prod(dims[:axis])), int(np.prod(dims[axis:])))))


def transpose(t, node, attrs) -> None:
    def make(expr, dims):
        perm = attrs.get("perm", list(range(len(dims)))[::-1])
        return (f"(access-transpose {expr} (list {' '.join(map(str, perm))}))",
                tuple(dims[p] for p in perm))
    move(t, node, make, fold=lambda a: np.transpose(a, attrs.get("perm")))


def identity(t, node, attrs) -> None:
    t.values[node.output[0]] = t.value(node, 0)


def _sliced(t, node, ranges: dict[int, tuple[int, int]], output: int = 0) -> None:
    """Bind ``node.output[output]`` to the input restricted to ``ranges`` (axis → [lo, hi)):
    one ``access-slice`` an axis; a constant input is sliced here."""
    v = t.value(node, 0)
    if isinstance(v, Constant):
        index = tuple(slice(*ranges[k]) if k in ranges else slice(None)
                      for k in range(v.value.ndim))
        t.values[node.output[output]] = Constant(v.value[index])
        return

    def make(expr, dims):
        out = list(dims)
        for k, (lo, hi) in sorted(ranges.items()):
            if (lo, hi) != (0, dims[k]):
                expr = f"(access-slice {expr} {k} {lo} {hi})"
            out[k] = hi - lo
        return expr, tuple(out)
    move(t, node, make, output)


def _axis(t, node, axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise t.error(node, f"{what} {axis} is out of range for a tensor of rank {rank}")
    return axis % rank


def _ints(t, node, index: int, attrs, name: str) -> list[int] | None:
    """Input ``index`` (opset ≥ 10/13) or attribute ``name`` (before) as ints; None if absent."""
    if index < len(node.input) and node.input[index]:
        return [int(x) for x in np.asarray(t.constant(node, index)).reshape(-1)]
    if name in attrs:
        return [int(x) for x in attrs[name]]
    return None


def slice_(t, node, attrs) -> None:
    """ONNX Slice with constant starts, ends and axes, every step 1: indices below 0 count from
    the end and are clamped to the dim, as the operator states."""
    dims = _dims(t, node)
    starts = _ints(t, node, 1, attrs, "starts")
    ends = _ints(t, node, 2, attrs, "ends")
    if starts is None or ends is None or len(starts) != len(ends):
        raise t.error(node, "starts and ends must be constants of one length")
    axes = _ints(t, node, 3, attrs, "axes") or list(range(len(starts)))
    steps = _ints(t, node, 4, attrs, "steps") or [1] * len(starts)
    if len(axes) != len(starts) or len(steps) != len(starts):
        raise t.error(node, "starts, ends, axes and steps must have one length")
    if any(s != 1 for s in steps):
        raise t.error(node, f"only steps of 1 are supported, got {steps}")
    ranges: dict[int, tuple[int, int]] = {}
    for start, end, axis in zip(starts, ends, axes, strict=True):
        k = _axis(t, node, axis, len(dims), "axis")
        if k in ranges:
            raise t.error(node, f"axis {axis} is sliced twice")
        lo, hi = (min(max(i + dims[k] if i < 0 else i, 0), dims[k]) for i in (start, end))
        if hi <= lo:
            raise t.error(node, f"the slice [{start}, {end}) of axis {axis} (dim {dims[k]}) "
                                "is empty")
        ranges[k] = (lo, hi)
    _sliced(t, node, ranges)


def split(t, node, attrs) -> None:
    """ONNX Split into constant sizes (the ``split`` input or attribute), or into
    ``num_outputs`` (or as many as its outputs) parts of ⌈dim / parts⌉, the last the rest."""
    dims = _dims(t, node)
    k = _axis(t, node, int(attrs.get("axis", 0)), len(dims), "axis")
    sizes = _ints(t, node, 1, attrs, "split")
    if sizes is None:
        parts = int(attrs.get("num_outputs", len(node.output)))
        step = -(-dims[k] // parts)
        sizes = [min(step, dims[k] - i * step) for i in range(parts)]
    if len(sizes) != len(node.output) or sum(sizes) != dims[k] or min(sizes) <= 0:
        raise t.error(node, f"split {sizes} does not divide axis {k} (dim {dims[k]}) into "
                            f"{len(node.output)} non-empty parts")
    lo = 0
    for output, size in enumerate(sizes):
        _sliced(t, node, {k: (lo, lo + size)}, output)
        lo += size


def gather(t, node, attrs) -> None:
    """ONNX Gather of constant indices along ``axis``: a scalar index is a slice of one with
    the axis squeezed (q/k/v taken from a fused projection, a ViT's class token); a vector of
    indices that is a run is a slice, any other the concatenation of one slice per index."""
    dims = _dims(t, node)
    k = _axis(t, node, int(attrs.get("axis", 0)), len(dims), "axis")
    if not isinstance(t.value(node, 1), Constant):
        raise t.error(node, "only constant indices are supported")
    indices = np.asarray(t.constant(node, 1)).astype(np.int64)
    if indices.ndim > 1 or indices.size == 0:
        raise t.error(node, f"indices of dims {indices.shape}: only a scalar or a non-empty "
                            "vector is supported")
    if np.any(indices < -dims[k]) or np.any(indices >= dims[k]):
        raise t.error(node, f"an index of {indices.tolist()} is out of range for axis {k} "
                            f"(dim {dims[k]})")
    flat = [int(i) % dims[k] for i in indices.reshape(-1)]

    def make(expr, dims_in):
        if indices.ndim == 0:
            i = flat[0]
            return (f"(access-squeeze (access-slice {expr} {k} {i} {i + 1}) {k})",
                    dims_in[:k] + dims_in[k + 1:])
        dims_out = dims_in[:k] + (len(flat),) + dims_in[k + 1:]
        if flat == list(range(flat[0], flat[0] + len(flat))):
            return f"(access-slice {expr} {k} {flat[0]} {flat[-1] + 1})", dims_out
        # Concatenated along the axis moved first, each part one contiguous slice of the
        # result: copies on the vector unit (glc/lower/concat.py), the transposes views.
        rank = len(dims_in)
        front = [k] + [j for j in range(rank) if j != k]
        back = sorted(range(rank), key=front.__getitem__)
        moved = f"(access-transpose {expr} (list {' '.join(map(str, front))}))"
        out = None
        for i in flat:
            part = f"(access-slice {moved} 0 {i} {i + 1})"
            out = part if out is None else f"(access-concatenate {out} {part} 0)"
        return f"(access-transpose {out} (list {' '.join(map(str, back))}))", dims_out
    move(t, node, make, fold=lambda a: np.take(a, indices, axis=k))


def squeeze(t, node, attrs) -> None:
    """ONNX Squeeze of the given axes (input 2 from opset 13, else the attribute), or of every
    dim of 1."""
    dims = _dims(t, node)
    axes = _ints(t, node, 1, attrs, "axes")
    axes = [k for k, d in enumerate(dims) if d == 1] if axes is None else \
        sorted({_axis(t, node, a, len(dims), "axis") for a in axes})
    if any(dims[k] != 1 for k in axes):
        raise t.error(node, f"axes {axes} of dims {dims} are not all 1")

    def make(expr, dims_in):
        for k in reversed(axes):
            expr = f"(access-squeeze {expr} {k})"
        return expr, tuple(d for k, d in enumerate(dims_in) if k not in axes)
    move(t, node, make, fold=lambda a: np.squeeze(a, axis=tuple(axes)))


def unsqueeze(t, node, attrs) -> None:
    """ONNX Unsqueeze: a dim of 1 at each of the axes (of the output's rank)."""
    dims = _dims(t, node)
    axes = _ints(t, node, 1, attrs, "axes")
    if axes is None:
        raise t.error(node, "the axes must be a constant")
    rank = len(dims) + len(axes)
    axes = sorted({_axis(t, node, a, rank, "axis") for a in axes})
    if len(axes) != rank - len(dims):
        raise t.error(node, "an axis is given twice")

    def make(expr, dims_in):
        out = list(dims_in)
        for k in axes:
            expr = f"(access-insert-axis {expr} {k})"
            out.insert(k, 1)
        return expr, tuple(out)
    move(t, node, make, fold=lambda a: np.expand_dims(a, tuple(axes)))


def expand(t, node, attrs) -> None:
    """ONNX Expand to a constant shape, broadcast as numpy does: a view reading each element
    again (stride 0)."""
    dims = _dims(t, node)
    try:
        out = tuple(np.broadcast_shapes(dims, tuple(int(d) for d in t.constant(node, 1))))
    except ValueError:
        raise t.error(node, f"dims {dims} do not broadcast to {t.constant(node, 1).tolist()}") \
            from None

    def make(expr, dims_in):
        full = (1,) * (len(out) - len(dims_in)) + tuple(dims_in)
        if full != tuple(dims_in):
            expr = f"(access-reshape {expr} (access-shape {shape(full)} (shape)))"
        if full != out:
            expr = f"(access-broadcast {expr} (access-shape {shape(out)} (shape)))"
        return expr, out
    move(t, node, make, fold=lambda a: np.broadcast_to(a, out).copy())


TABLE = {
    "Squeeze": squeeze,
    "Unsqueeze": unsqueeze,
    "Expand": expand,
}
