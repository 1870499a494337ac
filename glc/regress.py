"""Regression over every program: compile, lower, execute, compare, and hold cycles to baselines.

Each program folder (one ``.gls``, its ``<symbol>.npy`` inputs, an optional ``output.npy``) goes
through what ``glc run`` does — compile with the default rules, lower for the hardware config,
execute on the ISA simulator or the Verilator RTL, compare bit for bit with the interpreter (and
``output.npy``) — and its cycles are held to the baseline recorded for that config in
``hw/baselines/<config>.json``. Cycles are a property of the hardware config and are
deterministic, so the default tolerance is 0 %.

A row's status is one of STATUSES; ``Report.failures`` says which fail the run.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path

from glc.cache import Cache
from glc.compare import DEFAULT_TOLERANCE, FloatTolerance
from glc.errors import DoesNotFit, GlcError
from glc.hwconfig import CONFIG_DIR, HwConfig
from glc.inputs import PROGRAM_SUFFIXES
from glc.lower.execute import ENGINES
from glc.workers import Died, TimedOut
from glc.workers import run as run_in_workers

BASELINE_DIR = CONFIG_DIR.parent / "baselines"
# The shipped corpus: the only programs whose baselines are hw/baselines/ by default.
PROGRAMS_DIR = CONFIG_DIR.parents[1] / "programs"
# Where a user's folder keeps its own baselines: DIR/baselines/<config>.json.
USER_BASELINES = "baselines"
BASELINE_KEYS = ("cycles", "predicted_cycles", "ideal_cycles", "engine")

# pass: equal to the baseline (or above it within the tolerance); improved: fewer cycles;
# regression: more cycles than the tolerance allows; new: no baseline; mismatch: a wrong result;
# error: the compiler or the machine refused the program (a GlcError); crash: any other exception,
# or its worker process died; hang: still running at --timeout, killed; unfit: the program needs
# more of the hardware than the config has (DRAM, instruction memory).
STATUSES = ("pass", "improved", "regression", "new", "unfit", "mismatch", "error", "crash",
            "hang")


@dataclass
class Row:
    """One program's outcome and figures (None where the program never got that far)."""

    name: str
    path: str
    status: str = "pass"
    reason: str = ""
    match: bool | None = None
    detail: str = ""
    engine: str = ""
    cycles: int | None = None
    predicted_cycles: int | None = None
    ideal_cycles: int | None = None
    efficiency: float | None = None
    roofline_cycles: int | None = None  # the roofline limit (glc/cost/limit.py)
    roofline_efficiency: float | None = None
    instructions: int | None = None
    kernels: int | None = None
    host_steps: int | None = None
    seconds: float = 0.0
    baseline: int | None = None
    baseline_engine: str | None = None
    delta: int | None = None
    delta_pct: float | None = None
    inputs: str = ""  # given, or random (seed N): a folder without its .npy inputs


@dataclass
class Report:
    """Every row in program order, the baselines they were held to, and what was updated."""

    config: str
    engine: str
    baselines: str
    tolerance: float
    rows: list[Row]
    vanished: list[str] = field(default_factory=list)
    strict: bool = False
    updated: bool = False
    pruned: bool = False  # the vanished baselines were removed (--prune)
    baselines_found: bool = True

    def failures(self) -> list[Row]:
        """Wrong results and crashes always fail; a regression unless the baselines were just
        updated to accept it; a new program only with ``strict`` (and no update); a program that
        does not fit the config when it has a baseline there (it used to fit) or with ``strict``."""
        failing = {"mismatch", "error", "crash", "hang"}
        if not self.updated:
            failing.add("regression")
            if self.strict:
                failing.update({"new", "unfit"})
        return [row for row in self.rows if row.status in failing
                or row.status == "unfit" and row.baseline is not None]

    def count(self, status: str) -> int:
        """How many rows have ``status``."""
        return sum(row.status == status for row in self.rows)

    def summary(self) -> str:
        """``N passed, M failed`` (with ``, K new`` and ``, K unfit``)."""
        failed = len(self.failures())
        line = f"{len(self.rows) - failed} passed, {failed} failed"
        return line + "".join(f", {self.count(s)} {s}" for s in ("new", "unfit") if self.count(s))

    def to_json(self) -> dict:
        """One JSON-ready object with every row."""
        failed = len(self.failures())
        return {"config": self.config, "engine": self.engine, "baselines": self.baselines,
                "tolerance": self.tolerance, "passed": len(self.rows) - failed, "failed": failed,
                **{status: self.count(status) for status in STATUSES if status != "pass"},
                "vanished": self.vanished, "updated": self.updated, "pruned": self.pruned,
                "baselines_found": self.baselines_found,
                "rows": [asdict(row) for row in self.rows]}


# ---- programs and baselines ----------------------------------------------------------------

@dataclass
class Selection:
    """The programs a run covers, the baseline file they are held to, and whether they are the
    whole set that file describes (only then may an update drop a baseline with no program)."""

    programs: list[tuple[str, Path]]
    baselines: Path
    complete: bool


def select(dirs: Sequence[Path], config: HwConfig, keyword: str | None = None,
           baselines: Path | None = None) -> Selection:
    """The programs under ``dirs`` and their baselines: ``baselines`` if given, else
    hw/baselines/<config>.json for programs of the shipped programs/ and DIR/baselines/<config>.json
    for a user's folder DIR (so a user's run never rewrites the shipped baselines). Programs are
    named relative to that root, so a sub-folder's run names them as a run over the whole does."""
    tops = [Path(d).resolve() for d in dirs]
    if all(top.is_relative_to(PROGRAMS_DIR) for top in tops):
        root, default = PROGRAMS_DIR, baseline_path(config)
    elif len(tops) == 1:
        root = tops[0]
        default = root / USER_BASELINES / f"{config.name}.json"
    elif baselines is None:
        raise GlcError("programs from several folders outside programs/ share no baseline "
                       "file: give --baselines FILE", ", ".join(map(str, dirs)))
    else:
        root, default = None, baselines
    programs = discover(dirs, keyword, root)
    complete = keyword is None and tops == [root] and not is_program(root)
    return Selection(programs, Path(baselines or default), complete)


def discover(dirs: Sequence[Path], keyword: str | None = None,
             root: Path | None = None) -> list[tuple[str, Path]]:
    """The program folders under ``dirs`` (a folder holding a .gls is a program; others are
    searched below, hidden ones skipped), named by their path relative to ``root`` if given,
    else to the directory given (a directory that is itself a program is named by its folder),
    sorted by name, filtered by ``keyword``."""
    found: dict[str, Path] = {}
    for top in map(Path, dirs):
        if not top.is_dir():
            raise GlcError("not a directory of programs", str(top))
        base = top if root is None else root
        for folder in _program_folders(top):
            where = folder if root is None else folder.resolve()
            name = folder.name if where == base else where.relative_to(base).as_posix()
            if name in found and found[name] != folder:
                raise GlcError(f"two programs named '{name}': {found[name]} and {folder}",
                               str(folder))
            found[name] = folder
    if not found:
        raise GlcError("no programs found (a program is a folder with one .gls file)",
                       ", ".join(str(d) for d in dirs))
    chosen = sorted((n, p) for n, p in found.items() if keyword is None or keyword in n)
    if not chosen:
        raise GlcError(f"no program name contains '{keyword}' (of {len(found)} found)")
    return chosen


def _program_folders(top: Path) -> list[Path]:
    """The program folders at or below ``top``; a program's own subfolders are not searched."""
    programs = []
    for folder, subfolders, files in os.walk(top):
        if any(Path(f).suffix in PROGRAM_SUFFIXES for f in files):
            programs.append(Path(folder))
            subfolders.clear()
        else:
            subfolders[:] = [d for d in subfolders if not d.startswith(".")]
    return programs


def is_program(folder: Path) -> bool:
    """Whether ``folder`` is a folder holding a program file."""
    return folder.is_dir() and any(p.suffix in PROGRAM_SUFFIXES and p.is_file()
                                   for p in folder.iterdir())


def baseline_path(config: HwConfig) -> Path:
    """Where the baselines of ``config`` are committed: hw/baselines/<config>.json."""
    return BASELINE_DIR / f"{config.name}.json"


def read_baselines(path: Path) -> dict[str, dict]:
    """The baselines in ``path`` (none if the file does not exist); a GlcError naming the file
    if it cannot be read or is not {program: {cycles, predicted_cycles, ideal_cycles, engine}}."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except OSError as error:
        raise GlcError(f"cannot read baselines: {error.strerror}", str(path)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise GlcError(f"baselines are not valid JSON: {error}", str(path)) from None
    if not isinstance(data, dict):
        raise GlcError("baselines must be a JSON object {program: {...}}", str(path))
    for name, entry in data.items():
        if not isinstance(entry, dict) or set(entry) != set(BASELINE_KEYS) or not all(
                isinstance(entry[k], int) and not isinstance(entry[k], bool) and entry[k] >= 0
                for k in BASELINE_KEYS[:3]) or entry["engine"] not in ENGINES:
            raise GlcError(f"baseline '{name}' must be {{cycles, predicted_cycles, ideal_cycles: "
                           f"integers >= 0, engine: isa or rtl}}, not {json.dumps(entry)}",
                           str(path))
    return data


def write_baselines(path: Path, baselines: dict[str, dict]) -> None:
    """Write the baselines, sorted by program, one entry a line so a diff shows each change."""
    lines = [f" {json.dumps(name)}: {json.dumps({k: baselines[name][k] for k in BASELINE_KEYS})}"
             for name in sorted(baselines)]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    except OSError as error:
        raise GlcError(f"cannot write baselines: {error.strerror}", str(path)) from None


# ---- one program ---------------------------------------------------------------------------

def run_one(name: str, folder: Path, config: HwConfig, engine: str,
            max_cycles: int | None = None, seed: int = 0,
            float_tolerance: FloatTolerance = DEFAULT_TOLERANCE,
            cache: Cache | None = None) -> Row:
    """Compile, lower, execute and compare one program as ``glc run`` does (given inputs, else
    seeded random ones; floats within ``float_tolerance``; the compile read from and written to
    ``cache``), timed; an error becomes the row's status, never an exception."""
    from glc.compiler import compile_program
    from glc.inputs import load
    from glc.rewrites import DEFAULT, select
    from glc.run import run_and_compare

    row = Row(name, str(folder), engine=engine)
    start = time.perf_counter()
    try:
        bundle = load(folder)
        result = compile_program(bundle, rules=select(DEFAULT, config.array_size), config=config,
                                 cache=cache)
        arrays = bundle.arrays_or_random(seed)
        row.inputs = bundle.inputs_label(seed)
        _, figures = run_and_compare(result.lowered, bundle.program.body, arrays, engine,
                                     bundle.expected, max_cycles, float_tolerance)
    except DoesNotFit as error:
        row.status, row.reason, row.detail = "unfit", error.message, str(error)
    except GlcError as error:
        row.status, row.reason, row.detail = "error", _first_line(str(error)), str(error)
    except Exception as error:  # a compiler bug in one program must not hide the others' results
        frame = traceback.extract_tb(error.__traceback__)[-1]
        row.status = "crash"
        row.reason = _first_line(f"{type(error).__name__}: {error} "
                                 f"({Path(frame.filename).name}:{frame.lineno})")
        row.detail = "".join(traceback.format_exception(error))
    else:
        for key in ("match", "detail", "cycles", "predicted_cycles", "ideal_cycles",
                    "efficiency", "roofline_cycles", "roofline_efficiency", "instructions",
                    "kernels", "host_steps"):
            setattr(row, key, figures[key])
        if not row.match:
            row.status, row.reason = "mismatch", f"wrong result: {row.detail}"
    row.seconds = round(time.perf_counter() - start, 3)
    return row


def _lost(name: str, folder: Path, engine: str, outcome: TimedOut | Died) -> Row:
    """The row of a program whose process gave no result: killed at the time limit, or died."""
    if isinstance(outcome, TimedOut):
        return Row(name, str(folder), "hang", f"still running after {outcome.seconds:g} s "
                                              "(--timeout): killed", engine=engine,
                   seconds=outcome.seconds)
    if outcome.exitcode is None:  # glc/cluster.py: Dask gave up rerunning it (KilledWorker)
        reason = ("every Dask worker it ran on died: out of memory, or a crash in the "
                  "simulator")
        return Row(name, str(folder), "crash", reason, detail=reason, engine=engine)
    how = (f"signal {-outcome.exitcode}" if outcome.exitcode < 0
           else f"exit status {outcome.exitcode}")
    reason = f"its worker process died ({how}): out of memory, or a crash in the simulator"
    return Row(name, str(folder), "crash", reason, detail=reason, engine=engine)


def _first_line(text: str) -> str:
    """A message as one line for the table and the summary (a build log has many)."""
    lines = text.strip().splitlines() or [""]
    return lines[0] + (" …" if len(lines) > 1 else "")


def judge(row: Row, baseline: dict | None, tolerance: float) -> Row:
    """Hold a row's cycles to its baseline: regression past ``tolerance`` percent, improvement
    below, new without one. A row that already failed keeps its status."""
    if baseline is None:
        if row.status == "pass":
            row.status, row.reason = "new", "no baseline"
        return row
    row.baseline, row.baseline_engine = baseline["cycles"], baseline["engine"]
    if row.cycles is None:
        return row
    row.delta = row.cycles - row.baseline
    row.delta_pct = round(100 * row.delta / row.baseline, 3) if row.baseline else None
    if row.status != "pass":
        return row
    shown = f"cycles {row.cycles} {{}} baseline {row.baseline}{percent_shown(row.delta_pct)}"
    if row.cycles > row.baseline * (1 + tolerance / 100):
        row.status, row.reason = "regression", shown.format(">")
    elif row.cycles < row.baseline:
        row.status, row.reason = "improved", shown.format("<")
    return row


def percent_shown(pct: float | None) -> str:
    """A change in percent as the table and the reasons show it, `` (+2.0 %)``; more digits
    when one place would show a change as 0.0."""
    if pct is None:
        return ""
    digits = 1 if pct == 0 or abs(pct) >= 0.05 else 3
    return f" ({pct:+.{digits}f} %)"


# ---- the whole run -------------------------------------------------------------------------

def prepare(config: HwConfig, engine: str) -> None:
    """Build the Verilator model for ``config`` once, before the fan-out: the workers then find
    it cached (glc/sim/build.py locks the build, but each would otherwise wait on it)."""
    if engine == "rtl":
        from glc.sim.build import build
        from glc.sim.run import design

        build(design(config))


def regress(programs: Sequence[tuple[str, Path]], config: HwConfig, engine: str,
            baselines_file: Path, *, tolerance: float = 0.0, jobs: int | None = None,
            max_cycles: int | None = None, timeout: float | None = None, strict: bool = False,
            update: bool = False, prune: bool = False, complete: bool = True,
            on_row: Callable[[Row], None] | None = None,
            float_tolerance: FloatTolerance = DEFAULT_TOLERANCE,
            scheduler: str | None = None, cache: Cache | None = None) -> Report:
    """Run every program (``jobs`` processes; default one per CPU), judge it against the
    baselines in ``baselines_file`` and, with ``update``, record this run's programs in that
    file (the others' entries are kept).

    ``complete`` says the programs are the whole set (no -k, no single program), so baselines
    with no program are reported as vanished; ``prune`` (with ``update``, of a complete set)
    removes them. ``on_row`` sees each row
    once it and those before it are done: rows come in program order whatever the order in
    which the processes finish them. Float results match within ``float_tolerance``. A
    program still running after ``timeout`` seconds is killed (status hang): with a timeout,
    or more than one job, each program runs in a process of its own (glc/workers.py).
    ``scheduler``: each program a task on that Dask cluster instead (glc/cluster.py; ``local``:
    a LocalCluster of ``jobs`` workers). The compiles read and write ``cache`` (glc/cache.py:
    safe with writers in parallel).
    """
    if tolerance < 0:
        raise GlcError(f"the tolerance must be >= 0 %, not {tolerance}")
    if prune and not update:
        raise GlcError("--prune removes baselines from the file: give it with "
                       "--update-baselines")
    if prune and not complete:
        raise GlcError("--prune needs a run over the whole folder (no -k, not a single program "
                       "or a sub-folder): only then are baselines with no program known")
    baselines = read_baselines(baselines_file)
    prepare(config, engine)
    jobs = max(1, min(jobs or len(os.sched_getaffinity(0)), len(programs)))
    rows: list[Row] = []

    def finish(row: Row) -> None:
        rows.append(judge(row, baselines.get(row.name), tolerance))
        if on_row:
            on_row(row)

    calls = [(run_one, (name, folder, config, engine, max_cycles, 0, float_tolerance, cache))
             for name, folder in programs]
    if scheduler is not None:
        from glc import cluster

        outcomes = cluster.run(calls, scheduler, jobs, timeout)
    elif jobs == 1 and timeout is None:
        outcomes = (function(*args) for function, args in calls)
    else:
        outcomes = run_in_workers(calls, jobs, timeout)
    with closing(outcomes):
        for (name, folder), outcome in zip(programs, outcomes, strict=True):
            finish(outcome if isinstance(outcome, Row) else _lost(name, folder, engine, outcome))
    names = {name for name, _ in programs}
    vanished = sorted(set(baselines) - names) if complete else []
    report = Report(config.name, engine, str(baselines_file), tolerance, rows, vanished, strict,
                    baselines_found=Path(baselines_file).exists())
    if update:
        write_baselines(baselines_file, updated_baselines(report, baselines, prune))
        report.updated, report.pruned = True, prune
    return report


def updated_baselines(report: Report, old: dict[str, dict], prune: bool = False
                      ) -> dict[str, dict]:
    """The baselines after accepting this run: each program that computed the right result
    records its cycles; a failed one, and one not run, keeps its old entry; vanished ones go
    only with ``prune`` (a run over a part of a shared file must not empty the rest)."""
    gone = set(report.vanished) if prune else set()
    new = {name: entry for name, entry in old.items() if name not in gone}
    for row in report.rows:
        if row.match and row.cycles is not None:
            new[row.name] = {"cycles": row.cycles, "predicted_cycles": row.predicted_cycles,
                             "ideal_cycles": row.ideal_cycles, "engine": row.engine}
    return new
