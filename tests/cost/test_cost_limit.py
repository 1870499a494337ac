"""The limits of glc/cost/limit.py against values computed here from the shapes alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from glc.compiler import compile_program
from glc.cost.limit import _union_bytes, compulsory_bytes, kernel_limit, roofline
from glc.hwconfig import load_config
from glc.inputs import load
from glc.isa.encoding import Instruction
from glc.rewrites import DEFAULT, select

PROGRAMS = Path(__file__).parents[2] / "programs"


def lowered(name: str, config_name: str = "n16"):
    config = load_config(config_name)
    return compile_program(load(PROGRAMS / name), rules=select(DEFAULT, config.array_size),
                           config=config).lowered


# (program, [(MACs, compulsory bytes: operands read once + result written once)] per kernel)
CASES = [
    # 256³ int8 GEMM, int32 result.
    ("gemm256-int8", [(256 ** 3, 2 * 256 * 256 + 4 * 256 * 256)]),
    # 3x3 conv, pad 1, NHWC 32x32x64 -> 64, int8 result: the image once (not its 9 im2col
    # copies), the HWIO weights, the output.
    ("conv2d-nhwc64-int8", [(32 * 32 * 64 * 576, 32 * 32 * 64 + 9 * 64 * 64 + 32 * 32 * 64)]),
    # 2x2/2 max pool of a 3x7x7 image min-padded to 8x8: the 147 pixels once, 48 outputs; the
    # padding reads no DRAM.
    ("maxpool2x2-int8", [(0, 3 * 7 * 7 + 3 * 4 * 4)]),
    # The tiny CNN: conv 2->4 channels 6x6 pad 1 (requantized int8 out), pool (its stride-2
    # windows read the conv's NCHW result in strided runs), dense 36->5.
    ("cnn-int8", [(4 * 18 * 36, 72 + 72 + 144), (0, 144 + 36), (5 * 36, 36 + 180 + 4 * 5)]),
]


@pytest.mark.parametrize("name,expected", CASES, ids=[c[0] for c in CASES])
def test_kernel_limits_equal_the_shapes_formulas(name, expected):
    program = lowered(name)
    config = program.config
    n, port, lanes = config.array_size, config.dram_port_bytes, config.vector_lanes
    found = [kernel_limit(s.kernel, config) for s in program.kernels]
    assert [(f.macs, f.bytes) for f in found] == expected
    for f, step in zip(found, program.kernels, strict=True):
        k = step.kernel
        if k.kind == "repack":  # overhead, counted against the layer's limit (glc/lower/repack.py)
            assert (f.ideal, f.limit) == (0, 0)
            continue
        work = k.m * k.k * (1 if k.kind == "fold" else k.n_out)
        ideal = -(-work // (lanes if k.kind == "fold" else n * n))
        assert f.ideal == ideal == k.ideal_cycles(config)
        assert f.limit == max(ideal, -(-f.bytes // port))
        assert f.limit <= k.predicted_cycles(config)  # no schedule beats its limit


def test_a_gemv_is_bound_by_the_dram_port():
    assert roofline(4096, 1024 * 1024 + 1024 + 4 * 1024, 16) == -(-(1024 * 1024 + 5 * 1024)
                                                                  // 16)
    assert roofline(65536, 393216, 16) == 65536


def test_overlapping_reads_count_once_and_padding_not_at_all():
    # Two LOADs of the same 4 runs of 16 bytes, and one whose runs lie wholly outside its
    # virtual bounds (padding): 64 distinct bytes.
    load = dict(dram=128, run=16, count0=4, stride0=32, count1=1, count2=1, count3=1, inner=0)
    padding = dict(load, dram=4096, ylim=1, y0=5)
    words = [Instruction.make("load", **load), Instruction.make("load", **load),
             Instruction.make("load", **padding)]
    assert compulsory_bytes(words) == 64


def test_union_of_intervals():
    starts = np.array([10, 0, 5, 30, 31])
    ends = np.array([20, 8, 12, 32, 33])
    assert _union_bytes(starts, ends) == 20 + 3  # [0, 20) and [30, 33)
