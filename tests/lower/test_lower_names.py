"""The lowering's buffer names: each kind numbered from one among its own (kernel1, host1)."""

from __future__ import annotations

from pathlib import Path

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.rewrites import DEFAULT, select

PROGRAMS = Path(__file__).parents[2] / "programs"
N16 = load_config("n16")


def lowered(name: str):
    return compile_program(load(PROGRAMS / name), rules=select(DEFAULT, 16), config=N16).lowered


def test_host_steps_are_numbered_from_one_after_a_kernel():
    program = lowered("residual-add-int8")  # a kernel, then the residual add on the host
    assert [s.name for s in program.steps] == ["kernel1", "host1"]
    assert program.figures()["host"] == ["host1: compute elementwise-add"]


def test_kernels_and_host_steps_count_separately():
    program = lowered("cnn-int8")
    assert [s.name for s in program.steps] == ["kernel1", "host1", "kernel2"]
