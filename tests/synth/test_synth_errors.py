"""What `glc synth` says when nextpnr does not finish (no tools needed): its last ERROR line, or,
when it wrote none (stopped from outside or by the time limit, e.g. while routing a congested
design), how it ended, the stage the log had reached and router2's progress."""

import sys
import time
from pathlib import Path

import pytest

from glc.errors import GlcError
from glc.synth import flow
from glc.synth.flow import SynthReport, pnr_failure, router_progress

DATA = Path(__file__).parent / "data" / "paths"  # a small design's run (test_synth_paths.py)

LOG = """Info: Packing IOs..
Info: Running main analytical placer, max placement attempts per cell = 100.
Info: Running simulated annealing placer for refinement.
Info: Routing globals...
Info: Running router2...
Info:     iter=7 wires=782128 overused=18840 overuse=19396 archfail=NA
"""


def test_a_run_stopped_while_routing_says_so():
    assert pnr_failure(LOG, -15) == \
        "nextpnr was stopped by signal 15 during routing, before writing its report; " \
        "router2's overused wires by iteration: 18840 (1 iteration)"


def test_router2_progress_is_read_from_its_iteration_lines():
    log = LOG.replace("iter=7", "iter=1") + "".join(
        f"Info:     iter={i} wires=800000 overused={n} overuse={n + 9} archfail=NA\n"
        for i, n in enumerate((15000, 12000, 11000, 10500, 10400, 10300), 2))
    assert router_progress(log) == [18840, 15000, 12000, 11000, 10500, 10400, 10300]
    assert pnr_failure(log, None, 90).endswith(
        "router2's overused wires by iteration: 18840 → 15000 → 12000 → … → 10400 → 10300 "
        "(7 iterations)")
    assert pnr_failure(log, None, 90).startswith(
        "nextpnr did not finish in 90 minutes (--pnr-minutes) during routing")


def test_nextpnr_is_stopped_at_the_time_limit(tmp_path, monkeypatch):
    """A stand-in for nextpnr that logs one router2 iteration and then never finishes: the run
    is stopped at the limit and the error says how far it got."""
    tool = tmp_path / "nextpnr"
    tool.write_text(f"#!{sys.executable}\n"
                    "import sys, time\n"
                    f"open(sys.argv[sys.argv.index('--log') + 1], 'w').write({LOG!r})\n"
                    "time.sleep(600)\n")
    tool.chmod(0o755)
    monkeypatch.setattr(flow, "require_tool", lambda name: str(tool))
    report = SynthReport(config="x", target="ecp5-85f", used={})
    start = time.monotonic()
    with pytest.raises(GlcError, match=r"seed 1: nextpnr did not finish in 0.02 minutes .* "
                                       r"during routing.*overused wires by iteration: 18840"):
        flow._place_and_route(report, tmp_path, (1,), "static", "router2", 0.02)
    assert time.monotonic() - start < 30


def test_the_fmax_is_the_best_seeds_and_each_seeds_is_kept(tmp_path, monkeypatch):
    """A stand-in for nextpnr whose Fmax and LUT count follow its seed (seed 2 the fastest):
    one run per seed, each with its own log and report; the report's Fmax is seed 2's, its
    LUTs those of seed 2's placement, each seed's Fmax listed."""
    tool = tmp_path / "nextpnr"
    tool.write_text(f"#!{sys.executable}\n"
                    "import json, sys\n"
                    "arg = lambda name: sys.argv[sys.argv.index(name) + 1]\n"
                    "seed = int(arg('--seed'))\n"
                    "open(arg('--log'), 'w').write('Info: Routing\\n')\n"
                    "fmax = {1: 24.94, 2: 28.21, 3: 27.1}[seed]\n"
                    "json.dump({'fmax': {'clk': {'achieved': fmax, 'constraint': 12.0}},\n"
                    "           'utilization': {'TRELLIS_COMB': {'used': 45000 + seed,\n"
                    "                                            'available': 83640}}},\n"
                    "          open(arg('--report'), 'w'))\n"
                    # The worst paths are read from an SDF and a routed netlist: a real run's.
                    "import gzip\n"
                    f"data = {str(DATA)!r}\n"
                    "for name, out in (('routed.sdf', '--sdf'), ('routed.json', '--write')):\n"
                    "    open(arg(out), 'wb').write(gzip.decompress(\n"
                    "        open(f'{data}/{name}.gz', 'rb').read()))\n")
    tool.chmod(0o755)
    monkeypatch.setattr(flow, "require_tool", lambda name: str(tool))
    report = SynthReport(config="x", target="ecp5-85f", used={"lut": 1})
    flow._place_and_route(report, tmp_path, (1, 2, 3), "static", "router1", 1)
    assert report.fmax_by_seed == {1: 24.9, 2: 28.2, 3: 27.1}
    assert report.fmax_mhz == 28.2
    assert report.used["lut"] == 45002
    assert sorted(p.name for p in tmp_path.glob("pnr-seed*")) == sorted(
        f"pnr-seed{seed}{ext}" for seed in (1, 2, 3)
        for ext in (".json", ".log", ".sdf", "-routed.json"))
    assert "the best of seeds 1: 24.9, 2: 28.2, 3: 27.1" in flow.format_report(
        SynthReport(config="x", target="ecp5-85f", used={"lut": 1, "ff": 1, "dsp": 1, "bram": 1},
                    fmax_mhz=28.2, fmax_by_seed=report.fmax_by_seed))


def test_a_run_that_fails_in_placement_names_its_stage():
    placing = LOG.split("Info: Routing")[0]
    assert pnr_failure(placing, 1) == \
        "nextpnr exited with status 1 during placement, before writing its report"


def test_an_error_line_is_the_message():
    assert pnr_failure(LOG + "ERROR: Failed to route net 'x'\n", 1) == \
        "nextpnr failed: ERROR: Failed to route net 'x'"
