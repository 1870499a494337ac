"""The glc command line: the only place that turns errors into exit statuses."""

from __future__ import annotations

import sys
from functools import wraps

import click

from glc.errors import GlcError


class Context:
    """Options shared by every command."""

    def __init__(self, debug: bool, verbose: int):
        self.debug = debug
        self.verbose = verbose


def reports_errors(command):
    """Turn a GlcError into one line on stderr and exit status 1 (a traceback only with --debug)."""

    @wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except GlcError as error:
            ctx = click.get_current_context().find_object(Context)
            if ctx is not None and ctx.debug:
                raise
            click.echo(str(error), err=True)
            sys.exit(1)

    return run


@click.group()
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.option("-v", "--verbose", count=True, help="Print each stage's figures.")
@click.version_option(package_name="glc")
@click.pass_context
def main(ctx: click.Context, debug: bool, verbose: int) -> None:
    """glc: compile Glenside kernels onto a systolic array and check them in Verilator."""
    ctx.obj = Context(debug, verbose)
