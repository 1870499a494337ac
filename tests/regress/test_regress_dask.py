"""``glc regress --scheduler``: the programs as tasks on a real Dask scheduler with two worker
processes started here (on localhost): the same rows and baselines as a local run, and a worker
killed mid-run loses no program and counts none twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from glc import regress as rg
from glc.cli import main
from glc.hwconfig import load_config

distributed = pytest.importorskip("distributed")

# One xdist worker runs this file (scripts/test.sh: --dist loadgroup): its tests share one
# cluster.
pytestmark = pytest.mark.xdist_group("dask")

ROOT = Path(__file__).parents[2]
PROGRAMS = ROOT / "programs"
KEY = "conv"  # the six conv programs, seconds each on the ISA simulator


def rows_of(result) -> list[dict]:
    assert result.exit_code == 0, result.output
    return [{k: v for k, v in row.items() if k != "seconds"}
            for row in json.loads(result.stdout)["rows"]]


def regress_cli(*args) -> list[dict]:
    return rows_of(CliRunner().invoke(main, ["regress", str(PROGRAMS), "--engine", "isa", "-k",
                                             KEY, "--json", *map(str, args)]))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A ``dask scheduler`` and two single-threaded ``dask worker`` processes (no nanny: a
    killed worker stays dead), each in its own process group; the scheduler's address."""
    folder = tmp_path_factory.mktemp("dask")
    info = folder / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    dask = [sys.executable, "-m"]
    start = dict(env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                 start_new_session=True)
    procs = [subprocess.Popen([*dask[:2], "distributed.cli.dask_scheduler", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(info)], **start)]
    try:
        deadline = time.monotonic() + 60
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(info.read_text())["address"]
        for _ in range(2):
            procs.append(subprocess.Popen(
                [*dask[:2], "distributed.cli.dask_worker", address, "--nthreads", "1",
                 "--no-nanny", "--no-dashboard"], **start))
        with distributed.Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield address, procs[1:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_the_cluster_gives_the_rows_and_baselines_of_a_local_run(cluster, tmp_path):
    address, _ = cluster
    local = regress_cli("--jobs", "1")
    assert [r["status"] for r in local] and all(r["status"] == "pass" for r in local)
    assert regress_cli("--scheduler", address) == local
    # --update-baselines from the cluster writes what a local update writes
    files = {}
    for where, extra in (("local", ["--jobs", "1"]), ("cluster", ["--scheduler", address])):
        files[where] = tmp_path / f"{where}.json"
        regress_cli("--baselines", files[where], "--update-baselines", *extra)
    assert json.loads(files["cluster"].read_text()) == json.loads(files["local"].read_text())


def test_a_worker_killed_mid_run_loses_nothing_and_counts_nothing_twice(cluster):
    address, workers = cluster
    config = load_config("n16")
    chosen = rg.select([PROGRAMS], config, KEY)
    local = rg.regress(chosen.programs, config, "isa", chosen.baselines, jobs=1)
    seen = []

    def kill_one(row):  # once the first row is back, one worker dies for good
        seen.append(row.name)
        if len(seen) == 1:
            os.killpg(workers[0].pid, signal.SIGKILL)

    run = rg.regress(chosen.programs, config, "isa", chosen.baselines, scheduler=address,
                     on_row=kill_one)
    assert workers[0].wait(timeout=30) == -signal.SIGKILL
    assert seen == [name for name, _ in chosen.programs]  # each once, in order
    assert stripped(run.rows) == stripped(local.rows)


def stripped(rows) -> list[dict]:
    return [{k: v for k, v in asdict(r).items() if k != "seconds"} for r in rows]


def test_an_unreachable_scheduler_is_one_line():
    result = CliRunner().invoke(main, ["regress", str(PROGRAMS), "--engine", "isa", "-k",
                                       "matmul", "--scheduler", "tcp://127.0.0.1:9"])
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler" in lines[0], result.stderr
