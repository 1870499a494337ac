"""glc's one benchmark entry point: prints a table of figures per section.

Each section is a module in ``scripts/benchmarks/`` that defines ``SECTION`` (its name, used by
``--only``), ``TITLE`` and ``run() -> list[dict]`` (one row per measured case; keys are the
columns; a ``run`` with an ``rtl`` parameter is given ``--rtl``, and so on for the options
below), and maybe ``summaries(rows)``: titled tables drawn from the rows, printed after the
section's. A section that cannot run (a missing extra) says why in one line and is skipped.
``--write`` also records the tables, with the machine and date, in docs/benchmarks.md.
``--plot FILE`` draws the layer suite's and the model suite's efficiencies (glc/plot.py; each
of their sections says what it draws with ``efficiencies(rows)``): the sections run now, the
others as docs/benchmarks.md records them.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import inspect
import json
import pkgutil
import platform
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import benchmarks  # noqa: E402

from glc.errors import GlcError  # noqa: E402
from glc.plot import check_plot_path, efficiency_figure, save  # noqa: E402

RECORD = HERE.parent / "docs" / "benchmarks.md"
# What --plot draws: a panel per suite, the rows of its sections.
SUITES = {"layer suite: real networks' layers at their real shapes (N = 16)": ("layers",),
          "model suite: network-sized programs and imported networks (N = 16)":
              ("networks", "onnx")}


def sections() -> dict[str, object]:
    """Every benchmark module, by its SECTION name, in file-name order."""
    found = {}
    for info in sorted(pkgutil.iter_modules(benchmarks.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"benchmarks.{info.name}")
        found[module.SECTION] = module
    return found


def format_table(rows: list[dict]) -> str:
    """A Markdown table of the rows; columns in first-seen order."""
    if not rows:
        return "(no rows)"
    columns: list[str] = []
    for row in rows:
        columns.extend(key for key in row if key not in columns)
    cells = [[_cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    line = "| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) + " |"
            for r in cells]
    return "\n".join([line, rule, *body])


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def main() -> None:
    found = sections()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", action="append", choices=sorted(found),
                        help="run only this section (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--write", action="store_true",
                        help="also record the tables in docs/benchmarks.md")
    parser.add_argument("--rtl", action="store_true",
                        help="sections that take it (layers, shapes): also run their RTL sample")
    parser.add_argument("--seed", type=int,
                        help="sections that take it (shapes): another draw than the recorded one")
    parser.add_argument("--count", type=int,
                        help="sections that take it (shapes): how many rows to draw")
    parser.add_argument("--jobs", type=int,
                        help="sections that take it (models): cases measured at once")
    parser.add_argument("--full", action="store_true",
                        help="sections that take it (models): also the 224x224 rows")
    parser.add_argument("--model", dest="models", action="append",
                        help="sections that take it (models): only this model (repeatable)")
    parser.add_argument("--plot", metavar="FILE", type=Path,
                        help="draw the layer and model suites' efficiencies into FILE (.svg, "
                             ".png, .html): the sections run now (--only), the others as "
                             "docs/benchmarks.md records them; without --only nothing is run")
    args = parser.parse_args()
    try:
        check_plot_path(args.plot)
    except GlcError as error:
        sys.exit(str(error))
    chosen = args.only or ([] if args.plot else list(found))
    results = {}
    for name in list(chosen):
        try:
            results[name] = found[name].run(**_options(found[name], args))
        except GlcError as error:
            print(f"{name}: skipped: {error.message}", file=sys.stderr)
            chosen.remove(name)
    if not chosen and not args.plot:
        sys.exit(1)
    if args.plot:
        plot(args.plot, found, results)
        if not chosen:
            return
    extra = {name: found[name].summaries(results[name]) for name in chosen
             if hasattr(found[name], "summaries")}
    if args.json:
        print(json.dumps({**results, **{f"{name}: {title}": table for name in extra
                                         for title, table in extra[name]}},
                         indent=2, default=str))
        return
    stamp = (f"{datetime.date.today().isoformat()}, {platform.node()}, "
             f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    text = [f"Measured {stamp}.", ""]
    for name in chosen:
        text += [f"## {name}: {found[name].TITLE}", "", format_table(results[name]), ""]
        for title, table in extra.get(name, []):
            text += [f"### {title}", "", format_table(table), ""]
    print("\n".join(text))
    if args.write:
        _record(chosen, text)


def plot(path: Path, found: dict, results: dict[str, list[dict]]) -> None:
    """Draw each suite's efficiencies into ``path``: a section's rows from ``results`` when it
    ran now, else as docs/benchmarks.md records them."""
    groups = {suite: [row for name in names for row in found[name].efficiencies(
        results[name] if name in results else recorded(name))] for suite, names in SUITES.items()}
    try:
        save(efficiency_figure(groups, "glc's benchmarks: efficiency against each limit"), path)
    except GlcError as error:
        sys.exit(str(error))


def recorded(name: str) -> list[dict]:
    """The rows of section ``name``'s table as docs/benchmarks.md records it (the first table
    under its heading, as ``_record`` writes it): numbers and verdicts as values, an empty cell
    as no key, as a fresh row leaves a column it does not fill."""
    text = RECORD.read_text() if RECORD.exists() else ""
    lines = _split_blocks(text).get(name, "").split("\n")
    start = next((i for i, ln in enumerate(lines) if ln.startswith("|")), None)
    if start is None:
        return []
    header = _columns(lines[start])
    rows = []
    for line in lines[start + 2:]:  # past the header and its rule
        if not line.startswith("|"):
            break
        rows.append({key: _value(cell) for key, cell in zip(header, _columns(line), strict=True)
                     if cell})
    return rows


def _value(cell: str) -> object:
    """A recorded cell as the value a section's row holds."""
    if cell in ("True", "False"):
        return cell == "True"
    for kind in (int, float):
        try:
            return kind(cell)
        except ValueError:
            pass
    return cell


def _options(section, args) -> dict:
    """The command-line options a section's ``run`` takes, by parameter name (those not given
    left to the section's defaults)."""
    taken = inspect.signature(section.run).parameters
    given = {"rtl": args.rtl, "seed": args.seed, "count": args.count, "jobs": args.jobs,
             "full": args.full or None, "models": args.models}
    return {k: v for k, v in given.items() if k in taken and v is not None}


def _record(chosen: list[str], text: list[str]) -> None:
    """Replace each written section's block in docs/benchmarks.md, keeping the others."""
    path = RECORD
    fresh = "# Benchmarks\n\nWritten by `scripts/bench.py --write`.\n"
    old = path.read_text() if path.exists() else fresh
    blocks = _split_blocks(old)
    for name, block in _split_blocks("\n".join(text)).items():
        if name in chosen:
            blocks[name] = block + _notes(blocks.get(name, ""), block)
    head = old.split("\n## ", 1)[0].rstrip() + "\n"
    path.write_text(head + "".join("\n" + blocks[k] for k in sorted(blocks)))


def _notes(block: str, fresh: str) -> str:
    """A recorded block without its heading, the tables ``fresh`` measures again (each found by
    its header row; a summary's with its ``###`` heading) and that run's stamp line: the
    analysis written by hand around them (what the figures mean, earlier runs), kept when the
    tables are measured again."""
    fresh_lines = fresh.split("\n")
    headers = [_columns(ln) for ln in _table_starts(fresh_lines)]
    headings = {ln for ln in fresh_lines if ln.startswith("### ")}
    lines = block.split("\n")[1:]
    kept, skipping = [], False
    for index, line in enumerate(lines):
        if line.startswith("|") and (index == 0 or not lines[index - 1].startswith("|")):
            skipping = _columns(line) in headers
            if skipping:
                headers.remove(_columns(line))  # only the first table with that header
        if skipping and line.startswith("|"):
            continue
        skipping = False
        if line not in headings:
            kept.append(line)
    stamp = next((i for i, ln in enumerate(kept) if ln.startswith("Measured ")), None)
    if stamp is not None:
        kept = kept[:stamp] + kept[stamp + 1:]
    notes = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n")
    return f"\n{notes}\n" if notes else ""


def _table_starts(lines: list[str]) -> list[str]:
    """The header row of each Markdown table in ``lines``."""
    return [ln for i, ln in enumerate(lines)
            if ln.startswith("|") and (i == 0 or not lines[i - 1].startswith("|"))]


def _columns(row: str) -> list[str]:
    """A Markdown table row's cells, without the padding that a column's widest value sets."""
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _split_blocks(text: str) -> dict[str, str]:
    stamp = next((ln for ln in text.splitlines() if ln.startswith("Measured ")), "")
    blocks = {}
    for chunk in text.split("\n## ")[1:]:
        name = chunk.split(":", 1)[0].strip()
        body = "## " + chunk.rstrip() + "\n"
        # The fresh run's one stamp line goes under each of its tables; a recorded block keeps
        # its own date.
        if stamp and "\nMeasured " not in body:
            body += f"\n{stamp}\n"
        blocks[name] = body
    return blocks


if __name__ == "__main__":
    main()
