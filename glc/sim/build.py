"""Verilator builds through cocotb's runner, cached per (sources, parameters, flags).

cocotb's stock Verilator runner always passes ``--public-flat-rw``, which makes every signal
VPI-visible and the model about five times slower (toolchain.md). ``FastVerilator`` exposes only
the top level's ports (``--public-depth 1``) and optimises; every testbench here therefore talks to
the design through top-level ports alone. The bare runner's build (``Design.runner == "bare"``)
is verilated directly with the C++ main of bare_main.cpp: no VPI, no Python in the process. A
build lives in a directory named by a hash of everything that affects it, so an unchanged design
is never rebuilt, and waves (VCD or FST), runners and thread counts get their own directories.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from glc.errors import GlcError
from glc.sim.toolchain import MAKEFLAGS, configure_environment, verilator_root

REPO = Path(__file__).resolve().parents[2]
HW = REPO / "hw"

# Optimisation flags measured in toolchain.md; assertions are off because the design's checks are
# elaboration-time $fatal calls and run-time error status, not SVA.
FAST_FLAGS = ("-O3", "--x-assign", "fast", "--x-initial", "fast", "--no-assert")
# Waves: VCD needs nothing more; the wheel's FST writer needs the lz4 headers (liblz4-dev).
WAVE_FLAGS = {"vcd": ("--trace-structs",), "fst": ("--trace-fst", "--trace-structs")}
STAMP = "glc-build.json"
RUNNERS = ("cocotb", "bare")
# sim_top's clock in the RTL under cocotb: measured 1.2-1.4x fewer CPU seconds a cycle than
# cocotb's own clock (docs/benchmarks.md, "simspeed").
RTL_CLOCK_FLAGS = ("+define+GLC_RTL_CLOCK", "--timing")
# The bare runner's C++ main (it reads sim_top's ports, so it only drives sim_top).
BARE_MAIN = Path(__file__).with_name("bare_main.cpp")


def fast_verilator():
    """cocotb's Verilator runner with only top-level ports public (``--public-depth 1``).
    cocotb is imported here, not with the module: glc imports it only where the RTL is used."""
    from cocotb_tools.runner import Verilator

    class FastVerilator(Verilator):
        def _build_command(self) -> list[list[str]]:
            commands = super()._build_command()
            verilate = commands[0]
            at = verilate.index("--public-flat-rw")
            verilate[at:at + 1] = ["--public-depth", "1"]
            return commands

    return FastVerilator()


def build_root() -> Path:
    """Where builds are cached: ``$GLC_SIM_BUILD`` or ``build/sim`` in the repository."""
    return Path(os.environ.get("GLC_SIM_BUILD", REPO / "build" / "sim")).resolve()


def design_sources() -> list[Path]:
    """Every SystemVerilog file of the design, packages first (they must precede their users)."""
    files = sorted(HW.glob("*.sv")) + sorted((HW / "tb").glob("*.sv"))
    return sorted(files, key=lambda path: not path.stem.endswith("_pkg"))


@dataclass(frozen=True)
class Design:
    """One elaboration of the RTL: a top module, its parameters, the wave format recorded
    ("" for none, "vcd" or "fst"; the simulator then writes dump.vcd / dump.fst in its run
    directory), what clocks it (``cocotb``, the testbench's runner; ``bare``, the C++ main of
    bare_main.cpp, only for sim_top) and the model's threads (Verilator ``--threads``)."""

    top: str
    parameters: Mapping[str, int | str] = field(default_factory=dict)
    waves: str = ""
    runner: str = "cocotb"
    threads: int = 1

    def __post_init__(self) -> None:
        if self.waves not in ("", *WAVE_FLAGS):
            raise GlcError(f"unknown wave format {self.waves!r} (vcd or fst)")
        if self.runner not in RUNNERS:
            raise GlcError(f"unknown runner {self.runner!r} ({' or '.join(RUNNERS)})")
        if self.runner == "bare" and self.waves:
            raise GlcError("the bare runner records no waves: use the cocotb runner")
        if self.threads < 1:
            raise GlcError(f"threads must be at least 1, not {self.threads}")

    def flags(self) -> list[str]:
        """Verilator flags beyond the runner's own; sim_top under cocotb generates its own
        clock (hw/sim_top.sv, GLC_RTL_CLOCK), which needs Verilator's timing."""
        threads = ("--threads", str(self.threads)) if self.threads > 1 else ()
        clock = RTL_CLOCK_FLAGS if self.runner == "cocotb" and self.top == "sim_top" else ()
        return [*FAST_FLAGS, *WAVE_FLAGS.get(self.waves, ()), *threads, *clock]

    def key(self) -> str:
        """A hash of everything that changes the built model."""
        digest = hashlib.sha256()
        digest.update(json.dumps([self.top, sorted(self.parameters.items()), self.flags(),
                                  self.runner, MAKEFLAGS, str(verilator_root())]).encode())
        for path in design_sources() + ([BARE_MAIN] if self.runner == "bare" else []):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()[:16]

    def build_dir(self) -> Path:
        """This design's cached build directory."""
        kind = f"waves-{self.waves}" if self.waves else "fast"
        if self.runner == "bare":
            kind = "bare"
        if self.threads > 1:
            kind += f"-t{self.threads}"
        return build_root() / f"{self.top}-{kind}-{self.key()}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock so concurrent test processes build a directory once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_built(design: Design) -> bool:
    """Whether an identical build of ``design`` is cached."""
    return (design.build_dir() / STAMP).exists()


def build(design: Design) -> Path:
    """Build ``design`` unless an identical build is cached; return its build directory.

    A failed build (a syntax error, or a ``$fatal`` on an impossible parameter combination) is a
    GlcError quoting the end of the build log.
    """
    configure_environment()
    directory = design.build_dir()
    with _locked(directory.with_suffix(".lock")):
        if (directory / STAMP).exists():
            return directory
        log = directory.with_suffix(".log")
        directory.mkdir(parents=True, exist_ok=True)
        try:
            if design.runner == "bare":
                _build_bare(design, directory, log)
            else:
                fast_verilator().build(
                    sources=design_sources(), hdl_toplevel=design.top,
                    parameters=dict(design.parameters), build_args=design.flags(),
                    build_dir=directory, waves=bool(design.waves), log_file=log)
        except RuntimeError as error:
            text = log.read_text(errors="replace")
            tail = "\n".join(text.splitlines()[-15:])
            hint = ("\nFST waves need the lz4 headers (apt install liblz4-dev); VCD needs nothing"
                    if "lz4.h" in text else "")
            raise GlcError(f"Verilator build of {design.top} failed:\n{tail}{hint}",
                           str(log)) from error
        # The precompiled headers (~180 MB) only serve this compilation.
        for header in directory.glob("*.gch"):
            header.unlink()
        (directory / STAMP).write_text(json.dumps(_identity(design)))
    _prune_superseded(design, directory)
    return directory


def _build_bare(design: Design, directory: Path, log: Path) -> None:
    """Verilate ``design`` with the bare runner's main and compile it (no VPI, nothing public
    but the top's ports, which Verilator's C++ model always exposes); RuntimeError on failure,
    the output in ``log``."""
    verilate = [str(verilator_root() / "bin" / "verilator"), "--cc", "--exe", "--build",
                "-j", str(os.cpu_count() or 1), "-Mdir", str(directory),
                "--top-module", design.top, "--prefix", "Vtop", "-o", design.top,
                *design.flags(),
                *(f"-G{name}={value}" for name, value in design.parameters.items()),
                str(BARE_MAIN), *(str(path) for path in design_sources())]
    with open(log, "w") as handle:
        done = subprocess.run(verilate, stdout=handle, stderr=subprocess.STDOUT, check=False,
                              env=configure_environment(dict(os.environ)))
    if done.returncode:
        raise RuntimeError(f"verilator exited with status {done.returncode}")


def _identity(design: Design) -> dict:
    """What a build is a build *of*; the sources' contents are what changes between versions."""
    return {"top": design.top, "parameters": dict(design.parameters), "flags": design.flags(),
            "runner": design.runner}


def _prune_superseded(design: Design, current: Path) -> None:
    """Delete older builds of the same design (same top, parameters and flags, older sources):
    every edit of the RTL would otherwise leave a full build behind."""
    for stamp in build_root().glob(f"{design.top}-*/{STAMP}"):
        old = stamp.parent
        if old == current:
            continue
        try:
            same = json.loads(stamp.read_text()) == _identity(design)
        except (OSError, ValueError):
            continue
        if same:
            with _locked(old.with_suffix(".lock")):
                shutil.rmtree(old, ignore_errors=True)
            for leftover in (old.with_suffix(".lock"), old.with_suffix(".log")):
                leftover.unlink(missing_ok=True)


def lint(design: Design) -> subprocess.CompletedProcess:
    """``verilator --lint-only -Wall`` on the design with its parameters (output in stderr)."""
    env = configure_environment(dict(os.environ))
    command = [str(verilator_root() / "bin" / "verilator"), "--lint-only", "-Wall",
               "--top-module", design.top,
               *(f"-G{name}={value}" for name, value in design.parameters.items()),
               *(str(path) for path in design_sources())]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False)


class SimulationFailed(Exception):
    """A cocotb test module reported failures (a harness or design bug, not a user error)."""


def run_cocotb(design: Design, test_module: str, *, run_dir: Path,
               env: Mapping[str, str] | None = None, plusargs: list[str] | None = None,
               module_dir: Path | None = None) -> Path:
    """Run the cocotb tests of ``test_module`` on the (cached) build of ``design``, with
    ``env`` for the test and ``plusargs`` for the simulator; ``module_dir`` is where the test
    module lives if it is not importable already.

    Each run gets its own ``run_dir`` (results, log, dumps). Raises SimulationFailed naming the
    log when any test fails; returns ``run_dir``.
    """
    directory = build(design)
    run_dir.mkdir(parents=True, exist_ok=True)
    if module_dir is not None and str(module_dir) not in sys.path:
        sys.path.insert(0, str(module_dir))
    results = run_dir / "results.xml"
    log = run_dir / "sim.log"
    runner = fast_verilator()
    # The runner turns failures into sys.exit when it sees pytest; we report them ourselves.
    saved = os.environ.pop("PYTEST_CURRENT_TEST", None)
    try:
        runner.test(test_module=test_module, hdl_toplevel=design.top,
                    hdl_toplevel_lang="verilog", build_dir=directory, test_dir=run_dir,
                    extra_env=dict(env or {}), plusargs=list(plusargs or []),
                    results_xml=str(results), waves=bool(design.waves), log_file=log)
    except (RuntimeError, SystemExit) as error:
        raise SimulationFailed(f"the simulator of {design.top} crashed; see {log}") from error
    finally:
        if saved is not None:
            os.environ["PYTEST_CURRENT_TEST"] = saved
    from cocotb_tools.runner import get_results

    try:
        total, failed = get_results(results)
    except RuntimeError as error:
        raise SimulationFailed(f"no cocotb results; see {log}") from error
    if failed or not total:
        raise SimulationFailed(f"{failed} of {total} cocotb tests failed in {test_module}; "
                               f"see {log}\n{_failure_lines(log)}")
    return run_dir


def run_bare(design: Design, *, run_dir: Path, plusargs: list[str]) -> Path:
    """Run the bare runner's (cached) build of ``design`` in ``run_dir`` with ``plusargs``
    (bare_main.cpp reads them); SimulationFailed naming the log if it fails; returns
    ``run_dir``."""
    directory = build(design)
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "sim.log"
    with open(log, "w") as handle:
        done = subprocess.run([str(directory / design.top), *plusargs], cwd=run_dir,
                              stdout=handle, stderr=subprocess.STDOUT, check=False)
    if done.returncode:
        raise SimulationFailed(f"the bare runner of {design.top} exited with status "
                               f"{done.returncode}; see {log}\n{_failure_lines(log)}")
    return run_dir


def _failure_lines(log: Path) -> str:
    """The lines of a cocotb log that say why a test failed."""
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    keep = [ln for ln in lines if "Error" in ln or "assert" in ln or "FAIL" in ln]
    return "\n".join(keep[-20:])
