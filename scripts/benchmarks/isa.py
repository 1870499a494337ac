"""The cycle model's prediction for the reference GEMM and im2col conv2d schedules
(glc/isa/gemm.py).

Predicted, not measured: the cycles the RTL is held to (within 5 %). `ideal` is
ceil(M·K·Nₒ / N²) (docs/isa.md, "Counters"), `limit` the roofline limit max(ideal, compulsory
DRAM bytes / port bytes) (glc/cost/limit.py), each with its efficiency. The last column is the
wall time of the ISA simulator executing the program bit-exactly (on zero inputs: the time does
not depend on them).
"""

from __future__ import annotations

import time

import numpy as np

from glc.cost.limit import array_ideal, compulsory_bytes, roofline
from glc.hwconfig import HwConfig, load_config
from glc.isa import simulator
from glc.isa.asm import assemble
from glc.isa.cycles import predict
from glc.isa.gemm import conv2d_program, gemm_program
from glc.isa.gemm_plan import GemmLayout

SECTION = "isa"
TITLE = "cycle model: predicted cycles of hand-scheduled int8 GEMMs and convolutions"

WORKLOADS = [
    # (config, kind, sizes, output); gemm sizes M, K, Nout; conv sizes H, W, C, OC (3x3, pad 1)
    ("n16", "gemm", (256, 256, 256), "int8"),
    ("n16", "gemm", (256, 256, 256), "int32"),
    ("n16", "gemm", (1024, 64, 64), "int8"),
    ("n16", "conv2d 3x3 pad 1 NHWC", (32, 32, 64, 64), "int8"),
    ("n4", "gemm", (64, 32, 32), "int8"),
]


def schedule(kind: str, sizes: tuple[int, ...], output: str,
             config: HwConfig) -> tuple[str, GemmLayout, int]:
    """A workload's hand schedule (glc/isa/gemm.py), its layout, and its ideal cycles
    ceil(M·K·Nₒ / N²); int8 output is requantized by 8."""
    raw = output == "int32"
    if kind == "gemm":
        m, k, n_out = sizes
        text, layout = gemm_program(m, k, n_out, config, raw=raw, shift=8)
    else:
        h, w, c, n_out = sizes
        m, k = h * w, 9 * c
        text, layout = conv2d_program(h, w, c, n_out, config, raw=raw, shift=8)
    return text, layout, array_ideal(m, k, n_out, config.array_size)


def limit(instructions, ideal: int, config: HwConfig) -> int:
    """The roofline limit of a hand-scheduled program: its transfers' compulsory bytes."""
    return roofline(ideal, compulsory_bytes(instructions), config.dram_port_bytes)


def run() -> list[dict]:
    """One row per workload: predicted cycles, ideal, efficiency and per-unit busy cycles."""
    rows = []
    for name, kind, sizes, output in WORKLOADS:
        config = load_config(name)
        text, layout, ideal = schedule(kind, sizes, output, config)
        program = assemble(text, config)
        counters = predict(program.instructions(), config).counters
        start = time.perf_counter()
        simulator.run(program.words, config, np.zeros(config.dram_bytes, dtype=np.uint8))
        simulated = time.perf_counter() - start
        rows.append({
            "workload": f"{kind} {'x'.join(map(str, sizes))} -> {output}",
            "N": config.array_size,
            "schedule": f"{layout.order}, Mb {layout.block_rows}",
            "instructions": len(program.words),
            "predicted cycles": counters.cycles,
            "ideal": ideal,
            "efficiency": ideal / counters.cycles,
            "limit": (bound := limit(program.instructions(), ideal, config)),
            "eff(limit)": bound / counters.cycles,
            "busy load": counters.busy_load,
            "busy exec": counters.busy_exec,
            "busy store": counters.busy_store,
            "token stalls (l/e/s)": f"{counters.stall_token_load}/{counters.stall_token_exec}/"
                                    f"{counters.stall_token_store}",
            "dram stalls (l/s)": f"{counters.stall_dram_load}/{counters.stall_dram_store}",
            "ISA simulator s": round(simulated, 3),
        })
    return rows
