"""scripts/bench.py --plot: the layer and model suites' efficiencies drawn from the tables
docs/benchmarks.md records (read back as the rows ``--write`` wrote) or from a fresh run."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import bench  # noqa: E402

pytest.importorskip("matplotlib")  # the plot extra; the suite's install line brings it

ROWS = [{"network": "ResNet", "layer": "3x3 64 @56", "layout": "nchw-oihw", "MACs": 115605504,
         "eff(ideal)": 0.9797, "eff(limit)": 0.9797, "match": True},
        {"network": "MAC-weighted", "layer": "1 rows", "MACs": 115605504, "eff(ideal)": 0.9797,
         "eff(limit)": 0.9797, "costing ms": "median 0.4, max 2.1"}]


def test_recorded_rows_read_back_what_write_records(tmp_path, monkeypatch):
    record = tmp_path / "benchmarks.md"
    record.write_text("# Benchmarks\n")
    monkeypatch.setattr(bench, "RECORD", record)
    text = ["Measured 2026-12-02, vm.", "", "## layers: the layer suite", "",
            bench.format_table(ROWS), ""]
    bench._record(["layers"], text)
    assert bench.recorded("layers") == ROWS
    assert bench.recorded("onnx") == []
    layers = bench.sections()["layers"]
    assert layers.efficiencies(bench.recorded("layers")) == [
        ("ResNet 3x3 64 @56 nchw-oihw", 0.9797, 0.9797)]  # not the headline row


def test_plot_draws_the_recorded_suites_without_running_them(tmp_path):
    path = tmp_path / "bench.svg"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--plot",
                           str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # nothing measured, nothing printed
    root = ElementTree.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = {"".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")}
    found = bench.sections()
    for names in bench.SUITES.values():  # every recorded row of each suite has its bar's label
        for name in names:
            rows = found[name].efficiencies(bench.recorded(name))
            assert rows, name
            assert {label for label, _, _ in rows} <= texts


def test_plot_to_a_format_it_cannot_write_is_one_line(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), "--plot",
                           str(tmp_path / "bench.pdf")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"{tmp_path / 'bench.pdf'}: error: --plot writes .svg, .png, .html (by the file's "
        "suffix), not '.pdf'"]
