"""The schedule search (glc/lower/schedule.py): it keeps the cheapest candidate by the analytic
model, and for operands strided along their columns that is a transposing layout."""

from __future__ import annotations

import itertools
from dataclasses import replace

from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.lower.kernel import kernel_estimate
from glc.lower.schedule import orient, search
from glc.lower.tiling import k_digits
from glc.lower.transfer import OperandUnexpressible, Target
from glc.lower.view import row_major


def _qkt() -> dict[str, Target]:
    """Q·K^T, 128x64x128, with K stored row-major: B = K^T's columns are K's rows."""
    keys = row_major("k", (128, 64))
    return {"a": Target(row_major("q", (128, 64)), 0, 1),
            "b": Target(replace(keys, groups=keys.groups[::-1]), 8192, 1)}


def test_the_search_keeps_the_cheapest_of_its_candidates():
    config = load_config("n16")
    n = config.array_size
    targets = _qkt()
    chosen = search(targets, (128, 128), True, False, 0, 16384, config)
    figures = []
    for swap in (False, True):
        a, b, c = orient(targets, (128, 128), swap, 16384, True)
        for ta, tb, inner in itertools.product((0, n), (0, n), [None, *range(k_digits(a, b))]):
            try:
                figures.append(kernel_estimate(replace(a, transpose=ta),
                                               replace(b, transpose=tb), c, True, False, 0,
                                               config, inner).cycles)
            except (OperandUnexpressible, GlcError):  # no such kernel: no figure
                continue
    assert chosen.cycles <= min(figures)


def test_keys_stored_row_major_are_loaded_by_transposing():
    config = load_config("n16")
    chosen = search(_qkt(), (128, 128), True, False, 0, 16384, config)
    as_lies = kernel_estimate(chosen.a, replace(chosen.b, transpose=0), chosen.c, True, False,
                              0, config)
    assert chosen.b.transpose == config.array_size
    assert chosen.cycles < as_lies.cycles / 2
