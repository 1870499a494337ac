"""glc/workers.py: calls in child processes, results in order, a time limit that kills, a death
that is reported, and children that never outlive their parent."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from glc.workers import Died, TimedOut, run

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads the process table from /proc")


def _sleep_then(seconds: float, value):
    time.sleep(seconds)
    return value


def _die(code: int):
    os._exit(code)


def _identity():
    return os.getpid(), os.getppid(), os.getpgrp()


def test_results_come_in_call_order_whatever_order_the_calls_end_in():
    calls = [(_sleep_then, (0.6, "a")), (_sleep_then, (0.0, "b")), (_sleep_then, (0.3, "c"))]
    assert list(run(calls, jobs=3)) == ["a", "b", "c"]


def test_a_call_past_its_time_limit_is_killed_and_the_others_go_on():
    start = time.monotonic()
    results = list(run([(_sleep_then, (60, "never")), (_sleep_then, (0.0, "quick"))], jobs=1,
                       timeout=1.0))
    assert results == [TimedOut(1.0), "quick"]
    assert time.monotonic() - start < 20


def test_a_child_that_dies_is_reported_and_the_others_go_on():
    assert list(run([(_die, (3,)), (_sleep_then, (0.0, "after"))], jobs=2)) == [Died(3),
                                                                                  "after"]


def test_each_call_runs_in_a_child_leading_a_process_group_of_its_own():
    ((pid, parent, group),) = run([(_identity, ())], jobs=1)
    assert parent == os.getpid() != pid == group


# ---- the parent's end ----------------------------------------------------------------------

def _fifo_programs(folder: Path, count: int) -> Path:
    """``count`` copies of a shipped program whose input is a FIFO nobody writes: loading one
    blocks for ever (issue 41, item 8's reproducer)."""
    for k in range(count):
        program = folder / f"fifo{k}"
        shutil.copytree(Path(__file__).parents[1] / "programs" / "matmul-int8", program)
        (program / "a.npy").unlink()
        os.mkfifo(program / "a.npy")
    return folder


def _processes() -> dict[int, list[str]]:
    """Every living process's /proc stat fields after its name (state, ppid, pgrp, session, …)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                found[int(entry.name)] = fields
    return found


def descendants(pid: int) -> set[int]:
    """Every living process below ``pid`` (children, their children, ...)."""
    parents = {p: int(fields[1]) for p, fields in _processes().items()}
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _in_session(sid: int) -> set[int]:
    """The living processes of session ``sid``."""
    return {p for p, fields in _processes().items() if int(fields[3]) == sid}


def _start_parent(folder: Path):
    """``glc regress`` over two programs that never finish, two jobs: two workers."""
    parent = subprocess.Popen([sys.executable, "-m", "glc", "regress", str(folder), "--engine",
                               "isa", "--jobs", "2"], stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
                              start_new_session=True)
    for _ in range(200):
        children = descendants(parent.pid)
        # started, and each made the leader of its own group (parent and child both set it)
        if len(children) == 2 and all(_leads_group(c) for c in children):
            return parent, children
        time.sleep(0.05)
    parent.kill()
    raise AssertionError("the two children never started")


def _leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def _alive(pids: set[int], within: float = 5.0) -> set[int]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = {p for p in pids if Path(f"/proc/{p}").exists()
                and Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"}
        if not left:
            return set()
        time.sleep(0.1)
    return left


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT])
def test_regress_workers_die_with_it_without_a_traceback(tmp_path, how):
    """SIGTERM (CI's cancel, ``timeout``), SIGKILL, and Ctrl-C (SIGINT to the terminal's
    foreground group) of ``glc regress --jobs 2``: no worker is left, none prints a traceback."""
    parent, children = _start_parent(_fifo_programs(tmp_path, 2))
    try:
        if how == signal.SIGINT:  # Ctrl-C: the terminal signals the foreground group
            os.killpg(parent.pid, how)
        else:
            parent.send_signal(how)
        _, stderr = parent.communicate(timeout=30)
        assert _alive(children) == set()
        if how == signal.SIGTERM:
            assert parent.returncode == 143
        assert b"Traceback" not in stderr, stderr.decode()
    finally:
        for c in descendants(parent.pid) | children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(c, signal.SIGKILL)
        parent.kill()


_SIGNALLED_IN_A_FORK_HOOK = """
import os, signal, sys, time
from glc.workers import run

fired = []

def hook():  # runs in the parent after each fork, where Python ignores what a callback raises
    if not fired:
        fired.append(True)
        os.kill(os.getpid(), int(sys.argv[1]))

os.register_at_fork(after_in_parent=hook)
try:
    list(run([(time.sleep, (60,)), (time.sleep, (60,))], jobs=2))
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.parametrize("how, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_handled_where_python_ignores_exceptions_still_ends_the_parent(how, status):
    """The handler's exception, raised inside a fork hook (logging's lock release, as seen
    under load), is swallowed by the interpreter ("Exception ignored in"): the parent must end
    all the same, its children with it, not wait on them for ever."""
    parent = subprocess.Popen([sys.executable, "-c", _SIGNALLED_IN_A_FORK_HOOK, str(int(how))],
                              stderr=subprocess.PIPE, start_new_session=True,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    try:
        _, stderr = parent.communicate(timeout=30)
        assert parent.returncode == status, stderr.decode()
        assert _alive(_in_session(parent.pid)) == set()  # its children, however reparented
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)
