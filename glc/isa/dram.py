"""DRAM as the simulators hold it: sparse, a page taking memory once it is written.

A configuration may have up to 2^32 bytes of DRAM (docs/isa.md, "Hardware configuration") and a
program touch a few kilobytes of it. The RTL's model loads and dumps only nonzero and written
4 KiB pages (hw/dram_model.sv). The ISA simulator's DRAM is a numpy array of zeros, which numpy
allocates with calloc: the operating system maps each page on its first write, so an untouched
page costs nothing. What must never happen is a copy of the whole of it (one copied a 4 GiB
DRAM twice for a 976-byte program, 8.5 GB and 27 s): DRAM is handed on in place, and an image
is copied page by page, only the pages that hold something.
"""

from __future__ import annotations

import numpy as np

PAGE_BYTES = 4096  # the granule of the sparse copies, the RTL's load and dump (ISA v2 A3)


def zeroed(size: int) -> np.ndarray:
    """``size`` bytes of zero DRAM, its pages allocated as they are written."""
    return np.zeros(size, dtype=np.uint8)


def nonzero_pages(data: np.ndarray) -> np.ndarray:
    """The indices of the PAGE_BYTES pages of ``data`` (uint8) that hold a nonzero byte,
    scanned a page row at a time (no array of ``data``'s size is made)."""
    whole = data.size // PAGE_BYTES * PAGE_BYTES
    found = np.flatnonzero(data[:whole].reshape(-1, PAGE_BYTES).any(axis=1))
    if whole < data.size and data[whole:].any():
        found = np.append(found, whole // PAGE_BYTES)
    return found


def copy_pages(dest: np.ndarray, source: np.ndarray) -> None:
    """``dest[:source.size] = source`` for a zero ``dest``, writing only the pages of
    ``source`` that hold something (so only they take memory)."""
    for page in nonzero_pages(source).tolist():
        chunk = source[page * PAGE_BYTES:(page + 1) * PAGE_BYTES]
        dest[page * PAGE_BYTES:page * PAGE_BYTES + chunk.size] = chunk
