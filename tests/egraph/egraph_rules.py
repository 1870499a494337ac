"""The e-graph tests' own small rule set (the Glenside table is glc/rewrites/).

Access-pattern identities, sound by the operators' definitions (docs/language.md), enough to
exercise matching, computed right sides, conditions and cycles (a transpose pair and a commuted
product make cyclic e-classes). tests/egraph/test_rules.py evaluates both sides of each.
"""

from __future__ import annotations

from glc.egraph.rewrite import Match, Rewrite, rewrite
from glc.ir.term import Term, leaf
from glc.ir.types import Access


def _list(items) -> Term:
    return Term("list", tuple(leaf("int", i) for i in items))


def _var(name: str) -> Term:
    return leaf("var", name)


def _compose_transposes(m: Match) -> Term:
    # (T (T a p) q) reads dims[p[q[i]]]: one transpose by r = p∘q, none if r is the identity.
    p, q = m.types["p"].items, m.types["q"].items
    r = tuple(p[i] for i in q)
    if r == tuple(range(len(r))):
        return _var("a")
    return Term("access-transpose", (_var("a"), _list(r)))


def _commute_product(m: Match) -> Term:
    # dot(x × y) has dims s_x ++ s_y; dot(y × x) has s_y ++ s_x: transpose back.
    nx, ny = m.types["x"].n, m.types["y"].n
    perm = tuple(range(ny, ny + nx)) + tuple(range(ny))
    swapped = Term("compute", (leaf("compute-type", ("dot-product",)),
                               Term("access-cartesian-product", (_var("y"), _var("x")))))
    return Term("access-transpose", (swapped, _list(perm)))


def _slice_undoes_pad(m: Match) -> bool:
    a: Access = m.types["a"]
    k, lo, hi = m.types["k"], m.types["lo"], m.types["hi"]
    return m.types["j"] == k and lo == m.types["before"] and hi == lo + a.dims[k]


BASIC: tuple[Rewrite, ...] = (
    rewrite("access-of-access", "(access (access ?a ?i) ?j)", "(access ?a ?j)",
            source="language contract: access only re-splits s ++ i"),
    rewrite("transpose-of-transpose", "(access-transpose (access-transpose ?a ?p) ?q)",
            _compose_transposes, source="permutations compose",
            shows="(access-transpose ?a (list p[q[0]] …))"),
    rewrite("transpose-of-access", "(access-transpose (access ?a ?k) ?p)",
            "(access (access-transpose ?a ?p) ?k)",
            source="a transpose keeps the split, so it commutes with re-splitting"),
    rewrite("slice-undoes-pad",
            "(access-slice (access-pad ?a ?pad ?k ?before ?after) ?j ?lo ?hi)", "?a",
            condition=_slice_undoes_pad,
            source="Glenside: slicing exactly the unpadded range of a padded axis"),
    rewrite("commute-cartesian-product",
            "(compute dot-product (access-cartesian-product ?x ?y))", _commute_product,
            source="Glenside: dot products of a cartesian product commute up to a transpose",
            shows="(access-transpose (compute dot-product (access-cartesian-product ?y ?x)) …)"),
)
