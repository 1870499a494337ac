"""Imported networks (`glc import`, docs/onnx.md): zoo models (glc/onnx/zoo.py: the onnx wheel's
light architectures with seeded weights, quantized by onnxruntime). First every zoo model (QDQ,
int8 activations, then uint8 ones with per-channel weights) at a reduced resolution through the
interpreter; then networks through the whole compiler,
run on the ISA simulator or the n16 RTL, ResNet-50 and SqueezeNet (uint8 activations, per-channel
weights: every conv an integer QLinearConv in onnxruntime, so its output is exact on any CPU) up
to 224×224.
Each row: the seconds to make + import (onnxruntime quantizes and computes output.npy), to
interpret, or to compile (saturate, extract, lower) and to run; the distinct nodes of the
program; kernels and host steps; cycles against the compute ideal and the roofline limit
(glc/cost/limit.py); simulated cycles per second on the RTL; whether the result equals
onnxruntime's output.npy bit for bit.

The imported ResNet-50 at 224×224 runs on n16 as it is: the memory plan reuses a buffer once its
last reader has run, and an instruction image ends where the DRAM above the live tensors is full
(two images; docs/lowering.md).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.interp import interpret
from glc.ir.term import dag_size
from glc.lower.execute import execute
from glc.onnx.importer import import_model
from glc.onnx.zoo import make
from glc.report import kernel_limits, limit_figures
from glc.rewrites import DEFAULT, select

SECTION = "onnx"
TITLE = "Imported ONNX networks, compiled and run on the ISA simulator or the RTL (N = 16)"

# (model, resolution): the smallest resolution each runs at (VGG-19 at 64 has a conv whose
# cartesian product passes the interpreter's tensor limit; Inception v2's shapes need 128)
ZOO = [("bvlc_alexnet", 64), ("densenet121", 64), ("inception_v1", 64), ("inception_v2", 128),
       ("resnet50", 64), ("shufflenet", 64), ("squeezenet", 64), ("vgg19", 32), ("zfnet512", 64)]

UINT8 = {"activations": "uint8", "per_channel": True}

# (model, resolution, quantization options, engine), each on n16
NETWORKS = [
    ("squeezenet", 32, {}, "isa"),
    ("resnet50", 32, UINT8, "rtl"),
    ("resnet50", 224, UINT8, "rtl"),
    ("squeezenet", 224, UINT8, "rtl"),
]


def efficiencies(rows: list[dict]) -> list[tuple[str, float | None, float | None]]:
    """What ``scripts/bench.py --plot`` draws of this section: each network run on the machine,
    its efficiency against the compute ideal and the roofline limit (not the interpreter's
    rows)."""
    return [(f"{r['network']} ({r['engine']})", r.get("efficiency"), r["vs roofline"])
            for r in rows if r.get("vs roofline") is not None]


def run() -> list[dict]:
    """One row per network."""
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for options in ({}, UINT8):
            for name, resolution in ZOO:
                rows.append(_interpreted(Path(scratch), name, resolution, options))
        for name, resolution, options, engine in NETWORKS:
            rows.append(_measure(Path(scratch), name, resolution, options, engine))
    return rows


def _imported(scratch: Path, name: str, resolution: int, options: dict | None = None):
    """The zoo model imported; its folder and the seconds taken."""
    start = time.perf_counter()
    model = make(name, scratch / f"{name}{resolution}.onnx", resolution=resolution,
                 **(options or {}))
    imported = import_model(model, scratch / f"{name}{resolution}")
    return imported, time.perf_counter() - start


def _interpreted(scratch: Path, name: str, resolution: int, options: dict) -> dict:
    imported, seconds = _imported(scratch, name, resolution, options)
    bundle = load(imported.folder)
    start = time.perf_counter()
    result, _ = interpret(bundle.program.body, bundle.arrays)
    form = "uint8 per-channel" if options else "int8"
    return {"network": f"{name} {resolution}x{resolution} ({form})", "config": "interpreter",
            "make+import s": round(seconds, 1), "nodes": dag_size(bundle.program.body),
            "run s": round(time.perf_counter() - start, 1),
            "host steps": len(imported.host_ops),
            "bit-exact": bool(np.array_equal(result, bundle.expected))}


def _measure(scratch: Path, name: str, resolution: int, options: dict, engine: str) -> dict:
    imported, seconds = _imported(scratch, name, resolution, options)
    folder = imported.folder
    config = load_config("n16")
    bundle = load(folder)
    start = time.perf_counter()
    compiled = compile_program(bundle, rules=select(DEFAULT, config.array_size), config=config)
    compile_seconds = time.perf_counter() - start
    figures = compiled.lowered.figures()
    limits = limit_figures(kernel_limits(compiled.lowered), figures["predicted_cycles"])
    start = time.perf_counter()
    outcome = execute(compiled.lowered, bundle.arrays, engine)
    run_seconds = time.perf_counter() - start
    form = "uint8 per-channel" if options else "int8"
    return {"network": f"{name} {resolution}x{resolution} ({form})",
            "config": config.name, "make+import s": round(seconds, 1),
            "nodes": dag_size(bundle.program.body),
            "compile s": round(compile_seconds, 1), "engine": engine,
            "run s": round(run_seconds, 1), "kernels": figures["kernels"],
            "host steps": f"{figures['host_steps']}: " + ", ".join(
                sorted({h.split(": ")[1] for h in figures["host"]})) if figures["host"] else "0",
            "cycles": outcome.cycles, "= model": outcome.cycles == figures["predicted_cycles"],
            "compute ideal": figures["ideal_cycles"],
            "roofline limit": limits["roofline_cycles"],
            "efficiency": round(figures["ideal_cycles"] / max(outcome.cycles, 1), 4),
            "vs roofline": round(limits["roofline_cycles"] / max(outcome.cycles, 1), 4),
            "cycles/s": round(outcome.cycles / run_seconds) if engine == "rtl" else "-",
            "bit-exact": bool(np.array_equal(outcome.result, bundle.expected))}
