"""glc run --report: the per-step table's numbers against values computed from the shapes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from glc.cli import main
from glc.report import StepRow, legend

PROGRAMS = Path(__file__).parents[1] / "programs"
N, PORT = 16, 16  # n16: a 16x16 array, a 16-byte DRAM port


def glc(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def limit(ideal: int, moved: int) -> int:
    return max(ideal, -(-moved // PORT))


def test_report_of_the_tiny_cnn_names_each_step_and_its_limits():
    result = glc("run", PROGRAMS / "cnn-int8", "--engine", "isa", "--report", "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    steps = figures["steps"]
    # conv 2->4 channels, 3x3 pad 1 over 6x6: 36 positions x 4 filters x 18 taps; int8 data
    # (72 B), filters (72 B), requantized result (144 B).
    conv_macs, conv_bytes = 36 * 4 * 18, 72 + 72 + 144
    # 2x2/2 max pool: 36 outputs of 4 rows on the vector unit, 144 B in, 36 B out.
    pool_rows, pool_bytes = 36 * 4, 144 + 36
    # dense 36 -> 5, int32 result: 36 + 180 + 20 bytes.
    dense_macs, dense_bytes = 36 * 5, 36 + 180 + 4 * 5
    # The stride-2 pool reads the conv's NCHW result in strided runs (docs/isa.md, revision
    # 2.4): no repack of it first.
    expected = [("features", "array", conv_macs, -(-conv_macs // N ** 2), conv_bytes),
                ("pooled", "vector", None, -(-pool_rows // N), pool_bytes),
                ("result", "array", dense_macs, -(-dense_macs // N ** 2), dense_bytes)]
    assert len(steps) == len(expected)
    for step, (node, unit, macs, ideal, moved) in zip(steps, expected, strict=True):
        assert (step["node"], step["unit"], step["macs"], step["ideal"]) == \
            (node, unit, macs, ideal)
        assert step["bytes"] == moved and step["limit"] == limit(ideal, moved)
        assert step["roofline_efficiency"] == (round(step["limit"] / step["cycles"], 4)
                                               if step["limit"] else None)
    assert figures["macs"] == conv_macs + dense_macs
    assert figures["roofline_cycles"] == sum(s["limit"] for s in steps)
    assert figures["ideal_cycles"] == sum(s["ideal"] for s in steps)
    assert figures["roofline_efficiency"] == round(figures["roofline_cycles"] /
                                                   figures["cycles"], 4)
    # One image, the cycle model exact: the kernels' cycles alone add up to at most the whole.
    assert sum(s["cycles"] for s in steps) <= figures["cycles"]


def test_report_table_has_a_row_per_step_and_the_totals():
    result = glc("run", PROGRAMS / "residual-add-int8", "--engine", "isa", "--report")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    header = lines.index(next(ln for ln in lines if ln.startswith("step")))
    assert lines[header].split() == ["step", "node", "unit", "MACs", "cycles", "ideal", "limit",
                                     "eff(ideal)", "eff(limit)"]
    end = next(i for i, ln in enumerate(lines) if ln.startswith("total"))
    rows = [ln.split() for ln in lines[header + 1:end + 1]]
    assert [r[0] for r in rows] == ["kernel1", "fold1", "total"]
    assert rows[1][2] == "vector" and rows[1][3] == "-"
    summary = next(ln for ln in lines if ln.startswith("cycles "))
    assert f"roofline limit {rows[-1][6]} " in summary


def test_run_without_report_gives_the_program_totals_only():
    result = glc("run", PROGRAMS / "matmul-int8", "--engine", "isa", "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert "steps" not in figures
    moved = 12 * 20 + 20 * 7 + 4 * 12 * 7
    assert figures["compulsory_bytes"] == moved
    assert figures["roofline_cycles"] == limit(-(-12 * 20 * 7 // N ** 2), moved)


def test_report_of_a_host_only_program_has_host_rows_and_no_limit():
    result = glc("run", PROGRAMS / "softmax-f64", "--engine", "isa", "--report", "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert [s["unit"] for s in figures["steps"]] == ["host"]
    assert figures["steps"][0]["cycles"] is None
    assert figures["roofline_cycles"] == 0 and figures["roofline_efficiency"] is None


# A 3x3 conv over an NCHW image of 16 channels at 7×7: on n4 the search copies the image to
# NHWC first (glc/lower/repack.py; at 6×6 the pixels walked 3 × 2 make the copy unneeded).
NCHW_CONV = """(input data (shape 1 16 7 7) int8)
(input weights (shape 16 16 3 3) int8)
(compute (requantize 8) (access-transpose (compute dot-product (access-cartesian-product
 (access (access-tensor weights) 1)
 (access (access-squeeze (access-windows (access (access-pad (access-pad (access-tensor data)
   zero-padding 2 1 1) zero-padding 3 1 1) 1) (shape 16 3 3) (shape 1 1 1)) 1) 3)))
 (list 1 0 2 3)))
"""


def test_a_repack_is_a_row_named_after_the_kernel_it_serves(tmp_path):
    """The copy is a vector row with no limit of its own, its cycles in the total, which is
    why the program's efficiency is the limit over all the cycles."""
    (tmp_path / "conv.gls").write_text(NCHW_CONV)
    result = glc("run", tmp_path, "--engine", "isa", "--config", "n4", "--report", "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["match"] is True
    copy, kernel = figures["steps"]
    assert (copy["unit"], copy["macs"], copy["limit"], copy["roofline_efficiency"]) == \
        ("vector", None, 0, None)
    assert copy["node"] == f"{kernel['node']}: repack" and kernel["unit"] == "array"
    assert copy["cycles"] + kernel["cycles"] <= figures["cycles"]
    assert figures["roofline_cycles"] == kernel["limit"]


def test_report_explains_the_kinds_of_step_it_lists():
    # Issue 41 item 15: the step kinds were explained nowhere. The legend follows the totals
    # and names the kinds the table holds, no others.
    result = glc("run", PROGRAMS / "residual-add-int8", "--engine", "isa", "--report")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    legend = lines[next(i for i, ln in enumerate(lines) if ln.startswith("total")) + 1:]
    assert legend[0].startswith("steps (host and copy steps are not timed)")
    assert legend[-1].startswith("memory: DRAM peak ")  # the table's last line, after it
    assert [ln.split()[0] for ln in legend[1:-1]] == ["kernelN", "foldN"]
    assert "array" in legend[1] and "vector unit" in legend[2]


def test_legend_names_host_copy_and_concatenation_bands():
    rows = [StepRow("concat1.0", "", "vector"), StepRow("concat1.1", "", "vector"),
            StepRow("host1", "", "host"), StepRow("copy1", "", "copy"),
            StepRow("repack2", "", "vector")]
    assert [ln.split()[0] for ln in legend(rows)] == ["repackN", "concatN.M", "hostN", "copyN"]
    assert legend([]) == []


def test_report_gives_the_memory_plans_peak_against_the_dram():
    """The peak holds every tensor in DRAM and, when an image runs, the image above the tensors
    still live: no image's place may reach below it, and it fits the config's DRAM."""
    from glc.compiler import compile_program
    from glc.hwconfig import load_config
    from glc.inputs import load
    from glc.isa.fields import WORD_BYTES
    from glc.isa.simulator import program_base
    from glc.lower.image import Image, schedule
    from glc.rewrites import DEFAULT, select

    config = load_config("n16")
    program = compile_program(load(PROGRAMS / "resnet-block-28-int8"),
                              rules=select(DEFAULT, 16), config=config).lowered
    f = program.figures()
    ends = [b.address + b.nbytes for b in program.buffers.values()
            if b.address < config.dram_bytes]
    assert f["dram_data_bytes"] == max(ends) and f["dram_bytes"] == config.dram_bytes
    images = [r for r in schedule(program) if isinstance(r, Image)]
    for image in images:  # the image's bytes above the live tensors: within the peak
        used = config.dram_bytes - program_base(config, len(image.words))
        assert used >= WORD_BYTES * len(image.instructions)
        assert program.live_dram_bytes(image.steps[0]) + WORD_BYTES * len(image.instructions) \
            <= f["dram_peak_bytes"] <= config.dram_bytes
    assert f["dram_peak_bytes"] > f["dram_data_bytes"]  # here the image sits above the data
    result = glc("run", PROGRAMS / "resnet-block-28-int8", "--engine", "isa", "--report")
    assert result.exit_code == 0, result.output
    peak = f"{f['dram_peak_bytes']:,}".replace(",", " ")
    assert f"memory: DRAM peak {peak} of 67 108 864 bytes (" in result.stdout
