"""The compile and schedule cache (glc/cache.py): keys, hits and misses, corrupt entries,
parallel writers, --no-cache, glc cache info|clear, and the schedules chosen with the cache
equal to those chosen without it, instruction for instruction."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from glc import cache as cache_module
from glc.cache import Cache, location
from glc.cli import main
from glc.compiler import _compile_key, compile_program, cost_function
from glc.cost import kernel as cost_kernel
from glc.egraph.runner import Limits
from glc.hwconfig import load_config
from glc.inputs import load
from glc.ir.term import Term, leaf
from glc.lower.image import Image, schedule
from glc.rewrites import DEFAULT, select

PROGRAMS = Path(__file__).parents[1] / "programs"
CONFIG = load_config("n16")


def glc(*args, env=None):
    return CliRunner(env=env).invoke(main, [str(a) for a in args])


def compiled(folder: Path, cache: Cache | None, config=CONFIG, **options):
    return compile_program(load(folder), rules=select(DEFAULT, config.array_size),
                           config=config, cache=cache, **options)


def words(result) -> bytes:
    """The program's instruction stream, as glc compile -o writes program.bin."""
    return b"".join(w.to_bytes(64, "little") for run in schedule(result.lowered)
                    if isinstance(run, Image) for w in run.words)


def key_of(folder: Path, **changes) -> str:
    bundle = load(folder)
    args = {"program": bundle.program, "env": bundle.env, "rules": select(DEFAULT, 16),
            "limits": Limits(), "cost": cost_function("cycles", CONFIG), "extractor": "exact",
            "extract_time_limit": 30.0, "config": CONFIG, "max_nodes": 1_000_000,
            "disabled": frozenset()}
    return _compile_key(**{**args, **changes})


def stages(result) -> list[str]:
    return [line.split(":")[0] for line in result.stderr.splitlines()]


def test_the_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GLC_CACHE_DIR", str(tmp_path / "own"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert location() == tmp_path / "own"
    monkeypatch.delenv("GLC_CACHE_DIR")
    assert location() == tmp_path / "xdg" / "glc"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert location() == tmp_path / "home" / ".cache" / "glc"


def test_the_tests_do_not_share_the_users_cache(request):
    assert location().parent == Path(request.config.glc_cache)
    assert "glc-test-cache-" in str(location())


def test_the_key_changes_with_each_input(tmp_path, monkeypatch):
    folder = tmp_path / "prog"
    shutil.copytree(PROGRAMS / "dense-bias-int8", folder)
    base = key_of(folder)
    assert key_of(folder) == base  # the same inputs, the same key
    gls = next(folder.glob("*.gls"))
    changed = {
        "config": key_of(folder, config=replace(CONFIG, queue_depth=CONFIG.queue_depth + 1)),
        "config name": key_of(folder, config=replace(CONFIG, name="other")),
        "rules": key_of(folder, rules=select(DEFAULT, 16)[:-1]),
        "disabled": key_of(folder, disabled=frozenset({"fusion"})),
        "extractor": key_of(folder, extractor="greedy"),
        "limits": key_of(folder, limits=Limits(iter_limit=3)),
        "extract time": key_of(folder, extract_time_limit=5.0),
        "cost": key_of(folder, cost=cost_function("nodes", CONFIG)),
    }
    bundle = load(folder)
    other_env = {name: replace(ty, dtype="int32" if ty.dtype != "int32" else "int8")
                 for name, ty in bundle.env.items()}
    changed["input types"] = key_of(folder, env=other_env)
    gls.write_text(gls.read_text() + "\n; an edit\n")
    changed["program text"] = key_of(folder)
    gls.write_text(gls.read_text()[:-len("\n; an edit\n")])
    assert key_of(folder) == base
    cache_module.source_digest.cache_clear()
    monkeypatch.setattr(cache_module, "SOURCE", tmp_path / "prog")  # another glc's sources
    changed["glc source"] = key_of(folder)
    cache_module.source_digest.cache_clear()
    same = [what for what, key in changed.items() if key == base]
    assert not same, f"the key ignores: {same}"
    assert len(set(changed.values())) == len(changed)


def test_a_second_compile_is_read_from_the_cache_and_equal(tmp_path):
    cache = Cache(tmp_path / "cache")
    first = compiled(PROGRAMS / "resnet-block-28-int8", cache)
    second = compiled(PROGRAMS / "resnet-block-28-int8", cache)
    plain = compiled(PROGRAMS / "resnet-block-28-int8", None)
    assert (first.cached, second.cached, plain.cached) == (False, True, False)
    assert words(second) == words(first) == words(plain)
    assert second.lowered.figures() == plain.lowered.figures()
    assert second.names == plain.names
    assert cache.info()["compile"]["entries"] == 1


def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path):
    cache = Cache(tmp_path / "cache")
    good = compiled(PROGRAMS / "dense-bias-int8", cache)
    entry = next(p for p in (tmp_path / "cache" / "compile").rglob("*") if p.is_file())
    data = entry.read_bytes()
    for damaged in (data[:len(data) // 2], data[:-1] + bytes([data[-1] ^ 1]), b"", b"junk"):
        entry.write_bytes(damaged)
        again = compiled(PROGRAMS / "dense-bias-int8", cache)
        assert not again.cached and words(again) == words(good)
        assert cache.get("compile", entry.name) is not None  # rewritten whole
    assert compiled(PROGRAMS / "dense-bias-int8", cache).cached


def test_an_entry_that_passes_its_checksum_but_does_not_unpickle_is_a_miss(tmp_path):
    cache = Cache(tmp_path)
    cache.put("compile", "ab12", "value")
    path = tmp_path / "compile" / "ab" / "ab12"
    payload = b"not a pickle"
    path.write_bytes(cache_module.MAGIC + hashlib.sha256(payload).digest() + payload)
    assert cache.get("compile", "ab12") is None


def test_a_term_thousands_of_levels_deep_is_stored_and_read_back(tmp_path):
    """A network's term nests deeper than pickle's recursion allows: ResNet-50's did."""
    term = leaf("symbol", "x")
    for depth in range(20_000):
        term = Term("relu" if depth % 2 else "negative", (term,))
    cache = Cache(tmp_path)
    cache.put("compile", "deep", {"term": term, "part": term.args[0]})
    found = cache.get("compile", "deep")
    assert found is not None and found["term"] == term
    assert found["part"] is found["term"].args[0]  # shared nodes stay shared


def _writer(root: str, worker: int, rounds: int, seen: multiprocessing.Queue) -> None:
    cache = Cache(Path(root))
    bad = 0
    for index in range(rounds):
        value = (worker, index, bytes([worker]) * 200_000)
        cache.put("schedule", "shared0", value)
        cache.put("schedule", f"own{worker}-{index}", value)
        got = cache.get("schedule", "shared0")
        ok = got is not None and len(got[2]) == 200_000 and got[2] == bytes([got[0]]) * 200_000
        bad += not ok
    seen.put(bad)


def test_parallel_writers_never_leave_half_an_entry(tmp_path):
    context = multiprocessing.get_context("spawn")
    seen = context.Queue()
    workers = [context.Process(target=_writer, args=(str(tmp_path), w, 20, seen))
               for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
    assert [process.exitcode for process in workers] == [0] * 4
    assert sum(seen.get(timeout=10) for _ in workers) == 0
    cache = Cache(tmp_path)
    assert all(cache.get("schedule", f"own{w}-{i}") is not None
               for w in range(4) for i in range(20))
    info = cache.info()
    assert info["schedule"]["entries"] == 4 * 20 + 1  # no temporary file left behind


def test_no_cache_neither_reads_nor_writes(tmp_path):
    env = {"GLC_CACHE_DIR": str(tmp_path / "cache")}
    program = PROGRAMS / "dense-bias-int8"
    result = glc("-v", "run", program, "--engine", "isa", "--no-cache", env=env)
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "cache").exists()
    first = glc("-v", "run", program, "--engine", "isa", env=env)
    second = glc("-v", "run", program, "--engine", "isa", env=env)
    hit = re.compile(r"^compile: [0-9.]+ s, cache hit$", re.MULTILINE)
    assert not hit.search(first.stderr)
    assert hit.search(second.stderr)
    # the same stages and figures, the same match
    assert stages(second) == stages(first) and second.stdout == first.stdout
    third = glc("-v", "run", program, "--engine", "isa", "--no-cache", env=env)
    assert not hit.search(third.stderr) and third.stdout == first.stdout
    compiled_again = glc("-v", "compile", program, env=env)
    assert compiled_again.stderr.splitlines()[-1] == "cache: hit (the compile read from the cache)"


def test_regress_workers_share_the_cache(tmp_path):
    env = {"GLC_CACHE_DIR": str(tmp_path / "cache")}
    args = ("regress", PROGRAMS, "-k", "dense", "--engine", "isa", "--jobs", "2", "--json")
    assert glc(*args, "--no-cache", env=env).exit_code == 0
    assert not (tmp_path / "cache").exists()
    first = glc(*args, env=env)
    assert first.exit_code == 0, first.output
    names = [row["name"] for row in json.loads(first.stdout)["rows"]]
    assert len(names) == 2 and Cache(tmp_path / "cache").info()["compile"]["entries"] == 2
    second = glc(*args, env=env)
    cycles = [[row["cycles"] for row in json.loads(r.stdout)["rows"]] for r in (first, second)]
    assert second.exit_code == 0 and cycles[0] == cycles[1]
    assert Cache(tmp_path / "cache").info()["compile"]["entries"] == 2


def test_cache_info_and_clear(tmp_path):
    env = {"GLC_CACHE_DIR": str(tmp_path / "cache")}
    empty = glc("cache", "info", env=env)
    assert empty.exit_code == 0 and f"location {tmp_path / 'cache'}" in empty.stdout
    assert "entries 0, bytes 0" in empty.stdout
    assert glc("compile", PROGRAMS / "dense-bias-int8", env=env).exit_code == 0
    info = glc("cache", "info", env=env).stdout
    entries = sum(1 for p in (tmp_path / "cache").rglob("*") if p.is_file())
    size = sum(p.stat().st_size for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert entries >= 1 and f"entries {entries}, bytes {size}" in info
    assert "compile: entries 1," in info
    cleared = glc("cache", "clear", env=env)
    assert cleared.exit_code == 0 and f"removed {entries} entries" in cleared.stdout
    assert "entries 0, bytes 0" in glc("cache", "info", env=env).stdout


def test_a_cache_location_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    result = glc("run", PROGRAMS / "dense-bias-int8", "--engine", "isa",
                 env={"GLC_CACHE_DIR": str(tmp_path / "file")})
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "the cache location is a file" in result.stderr


SAME_SCHEDULES = ["resnet-block-28-int8", "conv2d-nchw-int8", "attention-qkt-int8",
                  "maxpool3x3s2-112-int8"]


@pytest.mark.parametrize("name", SAME_SCHEDULES)
def test_the_schedule_cache_chooses_what_the_search_does(name, tmp_path, monkeypatch):
    """Compiled without the cache, with a cold schedule cache, and with a warm one (its
    compile entry removed, the in-memory memo emptied, the search itself refused): the same
    instruction stream byte for byte."""
    cache = Cache(tmp_path / "cache")
    cost_kernel.forget()
    plain = compiled(PROGRAMS / name, None)
    cost_kernel.forget()
    cold = compiled(PROGRAMS / name, cache)
    assert cache.info()["schedule"]["entries"] > 0
    shutil.rmtree(tmp_path / "cache" / "compile")
    cost_kernel.forget()

    def refused(*args):
        raise AssertionError("searched again with the schedule cache warm")

    monkeypatch.setattr(cost_kernel, "_search", refused)
    warm = compiled(PROGRAMS / name, cache)
    assert not warm.cached
    assert words(plain) == words(cold) == words(warm)
    assert plain.lowered.figures() == warm.lowered.figures()


def test_a_small_edit_searches_only_what_changed(tmp_path, monkeypatch):
    """Two compiles sharing layers: the second searches only the kernels the first had not."""
    cache = Cache(tmp_path / "cache")
    cost_kernel.forget()
    searched = []
    search = cost_kernel._search
    monkeypatch.setattr(cost_kernel, "_search",
                        lambda *args: searched.append(args) or search(*args))
    compiled(PROGRAMS / "resnet-block-28-int8", cache)
    cold = len(searched)
    folder = tmp_path / "edited"
    shutil.copytree(PROGRAMS / "resnet-block-28-int8", folder)
    gls = next(folder.glob("*.gls"))
    gls.write_text("; an edited comment\n" + gls.read_text())
    cost_kernel.forget()
    searched.clear()
    edited = compiled(folder, cache)
    assert cold > 0 and not edited.cached and searched == []


def test_simulate_report_prints_run_reports_table_without_compiling(tmp_path):
    program = PROGRAMS / "resnet-block-28-int8"
    out = tmp_path / "compiled"
    assert glc("compile", program, "-o", out).exit_code == 0
    ran = glc("run", program, "--engine", "isa", "--report", "--json")
    simulated = glc("simulate", out, "--isa", "--report", "--json")
    assert simulated.exit_code == 0, simulated.output
    run_steps = json.loads(ran.stdout)["steps"]
    sim_steps = json.loads(simulated.stdout)["steps"]
    assert sim_steps == run_steps
    assert any(step["node"] for step in sim_steps)
    lines = glc("simulate", out, "--isa", "--report").stdout.splitlines()
    assert any(line.split()[:2] == ["step", "node"] for line in lines)
    assert any(line.startswith("total") for line in lines)


def test_simulate_report_of_a_folder_without_node_names(tmp_path):
    out = tmp_path / "compiled"
    assert glc("compile", PROGRAMS / "dense-bias-int8", "-o", out).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    for step in manifest["steps"]:
        step.pop("node", None)
    (out / "manifest.json").write_text(json.dumps(manifest))
    result = glc("simulate", out, "--isa", "--report", "--json")
    assert result.exit_code == 0, result.output
    assert all(step["node"] == "" for step in json.loads(result.stdout)["steps"])
