"""The lowering's buffer names: each kind numbered from one among its own (kernel1, fold1,
host1)."""

from __future__ import annotations

from pathlib import Path

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
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
