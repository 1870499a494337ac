"""Literals read back as they were written: a float beyond float64 is a located error, not an
'inf' that prints as no number."""

from __future__ import annotations

from click.testing import CliRunner

from glc.cli import main


def test_a_float_literal_beyond_float64_is_a_located_error(tmp_path):
    program = tmp_path / "p.gls"
    program.write_text("(access-literal (literal 1e400))\n")
    result = CliRunner().invoke(main, ["check", str(program)])
    assert result.exit_code == 1
    assert result.stderr == (f"{program}:1:26: error: 1e400 is beyond float64's range "
                             "(at most about 1.8e308)\n")


def test_the_largest_float_literal_prints_back_as_itself(tmp_path):
    program = tmp_path / "p.gls"
    program.write_text("(access-literal (literal 1.7e308))\n")
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["compile", str(program), "-o", str(out)]).exit_code == 0
    again = CliRunner().invoke(main, ["interp", str(out / "extracted.gls")])
    assert again.exit_code == 0 and "1.7e+308" in again.stdout
