"""`glc rtl`: a program on the RTL from the command line, checked against the ISA simulator."""

import json

import pytest
from click.testing import CliRunner

from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.isa.cases import PROGRAMS
from glc.isa.status import ErrorCode, MachineError
from glc.sim.commands import rtl

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent


@pytest.mark.parametrize("runner", ["cocotb", "bare"])
def test_rtl_command_runs_a_program_and_checks_it_against_the_model(tmp_path, runner):
    out = tmp_path / "dram.bin"
    result = CliRunner().invoke(rtl, [str(PROGRAMS / "matmul_tiled.s"), "--config", "n4",
                                      "--check", "--json", "-o", str(out), "--runner", runner])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures["match"] is True
    assert figures["cycles"] == figures["predicted_cycles"]
    assert figures["macs"] == 16 * figures["busy_exec"]
    assert out.stat().st_size == load_config("n4").dram_bytes  # the whole DRAM is dumped


def test_rtl_command_refuses_waves_from_the_bare_runner(tmp_path):
    result = CliRunner().invoke(rtl, [str(PROGRAMS / "matmul_tiled.s"), "--config", "n4",
                                      "--runner", "bare", "--waves", "vcd", "--keep",
                                      str(tmp_path)])
    assert isinstance(result.exception, GlcError)
    assert "--waves needs the cocotb runner" in str(result.exception)


def test_rtl_command_reports_the_machine_error(tmp_path):
    result = CliRunner().invoke(rtl, [str(PROGRAMS / "bad_opcode.s"), "--config", "n4"])
    assert isinstance(result.exception, MachineError)
    assert (result.exception.code, result.exception.pc) == (ErrorCode.ILLEGAL_OPCODE, 1)


def test_rtl_check_says_match_yes_not_python_true():
    result = CliRunner().invoke(rtl, [str(PROGRAMS / "matmul_tiled.s"), "--config", "n4",
                                      "--check"])
    assert result.exit_code == 0, result.output
    (line,) = [ln for ln in result.stdout.splitlines() if ln.startswith("match")]
    assert line.split() == ["match", "yes"]
