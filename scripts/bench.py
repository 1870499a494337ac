"""glc's one benchmark entry point: prints a table of figures per section.

Each section is a module in ``scripts/benchmarks/`` that defines ``SECTION`` (its name, used by
``--only``), ``TITLE`` and ``run() -> list[dict]`` (one row per measured case; keys are the
columns; a ``run`` with an ``rtl`` parameter is given ``--rtl``). ``--write`` also records the
table, with the machine and date, in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import inspect
import json
import pkgutil
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import benchmarks  # noqa: E402


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
    args = parser.parse_args()
    chosen = args.only or list(found)
    results = {name: found[name].run(**_options(found[name], args)) for name in chosen}
    if args.json:
        print(json.dumps(results, indent=2, default=str))
        return
    stamp = (f"{datetime.date.today().isoformat()}, {platform.node()}, "
             f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    text = [f"Measured {stamp}.", ""]
    for name in chosen:
        text += [f"## {name}: {found[name].TITLE}", "", format_table(results[name]), ""]
    print("\n".join(text))
    if args.write:
        _record(chosen, text)


def _options(section, args) -> dict:
    """The command-line options a section's ``run`` takes, by parameter name (those not given
    left to the section's defaults)."""
    taken = inspect.signature(section.run).parameters
    given = {"rtl": args.rtl, "seed": args.seed, "count": args.count}
    return {k: v for k, v in given.items() if k in taken and v is not None}


def _record(chosen: list[str], text: list[str]) -> None:
    """Replace each written section's block in docs/benchmarks.md, keeping the others."""
    path = HERE.parent / "docs" / "benchmarks.md"
    fresh = "# Benchmarks\n\nWritten by `scripts/bench.py --write`.\n"
    old = path.read_text() if path.exists() else fresh
    blocks = _split_blocks(old)
    for name, block in _split_blocks("\n".join(text)).items():
        if name in chosen:
            blocks[name] = block + _notes(blocks.get(name, ""), block)
    head = old.split("\n## ", 1)[0].rstrip() + "\n"
    path.write_text(head + "".join("\n" + blocks[k] for k in sorted(blocks)))


def _notes(block: str, fresh: str) -> str:
    """A recorded block without its heading, the table ``fresh`` measures again (the first with
    its header row) and that run's stamp line: the analysis written by hand around them (what
    the figures mean, earlier runs), kept when the table is measured again."""
    header = next((_columns(ln) for ln in fresh.split("\n") if ln.startswith("|")), None)
    lines = block.split("\n")[1:]
    table = next((i for i, ln in enumerate(lines) if ln.startswith("|") and _columns(ln) == header),
                 None)
    if table is not None:
        end = next((i for i in range(table, len(lines)) if not lines[i].startswith("|")),
                   len(lines))
        lines = lines[:table] + lines[end:]
    stamp = next((i for i, ln in enumerate(lines) if ln.startswith("Measured ")), None)
    if stamp is not None:
        lines = lines[:stamp] + lines[stamp + 1:]
    notes = "\n".join(lines).strip("\n")
    return f"\n{notes}\n" if notes else ""


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
