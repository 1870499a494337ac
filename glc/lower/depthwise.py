"""Depthwise products on the array: one channel's dot products packed N to a kernel on the
diagonal of B (docs/lowering.md, "Depthwise products").

A depthwise convolution (MobileNet's, and what ``glc import`` writes for a grouped Conv whose
groups are its channels) is ``(compute dot-product (access-pair X W))`` where X is the image's
windows and W the filters broadcast over the output pixels: output [pixel, c] sums X[pixel, c,
tap]·W[c, tap] over the taps, a product of one channel with itself only. On the array, N
channels at a time: C[pixel, c′] = Σ over (tap, c) of A[pixel, (tap, c)]·B[(tap, c), c′] with
A the group's im2col (its K tiles N channels of one tap) and B[(tap, c), c′] = W[c, tap] where
c = c′ and 0 elsewhere — a view of W: the channel digit walks the DRAM weights and a virtual
coordinate c − c′ (signed coefficients, docs/isa.md revision 2.1) bounded to [0, 1), the
LOAD's zero fill the rest. No weight is materialised, and the schedule search
(glc/lower/schedule.py) costs each group like any product; the coordinate rises along c, so a
transposing LOAD of B (runs along c) checks it per element (xrun) and moves a tile in N beats.

Only 1/N of the array's MACs are useful: a group runs at best at 1/N of the compute ideal of
its useful MACs, which against the layer's roofline (the image read and the result written
once) is ~0.22 at MobileNet's shapes. A kernel of kind "diagonal" counts only its useful MACs
(m·k: one weight per A element) in its ideal and limit (glc/cost/limit.py).

The groups' results lie side by side in one buffer (pixels, C) whose view is the node's value,
each kernel writing its rows × N columns (the last group the channels left, fewer than N where
N does not divide C) with C's row stride.

ONNX's quantized depthwise conv (QLinearConv, imported as ``(requantize-linear (compute
elementwise-add (access-pair P bias)) M z)`` over the product P) is requantized in the same
STOREs: the channels are C's columns, so a per-channel bias and multipliers are vectors along
them, which the STOREs read by column from a table (glc/lower/table.py) as a systolic kernel's
(glc/lower/linear.py), each group's the cut of its channels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from glc.lower.linear import LinearPlan
from glc.lower.view import Digit, View, advanced, merge


@dataclass(frozen=True, eq=False)
class Store:
    """What a depthwise product's STOREs apply: ``raw`` int32 (plus a bias) or int8 under a
    ``relu`` and a requantize by ``shift``, or ONNX's requantization (``plan``); ``vectors``
    the bias and multipliers (``"bias"``, ``"m"``) over the product's dims."""

    raw: bool
    relu: bool
    shift: int
    vectors: dict[str, View]
    plan: LinearPlan | None


@dataclass(frozen=True)
class Depthwise:
    """The pair's operand views ``x`` and ``w`` (dims: the output's, then the items), the
    output dim both walk (``channel``) and the rank of the output."""

    x: View
    w: View
    rank: int
    channel: int

    @property
    def channels(self) -> int:
        return self.x.dims[self.channel]

    @property
    def pixels(self) -> tuple[int, ...]:
        """The output dims other than the channel: the rows of each group's product."""
        return tuple(k for k in range(self.rank) if k != self.channel)

    def operands(self, first: int, width: int) -> tuple[View, View]:
        """A (pixels × (items, channel)) and B ((items, channel) × channel′) of the group of
        channels [first, first + width)."""
        x, w = self.x, self.w
        xc, = merge(x.groups[self.channel])
        wc, = merge(w.groups[self.channel])
        pixels = tuple(d for k in self.pixels for d in x.groups[k])
        items = tuple(d for g in x.groups[self.rank:] for d in g)
        a = replace(advanced(x, xc, first),
                    groups=(pixels, items + (Digit(width, xc.stride, xc.coefs),)))
        b = advanced(w, wc, first)
        # The new coordinate, after W's own: c − c′, +1 along the channel, so that a LOAD of
        # B transposed (its runs along c, contiguous in HWIO weights) checks it per element
        # (xrun) and moves N weights a beat.
        extra = len(w.coords)
        taps = tuple(replace(d, coefs=d.coefs + (0,)) for g in w.groups[self.rank:] for d in g)
        b = replace(b, coords=b.coords + ((0, 1),),
                    groups=(taps + (Digit(width, wc.stride, wc.coefs + (1,)),),
                            (Digit(width, 0, (0,) * extra + (-1,)),)))
        return a, b

    def matrices(self) -> tuple[View, View]:
        """X as a (pixels, items) × channels matrix, the items innermost, and W as items ×
        channels (the same for every pixel). On the vector unit (glc/lower/fold.py, a pair
        reduced by the items) row (p, t) of X times row t of W, summed over t, is output row
        p."""
        items = tuple(d for g in self.x.groups[self.rank:] for d in g)
        pixels = tuple(d for k in self.pixels for d in self.x.groups[k])
        x = replace(self.x, groups=(pixels + items, merge(self.x.groups[self.channel])))
        w = replace(self.w, groups=(tuple(d for g in self.w.groups[self.rank:] for d in g),
                                    merge(self.w.groups[self.channel])))
        return x, w

    @property
    def items(self) -> int:
        """The items each output sums: the taps."""
        return math.prod(self.x.dims[self.rank:])

    def vector(self, view: View, first: int, width: int) -> View | None:
        """A bias or multipliers ``view`` over the output dims as the (pixels × channels)
        matrix of the group of channels [first, first + width), read by its kernel's STOREs by
        column (glc/lower/table.py); None where its channel dim is no single digit."""
        digits = merge(view.groups[self.channel])
        if len(digits) != 1:
            return None
        c, = digits
        pixels = tuple(d for k in self.pixels for d in view.groups[k])
        return replace(advanced(view, c, first),
                       groups=(pixels, (Digit(width, c.stride, c.coefs),)))

    def result(self, buffer: str, dims: tuple[int, ...]) -> View:
        """The node's value in ``buffer`` (pixels, C), each group's kernel having stored its
        columns: channel c at column c, the pixels row-major."""
        pixels = [dims[k] for k in self.pixels]
        groups: list[tuple[Digit, ...]] = [()] * len(dims)
        groups[self.channel] = (Digit(self.channels, 1, ()),)
        for index, k in enumerate(self.pixels):
            groups[k] = (Digit(dims[k], self.channels * math.prod(pixels[index + 1:]), ()),)
        return View(buffer, 0, tuple(groups), ())


def plan(x: View, w: View, rank: int) -> Depthwise | None:
    """The depthwise reading of a dot product over the pair (x, w) with ``rank`` output dims:
    W broadcast (stride 0) over every output dim but one of more than one index, the channel,
    which both walk with one digit; else None."""
    if x.dims != w.dims or w.fill != 0:
        return None
    walked = [k for k in range(rank)
              if x.dims[k] > 1 and any(d.stride != 0 for d in w.groups[k])]
    if len(walked) != 1:
        return None
    channel = walked[0]
    if len(merge(x.groups[channel])) != 1 or len(merge(w.groups[channel])) != 1:
        return None
    return Depthwise(x, w, rank, channel)
