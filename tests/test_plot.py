"""glc run --plot: the picture written in the suffix's format, a bar per step and a roofline
point per array kernel under the configuration's roof; without matplotlib, one line naming the
extra to install."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.plot import report_figure
from glc.report import kernel_limits, step_rows
from glc.rewrites import DEFAULT, select

pytest.importorskip("matplotlib")  # the plot extra; the suite's install line brings it

PROGRAMS = Path(__file__).parents[1] / "programs"
SVG = "{http://www.w3.org/2000/svg}svg"


def glc(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_plot_writes_an_svg(tmp_path):
    path = tmp_path / "cnn.svg"
    result = glc("run", PROGRAMS / "cnn-int8", "--engine", "isa", "--plot", path)
    assert result.exit_code == 0, result.output
    root = ElementTree.parse(path).getroot()
    assert root.tag == SVG
    texts = {"".join(t.itertext()) for t in root.iter(f"{SVG[:-3]}text")}
    # A bar per step, labelled with the define it computes (tests/test_report.py's names).
    assert {"kernel1: features", "fold1: pooled", "kernel2: result"} <= texts
    assert "kernel1" not in result.stdout  # --plot alone draws the steps, prints no table


def test_plot_writes_a_png(tmp_path):
    path = tmp_path / "cnn.png"
    assert glc("run", PROGRAMS / "cnn-int8", "--engine", "isa", "--plot", path).exit_code == 0
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width > 500 and height > 500


def test_plot_writes_an_html_page_holding_the_svg(tmp_path):
    path = tmp_path / "cnn.html"
    assert glc("run", PROGRAMS / "cnn-int8", "--engine", "isa", "--plot", path).exit_code == 0
    text = path.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<title>cnn-int8 on the isa (n16)</title>" in text
    svg = text[text.index("<svg"):text.index("</svg>") + len("</svg>")]
    assert ElementTree.fromstring(svg).tag == SVG


def test_report_with_plot_keeps_the_json_steps(tmp_path):
    result = glc("run", PROGRAMS / "cnn-int8", "--engine", "isa", "--report", "--json",
                 "--plot", tmp_path / "p.svg")
    assert result.exit_code == 0, result.output
    assert [s["step"] for s in json.loads(result.stdout)["steps"]] == ["kernel1", "fold1",
                                                                      "kernel2"]


def test_the_figure_has_a_bar_per_step_and_a_roofline_point_per_array_kernel():
    config = load_config("n4")
    bundle = load(PROGRAMS / "cnn-int8")
    program = compile_program(bundle, rules=select(DEFAULT, config.array_size),
                              config=config).lowered
    rows = step_rows(program, kernel_limits(program))
    figures = {"cycles": 1, "engine": "isa", "roofline_cycles": 1, "ideal_cycles": 1}
    steps, roof = report_figure(rows, figures, config, "t").axes
    assert len(steps.patches) == len(rows)  # every step here is a kernel: a bar each
    assert sorted(p.get_width() for p in steps.patches) == sorted(r.cycles for r in rows)
    array = [r for r in rows if r.unit == "array"]
    points = [c.get_offsets()[0] for c in roof.collections]
    assert len(points) == len(array) == 2
    for (x, y), r in zip(points, array, strict=True):
        assert (x, y) == pytest.approx((r.macs / r.bytes, r.macs / r.cycles))
        assert y <= min(16, 16 * x)  # under n4's roof: 4² MACs and 16 bytes a cycle
    roofline = roof.lines[0]
    assert max(roofline.get_ydata()) == 16


@pytest.mark.parametrize("name", ["cnn.pdf", "cnn"])
def test_a_plot_format_it_cannot_write_is_refused_before_the_work(tmp_path, name):
    result = glc("run", PROGRAMS / "cnn-int8", "--engine", "isa", "--plot", tmp_path / name,
                 "-v")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--plot writes .svg, .png, .html" in lines[0]


def test_without_matplotlib_plot_names_the_extra(tmp_path, monkeypatch):
    # None in sys.modules makes `import matplotlib` raise ImportError, as where it is absent.
    for module in [m for m in sys.modules if m.split(".")[0] == "matplotlib"]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    path = tmp_path / "cnn.svg"
    result = glc("run", PROGRAMS / "cnn-int8", "--engine", "isa", "--plot", path, "-v")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        "error: --plot needs matplotlib, which is not installed: pip install 'glc[plot]'"]
    assert not path.exists()
