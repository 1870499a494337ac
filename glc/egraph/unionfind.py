"""Union-find over e-class ids (egg's ``UnionFind``): ids are dense integers from 0.

Path halving keeps ``find`` near-constant; ``union`` makes the first argument the root so the
e-graph decides which class survives (it keeps the class with more parents, as egg does).
"""

from __future__ import annotations


class UnionFind:
    """Disjoint sets of the integers ``0 .. len(self) - 1``."""

    __slots__ = ("parents",)

    def __init__(self) -> None:
        self.parents: list[int] = []

    def __len__(self) -> int:
        return len(self.parents)

    def make_set(self) -> int:
        """A new singleton set; returns its id."""
        fresh = len(self.parents)
        self.parents.append(fresh)
        return fresh

    def find(self, x: int) -> int:
        """The representative of ``x``'s set."""
        parents = self.parents
        while parents[x] != x:
            parents[x] = parents[parents[x]]
            x = parents[x]
        return x

    def union(self, root: int, other: int) -> int:
        """Merge two *representatives*; ``root`` stays the representative and is returned."""
        self.parents[other] = root
        return root
