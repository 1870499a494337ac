"""Network-sized programs through the whole compiler on the RTL (N = 16): ResNet-18's basic
blocks, its stem's max pool and its global pool, an attention product, a 512³ GEMM and a GEMM of
more than 100 000 instructions; and what the 64 MiB DRAM costs the Verilator build.

Each program is compiled (timed), run on the RTL and compared bit for bit with its independently
computed output (scripts/corpus_layers.py and reference_numerics.py, never glc's interpreter):
`host steps` counts what ran in numpy, `cycles` are the RTL's and must equal `predicted`, the
cycle model's. `ideal` sums each kernel's compute limit: ⌈M·K·Nₒ/N²⌉ for the array, ⌈outputs ·
folded rows / N⌉ for the vector unit; `limit` each kernel's roofline limit (glc/cost/limit.py).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from corpus_layers import (  # noqa: E402
    attention_qkt_int8,
    global_avgpool_7_int8,
    int8,
    maxpool3x3s2_112_int8,
    resnet_block_28_int8,
    resnet_block_56_int8,
)
from reference_numerics import matmul  # noqa: E402

from glc.compiler import compile_program  # noqa: E402
from glc.cost.limit import efficiency  # noqa: E402
from glc.hwconfig import load_config  # noqa: E402
from glc.inputs import load  # noqa: E402
from glc.lower.execute import execute  # noqa: E402
from glc.report import kernel_limits, limit_figures  # noqa: E402
from glc.rewrites import DEFAULT, select  # noqa: E402
from glc.sim.build import build  # noqa: E402
from glc.sim.run import design  # noqa: E402

SECTION = "networks"
TITLE = "Network-sized programs, compiled and run on the RTL (N = 16), and the n16 build"

GEMM = """(compute dot-product
 (access-cartesian-product
  (access (access-tensor a) 1)
  (access (access-transpose (access-tensor b) (list 1 0)) 1)))
"""


def efficiencies(rows: list[dict]) -> list[tuple[str, float | None, float | None]]:
    """What ``scripts/bench.py --plot`` draws of this section: each workload's efficiency
    against the compute ideal and the roofline limit (not the build's row)."""
    return [(r["workload"], r.get("efficiency"), r["eff(limit)"]) for r in rows
            if r.get("eff(limit)") is not None]


def gemm(size: int):
    """A size³ int8 GEMM in Glenside's matmul idiom, int32 result (numpy's einsum expects)."""
    def make(rng):
        a, b = int8(rng, size, size), int8(rng, size, size)
        return dict(body=GEMM, inputs={"a": a, "b": b}, output=matmul(a, b))
    return make


WORKLOADS = [
    ("resnet-block-56-int8", resnet_block_56_int8),
    ("resnet-block-28-int8", resnet_block_28_int8),
    ("maxpool3x3s2-112-int8", maxpool3x3s2_112_int8),
    ("global-avgpool-7-int8", global_avgpool_7_int8),
    ("attention-qkt-int8", attention_qkt_int8),
    ("gemm 512^3", gemm(512)),
    ("gemm 1024^3", gemm(1024)),
]


def run() -> list[dict]:
    """The n16 build's time and peak memory (first: the peak is over every child process so
    far), then one row per workload."""
    config = load_config("n16")
    rows = [_build_figures()]
    build(design(config))  # the cached build the runs use, outside their timings
    with tempfile.TemporaryDirectory() as scratch:
        for seed, (name, make) in enumerate(WORKLOADS, 200):
            folder = Path(scratch) / name.replace(" ", "-").replace("^", "")
            made = make(np.random.default_rng(seed))
            _write(folder, made)
            rows.append(_measure(name, folder, made["output"], config))
    return rows


def _write(folder: Path, made: dict) -> None:
    folder.mkdir(parents=True)
    declarations = "".join(f"(input {s} (shape {' '.join(map(str, a.shape))}) {a.dtype})\n"
                           for s, a in made["inputs"].items())
    (folder / f"{folder.name}.gls").write_text(declarations + made["body"])
    for symbol, array in made["inputs"].items():
        np.save(folder / f"{symbol}.npy", array)


def compile_timed(folder: Path, config):
    """The program folder loaded and compiled for ``config`` with the default rules: the
    bundle, the lowered program and the compile seconds."""
    bundle = load(folder)
    start = time.perf_counter()
    compiled = compile_program(bundle, rules=select(DEFAULT, config.array_size), config=config)
    return bundle, compiled.lowered, time.perf_counter() - start


def _measure(name: str, folder: Path, expected: np.ndarray, config) -> dict:
    bundle, program, seconds = compile_timed(folder, config)
    figures = program.figures()
    start = time.perf_counter()
    outcome = execute(program, bundle.arrays, "rtl")
    simulated = time.perf_counter() - start
    limits = limit_figures(kernel_limits(program), outcome.cycles)
    return {"workload": name, "compile s": round(seconds, 2),
            "instructions": figures["instructions"], "host steps": figures["host_steps"],
            "predicted": figures["predicted_cycles"], "cycles": outcome.cycles,
            "ideal": figures["ideal_cycles"],
            "efficiency": efficiency(figures["ideal_cycles"], outcome.cycles),
            "limit": limits["roofline_cycles"],
            "eff(limit)": limits["roofline_efficiency"],
            "match": bool(np.array_equal(outcome.result, expected)),
            "wall s (RTL)": round(simulated, 1),
            "cycles/s": round(outcome.cycles / max(simulated, 1e-9))}


def _build_figures() -> dict:
    """A cold Verilator build of n16 (64 MiB DRAM) in a fresh build folder: seconds and the
    peak resident memory of the build's processes."""
    with tempfile.TemporaryDirectory() as scratch:
        code = ("from glc.hwconfig import load_config; from glc.sim.build import build; "
                "from glc.sim.run import design; build(design(load_config('n16')))")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                       env={**os.environ, "GLC_SIM_BUILD": scratch})
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    return {"workload": "n16 cold Verilator build (64 MiB DRAM)", "wall s (RTL)": round(seconds, 1),
            "peak RSS MiB": peak}

