"""Data movement: ONNX ops that only move elements (Reshape, Flatten, Transpose, Slice, Split,
Identity) — the same on int8 values, their dequantizations and floats, so each is one access
pattern over its input, whatever the input's form, and its output keeps the input's
quantization. Views the lowering reads in place where they are affine (docs/lowering.md,
"Address patterns")."""

from __future__ import annotations

import numpy as np

from glc.onnx.program import Constant, Dequantized, Float, Quantized, shape


def move(t, node, make, output: int = 0) -> None:
    """Apply ``make(expr, dims) -> (expr, dims)`` to the input whatever its form, binding
    ``node.output[output]``."""
    v = t.value(node, 0)
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
    move(t, node, _reshape_to(tuple(target)))


def flatten(t, node, attrs) -> None:
    dims = _dims(t, node)
    axis = attrs.get("axis", 1) % (len(dims) + 1)
    move(t, node, _reshape_to((int(np.prod(dims[:axis])), int(np.prod(dims[axis:])))))


def transpose(t, node, attrs) -> None:
    def make(expr, dims):
        perm = attrs.get("perm", list(range(len(dims)))[::-1])
        return (f"(access-transpose {expr} (list {' '.join(map(str, perm))}))",
                tuple(dims[p] for p in perm))
    move(t, node, make)


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
