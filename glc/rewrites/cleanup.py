"""Clean-ups: collapse what the other rows leave nested, and remove what does nothing."""

from __future__ import annotations

from glc.egraph.rewrite import Match, Rewrite, rewrite
from glc.rewrites.build import acc, ints, num, pattern, perm, target


def _compose_transposes(match: Match):
    p, q = perm(match, "p"), perm(match, "q")
    # transpose(transpose(x, p), q) reads x's dim p[q[j]] at position j.
    return pattern(f"(access-transpose ?a (list {ints(p[j] for j in q)}))")


def _identity(match: Match) -> bool:
    p = perm(match, "p")
    return p == tuple(range(len(p)))


def _compose_slices(match: Match):
    lo1, lo2, hi2 = num(match, "lo1"), num(match, "lo2"), num(match, "hi2")
    return pattern(f"(access-slice ?a ?k {lo1 + lo2} {lo1 + hi2})")


def _whole_slice(match: Match) -> bool:
    a = acc(match, "a")
    k = num(match, "k")
    return a is not None and num(match, "lo") == 0 and num(match, "hi") == a.dims[k]


def _same_split(match: Match) -> bool:
    a = acc(match, "a")
    return a is not None and num(match, "k") == a.n


def _same_shape(match: Match) -> bool:
    a, s = acc(match, "a"), target(match, "s")
    return a is not None and (a.shape, a.item) == (s.shape, s.item)


def rules(size: int) -> list[Rewrite]:
    """The clean-up rows (independent of the array size)."""
    return [
        rewrite("collapse-nested-accesses", "(access (access ?a ?i) ?j)", "(access ?a ?j)",
                source="Glenside collapse-nested-accesses"),
        rewrite("collapse-nested-transposes",
                "(access-transpose (access-transpose ?a ?p) ?q)", _compose_transposes,
                source="Glenside collapse-nested-transposes",
                shows="(access-transpose ?a (list p[q[0]] p[q[1]] …))"),
        rewrite("remove-trivial-transpose", "(access-transpose ?a ?p)", "?a",
                condition=_identity, source="Glenside remove-trivial-transpose"),
        rewrite("collapse-nested-access-slices",
                "(access-slice (access-slice ?a ?k ?lo1 ?hi1) ?k ?lo2 ?hi2)", _compose_slices,
                source="Glenside collapse-nested-access-slices",
                shows="(access-slice ?a ?k lo1+lo2 lo1+hi2)"),
        rewrite("remove-whole-slice", "(access-slice ?a ?k ?lo ?hi)", "?a",
                condition=_whole_slice, source="glc (a slice of the whole axis is the access)"),
        rewrite("remove-trivial-access", "(access ?a ?k)", "?a", condition=_same_split,
                source="glc (re-splitting at the same axis is the access)"),
        rewrite("collapse-nested-reshapes", "(access-reshape (access-reshape ?a ?s1) ?s2)",
                "(access-reshape ?a ?s2)", source="glc (row-major reshapes compose)"),
        rewrite("remove-trivial-reshape", "(access-reshape ?a ?s)", "?a", condition=_same_shape,
                source="glc (a reshape to the access's own shape is the access)"),
    ]
