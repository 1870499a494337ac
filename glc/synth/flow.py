"""Synthesis (Yosys) and, for the ECP5, place-and-route (nextpnr) of the accelerator core.

What is synthesized is ``accelerator`` (hw/accelerator.sv) and the modules under it: the DRAM
model, the simulation top and the cycle watchdog (hw/sim_*.sv, hw/dram_model.sv) are simulation
only. The core's ports (DRAM data and fetch ports, status, counters) are left unconnected to pins:
nextpnr places it out of context, as a block inside a larger FPGA design would be.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.sim.build import HW, design_sources
from glc.synth.paths import TimingPath, format_paths, netlist_paths, routed_paths
from glc.synth.tools import require_tool

TOP = "accelerator"
# The simulation-only files: they model what lies outside the chip.
SIM_ONLY = ("sim_top", "sim_system", "dram_model", "unit_trace")
TARGETS = ("ecp5-85f", "generic")
# nextpnr's routers: router1 (the recorded baselines'), router2 (for congested designs).
ROUTERS = ("router1", "router2")
# nextpnr's global placers (each refined by simulated annealing): heap (HeAP, analytical) and
# static (electrostatic).
PLACERS = ("heap", "static")
# The placer and router each configuration routes with (docs/benchmarks.md, "synth"): HeAP and
# router1 route n4, whose static placement router2 left with ~2 200 overused wires after 50
# iterations; ecp5n8 routes from the static placer (placed wirelength 320 k against HeAP's
# 446 k) with router1, in 15 minutes, where router2 came within 364 overused wires and then
# diverged, and HeAP's placement levelled off at 13 000. ecp5n16 is taken to be like ecp5n8.
PNR = {"ecp5n8": ("static", "router1"), "ecp5n16": ("static", "router1")}
DEFAULT_PNR = ("heap", "router1")
# nextpnr's wall-clock limit (minutes): router2 does not give up on a design it cannot route
# (ecp5n8's overused wires level off after five or six iterations, an hour here, and it goes
# on: docs/benchmarks.md); n4's whole run takes 10-50 minutes here.
PNR_MINUTES = 180
# The clock nextpnr places and routes for (MHz) unless told otherwise: the issue-39 target; without
# --freq nextpnr aims at 12 MHz, and a placement that aims low is not timing-driven where it
# matters.
TARGET_MHZ = 100.0
# The LFE5U-85F's resources (Lattice ECP5 family data sheet, FPGA-DS-02012, table 1.1): LUT4s and
# flip-flops (two of each per slice), 18x18 multipliers and 18 Kb block RAMs (EBR).
DEVICE = {"lut": 83_640, "ff": 83_640, "dsp": 156, "bram": 208}
# Yosys cell names counted as each resource on the ECP5.
ECP5_CELLS = {"lut": ("LUT4",), "dsp": ("MULT18X18D",), "bram": ("DP16KD",)}
# The generic target maps to Yosys's internal cell library (its techlibs/common/simcells.v):
# flip-flops (plain, enable, sync/async reset, set-reset, async load), latches, and the
# one-bit gates. Every cell must be one of these: a cell glc cannot classify is an error, as a
# flip-flop counted as nothing once reported 0 flip-flops for a design with ~161 k.
GENERIC_CELLS = {
    "ff": re.compile(r"\$_(FF|DFFE?|SDFFC?E?|DFFSRE?|ALDFFE?)_[NP01]*_"),
    "latch": re.compile(r"\$_(DLATCH|DLATCHSR|SR)_[NP01]*_"),
    "gate": re.compile(r"\$_(BUF|NOT|N?AND|N?OR|XN?OR|ANDNOT|ORNOT|N?MUX(4|8|16)?|AOI[34]|"
                       r"OAI[34]|TBUF)_"),
}
GENERIC_LABELS = {"gate": "gates", "ff": "flip-flops", "latch": "latches"}
# Cells that are no hardware: `flatten` leaves a $scopeinfo per flattened instance (Yosys 0.70),
# a record of the hierarchy for the netlist's readers.
NOT_HARDWARE = ("$scopeinfo",)
# Log lines that mean the design is not what was intended.
BAD_LOG = (re.compile(r"latch", re.I), re.compile(r"multiple conflicting drivers", re.I),
           re.compile(r"is used but has no driver", re.I))


@dataclass
class SynthReport:
    """Resources, Fmax and tool times of one synthesis run: ``fmax_mhz`` the best of its
    place-and-route seeds (placed for ``freq_mhz``), ``fmax_by_seed`` each one's. ``available``
    is the device's totals, empty on the generic target (no device). ``paths`` are the worst
    paths (glc/synth/paths.py): the best seed's in ns after routing, or, stopped after Yosys,
    the deepest in logic levels."""

    config: str
    target: str
    used: dict[str, int]
    available: dict[str, int] = field(default_factory=lambda: dict(DEVICE))
    fmax_mhz: float | None = None
    fmax_by_seed: dict[int, float | None] = field(default_factory=dict)
    synth_seconds: float = 0.0
    pnr_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    freq_mhz: float | None = None
    paths: list[TimingPath] = field(default_factory=list)

    def fits(self) -> bool | None:
        """Every resource within the device's totals; None with no device (generic)."""
        if not self.available:
            return None
        return all(self.used[key] <= self.available[key] for key in self.used)

    def to_dict(self) -> dict:
        """The report as plain data (``glc synth --json``)."""
        return asdict(self) | {"fits": self.fits()}


def sources() -> list[Path]:
    """The synthesized SystemVerilog files, packages first."""
    return [path for path in design_sources()
            if path.parent == HW and path.stem not in SIM_ONLY]


def _read_design(config: HwConfig, workdir: Path) -> list[str]:
    """Yosys commands that read the design (elaboration deferred until the configured parameters
    are set) and elaborate it. Paths are relative to ``workdir``, where the tools run: YoWASP's
    sandbox sees the working directory and its parents by relative path, and hides the real
    /tmp."""
    files = " ".join(os.path.relpath(path, workdir) for path in sources())
    params = " ".join(f"-set {key} {value}" for key, value in config.verilog_parameters().items())
    return [f"read_verilog -defer -sv {files}", f"chparam {params} {TOP}",
            f"hierarchy -check -top {TOP}",
            # Forget the file-scope package import: techmap reads its own Verilog libraries,
            # which would otherwise each warn that the package is gone.
            "design -reset-vlog"]


def yosys_script(config: HwConfig, target: str, workdir: Path) -> str:
    """The Yosys commands: read and elaborate, synthesize for ``target``, write the netlist
    (netlist.json, for nextpnr) and the cell statistics (stat.json)."""
    lines = _read_design(config, workdir)
    if target == "ecp5-85f":
        # One MAC per 18x18 multiplier while they last; past that, all in LUTs (Yosys maps every
        # multiply alike, and two int8 products cannot share an 18x18 multiplier).
        nodsp = " -nodsp" if config.array_size ** 2 > DEVICE["dsp"] else ""
        lines.append(f"synth_ecp5 -top {TOP}{nodsp} -json netlist.json")
    else:
        lines.append(f"synth -top {TOP} -flatten")
    lines.append("tee -q -o stat.json stat -json")
    return "\n".join(lines) + "\n"


def elaborate(config: HwConfig, workdir: Path) -> subprocess.CompletedProcess:
    """Read and elaborate the whole design with Yosys (no synthesis): the check that Yosys
    accepts the RTL. The log is ``workdir/elaborate.log``."""
    workdir.mkdir(parents=True, exist_ok=True)
    script = "\n".join([*_read_design(config, workdir), "proc", "check -assert"]) + "\n"
    return run_yosys_script(script, workdir, "elaborate")


def run_yosys_script(script: str, workdir: Path, name: str) -> subprocess.CompletedProcess:
    """Run the Yosys commands ``script`` in ``workdir`` as NAME.ys, logging to NAME.log."""
    (workdir / f"{name}.ys").write_text(script)
    return subprocess.run([require_tool("yosys"), "-q", "-l", f"{name}.log", "-s", f"{name}.ys"],
                          cwd=workdir, capture_output=True, text=True, check=False)


def bad_log_lines(log: str) -> list[str]:
    """The Yosys log's lines about latches (``proc_dlatch``'s "Latch inferred for signal", an
    error in an always_comb; not its "No latch inferred"), multiple drivers and undriven nets."""
    return [line for line in log.splitlines()
            if "Latch inferred for signal" in line
            or (line.startswith("Warning") and any(p.search(line) for p in BAD_LOG))]


def count_cells(stat: dict, target: str, where: str = "stat.json") -> dict[str, int]:
    """The resources in Yosys's ``stat -json`` of the top module: on the ECP5 LUTs, flip-flops,
    DSPs and block RAMs; on the generic target gates, flip-flops and latches. Statistics with
    no cells, or (generic) a cell of no known kind, are a GlcError located at ``where``."""
    design = stat.get("design") if isinstance(stat, dict) else None
    cells = design.get("num_cells_by_type") if isinstance(design, dict) else None
    if not cells:
        raise GlcError("Yosys's statistics hold no cells: nothing to count", where)
    if target == "ecp5-85f":
        used = {key: sum(cells.get(name, 0) for name in names)
                for key, names in ECP5_CELLS.items()}
        used["ff"] = sum(count for name, count in cells.items()
                         if name.startswith("TRELLIS_FF"))
        # A distributed-RAM primitive takes LUTs of its slice.
        used["lut"] += 2 * cells.get("TRELLIS_DPR16X4", 0)
        return used
    used = dict.fromkeys(GENERIC_CELLS, 0)
    unknown = []
    for name, count in cells.items():
        if name in NOT_HARDWARE:
            continue
        kind = next((key for key, pattern in GENERIC_CELLS.items() if pattern.fullmatch(name)),
                    None)
        if kind is None:
            unknown.append(name)
        else:
            used[kind] += count
    if unknown:
        raise GlcError(f"cannot count Yosys's generic cells {', '.join(sorted(unknown))}: "
                       "not gates, flip-flops or latches of its internal library", where)
    return used


def pnr_settings(config: HwConfig) -> tuple[str, str]:
    """The placer and router ``config`` is placed and routed with by default (PNR)."""
    return PNR.get(config.name, DEFAULT_PNR)


# Where a run reports its progress: one line per stage reached.
Progress = Callable[[str], None]


def synthesize(config: HwConfig, target: str, workdir: Path, *, pnr: bool = True,
               seeds: tuple[int, ...] = (1,), placer: str | None = None,
               router: str | None = None, pnr_minutes: float = PNR_MINUTES,
               freq_mhz: float = TARGET_MHZ, progress: Progress | None = None) -> SynthReport:
    """Synthesize ``config`` for ``target`` in ``workdir`` (logs, netlist and reports stay there);
    for the ECP5 also place and route it with nextpnr (unless ``pnr`` is false: then the
    deepest paths of Yosys's netlist in logic levels) once per seed of ``seeds``, its ``placer``
    and ``router`` (by default the configuration's, ``pnr_settings``), each run stopped after
    ``pnr_minutes`` and aiming at ``freq_mhz``; each stage reached is told to ``progress``."""
    if target not in TARGETS:
        raise GlcError(f"unknown target {target!r} ({', '.join(TARGETS)})")
    tell = progress or (lambda line: None)
    workdir = workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    tell(f"Yosys: synthesizing {config.name} for {target}")
    result = run_yosys_script(yosys_script(config, target, workdir), workdir, "synth")
    synth_seconds = time.monotonic() - started
    tell(f"Yosys: finished in {synth_seconds:.0f} s")
    log = (workdir / "synth.log").read_text(errors="replace") \
        if (workdir / "synth.log").exists() else ""
    if result.returncode != 0:
        errors = [line for line in log.splitlines() if "ERROR" in line] or [result.stderr]
        raise GlcError(f"yosys failed: {errors[-1].strip()}", str(workdir / "synth.log"))
    stat = workdir / "stat.json"
    if not stat.exists():
        raise GlcError("yosys wrote no statistics (stat.json)", str(workdir / "synth.log"))
    report = SynthReport(config=config.name, target=target,
                         used=count_cells(json.loads(stat.read_text()), target, str(stat)),
                         available=dict(DEVICE) if target == "ecp5-85f" else {},
                         synth_seconds=round(synth_seconds, 1), warnings=bad_log_lines(log))
    if target == "ecp5-85f" and pnr:
        default_placer, default_router = pnr_settings(config)
        report.freq_mhz = freq_mhz
        _place_and_route(report, workdir, seeds, placer or default_placer,
                         router or default_router, pnr_minutes, freq_mhz, tell)
    elif target == "ecp5-85f":
        report.paths = netlist_paths(workdir / "netlist.json")
    return report


def _place_and_route(report: SynthReport, workdir: Path, seeds: tuple[int, ...], placer: str,
                     router: str, minutes: float, freq_mhz: float = TARGET_MHZ,
                     progress: Progress = lambda line: None) -> None:
    """nextpnr-ecp5 on the LFE5U-85F, out of context, once per seed, as many at a time as there
    are cores (one placement is one thread), each stopped after ``minutes``; fills in each
    seed's Fmax, the best as the report's, the best seed's counts of what nextpnr packed and
    its worst paths.
    The best of several seeds because one seed's Fmax is placement noise: one ecp5n8 netlist
    placed with seeds 1, 2 and 3 reached 24.9, 27.1 and 28.2 MHz (docs/benchmarks.md)."""
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, min(len(seeds), os.cpu_count() or 1))) as pool:
        runs = [pool.submit(_nextpnr, workdir, seed, placer, router, minutes, freq_mhz,
                             progress) for seed in seeds]
        placed = [run.result() for run in runs]  # the first failure, by seed order, raises
    report.pnr_seconds = round(time.monotonic() - started, 1)
    for seed, data in zip(seeds, placed, strict=True):
        clocks = data.get("fmax", {})
        report.fmax_by_seed[seed] = \
            round(min(clock["achieved"] for clock in clocks.values()), 1) if clocks else None
    best = max(seeds, key=lambda seed: report.fmax_by_seed[seed] or 0.0)
    report.fmax_mhz = report.fmax_by_seed[best]
    usage = placed[seeds.index(best)].get("utilization", {})
    for key, cell in (("lut", "TRELLIS_COMB"), ("ff", "TRELLIS_FF"), ("dsp", "MULT18X18D"),
                      ("bram", "DP16KD")):
        if cell in usage:
            report.used[key] = usage[cell]["used"]
            report.available[key] = usage[cell]["available"]
    report.paths = routed_paths(workdir / f"pnr-seed{best}.sdf",
                                workdir / f"pnr-seed{best}-routed.json")


def _nextpnr(workdir: Path, seed: int, placer: str, router: str, minutes: float,
             freq_mhz: float, progress: Progress = lambda line: None) -> dict:
    """One nextpnr run on ``workdir``'s netlist (its log ``pnr-seed<seed>.log``): its report.
    Its log is read every POLL seconds for the stage it has reached, told to ``progress``."""
    pnr_report = workdir / f"pnr-seed{seed}.json"
    log_path = workdir / f"pnr-seed{seed}.log"
    command = [require_tool("nextpnr-ecp5"), "--85k", "--package", "CABGA381",
               "--out-of-context", "--json", "netlist.json", "--report", pnr_report.name,
               "--seed", str(seed), "--placer", placer, "--router", router,
               "--freq", f"{freq_mhz:g}", "--timing-allow-fail", "--log", log_path.name, "-q",
               # The routed netlist (its net names) and every delay nextpnr timed it with: the
               # worst paths are read from these (glc/synth/paths.py).
               "--sdf", f"pnr-seed{seed}.sdf", "--write", f"pnr-seed{seed}-routed.json"]
    log_path.unlink(missing_ok=True)
    started, stage, read = time.monotonic(), "set-up", 0
    # stderr to a file, not a pipe: a pipe nobody reads while nextpnr runs could fill and stop it.
    with tempfile.TemporaryFile("w+") as stderr, subprocess.Popen(
            command, cwd=workdir, stdout=subprocess.DEVNULL, stderr=stderr) as run:
        while True:
            running = run.poll() is None
            if log_path.exists():  # the lines written since the last look
                with log_path.open("rb") as log:
                    log.seek(read)
                    new = log.read()
                # Up to the last whole line: a stage's opening split in two is read whole next.
                new = new[:new.rfind(b"\n") + 1]
                read += len(new)
                reached = pnr_stage(new.decode(errors="replace"), stage)
                if reached != stage:
                    stage = reached
                    progress(f"nextpnr seed {seed}: {stage} "
                             f"({time.monotonic() - started:.0f} s)")
            if not running:
                break
            if time.monotonic() - started > 60 * minutes:
                run.kill()
                run.wait()
                log = log_path.read_text(errors="replace") if log_path.exists() else ""
                raise GlcError(f"seed {seed}: {pnr_failure(log, None, minutes)}",
                               str(log_path))
            time.sleep(min(POLL, 60 * minutes / 10))
        stderr.seek(0)
        errors = stderr.read()
    if run.returncode != 0 or not pnr_report.exists():
        log = log_path.read_text(errors="replace") if log_path.exists() else errors
        raise GlcError(f"seed {seed}: {pnr_failure(log, run.returncode)}", str(log_path))
    progress(f"nextpnr seed {seed}: finished in {time.monotonic() - started:.0f} s")
    return json.loads(pnr_report.read_text())


# How often (seconds) a running nextpnr's log is read for its stage.
POLL = 5.0


# nextpnr's stages, by the log line that opens each: what progress and a failure name.
_STAGES = (("Packing", "packing"), ("Creating initial analytic placement", "placement"),
           ("Running main analytical placer", "placement"),
           ("Running Static placer", "placement"),
           ("Running simulated annealing placer", "placement"), ("Routing", "routing"))


def pnr_stage(log: str, stage: str = "set-up") -> str:
    """The stage nextpnr's log (or the part of it after ``stage`` was reached) has reached:
    set-up, packing, placement or routing."""
    for line in log.splitlines():
        for opening, name in _STAGES:
            if line.startswith(f"Info: {opening}"):
                stage = name
    return stage


def pnr_failure(log: str, returncode: int | None, minutes: float = 0) -> str:
    """One line for a nextpnr run that did not finish: its last ERROR, or else how it ended
    (its exit status; with ``returncode`` None, stopped after ``minutes``) and the stage it was
    in (a run stopped from outside, e.g. while routing a congested design, writes no ERROR),
    with router2's overused wires by iteration when it got that far."""
    errors = [line.strip() for line in log.splitlines() if "ERROR" in line]
    if errors:
        return f"nextpnr failed: {errors[-1]}"
    stage = pnr_stage(log)
    if returncode is None:
        how = f"did not finish in {minutes:g} minutes (--pnr-minutes)"
    elif returncode < 0:
        how = f"was stopped by signal {-returncode}"
    else:
        how = f"exited with status {returncode}"
    message = f"nextpnr {how} during {stage}, before writing its report"
    overused = router_progress(log)
    if overused:
        shown = overused if len(overused) <= 6 else [*overused[:3], "…", *overused[-2:]]
        message += (f"; router2's overused wires by iteration: "
                    f"{' → '.join(map(str, shown))} ({len(overused)} "
                    f"iteration{'s' if len(overused) > 1 else ''})")
    return message


# router2's line after each iteration, e.g. "iter=5 wires=843380 overused=31733 overuse=…".
_ROUTER2_ITERATION = re.compile(r"\biter=\d+ wires=\d+ overused=(\d+)")


def router_progress(log: str) -> list[int]:
    """router2's overused wires after each of its iterations, from nextpnr's log."""
    return [int(match.group(1)) for match in _ROUTER2_ITERATION.finditer(log)]


def format_report(report: SynthReport) -> str:
    """The human-readable report: one line per resource against the device, then Fmax; on the
    generic target each kind of cell, with no device to fit."""
    if not report.available:
        lines = [f"{report.config} on {report.target} (Yosys's internal cells, no device)"]
        lines += [f"  {label:22} {report.used[key]:>8}" for key, label in GENERIC_LABELS.items()]
        lines.append(f"  synthesis {report.synth_seconds} s")
        lines.extend(f"  {warning}" for warning in report.warnings)
        return "\n".join(lines)
    names = {"lut": "LUTs", "ff": "flip-flops", "dsp": "DSPs (MULT18X18D)",
             "bram": "block RAMs (DP16KD)"}
    lines = [f"{report.config} on {report.target} (LFE5U-85F totals)"]
    for key, label in names.items():
        used, total = report.used[key], report.available[key]
        lines.append(f"  {label:22} {used:>8} / {total:<8} {100 * used / total:5.1f} %")
    if report.fmax_mhz is not None:
        seeds = ""
        if len(report.fmax_by_seed) > 1:
            seeds = "  (the best of seeds " + ", ".join(
                f"{seed}: {fmax}" for seed, fmax in report.fmax_by_seed.items()) + ")"
        aim = f", placed for {report.freq_mhz:g} MHz" if report.freq_mhz else ""
        lines.append(f"  Fmax                   {report.fmax_mhz:8.1f} MHz{seeds}{aim}")
    lines.append(f"  synthesis {report.synth_seconds} s, place-and-route {report.pnr_seconds} s,"
                 f" {'fits' if report.fits() else 'DOES NOT FIT'}")
    if report.paths and report.fmax_mhz is not None:
        lines += format_paths(report.paths, "worst paths after routing (nextpnr's delays)")
    elif report.paths:
        lines += format_paths(report.paths, "deepest paths before placement (logic levels of "
                                            "Yosys's netlist; --fast)")
    lines.extend(f"  {warning}" for warning in report.warnings)
    return "\n".join(lines)
