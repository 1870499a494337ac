"""A program checked on the RTL in segments (glc/segments.py): the cut covers the schedule in
order, and each segment run on the RTL from the ISA simulator's state ends in its state with
its cycles — and a state or a cycle count that differs is reported, not passed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.interp import interpret
from glc.isa import simulator
from glc.lower.image import Image, schedule
from glc.lower.program import HostStep
from glc.rewrites import DEFAULT, select
from glc.segments import check, split

DATA = Path(__file__).resolve().parent / "onnx" / "data"
CONFIG = load_config("n16")


def network(seed: int, folder: Path):
    """The quantized network scripts/netgen.py drew for ``seed`` when these tests were written,
    imported and compiled on n16 (frozen: netgen draws other graphs since it gained dynamic
    quantization, SE gates and the rest; seed 18 became a 36-kernel network)."""
    from glc.onnx.importer import import_model

    bundle = load(import_model(DATA / f"netgen-seed{seed}.onnx", folder / "p").folder)
    return bundle, compile_program(bundle, rules=select(DEFAULT, 16), config=CONFIG).lowered


def steps_of(runs) -> list:
    return [s for r in runs for s in ([r] if isinstance(r, HostStep) else r.steps)]


@pytest.mark.parametrize("seed", [18, 24])
def test_the_segments_cover_the_schedule_in_order_each_image_cut_from_one(seed, tmp_path):
    _, program = network(seed, tmp_path)  # 18: host, 3 kernels, host, 2 kernels, host
    runs = schedule(program)
    image_of = {id(s): i for i, r in enumerate(runs) if isinstance(r, Image) for s in r.steps}
    kernels = len(program.kernels)
    for count in range(1, kernels + 3):
        segments = split(program, count)
        assert steps_of([r for seg in segments for r in seg]) == steps_of(runs)
        assert len(segments) == min(count, kernels)
        for segment in segments:
            assert any(isinstance(r, Image) for r in segment)
            for run in (r for r in segment if isinstance(r, Image)):
                assert len({image_of[id(s)] for s in run.steps}) == 1
    assert [[type(r) for r in seg] for seg in split(program, 1)] == [[type(r) for r in runs]]


def test_a_segment_count_below_one_is_refused(tmp_path):
    _, program = network(18, tmp_path)
    with pytest.raises(Exception, match="at least 1"):
        split(program, 0)


@pytest.mark.rtl
def test_a_network_in_segments_on_the_rtl_ends_each_in_the_isa_state(tmp_path):
    bundle, program = network(18, tmp_path)
    found = check(program, bundle.arrays, 3, jobs=2)
    assert len(found.segments) == 3 and found.ok
    # Every kernel of the program in one segment. (The count was written here as a constant,
    # 7, which is the lowering's and changed with it: 5 since 2026-12-08.)
    assert all(s.kernels for s in found.segments)
    assert sum(s.kernels for s in found.segments) == len(program.kernels)
    for segment in found.segments:  # the cycle model's count of each cut image, and the RTL's
        assert segment.rtl_cycles == segment.model_cycles and segment.model_cycles
    reference, _ = interpret(bundle.program.body, bundle.arrays)
    assert np.array_equal(found.outcome.result, reference)
    assert found.outcome.cycles == sum(sum(s.model_cycles) for s in found.segments)


@pytest.mark.rtl
def test_a_state_or_cycle_count_that_differs_is_reported(tmp_path, monkeypatch):
    """The ISA reference made wrong after every image (one DRAM byte, one cycle): every segment
    is reported as differing, in state and in cycles."""
    bundle, program = network(18, tmp_path)
    real = simulator.run

    def wrong(words, config, dram, **kwargs):
        machine = real(words, config, dram, **kwargs)
        dram[7] += 1  # wraps at 256; differs after any number of images
        machine.counters.cycles += 1
        return machine

    monkeypatch.setattr(simulator, "run", wrong)
    found = check(program, bundle.arrays, 2, jobs=2)
    assert not found.ok
    for segment in found.segments:
        assert not segment.match and "DRAM bytes differ, the first at 0x7" in segment.detail
        assert segment.rtl_cycles != segment.model_cycles
        assert "DIFFERS" in segment.line() and "!= model" in segment.line()
