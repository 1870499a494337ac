"""Yosys reads and elaborates the whole accelerator in every configuration (so RTL it cannot read
never lands), with no latch, no multiply-driven and no undriven net; the synthesis regression
against the recorded baseline is marked slow (scripts/bench.py --only synth runs it)."""

from pathlib import Path

import pytest

from glc.hwconfig import CONFIG_DIR, load_config
from glc.synth.baseline import SEEDS, check_baseline, load_baseline
from glc.synth.flow import bad_log_lines, elaborate, run_yosys_script, synthesize

pytestmark = pytest.mark.synth  # needs Yosys: skipped where it is absent


# Every configuration: the FPGA ones build the vector unit narrower than the array, with its
# accumulator reads on one port (hw/vector_unit.sv), RTL that n4 and n16 do not elaborate.
@pytest.mark.parametrize("config", sorted(path.stem for path in CONFIG_DIR.glob("*.toml")))
def test_yosys_reads_and_elaborates_the_whole_design(config, tmp_path):
    result = elaborate(load_config(config), tmp_path)
    log = (tmp_path / "elaborate.log").read_text()
    assert result.returncode == 0, log[-3000:]
    assert "Found and reported 0 problems" in log
    assert bad_log_lines(log) == []


def test_the_log_check_finds_a_latch_and_a_second_driver(tmp_path):
    (tmp_path / "bad.sv").write_text(
        "module bad (input logic en, input logic d, output logic q, output logic y);\n"
        "    always @* if (en) q = d;\n"
        "    assign y = d;\n    assign y = en;\nendmodule\n")
    run_yosys_script("read_verilog -sv bad.sv\nhierarchy -top bad\nproc\ncheck\n", tmp_path,
                     "bad")
    found = bad_log_lines((tmp_path / "bad.log").read_text())
    assert any("Latch inferred for signal `\\bad.\\q'" in line for line in found), found
    assert any("multiple conflicting drivers" in line for line in found), found


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(load_baseline()))
def test_fpga_config_fits_and_keeps_its_fmax(config, tmp_path: Path):
    report = synthesize(load_config(config), "ecp5-85f", tmp_path, seeds=SEEDS)
    assert check_baseline(report, load_baseline()[config]) == []
