"""The glc command line: its commands (glc/cli_context.py: what they share, and the group that
turns errors into exit statuses)."""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np

from glc import diagnose
from glc.cache import open_cache
from glc.cache_command import cache as cache_command
from glc.cache_command import no_cache_option
from glc.cli_context import (
    Context,
    Main,
    add_shared_options,
    announce_build,
    array_text,
    emit_json,
    engine_option,
    inputs_option,
    json_option,
    max_cycles_option,
    out_option,
    print_option,
    program_argument,
    seed_option,
    shapes_option,
    tolerance_options,
)
from glc.compare import FloatTolerance, compare
from glc.compiler import (
    COSTS,
    EXTRACTORS,
    compile_program,
    cost_function,
    parse_emit,
    program_text,
    write_artifacts,
)
from glc.egraph.runner import Limits
from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.inputs import Bundle, load
from glc.interp import interpret
from glc.ir.check import result_type, type_of
from glc.ir.term import walk
from glc.ir.types import describe_type
from glc.isa.commands import COMMANDS as ISA_COMMANDS
from glc.lower.artefacts import read as read_program
from glc.lower.artefacts import read_nodes
from glc.lower.artefacts import write as write_program
from glc.lower.optimizations import OPTIMIZATIONS, parse_disabled
from glc.onnx.command import import_ as import_command
from glc.onnx.command import zoo as zoo_command
from glc.outdir import check_folder_target, replacing
from glc.plot import check_plot_path, report_figure, save
from glc.regress_command import regress as regress_command
from glc.report import name_steps, rows_json
from glc.report import table as step_table
from glc.rewrites import DEFAULT as REWRITES_DEFAULT
from glc.rewrites import select as select_rules
from glc.rewrites import sets_of
from glc.run import (
    SOURCE,
    check_result_path,
    choose_engine,
    run_and_compare,
    save_result,
    summary,
)
from glc.segments import refuse as refuse_segments
from glc.sim.commands import COMMANDS as SIM_COMMANDS
from glc.syntax.printer import print_dag, print_term
from glc.synth.command import COMMANDS as SYNTH_COMMANDS
from glc.trace import check_trace_path, write_trace
from glc.version import describe


def _show_version(ctx: click.Context, on: bool) -> None:
    """``--version``: the version and the commit (glc/version.py), then exit before any command."""
    if on and not ctx.resilient_parsing:
        click.echo(describe())
        ctx.exit()


@click.group(cls=Main)
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.option("-v", "--verbose", count=True, help="Print each stage's figures.")
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _param, on: _show_version(ctx, on),
              help="Show the version and the commit it was built from, and exit.")
@click.pass_context
def main(ctx: click.Context, debug: bool, verbose: int) -> None:
    """glc: compile Glenside kernels onto a systolic array and check them in Verilator."""
    ctx.obj = Context(debug, verbose)


def _inputs(obj: Context, bundle: Bundle, seed: int) -> dict[str, np.ndarray]:
    """The bundle's input tensors; random ones are announced on a line of their own (stderr)."""
    note = bundle.random_note(seed)
    if note is not None:
        result_type(bundle.program.body, bundle.env)  # an ill-typed program: its error alone
        obj.clear_status()
        click.echo(note, err=True)
    return bundle.arrays_or_random(seed)


@main.command()
@program_argument
@shapes_option
@inputs_option
@json_option
@click.pass_obj
def check(obj: Context, program: Path, shapes: Path | None, inputs: Path | None,
          as_json: bool) -> None:
    """Parse and shape-check PROGRAM; print the result's type: a tensor's access shape and
    dtype, or the shape, list, access shape or number a program may also compute."""
    with obj.stage("load") as figures:
        bundle = load(program, inputs, shapes)
        figures["nodes"] = len(walk(bundle.program.body))
    with obj.stage("check"):
        line, fields = describe_type(type_of(bundle.program.body, bundle.env))
    if as_json:
        emit_json(fields)
    else:
        click.echo(line)


@main.command()
@program_argument
@inputs_option
@shapes_option
@out_option
@seed_option
@tolerance_options()
@print_option
@json_option
@click.pass_obj
def interp(obj: Context, program: Path, inputs: Path | None, shapes: Path | None,
           out: Path | None, seed: int, tolerance: FloatTolerance, print_all: bool,
           as_json: bool) -> None:
    """Evaluate PROGRAM with the numpy reference interpreter; print the result's type and the
    result (summarised past 64 elements; with -o, where it was written instead).

    With a program folder (or --inputs) that holds output.npy, report whether the result matches
    it, and exit with status 1 if it does not.
    """
    with obj.stage("load") as figures:
        bundle = load(program, inputs, shapes)
        check_result_path(out, bundle.input_dir)
        arrays = _inputs(obj, bundle, seed)
        figures["nodes"] = len(walk(bundle.program.body))
        figures["inputs"] = bundle.inputs_label(seed)
    with obj.stage("interp") as figures:
        result, ty = interpret(bundle.program.body, arrays)
        figures["elements"] = result.size
    if out is not None:
        save_result(result, out, bundle.input_dir)
    verdict = (compare(result, bundle.expected, tolerance) if bundle.expected is not None
               else None)
    if as_json:
        emit_json({"shape": ty.shape, "item": ty.item, "dtype": ty.dtype,
                    "inputs": bundle.inputs_label(seed),
                    "match": None if verdict is None else verdict.match,
                    "max_abs_diff": None if verdict is None else verdict.max_abs_diff})
    else:
        click.echo(f"{ty}")
        if print_all or out is None:
            click.echo(array_text(result, print_all))
        if out is not None:
            click.echo(f"wrote {out}")
        if verdict is not None:
            click.echo(f"match {bundle.expected_path}: {'yes' if verdict.match else 'NO'} "
                       f"({verdict.detail})")
    if verdict is not None and not verdict.match:
        raise GlcError(f"result does not match: {verdict.detail}", str(bundle.expected_path))


disable_option = click.option(
    "--disable", metavar="NAME[,NAME]",
    help="Lower without these optimizations (glc optimizations lists them; all: every one).")


@main.command("compile")
@program_argument
@inputs_option
@shapes_option
# -o is any path: glc/outdir.py's one rule refuses a file there in one line (click's own check
# would be a three-line usage error with exit status 2).
@click.option("-o", "--out", "outdir", type=click.Path(path_type=Path),
              help="Folder for the --emit artefacts.")
@click.option("--emit", help="Comma-separated artefacts to write into OUTDIR: extracted "
                             "(extracted.gls, a program glc interp runs; the default), egraph "
                             "(egraph.dot).")
@click.option("--rules", default=REWRITES_DEFAULT, show_default=True,
              help="Comma-separated rule sets of glc/rewrites/, or all.")
@click.option("--config", "config_name", default="n16", show_default=True,
              help="Hardware configuration (a name in hw/configs/ or a .toml path): its array "
                   "size sizes the rules.")
@click.option("--iter-limit", type=click.IntRange(min=0), default=Limits.iter_limit,
              show_default=True, help="Saturation: most iterations.")
@click.option("--node-limit", type=click.IntRange(min=0), default=Limits.node_limit,
              show_default=True, help="Saturation: stop past this many e-nodes.")
@click.option("--time-limit", type=click.FloatRange(min=0), default=Limits.time_limit,
              show_default=True, help="Saturation: stop after this many seconds.")
@click.option("--extractor", type=click.Choice(sorted(EXTRACTORS)), default="exact",
              show_default=True, help="exact (integer program, DAG cost) or greedy (tree cost).")
@click.option("--extract-time-limit", type=click.FloatRange(min=0), default=30.0,
              show_default=True,
              help="Exact extraction: seconds before the solver's best answer (or greedy's) is "
                   "taken unproven.")
@click.option("--cost", "cost_name", type=click.Choice(COSTS), default="cycles",
              show_default=True,
              help="Extraction cost: cycles (predicted on --config, glc/cost/extraction.py) "
                   "or nodes (one per node, an un-tensorised product prohibitive).")
@disable_option
@no_cache_option
@json_option
@click.pass_obj
def compile_(obj: Context, program: Path, inputs: Path | None, shapes: Path | None,
             outdir: Path | None, emit: str | None, rules: str, config_name: str,
             iter_limit: int, node_limit: int, time_limit: float,
             extractor: str, extract_time_limit: float, cost_name: str, disable: str | None,
             no_cache: bool, as_json: bool) -> None:
    """Saturate PROGRAM with the rewrite rules, extract the cheapest equivalent term and lower
    it to the accelerator; with -o, write program.s, program.bin and manifest.json too."""
    if emit is not None and outdir is None:
        raise GlcError("--emit writes into a folder: give -o OUTDIR")
    artefacts = parse_emit(emit or "extracted")
    disabled = parse_disabled(disable)
    if outdir is not None:
        check_folder_target(outdir)
    bundle = load(program, inputs, shapes)
    config = load_config(config_name)
    # One config sizes the rules, the cost and the lowering alike: they cannot disagree.
    result = compile_program(bundle, rules=select_rules(rules, config.array_size),
                             limits=Limits(iter_limit, node_limit, time_limit),
                             cost=cost_function(cost_name, config, disabled),
                             extractor=extractor, extract_time_limit=extract_time_limit,
                             config=config, progress=obj.status, disabled=disabled,
                             # the e-graph's drawing needs the e-graph, which no entry keeps
                             cache=open_cache(not no_cache and "egraph" not in artefacts))
    obj.clear_status()
    if obj.verbose:
        for line in result.stage_lines():
            click.echo(line, err=True)
        if result.cached:  # the lines above are the stored compile's
            click.echo("cache: hit (the compile read from the cache)", err=True)
    if outdir is not None:
        with replacing(outdir) as fresh:
            write_artifacts(result, fresh, artefacts)
            write_program(result.lowered, fresh,
                          {SOURCE: program_text(bundle.program.body, result.env)},
                          result.names.steps)
    if as_json:
        emit_json(result.figures())
    elif outdir is not None:  # the term is in OUTDIR/extracted.gls: a summary, not the term
        click.echo(f"wrote {outdir}: " + ", ".join(
            f"{key} {value}" for key, value in result.lowered.figures().items()
            if not isinstance(value, list)))
    else:
        click.echo(print_dag(result.term))


report_option = click.option(
    "--report", "per_step", is_flag=True,
    help="Also print each step (kernelN: the array, foldN/repackN/concatN.M: the vector unit, "
         "hostN/copyN: numpy): its define (ONNX node), unit, MACs, cycles, ideal, roofline "
         "limit, efficiencies; --json gives them as 'steps'.")


@main.command()
@click.argument("outdir", type=click.Path(file_okay=False, path_type=Path))
@inputs_option
@engine_option
@click.option("--rtl", "engine_flag", flag_value="rtl", help="Same as --engine rtl.")
@click.option("--isa", "engine_flag", flag_value="isa", help="Same as --engine isa.")
@out_option
@seed_option
@max_cycles_option
@tolerance_options()
@print_option
@report_option
@json_option
@click.pass_obj
def simulate(obj: Context, outdir: Path, inputs: Path | None, engine: str | None,
             engine_flag: str | None, out: Path | None, seed: int, max_cycles: int | None,
             tolerance: FloatTolerance, print_all: bool, per_step: bool, as_json: bool) -> None:
    """Run the program glc compile -o wrote into OUTDIR and compare it with the interpreter
    (and with output.npy among the inputs); print the figures (with --report, each step's, as
    glc run --report prints them, from the folder alone); exit status 1 on a mismatch."""
    lowered = read_program(outdir)
    bundle = load(outdir / SOURCE, inputs)
    check_result_path(out, bundle.input_dir)
    engine = choose_engine(engine or engine_flag, lowered.config, obj.note)
    _simulating(obj, engine, lowered.config)
    with obj.stage("simulate") as figures:
        outcome, result = run_and_compare(lowered, bundle.program.body,
                                          _inputs(obj, bundle, seed), engine,
                                          bundle.expected, max_cycles, tolerance,
                                          steps=per_step)
        figures["cycles"] = result["cycles"]
    obj.clear_status()
    result["inputs"] = bundle.inputs_label(seed)
    steps = result.pop("steps", None)
    if steps is not None:
        name_steps(steps, read_nodes(outdir))
        if as_json:
            result["steps"] = rows_json(steps)
    if print_all and not as_json:
        click.echo(array_text(outcome.result, True))
    _report(outcome.result, result, out, as_json, bundle.input_dir, steps)


@main.command()
@program_argument
@inputs_option
@shapes_option
@click.option("--config", "config_name", default="n16", show_default=True,
              help="Hardware configuration (a name in hw/configs/ or a .toml path).")
@click.option("--rules", default=REWRITES_DEFAULT, show_default=True,
              help="Comma-separated rule sets of glc/rewrites/, or all.")
@engine_option
@out_option
@seed_option
@max_cycles_option
@tolerance_options()
@report_option
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Draw each step's cycles against its limits, and the roofline with each "
                   "kernel as a point, into this .svg, .png or .html (needs matplotlib: "
                   "pip install 'glc[plot]').")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write each unit's busy and stalled cycles per instruction as a "
                   "Chrome/Perfetto trace into this .json (open it in ui.perfetto.dev): the "
                   "RTL's own on the RTL, else the cycle model's.")
@disable_option
@click.option("--check-each", is_flag=True,
              help="Check every image's tokens order its units' accesses (glc/isa/races.py) "
                   "and, after the run, compare every step's result in DRAM with the "
                   "interpreter's value of the same node; name the first wrong step (exit 1 "
                   "if any).")
@click.option("--bisect", "bisect_", is_flag=True,
              help="On a mismatch, lower again with optimizations switched off and name the "
                   "smallest set whose switching-off makes the result match.")
@click.option("--segments", type=click.IntRange(min=1),
              help="With --engine rtl: run the ISA simulator once, keeping its state at N "
                   "segment boundaries, then each segment on the RTL from its state, in "
                   "parallel, each checked bit for bit and cycle for cycle against it.")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --segments: segments simulated at a time.")
@no_cache_option
@json_option
@click.pass_obj
def run(obj: Context, program: Path, inputs: Path | None, shapes: Path | None, config_name: str,
        rules: str, engine: str | None, out: Path | None, seed: int, max_cycles: int | None,
        tolerance: FloatTolerance, per_step: bool, plot_path: Path | None,
        trace_path: Path | None, disable: str | None, check_each: bool, bisect_: bool,
        segments: int | None, jobs: int, no_cache: bool, as_json: bool) -> None:
    """Compile PROGRAM, run it (kernels on the RTL or the ISA simulator, the rest in numpy) and
    compare the result with the interpreter, bit for bit; exit status 1 on a mismatch."""
    disabled = parse_disabled(disable)
    bundle = load(program, inputs, shapes)
    check_result_path(out, bundle.input_dir)
    check_plot_path(plot_path)
    check_trace_path(trace_path)
    config = load_config(config_name)
    # before compiling: a missing toolchain fails first
    engine = choose_engine(engine, config, obj.note)
    if segments is not None:
        refuse_segments(engine, check_each, trace_path is not None)
    with obj.stage("compile") as figures:
        result = compile_program(bundle, rules=select_rules(rules, config.array_size),
                                 config=config, progress=obj.status, disabled=disabled,
                                 cache=open_cache(not no_cache))
        if result.cached:
            figures["cache"] = "hit"
    if obj.verbose:
        for line in result.stage_lines(iterations=False):
            click.echo(line, err=True)
    _simulating(obj, engine, config)
    arrays = _inputs(obj, bundle, seed)
    records = [] if trace_path is not None else None
    with obj.stage("simulate") as figures:
        outcome, report = run_and_compare(result.lowered, bundle.program.body, arrays,
                                          engine, bundle.expected,
                                          max_cycles, tolerance,
                                          steps=per_step or plot_path is not None,
                                          check_races=check_each, trace=records,
                                          segments=segments, jobs=jobs)
        figures["cycles"] = report["cycles"]
    obj.clear_status()
    if not as_json:
        for line in report.pop("segment_lines", []):
            click.echo(line, err=True)
    report.pop("segment_lines", None)
    report["inputs"] = bundle.inputs_label(seed)
    steps = report.pop("steps", None)
    if steps is not None:
        name_steps(steps, result.names.steps)
        if as_json and per_step:
            report["steps"] = rows_json(steps)
    title = f"{program.name} on the {engine} ({config.name})"
    if trace_path is not None:
        write_trace(trace_path, records, f"glc run {title}")
    if plot_path is not None:
        save(report_figure(steps, report, config, title), plot_path)
    lines = []
    if check_each:
        wrong, compared = diagnose.check_each(result.lowered, outcome, result.term, arrays,
                                              result.names.namer(result.term))
        report["check_each"] = wrong.to_json() if wrong else None
        lines.append(f"check-each: {wrong.line()}" if wrong else
                     f"check-each: all {compared} values in DRAM equal the interpreter's")
        if wrong is not None and report["match"]:
            report["match"], report["detail"] = False, f"check-each: {wrong.line()}"
    if bisect_ and not report["match"]:
        obj.status("bisect: lowering again without optimizations")
        found = diagnose.bisect(result.term, result.env, config, arrays, engine, tolerance,
                                disabled, max_cycles)
        obj.clear_status()
        report["bisect"] = found.to_json()
        lines.append(found.line())
    if not as_json:
        for line in lines:
            click.echo(line, err=True)
    _report(outcome.result, {**result.figures(), **report}, out, as_json, bundle.input_dir,
            steps if per_step else None)


def _simulating(obj: Context, engine: str, config) -> None:
    obj.status(f"simulate: running the kernels on the {engine}")
    if engine == "rtl":
        announce_build(obj, config)


def _report(result: np.ndarray, figures: dict, out: Path | None, as_json: bool,
            input_dir: Path | None, steps: list | None = None) -> None:
    if out is not None:
        save_result(result, out, input_dir)
    if as_json:
        emit_json(figures)
    else:
        click.echo(summary(figures))
        if steps is not None:
            click.echo(step_table(steps, figures))
    if not figures["match"]:
        raise GlcError(f"the result does not match: {figures['detail']}")


@main.command()
@click.option("--rules", default="all", show_default=True,
              help="Comma-separated rule sets of glc/rewrites/, or all.")
@click.option("--config", "config_name", default="n16", show_default=True,
              help="Hardware configuration (a name in hw/configs/ or a .toml path): its array "
                   "size sizes the rules, as in glc compile.")
def rules(rules: str, config_name: str) -> None:
    """List the rewrite table: each row's name and rule sets, left => right side (a computed
    one as the pattern it produces: n_x is ?x's shape dims, s_x and i_x its shape and item
    dims, p[k] the permutation's k-th entry, p⁻¹ its inverse), condition and source."""
    size = load_config(config_name).array_size
    sets = sets_of(size)
    for rule in select_rules(rules, size):
        condition = " if " + rule.condition.__name__.strip("_") if rule.condition else ""
        click.echo(f"{rule.name}  [{', '.join(sets[rule.name])}]\n    {print_term(rule.lhs)}\n"
                   f" => {rule.right_side}{condition}\n    [{rule.source}]")


@main.command()
def optimizations() -> None:
    """List the lowering's optimizations: each one's name (for --disable), what it does and
    where the lowering makes the choice."""
    width = max(len(o.name) for o in OPTIMIZATIONS)
    for o in OPTIMIZATIONS:
        click.echo(f"{o.name.ljust(width)}  {o.what} [glc/lower/{o.where}]")


for _command in [*ISA_COMMANDS, *SIM_COMMANDS, *SYNTH_COMMANDS, import_command, zoo_command,
                 cache_command, regress_command]:
    main.add_command(_command)
add_shared_options(main)
