"""The accelerator core through Yosys and nextpnr-ecp5 on a Lattice LFE5U-85F (glc synth):
resources, Fmax and tool times. What the recorded Fmax gives in GOPS and images per second (the
GEMM, the layer suite, ResNet-50 and MobileNetV2) is the throughput section's. Every
configuration with a recorded baseline (hw/baselines/synth.json) is checked against it: the
section fails when a design no longer fits, no longer routes or its Fmax — the best of
placement seeds 1, 2 and 3, as many at a time as there are cores — falls more than 5 % below
the recorded one. A configuration with no recorded entry gets this run's figures recorded
(delete its entry to re-record, with the reason in the commit); one that does not synthesize
or route gets a row saying why (nextpnr's stage and router2's progress: glc/synth/flow.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.synth.baseline import SEEDS, check_baseline, load_baseline, record
from glc.synth.flow import synthesize

SECTION = "synth"
TITLE = "synthesis and place-and-route on an LFE5U-85F (Yosys, nextpnr-ecp5)"

# n4: the small test array; ecp5n8 and ecp5n16: the 8x8 and 16x16 arrays sized for the device.
CONFIGS = ["n4", "ecp5n8", "ecp5n16"]
LABELS = {"lut": "LUTs", "ff": "FFs", "dsp": "DSPs", "bram": "BRAMs"}
BUILD = Path(__file__).resolve().parents[2] / "build" / "synth"


def run() -> list[dict]:
    """One row per configuration; exits with the regressions after the table is printed."""
    rows, problems = [], []
    baseline = load_baseline()
    for name in CONFIGS:
        config = load_config(name)
        try:
            report = synthesize(config, "ecp5-85f", BUILD / f"{name}-ecp5-85f", seeds=SEEDS)
        except GlcError as error:  # e.g. a design nextpnr cannot route in its time limit
            rows.append({"config": name, "N": config.array_size, "error": str(error)})
            if name in baseline:
                problems.append(f"{name}: {error}")
            continue
        fmax = report.fmax_mhz or 0.0
        rows.append({
            "config": name,
            "N": config.array_size,
            **{label: f"{report.used[key]} / {report.available[key]}"
               for key, label in LABELS.items()},
            "Fmax MHz": fmax,
            "Fmax by seed": " / ".join(str(f) for f in report.fmax_by_seed.values()),
            "synth s": report.synth_seconds,
            "P&R s": report.pnr_seconds,
            "log warnings": len(report.warnings),
        })
        if name in baseline:
            problems += [f"{name}: {line}" for line in check_baseline(report, baseline[name])]
        else:
            record(report)
        problems += [f"{name}: {line}" for line in report.warnings]
    if problems:
        print("\n".join([*map(str, rows), "synthesis regressions:", *problems]), file=sys.stderr)
        sys.exit(1)
    return rows

