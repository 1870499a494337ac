"""What ``glc regress`` prints and writes: the table of rows with its notes and summary, and
JUnit XML (glc/regress.py runs and judges the programs)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from glc.errors import GlcError
from glc.regress import Report, percent_shown

COLUMNS = ("program", "match", "cycles", "baseline", "Δ", "predicted", "ideal", "efficiency",
           "limit", "eff(limit)", "status")


def table(report: Report) -> str:
    """The human-readable table, the notes (engines, vanished baselines, update), what the run
    was held to, and the summary line ``N passed, M failed`` last, alone on its line."""
    cells = [COLUMNS]
    for row in report.rows:
        match = "-" if row.match is None else "yes" if row.match else "NO"
        delta = ("-" if row.delta is None else "0" if row.delta == 0
                 else f"{row.delta:+d}{percent_shown(row.delta_pct)}")
        cells.append((row.name, match, _num(row.cycles), _num(row.baseline), delta,
                      _num(row.predicted_cycles), _num(row.ideal_cycles),
                      _ratio(row.efficiency), _num(row.roofline_cycles),
                      _ratio(row.roofline_efficiency), row.status))
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) if i in (0, 1, len(COLUMNS) - 1) else c.rjust(w)
                       for i, (c, w) in enumerate(zip(line, widths, strict=True))).rstrip()
             for line in cells]
    # An error's reason is already a located "…: error: …" line: not prefixed again.
    lines += [f"{row.name}: {row.reason}" if row.status == "error" else
              f"{row.name}: {row.status}: {row.reason}" for row in report.rows
              if row.status not in ("pass", "new")]
    other = sorted({r.baseline_engine for r in report.rows
                    if r.baseline_engine and r.baseline_engine != report.engine})
    if other:
        lines.append(f"note: baselines recorded on {', '.join(other)}, this run on "
                     f"{report.engine}: {_ENGINE_NOTE[report.engine]}")
    if report.vanished:
        lines.append(f"baselines with no program: {', '.join(report.vanished)}"
                     + (" (removed)" if report.pruned else
                        " (kept; --update-baselines --prune removes them)"))
    shown = _shown(report.baselines)
    if report.updated:
        lines.append(f"baselines updated: {shown}")
    elif not report.baselines_found:
        lines.append(f"no baseline file {shown}: every program is new")
    lines.append(f"config {report.config}, engine {report.engine}, baselines {shown}, "
                 f"tolerance {report.tolerance:g} %")
    lines.append(report.summary())
    return "\n".join(lines)


def _shown(path: str) -> str:
    """A path as short as it can be said: relative to the working directory when below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path


# Why a run may be held to another engine's baseline: equal by design (docs/regress.md).
_ENGINE_NOTE = {"isa": "the ISA simulator's cycles (the cycle model) held to measured RTL cycles",
                "rtl": "measured RTL cycles held to the ISA simulator's cycle model"}


def _num(value: int | None) -> str:
    return "-" if value is None else str(value)


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def junit(report: Report) -> ET.ElementTree:
    """JUnit XML: one testsuite (the config), one testcase per program (classname the config,
    time its wall seconds), a <failure> (or <error> for a crash) giving the reason."""
    failing = {id(row) for row in report.failures()}
    suite = ET.Element("testsuite", name=f"glc regress {report.config} {report.engine}",
                       tests=str(len(report.rows)),
                       failures=str(sum(id(r) in failing and r.status != "crash"
                                        for r in report.rows)),
                       errors=str(sum(id(r) in failing and r.status == "crash"
                                      for r in report.rows)),
                       skipped=str(sum(id(r) not in failing and r.status == "unfit"
                                       for r in report.rows)),
                       time=f"{sum(r.seconds for r in report.rows):.3f}")
    for row in report.rows:
        case = ET.SubElement(suite, "testcase", classname=report.config, name=row.name,
                             time=f"{row.seconds:.3f}")
        if id(row) in failing:
            tag = "error" if row.status == "crash" else "failure"
            # The element's text is the whole story: an error's full message, a crash's
            # traceback; the message attribute is the one-line reason.
            text = row.detail if row.status in ("error", "crash") else row.reason
            ET.SubElement(case, tag, message=row.reason, type=row.status).text = text
        elif row.status == "unfit":
            ET.SubElement(case, "skipped", message=row.reason)
        out = ET.SubElement(case, "system-out")
        out.text = (f"status {row.status}; cycles {_num(row.cycles)}, baseline "
                    f"{_num(row.baseline)}, predicted {_num(row.predicted_cycles)}, ideal "
                    f"{_num(row.ideal_cycles)}, roofline limit {_num(row.roofline_cycles)}, "
                    f"instructions {_num(row.instructions)}, host steps "
                    f"{_num(row.host_steps)}, engine {row.engine}"
                    + (f"; {row.reason}" if row.reason else ""))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(report: Report, path: Path) -> None:
    """Write ``junit(report)`` to ``path``."""
    try:
        junit(report).write(path, encoding="utf-8", xml_declaration=True)
    except OSError as error:
        raise GlcError(f"cannot write JUnit XML: {error.strerror}", str(path)) from None
