"""The lowering's buffer names: each kind numbered from one among its own (kernel1, fold1,
host1)."""

from __future__ import annotations

from pathlib import Path

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.interp import env_types
from glc.lower.lowering import lower
from glc.rewrites import DEFAULT, select

PROGRAMS = Path(__file__).parents[2] / "programs"
N16 = load_config("n16")


def lowered(text: str, tmp_path: Path):
    (tmp_path / "p.gls").write_text(text)
    return compile_program(load(tmp_path / "p.gls"), rules=select(DEFAULT, 16),
                           config=N16).lowered


PRODUCT = ("(compute dot-product (access-cartesian-product (access (access-tensor x) 1) "
           "(access (access-tensor w) 1)))")
INPUTS = "(input x (shape 4 16) int8)\n(input w (shape 16 16) int8)\n"


def test_host_steps_are_numbered_from_one_after_a_kernel(tmp_path):
    # A product, then a negation: no unit computes it, so it is a host step.
    program = lowered(INPUTS + f"(compute negative {PRODUCT})", tmp_path)
    assert [s.name for s in program.steps] == ["kernel1", "host1"]
    assert program.figures()["host"] == ["host1: compute negative"]


def test_kernels_folds_and_host_steps_count_separately():
    program = compile_program(load(PROGRAMS / "cnn-int8"), rules=select(DEFAULT, 16),
                              config=N16).lowered
    # the stride-2 pool reads the conv's NCHW result in strided runs (docs/isa.md, revision
    # 2.4), no channels-last copy of it first
    assert [s.name for s in program.steps] == ["kernel1", "fold1", "kernel2"]


def test_a_fold_that_writes_its_consumers_layout_is_named_a_fold():
    """A residual add rebuilt to write the channels-last layout its stride-2 projection would
    copy it into (glc/lower/folds.py ``_fold_into``) kept the copy's name, ``repack1``, in the
    report; renamed after the lowering it is ``fold1`` (issue 41, item 15)."""
    from test_lower_folds import _projection

    term, arrays = _projection(256, 14, 512, seed=3)
    program = lower(term, env_types(arrays), N16)
    assert [(s.name, s.kernel.kind) for s in program.steps] == [("fold1", "fold"),
                                                                ("kernel1", "matmul")]
    assert program.steps[1].inputs.count("fold1") == 1
    assert program.output.buffer == "kernel1"
    assert "repack1" not in program.buffers
