"""The e-graph (egg's ``EGraph``, Willsey et al., POPL 2021): hash-consed e-nodes in e-classes.

An e-node is a plain tuple ``(op, value, children)`` — ``children`` a tuple of e-class ids — so
hashing and comparing nodes costs what tuples cost. ``memo`` is the hash-cons: canonical e-node →
class id. ``union`` only records the merge; ``rebuild`` (egg §3, deferred rebuilding) restores
the invariants in one pass: every node in ``memo`` and in a class is canonical (children are
representatives), congruent nodes share a class, and each class's analysis data
(glc/egraph/analysis.py) is its nodes' data merged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from glc.egraph.analysis import AnalysisMismatch, Data, make, merge
from glc.egraph.unionfind import UnionFind
from glc.errors import ShapeError
from glc.ir.term import Term, walk
from glc.ir.types import Access

ENode = tuple  # (op: str, value: object, children: tuple[int, ...])


class EClass:
    """One e-class: its nodes, the (node, class) pairs that use it, and its analysis data."""

    __slots__ = ("id", "nodes", "parents", "data")

    def __init__(self, cid: int, nodes: list[ENode], data: Data):
        self.id = cid
        self.nodes = nodes
        self.parents: list[tuple[ENode, int]] = []
        self.data = data


class EGraph:
    """An e-graph of Glenside terms over the input types ``env`` (name → Access)."""

    def __init__(self, env: Mapping[str, Access]):
        self.env = env
        self.uf = UnionFind()
        self.memo: dict[ENode, int] = {}
        self.classes: dict[int, EClass] = {}
        self.by_op: dict[str, set[int]] = defaultdict(set)
        self._pending: list[tuple[ENode, int]] = []
        self._analysis_pending: list[tuple[ENode, int]] = []
        self._dirty: set[int] = set()
        self._rekeyed: set[ENode] = set()
        self._touched: set[int] = set()
        self._made: dict[tuple, Data | ShapeError] = {}
        self.clean = True

    # --- the interface the runner and extractors use --------------------------------------

    def find(self, cid: int) -> int:
        """The representative id of a class."""
        return self.uf.find(cid)

    def data(self, cid: int) -> Data:
        """The analysis data of a class."""
        return self.classes[self.uf.find(cid)].data

    def type_of(self, cid: int) -> object:
        """The type of a class (an Access, int, Shape, ...)."""
        return self.data(cid).type

    def take_touched(self) -> set[int]:
        """The live classes (by representative) added, merged, repaired or given new data since
        the last call; the record starts again empty."""
        find, classes = self.uf.find, self.classes
        touched = {find(c) for c in self._touched}
        self._touched = set()
        return {c for c in touched if c in classes}

    @property
    def enodes(self) -> int:
        """The number of distinct e-nodes (exact after ``rebuild``)."""
        return len(self.memo)

    @property
    def eclasses(self) -> int:
        """The number of e-classes."""
        return len(self.classes)

    def make(self, op: str, value: object, children: list[Data]) -> Data:
        """The analysis data of a node over children of this data (analysis.make), memoised:
        e-graphs repeat the same operator over the same types (every product of a chain has
        one shape), and the shape rules cost more than the lookup. Raises ShapeError."""
        # Each child's data with its type's class: 1 == 1.0, but (literal 1) is an int32 scalar.
        key = (op, value, *[(c.type.__class__, c) for c in children])
        found = self._made.get(key)
        if found is None:
            try:
                found = make(op, value, children, self.env)
            except ShapeError as error:
                found = error
            self._made[key] = found
        if isinstance(found, ShapeError):
            raise ShapeError(found.message, found.arg)
        return found

    def canonical(self, node: ENode) -> ENode:
        """The node with its children replaced by their representatives."""
        op, value, children = node
        if not children:
            return node
        find = self.uf.find
        return (op, value, tuple(find(c) for c in children))

    def lookup(self, node: ENode) -> int | None:
        """The class of a node if the e-graph holds it."""
        cid = self.memo.get(self.canonical(node))
        return None if cid is None else self.uf.find(cid)

    def lookup_term(self, term: Term) -> int | None:
        """The class of a ground term if the e-graph holds it."""
        ids: dict[int, int] = {}
        for node in walk(term):
            cid = self.lookup((node.op, node.value, tuple(ids[id(a)] for a in node.args)))
            if cid is None:
                return None
            ids[id(node)] = cid
        return ids[id(term)]

    def add(self, node: ENode, data: Data | None = None) -> int:
        """The class of a node, adding it if new; ``data`` if the caller already computed it.

        Raises ShapeError if the node is ill-typed (nothing is added then)."""
        node = self.canonical(node)
        cid = self.memo.get(node)
        if cid is not None:
            return self.uf.find(cid)
        if data is None:
            classes = self.classes
            data = self.make(node[0], node[1], [classes[c].data for c in node[2]])
        cid = self.uf.make_set()
        self.classes[cid] = EClass(cid, [node], data)
        for child in set(node[2]):
            self.classes[child].parents.append((node, cid))
        self.memo[node] = cid
        self.by_op[node[0]].add(cid)
        self._touched.add(cid)
        return cid

    def add_term(self, term: Term) -> int:
        """Add every node of a ground term; returns the root's class. Raises ShapeError."""
        ids: dict[int, int] = {}
        for node in walk(term):
            if node.op == "var":
                raise ValueError(f"cannot add pattern variable ?{node.value} to an e-graph")
            ids[id(node)] = self.add((node.op, node.value, tuple(ids[id(a)] for a in node.args)))
        return ids[id(term)]

    def union(self, a: int, b: int) -> bool:
        """Record that classes ``a`` and ``b`` are equal; False if they already were.

        Raises AnalysisMismatch naming both classes' terms if their types differ."""
        find = self.uf.find
        a, b = find(a), find(b)
        if a == b:
            return False
        ca, cb = self.classes[a], self.classes[b]
        if len(ca.parents) < len(cb.parents):
            a, b, ca, cb = b, a, cb, ca
        try:
            merged = merge(ca.data, cb.data)
        except AnalysisMismatch as error:
            raise AnalysisMismatch(f"cannot merge class {a} ({self._show(a)}) with class {b} "
                                   f"({self._show(b)}): {error}") from None
        self.clean = False
        self.uf.union(a, b)
        del self.classes[b]
        for node in cb.nodes:
            self.by_op[node[0]].discard(b)
        self._dirty.add(a)
        self._touched.add(a)
        self._pending.extend(cb.parents)
        if merged is not ca.data or merged != cb.data:
            self._analysis_pending.extend(ca.parents)
            self._analysis_pending.extend(cb.parents)
        ca.data = merged
        ca.nodes.extend(cb.nodes)
        ca.parents.extend(cb.parents)
        return True

    def rebuild(self) -> int:
        """Restore congruence closure and the analysis (egg's rebuild); returns the unions made."""
        unions = 0
        find, memo, classes = self.uf.find, self.memo, self.classes
        while self._pending or self._analysis_pending:
            todo, self._pending = self._pending, []
            for node, cid in todo:
                memo.pop(node, None)
                node = self.canonical(node)
                cid = find(cid)
                other = memo.get(node)
                if other is not None and find(other) != cid:
                    unions += self.union(other, cid)
                cid = find(cid)
                memo[node] = cid
                self._rekeyed.add(node)
                self._dirty.add(cid)
            todo, self._analysis_pending = self._analysis_pending, []
            for node, cid in todo:
                cls = classes[find(cid)]
                op, value, children = self.canonical(node)
                fresh = self.make(op, value, [classes[find(c)].data for c in children])
                merged = merge(cls.data, fresh)
                if merged is not cls.data:
                    cls.data = merged
                    self._touched.add(cls.id)
                    self._analysis_pending.extend(cls.parents)
        self._rebuild_classes()
        if not self.clean:
            self._sweep_memo()
        self.clean = True
        return unions

    def _sweep_memo(self) -> None:
        """Drop hash-cons keys left in a stale spelling. Repair pops a node's key by the spelling
        its parent entry holds, which may predate the spelling the key was re-inserted under
        (several unions in one rebuild, or an entry in a class no union touched); such keys are
        never hit by a canonical lookup, but they would inflate the e-node count. Only keys
        repair inserted can go stale this way, so only those are checked."""
        parents = self.uf.parents
        stale = [node for node in self._rekeyed if any(parents[c] != c for c in node[2])]
        for node in stale:
            self.memo.pop(node, None)
        self._rekeyed.difference_update(stale)

    def _rebuild_classes(self) -> None:
        """Canonical, duplicate-free node and parent lists in the classes unions touched."""
        canonical, find, by_op = self.canonical, self.uf.find, self.by_op
        self._touched.update(self._dirty)
        for cid in {find(c) for c in self._dirty}:
            cls = self.classes[cid]
            cls.nodes = list(dict.fromkeys(canonical(n) for n in cls.nodes))
            cls.parents = list(dict.fromkeys((canonical(n), find(p)) for n, p in cls.parents))
            for node in cls.nodes:
                by_op[node[0]].add(cid)
        self._dirty.clear()

    # --- reading the e-graph ----------------------------------------------------------------

    def nodes(self) -> Iterable[tuple[int, ENode]]:
        """Every (class id, e-node) pair."""
        for cid, cls in self.classes.items():
            for node in cls.nodes:
                yield cid, node

    def _show(self, cid: int) -> str:
        """A small term of the class, for messages; works between union and rebuild too."""
        from glc.syntax.printer import print_term

        best: dict[int, tuple[int, ENode]] = {}
        for _ in range(len(self.classes)):
            changed = False
            for root, cls in self.classes.items():
                for node in cls.nodes:
                    op, value, kids = self.canonical(node)
                    kids = tuple(self.find(k) for k in kids)
                    if all(k in best for k in kids):
                        size = 1 + sum(best[k][0] for k in kids)
                        if root not in best or size < best[root][0]:
                            best[root] = (size, (op, value, kids))
                            changed = True
            if not changed:
                break
        cid = self.find(cid)
        if cid not in best:
            return "<no finite term>"
        built: dict[int, Term] = {}
        for c in sorted(best, key=lambda c: best[c][0]):
            op, value, kids = best[c][1]
            if all(k in built for k in kids):
                built[c] = Term(op, tuple(built[k] for k in kids), value)
        return print_term(built[cid])
