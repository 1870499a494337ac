"""The Glenside rewrite table, grouped by purpose; each row cites its source.

``RULESETS`` maps a set's name to a function of the array size giving its rows; ``select`` reads
a comma-separated list of set names (``glc compile --rules im2col,tensorise``) into one table.
"""

from __future__ import annotations

from collections.abc import Callable

from glc.egraph.rewrite import Rewrite
from glc.errors import GlcError
from glc.rewrites import cleanup, im2col, layout, orientation, padding, tensorise

RULESETS: dict[str, Callable[[int], list[Rewrite]]] = {
    "tensorise": tensorise.rules,
    "im2col": im2col.rules,
    "orientation": orientation.rules,
    "cleanup": cleanup.rules,
    "layout": lambda size: layout.rules(size) + padding.commutations(),
    "pad": padding.pad_rules,
    "split": padding.split_rules,
    "pad-reduced": lambda size: padding.pad_rules(size, ("reduced",)),
    "split-reduced": lambda size: padding.split_rules(size, ("reduced",)),
    "bubble": lambda size: padding.bubbles() + padding.commutations(),
}

DEFAULT = "im2col,tensorise"


def select(names: str, size: int) -> list[Rewrite]:
    """The rows of the named sets (comma-separated; ``all`` for every set) for an array of
    ``size`` x ``size``; a row in two sets appears once."""
    if size < 1:
        raise GlcError(f"the array size must be at least 1, got {size}")
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    if wanted == ["all"]:
        wanted = list(RULESETS)
    unknown = [n for n in wanted if n not in RULESETS]
    if unknown or not wanted:
        raise GlcError(f"unknown rule set '{', '.join(unknown) or names}': expected a "
                       f"comma-separated list of {', '.join(RULESETS)} or all")
    table: dict[str, Rewrite] = {}
    for name in wanted:
        for rule in RULESETS[name](size):
            table.setdefault(rule.name, rule)
    return list(table.values())


def sets_of(size: int) -> dict[str, list[str]]:
    """Each rule's name → the sets that hold it (a row may be in two: ``layout`` and ``bubble``
    share the pad and slice commutations)."""
    found: dict[str, list[str]] = {}
    for name, rows in RULESETS.items():
        for rule in rows(size):
            found.setdefault(rule.name, []).append(name)
    return found


def all_rules(size: int) -> list[Rewrite]:
    """Every row of every set."""
    return select("all", size)
