"""The e-graph as Graphviz dot (``glc compile --emit egraph``): one cluster per e-class.

Each cluster is labelled with its class id and type; each e-node is a box labelled with its
operator (and value, for leaves); an edge goes from an e-node to the cluster of each child class.
The nodes of an extraction's choice are filled, so the extracted term can be read off the picture.
"""

from __future__ import annotations

from glc.egraph.egraph import EGraph, ENode


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(node: ENode) -> str:
    op, value, _ = node
    if value is None:
        return op
    if op == "compute-type":
        return " ".join(map(str, value))
    return str(value) if op in ("int", "float", "symbol", "pad-type") else f"{op} {value}"


def to_dot(eg: EGraph, chosen: dict[int, ENode] | None = None) -> str:
    """Dot source for a rebuilt e-graph; ``chosen`` (class → node) marks an extraction."""
    chosen = chosen or {}
    lines = ["digraph egraph {", "  compound=true;", "  node [shape=box, fontsize=10];"]
    first: dict[int, str] = {}
    edges: list[str] = []
    for cid in sorted(eg.classes):
        cls = eg.classes[cid]
        lines.append(f"  subgraph cluster_{cid} {{")
        lines.append(f"    label={_quote(f'{cid}: {cls.data.type}')}; style=dashed;")
        for j, node in enumerate(cls.nodes):
            name = f"n{cid}_{j}"
            first.setdefault(cid, name)
            style = ", style=filled, fillcolor=lightblue" if chosen.get(cid) == node else ""
            lines.append(f"    {name} [label={_quote(_label(node))}{style}];")
            for k in node[2]:
                edges.append((name, k))
        lines.append("  }")
    for name, k in edges:
        lines.append(f"  {name} -> {first[k]} [lhead=cluster_{k}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
