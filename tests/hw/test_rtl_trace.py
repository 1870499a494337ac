"""glc run --trace on the RTL (N = 4): hw/unit_trace.sv's record of the units' signals gives the
cycle model's slices, slice for slice (RTL cycles = model, per instruction and per unit), and
each unit's slices sum to the RTL's own busy and stall counters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.isa.fields import UNITS
from glc.lower.execute import execute
from glc.rewrites import DEFAULT, select
from glc.trace import busy_cycles, stall_track

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent

PROGRAMS = Path(__file__).parents[2] / "programs"
# Array and vector kernels in one image (cnn), two kernels joined by a barrier (mlp), DRAM-port
# waits (conv2d, residual-add).
ON_RTL = ("cnn-int8", "conv2d-nchw-int8", "mlp-int8", "residual-add-int8")


@pytest.mark.parametrize("name", ON_RTL)
def test_the_rtls_trace_is_the_cycle_models(name):
    config = load_config("n4")
    bundle = load(PROGRAMS / name)
    program = compile_program(bundle, rules=select(DEFAULT, config.array_size),
                              config=config).lowered
    measured, modelled = [], []
    rtl = execute(program, bundle.arrays, "rtl", trace=measured)
    execute(program, bundle.arrays, "isa", trace=modelled)
    assert len(measured) == len(modelled) >= 1
    for ours, theirs in zip(measured, modelled, strict=True):
        assert ours.slices == theirs.slices
        assert ours.cycles == theirs.cycles
    for record, counters in zip(measured, rtl.counters, strict=True):
        sums = busy_cycles(record.slices)
        assert record.cycles == counters.cycles
        for unit in UNITS:
            assert sums[unit] == getattr(counters, f"busy_{unit}"), unit
            assert sums[stall_track(unit)] == getattr(counters, f"stall_token_{unit}") + \
                getattr(counters, f"stall_dram_{unit}", 0), unit


def test_glc_run_writes_the_rtls_trace(tmp_path):
    path = tmp_path / "conv.json"
    result = CliRunner().invoke(main, ["run", str(PROGRAMS / "conv2d-nchw-int8"), "--engine",
                                       "rtl", "--config", "n4", "--trace", str(path), "--json"])
    assert result.exit_code == 0, result.output
    trace = json.loads(path.read_text())
    assert "on the rtl" in trace["traceEvents"][0]["args"]["name"]
    assert trace["otherData"]["cycles"] == json.loads(result.stdout)["cycles"]
