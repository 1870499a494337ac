"""Imported networks (`glc import`, docs/onnx.md): zoo models (glc/onnx/zoo.py: the onnx wheel's
light architectures with seeded weights, quantized by onnxruntime, int8 QDQ). First every zoo
model at a reduced resolution through the interpreter; then some through the whole compiler on the
ISA simulator, ResNet-50 up to 224×224. Each row: the seconds to make + import (onnxruntime
quantizes and computes output.npy), to interpret, or to compile (saturate, extract, lower) and run
the kernels on the ISA simulator with the host steps in numpy; the distinct nodes of the program;
whether the result equals onnxruntime's output.npy bit for bit.

The imported ResNet-50 at 224×224 needs 69 MB of DRAM (weights, multipliers, every activation
and its padded copy, instructions), past n16's 64 MiB: it runs on n16 with 128 MiB of DRAM (the
ISA's 32-bit DRAM addresses reach 4 GiB).
"""

from __future__ import annotations

import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np

from glc.compiler import compile_program
from glc.hwconfig import CONFIG_DIR, load_config
from glc.inputs import load
from glc.interp import interpret
from glc.ir.term import dag_size
from glc.lower.execute import execute
from glc.onnx.importer import import_model
from glc.onnx.zoo import make
from glc.rewrites import DEFAULT, select

SECTION = "onnx"
TITLE = "Imported ONNX networks, compiled and run on the ISA simulator (N = 16)"

# (model, resolution): the smallest resolution each runs at (VGG-19 at 64 has a conv whose
# cartesian product passes the interpreter's tensor limit; Inception v2's shapes need 128)
ZOO = [("bvlc_alexnet", 64), ("densenet121", 64), ("inception_v1", 64), ("inception_v2", 128),
       ("resnet50", 64), ("shufflenet", 64), ("squeezenet", 64), ("vgg19", 32), ("zfnet512", 64)]

# (model, resolution, DRAM bytes: None for n16's own)
NETWORKS = [
    ("squeezenet", 32, None),
    ("resnet50", 32, None),
    ("resnet50", 64, None),
    ("resnet50", 224, 128 << 20),
]


def run() -> list[dict]:
    """One row per network."""
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, resolution in ZOO:
            rows.append(_interpreted(Path(scratch), name, resolution))
        for name, resolution, dram in NETWORKS:
            rows.append(_measure(Path(scratch), name, resolution, dram))
    return rows


def _imported(scratch: Path, name: str, resolution: int):
    """The zoo model imported; its folder and the seconds taken."""
    start = time.perf_counter()
    model = make(name, scratch / f"{name}{resolution}.onnx", resolution=resolution)
    imported = import_model(model, scratch / f"{name}{resolution}")
    return imported, time.perf_counter() - start


def _interpreted(scratch: Path, name: str, resolution: int) -> dict:
    imported, seconds = _imported(scratch, name, resolution)
    bundle = load(imported.folder)
    start = time.perf_counter()
    result, _ = interpret(bundle.program.body, bundle.arrays)
    return {"network": f"{name} {resolution}x{resolution}", "config": "interpreter",
            "make+import s": round(seconds, 1), "nodes": dag_size(bundle.program.body),
            "run s": round(time.perf_counter() - start, 1),
            "host steps": len(imported.host_ops),
            "bit-exact": bool(np.array_equal(result, bundle.expected))}


def _config(scratch: Path, dram: int | None):
    """n16, or n16 with ``dram`` bytes of DRAM (a TOML written into ``scratch``)."""
    if dram is None:
        return load_config("n16")
    values = tomllib.loads((CONFIG_DIR / "n16.toml").read_text())
    values["dram_bytes"] = dram
    path = scratch / f"n16-dram{dram >> 20}.toml"
    path.write_text("".join(f"{key} = {value}\n" for key, value in values.items()))
    return load_config(path)


def _measure(scratch: Path, name: str, resolution: int, dram: int | None) -> dict:
    imported, seconds = _imported(scratch, f"{name}", resolution)
    folder = imported.folder
    config = _config(scratch, dram)
    bundle = load(folder)
    start = time.perf_counter()
    compiled = compile_program(bundle, rules=select(DEFAULT, config.array_size), config=config)
    compile_seconds = time.perf_counter() - start
    figures = compiled.lowered.figures()
    start = time.perf_counter()
    outcome = execute(compiled.lowered, bundle.arrays, "isa")
    run_seconds = time.perf_counter() - start
    return {"network": f"{name} {resolution}x{resolution}", "config": config.name,
            "make+import s": round(seconds, 1), "nodes": dag_size(bundle.program.body),
            "compile s": round(compile_seconds, 1), "run s": round(run_seconds, 1),
            "kernels": figures["kernels"], "host steps": figures["host_steps"],
            "cycles": outcome.cycles, "ideal": figures["ideal_cycles"],
            "efficiency": round(figures["ideal_cycles"] / max(outcome.cycles, 1), 4),
            "bit-exact": bool(np.array_equal(outcome.result, bundle.expected))}
