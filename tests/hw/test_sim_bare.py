"""The bare runner (glc/sim/bare_main.cpp): sim_top's Verilator model clocked from C++ is the
same machine as under the cocotb testbench (DRAM, status and every counter equal, and equal to
the ISA simulator's), with the same watchdog and the same report of a stopped run."""

import re

import numpy as np
import pytest

from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.isa import simulator
from glc.isa.asm import assemble
from glc.isa.cases import build_case
from glc.isa.status import ErrorCode
from glc.sim.build import Design
from glc.sim.run import design, run_program

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent


@pytest.mark.parametrize("name", ["matmul_tiled", "store_requant", "vector_linear"])
def test_bare_runner_is_the_cocotb_testbenchs_machine(name):
    hw = load_config("n4")
    case = build_case(name, hw, seed=3)
    model = simulator.run(case.program.words, hw, case.dram)
    watchdog = 50 * model.counters.cycles + 1000
    bare = run_program(hw, case.program.words, case.dram, max_cycles=watchdog, runner="bare")
    cocotb = run_program(hw, case.program.words, case.dram, max_cycles=watchdog)
    for rtl in (bare, cocotb):
        assert (rtl.error, rtl.timed_out) == (ErrorCode.OK, False)
        np.testing.assert_array_equal(rtl.dram, model.dram)
        assert rtl.counters.as_dict() == model.counters.as_dict()
    assert bare.run_seconds > 0 and bare.run_cpu_seconds > 0


def test_bare_runner_reports_a_faulty_program_as_the_testbench_does():
    hw = load_config("n4")
    case = build_case("bad_scratchpad", hw)
    bare = run_program(hw, case.program.words, case.dram, max_cycles=100_000, runner="bare")
    assert not bare.timed_out
    assert (bare.error, bare.error_pc) == (case.error, case.error_pc) == (ErrorCode.SP_RANGE, 1)


def test_bare_runner_watchdog_says_what_each_unit_was_doing():
    hw = load_config("n4")
    words = assemble("matmul rows=200\n" * 8 + "halt\n", hw).words
    rtl = run_program(hw, words, b"", max_cycles=500, runner="bare")
    assert rtl.timed_out and rtl.cycles <= 500
    # as tests/hw/test_rtl_programs.py's watchdog test under cocotb: EXEC busy all through the
    # last cycles watched, at pc 2 in the cycle model at cycle 500
    assert re.search(
        r"in its last (\d+) cycles LOAD idle; EXEC busy \1; STORE idle; "
        r"VECTOR idle",
        rtl.stuck,
    ), rtl.stuck
    assert "at cycle 500 the cycle model has EXEC running at pc 2" in rtl.stuck


def test_runners_and_threads_get_their_own_builds():
    hw = load_config("n4")
    dirs = {
        design(hw).build_dir(),
        design(hw, runner="bare").build_dir(),
        design(hw, runner="bare", threads=2).build_dir(),
    }
    assert len(dirs) == 3
    assert "--threads" in design(hw, runner="bare", threads=2).flags()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"runner": "iverilog"}, "unknown runner 'iverilog'"),
        ({"runner": "bare", "waves": "vcd"}, "the bare runner records no waves"),
        ({"threads": 0}, "threads must be at least 1"),
    ],
)
def test_a_design_the_runners_cannot_build_is_refused(fields, message):
    with pytest.raises(GlcError, match=message):
        Design("sim_top", {}, **fields)
