"""Equality saturation (egg's ``Runner``): search every rule, apply the matches, rebuild; repeat.

The run stops when nothing changes (saturated) or at a limit, and always says which. Defaults
(``Limits``): 30 iterations, 50 000 e-nodes, 10 seconds — egg's defaults, which the rule table's
exploratory rules reach only on the largest kernels. A ``BackoffScheduler`` (egg's) bans a rule
that matches more than its threshold for a while, doubling both each time, so an explosive rule
(the flatten/unflatten rule never saturates) cannot starve the others.

Matching is semi-naive: a rule searches the whole e-graph once, then only the classes within its
left side's reach (glc/egraph/pattern.py) above the classes touched since it last searched. A
match whose classes are all untouched was found and applied before (``done`` holds it), so
nothing is lost; the saturated e-graph is the same as with full searches (tests compare both).
A rule that found matches but could not apply them all (banned, or a limit hit) keeps its old
starting point and searches that region again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from glc.egraph.analysis import AnalysisMismatch
from glc.egraph.egraph import EGraph
from glc.egraph.pattern import Pattern, Program, program, run_program
from glc.egraph.rewrite import Match, Rewrite, variables
from glc.errors import ShapeError
from glc.ir.term import Term

SATURATED = "saturated"
ITERATION_LIMIT = "iteration limit"
NODE_LIMIT = "node limit"
TIME_LIMIT = "time limit"


@dataclass(frozen=True)
class Limits:
    """When the runner gives up: iterations, e-nodes, seconds."""

    iter_limit: int = 30
    node_limit: int = 50_000
    time_limit: float = 10.0


@dataclass(frozen=True)
class BackoffScheduler:
    """egg's backoff: a rule with more than ``match_limit << n`` matches is banned for
    ``ban_length << n`` iterations, where n counts its earlier bans."""

    match_limit: int = 1000
    ban_length: int = 5


@dataclass
class Iteration:
    """What one iteration did."""

    index: int
    applied: dict[str, int]
    skipped: dict[str, int]
    banned: list[str]
    enodes: int
    eclasses: int
    search_seconds: float
    apply_seconds: float
    rebuild_seconds: float

    @property
    def seconds(self) -> float:
        """The iteration's wall time: search, apply and rebuild."""
        return self.search_seconds + self.apply_seconds + self.rebuild_seconds

    def line(self) -> str:
        """One line for ``-v``."""
        applied = ", ".join(f"{k} {v}" for k, v in sorted(self.applied.items())) or "nothing"
        text = (f"iteration {self.index}: {self.enodes} e-nodes, {self.eclasses} e-classes, "
                f"{self.seconds:.3f} s; applied {applied}")
        if self.skipped:
            text += "; ill-typed right sides skipped: " + ", ".join(
                f"{k} {v}" for k, v in sorted(self.skipped.items()))
        if self.banned:
            text += "; banned " + ", ".join(self.banned)
        return text


@dataclass
class Report:
    """The whole run: each iteration, why it stopped, and the final size."""

    iterations: list[Iteration] = field(default_factory=list)
    stop_reason: str = ""
    enodes: int = 0
    eclasses: int = 0
    seconds: float = 0.0

    def lines(self) -> list[str]:
        """The report as ``-v`` prints it: one line per iteration, then the stop reason."""
        return [it.line() for it in self.iterations] + [
            f"stopped: {self.stop_reason} after {len(self.iterations)} iterations, "
            f"{self.enodes} e-nodes, {self.eclasses} e-classes, {self.seconds:.3f} s"]

    def to_json(self) -> dict:
        """The figures ``--json`` prints."""
        return {"enodes": self.enodes, "eclasses": self.eclasses,
                "iterations": len(self.iterations), "stop_reason": self.stop_reason,
                "seconds": round(self.seconds, 6)}


def validate(rules: Sequence[Rewrite]) -> None:
    """Reject a table with duplicate names or a right-side pattern using an unbound variable."""
    seen: set[str] = set()
    for rule in rules:
        if rule.name in seen:
            raise ValueError(f"two rules are named {rule.name}")
        seen.add(rule.name)
        if isinstance(rule.rhs, Term):
            unbound = variables(rule.rhs) - variables(rule.lhs)
            if unbound:
                raise ValueError(f"rule {rule.name}: right side uses unbound "
                                 f"{', '.join('?' + v for v in sorted(unbound))}")


class _Rule:
    """A rule with its compiled patterns and its scheduler state."""

    def __init__(self, rule: Rewrite):
        self.rule = rule
        self.lhs = Pattern(rule.lhs)
        self.rhs = Pattern(rule.rhs) if isinstance(rule.rhs, Term) else None
        self.plain = self.rhs is not None and rule.condition is None
        self.times_banned = 0
        self.banned_until = 0
        self.done: set[tuple] = set()
        self.since: int | None = None  # the first iteration whose changes it has not searched
        self.programs: dict[Term, Program] = {}  # computed right sides, compiled once each


class Runner:
    """Runs a rule table on an e-graph within limits."""

    def __init__(self, rules: Sequence[Rewrite], limits: Limits = Limits(),
                 scheduler: BackoffScheduler = BackoffScheduler(), incremental: bool = True):
        validate(rules)
        self.rules = [_Rule(r) for r in rules]
        self.limits = limits
        self.scheduler = scheduler
        self.incremental = incremental  # False: every search scans the e-graph (the reference)
        self._changes: list[set[int]] = []  # per iteration: the classes it touched

    def run(self, eg: EGraph) -> Report:
        """Saturate ``eg`` in place; the report says what each iteration did and why it stopped."""
        start = time.perf_counter()
        deadline = start + self.limits.time_limit
        report = Report()
        if not eg.clean:
            eg.rebuild()
        for rule in self.rules:
            rule.times_banned = rule.banned_until = 0
            rule.done.clear()
            rule.since = None
        self._changes = []
        eg.take_touched()
        for index in range(self.limits.iter_limit):
            reason = self._iterate(eg, index, deadline, report)
            if (reason is None and not report.iterations[-1].applied
                    and self._can_stop(index)):
                reason = SATURATED
            if reason is not None:
                report.stop_reason = reason
                break
        else:
            report.stop_reason = ITERATION_LIMIT
        report.enodes, report.eclasses = eg.enodes, eg.eclasses
        report.seconds = time.perf_counter() - start
        return report

    def _iterate(self, eg: EGraph, index: int, deadline: float, report: Report) -> str | None:
        reason = None
        t0 = time.perf_counter()
        found, banned = [], []
        searched: dict[tuple, list] = {}  # rules with one left side search once
        regions: dict[tuple[int, int], set[int]] = {}
        for rule in self.rules:
            if rule.banned_until > index:
                continue
            since = rule.since if self.incremental else None
            key = (rule.rule.lhs, since)
            matches = searched.get(key)
            if matches is None:
                roots = None if since is None else self._region(eg, since, rule.lhs.reach,
                                                                regions)
                matches = searched[key] = rule.lhs.search(eg, roots)
            threshold = self.scheduler.match_limit << rule.times_banned
            if len(matches) > threshold:
                rule.banned_until = index + (self.scheduler.ban_length << rule.times_banned)
                rule.times_banned += 1
                banned.append(rule.rule.name)
            elif matches:
                found.append((rule, matches))
            else:
                rule.since = index
            if time.perf_counter() > deadline:
                reason = TIME_LIMIT
                break
        t1 = time.perf_counter()
        applied: dict[str, int] = {}
        skipped: dict[str, int] = {}
        if reason is None:
            for rule, matches in found:
                changed, bad = self._apply(eg, rule, matches)
                rule.since = index
                if changed:
                    applied[rule.rule.name] = changed
                if bad:
                    skipped[rule.rule.name] = bad
                if eg.enodes > self.limits.node_limit:
                    reason = NODE_LIMIT
                    break
                if time.perf_counter() > deadline:
                    reason = TIME_LIMIT
                    break
        t2 = time.perf_counter()
        eg.rebuild()
        self._changes.append(eg.take_touched())
        t3 = time.perf_counter()
        report.iterations.append(Iteration(index + 1, applied, skipped, banned, eg.enodes,
                                           eg.eclasses, t1 - t0, t2 - t1, t3 - t2))
        if reason is None and eg.enodes > self.limits.node_limit:
            reason = NODE_LIMIT
        if reason is None and t3 > deadline:
            reason = TIME_LIMIT
        return reason

    def _region(self, eg: EGraph, since: int, reach: int,
                regions: dict[tuple[int, int], set[int]]) -> set[int]:
        """The classes within ``reach`` parent links above a class touched in iterations
        ``since`` on (memoised per iteration in ``regions``)."""
        key = (since, reach)
        if key in regions:
            return regions[key]
        if reach == 0:
            find, classes = eg.find, eg.classes
            region = {c for c in map(find, set().union(*self._changes[since:])) if c in classes}
        else:
            below = self._region(eg, since, reach - 1, regions)
            find, classes = eg.find, eg.classes
            region = set(below)
            for cid in below:
                region.update(find(p) for _, p in classes[cid].parents)
        regions[key] = region
        return region

    def _apply(self, eg: EGraph, rule: _Rule, matches) -> tuple[int, int]:
        """Apply one rule's matches; returns (unions that changed the e-graph, skipped)."""
        changed = skipped = 0
        row = rule.rule
        find, classes = eg.find, eg.classes
        for cid, subst in matches:
            # A rule applied again to a match it has applied to (the same classes, and for a
            # condition or computed right side, which read the analysis, the same data) adds
            # nothing: skip it. Zero boxes can grow, so the data is part of the key.
            if rule.plain:
                key = (find(cid), *(find(c) for c in subst.values()))
            else:
                key = (find(cid), *((find(c), classes[find(c)].data) for c in subst.values()))
            if key in rule.done:
                continue
            rule.done.add(key)
            if rule.plain:
                new = rule.rhs.instantiate(eg, subst)
            else:
                data = {v: eg.data(c) for v, c in subst.items()}
                match = Match(subst, {v: d.type for v, d in data.items()},
                              {v: d.zeros for v, d in data.items()})
                try:
                    rhs = row.apply(match)
                except ShapeError:
                    skipped += 1
                    continue
                if rhs is None:
                    continue
                if rhs not in rule.programs:
                    rule.programs[rhs] = program(rhs)
                new = run_program(eg, rule.programs[rhs], subst)
            if new is None:
                skipped += 1
                continue
            try:
                changed += eg.union(cid, new)
            except AnalysisMismatch as error:
                raise AnalysisMismatch(f"rule {row.name}: {error}") from None
        return changed, skipped

    def _can_stop(self, index: int) -> bool:
        """egg's ``can_stop`` after iteration ``index`` applied nothing: saturated only if every
        rule searched in it; with rules banned then, fast-forward their bans so that they all
        search in the next iteration, and go on."""
        banned = [r for r in self.rules if r.banned_until > index]
        if not banned:
            return True
        delta = min(r.banned_until for r in banned) - (index + 1)
        for rule in banned:
            rule.banned_until -= delta
        return False
