"""Layout changes on the accelerator: an operand's tensor copied by the vector unit into the
dim order its kernel's transfers move in runs (``Repack``), or the operand itself gathered into
a matrix whose K is one digit (``Gather``: an im2col) — candidates of the schedule search.

A convolution over NCHW data walks its K (channels × taps) with the channels innermost, 1 byte
apart in NHWC and H·W bytes apart in NCHW: the NCHW rows of the layer suite load their image in
one-byte runs (docs/lowering.md, "The schedule search"). Copying the image into NHWC first costs
one pass over it, at the port's bandwidth when the copy's LOADs are transposing (each reads N
pixels of one channel as a run and writes them as N local rows, docs/isa.md "Transposing
LOAD"); the kernel then reads the copy in runs of channels.

The copy is a fold (glc/lower/fold.py) with op ``add``, one operand and nothing folded: int8 in,
stored int8 with shift 0, so it is exact. Its operand is the tensor's view with dim ``d`` moved
last (the matrix's columns), its result the row-major copy; the kernel's operand is the same
access chain over the copy seen with its dims put back in the tensor's order (view_of's base).
A repack is overhead the schedule chose, not work of the program: its kernel has no limit of its
own (glc/cost/limit.py), so the layer's efficiency counts its cycles against the layer's limit.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from glc.hwconfig import HwConfig
from glc.lower.fold import copy_kernel
from glc.lower.kernel import Kernel
from glc.lower.transfer import Target
from glc.lower.view import View, merge, row_major

# The dims a repack moves last: the channels of the layouts users write. NCHW data's C (dim 1)
# makes NHWC; OIHW weights' O (dim 0) makes IHWO, whose rows (I, KH, KW) are the contiguous
# rows of OIHW (a transposing copy) and whose columns are the outputs a kernel's B walks in
# runs; their I (dim 1) makes OHWI. Moving a spatial dim last never lengthens a run.
MOVED_DIMS = (0, 1)


class _Copy:
    """What a Repack and a Gather share (each has its ``source``, ``nbytes``, ``label`` and
    ``kernel``): a copy whose cycles do not depend on where it lies, and the kernel the cost
    extraction sees for it."""

    def cycles(self, config: HwConfig) -> int:
        """The copy's cycles wherever it lies (copy_cycles)."""
        return copy_cycles(replace(self, source=replace(self.source, buffer="")), config)

    def costed(self, config: HwConfig) -> Kernel:
        """The copy as the cost extraction sees it: no instructions, its cycles estimated."""
        return Kernel(self.label, self.nbytes, 1, 1, False, False, 0, [], kind="repack",
                      estimated=self.cycles(config))


@functools.lru_cache(maxsize=4096)
def copy_cycles(copy: _Copy, config: HwConfig) -> int:
    """The cycle model's count for a copy whose source has no buffer name: its transfers' beats
    depend on the strides and sizes, not on the addresses, so the extraction's many lowerings
    of one network build each copy once."""
    return copy.kernel(0, "copy", 0, config).predicted_cycles(config)


@dataclass(frozen=True)
class Repack(_Copy):
    """The tensor seen through ``source`` (its stored view), copied row-major with its dim
    ``dim`` moved last."""

    source: View
    dim: int

    @property
    def order(self) -> tuple[int, ...]:
        """The source's dims in the copy's order (an ``access-transpose`` list)."""
        return tuple(k for k in range(len(self.source.groups)) if k != self.dim) + (self.dim,)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.source.dims[k] for k in self.order)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape)

    def view(self, buffer: str) -> View:
        """The copy ``buffer`` with its dims in the source's order: the base the kernel's
        operand is read through instead of the source."""
        stored = row_major(buffer, self.shape)
        return replace(stored, groups=tuple(stored.groups[self.order.index(k)]
                                            for k in range(len(self.order))))

    def kernel(self, source_address: int, buffer: str, address: int, config: HwConfig) -> Kernel:
        """The fold copying the source (at ``source_address``) into ``buffer`` at ``address``;
        its LOADs transposing where the source's rows are contiguous."""
        rows = tuple(d for k in self.order[:-1] for d in self.source.groups[k])
        matrix = replace(self.source, groups=(rows, self.source.groups[self.dim]))
        inner = merge(rows)
        transpose = config.array_size if inner and inner[-1].stride == 1 else 0
        height, width = math.prod(self.shape[:-1]), self.shape[-1]
        c = Target(row_major(buffer, (height, width)), address, 1)
        # Tiles of N rows when transposing: a transposing LOAD holds the port for its N beats
        # and then drains its block for N cycles (docs/isa.md, "Timing"), in which the STORE
        # of the tile before, N beats, fits; larger tiles' STOREs hold the port past the drain
        # and the LOADs wait (a 56×56×64 image: 1.06 of the port floor, against 1.9).
        built = copy_kernel(self.label, Target(matrix, source_address, 1, transpose), c, config,
                            tile_rows=transpose)
        return replace(built, kind="repack")

    @property
    def label(self) -> str:
        """The copy as a term, for the assembly's comments."""
        return (f"(access-transpose (access-tensor {self.source.buffer}) "
                f"(list {' '.join(map(str, self.order))}))")



def repacks(source: View) -> list[Repack]:
    """The repacks worth costing for a tensor: each of MOVED_DIMS moved last where that changes
    the order of its dims of more than one index (an NCHW image of one picture gets one, NHWC;
    OIHW weights two). A matrix or vector gets none: the LOADs transpose it themselves."""
    dims = source.dims
    if len(dims) < 3:
        return []
    found = []
    for dim in MOVED_DIMS:
        repack = Repack(source, dim)
        if [k for k in repack.order if dims[k] > 1] != [k for k in range(len(dims)) if dims[k] > 1]:
            found.append(repack)
    return found


@dataclass(frozen=True)
class Gather(_Copy):
    """A product's operand ``source`` (a matrix view that reads its tensor's elements more than
    once: an im2col), copied whole into a row-major buffer with its K digits first and its M
    digits after, so the kernel reads K as one digit. An NCHW image's windows walk K (channel,
    ky, kx) with three strides and bounds, so a K tile of such an operand is one channel's taps
    (9 of 16 rows for 3×3) unless its K is one digit (flat K tiles, glc/lower/tiling.py); the
    copy's rows are (K, pixel rows), its columns a pixel row (the view's innermost M digit), so
    its LOADs run along the image's rows. Worth it where the image is small and the filters
    large: the copy is taps × the image, the filters are read once anyway (ResNet's 3×3 512 @7
    in NCHW: 225 792 bytes copied in 64 615 cycles, the kernel over it 476 163 against 590 125)."""

    source: View
    k_group: int  # the source's group that is K: 1 for A (M×K), 0 for B (K×M)

    dim = -1  # the repacked memo's key beside a tensor's (source, dim) repacks

    @property
    def _k(self) -> tuple:
        return self.source.groups[self.k_group]

    @property
    def _m(self) -> tuple:
        return self.source.groups[1 - self.k_group]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.size for d in (*self._k, *self._m))

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape)

    def view(self, buffer: str) -> View:
        """The copy ``buffer`` as the operand's matrix: its K digits one group, its M digits the
        other, in the source's order."""
        digits = row_major(buffer, self.shape).digits()
        k, m = digits[:len(self._k)], digits[len(self._k):]
        return View(buffer, 0, (k, m) if self.k_group == 0 else (m, k), ())

    def kernel(self, source_address: int, buffer: str, address: int, config: HwConfig) -> Kernel:
        """The fold copying the source (its tensor at ``source_address``) into ``buffer`` at
        ``address``: rows K and the outer M digits, columns the innermost M digit."""
        *outer, inner = self._m
        matrix = replace(self.source, groups=((*self._k, *outer), (inner,)))
        c = Target(row_major(buffer, (self.nbytes // inner.size, inner.size)), address, 1)
        return replace(copy_kernel(self.label, Target(matrix, source_address, 1), c, config),
                       kind="repack")

    @property
    def label(self) -> str:
        """The copy, for the assembly's comments: the tensor and the matrix it gathers."""
        k = math.prod(d.size for d in self._k)
        return f"(im2col copy of {self.source.buffer}: K {k} x M {self.nbytes // k})"



def gathers(source: View, which: str, tensor_bytes: int) -> list[Gather]:
    """The Gather worth costing for a product's operand ``which`` ("a" or "b") read as
    ``source``: one where the view reads its tensor's elements more than once (its elements
    outnumber the tensor's: windows), none for a vector or a dim of no digits (one pixel)."""
    if len(source.groups) != 2 or not all(source.groups) or \
            math.prod(source.dims) <= tensor_bytes:
        return []
    return [Gather(source, 1 if which == "a" else 0)]
