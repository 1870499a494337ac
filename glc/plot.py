"""Pictures of a run's figures (docs/trace.md, "Plots"): ``glc run --plot FILE`` draws each
step's cycles against its limits and the roofline with each array kernel as a point;
``scripts/bench.py --plot FILE`` the layer suite's and model suite's efficiencies.

matplotlib is an optional extra (``pip install 'glc[plot]'``), imported only when a picture is
asked for, with its Agg backend: no display is needed. The file's suffix picks the format: .svg,
.png, or .html (the SVG in a page of its own).
"""

from __future__ import annotations

import io
from html import escape
from pathlib import Path

from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.outdir import check_file_target

FORMATS = (".svg", ".png", ".html")
EXTRA = "pip install 'glc[plot]'"  # the extra of pyproject.toml that brings matplotlib
UNIT_COLOURS = {"array": "tab:blue", "vector": "tab:orange"}
LIMIT_COLOUR, IDEAL_COLOUR = "black", "tab:green"
ROW_INCHES = 0.26  # the height of one bar with its label


def check_plot_path(path: Path | None) -> None:
    """Refuse a ``--plot`` path before the work: a file in a folder that exists
    (glc/outdir.py), of a known suffix."""
    if path is None:
        return
    path = Path(path)
    check_file_target(path, option="--plot")
    if path.suffix not in FORMATS:
        raise GlcError(f"--plot writes {', '.join(FORMATS)} (by the file's suffix), not "
                       f"'{path.suffix or path.name}'", str(path))
    _pyplot()  # a missing matplotlib fails before the work, not after it


def _pyplot():
    """matplotlib's pyplot on the Agg backend, or a GlcError naming the extra to install."""
    try:
        import matplotlib
    except ImportError:
        raise GlcError(f"--plot needs matplotlib, which is not installed: {EXTRA}") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def report_figure(rows: list, figures: dict, config: HwConfig, title: str):
    """The figure of ``glc run --report``'s rows (glc/report.py's StepRow) and the program's
    ``figures``: each step's cycles against its roofline limit and compute ideal, and the
    roofline of ``config`` with each array kernel at its arithmetic intensity."""
    pyplot = _pyplot()
    height = ROW_INCHES * len(rows) + 1.6
    figure, (steps, roof) = pyplot.subplots(
        2, 1, figsize=(10, height + 5), height_ratios=[height, 5], layout="constrained")
    figure.suptitle(title)
    _steps_panel(steps, rows, figures)
    _roofline_panel(roof, rows, config)
    return figure


def _steps_panel(axes, rows: list, figures: dict) -> None:
    """A bar per step (top to bottom in program order): its cycles, coloured by unit, with its
    limit and ideal marked and limit/cycles written at its end; a host step has no bar."""
    positions = range(len(rows))
    labels = [_label(r.step, r.node) for r in rows]
    timed = [(i, r) for i, r in enumerate(rows) if r.cycles is not None]
    axes.barh([i for i, _ in timed], [r.cycles for _, r in timed],
              color=[UNIT_COLOURS[r.unit] for _, r in timed], height=0.7)
    limited = [(i, r) for i, r in timed if r.limit]
    axes.scatter([r.limit for _, r in limited], [i for i, _ in limited], marker="|", s=160,
                 color=LIMIT_COLOUR, zorder=3, label="roofline limit")
    axes.scatter([r.ideal for _, r in limited], [i for i, _ in limited], marker="|", s=160,
                 color=IDEAL_COLOUR, zorder=3, label="compute ideal")
    for i, r in timed:
        shown = f" {r.roofline_efficiency:.2f}" if r.roofline_efficiency is not None else ""
        axes.text(r.cycles, i, shown, va="center", fontsize=7)
    for i, r in enumerate(rows):
        if r.cycles is None:
            axes.text(0, i, f" {r.unit} step (numpy, not timed)", va="center", fontsize=7,
                      color="grey")
    axes.set_yticks(list(positions), labels, fontsize=7)
    axes.set_ylim(len(rows) - 0.5, -0.5)
    axes.set_xlabel("cycles (cycle model, each kernel alone); at a bar's end: limit / cycles")
    axes.set_title(f"{figures['cycles']} cycles on the {figures['engine']}, roofline limit "
                   f"{figures['roofline_cycles']}, compute ideal {figures['ideal_cycles']}",
                   fontsize=9)
    handles = [_patch(colour, unit) for unit, colour in UNIT_COLOURS.items()
               if any(r.unit == unit for r in rows)]
    axes.legend(handles=[*handles, *axes.get_legend_handles_labels()[0]], fontsize=7,
                loc="upper left", bbox_to_anchor=(1.01, 1))


def _patch(colour: str, label: str):
    """A legend entry for a bar colour."""
    from matplotlib.patches import Patch

    return Patch(color=colour, label=label)


def _roofline_panel(axes, rows: list, config: HwConfig) -> None:
    """MACs per cycle against MACs per compulsory DRAM byte, log-log, under the roof
    min(N², P · intensity): the array's peak and the DRAM port's bandwidth."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    points = [r for r in rows if r.macs and r.bytes and r.cycles]
    peak, port = config.array_size ** 2, config.dram_port_bytes
    ridge = peak / port
    intensities = [r.macs / r.bytes for r in points]
    low = min([ridge / 8, *intensities]) / 2
    high = max([ridge * 8, *intensities]) * 2
    axes.loglog([low, ridge, high], [port * low, peak, peak], color=LIMIT_COLOUR,
                label=f"roof: peak N² = {peak} MACs/cycle, DRAM port P = {port} bytes/cycle")
    # Kernels of the same shape land on the same point: one point, all their names.
    named: dict[tuple[float, float], list[str]] = {}
    for r, x in zip(points, intensities, strict=True):
        named.setdefault((x, r.macs / r.cycles), []).append(r.step)
    for (x, y), steps in named.items():
        axes.scatter(x, y, color=UNIT_COLOURS["array"], zorder=3)
        axes.annotate(", ".join(steps), (x, y), fontsize=6, xytext=(3, 3),
                      textcoords="offset points")
    vector = sum(1 for r in rows if r.unit == "vector")
    note = f" ({vector} vector kernel{'s' if vector > 1 else ''}, doing no MACs, only in the " \
        "bars above)" if vector else ""
    axes.set_title(f"roofline of {config.name}: array kernels{note}", fontsize=9)
    axes.set_xlabel("arithmetic intensity: MACs per compulsory DRAM byte")
    axes.set_ylabel("MACs per cycle (cycle model, each kernel alone)")
    axes.legend(fontsize=7, loc="lower right")
    axes.grid(True, which="both", linewidth=0.3)
    for axis in (axes.xaxis, axes.yaxis):  # 1, 2, 5, 10, 20 …: plain numbers, not powers
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_minor_formatter(NullFormatter())


def efficiency_figure(groups: dict[str, list[tuple[str, float | None, float | None]]],
                      title: str):
    """A panel per group (``scripts/bench.py --plot``): a bar per row, its efficiency against
    the roofline limit, with its efficiency against the compute ideal marked."""
    pyplot = _pyplot()
    heights = [ROW_INCHES * len(rows) + 1.2 for rows in groups.values()]
    figure, panels = pyplot.subplots(len(groups), 1, figsize=(10, sum(heights) + 0.6),
                                     height_ratios=heights, layout="constrained", squeeze=False)
    figure.suptitle(title)
    for axes, (name, rows) in zip(panels[:, 0], groups.items(), strict=True):
        positions = list(range(len(rows)))
        axes.barh(positions, [limit or 0 for _, _, limit in rows], height=0.7,
                  color=UNIT_COLOURS["array"], label="efficiency: roofline limit / cycles")
        axes.scatter([ideal or 0 for _, ideal, _ in rows], positions, marker="|", s=160,
                     color=IDEAL_COLOUR, zorder=3, label="efficiency: compute ideal / cycles")
        axes.set_yticks(positions, [label for label, _, _ in rows], fontsize=7)
        axes.set_ylim(len(rows) - 0.5, -0.5)
        axes.set_xlim(0, 1.05)
        axes.axvline(1, color=LIMIT_COLOUR, linewidth=0.6)
        axes.set_title(name, fontsize=9)
    figure.legend(*panels[0, 0].get_legend_handles_labels(), fontsize=7, ncols=2,
                  loc="outside lower center")
    return figure


def _label(step: str, node: str) -> str:
    """A bar's label: the step and, shortened, the node of the program it computes."""
    if not node:
        return step
    return f"{step}: {node if len(node) <= 40 else node[:39] + '…'}"


def save(figure, path: Path) -> None:
    """Write ``figure`` in the format of ``path``'s suffix."""
    import matplotlib

    path = Path(path)
    try:
        # SVG text as text, not outlines: smaller, searchable, selectable.
        with matplotlib.rc_context({"svg.fonttype": "none"}):
            _write(figure, path)
    except OSError as error:
        raise GlcError(f"cannot write: {error.strerror}", str(path)) from None
    finally:
        from matplotlib import pyplot

        pyplot.close(figure)


def _write(figure, path: Path) -> None:
    """savefig by suffix; .html: the SVG inside a page titled as the figure."""
    if path.suffix == ".html":
        text = io.StringIO()
        figure.savefig(text, format="svg")
        svg = text.getvalue()
        title = escape(figure.get_suptitle())
        path.write_text(f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}"
                        f"</title></head>\n<body>\n{svg[svg.index('<svg'):]}</body></html>\n")
    else:
        figure.savefig(path, format=path.suffix[1:], dpi=120)
