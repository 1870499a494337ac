"""glc regress: every program compiled, run and compared, its cycles held to the committed
baselines; regressions, improvements, new programs, wrong results, JUnit XML, parallel runs."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.hwconfig import load_config

ROOT = Path(__file__).parents[2]
PROGRAMS = ROOT / "programs"
BASELINES = ROOT / "hw" / "baselines"
NAMES = sorted(p.name for p in PROGRAMS.iterdir() if p.is_dir())


def unfit(config: str) -> set[str]:
    """The programs whose inputs and result alone outgrow the config's DRAM (the 256x256 GEMM,
    the 64-channel conv, the 112x112 pool and the ResNet blocks on n4): they cannot run there,
    whatever the compiler does."""
    dram = load_config(config).dram_bytes
    return {name for name in NAMES
            if sum(np.load(f, mmap_mode="r").nbytes
                   for f in (PROGRAMS / name).glob("*.npy")) > dram}


# Programs that could fit but that today's lowering does not fit: each is a known defect, with
# the reason.  The tests below check that each is still reported unfit, so fixing one fails them
# until its row here is removed and its baseline recorded.
LOWERING_GAPS = {
    "n4": {"attention-qkt-int8":
           "Kᵀ loads by transposing LOADs now, but a 4x4 array needs 12 673 instructions "
           "(an 811 KB image, streamed from DRAM) for its 16 384 tile products: beside 80 KB of "
           "data that outgrows n4's 128 KiB; only a larger DRAM or array runs it"},
    "n16": {},
}


def not_run(config: str) -> set[str]:
    return unfit(config) | set(LOWERING_GAPS[config])


def glc(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def committed(config: str) -> dict:
    return json.loads((BASELINES / f"{config}.json").read_text())


def regress_json(*args) -> tuple[int, dict, str]:
    """Exit status, the --json object and stderr of a regress run on the ISA simulator."""
    result = glc("regress", *args, "--engine", "isa", "--json", "--jobs", "1")
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.stderr  # a crash's traceback is data in its row
    return result.exit_code, json.loads(result.stdout), result.stderr


def on_programs(*args) -> tuple[int, dict, str]:
    """regress_json over programs/."""
    return regress_json(PROGRAMS, *args)


def rows_by_name(report: dict) -> dict[str, dict]:
    return {row["name"]: row for row in report["rows"]}


def edited_baselines(tmp_path: Path, config: str = "n16", **cycles: int) -> Path:
    """A tmp copy of the committed baselines with some programs' cycles replaced."""
    data = committed(config)
    for name, value in cycles.items():
        data[name.replace("_", "-")]["cycles"] = value
    path = tmp_path / f"{config}.json"
    path.write_text(json.dumps(data))
    return path


def copy_program(name: str, into: Path) -> Path:
    target = into / name
    shutil.copytree(PROGRAMS / name, target)
    return target


# ---- the committed baselines ---------------------------------------------------------------

@pytest.mark.parametrize("config", ["n16", "n4"])
def test_every_program_has_a_well_formed_baseline(config):
    data = committed(config)
    assert sorted(data) == sorted(set(NAMES) - not_run(config))
    for entry in data.values():
        assert set(entry) == {"cycles", "predicted_cycles", "ideal_cycles", "engine"}
        assert entry["engine"] == "rtl"
        # A program with kernels cannot beat the physical limit; the cycle model is within 5 %.
        assert entry["cycles"] >= entry["ideal_cycles"] >= 0
        assert abs(entry["cycles"] - entry["predicted_cycles"]) <= 0.05 * entry["cycles"]


@pytest.mark.parametrize("config", ["n16", "n4"])
def test_programs_pass_against_the_committed_baselines(config):
    status, report, _ = regress_json(PROGRAMS, "--config", config)
    assert status == 0
    baselines = committed(config)
    rows = rows_by_name(report)
    assert sorted(rows) == NAMES
    for name in not_run(config):
        assert rows.pop(name)["status"] == "unfit"
    for name, row in rows.items():
        assert row["status"] == "pass" and row["match"] is True, row
        assert row["cycles"] == baselines[name]["cycles"] == row["baseline"]
        assert row["predicted_cycles"] == baselines[name]["predicted_cycles"]
        assert row["ideal_cycles"] == baselines[name]["ideal_cycles"]
        assert row["baseline_engine"] == "rtl" and row["engine"] == "isa"
    assert (report["passed"], report["failed"], report["new"]) == (len(NAMES), 0, 0)
    assert report["unfit"] == len(not_run(config))


def test_a_program_that_stops_fitting_its_config_fails(tmp_path):
    """unfit passes without a baseline on that config, but fails once one says it used to fit."""
    name = sorted(unfit("n4"))[0]
    copy_program(name, tmp_path)
    baselines = tmp_path / "n4.json"
    baselines.write_text("{}")
    status, report, _ = regress_json(tmp_path, "--config", "n4", "--baselines", baselines)
    assert status == 0 and report["rows"][0]["status"] == "unfit"
    assert "bytes of DRAM" in report["rows"][0]["reason"]
    baselines.write_text(json.dumps({name: committed("n16")[name]}))
    status, report, stderr = regress_json(tmp_path, "--config", "n4", "--baselines", baselines)
    assert status == 1 and report["rows"][0]["status"] == "unfit" and report["failed"] == 1
    assert name in stderr


def test_table_names_the_columns_the_engines_and_ends_in_the_summary(monkeypatch):
    monkeypatch.chdir(ROOT)  # DIR defaults to programs/ in the working directory
    result = glc("regress", "--engine", "isa", "-k", "matmul", "--jobs", "1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0].split() == ["program", "match", "cycles", "baseline", "Δ", "predicted",
                                "ideal", "efficiency", "limit", "eff(limit)", "status"]
    cycles = committed("n16")["matmul-int8"]["cycles"]
    ideal = committed("n16")["matmul-int8"]["ideal_cycles"]
    # matmul-int8: (12x20)·(20x7) int8, int32 result, on n16's 16-byte port: read once, written
    # once, 12·20 + 20·7 + 4·12·7 = 716 bytes, 45 port cycles > 7 ideal cycles.
    limit = max(ideal, -(-(12 * 20 + 20 * 7 + 4 * 12 * 7) // 16))
    assert lines[1].split() == ["matmul-int8", "yes", str(cycles), str(cycles), "0", str(cycles),
                                str(ideal), f"{ideal / cycles:.4f}", str(limit),
                                f"{limit / cycles:.4f}", "pass"]
    assert any("baselines recorded on rtl, this run on isa" in line for line in lines)
    assert lines[-2] == "config n16, engine isa, baselines hw/baselines/n16.json, tolerance 0 %"
    assert lines[-1] == "1 passed, 0 failed"


def test_json_rows_carry_the_roofline_limit_and_its_efficiency(tmp_path):
    copy_program("maxpool2x2-int8", tmp_path)
    status, report, _ = regress_json(tmp_path)
    (row,) = report["rows"]
    # A 2x2/2 max pool of 3x7x7 int8 (min-padded to 8x8) on the vector unit: 48 outputs of 4
    # rows, 16 a cycle; the 147 pixels read once and the 48 results written once, 16 bytes a
    # cycle.
    ideal, limit = -(-48 * 4 // 16), max(-(-48 * 4 // 16), -(-(147 + 48) // 16))
    assert (row["ideal_cycles"], row["roofline_cycles"]) == (ideal, limit)
    assert row["roofline_efficiency"] == round(limit / row["cycles"], 4)


@pytest.mark.rtl
def test_one_small_program_on_the_rtl_meets_its_n4_baseline():
    result = glc("regress", PROGRAMS, "--config", "n4", "--engine", "rtl", "-k", "dense-int8",
                 "--json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["rows"]
    entry = committed("n4")["dense-int8"]
    assert row["engine"] == row["baseline_engine"] == "rtl"
    assert row["status"] == "pass" and row["match"] is True
    assert row["cycles"] == entry["cycles"] and row["predicted_cycles"] == entry["predicted_cycles"]


# ---- statuses ------------------------------------------------------------------------------

def test_a_baseline_edited_down_is_a_regression_with_exit_status_1(tmp_path):
    cycles = committed("n16")["conv2d-nchw-int8"]["cycles"]
    lower = cycles - 49
    path = edited_baselines(tmp_path, conv2d_nchw_int8=lower)
    status, report, stderr = on_programs("--baselines", path)
    assert status == 1
    expected = f"cycles {cycles} > baseline {lower} (+{100 * 49 / lower:.1f} %)"
    row = rows_by_name(report)["conv2d-nchw-int8"]
    assert (row["status"], row["reason"], row["delta"]) == ("regression", expected, 49)
    assert [r["name"] for r in report["rows"] if r["status"] != "pass"] == ["conv2d-nchw-int8"]
    assert stderr.strip().splitlines() == [
        f"error: 1 of {len(NAMES)} programs failed: conv2d-nchw-int8 ({expected})"]
    # The file was only read.
    assert json.loads(path.read_text())["conv2d-nchw-int8"]["cycles"] == lower


def test_verbose_prints_each_judged_row_as_it_comes(tmp_path):
    cycles = committed("n16")["conv2d-nchw-int8"]["cycles"]
    path = edited_baselines(tmp_path, conv2d_nchw_int8=cycles - 1)
    result = glc("-v", "regress", PROGRAMS, "--baselines", path, "--engine", "isa", "-k", "conv",
                 "--jobs", "2")
    progress = [line.split(",")[0] for line in result.stderr.splitlines()[:-1]]
    assert progress == [f"{n}: {'regression' if n == 'conv2d-nchw-int8' else 'pass'}"
                        for n in NAMES if "conv" in n]


def test_a_regression_within_the_tolerance_passes(tmp_path):
    cycles = committed("n16")["conv2d-nchw-int8"]["cycles"]
    path = edited_baselines(tmp_path, conv2d_nchw_int8=round(cycles / 1.02))  # about +2.0 %
    status, report, _ = on_programs("--baselines", path, "--tolerance", "2.5", "-k", "nchw-int8")
    assert status == 0 and rows_by_name(report)["conv2d-nchw-int8"]["status"] == "pass"
    status, _, _ = on_programs("--baselines", path, "--tolerance", "1.5", "-k", "nchw-int8")
    assert status == 1


def test_an_improvement_is_reported_and_update_rewrites_the_baselines(tmp_path):
    original = committed("n16")
    cycles = original["matmul-int8"]["cycles"]
    path = edited_baselines(tmp_path, matmul_int8=cycles + 30)
    data = json.loads(path.read_text())
    data["vanished-program"] = dict(original["dense-int8"])
    path.write_text(json.dumps(data))

    status, report, _ = on_programs("--baselines", path)
    assert status == 0
    row = rows_by_name(report)["matmul-int8"]
    assert row["status"] == "improved" and row["delta"] == -30
    assert row["reason"] == f"cycles {cycles} < baseline {cycles + 30} " \
                            f"({-100 * 30 / (cycles + 30):.1f} %)"
    assert report["improved"] == 1 and report["vanished"] == ["vanished-program"]
    assert json.loads(path.read_text()) == data  # reporting does not write

    status, report, _ = on_programs("--baselines", path, "--update-baselines")
    assert status == 0 and report["updated"] is True
    rewritten = json.loads(path.read_text())
    assert rewritten["matmul-int8"] == {**original["matmul-int8"], "engine": "isa"}
    assert rewritten.pop("vanished-program") == data["vanished-program"]  # kept: no --prune
    assert {k: v for k, v in rewritten.items() if k != "matmul-int8"} == \
        {k: {**v, "engine": "isa"} for k, v in original.items() if k != "matmul-int8"}
    status, report, _ = on_programs("--baselines", path)
    assert status == 0 and report["improved"] == 0 and report["passed"] == len(NAMES)


def test_update_accepts_a_regression_and_keeps_other_programs_with_k(tmp_path):
    cycles = committed("n16")["mlp-int8"]["cycles"]
    path = edited_baselines(tmp_path, mlp_int8=cycles - 100)
    status, report, _ = on_programs("--baselines", path, "-k", "mlp", "--update-baselines")
    assert status == 0 and rows_by_name(report)["mlp-int8"]["status"] == "regression"
    rewritten = json.loads(path.read_text())
    assert rewritten["mlp-int8"]["cycles"] == cycles
    assert sorted(rewritten) == NAMES  # -k runs a subset: nothing else is dropped


def test_update_over_a_subfolder_keeps_the_baselines_of_programs_not_run(tmp_path,
                                                                       monkeypatch):
    import glc.regress

    shipped, baselines = tmp_path / "programs", tmp_path / "baselines"
    monkeypatch.setattr(glc.regress, "PROGRAMS_DIR", shipped)
    monkeypatch.setattr(glc.regress, "BASELINE_DIR", baselines)
    copy_program("matmul-int8", shipped)
    copy_program("dense-int8", shipped / "group")
    baselines.mkdir()
    n16 = committed("n16")
    before = {"matmul-int8": n16["matmul-int8"], "gone-elsewhere": n16["mlp-int8"],
              "group/dense-int8": {**n16["dense-int8"], "cycles": 1}}
    (baselines / "n16.json").write_text(json.dumps(before))
    status, report, _ = regress_json(shipped / "group", "--update-baselines")
    assert status == 0 and [r["name"] for r in report["rows"]] == ["group/dense-int8"]
    assert report["vanished"] == []
    after = json.loads((baselines / "n16.json").read_text())
    assert after == {**before, "group/dense-int8": {**n16["dense-int8"], "engine": "isa"}}
    # Over the whole shipped folder, a baseline with no program is reported, and kept...
    status, report, _ = regress_json(shipped, "--update-baselines")
    assert status == 0 and report["vanished"] == ["gone-elsewhere"] and not report["pruned"]
    assert sorted(json.loads((baselines / "n16.json").read_text())) == [
        "gone-elsewhere", "group/dense-int8", "matmul-int8"]
    # ... unless asked to prune.
    status, report, _ = regress_json(shipped, "--update-baselines", "--prune")
    assert status == 0 and report["vanished"] == ["gone-elsewhere"] and report["pruned"]
    assert sorted(json.loads((baselines / "n16.json").read_text())) == [
        "group/dense-int8", "matmul-int8"]


def test_update_of_a_folder_keeps_a_shared_file_s_other_entries(tmp_path):
    """Issue 41, item 2: a run over one folder with --baselines FILE shared with others."""
    mine = tmp_path / "mine"
    copy_program("matmul-int8", mine)
    n16 = committed("n16")
    shared = {"matmul-int8": {**n16["matmul-int8"], "cycles": 1},
              "someone-elses": n16["mlp-int8"]}
    path = tmp_path / "shared.json"
    path.write_text(json.dumps(shared))
    result = glc("regress", mine, "--baselines", path, "--update-baselines", "--engine", "isa",
                 "--jobs", "1")
    assert result.exit_code == 0, result.output
    assert "baselines with no program: someone-elses (kept; --update-baselines --prune " \
           "removes them)" in result.stdout
    assert json.loads(path.read_text()) == {"matmul-int8": {**n16["matmul-int8"],
                                                            "engine": "isa"},
                                            "someone-elses": n16["mlp-int8"]}


@pytest.mark.parametrize("args,fragment", [
    (("--prune",), "--prune removes baselines from the file: give it with --update-baselines"),
    (("--prune", "--update-baselines", "-k", "matmul"), "--prune needs a run over the whole"),
])
def test_prune_alone_or_over_part_of_a_folder_is_refused(tmp_path, args, fragment):
    path = tmp_path / "n16.json"
    path.write_text(json.dumps(committed("n16")))
    result = glc("regress", PROGRAMS, "--baselines", path, "--engine", "isa", *args)
    assert_one_line_error(result, fragment)
    assert json.loads(path.read_text()) == committed("n16")


def test_a_user_folder_gets_its_baselines_beside_it_not_the_shipped_ones(tmp_path, monkeypatch):
    import glc.regress

    shipped = tmp_path / "shipped"
    shutil.copytree(BASELINES, shipped)
    monkeypatch.setattr(glc.regress, "BASELINE_DIR", shipped)
    mine = tmp_path / "mine"
    copy_program("matmul-int8", mine)
    status, report, _ = regress_json(mine, "--update-baselines")
    assert status == 0 and report["rows"][0]["status"] == "new"
    assert report["baselines"] == str((mine / "baselines" / "n16.json").resolve())
    assert (shipped / "n16.json").read_bytes() == (BASELINES / "n16.json").read_bytes()
    assert json.loads((mine / "baselines" / "n16.json").read_text()) == {
        "matmul-int8": {**committed("n16")["matmul-int8"], "engine": "isa"}}
    # The next run over the folder is held to them; the shipped file only when asked for.
    status, report, _ = regress_json(mine)
    assert report["rows"][0]["status"] == "pass"
    status, report, _ = regress_json(mine, "--baselines", shipped / "n16.json",
                                     "--update-baselines")
    assert status == 0 and json.loads((shipped / "n16.json").read_text())["matmul-int8"][
        "engine"] == "isa"


def test_several_user_folders_need_one_baseline_file(tmp_path):
    copy_program("matmul-int8", tmp_path / "a")
    copy_program("dense-int8", tmp_path / "b")
    result = glc("regress", tmp_path / "a", tmp_path / "b", "--engine", "isa")
    assert result.exit_code == 1 and "give --baselines FILE" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_error_row_says_error_once(tmp_path):
    broken = tmp_path / "err"
    broken.mkdir()
    (broken / "err.gls").write_text("(access-tensor\n")
    result = glc("regress", tmp_path, "--engine", "isa", "--jobs", "1")
    assert result.exit_code == 1
    (line,) = [ln for ln in result.stdout.splitlines() if ln.startswith("err: ")]
    assert line == f"err: {broken / 'err.gls'}:1:1: error: unexpected end of file: this '(' " \
                   "is never closed; expected ')'"
    assert line.count(": error:") == 1


def test_the_readme_names_the_programs_that_run_only_on_the_host():
    """The README said every program runs on the RTL; those with no kernel run as host steps."""
    readme = (ROOT / "README.md").read_text()
    host_only = sorted(name for name, entry in committed("n16").items() if entry["cycles"] == 0)
    said = readme.split("## Where it stands")[1].split("On the default")[0]
    assert sorted(set(re.findall(r"`([a-z0-9-]+)`", said)) & set(NAMES)) == host_only
    assert "entirely as\nhost steps" in said or "entirely as host steps" in " ".join(said.split())


def test_a_program_with_no_baseline_is_new_and_fails_only_when_strict(tmp_path):
    data = committed("n16")
    del data["dense-int8"]
    path = tmp_path / "b.json"
    path.write_text(json.dumps(data))
    status, report, _ = on_programs("--baselines", path, "-k", "dense")
    assert status == 0
    assert rows_by_name(report)["dense-int8"]["status"] == "new"
    assert rows_by_name(report)["dense-bias-int8"]["status"] == "pass"
    assert report["new"] == 1
    result = glc("regress", PROGRAMS, "--baselines", path, "-k", "dense", "--engine", "isa")
    assert result.stdout.strip().splitlines()[-1] == "2 passed, 0 failed, 1 new"
    status, report, stderr = on_programs("--baselines", path, "-k", "dense", "--strict")
    assert status == 1 and "dense-int8 (no baseline)" in stderr


def test_update_creates_a_missing_baseline_file(tmp_path):
    path = tmp_path / "new" / "n4.json"
    result = glc("regress", PROGRAMS, "--config", "n4", "--engine", "isa", "-k", "dense",
                 "--baselines", path)
    assert result.exit_code == 0
    assert f"no baseline file {path}: every program is new" in result.stdout
    assert not path.exists()
    status, report, _ = on_programs("--config", "n4", "-k", "dense", "--baselines", path,
                                    "--update-baselines")
    assert status == 0 and report["new"] == 2
    # The ISA simulator's cycles are those the RTL measured for the committed baselines.
    n4 = committed("n4")
    assert json.loads(path.read_text()) == {
        name: {**n4[name], "engine": "isa"} for name in ("dense-bias-int8", "dense-int8")}


def test_a_corrupted_output_npy_fails_with_the_mismatch(tmp_path):
    folder = copy_program("matmul-int8", tmp_path)
    expected = np.load(folder / "output.npy")
    expected[2, 3] += 1
    np.save(folder / "output.npy", expected)
    copy_program("dense-int8", tmp_path)
    status, report, stderr = regress_json(tmp_path, "--baselines", BASELINES / "n16.json")
    assert status == 1
    rows = rows_by_name(report)
    row = rows["matmul-int8"]
    assert row["status"] == "mismatch" and row["match"] is False
    assert "interpreter: equal, bit for bit" in row["detail"]
    # The mismatch names its first differing index, the one corrupted (issue 41, item 15).
    assert (f"output.npy: 1 of {expected.size} elements differ (first at (2, 3): "
            f"{expected[2, 3] - 1}, expected {expected[2, 3]}; max |diff| 1)") in row["reason"]
    assert rows["dense-int8"]["status"] == "pass"
    assert "matmul-int8 (wrong result: " in stderr and "dense-int8" not in stderr


def test_a_program_that_does_not_compile_is_an_error_row_and_the_others_still_run(tmp_path):
    copy_program("matmul-int8", tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "broken.gls").write_text("(access-tensor\n")
    status, report, _ = regress_json(tmp_path, "--baselines", BASELINES / "n16.json")
    assert status == 1
    rows = rows_by_name(report)
    assert rows["broken"]["status"] == "error"
    assert rows["broken"]["reason"].startswith(str(broken / "broken.gls"))
    assert rows["broken"]["cycles"] is None
    assert rows["matmul-int8"]["status"] == "pass"


@pytest.mark.rtl
def test_the_rtl_watchdog_stops_a_program_and_fails_its_row():
    result = glc("regress", PROGRAMS, "--config", "n4", "-k", "matmul-int8", "--max-cycles",
                 "50", "--engine", "rtl", "--json")
    (row,) = json.loads(result.stdout)["rows"]
    assert result.exit_code == 1 and row["status"] == "error" and row["engine"] == "rtl"
    assert "watchdog: the program did not finish within 50 cycles" in row["reason"]
    assert "matmul-int8 (" in result.stderr and "Traceback" not in result.output


def test_a_crash_in_one_program_is_a_junit_error_not_a_traceback(tmp_path, monkeypatch):
    import glc.run

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a compiler bug")

    monkeypatch.setattr(glc.run, "run_and_compare", broken)
    xml = tmp_path / "junit.xml"
    status, report, _ = regress_json(PROGRAMS, "-k", "matmul", "--junit", xml)
    (row,) = report["rows"]
    assert status == 1 and row["status"] == "crash"
    assert row["reason"].startswith("ZeroDivisionError: a compiler bug (test_regress.py:")
    (case,) = ET.parse(xml).getroot().iter("testcase")
    assert case.find("failure") is None
    assert case.find("error").get("message") == row["reason"]
    assert "Traceback" in case.find("error").text and "in broken" in case.find("error").text


# ---- JUnit and parallel runs ---------------------------------------------------------------

def test_junit_has_one_testcase_per_program_and_failures_where_expected(tmp_path):
    programs = tmp_path / "programs"
    for name in NAMES:
        copy_program(name, programs)
    corrupt = np.load(programs / "dense-int8" / "output.npy")
    np.save(programs / "dense-int8" / "output.npy", -corrupt)
    cycles = committed("n16")["conv2d-nchw-int8"]["cycles"]
    path = edited_baselines(tmp_path, conv2d_nchw_int8=cycles - 1)
    xml = tmp_path / "out" / "junit.xml"
    xml.parent.mkdir()
    result = glc("regress", programs, "--baselines", path, "--engine", "isa", "--junit", xml)
    assert result.exit_code == 1
    suite = ET.parse(xml).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == NAMES
    assert all(c.get("classname") == "n16" and float(c.get("time")) >= 0 for c in cases)
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert sorted(failed) == ["conv2d-nchw-int8", "dense-int8"]
    pct = 100 / (cycles - 1)  # shown to one place, or three where one would read 0.0
    assert failed["conv2d-nchw-int8"].get("message") == \
        f"cycles {cycles} > baseline {cycles - 1} (+{pct:.{1 if pct >= 0.05 else 3}f} %)"
    assert "output.npy:" in failed["dense-int8"].get("message")
    assert suite.get("tests") == str(len(NAMES)) and suite.get("failures") == "2"


def test_two_jobs_give_the_same_rows_as_one():
    def rows(jobs):
        result = glc("regress", PROGRAMS, "--engine", "isa", "-k", "int8", "--jobs", jobs,
                     "--json")
        assert result.exit_code == 0, result.output
        return [{k: v for k, v in row.items() if k != "seconds"}
                for row in json.loads(result.stdout)["rows"]]

    one = rows(1)
    assert [r["name"] for r in one] == [n for n in NAMES if "int8" in n]
    assert rows(2) == one


# ---- user errors ---------------------------------------------------------------------------

def assert_one_line_error(result, fragment: str):
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.output


def test_no_programs_found_is_one_line(tmp_path):
    assert_one_line_error(glc("regress", tmp_path), "no programs found")
    assert_one_line_error(glc("regress", tmp_path / "missing"), "not a directory of programs")
    assert_one_line_error(glc("regress", "-k", "no-such-program"),
                          "no program name contains 'no-such-program'")


def test_an_unreadable_baseline_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert_one_line_error(glc("regress", "--baselines", bad, "--engine", "isa"),
                          f"{bad}: error: baselines are not valid JSON")
    bad.write_text(json.dumps({"matmul-int8": {"cycles": "many"}}))
    assert_one_line_error(glc("regress", "--baselines", bad, "--engine", "isa"),
                          "baseline 'matmul-int8' must be")


def test_a_bad_config_is_one_line():
    assert_one_line_error(glc("regress", "--config", "n99", "--engine", "isa"),
                          "no hardware configuration 'n99'")


def test_a_directory_that_is_a_program_and_nested_programs_are_found(tmp_path):
    copy_program("matmul-int8", tmp_path / "group")
    copy_program("dense-int8", tmp_path)
    status, report, _ = regress_json(tmp_path)
    assert status == 0
    assert [r["name"] for r in report["rows"]] == ["dense-int8", "group/matmul-int8"]
    assert rows_by_name(report)["group/matmul-int8"]["status"] == "new"
    status, report, _ = regress_json(tmp_path / "group" / "matmul-int8")
    assert [r["name"] for r in report["rows"]] == ["matmul-int8"]
    assert report["vanished"] == []  # a single program says nothing of the others


def test_a_program_past_timeout_is_killed_as_a_hang_and_the_others_run(tmp_path):
    """Issue 41, item 8: a program whose input is a FIFO nobody writes held the whole run;
    --timeout kills it (status hang, a failure) and the run goes on to the next program."""
    import os

    programs = tmp_path / "programs"
    stuck = copy_program("matmul-int8", programs)
    (stuck / "a.npy").unlink()
    os.mkfifo(stuck / "a.npy")
    copy_program("mlp-int8", programs)
    status, report, _ = regress_json(programs, "--timeout", "2")
    rows = rows_by_name(report)
    assert status == 1 and report["hang"] == 1
    assert rows["matmul-int8"]["status"] == "hang"
    assert rows["matmul-int8"]["reason"] == "still running after 2 s (--timeout): killed"
    assert rows["mlp-int8"]["status"] == "new" and rows["mlp-int8"]["match"] is True
