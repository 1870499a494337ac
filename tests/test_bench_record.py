"""scripts/bench.py --write: a section measured again gets its fresh table and stamp, and keeps
the analysis written around the old table."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import bench  # noqa: E402

OLD = """## onnx: networks

Why the rows differ.

| network | cycles |
|---|---|
| a | 10 |

Measured 2026-12-01, vm.

What the 10 cycles were spent on.

### An earlier run

| other | table |
|---|---|
"""

FRESH = """## onnx: networks

| network | cycles |
|---|---|
| a | 9 |

Measured 2026-12-02, vm.
"""


def test_a_measured_block_keeps_its_notes_and_drops_its_old_table():
    block = FRESH + bench._notes(OLD, FRESH)
    assert block.count("| network | cycles |") == 1 and "| a | 9 |" in block
    assert "| a | 10 |" not in block and "2026-12-01" not in block
    for kept in ("Why the rows differ.", "What the 10 cycles were spent on.", "### An earlier run",
                 "| other | table |"):
        assert kept in block
    assert bench._notes(FRESH, FRESH) == ""


def test_the_old_table_is_found_whatever_its_columns_widths():
    """A column's width follows its widest value, so a fresh run's header row can be padded
    differently from the recorded one's: the old table is still the one replaced."""
    padded = OLD.replace("| network | cycles |", "| network   | cycles |")
    block = FRESH + bench._notes(padded, FRESH)
    assert "| a | 10 |" not in block and "| network   | cycles |" not in block
    assert "| other | table |" in block


SUMMARY = """## models: suite

| model | cycles |
|---|---|
| a | 9 |

### refusals, ranked

| refusal | blocks |
|---|---|
| X | 2 |

Measured 2026-12-02, vm.
"""


def test_a_sections_summary_tables_are_replaced_with_their_headings():
    """A section's summaries (a ``###`` heading and its table after the rows) are measured
    again too: the recorded ones go, the notes between and after them stay."""
    old = SUMMARY.replace("| a | 9 |", "| a | 10 |").replace("| X | 2 |", "| Y | 1 |").replace(
        "Measured 2026-12-02, vm.", "Why the refusals rank so.\n\nMeasured 2026-12-01, vm.")
    block = SUMMARY + bench._notes(old, SUMMARY)
    assert block.count("### refusals, ranked") == 1 and block.count("| refusal | blocks |") == 1
    assert "| Y | 1 |" not in block and "| a | 10 |" not in block
    assert "Why the refusals rank so." in block and "2026-12-01" not in block
