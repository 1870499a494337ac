"""The RTL in Verilator: measured cycles, efficiency and simulation speed of the reference GEMM
and im2col conv2d schedules (glc/isa/gemm.py), each checked against the ISA simulator.

`efficiency` is ceil(M·K·Nₒ / N²) / measured cycles (docs/isa.md, "Counters"), `eff(limit)` the
roofline limit (glc/cost/limit.py) / measured cycles; `vs model` is the
measured cycles against the cycle model's prediction (held to 5 %). `cycles/s` is the model's
own speed from reset to `done`; `wall s` adds the simulator's start-up and the DRAM image files.
Builds are cached under build/sim (the first run compiles each configuration).
"""

from __future__ import annotations

import numpy as np

from benchmarks.isa import limit, schedule
from glc.hwconfig import load_config
from glc.isa import simulator
from glc.isa.asm import assemble
from glc.sim.build import build
from glc.sim.run import design, run_program

SECTION = "rtl"
TITLE = "RTL under Verilator: measured cycles, efficiency and simulated cycles per second"

WORKLOADS = [
    # (config, kind, sizes, output); gemm sizes M, K, Nout; conv sizes H, W, C, OC (3x3, pad 1)
    ("n16", "gemm", (256, 256, 256), "int8"),
    ("n16", "gemm", (256, 256, 256), "int32"),
    ("n16", "conv2d 3x3 pad 1 NHWC", (32, 32, 64, 64), "int8"),
    ("n4", "gemm", (64, 32, 32), "int8"),
]


def run() -> list[dict]:
    """One row per workload, run on the RTL with seeded random operands."""
    rows = []
    for name, kind, sizes, output in WORKLOADS:
        config = load_config(name)
        build(design(config))  # compile outside the timed runs
        text, layout, ideal = schedule(kind, sizes, output, config)
        program = assemble(text, config)
        words = program.words
        bound = limit(program.instructions(), ideal, config)
        dram = np.zeros(config.dram_bytes, dtype=np.uint8)
        dram[layout.a:layout.c] = np.random.default_rng(0).integers(
            0, 256, layout.c - layout.a, dtype=np.uint8)
        model = simulator.run(words, config, dram)
        rtl = run_program(config, words, dram, max_cycles=4 * model.counters.cycles + 10_000)
        rows.append({
            "workload": f"{kind} {'x'.join(map(str, sizes))} -> {output}",
            "N": config.array_size,
            "cycles": rtl.cycles,
            "ideal": ideal,
            "efficiency": ideal / rtl.cycles,
            "limit": bound,
            "eff(limit)": bound / rtl.cycles,
            "vs model": f"{rtl.cycles / model.counters.cycles - 1:+.2%}",
            "DRAM = ISA sim": bool(not rtl.error and np.array_equal(rtl.dram, model.dram)),
            "sim s": round(rtl.run_seconds, 3),
            "cycles/s": round(rtl.cycles / rtl.run_seconds),
            "wall s": round(rtl.seconds, 3),
        })
    return rows
