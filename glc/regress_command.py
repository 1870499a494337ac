"""``glc regress``: every program compiled, run and compared, its cycles held to the baselines
(glc/regress.py; the CLI adds the command; errors become exit statuses there)."""

from __future__ import annotations

from pathlib import Path

import click

from glc.cache import open_cache
from glc.cache_command import no_cache_option
from glc.cli_context import (
    Context,
    announce_build,
    emit_json,
    engine_option,
    json_option,
    max_cycles_option,
    tolerance_options,
)
from glc.compare import FloatTolerance
from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.run import choose_engine


@click.command()
@click.argument("dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--config", "config_name", default="n16", show_default=True,
              help="Hardware configuration (a name in hw/configs/ or a .toml path).")
@engine_option
@click.option("--jobs", "-j", type=click.IntRange(min=1),
              help="Programs run in parallel, one process each (default: the number of CPUs).")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path),
              help="Write JUnit XML: one testcase per program.")
@click.option("--baselines", type=click.Path(dir_okay=False, path_type=Path),
              help="The baseline file (default: hw/baselines/<config>.json for the shipped "
                   "programs/, DIR/baselines/<config>.json for another folder DIR).")
@click.option("--update-baselines", is_flag=True,
              help="Record this run's cycles in the baseline file (accepts its cycle changes; "
                   "other programs' entries are kept).")
@click.option("--prune", is_flag=True,
              help="With --update-baselines over a whole folder: also remove the baselines of "
                   "programs it no longer holds.")
@click.option("--tolerance", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Percent above its baseline a program's cycles may be before it regresses.")
@click.option("--strict", is_flag=True, help="A program with no baseline fails.")
@click.option("-k", "keyword", help="Only the programs whose name contains this substring.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Kill a program still running after SECONDS (status hang; default: none).")
@click.option("--scheduler", metavar="ADDRESS",
              help="Run each program as a task on this Dask scheduler (tcp://host:port; its "
                   "workers must see the same paths), or 'local' for a LocalCluster of --jobs "
                   "workers (needs pip install 'glc[dask]').")
@max_cycles_option
@tolerance_options("float_tolerance")
@no_cache_option
@json_option
@click.pass_obj
def regress(obj: Context, dirs: tuple[Path, ...], config_name: str, engine: str | None,
            jobs: int | None, junit: Path | None, baselines: Path | None,
            update_baselines: bool, prune: bool, tolerance: float, strict: bool,
            keyword: str | None, timeout: float | None, scheduler: str | None,
            max_cycles: int | None, float_tolerance: FloatTolerance, no_cache: bool,
            as_json: bool) -> None:
    """Every program under DIR (default programs/): compile, run, compare with the interpreter
    bit for bit, and hold its cycles to the baselines; exit status 1 on a wrong result or a
    cycle regression."""
    from glc import regress as rg
    from glc.regress_output import table as regress_table
    from glc.regress_output import write_junit

    config = load_config(config_name)
    chosen = rg.select(list(dirs) or [Path("programs")], config, keyword, baselines)

    done = []

    def progress(row: rg.Row) -> None:
        done.append(row)
        if row.inputs.startswith("random"):
            obj.clear_status()
            click.echo(f"note: {row.name}: {row.inputs} inputs: {row.path} holds no "
                       "<symbol>.npy", err=True)
        if obj.verbose:
            click.echo(f"{row.name}: {row.status}, {row.seconds:.2f} s", err=True)
        obj.status(f"regress: {len(done)}/{len(chosen.programs)} programs, last {row.name}: "
                   f"{row.status}")

    if engine != "isa":
        announce_build(obj, config)

    report = rg.regress(chosen.programs, config, choose_engine(engine, config, obj.note),
                        chosen.baselines, tolerance=tolerance, jobs=jobs, max_cycles=max_cycles,
                        timeout=timeout,
                        strict=strict, update=update_baselines, prune=prune,
                        complete=chosen.complete,
                        on_row=progress, float_tolerance=float_tolerance,
                        scheduler=scheduler, cache=open_cache(not no_cache))
    if junit is not None:
        write_junit(report, junit)
    obj.clear_status()
    if as_json:
        emit_json(report.to_json())
    else:
        click.echo(regress_table(report))
    failures = report.failures()
    if failures:
        raise GlcError(f"{len(failures)} of {len(report.rows)} programs failed: "
                       + "; ".join(f"{row.name} ({row.reason})" for row in failures))
