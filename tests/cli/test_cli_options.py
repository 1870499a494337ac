"""-v and --debug are accepted before and after the subcommand, to the same effect."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.errors import GlcError

PROGRAM = str(Path(__file__).parents[2] / "programs" / "matmul-int8")


def stages(result) -> list[str]:
    """The stage names of the -v lines on stderr (their seconds vary)."""
    return [line.split(":")[0] for line in result.stderr.splitlines()]


@pytest.mark.parametrize("command", [["run", PROGRAM, "--engine", "isa"], ["check", PROGRAM]])
def test_verbose_after_the_subcommand_is_verbose_before_it(command):
    before = CliRunner().invoke(main, ["-v", *command])
    after = CliRunner().invoke(main, [command[0], "-v", *command[1:]])
    at_end = CliRunner().invoke(main, [*command, "--verbose"])
    assert before.exit_code == after.exit_code == at_end.exit_code == 0, after.output
    assert stages(before) and stages(after) == stages(before) == stages(at_end)
    assert after.stdout == before.stdout


def test_debug_after_the_subcommand_shows_the_traceback():
    quiet = CliRunner().invoke(main, ["check", "no-such-program"])
    assert quiet.exit_code == 1 and quiet.stderr.startswith("no-such-program: error: ")
    for args in (["--debug", "check", "no-such-program"], ["check", "no-such-program", "--debug"]):
        result = CliRunner().invoke(main, args)
        assert isinstance(result.exception, GlcError)  # raised, not turned into one line


def test_compile_verbose_after_the_subcommand_prints_the_runners_report():
    result = CliRunner().invoke(main, ["compile", PROGRAM, "-v"])
    assert result.exit_code == 0
    # Diagnostics on stderr, as for every command (issue 41 item 16: compile's were on stdout)
    assert result.stderr.startswith("iteration 1:") and "iteration 1:" not in result.stdout
