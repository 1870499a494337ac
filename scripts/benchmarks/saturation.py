"""Section ``saturation``: equality saturation with the whole rule table (``--rules all``), the
e-graph's growth rate, semi-naive matching against full searches in the same run.

Every ``programs/`` kernel, saturated with every rule set for a 16 x 16 array under the
compiler's default limits (30 iterations, 50 000 e-nodes, 10 s): e-nodes reached, why it
stopped, wall seconds and e-nodes per second, once with semi-naive matching (the runner's
default: a rule searches only around the classes changed since its last search) and once with a
full search of every rule every iteration (``incremental=False``), and the ratio of the rates.
Runs that stop at the time limit reach different sizes; the rate compares them.
"""

from __future__ import annotations

from pathlib import Path

from glc.egraph.egraph import EGraph
from glc.egraph.runner import Runner
from glc.inputs import load
from glc.rewrites import select

SECTION = "saturation"
TITLE = "the whole rule table, semi-naive against full matching"
PROGRAMS = Path(__file__).resolve().parents[2] / "programs"


def _saturate(bundle, incremental: bool) -> tuple[int, str, float]:
    eg = EGraph(bundle.env)
    eg.add_term(bundle.program.body)
    report = Runner(select("all", 16), incremental=incremental).run(eg)
    return report.enodes, report.stop_reason, report.seconds


def run() -> list[dict]:
    rows = []
    for folder in sorted(p for p in PROGRAMS.iterdir() if p.is_dir()):
        bundle = load(folder)
        fast = _saturate(bundle, incremental=True)
        full = _saturate(bundle, incremental=False)
        rate = [n / max(s, 1e-9) for n, _, s in (fast, full)]
        rows.append({"program": folder.name, "enodes": fast[0], "stop": fast[1],
                     "seconds": round(fast[2], 3), "enodes_per_s": round(rate[0]),
                     "full_enodes": full[0], "full_stop": full[1],
                     "full_seconds": round(full[2], 3), "full_enodes_per_s": round(rate[1]),
                     "rate_ratio": round(rate[0] / max(rate[1], 1e-9), 2)})
    return rows
