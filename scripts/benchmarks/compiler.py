"""The architecture's workloads through the whole compiler: parse, saturate, extract, lower, run on
the RTL, compare with the interpreter — against the hand-scheduled program of the same product
(glc/isa/gemm.py) measured in the same run.

`efficiency` is ceil(M·K·Nₒ / N²) / measured cycles; `vs hand` is the compiled program's cycles
over the hand schedule's (1.0 = the compiler loses nothing to the hand-written program).
"""

from __future__ import annotations

import time

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import random_inputs
from glc.ir.types import Access
from glc.isa.asm import assemble
from glc.isa.gemm import conv2d_program, gemm_program
from glc.rewrites import DEFAULT, select
from glc.run import run_and_compare
from glc.sim.build import build
from glc.sim.run import design, run_program
from glc.syntax.reader import parse_program

SECTION = "compiler"
TITLE = "whole-compiler workloads on the RTL (N = 16), against hand-scheduled programs"

GEMM = """(input a (shape 256 256) int8)
(input b (shape 256 256) int8)
(compute dot-product (access-cartesian-product (access (access-tensor a) 1)
  (access (access-transpose (access-tensor b) (list 1 0)) 1)))
"""
CONV_NHWC = """(input data (shape 1 32 32 64) int8)
(input weights (shape 3 3 64 64) int8)
(access-transpose (compute dot-product (access-cartesian-product
  (access (access-transpose (access-tensor weights) (list 3 2 0 1)) 1)
  (access (access-squeeze (access-windows (access (access-transpose
    (access-pad (access-pad (access-tensor data) zero-padding 1 1 1) zero-padding 2 1 1)
    (list 0 3 1 2)) 1) (shape 64 3 3) (shape 1 1 1)) 1) 3)))
 (list 1 2 3 0))
"""

# (name, program text, the hand schedule of the same product with the same (int32) output)
WORKLOADS = [
    ("gemm 256x256x256", GEMM, lambda c: gemm_program(256, 256, 256, c, raw=True)),
    ("conv2d 3x3 pad 1 NHWC 32x32x64x64", CONV_NHWC,
     lambda c: conv2d_program(32, 32, 64, 64, c, raw=True)),
]


def run() -> list[dict]:
    """One row per workload: compile time, the compiled program on the RTL, the hand schedule."""
    config = load_config("n16")
    build(design(config))  # compile the model outside the timed runs
    rows = []
    for name, text, hand in WORKLOADS:
        program = parse_program(text, f"<{name}>")
        env = {d.name: Access(d.dims, (), d.dtype) for d in program.inputs.values()}
        start = time.perf_counter()
        compiled = compile_program(program, env, rules=select(DEFAULT, config.array_size),
                                   config=config)
        compile_s = time.perf_counter() - start
        arrays = random_inputs(env, list(env), seed=0)
        _, figures = run_and_compare(compiled.lowered, program.body, arrays, "rtl")
        hand_text, _ = hand(config)
        hand_cycles = run_program(config, assemble(hand_text, config).words, b"").cycles
        rows.append({"workload": name, "compile s": round(compile_s, 3),
                     "instructions": figures["instructions"], "host steps": figures["host_steps"],
                     "predicted": figures["predicted_cycles"], "cycles": figures["cycles"],
                     "ideal": figures["ideal_cycles"], "efficiency": figures["efficiency"],
                     "hand cycles": hand_cycles,
                     "vs hand": round(figures["cycles"] / hand_cycles, 4),
                     "match": figures["match"]})
    return rows

