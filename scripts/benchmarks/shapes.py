"""Layers of random shapes nobody tuned for (N = 16): the layer suite's measures (efficiency
against the roofline limit, the analytic model's error against the instruction-level model, the
estimates and the longest, compile seconds) on convolutions and GEMMs drawn from a seeded
distribution over what networks use — channels and filters 8–512 (log-uniform; 3 channels, an
image's colours, one conv in ten), images 5–64 pixels a side, windows 1×1 to 7×7, strides 1 and
2, padding none or "same", depthwise one conv in eight; GEMMs of 1–512 rows, K 16–2048, 16–2048
columns — in a layout drawn from the layer's, capped at 60 M MACs so a row compiles in seconds.
Every row runs on the ISA simulator, or with ``--rtl`` those of fewer than RTL_MACS MACs on
the Verilator RTL: its result against the independently computed output, its cycles against
the prediction.

The headline rows: the MAC-weighted efficiency, the worst non-depthwise row, the largest
model error, and how many rows ran at the model's cycles and matched. The draw is fixed
(SEED): a change to the compiler is measured on the same shapes.
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from layer_suite import Conv, Gemm, program_name, write  # noqa: E402

from benchmarks.layers import _Costing, measure  # noqa: E402
from glc.hwconfig import load_config  # noqa: E402

SECTION = "shapes"
TITLE = "layers of random shapes (N = 16): efficiency, model error, costing"
CONFIG = "n16"
SEED, COUNT = 20261205, 40
MAX_MACS = 60_000_000
RTL_MACS = 4_000_000


def _log_uniform(rng: np.random.Generator, low: int, high: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))


def draw(rng: np.random.Generator) -> Conv | Gemm:
    """One layer from the distribution above (redrawn until it is within MAX_MACS)."""
    while True:
        if rng.random() < 0.3:
            m, k, n = (_log_uniform(rng, 1, 512), _log_uniform(rng, 16, 2048),
                       _log_uniform(rng, 16, 2048))
            layer = Gemm(f"{m}x{k}x{n}", "random", m, k, n, raw=bool(rng.random() < 0.2))
        else:
            kernel = int(rng.choice([1, 3, 3, 5, 7]))
            stride = int(rng.choice([1, 1, 2]))
            size = int(rng.integers(max(5, kernel), 65))
            pad = int(rng.choice([0, kernel // 2]))
            depthwise = kernel > 1 and rng.random() < 0.125
            channels = 3 if rng.random() < 0.1 else _log_uniform(rng, 8, 512)
            filters = channels if depthwise else _log_uniform(rng, 8, 512)
            kind = "dw " if depthwise else ""
            layer = Conv(f"{kind}{kernel}x{kernel}/{stride} {channels}->{filters} @{size} "
                         f"pad {pad}", "random", channels, filters, size, kernel, stride, pad,
                         relu=bool(rng.random() < 0.7), depthwise=depthwise)
        if layer.macs <= MAX_MACS:
            return layer


def layers(seed: int = SEED, count: int = COUNT) -> list[tuple[Conv | Gemm, str]]:
    """The draw of ``seed``: ``count`` (layer, layout) rows (the recorded one by default)."""
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(count):
        layer = draw(rng)
        found.append((layer, str(rng.choice(layer.layouts))))
    return found


def run(rtl: bool = False, seed: int = SEED, count: int = COUNT) -> list[dict]:
    """One row per layer of the draw (``--seed``/``--count``: another draw, a sweep over
    shapes the recorded figures have not seen), then the headline rows."""
    config = load_config(CONFIG)
    found = []
    with _Costing() as costing, tempfile.TemporaryDirectory() as scratch:
        for data_seed, (layer, layout) in enumerate(layers(seed, count), 700):
            folder = Path(scratch) / program_name(layer, layout)
            made = write(folder, layer, layout, np.random.default_rng(data_seed))
            before = len(costing.times)
            row = measure(layer, layout, folder, made["output"], config,
                          "rtl" if rtl and layer.macs < RTL_MACS else "isa")
            row["estimates"] = len(costing.times) - before
            row["costing ms"] = round(1000 * max(costing.times[before:], default=0), 1)
            del row["network"]
            found.append(row)
            print(f"shapes: {row}", file=sys.stderr, flush=True)  # minutes: show progress
    return found + headline(found, costing, seed)


def headline(found: list[dict], costing: _Costing, seed: int = SEED) -> list[dict]:
    """MAC-weighted efficiency, compile and costing figures; the worst non-depthwise row; the
    largest model error; the RTL's agreement."""
    macs = sum(r["MACs"] for r in found)
    weighted = sum(r["MACs"] * r["eff(limit)"] for r in found) / macs
    plain = [r for r in found if not r["layer"].startswith("dw ")]
    worst = min(plain, key=lambda r: r["eff(limit)"])
    error = max(found, key=lambda r: abs(r["model err %"] or 0))
    ran = [r for r in found if "match" in r]
    on_rtl = [r for r in ran if "RTL cycles" in r]
    return [{"layer": f"MAC-weighted, {len(found)} rows of seed {seed}", "MACs": macs,
             "eff(limit)": round(weighted, 4),
             "compile s": round(sum(r["compile s"] for r in found), 1),
             "estimates": len(costing.times), "costing ms": costing.figures() or None},
            {"layer": f"worst non-depthwise: {worst['layer']}", "layout": worst["layout"],
             "eff(limit)": worst["eff(limit)"]},
            {"layer": f"largest model error: {error['layer']}", "layout": error["layout"],
             "model err %": error["model err %"]},
            {"layer": f"ran {len(ran)} rows, {len(on_rtl)} on the RTL: = model, match",
             "ISA = model": sum(bool(r.get("ISA = model")) for r in ran),
             "RTL = model": sum(bool(r.get("RTL = model")) for r in ran),
             "match": sum(bool(r["match"]) for r in ran)}]
