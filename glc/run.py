"""The closing of the loop: lower a compiled term, run it, compare it with the interpreter.

``glc compile -o`` lowers and writes the artefacts; ``glc simulate`` runs them; ``glc run`` does
compile + lower + simulate + compare in one go. The figures are the architecture's: instructions,
predicted cycles (the cycle model over the kernels), cycles (measured on the RTL, or the ISA
simulator's count), the compute ideal and the roofline limit (glc/cost/limit.py) with the
efficiency against each (limit / cycles), and whether the result equals the interpreter's bit
for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from glc.compare import DEFAULT_TOLERANCE, FloatTolerance, compare
from glc.cost.ideal import program_ideal
from glc.cost.limit import efficiency
from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.inputs import EXPECTED
from glc.interp import env_types, interpret
from glc.ir.term import Term
from glc.lower.execute import ENGINES, Outcome, execute
from glc.lower.program import Program
from glc.outdir import check_file_target, writing
from glc.report import kernel_limits, limit_figures, step_rows

# --engine's choices: an engine, or auto (the RTL when its toolchain is here, else the ISA).
ENGINE_CHOICES = (*ENGINES, "auto")
SOURCE = "source.gls"  # the original program, next to the artefacts, for simulate's comparison


def choose_engine(asked: str | None, config: HwConfig,
                  note: Callable[[str], None] = lambda line: None) -> str:
    """The engine the kernels run on: ``isa`` when asked; ``rtl`` (also the default) only with
    Verilator's toolchain here — else a GlcError naming what is missing, never a silent
    substitution; ``auto``: rtl when the Verilator model of ``config`` builds, else isa, and
    ``note`` is told why (the CLI's line on stderr)."""
    from glc.sim.build import build, is_built
    from glc.sim.run import design
    from glc.sim.toolchain import missing

    if asked == "isa":
        return "isa"
    absent = missing(tools=False)
    if not absent and not is_built(design(config)):
        absent = missing()
    if asked == "auto":
        if absent:
            note(f"note: --engine auto: the ISA simulator, not the RTL (it needs "
                 f"{', '.join(absent)}, not found)")
            return "isa"
        try:
            build(design(config))
        except GlcError as error:
            note(f"note: --engine auto: the ISA simulator, not the RTL (its build failed: "
                 f"{error})")
            return "isa"
        return "rtl"
    if absent:
        raise GlcError(f"the RTL engine needs {', '.join(absent)}, not found: install "
                       "them (README, 'Set-up') or run on the ISA simulator with --engine isa")
    return "rtl"


def run_and_compare(program: Program, source: Term, arrays: Mapping[str, np.ndarray],
                    engine: str, expected: np.ndarray | None = None,
                    max_cycles: int | None = None,
                    tolerance: FloatTolerance = DEFAULT_TOLERANCE,
                    steps: bool = False, check_races: bool = False,
                    trace: list | None = None, segments: int | None = None,
                    jobs: int = 1) -> tuple[Outcome, dict]:
    """Execute ``program`` and compare its result with the interpreter on ``source`` (and with
    ``expected`` when given), floats within ``tolerance``; returns the outcome and the figures:
    the program's, cycles, efficiency against the compute ideal and against the roofline limit
    (glc/cost/limit.py) and, with ``steps``, the per-step rows of glc/report.py. ``trace``: a
    list to append each run's glc/trace.py record to. ``segments``: on the RTL, in that many
    segments from the ISA simulator's states, ``jobs`` at a time (glc/segments.py); every
    segment must end in the ISA simulator's state with its cycles for the run to match."""
    # The reference first: a value the language refuses (a NaN multiplier) is one line at its
    # form before the program runs on anything.
    reference, _ = interpret(source, arrays)
    segmented = None
    if segments is not None:
        from glc.segments import check, refuse

        refuse(engine, check_races, trace is not None)
        segmented = check(program, arrays, segments, jobs, max_cycles)
        outcome = segmented.outcome
    else:
        outcome = execute(program, arrays, engine, max_cycles, check_races, trace)
    verdicts = [("interpreter", compare(outcome.result, reference, tolerance))]
    if expected is not None:
        verdicts.append(("output.npy", compare(outcome.result, expected, tolerance)))
    if program.ideal is None:  # read back from a folder: the ideal of the source it holds
        program.ideal = program_ideal(source, env_types(arrays), program)
    figures = program.figures()
    cycles = outcome.cycles
    limits = kernel_limits(program)
    figures.update({
        "engine": engine,
        "cycles": cycles,
        "efficiency": efficiency(figures["ideal_cycles"], cycles),
        **limit_figures(limits, cycles),
        "match": all(v.match for _, v in verdicts),
        "detail": "; ".join(f"{label}: {v.detail}" for label, v in verdicts),
    })
    if segmented is not None:
        figures["segments"] = [s.to_json() for s in segmented.segments]
        figures["segment_lines"] = segmented.lines()
        wrong = [s for s in segmented.segments if not s.ok]
        if wrong:
            figures["match"] = False
            figures["detail"] += f"; segments: {wrong[0].line()}"
        else:
            figures["detail"] += (f"; segments: all {len(segmented.segments)} end in the ISA "
                                  "simulator's state with the model's cycles")
    if steps:
        figures["steps"] = step_rows(program, limits)
    return outcome, figures


def summary(figures: dict) -> str:
    """The human-readable lines of ``glc run`` / ``glc simulate``."""
    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.4f}"

    lines = [f"match: {'yes' if figures['match'] else 'NO'} ({figures['detail']})",
             f"kernels {figures['kernels']}, instructions {figures['instructions']}, "
             f"host steps {figures['host_steps']}, host copies {figures['host_copies']}"
             + "".join(f"\n  {name}" for name in figures["host"]),
             f"cycles {figures['cycles']} ({figures['engine']}), predicted "
             f"{figures['predicted_cycles']}, ideal {figures['ideal_cycles']} (efficiency "
             f"{shown(figures['efficiency'])}), roofline limit {figures['roofline_cycles']} "
             f"(efficiency {shown(figures['roofline_efficiency'])})"]
    return "\n".join(lines)


def check_result_path(path: Path | None, input_dir: Path | None) -> None:
    """Refuse an ``-o`` path (None: no -o) before the work: it must end in ``.npy`` (numpy would
    otherwise append it, silently) and must not lie in ``input_dir``, the folder the inputs were
    read from, whose every ``.npy`` the next run reads back, as an input or the expected output."""
    if path is None:
        return
    path = Path(path)
    check_file_target(path)
    if path.suffix != ".npy":
        raise GlcError("-o writes a .npy file: give a path ending in .npy", str(path))
    if input_dir is not None and path.parent.resolve() == Path(input_dir).resolve():
        if path.name == EXPECTED:
            raise GlcError(f"-o would overwrite the expected result {EXPECTED} of {input_dir}, "
                           "which every run compares with; write the result outside the folder",
                           str(path))
        raise GlcError(f"-o would write into the inputs folder {input_dir}, whose .npy files the "
                       "next run reads back as inputs; write the result outside it", str(path))


def save_result(result: np.ndarray, path: Path, input_dir: Path | None = None) -> None:
    """Write the result tensor to ``path`` (checked by ``check_result_path``)."""
    check_result_path(path, input_dir)
    with writing(path) as temporary, temporary.open("wb") as file:
        np.save(file, result)
