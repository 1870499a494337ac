"""The synthesis baseline (hw/baselines/synth.json): per FPGA configuration, the Fmax and
resources last recorded on the LFE5U-85F, the Fmax the best of the place-and-route seeds it
records (``seeds``; an entry without them was seed 1's alone). A hardware regression is a
design that no longer fits or whose best Fmax over SEEDS falls more than FMAX_TOLERANCE below
the recorded one, caught like a cycle regression (tests/synth, scripts/bench.py --only
synth)."""

from __future__ import annotations

import json
from pathlib import Path

from glc.synth.flow import SynthReport

BASELINE = Path(__file__).resolve().parents[2] / "hw" / "baselines" / "synth.json"
# How far below the recorded Fmax a new run may land: the best of three seeds still varies by a
# few per cent where one seed's Fmax varies by 12 % (24.9–28.2 MHz on one ecp5n8 netlist).
FMAX_TOLERANCE = 0.05
# The placement seeds a regression run places and routes with, the best Fmax counted.
SEEDS = (1, 2, 3)


def load_baseline(path: Path = BASELINE) -> dict[str, dict]:
    """The recorded figures, by configuration name (empty when none are recorded)."""
    return json.loads(path.read_text()) if path.exists() else {}


def check_baseline(report: SynthReport, recorded: dict) -> list[str]:
    """What regressed in ``report`` against ``recorded`` (an entry of the baseline): one line per
    problem, none when the design fits and keeps its Fmax."""
    problems = [f"{key}: {report.used[key]} used, the device has {report.available[key]}"
                for key in report.used if report.used[key] > report.available[key]]
    floor = recorded["fmax_mhz"] * (1 - FMAX_TOLERANCE)
    if report.fmax_mhz is None or report.fmax_mhz < floor:
        problems.append(f"Fmax {report.fmax_mhz} MHz is below {floor:.1f} MHz "
                        f"(recorded {recorded['fmax_mhz']} MHz, -{FMAX_TOLERANCE:.0%})")
    return problems


def record(report: SynthReport, path: Path = BASELINE) -> None:
    """Store ``report``'s Fmax and resources as the baseline of its configuration."""
    data = load_baseline(path)
    data[report.config] = {"fmax_mhz": report.fmax_mhz, "seeds": list(report.fmax_by_seed),
                           **report.used}
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
