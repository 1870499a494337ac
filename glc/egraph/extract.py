"""Extraction: the cheapest term an e-class holds, by a pluggable cost function.

A cost function gives one e-node's own cost, ``cost(egraph, class_id, node) -> float`` (it can read
the class's and the children's types through the e-graph); ``math.inf`` declares a node
unextractable. ``greedy`` is egg's bottom-up extractor: each class takes its node of least *tree*
cost (own + children's, a shared child paid at each use), found in one pass with Knuth's
generalisation of Dijkstra's algorithm. ``exact`` minimises the *DAG* cost — each class used is
paid once, as in the hardware, where a shared sub-term is computed once — as an integer program
(the reference, Glenside, used commercial CPLEX; SciPy's HiGHS, ``scipy.optimize.milp``, is free):
a binary per e-node; each class chooses at most one node, the root's class (and every class all
its terms need) exactly one; a class choosing a node that uses class k makes k choose one.
Cycles are forbidden in layers: a node that is its own child is never a candidate, a node's
child may not choose a node using the node's own class (cycles of two), cycles of three and
four classes are cut before solving, and any longer cycle in the solver's answer is cut and the
program solved again (lazy constraints, rather than order variables on every class of a cycle,
whose big-M rows make a weak relaxation). A cut names classes, not nodes: it rules a cycle out
whichever nodes realise its steps.
The greedy answer bounds the objective and prunes nodes that cannot beat it.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from glc.egraph.egraph import EGraph, ENode
from glc.errors import GlcError
from glc.ir.term import Term

CostFunction = Callable[[EGraph, int, ENode], float]


def node_count(eg: EGraph, cid: int, node: ENode) -> float:
    """Every node costs 1: the smallest term (tree) or the fewest distinct nodes (DAG)."""
    return 1.0


class Unextractable(GlcError):
    """No term of the class avoids the nodes the cost function rules out."""


@dataclass
class Extraction:
    """An extracted term and what it costs."""

    term: Term
    choice: dict[int, ENode]
    dag_cost: float
    optimal: bool
    method: str
    seconds: float


def greedy(eg: EGraph, root: int, cost: CostFunction = node_count) -> Extraction:
    """The least-tree-cost term of ``root``'s class (egg's bottom-up extractor)."""
    start = time.perf_counter()
    best = tree_costs(eg, cost)
    root = eg.find(root)
    if root not in best:
        raise _unextractable(eg, root)
    choice = _reachable_choice(eg, root, {c: node for c, (_, node) in best.items()})
    return Extraction(build_term(eg, root, choice), choice, dag_cost(eg, choice, cost), False,
                      "greedy", time.perf_counter() - start)


def tree_costs(eg: EGraph, cost: CostFunction,
               combine: Callable[[list[float]], float] = sum) -> dict[int, tuple[float, ENode]]:
    """Each extractable class's least tree cost and the node achieving it.

    A node becomes ready when all its child classes are settled; settling classes cheapest
    first makes each one's first settled cost its least (costs are non-negative, and
    ``combine`` of the children's costs — ``sum`` for tree cost, ``max`` for a lower bound
    on DAG cost — never decreases as they grow: Knuth's superior functions)."""
    if not eg.clean:
        raise ValueError("extract from a rebuilt e-graph")
    waiting: dict[tuple[ENode, int], int] = {}
    heap: list[tuple[float, int, int, ENode]] = []
    own: dict[ENode, float] = {}
    tick = 0
    for cid, cls in eg.classes.items():
        for node in cls.nodes:
            c = cost(eg, cid, node)
            if c < 0:
                raise ValueError(f"negative cost {c} for {node[0]}")
            own[node] = c
            if math.isinf(c):
                continue
            kids = set(node[2])
            if kids:
                waiting[(node, cid)] = len(kids)
            else:
                heap.append((c, tick, cid, node))
                tick += 1
    heapq.heapify(heap)
    best: dict[int, tuple[float, ENode]] = {}
    while heap:
        total, _, cid, node = heapq.heappop(heap)
        if cid in best:
            continue
        best[cid] = (total, node)
        # Parent lists may hold a node in stale (pre-union) spellings: canonicalise, once each.
        for key in dict.fromkeys((eg.canonical(n), eg.find(p)) for n, p in eg.classes[cid].parents):
            parent, pid = key
            left = waiting.get(key)
            if left is None:
                continue
            if left > 1:
                waiting[key] = left - 1
                continue
            del waiting[key]
            if pid not in best:
                value = own[parent] + combine([best[k][0] for k in parent[2]])
                heapq.heappush(heap, (value, tick, pid, parent))
                tick += 1
    return best


def dag_cost(eg: EGraph, choice: dict[int, ENode], cost: CostFunction) -> float:
    """The cost of a choice with each class paid once."""
    return sum(cost(eg, cid, node) for cid, node in choice.items())


def exact(eg: EGraph, root: int, cost: CostFunction = node_count,
          time_limit: float = 30.0) -> Extraction:
    """The least-DAG-cost term of ``root``'s class, by integer programming (HiGHS).

    ``optimal`` is False if the solver stopped at ``time_limit`` (its best answer is returned, or
    the greedy one if it found none)."""
    # Imported here: SciPy's optimizer takes most of a second to import, half of a compile
    # whose answer is cached (which never extracts).
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_array

    start = time.perf_counter()
    fallback = greedy(eg, root, cost)
    root = eg.find(root)
    # Prune with the greedy answer's DAG cost G: a term holding node n costs at least n's own
    # cost plus the costliest child's DAG cost, itself at least its ``max`` lower bound; nodes
    # whose bound exceeds G cannot be in an optimum (the greedy answer's nodes all survive).
    bound = fallback.dag_cost * (1 + 1e-9) + 1e-9  # slack for rounding in the float sums
    lower = {cid: c for cid, (c, _) in tree_costs(eg, cost, _max).items()}
    classes, nodes = _candidates(eg, root, cost, lower, bound)
    rows, cols, vals, lo, hi = [], [], [], [], []

    def row(entries, low, high):
        for col, val in entries:
            rows.append(len(lo))
            cols.append(col)
            vals.append(val)
        lo.append(low)
        hi.append(high)

    # One binary per candidate node: the root's class chooses one node, any other class at most
    # one, and a chosen node's child classes choose one each.
    needed = _mandatory(classes, nodes, root)
    for cid, members in classes.items():
        row([(i, 1.0) for i in members], 1.0 if cid in needed else 0.0, 1.0)
    # If a class chooses a node using class k, k chooses a node. Summed over the class's nodes
    # using k (valid as a class chooses at most one), not one row per node: otherwise the
    # relaxation mixes a class's alternatives and pays a child they share only a fraction.
    # The child's node must not use the class itself (a cycle of two), stated here and not only
    # as a cut, so the relaxation cannot pay for half of each node of a cycle that supports
    # itself.
    for cid, members in classes.items():
        users: dict[int, list[int]] = {}
        for i in members:
            for k in set(nodes[i][1][2]):
                users.setdefault(k, []).append(i)
        for k, using in users.items():
            row([(i, -1.0) for i in using]
                + [(j, 1.0) for j in classes[k] if cid not in nodes[j][1][2]], 0.0, math.inf)
    objective = np.array([cost(eg, cid, node) for cid, node in nodes])
    row(list(enumerate(objective)), -math.inf, bound)
    # Nodes of class c that use class k, for the cycle cuts: a cycle of classes c1 -> c2 ->
    # ... -> c1 is ruled out whatever nodes realise each step, by one row over all of them.
    using: dict[tuple[int, int], list[int]] = {}
    for i, (cid, node) in enumerate(nodes):
        for k in set(node[2]):
            using.setdefault((cid, k), []).append(i)

    def cut(cycle: list[int]) -> None:
        steps = zip(cycle, cycle[1:] + cycle[:1], strict=True)
        row([(i, 1.0) for step in steps for i in using[step]], -math.inf, len(cycle) - 1.0)

    for cycle in _short_cycles(classes, using):
        cut(cycle)
    optimal = True
    while True:
        matrix = coo_array((vals, (rows, cols)), shape=(len(lo), len(nodes))).tocsr()
        remaining = max(0.0, time_limit - (time.perf_counter() - start))
        # No relative gap: HiGHS's default (1e-4) would call an answer optimal that is 1e5 off
        # under a prohibitive 1e9 cost (glc/rewrites/cost.py).
        result = milp(objective, integrality=np.ones(len(nodes)),
                      bounds=Bounds(0, 1), constraints=LinearConstraint(matrix, lo, hi),
                      options={"time_limit": remaining, "disp": False,
                               "mip_rel_gap": 0.0})
        if result.x is None:
            fallback.method = "greedy (the solver found no answer in time)"
            fallback.seconds = time.perf_counter() - start
            return fallback
        optimal = optimal and result.status == 0
        chosen: dict[int, ENode] = {}
        for i, (cid, node) in enumerate(nodes):
            if result.x[i] > 0.5:
                chosen.setdefault(cid, node)
        cycles = _cycles(root, chosen)
        if not cycles:
            break
        if not optimal:
            fallback.method = "greedy (the solver's answer in time had a cycle)"
            fallback.seconds = time.perf_counter() - start
            return fallback
        # Lazy acyclicity (cutting planes): these nodes may not all be chosen together. Any
        # acyclic answer satisfies this, so the optimum is unchanged; cycles are rare, so few
        # rounds are needed, unlike order variables on every cyclic class.
        for cycle in cycles:
            cut(cycle)
    choice = _reachable_choice(eg, root, chosen)
    return Extraction(build_term(eg, root, choice), choice, dag_cost(eg, choice, cost),
                      optimal, "exact", time.perf_counter() - start)


def _mandatory(classes: dict[int, list[int]], nodes, root: int) -> set[int]:
    """The classes every acyclic extraction of the root uses.

    M(c) = {c} ∪ ⋂ over c's nodes n of ⋃ over n's children k of M(k), the greatest fixpoint
    (bit sets, iterated from "every class"): any post-fixpoint is sound by induction on an
    extraction's height. The LP relaxation alone pays a descendant that all of a class's
    alternatives share only in part; fixing these to 1 removes that slack."""
    bit = {cid: 1 << j for j, cid in enumerate(classes)}
    every = (1 << len(classes)) - 1
    mand = dict.fromkeys(classes, every)
    changed = True
    while changed:
        changed = False
        for cid in reversed(list(classes)):
            meet = every
            for i in classes[cid]:
                join = 0
                for k in nodes[i][1][2]:
                    join |= mand[k]
                meet &= join
            value = bit[cid] | meet if classes[cid] else bit[cid]
            if value != mand[cid]:
                mand[cid] = value
                changed = True
    found = mand[root]
    return {cid for cid in classes if found & bit[cid]}


def _short_cycles(classes: dict[int, list[int]],
                  using: dict[tuple[int, int], list[int]]) -> list[list[int]]:
    """Every cycle of three or four classes among the candidates (cycles of two are excluded by
    the child rows, cycles of one by the candidates), each once."""
    succ: dict[int, set[int]] = {}
    for c, k in using:
        succ.setdefault(c, set()).add(k)
    found = []
    for c in classes:
        for k in succ.get(c, ()):
            if k < c:
                continue
            for m in succ.get(k, ()):
                if m <= c or m == k:
                    continue
                # Each cycle once: from its least class.
                if c in succ.get(m, ()):
                    found.append([c, k, m])
                for q in succ.get(m, ()):
                    if q > c and q not in (k, m) and c in succ.get(q, ()):
                        found.append([c, k, m, q])
    return found


def _cycles(root: int, chosen: dict[int, ENode]) -> list[list[int]]:
    """Cycles of the chosen nodes reachable from the root, one per back edge found by a DFS."""
    state: dict[int, int] = {}  # 1: on the DFS path, 2: done
    path: list[int] = []
    cycles = []
    work = [(root, 0)]
    while work:
        cid, i = work.pop()
        if i == 0:
            state[cid] = 1
            path.append(cid)
        kids = chosen[cid][2]
        if i < len(kids):
            work.append((cid, i + 1))
            k = kids[i]
            if state.get(k) == 1:
                cycles.append(path[path.index(k):])
            elif k not in state:
                work.append((k, 0))
            continue
        state[cid] = 2
        path.pop()
    return cycles


def _max(values: list[float]) -> float:
    return max(values, default=0.0)


def _candidates(eg: EGraph, root: int, cost: CostFunction, lower: dict[int, float],
                bound: float):
    """The classes reachable from the root through candidate nodes, and those nodes.

    A node is a candidate if its children are extractable (have a ``lower`` bound) and its own
    cost plus their greatest lower bound is at most ``bound``; a node that is its own child can
    never be chosen. Returns (class -> node indices, nodes)."""
    nodes: list[tuple[int, ENode]] = []
    classes: dict[int, list[int]] = {}
    stack, seen = [root], {root}
    while stack:
        cid = stack.pop()
        classes[cid] = []
        for node in eg.classes[cid].nodes:
            kids = node[2]
            if cid in kids or any(k not in lower for k in kids):
                continue
            if cost(eg, cid, node) + _max([lower[k] for k in kids]) > bound:
                continue
            classes[cid].append(len(nodes))
            nodes.append((cid, node))
            for k in kids:
                if k not in seen:
                    seen.add(k)
                    stack.append(k)
    return classes, nodes


def _reachable_choice(eg: EGraph, root: int, chosen: dict[int, ENode]) -> dict[int, ENode]:
    """The chosen node of each class the root's term uses."""
    choice: dict[int, ENode] = {}
    stack = [root]
    while stack:
        cid = stack.pop()
        if cid in choice:
            continue
        choice[cid] = chosen[cid]
        stack.extend(k for k in chosen[cid][2] if k not in choice)
    return choice


def build_term(eg: EGraph, root: int, choice: dict[int, ENode]) -> Term:
    """The term a choice spells from ``root``; a class used twice is one shared Term object."""
    built: dict[int, Term] = {}
    stack = [(root, False)]
    while stack:
        cid, ready = stack.pop()
        if cid in built:
            continue
        op, value, kids = choice[cid]
        if ready:
            built[cid] = Term(op, tuple(built[k] for k in kids), value)
            continue
        stack.append((cid, True))
        stack.extend((k, False) for k in kids if k not in built)
    return built[root]


def _unextractable(eg: EGraph, root: int) -> Unextractable:
    ops = sorted({node[0] for node in eg.classes[root].nodes})
    return Unextractable(f"no term of e-class {root} can be extracted: every way to build it "
                         f"(from {', '.join(ops)}) uses a node the cost function rules out "
                         "(infinite cost)")
