"""The lowering's optimizations by name: each one a choice the lowering makes beyond the plain
mapping (a kernel per product, its operands read where they lie, a concatenation copied part
by part), kept only where the cycle model counts fewer cycles. Each can be switched off
(``glc compile/run --disable NAME[,NAME]``), the lowering then doing what it did without it, so
a miscompile can be pinned on one of them (``glc run --bisect``, docs/lowering.md
"Optimizations by name"), and each counts where it fired (``Program.fired``), so a generator
can be shown to reach it (tests/lower/test_lower_optimizations.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from glc.errors import GlcError


@dataclass(frozen=True)
class Optimization:
    name: str
    what: str
    where: str  # the module and method that makes the choice


OPTIMIZATIONS = (
    Optimization("repack", "a product's operand read from a copy of its tensor with another "
                 "dim last, made by the vector unit", "relayout.py _repacked"),
    Optimization("gather", "a product's operand gathered whole into a matrix whose K is one "
                 "digit (an im2col on the vector unit)", "relayout.py _repacked"),
    Optimization("reorient", "a producer kernel run in its other orientation, storing its "
                 "result transposed, for the one step that reads it", "reorient.py _reoriented"),
    Optimization("fold-into", "a fold whose result a repack would copy writes the copy's "
                 "layout itself", "folds.py _fold_into"),
    Optimization("fold-repack", "a fold reading its one operand an element a run reads a "
                 "repack of the operand's tensor", "folds.py _fold_repacked"),
    Optimization("fold-join", "a fold's rows short of N joined into longer columns",
                 "folds.py _joined"),
    Optimization("concat-axis-last", "a concatenation stored with its axis last, each part a "
                 "band of its columns", "concat.py _concat"),
    Optimization("concat-in-place", "a concatenation's part computed by a kernel written into "
                 "its band by that kernel, not copied", "concat.py _placed_into"),
    Optimization("depthwise-band", "a depthwise product as one band kernel reading the image "
                 "once", "depthwise_lowering.py _band, _direct_band"),
    Optimization("depthwise-vector", "a depthwise product on the vector unit, a multiply "
                 "and a sum over the taps, where the array's preloads bind (small maps)",
                 "depthwise_lowering.py _on_vector"),
    Optimization("channel-repack", "a depthwise product's operand repacked so its channels "
                 "are contiguous", "depthwise_lowering.py _contiguous_channels, _packed_channels"),
)

NAMES = tuple(o.name for o in OPTIMIZATIONS)


def parse_disabled(text: str | Iterable[str] | None) -> frozenset[str]:
    """``--disable``'s names (comma-separated, or ``all``), checked against the table."""
    if text is None:
        return frozenset()
    names = [n.strip() for n in text.split(",")] if isinstance(text, str) else list(text)
    names = [n for n in names if n]
    if names == ["all"]:
        return frozenset(NAMES)
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        raise GlcError(f"unknown optimization '{', '.join(unknown)}', expected a "
                       f"comma-separated list of {', '.join(NAMES)} (or all)")
    return frozenset(names)
