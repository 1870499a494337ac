"""``(gather A I)``: the rows of a tensor picked by run-time integer indices (ONNX Gather on
axis 0: a transformer's token embeddings, ``input_ids`` into the word table). A host operator:
the rows are read, not computed, so any engine gives them exactly."""

from __future__ import annotations

import numpy as np

from glc.errors import GlcError, ShapeError
from glc.ir.types import Access, fmt_dims, is_int


def infer_gather(a: Access, indices: Access) -> Access:
    """A of at least one dim, I integer: the result I's dims then A's dims after the first."""
    if not a.dims:
        raise ShapeError("needs a tensor of at least one dim to take rows of", arg=0)
    if not is_int(indices.dtype):
        raise ShapeError(f"needs integer indices, got {indices.dtype}", arg=1)
    return Access(indices.dims + a.dims[1:], (), a.dtype)


def gather(a: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``A[I]`` along axis 0, a negative index counting from the end (ONNX); an index outside
    ``[-rows, rows)`` is the input's error, as onnxruntime's."""
    rows = a.shape[0]
    bad = (indices < -rows) | (indices >= rows)
    if np.any(bad):
        raise GlcError(f"index {int(indices[bad].flat[0])} is outside the {rows} rows of a "
                       f"tensor of dims {fmt_dims(a.shape)}")
    return np.take(a, indices.astype(np.int64), axis=0)
