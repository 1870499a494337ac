"""glc run --trace: a valid Trace Event Format file, a track per unit, and each unit's slices
summing to its busy counter (docs/isa.md, "Counters"); the RTL's record against the model's is
tests/hw/test_rtl_trace.py."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.compiler import compile_program
from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.inputs import load
from glc.isa.fields import UNITS
from glc.lower.execute import execute
from glc.rewrites import DEFAULT, select
from glc.trace import TRACKS, busy_cycles, rtl_slices, stall_track

PROGRAMS = Path(__file__).parents[1] / "programs"
# Array and vector kernels, several images (mlp), host steps between them (softmax).
TRACED = ("cnn-int8", "conv2d-nchw-int8", "maxpool2x2-int8", "mlp-int8", "residual-add-int8",
          "softmax-f64")


def glc(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def traced(name: str, config_name: str = "n16", engine: str = "isa"):
    """The outcome and trace records of running programs/NAME."""
    config = load_config(config_name)
    bundle = load(PROGRAMS / name, None, None)
    compiled = compile_program(bundle, rules=select(DEFAULT, config.array_size), config=config)
    records: list = []
    outcome = execute(compiled.lowered, bundle.arrays, engine, trace=records)
    return outcome, records


def test_trace_file_is_trace_event_json_with_a_thread_per_track(tmp_path):
    path = tmp_path / "cnn.json"
    result = glc("run", PROGRAMS / "cnn-int8", "--engine", "isa", "--trace", path)
    assert result.exit_code == 0, result.output
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sorted(names.values()) == sorted(TRACKS)  # one thread per track, each named once
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in events)
    for event in events:
        assert event["ph"] in ("M", "X", "i") and event["pid"] == 1
        if event["ph"] == "M":
            continue
        assert event["tid"] in names
        assert isinstance(event["ts"], int) and event["ts"] >= 0
        assert isinstance(event["name"], str) and event["name"]
        if event["ph"] == "X":
            assert isinstance(event["dur"], int) and event["dur"] > 0
    # Each unit's events are named by mnemonic and pc and carry the instruction's fields.
    matmuls = [e for e in events if names.get(e.get("tid")) == "exec" and e["ph"] == "X"]
    assert matmuls and all(e["name"] == f"matmul pc {e['args']['pc']}" for e in matmuls)
    assert all("rows" in e["args"] and e["args"]["asm"].startswith("matmul") for e in matmuls)
    # The steps track names each kernel of the program.
    steps = {e["name"] for e in events if e["ph"] == "X" and names[e["tid"]] == "steps"}
    assert steps == {"kernel1", "fold1", "kernel2"}


@pytest.mark.parametrize("name", TRACED)
def test_each_units_slices_sum_to_its_counters(name):
    outcome, records = traced(name)
    images = [r for r in records if r.instructions]
    assert len(images) == len(outcome.counters)
    for record, counters in zip(images, outcome.counters, strict=True):
        sums = busy_cycles(record.slices)
        assert record.cycles == counters.cycles
        for unit in UNITS:
            assert sums[unit] == getattr(counters, f"busy_{unit}"), unit
            waits = getattr(counters, f"stall_token_{unit}") + \
                getattr(counters, f"stall_dram_{unit}", 0)
            assert sums[stall_track(unit)] == waits, unit


@pytest.mark.parametrize("name", TRACED)
def test_a_threads_slices_never_overlap(name, tmp_path):
    """Perfetto draws a thread's complete events as a stack: one unit, one instruction at a
    time, the images end to end."""
    path = tmp_path / "t.json"
    assert glc("run", PROGRAMS / name, "--engine", "isa", "--trace", path).exit_code == 0
    spans = defaultdict(list)
    for event in json.loads(path.read_text())["traceEvents"]:
        if event["ph"] == "X":
            spans[event["tid"]].append((event["ts"], event["ts"] + event["dur"]))
    for found in spans.values():
        found.sort()
        assert all(end <= start for (_, end), (start, _) in itertools.pairwise(found))


def test_host_steps_are_instants_between_the_images(tmp_path):
    _, records = traced("softmax-f64")
    host = [r for r in records if not r.instructions]
    assert host, "softmax-f64 has host steps"
    path = tmp_path / "s.json"
    assert glc("run", PROGRAMS / "softmax-f64", "--engine", "isa", "--trace", path).exit_code == 0
    events = json.loads(path.read_text())["traceEvents"]
    instants = [e["name"] for e in events if e["ph"] == "i" and e.get("args", {}).get(
        "host step")]
    assert instants == [r.steps[0][0] for r in host]


def test_a_trace_path_that_is_not_json_is_refused_before_the_work(tmp_path):
    result = glc("run", PROGRAMS / "cnn-int8", "--engine", "isa", "--trace", tmp_path / "t.txt",
                 "-v")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"{tmp_path / 't.txt'}: error: --trace writes a Trace Event Format .json file: give a path "
        "ending in .json"]


def test_a_trace_path_in_no_folder_is_refused_before_the_work(tmp_path):
    path = tmp_path / "missing" / "t.json"
    result = glc("run", PROGRAMS / "cnn-int8", "--engine", "isa", "--trace", path, "-v")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"{path}: error: no such folder {path.parent} to write into"]


def test_an_rtl_record_cut_short_is_an_error():
    with pytest.raises(GlcError, match="ends before the machine stopped"):
        rtl_slices("0 P 0 0\n1 I 0 0\n1 B 0 1\n", [])
    with pytest.raises(GlcError, match="line 2: not a unit trace line"):
        rtl_slices("0 P 0 0\nrubbish\n", [])
