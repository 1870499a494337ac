"""Terms: the tree form of a Glenside program.

A term is an operator name, its argument terms and, for leaves, a payload: ``int`` and ``float``
literals, ``symbol`` (a tensor name), ``compute-type`` (``("relu",)`` or ``("requantize", 8)``),
``pad-type`` (``"zero-padding"``) and, in rewrite patterns, ``var`` (a ``?name``). Every
non-access parameter is a child term, as in Glenside's e-graph language, so the e-graph can treat
all nodes alike. Equality and hashing ignore source spans; the hash is cached because terms are
compared often and can be deep.
"""

from __future__ import annotations

from collections.abc import Callable, Container

from glc.errors import Span

LEAF_OPS = frozenset({"int", "float", "symbol", "compute-type", "pad-type", "var"})


class Term:
    """An immutable IR node: ``op``, ``args`` (terms) and a leaf ``value``; ``span`` is metadata."""

    __slots__ = ("op", "args", "value", "span", "_hash")

    def __init__(self, op: str, args: tuple[Term, ...] = (), value: object = None,
                 span: Span | None = None):
        self.op = op
        self.args = args
        self.value = value
        self.span = span
        self._hash = hash((op, value, args))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        # Iterative (comparing args tuples would recurse once per level), and each pair of
        # shared sub-terms is compared once, so equal DAGs cost their size, not their tree size.
        if self is other:
            return True
        if not isinstance(other, Term):
            return False
        stack, seen = [(self, other)], set()
        while stack:
            a, b = stack.pop()
            if a is b or (id(a), id(b)) in seen:
                continue
            if (a._hash != b._hash or a.op != b.op or a.value != b.value
                    or len(a.args) != len(b.args)):
                return False
            seen.add((id(a), id(b)))
            stack.extend(zip(a.args, b.args, strict=True))
        return True

    def __repr__(self) -> str:
        from glc.syntax.printer import print_term

        return f"Term({print_term(self)})"

    def with_args(self, args: tuple[Term, ...]) -> Term:
        """The same node over other arguments (span kept)."""
        return Term(self.op, args, self.value, self.span)


def leaf(op: str, value: object, span: Span | None = None) -> Term:
    """A leaf term (literal, symbol, compute or pad type, pattern variable)."""
    return Term(op, (), value, span)


def rebuild(term: Term, replace: Callable[[Term], Term | None]) -> Term:
    """``term`` with every node for which ``replace`` gives a term swapped for it (its arguments
    then not visited), the others rebuilt over their new arguments. ``replace`` sees the nodes
    in depth-first, left-to-right order, each shared node once; iterative, as ``walk``."""
    done: dict[int, Term] = {}
    stack = [(term, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        if expanded:
            done[id(node)] = node.with_args(tuple(done[id(a)] for a in node.args))
            continue
        new = replace(node)
        if new is not None:
            done[id(node)] = new
            continue
        stack.append((node, True))
        stack.extend((arg, False) for arg in reversed(node.args))
    return done[id(term)]


def dag_size(term: Term) -> int:
    """The number of distinct nodes of ``term``: the work of every walk over it."""
    return len(walk(term))


def share(term: Term) -> Term:
    """``term`` hash-consed: structurally equal sub-terms become one object (the first met, so
    its span), so every walk over the result visits each distinct sub-term once. Linear in the
    DAG's size: a node is keyed by its op, value and its arguments' canonical objects."""
    canon: dict[tuple, Term] = {}
    done: dict[int, Term] = {}
    for node in walk(term):
        args = tuple(done[id(a)] for a in node.args)
        # floats by their bits: 0.0 == -0.0, yet they are different literals
        value = node.value.hex() if isinstance(node.value, float) else node.value
        key = (node.op, type(node.value), value, tuple(id(a) for a in args))
        found = canon.get(key)
        if found is None:
            found = node if all(a is b for a, b in zip(args, node.args, strict=True)) \
                else node.with_args(args)
            canon[key] = found
        done[id(node)] = found
    return done[id(term)]


def walk(term: Term, known: Container[int] = frozenset()):
    """Every distinct node reachable from ``term`` (shared sub-terms once), children first;
    the nodes whose ids are ``known`` (and what lies below them) left out."""
    seen: set[int] = set()
    order: list[Term] = []
    stack = [(term, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in seen or id(node) in known:
            continue
        if expanded:
            seen.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend((arg, False) for arg in reversed(node.args)
                     if id(arg) not in seen and id(arg) not in known)
    return order
