"""Patterns compiled for e-matching (egg's ``Pattern``: search and instantiate).

A pattern is a Term with ``?variable`` leaves (written in .gls syntax, see glc/egraph/rewrite.py).
``Pattern`` compiles it once into nested closures, one per pattern node, that take a class id and
a partial substitution and return the extended substitutions. The root operator selects the
candidate classes through the e-graph's by-operator index, so a search never scans every class.
Sub-patterns without variables are looked up once per search through the hash-cons.
``search(eg, roots)`` searches only the given root classes: a match reads the node lists of the
classes at most ``reach`` parent links below its root, so after a change the runner searches
only the classes within ``reach`` links above the changed ones (semi-naive matching).
"""

from __future__ import annotations

from collections.abc import Callable

from glc.egraph.analysis import Data
from glc.egraph.egraph import EGraph
from glc.errors import ShapeError
from glc.ir.term import Term, walk

Subst = dict[str, int]
Matcher = Callable[[EGraph, int, Subst], list[Subst]]


class Pattern:
    """A compiled pattern: ``search`` finds its matches, ``instantiate`` adds an instance."""

    def __init__(self, term: Term):
        self.term = term
        self.variables = sorted({t.value for t in walk(term) if t.op == "var"})
        self._grounds: list[Term] = []
        self._ground_ids: list[int | None] = []
        self._matcher = self._compile(term)
        self._program: Program | None = None
        self.reach = _reach(term)

    def __repr__(self) -> str:
        from glc.syntax.printer import print_term

        return f"Pattern({print_term(self.term)})"

    # --- search ------------------------------------------------------------------------------

    def _compile(self, pat: Term) -> Matcher:
        if pat.op == "var":
            name = pat.value

            def match_var(eg: EGraph, cid: int, subst: Subst) -> list[Subst]:
                bound = subst.get(name)
                if bound is None:
                    extended = dict(subst)
                    extended[name] = cid
                    return [extended]
                return [subst] if bound == cid else []

            return match_var
        if not any(t.op == "var" for t in walk(pat)):
            slot = len(self._grounds)
            self._grounds.append(pat)
            ground_ids = self._ground_ids

            def match_ground(eg: EGraph, cid: int, subst: Subst) -> list[Subst]:
                return [subst] if ground_ids[slot] == cid else []

            return match_ground
        op, value, arity = pat.op, pat.value, len(pat.args)
        # A variable child is matched inline (the commonest case, and a call saved per node).
        children = [(arg.value, None) if arg.op == "var" else (None, self._compile(arg))
                    for arg in pat.args]

        def match_node(eg: EGraph, cid: int, subst: Subst) -> list[Subst]:
            out: list[Subst] = []
            for node in eg.classes[cid].nodes:
                if node[0] != op or node[1] != value or len(node[2]) != arity:
                    continue
                partial = [subst]
                for (name, child), arg in zip(children, node[2], strict=True):
                    if child is not None:
                        partial = [s for p in partial for s in child(eg, arg, p)]
                    else:
                        extended = []
                        for p in partial:
                            bound = p.get(name)
                            if bound is None:
                                p = dict(p)
                                p[name] = arg
                                extended.append(p)
                            elif bound == arg:
                                extended.append(p)
                        partial = extended
                    if not partial:
                        break
                out.extend(partial)
            return out

        return match_node

    def search(self, eg: EGraph, roots: set[int] | None = None) -> list[tuple[int, Subst]]:
        """The matches in a rebuilt e-graph, (class id, substitution of class ids): every match,
        or those rooted at a class of ``roots`` (representatives)."""
        if not self._prepare(eg):
            return []
        if self.term.op == "var":
            return [(cid, {self.term.value: cid}) for cid in (eg.classes if roots is None
                                                               else roots)]
        if self._grounds and self._grounds[0] is self.term:
            cid = self._ground_ids[0]
            return [(cid, {})] if roots is None or cid in roots else []
        matcher = self._matcher
        candidates = eg.by_op.get(self.term.op, ())
        if roots is not None:
            candidates = roots.intersection(candidates)
        return [(cid, subst) for cid in candidates for subst in matcher(eg, cid, {})]

    def search_class(self, eg: EGraph, cid: int) -> list[Subst]:
        """The substitutions under which the pattern matches class ``cid``."""
        if not self._prepare(eg):
            return []
        return self._matcher(eg, eg.find(cid), {})

    def _prepare(self, eg: EGraph) -> bool:
        self._ground_ids[:] = [eg.lookup_term(t) for t in self._grounds]
        return None not in self._ground_ids

    # --- instantiate -------------------------------------------------------------------------

    def instantiate(self, eg: EGraph, subst: Subst) -> int | None:
        """Add this pattern under ``subst``; None (and nothing added) if a node is ill-typed."""
        if self._program is None:
            self._program = program(self.term)
        return run_program(eg, self._program, subst)


def _reach(term: Term) -> int:
    """How many parent links below the root a match reads a class's node list or identity:
    the depth of the deepest operator (or variable-free sub-pattern) of the pattern; 0 for a
    variable. A class that changes this far below a root can change the root's matches."""
    if term.op == "var" or not term.args or not any(t.op == "var" for t in walk(term)):
        return 0
    return 1 + max(_reach(arg) for arg in term.args)


Program = list[tuple[str, object, tuple[int, ...]]]


def program(term: Term) -> Program:
    """A pattern as a list of nodes, children first, each naming its children by position."""
    order = walk(term)
    slot = {id(node): i for i, node in enumerate(order)}
    return [(n.op, n.value, tuple(slot[id(a)] for a in n.args)) for n in order]


def run_program(eg: EGraph, nodes: Program, subst: Subst) -> int | None:
    """Add a pattern program under ``subst``; None (and nothing added) if a node is ill-typed.

    Two passes: the first finds the nodes the e-graph already holds and types the others (so a
    right side whose shape rule fails adds no partial garbage); the second adds them."""
    count = len(nodes)
    ids: list[int | None] = [None] * count
    datas: list[Data | None] = [None] * count
    classes, find, memo = eg.classes, eg.find, eg.memo
    for i, (op, value, kids) in enumerate(nodes):
        if op == "var":
            cid = find(subst[value])
            ids[i], datas[i] = cid, classes[cid].data
            continue
        children = tuple(ids[k] for k in kids)
        if None not in children:
            cid = memo.get((op, value, children))
            if cid is not None:
                cid = find(cid)
                ids[i], datas[i] = cid, classes[cid].data
                continue
        try:
            datas[i] = eg.make(op, value, [datas[k] for k in kids])
        except ShapeError:
            return None
    for i, (op, value, kids) in enumerate(nodes):
        if ids[i] is None:
            ids[i] = eg.add((op, value, tuple(ids[k] for k in kids)), datas[i])
    return ids[-1]
