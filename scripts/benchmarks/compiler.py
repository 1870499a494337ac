"""The architecture's workloads through the whole compiler: the corpus programs gemm256-int8 and
conv2d-nhwc64-int8 parsed, saturated, extracted, lowered, run on the RTL and compared with the
interpreter — against the hand-scheduled program of the same product and output (glc/isa/gemm.py)
measured in the same run.

`efficiency` is ceil(M·K·Nₒ / N²) / measured cycles, `eff(limit)` the roofline limit
(glc/cost/limit.py) / measured cycles; `vs hand` is the compiled program's cycles
over the hand schedule's (1.0 = the compiler loses nothing to the hand-written program).
"""

from __future__ import annotations

import time
from pathlib import Path

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.isa.asm import assemble
from glc.isa.gemm import conv2d_program, gemm_program
from glc.rewrites import DEFAULT, select
from glc.run import run_and_compare
from glc.sim.build import build
from glc.sim.run import design, run_program

SECTION = "compiler"
TITLE = "whole-compiler workloads on the RTL (N = 16), against hand-scheduled programs"

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"

# (corpus program, the hand schedule of the same product with the same output)
WORKLOADS = [
    ("gemm256-int8", lambda c: gemm_program(256, 256, 256, c, raw=True)),
    ("conv2d-nhwc64-int8", lambda c: conv2d_program(32, 32, 64, 64, c, relu=True, shift=12)),
]


def run() -> list[dict]:
    """One row per workload: compile time, the compiled program on the RTL, the hand schedule."""
    config = load_config("n16")
    build(design(config))  # compile the model outside the timed runs
    rows = []
    for name, hand in WORKLOADS:
        bundle = load(PROGRAMS / name)
        start = time.perf_counter()
        compiled = compile_program(bundle, rules=select(DEFAULT, config.array_size),
                                   config=config)
        compile_s = time.perf_counter() - start
        _, figures = run_and_compare(compiled.lowered, bundle.program.body, bundle.arrays, "rtl",
                                     bundle.expected)
        hand_text, _ = hand(config)
        hand_cycles = run_program(config, assemble(hand_text, config).words, b"").cycles
        rows.append({"workload": name, "compile s": round(compile_s, 3),
                     "instructions": figures["instructions"], "host steps": figures["host_steps"],
                     "predicted": figures["predicted_cycles"], "cycles": figures["cycles"],
                     "ideal": figures["ideal_cycles"], "efficiency": figures["efficiency"],
                     "limit": figures["roofline_cycles"],
                     "eff(limit)": figures["roofline_efficiency"],
                     "hand cycles": hand_cycles,
                     "vs hand": round(figures["cycles"] / hand_cycles, 4),
                     "match": figures["match"]})
    return rows
