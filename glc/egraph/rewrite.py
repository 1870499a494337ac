"""A rewrite rule: one row of the rule table (egg's ``name; lhs => rhs; if condition``).

Patterns are terms in .gls syntax with ``?name`` variables (``parse_term(..., allow_vars=True)``).
The right side is a pattern, or a function of the match that returns a pattern (for rules whose
right side is computed from shapes) or None when the rule does not apply; a computed right side
is declared with ``shows``, the pattern it produces written with its computed parts named
(``glc rules`` prints it). ``Match.types`` gives the
analysis type (glc/ir/types.py: Access, int, Shape, ...) of every bound variable, so conditions and
computed right sides can read shapes without knowing whether they run on an e-graph or on a term.
On an e-graph, ``Match.zeros`` also gives each access variable's proven-zero boxes (one ``(lo, hi)``
range per dim; glc/egraph/analysis.py, whose ``is_zero`` tests a box against them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from glc.ir.term import Term, walk
from glc.syntax.printer import print_term
from glc.syntax.reader import parse_term


@dataclass(frozen=True)
class Match:
    """One match of a left side: what each variable is bound to, and its type."""

    bindings: Mapping[str, object]
    types: Mapping[str, object]
    zeros: Mapping[str, tuple] = field(default_factory=dict)


RightSide = Term | Callable[[Match], Term | None]


@dataclass(frozen=True)
class Rewrite:
    """A named rewrite: lhs pattern => rhs (pattern or function), if condition."""

    name: str
    lhs: Term
    rhs: RightSide
    condition: Callable[[Match], bool] | None = None
    source: str = ""
    shows: str = ""  # a computed right side: the pattern it produces, its computed parts named

    @property
    def right_side(self) -> str:
        """The right side as the table prints it: the pattern, or what a computed one shows."""
        return self.shows if callable(self.rhs) else print_term(self.rhs)

    def apply(self, match: Match) -> Term | None:
        """The right-side pattern for this match, or None if the rule does not apply to it."""
        if self.condition is not None and not self.condition(match):
            return None
        return self.rhs(match) if callable(self.rhs) else self.rhs


def variables(pattern: Term) -> set[str]:
    """The ``?variables`` a pattern mentions."""
    return {t.value for t in walk(pattern) if t.op == "var"}


def rewrite(name: str, lhs: str, rhs: str | Callable[[Match], Term | None],
            condition: Callable[[Match], bool] | None = None, source: str = "",
            shows: str = "") -> Rewrite:
    """Build a rule from pattern text; a right-side variable the left side does not bind, or a
    computed right side that does not say what it produces (``shows``), is an error when the
    table is built, not when the rule first fires."""
    left = parse_term(lhs, f"<rule {name} lhs>", allow_vars=True)
    if isinstance(rhs, str):
        right = parse_term(rhs, f"<rule {name} rhs>", allow_vars=True)
        unbound = variables(right) - variables(left)
        if unbound:
            raise ValueError(f"rule {name}: right side uses unbound "
                             f"{', '.join('?' + v for v in sorted(unbound))}")
        return Rewrite(name, left, right, condition, source)
    if not shows:
        raise ValueError(f"rule {name}: a computed right side needs shows= (what it produces)")
    return Rewrite(name, left, rhs, condition, source, shows)


def match_term(pattern: Term, term: Term) -> dict[str, Term] | None:
    """Match a pattern against a term (syntactically, no e-graph): the bindings, or None."""
    bindings: dict[str, Term] = {}
    stack = [(pattern, term)]
    while stack:
        p, t = stack.pop()
        if p.op == "var":
            if bindings.setdefault(p.value, t) != t:
                return None
            continue
        if p.op != t.op or p.value != t.value or len(p.args) != len(t.args):
            return None
        stack.extend(zip(p.args, t.args, strict=True))
    return bindings


def substitute(pattern: Term, bindings: Mapping[str, Term]) -> Term:
    """The pattern with each variable replaced by its bound term."""
    built: dict[int, Term] = {}
    for node in walk(pattern):
        if node.op == "var":
            built[id(node)] = bindings[node.value]
        else:
            built[id(node)] = node.with_args(tuple(built[id(a)] for a in node.args))
    return built[id(pattern)]
