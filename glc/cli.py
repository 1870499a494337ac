"""The glc command line: the only place that turns errors into exit statuses."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from pathlib import Path

import click
import numpy as np

from glc.compare import compare
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
from glc.inputs import load
from glc.interp import interpret
from glc.ir.check import type_of
from glc.ir.term import walk
from glc.isa.commands import COMMANDS as ISA_COMMANDS
from glc.lower.artefacts import read as read_program
from glc.lower.artefacts import write as write_program
from glc.lower.execute import ENGINES
from glc.onnx.command import import_ as import_command
from glc.rewrites import DEFAULT as REWRITES_DEFAULT
from glc.rewrites import select as select_rules
from glc.run import SOURCE, default_engine, run_and_compare, save_result, summary
from glc.sim.commands import COMMANDS as SIM_COMMANDS
from glc.syntax.printer import print_term


class Context:
    """Options shared by every command."""

    def __init__(self, debug: bool, verbose: int):
        self.debug = debug
        self.verbose = verbose

    @contextmanager
    def stage(self, name: str):
        """Time a stage; with -v, print one line on stderr with its figures and seconds."""
        figures: dict = {}
        start = time.perf_counter()
        yield figures
        if self.verbose:
            shown = "".join(f", {key} {value}" for key, value in figures.items())
            click.echo(f"{name}: {time.perf_counter() - start:.3f} s{shown}", err=True)


class _Main(click.Group):
    """The command group; a GlcError from any command becomes one line and exit status 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except GlcError as error:
            if isinstance(ctx.obj, Context) and ctx.obj.debug:
                raise
            click.echo(str(error), err=True)
            ctx.exit(1)


@click.group(cls=_Main)
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.option("-v", "--verbose", count=True, help="Print each stage's figures.")
@click.version_option(package_name="glc")
@click.pass_context
def main(ctx: click.Context, debug: bool, verbose: int) -> None:
    """glc: compile Glenside kernels onto a systolic array and check them in Verilator."""
    ctx.obj = Context(debug, verbose)


def _emit_json(figures: dict) -> None:
    click.echo(json.dumps(figures, default=_json_default))


def _json_default(value):
    # json writes tuples as lists itself; numpy scalars and paths need saying.
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON-serialisable: {value!r}")


program_argument = click.argument("program", type=click.Path(path_type=Path))
shapes_option = click.option("--shapes", type=click.Path(path_type=Path),
                             help='A JSON file {"name": [dims]} giving input shapes.')
inputs_option = click.option("--inputs", type=click.Path(path_type=Path),
                             help="A folder of <symbol>.npy inputs (default: the program folder).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
out_option = click.option("-o", "--out", type=click.Path(path_type=Path),
                          help="Write the result as .npy.")
seed_option = click.option("--seed", default=0, show_default=True,
                           help="Seed of the random inputs made when none are supplied.")


@main.command()
@program_argument
@shapes_option
@inputs_option
@json_option
@click.pass_obj
def check(obj: Context, program: Path, shapes: Path | None, inputs: Path | None,
          as_json: bool) -> None:
    """Parse and shape-check PROGRAM; print the result's access shape and dtype."""
    with obj.stage("load") as figures:
        bundle = load(program, inputs, shapes)
        figures["nodes"] = len(walk(bundle.program.body))
    with obj.stage("check"):
        result = type_of(bundle.program.body, bundle.env)
    if as_json:
        _emit_json({"shape": result.shape, "item": result.item, "dtype": result.dtype})
    else:
        click.echo(str(result))


@main.command()
@program_argument
@inputs_option
@shapes_option
@out_option
@seed_option
@json_option
@click.pass_obj
def interp(obj: Context, program: Path, inputs: Path | None, shapes: Path | None,
           out: Path | None, seed: int, as_json: bool) -> None:
    """Evaluate PROGRAM with the numpy reference interpreter.

    With a program folder (or --inputs) that holds output.npy, report whether the result matches
    it, and exit with status 1 if it does not.
    """
    with obj.stage("load") as figures:
        bundle = load(program, inputs, shapes)
        arrays = bundle.arrays_or_random(seed)
        figures["nodes"] = len(walk(bundle.program.body))
        figures["inputs"] = "given" if bundle.arrays else f"random (seed {seed})"
    with obj.stage("interp") as figures:
        result, ty = interpret(bundle.program.body, arrays)
        figures["elements"] = result.size
    if out is not None:
        np.save(out, result)
    verdict = compare(result, bundle.expected) if bundle.expected is not None else None
    if as_json:
        _emit_json({"shape": ty.shape, "item": ty.item, "dtype": ty.dtype,
                    "inputs": "given" if bundle.arrays else f"random (seed {seed})",
                    "match": None if verdict is None else verdict.match,
                    "max_abs_diff": None if verdict is None else verdict.max_abs_diff})
    else:
        click.echo(f"{ty}")
        click.echo(np.array2string(result, threshold=64, edgeitems=3))
        if verdict is not None:
            click.echo(f"match {bundle.expected_path}: {'yes' if verdict.match else 'NO'} "
                       f"({verdict.detail})")
    if verdict is not None and not verdict.match:
        raise GlcError(f"result does not match: {verdict.detail}", str(bundle.expected_path))


@main.command("compile")
@program_argument
@inputs_option
@shapes_option
@click.option("-o", "--out", "outdir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the --emit artefacts.")
@click.option("--emit", help="Comma-separated artefacts to write into OUTDIR: extracted "
                             "(extracted.gls, a program glc interp runs; the default), egraph "
                             "(egraph.dot).")
@click.option("--rules", default=REWRITES_DEFAULT, show_default=True,
              help="Comma-separated rule sets of glc/rewrites/, or all.")
@click.option("--config", "config_name", default="n16", show_default=True,
              help="Hardware configuration (a name in hw/configs/ or a .toml path): its array "
                   "size sizes the rules.")
@click.option("--array-size", type=int, help="Array size for the rules (overrides --config).")
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
              help="Extraction cost: cycles (predicted on --config, glc/lower/cost.py) or nodes "
                   "(one per node, an un-tensorised product prohibitive).")
@json_option
@click.pass_obj
def compile_(obj: Context, program: Path, inputs: Path | None, shapes: Path | None,
             outdir: Path | None, emit: str | None, rules: str, config_name: str,
             array_size: int | None, iter_limit: int, node_limit: int, time_limit: float,
             extractor: str, extract_time_limit: float, cost_name: str, as_json: bool) -> None:
    """Saturate PROGRAM with the rewrite rules, extract the cheapest equivalent term and lower
    it to the accelerator; with -o, write program.s, program.bin and manifest.json too."""
    if emit is not None and outdir is None:
        raise GlcError("--emit writes into a folder: give -o OUTDIR")
    artefacts = parse_emit(emit or "extracted")
    bundle = load(program, inputs, shapes)
    config = load_config(config_name)
    size = array_size if array_size is not None else config.array_size
    result = compile_program(bundle, rules=select_rules(rules, size),
                             limits=Limits(iter_limit, node_limit, time_limit),
                             cost=cost_function(cost_name, config), extractor=extractor,
                             extract_time_limit=extract_time_limit, config=config)
    if obj.verbose:
        for line in result.stage_lines():
            click.echo(line, err=as_json)
    if outdir is not None:
        write_artifacts(result, outdir, artefacts)
        write_program(result.lowered, outdir)
        (outdir / SOURCE).write_text(program_text(bundle.program.body, result.env))
    if as_json:
        _emit_json(result.figures())
    else:
        click.echo(print_term(result.term))


engine_option = click.option("--engine", type=click.Choice(ENGINES),
                             help="Where the kernels run: isa (the ISA simulator) or rtl "
                                  "(Verilator); default rtl when Verilator is installed.")
max_cycles_option = click.option("--max-cycles", type=click.IntRange(min=1),
                                 help="RTL watchdog per kernel (default: 10x the prediction).")


@main.command()
@click.argument("outdir", type=click.Path(file_okay=False, path_type=Path))
@inputs_option
@engine_option
@click.option("--rtl", "engine_flag", flag_value="rtl", help="Same as --engine rtl.")
@click.option("--isa", "engine_flag", flag_value="isa", help="Same as --engine isa.")
@out_option
@seed_option
@max_cycles_option
@json_option
@click.pass_obj
def simulate(obj: Context, outdir: Path, inputs: Path | None, engine: str | None,
             engine_flag: str | None, out: Path | None, seed: int, max_cycles: int | None,
             as_json: bool) -> None:
    """Run the program glc compile -o wrote into OUTDIR and compare it with the interpreter
    (and with output.npy among the inputs); exit status 1 on a mismatch."""
    lowered = read_program(outdir)
    bundle = load(outdir / SOURCE, inputs)
    with obj.stage("simulate") as figures:
        outcome, result = run_and_compare(lowered, bundle.program.body,
                                          bundle.arrays_or_random(seed),
                                          engine or engine_flag or default_engine(lowered.config),
                                          bundle.expected, max_cycles)
        figures["cycles"] = result["cycles"]
    if not as_json:
        click.echo(np.array2string(outcome.result, threshold=64, edgeitems=3))
    _report(outcome.result, result, out, as_json)


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
@json_option
@click.pass_obj
def run(obj: Context, program: Path, inputs: Path | None, shapes: Path | None, config_name: str,
        rules: str, engine: str | None, out: Path | None, seed: int, max_cycles: int | None,
        as_json: bool) -> None:
    """Compile PROGRAM, run it (kernels on the RTL or the ISA simulator, the rest in numpy) and
    compare the result with the interpreter, bit for bit; exit status 1 on a mismatch."""
    bundle = load(program, inputs, shapes)
    config = load_config(config_name)
    with obj.stage("compile"):
        result = compile_program(bundle, rules=select_rules(rules, config.array_size),
                                 config=config)
    if obj.verbose:
        for line in result.stage_lines(iterations=False):
            click.echo(line, err=True)
    with obj.stage("simulate") as figures:
        outcome, report = run_and_compare(result.lowered, bundle.program.body,
                                          bundle.arrays_or_random(seed),
                                          engine or default_engine(config), bundle.expected,
                                          max_cycles)
        figures["cycles"] = report["cycles"]
    _report(outcome.result, {**result.figures(), **report}, out, as_json)


def _report(result: np.ndarray, figures: dict, out: Path | None, as_json: bool) -> None:
    if out is not None:
        save_result(result, out)
    if as_json:
        _emit_json(figures)
    else:
        click.echo(summary(figures))
    if not figures["match"]:
        raise GlcError(f"the result does not match: {figures['detail']}")


@main.command()
@click.argument("dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--config", "config_name", default="n16", show_default=True,
              help="Hardware configuration (a name in hw/configs/ or a .toml path).")
@engine_option
@click.option("--jobs", "-j", type=click.IntRange(min=1),
              help="Programs run in parallel, one process each (default: the number of CPUs).")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path),
              help="Write JUnit XML: one testcase per program.")
@click.option("--baselines", type=click.Path(dir_okay=False, path_type=Path),
              help="The baseline file (default: hw/baselines/<config>.json).")
@click.option("--update-baselines", is_flag=True,
              help="Rewrite the baseline file from this run (accepts its cycle changes).")
@click.option("--tolerance", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Percent above its baseline a program's cycles may be before it regresses.")
@click.option("--strict", is_flag=True, help="A program with no baseline fails.")
@click.option("-k", "keyword", help="Only the programs whose name contains this substring.")
@max_cycles_option
@json_option
@click.pass_obj
def regress(obj: Context, dirs: tuple[Path, ...], config_name: str, engine: str | None,
            jobs: int | None, junit: Path | None, baselines: Path | None,
            update_baselines: bool, tolerance: float, strict: bool, keyword: str | None,
            max_cycles: int | None, as_json: bool) -> None:
    """Every program under DIR (default programs/): compile, run, compare with the interpreter
    bit for bit, and hold its cycles to the baselines; exit status 1 on a wrong result or a
    cycle regression."""
    from glc import regress as rg

    config = load_config(config_name)
    folders = list(dirs) or [Path("programs")]
    programs = rg.discover(folders, keyword)
    complete = keyword is None and not any(rg.is_program(d) for d in folders)

    def progress(row: rg.Row) -> None:
        if obj.verbose:
            click.echo(f"{row.name}: {row.status}, {row.seconds:.2f} s", err=True)

    report = rg.regress(programs, config, engine or default_engine(config),
                        baselines or rg.baseline_path(config), tolerance=tolerance, jobs=jobs,
                        max_cycles=max_cycles, strict=strict, update=update_baselines,
                        complete=complete, on_row=progress)
    if junit is not None:
        rg.write_junit(report, junit)
    click.echo(json.dumps(report.to_json()) if as_json else rg.table(report))
    failures = report.failures()
    if failures:
        raise GlcError(f"{len(failures)} of {len(report.rows)} programs failed: "
                       + "; ".join(f"{row.name} ({row.reason})" for row in failures))


@main.command()
@click.option("--rules", default="all", show_default=True,
              help="Comma-separated rule sets of glc/rewrites/, or all.")
@click.option("--array-size", type=click.IntRange(min=1), default=16, show_default=True,
              help="The array size the sized rules are built for.")
def rules(rules: str, array_size: int) -> None:
    """List the rewrite table: each row's name, left => right side, condition and source."""
    for rule in select_rules(rules, array_size):
        right = "(computed from the match)" if callable(rule.rhs) else print_term(rule.rhs)
        condition = " if " + rule.condition.__name__.strip("_") if rule.condition else ""
        click.echo(f"{rule.name}\n    {print_term(rule.lhs)}\n => {right}{condition}\n"
                   f"    [{rule.source}]")


for _command in [*ISA_COMMANDS, *SIM_COMMANDS, import_command]:
    main.add_command(_command)
