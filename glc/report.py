"""``glc run --report``: a lowered program step by step, with each kernel's work and limits.

One row per step in program order: the buffer it writes (``kernel1``, ``fold2``, ``host3``), the
``define`` it computes when the program names one (and, for a program ``glc import`` wrote, the
ONNX node and op of the comment above that define), the unit (``array``, ``vector``, or a
``host`` step or ``copy`` in numpy), MACs, the cycle model's cycles for the kernel alone, its
compute ideal and roofline limit (glc/cost/limit.py) and both efficiencies. The totals are the
program's: measured cycles over the sums of the kernels' ideals and limits.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from glc.cost.limit import KernelLimit, efficiency, kernel_limit
from glc.egraph.rewrite import match_term
from glc.ir.term import Term, leaf, rebuild, walk
from glc.lower.fusion import COMMUTING
from glc.lower.program import HostStep, KernelStep, Program
from glc.syntax.reader import parse_term

# glc import's comment above a node's defines (glc/onnx/translate.py).
_ONNX_NODE = re.compile(r"^;\s*node (?P<name>.+) \((?P<op>[A-Za-z0-9_.]+)\)\s*$")
_DEFINE = re.compile(r"^\(define\s+(?P<name>[^\s()]+)")


@dataclass
class StepRow:
    """One step's figures (None where they do not apply: a host step is not timed)."""

    step: str
    node: str
    unit: str
    macs: int | None = None
    cycles: int | None = None
    ideal: int | None = None
    limit: int | None = None
    bytes: int | None = None
    efficiency: float | None = None
    roofline_efficiency: float | None = None


def kernel_limits(program: Program) -> dict[str, KernelLimit]:
    """Each kernel step's limits, by the buffer it writes."""
    return {s.name: kernel_limit(s.kernel, program.config) for s in program.kernels}


def limit_figures(limits: dict[str, KernelLimit], cycles: int | None) -> dict:
    """The program's totals: MACs, compulsory bytes, roofline limit (sums over its kernels) and
    the efficiency of ``cycles`` against that limit."""
    limit = sum(k.limit for k in limits.values())
    return {"macs": sum(k.macs for k in limits.values()),
            "compulsory_bytes": sum(k.bytes for k in limits.values()),
            "roofline_cycles": limit,
            "roofline_efficiency": efficiency(limit, cycles) if limits else None}


def step_rows(program: Program, limits: dict[str, KernelLimit]) -> list[StepRow]:
    """The rows of ``program``'s steps; kernels timed by the cycle model, alone."""
    rows = []
    for step in program.steps:
        if isinstance(step, HostStep):
            rows.append(StepRow(step.name, "", "copy" if step.copy else "host"))
            continue
        found = limits[step.name]
        cycles = step.kernel.predicted_cycles(program.config)
        vector = step.kernel.on_vector
        # A repack has no limit of its own (glc/cost/limit.py): no efficiency either.
        ratios = (efficiency(found.ideal, cycles), efficiency(found.limit, cycles)) \
            if found.limit else (None, None)
        rows.append(StepRow(step.name, "", "vector" if vector else "array",
                            found.macs or None, cycles, found.ideal, found.limit,
                            found.bytes, *ratios))
    return rows


@dataclass
class Names:
    """What a compile's steps and nodes are named after in the source, worked out from its
    e-graph once: ``steps``, each step's node (``--report``'s column: ``_step_nodes``), and
    ``nodes``, each node of the extracted term in ``walk`` order named as ``_define_namer``
    names it (``--check-each``'s messages). A cached compile (glc/cache.py) keeps these, not
    its e-graph."""

    steps: dict[str, str]
    nodes: list[str | None]

    def namer(self, term: Term) -> Callable[[Term], str | None]:
        """The name of a node of ``term`` (the extracted term these were made for)."""
        found = {id(node): name for node, name in zip(walk(term), self.nodes, strict=True)}
        return lambda node: found.get(id(node))


def names_of(compiled) -> Names:
    """``compiled``'s Names (glc/compiler.py's CompileResult, its e-graph and lowering): the
    e-class of each node of the source and the extracted term, looked up once for both."""
    source = compiled.program
    sourced = _Source(onnx_nodes(Path(source.path)), _owners(compiled.egraph, source),
                      _classes(compiled.egraph, compiled.term))
    named = _define_namer(compiled, sourced)
    return Names(_step_nodes(compiled.lowered, compiled, sourced) if compiled.lowered else {},
                 [named(node) for node in walk(compiled.term)])


@dataclass
class _Source:
    """What names a node after the source: glc import's comments by define, the define owning
    each e-class (``_owners``), the e-class of each node of the extracted term."""

    comments: dict[str, str]
    owners: dict[int, str]
    classes: dict[int, int | None]


def _step_nodes(program: Program, compiled, sourced: _Source) -> dict[str, str]:
    """Each step's node, by the buffer it writes: the define of the source program the step
    computes, or a part of (``result`` for the program's result expression outside every
    define); a step none names is left out. A step's term (its kernel's label, a host step's
    term) is matched against the extracted term, the buffers of earlier steps standing for the
    nodes those steps computed; the matched node's e-class is then looked up among the
    source's: a define's own, else the define whose expression (up to the other defines it
    uses) holds a node of that class. ``compiled`` is glc/compiler.py's CompileResult."""
    source = compiled.program
    comments, owners, classes = sourced.comments, sourced.owners, sourced.classes
    nodes = list(walk(compiled.term))[::-1]  # parents first: a step's own node before its parts
    inputs = set(source.inputs) | {t.value for t in nodes if t.op == "symbol"}
    views = {id(arg): t for t in nodes if t.op in COMMUTING for arg in t.args[:1]}
    bound: dict[str, Term] = {}
    found: dict[str, str] = {}
    served: dict[str, str] = {}  # a repack's buffer → the kernel reading it
    # The nodes whose values the lowering left in each buffer (any view of it): a buffer several
    # steps write (the bands of a concatenation, a kernel in parts) holds no one step's node,
    # but its readers' labels name the node the lowering placed there.
    holders: dict[str, set[int]] = {}
    for node, view in program.values.values():
        holders.setdefault(view.buffer, set()).add(id(node))

    def named(match: Term) -> str | None:
        # The product of an im2col is the matrix the source's dot product is a view of: climb
        # the views over it to the node the source has.
        node = match
        while classes.get(id(node)) not in owners and views.get(id(node)) is not None:
            node = views[id(node)]
        name = owners.get(classes.get(id(node)), "result" if node is compiled.term else None)
        if name is None:
            return None
        return f"{name} ({comments[name]})" if name in comments else name

    def repack(step) -> bool:  # a copy of a tensor, no node of the program: named after its reader
        return isinstance(step, KernelStep) and step.kernel.kind == "repack"

    for step in program.steps:
        if repack(step):
            continue
        served.update((name, step.name) for name in step.inputs)
        pattern = _pattern(step.term if isinstance(step, HostStep)
                           else parse_term(step.kernel.label), inputs)
        match = next((t for t in nodes if _unify(pattern, t, bound, holders)), None)
        if match is None:
            continue
        bound[step.output] = match
        found[step.name] = named(match) or ""
    # A step whose term is no node (a concatenation's band copying a part already in DRAM is
    # labelled with the whole concatenation, its placed parts as its own buffer: Inception's
    # third parts): named after the largest node the lowering left in the buffer it writes,
    # the concatenation rather than another part.
    held: dict[str, list[tuple[int, Term]]] = {}
    for node, view in program.values.values():
        held.setdefault(view.buffer, []).append((math.prod(view.dims), node))
    for step in program.steps:
        if not found.get(step.name) and isinstance(step, KernelStep) and not repack(step):
            ranked = sorted(held.get(step.output, ()), key=lambda pair: -pair[0])
            found[step.name] = next((n for n in (named(node) for _, node in ranked) if n), "")
    for step in program.steps:
        reader = found.get(served.get(step.output, ""))
        if repack(step) and reader:
            found[step.name] = f"{reader}: repack"
    return {name: node for name, node in found.items() if node}


def name_steps(rows: list[StepRow], nodes: dict[str, str]) -> None:
    """Fill each row's ``node`` from ``nodes`` (``Names.steps``: a compile's, or a compiled
    folder's manifest)."""
    for row in rows:
        row.node = nodes.get(row.step, "")


def _define_namer(compiled, sourced: _Source) -> Callable[[Term], str | None]:
    """A function naming a node of the extracted term after the source: the define that owns
    its e-class (``_owners``), with its ONNX node for a program ``glc import`` wrote, or
    ``result``; None where no define owns it. ``compiled`` is glc/compiler.py's
    CompileResult."""
    comments, owners, classes = sourced.comments, sourced.owners, sourced.classes

    def named(node: Term) -> str | None:
        name = owners.get(classes.get(id(node)),
                          "result" if node is compiled.term else None)
        if name is None:
            return None
        return f"{name}, ONNX node {comments[name]}" if name in comments else name

    return named


def _owners(egraph, source) -> dict[int, str]:
    """E-class → the define it belongs to: a define's own class first, then the classes of the
    nodes of its expression short of the other defines it uses (the first define wins)."""
    classes = _classes(egraph, source.body)
    for term in source.defines.values():  # a define the result does not use
        if id(term) not in classes:
            _classes(egraph, term, classes)
    defined = {id(term): name for name, term in source.defines.items()}
    owners = {classes[id(t)]: name for name, t in source.defines.items()
              if classes[id(t)] is not None}
    for name, term in source.defines.items():
        stack, seen = [term], set()
        while stack:
            node = stack.pop()
            if id(node) in seen or (node is not term and id(node) in defined):
                continue
            seen.add(id(node))
            if classes[id(node)] is not None:
                owners.setdefault(classes[id(node)], name)
            stack.extend(node.args)
    return owners


def _classes(egraph, term: Term, found: dict[int, int | None] | None = None
             ) -> dict[int, int | None]:
    """The e-class of every node of ``term`` (None where the e-graph does not hold it), added
    to ``found`` (the nodes already in it not looked up again)."""
    found = {} if found is None else found
    for node in walk(term, found):
        args = tuple(found[id(a)] for a in node.args)
        found[id(node)] = None if None in args else egraph.lookup((node.op, node.value, args))
    return found


def _unify(pattern: Term, term: Term, bound: dict[str, Term],
           holders: dict[str, set[int]]) -> bool:
    """Whether ``term`` is ``pattern`` (its buffers as pattern variables), each buffer standing
    for a node the lowering left in it, else for the node its earlier step computed."""
    found = match_term(pattern, term)
    return found is not None and all(
        id(t) in holders[name] if name in holders else bound.get(name, t) is t or bound[name] == t
        for name, t in found.items())


def _pattern(term: Term, inputs: set[str]) -> Term:
    """``term`` with each symbol that names no program input (a buffer) as a pattern variable."""
    return rebuild(term, lambda t: leaf("var", t.value)
                   if t.op == "symbol" and t.value not in inputs else None)


def onnx_nodes(path: Path) -> dict[str, str]:
    """For a program ``glc import`` wrote: each define's ONNX node and op (``name Op``), from the
    comment above it; empty for any other program (or one that cannot be read)."""
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    found, current = {}, None
    for line in lines:
        comment = _ONNX_NODE.match(line)
        if comment:
            current = f"{comment['name']} {comment['op']}"
            continue
        define = _DEFINE.match(line)
        if define and current is not None:
            found[define["name"]] = current
    return found


# The kinds of step, by the name glc/lower/names.py gives the buffer each writes: explained
# under the table so a reader of the report need not know the lowering (issue 41, item 15).
KINDS = {
    "kernel": ("kernelN", "a matrix product on the array; bias, relu, requantization in its "
                          "STOREs"),
    "fold": ("foldN", "a fold on the vector unit: a pool, a reduction, an elementwise add"),
    "repack": ("repackN", "a copy of a product's operand in the layout the array reads best"),
    "concat": ("concatN.M", "part M of concatenation N, copied into its band of the result"),
    "host": ("hostN", "an operator the accelerator lacks, run by numpy between images"),
    "copy": ("copyN", "a view the DMA cannot walk, materialised by numpy"),
}


def legend(rows: list[StepRow]) -> list[str]:
    """What each kind of step among ``rows`` is: one line per kind, in KINDS's order."""
    present = {re.sub(r"\d+(\.\d+)?$", "", r.step) for r in rows}
    kinds = [KINDS[k] for k in KINDS if k in present]
    width = max((len(name) for name, _ in kinds), default=0)
    return [f"  {name.ljust(width)}  {what}" for name, what in kinds]


COLUMNS = ("step", "node", "unit", "MACs", "cycles", "ideal", "limit", "eff(ideal)",
           "eff(limit)")


def table(rows: list[StepRow], figures: dict) -> str:
    """The per-step table, a totals line with the program's measured cycles, the legend of the
    step kinds, and the memory plan's peak."""
    cells = [COLUMNS]
    for r in rows:
        cells.append((r.step, r.node or "-", r.unit, _num(r.macs), _num(r.cycles),
                      _num(r.ideal), _num(r.limit), _num(r.efficiency),
                      _num(r.roofline_efficiency)))
    cells.append(("total", "-", "-", _num(figures["macs"]),
                  _num(figures["cycles"]), _num(figures["ideal_cycles"]),
                  _num(figures["roofline_cycles"]), _num(figures["efficiency"]),
                  _num(figures["roofline_efficiency"])))
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w)
                       for i, (c, w) in enumerate(zip(line, widths, strict=True))).rstrip()
             for line in cells]
    kinds = legend(rows)
    return "\n".join([*lines,
                      *(["steps (host and copy steps are not timed):", *kinds] if kinds else []),
                      *memory_line(figures)])


def memory_line(figures: dict) -> list[str]:
    """The memory plan's peak against the config's DRAM (when the figures carry it)."""
    if "dram_peak_bytes" not in figures:
        return []
    peak, dram, data = (f"{figures[k]:,}".replace(",", " ")
                        for k in ("dram_peak_bytes", "dram_bytes", "dram_data_bytes"))
    share = 100 * figures["dram_peak_bytes"] / figures["dram_bytes"]
    return [f"memory: DRAM peak {peak} of {dram} bytes ({share:.0f} %; the tensors reach "
            f"{data}, each image sits above the tensors live while it runs)"]


def rows_json(rows: list[StepRow]) -> list[dict]:
    """The rows as JSON-ready objects."""
    return [asdict(r) for r in rows]


def _num(value: int | float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)
