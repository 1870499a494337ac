"""Independent models the e-graph tests compare against: invariants read off the data
structures, congruence closure computed naively over terms, and extraction by brute force."""

from __future__ import annotations

import itertools
import math
import random

from glc.egraph.analysis import is_zero, make
from glc.egraph.egraph import EGraph
from glc.ir.term import Term, leaf, walk
from glc.ir.types import Access


def assert_invariants(eg: EGraph) -> None:
    """After rebuild: the hash-cons is canonical and maps every node to its class, each node is
    in one class, congruent nodes share a class, and each class's data is its nodes' data."""
    find = eg.find
    seen = {}
    for cid, cls in eg.classes.items():
        assert find(cid) == cid
        for node in cls.nodes:
            assert node == eg.canonical(node), "a class holds a non-canonical node"
            assert node not in seen, f"{node} is in classes {seen[node]} and {cid}"
            seen[node] = cid
    assert set(eg.memo) == set(seen), "the hash-cons and the classes disagree"
    for node, cid in eg.memo.items():
        assert find(cid) == seen[node]
    for op, ids in eg.by_op.items():
        assert ids == {c for c, cls in eg.classes.items() if any(n[0] == op for n in cls.nodes)}
    for cls in eg.classes.values():
        for node in cls.nodes:
            fresh = make(node[0], node[1], [eg.data(k) for k in node[2]], eg.env)
            assert fresh.type == cls.data.type
            assert all(is_zero(cls.data, box) for box in fresh.zeros)


def subterms(terms: list[Term]) -> list[Term]:
    """Every distinct sub-term (structurally), children first."""
    out: dict[Term, None] = {}
    for term in terms:
        for node in walk(term):
            out.setdefault(node)
    return list(out)


def congruence_classes(terms: list[Term], unions: list[tuple[Term, Term]]) -> dict[Term, int]:
    """The congruence closure of ``unions`` over the sub-terms of ``terms``, computed naively:
    merge, then merge any two terms with one operator and equal children, until nothing
    changes. Returns each sub-term's class number."""
    nodes = subterms(terms)
    parent = {t: t for t in nodes}

    def find(t):
        while parent[t] is not t:
            t = parent[t]
        return t

    for a, b in unions:
        parent[find(a)] = find(b)
    changed = True
    while changed:
        changed = False
        signature: dict[tuple, Term] = {}
        for t in nodes:
            key = (t.op, t.value, tuple(id(find(a)) for a in t.args))
            other = signature.setdefault(key, t)
            if find(other) is not find(t):
                parent[find(t)] = find(other)
                changed = True
    reps: dict[int, int] = {}
    return {t: reps.setdefault(id(find(t)), len(reps)) for t in nodes}


def same_partition(a: dict, b: dict) -> bool:
    """Whether two labellings of the same keys group them identically."""
    forward, backward = {}, {}
    return all(forward.setdefault(a[k], b[k]) == b[k] and backward.setdefault(b[k], a[k]) == a[k]
               for k in a)


def brute_force_dag_cost(eg: EGraph, root: int, cost) -> float:
    """The least DAG cost over every acyclic choice of one node per class (tiny e-graphs only)."""
    cids = sorted(eg.classes)
    options = [[n for n in eg.classes[c].nodes if not math.isinf(cost(eg, c, n))] for c in cids]
    best = math.inf
    for pick in itertools.product(*[opts or [None] for opts in options]):
        choice = dict(zip(cids, pick, strict=True))
        used, stack, ok = set(), [eg.find(root)], True
        while stack and ok:
            cid = stack.pop()
            if cid in used:
                continue
            if choice[cid] is None:
                ok = False
                break
            used.add(cid)
            stack.extend(choice[cid][2])
        if not ok or _cyclic(choice, used):
            continue
        best = min(best, sum(cost(eg, c, choice[c]) for c in used))
    return best


def _cyclic(choice, used) -> bool:
    state = {}

    def visit(c) -> bool:
        state[c] = 1
        for k in choice[c][2]:
            if state.get(k) == 1 or (k not in state and visit(k)):
                return True
        state[c] = 2
        return False

    return any(c not in state and visit(c) for c in used)


def random_access_term(rng: random.Random, env: dict[str, Access], depth: int) -> Term:
    """A random well-typed term of access operators over ``env``'s tensors (the shape rules are
    followed while building, so no term is rejected)."""
    term, _ = _build(rng, env, depth)
    return term


def _int(v: int) -> Term:
    return leaf("int", v)


def _build(rng: random.Random, env: dict[str, Access], depth: int) -> tuple[Term, Access]:
    if depth == 0 or rng.random() < 0.2:
        name = rng.choice(sorted(env))
        a = env[name]
        return Term("access-tensor", (leaf("symbol", name),)), Access(a.dims, (), a.dtype)
    inner, a = _build(rng, env, depth - 1)
    # Zero padding is what the analysis tracks: make it common low in the term.
    choice = 2 if depth <= 2 and rng.random() < 0.5 else rng.randrange(12)
    if choice == 0:
        k = rng.randrange(a.ndim + 1)
        return Term("access", (inner, _int(k))), Access(a.dims[:k], a.dims[k:], a.dtype)
    if choice == 1 and a.ndim:
        perm = list(range(a.ndim))
        rng.shuffle(perm)
        dims = tuple(a.dims[p] for p in perm)
        return (Term("access-transpose", (inner, Term("list", tuple(map(_int, perm))))),
                Access(dims[:a.n], dims[a.n:], a.dtype))
    if choice == 2 and a.ndim:
        k, before, after = rng.randrange(a.ndim), rng.randrange(3), rng.randrange(3)
        dims = list(a.dims)
        dims[k] += before + after
        pad = leaf("pad-type", rng.choice(["zero-padding", "zero-padding", "min-padding"]))
        return (Term("access-pad", (inner, pad, _int(k), _int(before), _int(after))),
                Access(tuple(dims[:a.n]), tuple(dims[a.n:]), a.dtype))
    if choice == 3 and a.ndim:
        k = rng.randrange(a.ndim)
        lo = rng.randrange(a.dims[k])
        hi = rng.randrange(lo + 1, a.dims[k] + 1)
        dims = list(a.dims)
        dims[k] = hi - lo
        return (Term("access-slice", (inner, _int(k), _int(lo), _int(hi))),
                Access(tuple(dims[:a.n]), tuple(dims[a.n:]), a.dtype))
    if choice == 4:
        return (Term("compute", (leaf("compute-type", ("relu",)), inner)), a)
    if choice == 5 and a.item:
        other, b = _build(rng, env, depth - 1)
        if b.item != a.item or b.dtype != a.dtype:
            other, b = Term("compute", (leaf("compute-type", ("negative",)), inner)), a
        return (Term("access-cartesian-product", (inner, other)),
                Access(a.shape + b.shape, (2,) + a.item, a.dtype))
    if choice == 6 and a.item:
        filters = tuple(rng.randrange(1, d + 1) for d in a.item)
        strides = tuple(rng.randrange(1, 3) for _ in a.item)
        windows = tuple((d - f) // st + 1 for d, f, st in zip(a.item, filters, strides,
                                                                strict=True))
        return (Term("access-windows", (inner, _shape(filters), _shape(strides))),
                Access(a.shape + windows, filters, a.dtype))
    if choice == 7 and a.item:
        kind = rng.choice(["dot-product", "reduce-sum", "reduce-max", "elementwise-mul",
                           "elementwise-add"])
        wide = "int32" if kind != "reduce-max" else a.dtype
        out = (Access(a.shape, (), wide) if kind in ("dot-product", "reduce-sum", "reduce-max")
               else Access(a.shape, a.item[1:], wide))
        return Term("compute", (leaf("compute-type", (kind,)), inner)), out
    if choice == 8:
        k = rng.randrange(a.ndim + 1)
        dims = a.dims[:k] + (1,) + a.dims[k:]
        n = a.n + 1 if k <= a.n else a.n
        return Term("access-insert-axis", (inner, _int(k))), Access(dims[:n], dims[n:], a.dtype)
    if choice == 9 and 1 in a.dims:
        k = a.dims.index(1)
        dims = a.dims[:k] + a.dims[k + 1:]
        n = a.n - 1 if k < a.n else a.n
        return Term("access-squeeze", (inner, _int(k))), Access(dims[:n], dims[n:], a.dtype)
    if choice == 10 and a.ndim:
        k = rng.randrange(a.ndim)
        other = Term("compute", (leaf("compute-type", ("negative",)), inner))
        dims = list(a.dims)
        dims[k] *= 2
        return (Term("access-concatenate", (inner, other, _int(k))),
                Access(tuple(dims[:a.n]), tuple(dims[a.n:]), a.dtype))
    if choice == 11:
        other = Term("compute", (leaf("compute-type", ("relu",)), inner))
        return Term("access-pair", (inner, other)), Access(a.shape, (2,) + a.item, a.dtype)
    return inner, a


def _shape(dims) -> Term:
    return Term("shape", tuple(map(_int, dims)))


def rewritable_term(rng: random.Random, env: dict[str, Access]) -> Term:
    """A random term rich in what the test rules rewrite: chains of transposes, re-splits and
    pad-then-slice over 2-d tensors, often under Glenside's matmul idiom."""

    def chain(name: str) -> tuple[Term, tuple[int, ...]]:
        term = Term("access-tensor", (leaf("symbol", name),))
        dims, n = env[name].dims, len(env[name].dims)
        for _ in range(rng.randrange(5)):
            step = rng.randrange(3)
            if step == 0:
                term = Term("access-transpose", (term, Term("list", (_int(1), _int(0)))))
                dims = dims[::-1]
            elif step == 1:
                n = rng.randrange(3)
                term = Term("access", (term, _int(n)))
            else:
                k, before = rng.randrange(2), rng.randrange(3)
                pad = leaf("pad-type", rng.choice(["zero-padding", "min-padding"]))
                padded = Term("access-pad", (term, pad, _int(k), _int(before), _int(1)))
                term = Term("access-slice", (padded, _int(k), _int(before),
                                             _int(before + dims[k])))
        return Term("access", (term, _int(2))), dims

    names = sorted(env)
    left, ldims = chain(rng.choice(names))
    if rng.random() < 0.3:
        return left
    right, rdims = chain(rng.choice(names))
    if rdims[1] != ldims[1]:
        right = Term("access-transpose", (right, Term("list", (_int(1), _int(0)))))
    pair = Term("access-cartesian-product", (Term("access", (left, _int(1))),
                                             Term("access", (right, _int(1)))))
    return Term("compute", (leaf("compute-type", ("dot-product",)), pair))
