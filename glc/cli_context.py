"""What every glc command shares: the context (verbosity, status line, stage timing), the
group that turns a GlcError into one line and exit status 1 (the only place errors become exit
statuses), the shared options, and --json output."""

from __future__ import annotations

import functools
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import click
import numpy as np

from glc.compare import DEFAULT_ATOL, DEFAULT_RTOL, FloatTolerance
from glc.errors import GlcError
from glc.run import ENGINE_CHOICES


class Context:
    """Options shared by every command."""

    def __init__(self, debug: bool, verbose: int):
        self.debug = debug
        self.verbose = verbose
        self.as_json = False  # the command was given --json: an error is a JSON object too
        self.json_printed = False
        self._status_shown = False

    def status(self, text: str) -> None:
        """Progress on one status line of stderr, on a terminal only: nothing when piped, with
        --json or with -v (whose lines say the same)."""
        if _terminal() and not self.as_json and not self.verbose:
            click.echo(f"\r\033[K{text}", nl=False, err=True, color=True)
            self._status_shown = True

    def note(self, line: str) -> None:
        """A diagnostic line on stderr (after clearing the status line)."""
        self.clear_status()
        click.echo(line, err=True)

    def clear_status(self) -> None:
        """Remove the status line before the command's output."""
        if self._status_shown:
            click.echo("\r\033[K", nl=False, err=True, color=True)
            self._status_shown = False

    @contextmanager
    def stage(self, name: str):
        """Time a stage; with -v, print one line on stderr with its figures and seconds."""
        figures: dict = {}
        start = time.perf_counter()
        yield figures
        if self.verbose:
            shown = "".join(f", {key} {value}" for key, value in figures.items())
            click.echo(f"{name}: {time.perf_counter() - start:.3f} s{shown}", err=True)


class Main(click.Group):
    """The command group; a GlcError from any command becomes one line and exit status 1."""

    def invoke(self, ctx: click.Context):
        try:
            # A NaN or an infinity is a float32 value like any other (sqrt of a negative is
            # NaN, on the host and in the interpreter alike); numpy's RuntimeWarnings about
            # them would leak onto stderr ahead of the result or the error line.
            with np.errstate(all="ignore"):
                return super().invoke(ctx)
        except (GlcError, MemoryError) as caught:
            obj = ctx.obj if isinstance(ctx.obj, Context) else Context(False, 0)
            if obj.debug:
                raise
            # Tensors within the size limit (docs/frontend.md, "Limits") may still be too many
            # for this machine's memory together: that is one line too.
            error = caught if isinstance(caught, GlcError) else GlcError(
                "out of memory: the program's tensors do not fit in this machine's memory")
            obj.clear_status()
            if obj.as_json and not obj.json_printed:  # --json: the error as its JSON object
                click.echo(json.dumps({"error": error.message, "where": None if error.where
                                       is None else str(error.where), "line": str(error)}))
            else:
                click.echo(str(error), err=True)
            ctx.exit(1)


def _terminal() -> bool:
    """Whether stderr is a terminal (progress is shown there, never into a pipe or file)."""
    # sys.stderr, not click.get_text_stream (deprecated in Click 8.5): under click's test runner
    # it is the runner's stream, as click.echo(err=True) writes to.
    return sys.stderr.isatty()


def emit_json(figures: dict) -> None:
    click.echo(json.dumps(figures, default=_json_default))
    context = click.get_current_context(silent=True)
    if context is not None and isinstance(context.obj, Context):
        context.obj.json_printed = True


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
                          help="Write the result to this .npy file (not into the inputs folder).")
print_option = click.option("--print", "print_all", is_flag=True,
                            help="Print the whole result array on stdout.")


def array_text(result: np.ndarray, whole: bool) -> str:
    """The result array as printed: summarised past 64 elements, or (``whole``) every element."""
    return np.array2string(result, threshold=result.size + 1 if whole else 64, edgeitems=3)


seed_option = click.option("--seed", default=0, show_default=True,
                           help="Seed of the random inputs made when none are supplied.")


def tolerance_options(keyword: str = "tolerance"):
    """--rtol and --atol, given to the command as one FloatTolerance argument ``keyword``."""
    def defaults(table: dict[str, float]) -> str:
        return ", ".join(f"{value:g} {dtype}" for dtype, value in table.items())

    def decorate(command):
        @functools.wraps(command)
        def with_tolerance(*args, rtol: float | None, atol: float | None, **kwargs):
            return command(*args, **{keyword: FloatTolerance(rtol, atol)}, **kwargs)

        with_tolerance = click.option(
            "--atol", type=click.FloatRange(min=0),
            help=f"Float results: absolute tolerance per element (default "
                 f"{defaults(DEFAULT_ATOL)}).")(with_tolerance)
        return click.option(
            "--rtol", type=click.FloatRange(min=0),
            help=f"Float results: tolerance relative to each expected element, |r - e| <= atol "
                 f"+ rtol*|e| (default {defaults(DEFAULT_RTOL)}).")(with_tolerance)

    return decorate


def _set_shared(ctx: click.Context, param: click.Parameter, value: bool | int) -> None:
    """-v and --debug given after the subcommand: they add to the group's (``glc run -v``)."""
    if value and isinstance(ctx.obj, Context):
        if param.name == "debug":
            ctx.obj.debug = True
        else:
            ctx.obj.verbose += value


def _remember_json(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    """--json given: an error is printed as a JSON object too (Main.invoke)."""
    if value and isinstance(ctx.obj, Context):
        ctx.obj.as_json = True
    return value


def add_shared_options(group: click.Group) -> None:
    """Give every command of ``group`` --debug and -v (they add to the group's) and make its
    --json also print an error as JSON."""
    for command in group.commands.values():
        for param in command.params:
            if param.name == "as_json":
                param.callback = _remember_json
        command.params += [
            click.Option(["--debug"], is_flag=True, expose_value=False, callback=_set_shared,
                         help="Show tracebacks for errors (also before the command)."),
            click.Option(["-v", "--verbose"], count=True, expose_value=False,
                         callback=_set_shared,
                         help="Print each stage's figures (also before the command)."),
        ]


engine_option = click.option("--engine", type=click.Choice(ENGINE_CHOICES),
                             help="Where the kernels run: rtl (Verilator, the default: it needs "
                                  "c++, make and perl), isa (the ISA simulator), or auto (rtl "
                                  "when it builds, else isa).")
max_cycles_option = click.option("--max-cycles", type=click.IntRange(min=1),
                                 help="RTL watchdog per kernel (default: 10x the prediction).")


def announce_build(obj: Context, config) -> None:
    """A cold Verilator build is a minute of silence otherwise: say so on the status line."""
    from glc.sim.build import is_built
    from glc.sim.run import design
    from glc.sim.toolchain import missing

    if not missing() and not is_built(design(config)):
        obj.status(f"building the Verilator model of {config.name} (once; about a minute)…")
