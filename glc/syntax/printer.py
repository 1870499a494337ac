"""Prints terms and programs back to .gls text that parses to the same term.

Iterative throughout: extracted terms can be deeper than Python's recursion limit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection

from glc.ir.term import Term, leaf, walk

WIDTH = 100
DEEPEST_INDENT = 60  # past this, forms print on one line: indenting each of thousands of nested
                     # levels would make the text quadratic in the depth


def _leaf_text(term: Term) -> str:
    if term.op == "var":
        return f"?{term.value}"
    if term.op == "compute-type":
        name, *param = term.value
        return f"({name} {param[0]})" if param else name
    if term.op == "float":
        return repr(float(term.value))
    return str(term.value)


def _is_leaf(term: Term) -> bool:
    return not term.args and term.op not in ("shape", "list")


def print_term(term: Term) -> str:
    """A term as text: a form on one line when it fits, else one argument per indented line."""
    width: dict[int, int] = {}
    for node in walk(term):
        if _is_leaf(node):
            width[id(node)] = len(_leaf_text(node))
        else:
            width[id(node)] = 2 + len(node.op) + sum(1 + width[id(a)] for a in node.args)
    out: list[str] = []
    # (item, indent): indent None means inside a form printed on one line.
    stack: list[tuple[Term | str, int | None]] = [(term, 0)]
    while stack:
        item, indent = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif _is_leaf(item):
            out.append(_leaf_text(item))
        else:
            if indent is not None and (indent + width[id(item)] <= WIDTH
                                       or indent >= DEEPEST_INDENT):
                indent = None
            out.append(f"({item.op}")
            stack.append((")", None))
            for arg in reversed(item.args):
                stack.append((arg, None if indent is None else indent + 2))
                stack.append((" " if indent is None else "\n" + " " * (indent + 2), None))
    return "".join(out)


def print_dag(term: Term, taken: Collection[str] = ()) -> str:
    """A term as text in its DAG's size: a ``(define sharedK ...)`` line per access sub-term it
    uses more than once (``print_term`` writes a shared sub-term at each use, which a residual
    network's chain of sums doubles per block), then the result expression. The names avoid
    ``taken`` (the tensors the text reads)."""
    order = walk(term)
    uses = Counter(id(arg) for node in order for arg in node.args)
    names = (f"shared{k}" for k in range(1, len(order) + 1) if f"shared{k}" not in taken)
    lines = []
    replaced: dict[int, Term] = {}
    for node in order:
        new = node.with_args(tuple(replaced[id(a)] for a in node.args))
        if uses[id(node)] > 1 and node.args and node.op not in ("shape", "list", "literal"):
            name = next(names)
            lines.append(f"(define {name} {print_term(new)})")
            new = leaf("symbol", name)
        replaced[id(node)] = new
    lines.append(print_term(replaced[id(term)]))
    return "\n".join(lines)


def print_program(program) -> str:
    """A program: its input declarations, then the result expression."""
    lines = [f"(input {d.name} (shape {' '.join(map(str, d.dims))}) {d.dtype})"
             for d in program.inputs.values()]
    lines.append(print_term(program.body))
    return "\n".join(lines) + "\n"
