"""Helpers the rule rows share: reading a match's types and writing computed right sides.

A computed right side reads shapes from ``Match.types`` and returns a pattern built from text
(``parse_term(..., allow_vars=True)``), so every right side, computed or not, is .gls text.
"""

from __future__ import annotations

from functools import lru_cache

from glc.egraph.rewrite import Match
from glc.ir.term import Term
from glc.ir.types import Access, AccessShape, Lst
from glc.syntax.reader import parse_term


@lru_cache(maxsize=4096)
def pattern(text: str) -> Term:
    """A right-side pattern from .gls text with ``?variables`` (cached: terms are immutable, and
    a computed right side produces the same few texts over and over)."""
    return parse_term(text, "<computed rhs>", allow_vars=True)


def acc(match: Match, var: str) -> Access | None:
    """The access pattern type bound to ``?var``, or None if it is not an access pattern."""
    value = match.types.get(var)
    return value if isinstance(value, Access) else None


def num(match: Match, var: str) -> int:
    """The integer bound to ``?var``."""
    value = match.types[var]
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"?{var} is bound to {value!r}, not an integer")
    return value


def perm(match: Match, var: str) -> tuple[int, ...]:
    """The permutation bound to ``?var`` (a ``(list ...)``)."""
    value = match.types[var]
    if not isinstance(value, Lst):
        raise TypeError(f"?{var} is bound to {value!r}, not a list")
    return value.items


def target(match: Match, var: str) -> AccessShape:
    """The access shape bound to ``?var`` (``access-shape`` or ``get-access-shape``)."""
    value = match.types[var]
    if not isinstance(value, AccessShape):
        raise TypeError(f"?{var} is bound to {value!r}, not an access shape")
    return value


def ints(values) -> str:
    """Integers separated by spaces, as ``(shape ...)`` and ``(list ...)`` take them."""
    return " ".join(str(v) for v in values)


def shape_text(shape: tuple[int, ...], item: tuple[int, ...]) -> str:
    """An ``(access-shape (shape ...) (shape ...))`` literal."""
    return f"(access-shape (shape {ints(shape)}) (shape {ints(item)}))".replace("(shape )",
                                                                               "(shape)")


def inverse(p: tuple[int, ...]) -> tuple[int, ...]:
    """The inverse permutation: ``inverse(p)[p[j]] == j``."""
    inv = [0] * len(p)
    for j, pj in enumerate(p):
        inv[pj] = j
    return tuple(inv)


def is_item_axis(a: Access, axis: int) -> bool:
    """Whether ``axis`` of ``a`` is an item axis (past the access axis)."""
    return a.n <= axis < a.ndim
