"""The compile pipeline: one function that runs the stages in order.

  1. check     — shape-check the program: a user's type error stops here, located.
  2. saturate  — put the program in an e-graph and run the rewrite table to a stop reason.
  3. extract   — pick the cheapest equivalent term by the cost function (exact by default):
                 with a hardware config, the cycles predicted on it (glc/cost/extraction.py).
  4. lower     — with a hardware config: the term as kernels, host steps and a memory plan
                 (glc/lower/), whose predicted cycles are the cost a later extraction can use.

A search with more rules than the default set is time-limited and may stop before it finds what
the default rules find: then it is compiled with the default rules as well and the better
program kept (fewer host steps, then fewer predicted cycles), so adding rules never makes a
program slower. ``CompileResult.fallback`` says when the default rules' program was kept.

``write_artifacts`` writes what ``--emit`` asks for: ``extracted.gls``, a program ``glc interp``
runs with the original inputs, and ``egraph.dot``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from glc.cache import Cache, key, schedules
from glc.cost.extraction import CycleCost
from glc.cost.ideal import program_ideal
from glc.egraph.dot import to_dot
from glc.egraph.egraph import EGraph
from glc.egraph.extract import CostFunction, Extraction, exact, greedy
from glc.egraph.rewrite import Rewrite
from glc.egraph.runner import Limits, Report, Runner
from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.inputs import Bundle
from glc.ir.check import result_type
from glc.ir.term import Term, dag_size, walk
from glc.ir.types import Access
from glc.lower.lowering import lower
from glc.lower.program import Program as Lowered
from glc.report import Names, names_of
from glc.rewrites import DEFAULT as DEFAULT_RULES
from glc.rewrites import select
from glc.rewrites.cost import tensorised
from glc.syntax.printer import print_dag
from glc.syntax.reader import Program

EXTRACTORS = {"exact": exact, "greedy": greedy}
# Every stage walks the program's distinct nodes (terms are hash-consed DAGs, printed with a
# define per shared sub-term): past this many, compile refuses the program rather than run for
# minutes (docs/frontend.md, "Limits").
MAX_NODES = 1_000_000
EMITS = ("extracted", "egraph")
COSTS = ("cycles", "nodes")


def cost_function(name: str, config: HwConfig | None,
                  disabled: frozenset[str] = frozenset()) -> CostFunction:
    """The extraction cost ``name``: ``cycles``, the predicted cycles on ``config`` (the
    default when there is one) lowered without the ``disabled`` optimizations, or ``nodes``,
    one per node with an un-tensorised product prohibitive (glc/rewrites/cost.py)."""
    if name not in COSTS:
        raise GlcError(f"unknown cost '{name}', expected one of {', '.join(COSTS)}")
    if name == "nodes":
        return tensorised
    if config is None:
        raise GlcError("the cycles cost needs a hardware configuration")
    return CycleCost(config, disabled)


# What the extraction's cost is, said beside it (-v): kernels are costed by their predicted
# cycles but folds, host steps and copies by the host estimates of glc/cost/extraction.py (a max
# pool: cost 5 208 for 113 predicted cycles), so it ranks candidates and is no cycle count.
EXTRACTION_COST = ("the sum --cost minimises, host work at its estimate: not cycles; "
                   "lower: gives the predicted cycles")


@dataclass
class CompileResult:
    """What each stage produced, and the figures ``--json`` prints. A compile read back from
    the cache (``cached``) holds no e-graph (``egraph`` and ``root`` None) and no extraction
    choice; its ``names`` were worked out before it was stored."""

    program: Program
    env: Mapping[str, Access]
    egraph: EGraph | None
    root: int | None
    report: Report
    extraction: Extraction
    lowered: Lowered | None = None
    _names: Names | None = None
    cached: bool = False
    fallback: str = ""  # why the default rules' program was kept instead of this search's
    searched: Report | None = None  # with a fallback: the search's own saturation report

    @property
    def names(self) -> Names:
        """What the steps and nodes are named after in the source (glc/report.py)."""
        if self._names is None:
            self._names = names_of(self)
        return self._names

    @property
    def term(self) -> Term:
        return self.extraction.term

    def stage_lines(self, iterations: bool = True) -> list[str]:
        """What ``-v`` prints: the runner's report (one line per iteration when ``iterations``,
        then why it stopped), then one line each for extraction and lowering."""
        saturate = self.report.lines()
        x = self.extraction
        lines = (saturate if iterations else ["saturate: " + saturate[-1]]) + [
            f"extract: {x.method}, extraction cost {x.dag_cost:g}"
            f"{' (optimal)' if x.optimal else ''}, {x.seconds:.3f} s ({EXTRACTION_COST})"]
        if self.lowered is not None:
            lines.append("lower: " + ", ".join(f"{k} {v}" for k, v in self.lowered.figures().items()
                                               if k != "host" or v))
        if self.fallback:
            lines.append("kept: " + self.fallback)
        return lines

    def figures(self) -> dict:
        """enodes, eclasses, iterations, stop_reason, seconds (saturation) and extracted, with
        the extraction's own figures."""
        x = self.extraction
        lowered = self.lowered.figures() if self.lowered is not None else {}
        return {**self.report.to_json(), "extracted": print_dag(self.term),
                "extractor": x.method, "extraction_cost": x.dag_cost, "optimal": x.optimal,
                "extract_seconds": round(x.seconds, 6), **lowered,
                **({"fallback": self.fallback, "search": self.searched.to_json()}
                   if self.fallback else {})}


def compile_program(source: Bundle | Program, env: Mapping[str, Access] | None = None,
                    rules: Sequence[Rewrite] = (), limits: Limits | None = None,
                    cost: CostFunction | None = None, extractor: str = "exact",
                    extract_time_limit: float = 30.0,
                    config: HwConfig | None = None,
                    progress: Callable[[str], None] | None = None,
                    max_nodes: int = MAX_NODES,
                    disabled: frozenset[str] = frozenset(),
                    cache: Cache | None = None) -> CompileResult:
    """Compile a program (or a loaded bundle, whose input types are the default ``env``);
    with ``config``, lower the extracted term for that accelerator too. The default ``cost`` is
    the cycles predicted on ``config``, or the node count without one. ``progress`` is told
    each stage as it starts (the CLI's status line). A program or extracted term of more than
    ``max_nodes`` distinct nodes is refused. ``disabled``: the lowering's optimizations
    (glc/lower/optimizations.py) it does without, in the extraction's costing too. With more
    rules than the default set (and a config), the default rules' program is kept if it is
    better (the module's docstring). ``cache`` (glc/cache.py): the compile is read from it
    when an equal one (same program text, input types, config, rules, options and glc) was
    stored, else done with its schedule entries and stored."""
    say = progress or (lambda stage: None)
    program = source.program if isinstance(source, Bundle) else source
    if env is None:
        if not isinstance(source, Bundle):
            raise ValueError("give the input types (env) with a bare Program")
        env = source.env
    result_type(program.body, env)
    if cost is None:  # before the key: the default and the same cost given are one compile
        cost = cost_function("cycles" if config is not None else "nodes", config, disabled)
    name = _compile_key(program, env, rules, limits or Limits(), cost, extractor,
                        extract_time_limit, config, max_nodes, disabled) \
        if cache is not None else None
    if name is not None:
        stored = cache.get("compile", name)
        if isinstance(stored, _Stored):
            say("compile: read from the cache")  # -v: glc run's compile line says "cache hit"
            return CompileResult(program, env, None, None, stored.report, stored.extraction,
                                 stored.lowered, stored.names, cached=True,
                                 fallback=stored.fallback, searched=stored.searched)
    with schedules(cache):
        result = _compile(program, env, rules, limits, cost, extractor, extract_time_limit,
                          config, say, max_nodes, disabled)
        default = select(DEFAULT_RULES, config.array_size) if config is not None else []
        if result.lowered is not None and {r.name for r in rules} > {r.name for r in default}:
            say("compile: the default rules, for comparison")
            baseline = _compile(program, env, default, limits, cost, extractor,
                                extract_time_limit, config, say, max_nodes, disabled)
            if _speed(baseline) < _speed(result):
                baseline.fallback = _kept(baseline, result, len(rules))
                baseline.searched = result.report
                result = baseline
    if name is not None:
        x = result.extraction
        stored = _Stored(result.report, replace(x, choice={}), result.lowered, result.names,
                         result.fallback, result.searched)
        cache.put("compile", name, stored)
    return result


def _speed(result: CompileResult) -> tuple[int, int]:
    """What makes a lowered program better: fewer host steps, then fewer predicted cycles."""
    figures = result.lowered.figures()
    return figures["host_steps"], figures["predicted_cycles"]


def _kept(baseline: CompileResult, search: CompileResult, rules: int) -> str:
    """Why the default rules' program is kept (``-v``'s ``kept:`` line)."""
    ours, theirs = baseline.lowered.figures(), search.lowered.figures()
    return (f"the default rules' program ({ours['host_steps']} host steps, "
            f"{ours['predicted_cycles']} predicted cycles): the {rules}-rule search "
            f"({search.report.enodes} e-nodes, stopped: {search.report.stop_reason}) found "
            f"{theirs['host_steps']} host steps, {theirs['predicted_cycles']} predicted cycles")


@dataclass
class _Stored:
    """A compile as the cache holds it: what ``glc run`` and ``glc compile -o`` read of it,
    without the e-graph (its size, and all it answers afterwards is in ``names``)."""

    report: Report
    extraction: Extraction
    lowered: Lowered | None
    names: Names
    fallback: str = ""
    searched: Report | None = None


def _compile_key(program: Program, env: Mapping[str, Access], rules: Sequence[Rewrite],
                 limits: Limits, cost: CostFunction, extractor: str,
                 extract_time_limit: float, config: HwConfig | None, max_nodes: int,
                 disabled: frozenset[str]) -> str | None:
    """The compile cache's key: the program's text (its defines' names and glc import's
    comments name the report's steps), the input types, every option, the whole config and
    glc's source (glc/cache.py, ``key``); None for a cost function glc cannot name (a
    caller's own), which is not cached."""
    if cost is tensorised:
        costed = "nodes"
    elif isinstance(cost, CycleCost):
        costed = ("cycles", cost.config, sorted(cost.disabled))
    else:
        return None
    try:
        text = Path(program.path).read_text()
    except (OSError, UnicodeDecodeError):
        # a program parsed from a string: its term and the names of its defines
        text = print_dag(program.body) + repr(sorted(program.defines))
    return key("compile", text, sorted(env.items(), key=lambda item: item[0]),
               [rule.name for rule in rules], limits, costed, extractor, extract_time_limit,
               config, max_nodes, sorted(disabled))


def _compile(program: Program, env: Mapping[str, Access], rules: Sequence[Rewrite],
             limits: Limits | None, cost: CostFunction, extractor: str,
             extract_time_limit: float, config: HwConfig | None, say: Callable[[str], None],
             max_nodes: int, disabled: frozenset[str]) -> CompileResult:
    """The stages, in order (``compile_program`` without the cache)."""
    _fits(program.body, program.body, max_nodes)
    say("compile: saturating")
    egraph = EGraph(env)
    root = egraph.add_term(program.body)
    report = Runner(rules, limits or Limits()).run(egraph)
    say(f"compile: extracting from {egraph.enodes} e-nodes")
    if isinstance(cost, CycleCost):  # the time limit binds while costing candidates too
        cost.stop_at(time.perf_counter() + extract_time_limit)
    if extractor == "exact":
        extraction = exact(egraph, root, cost, extract_time_limit)
    else:
        extraction = EXTRACTORS[extractor](egraph, root, cost)
    if isinstance(cost, CycleCost) and cost.estimated:
        extraction.optimal = False
        extraction.method += (f" ({cost.estimated} systolic nodes past the time limit "
                              "costed as refused)")
    say("compile: lowering")
    _fits(extraction.term, program.body, max_nodes)
    try:
        lowered = lower(extraction.term, env, config, disabled=disabled) \
            if config is not None else None
    except GlcError as error:  # located: at the program, as the e-graph keeps no spans
        if error.where is None:
            error.where = program.body.span or program.path
        raise
    if lowered is not None:  # the source's ideal, not the rewritten term's (glc/cost/ideal.py)
        lowered.ideal = program_ideal(program.body, env, lowered)
    return CompileResult(program, env, egraph, egraph.find(root), report, extraction, lowered)


def _fits(term: Term, source: Term, max_nodes: int) -> None:
    """A GlcError at ``source`` if ``term`` has more than ``max_nodes`` distinct nodes."""
    size = dag_size(term)
    if size > max_nodes:
        raise GlcError(f"the program has {size} distinct nodes; glc compiles at most "
                       f"{max_nodes}", source.span)


def parse_emit(text: str) -> list[str]:
    """``--emit``'s comma-separated artefact names, checked."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in EMITS]
    if unknown:
        raise GlcError(f"unknown --emit artefact '{', '.join(unknown)}', expected a "
                       f"comma-separated list of {', '.join(EMITS)}")
    return names


def write_artifacts(result: CompileResult, outdir: Path, emit: Sequence[str]) -> list[Path]:
    """Write the chosen artefacts into ``outdir`` (created if needed); returns their paths."""
    texts = {"extracted": ("extracted.gls", lambda: program_text(result.term, result.env)),
             "egraph": ("egraph.dot", lambda: to_dot(result.egraph, result.extraction.choice))}
    written = []
    try:
        outdir.mkdir(parents=True, exist_ok=True)
        for name in emit:
            filename, make = texts[name]
            path = outdir / filename
            path.write_text(make())
            written.append(path)
    except OSError as error:
        raise GlcError(f"cannot write: {error.strerror}", str(error.filename or outdir)) from None
    return written


def program_text(term: Term, env: Mapping[str, Access]) -> str:
    """A .gls program for an extracted term: an input declaration per tensor it reads, a
    ``define`` per access sub-term it uses more than once (so a shared node is printed once,
    as the DAG extractor counted it), then the result expression."""
    symbols = list(dict.fromkeys(n.value for n in walk(term) if n.op == "symbol"))
    lines = []
    for name in symbols:
        ty = env[name]
        dims = "".join(f" {d}" for d in ty.dims)
        lines.append(f"(input {name} (shape{dims}) {ty.dtype})")
    lines.append(print_dag(term, taken=symbols))
    return "\n".join(lines) + "\n"
