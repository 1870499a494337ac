"""A few compiled programs on the Verilator RTL (N = 4, small and quick with a warm build; the
bias exercises LOADs to the accumulator): bit-identical to output.npy, and every image's counters
those of the ISA simulator, cycles within 5 % of the cycle model's prediction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.lower.execute import execute
from glc.lower.image import Image, schedule
from glc.lower.lowering import lower
from glc.rewrites import DEFAULT, select

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent

PROGRAMS = Path(__file__).parents[2] / "programs"
ON_RTL = ["matmul-int8", "mlp-int8", "conv2d-nchw-int8", "dense-bias-int8"]


@pytest.mark.parametrize("name", ON_RTL)
def test_program_on_the_rtl_matches_and_meets_its_prediction(name):
    result = CliRunner().invoke(main, ["run", str(PROGRAMS / name), "--engine", "rtl",
                                       "--config", "n4", "--json"])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["match"] is True and figures["engine"] == "rtl"
    assert abs(figures["cycles"] - figures["predicted_cycles"]) <= 0.05 * \
        figures["predicted_cycles"]


def test_rtl_counters_equal_the_isa_simulators_image_by_image():
    config = load_config("n4")
    bundle = load(PROGRAMS / "mlp-int8")
    term = compile_program(bundle, rules=select(DEFAULT, config.array_size)).term
    program = lower(term, bundle.env, config)
    rtl = execute(program, bundle.arrays, "rtl")
    isa = execute(program, bundle.arrays, "isa")
    assert (rtl.dram == isa.dram).all()
    for measured, model in zip(rtl.counters, isa.counters, strict=True):
        assert {k: v for k, v in measured.as_dict().items() if k != "cycles"} == \
            {k: v for k, v in model.as_dict().items() if k != "cycles"}
        assert abs(measured.cycles - model.cycles) <= 0.05 * model.cycles
    # The two layers run as one image: the second reads the first's int8 result after a barrier.
    images = [run for run in schedule(program) if isinstance(run, Image)]
    assert len(program.kernels) == 2 and len(images) == len(rtl.counters) == 1
    assert isa.counters[0].cycles == images[0].predicted_cycles(config)
