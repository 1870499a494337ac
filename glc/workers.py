"""Calls run in child processes that cannot outlive glc or hold it forever: ``glc regress``'s
programs, ``jobs`` at a time.

Each call runs in a process of its own, the leader of its own process group, so that killing
the group also kills what the call started (the Verilator simulation of an RTL run). Three
things end a group:

- the call's time limit (``timeout`` seconds): the group is killed and the call's outcome is a
  ``TimedOut`` (a program reading a FIFO, a hung simulation);
- the parent's end, however it comes: a ``KeyboardInterrupt`` or an error kills every group
  before it propagates; if the parent is killed outright (SIGKILL, or SIGTERM when it is not
  running a batch) each child sees its parent gone within ``_POLL`` seconds and kills its own
  group;
- SIGTERM (what CI cancellation and ``timeout`` send), turned into an exit of the parent with
  status 143 while a batch runs, which kills the groups first.

Children ignore SIGINT: Ctrl-C interrupts the parent alone, which stops them (no traceback of
theirs on the terminal). A child that dies (a crash of the simulator, out of memory) gives a
``Died`` with its exit code; the other calls go on.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait

_POLL = 0.2  # seconds between a child's looks at its parent


@dataclass(frozen=True)
class TimedOut:
    """A call killed at its time limit."""

    seconds: float


@dataclass(frozen=True)
class Died:
    """A call whose process ended without a result; ``exitcode`` negative: killed by a signal."""

    exitcode: int | None


@dataclass
class _Running:
    index: int
    process: multiprocessing.Process
    result: Connection
    timeout: float | None

    def __post_init__(self):
        self.deadline = None if self.timeout is None else time.monotonic() + self.timeout


def run(calls: Sequence[tuple[Callable, tuple]], jobs: int, timeout: float | None = None
        ) -> Iterator[object]:
    """Each call's result (or ``TimedOut``, ``Died``), in the order of ``calls``, as soon as it
    and those before it are done; at most ``jobs`` run at once."""
    context = multiprocessing.get_context()
    done: dict[int, object] = {}
    running: list[_Running] = []
    waiting = iter(enumerate(calls))
    emitted = 0
    with _interrupted() as received:
        try:
            while emitted < len(calls):
                while len(running) < jobs and (item := next(waiting, None)) is not None:
                    running.append(_start(context, *item, timeout))
                _collect(running, done)
                if received:  # the handler's exception was swallowed (_interrupted)
                    _raise(received[0])
                while emitted in done:
                    yield done.pop(emitted)
                    emitted += 1
        finally:
            for task in running:
                _kill(task.process)


def _start(context, index: int, call: tuple[Callable, tuple], timeout: float | None
           ) -> _Running:
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(send, call, os.getpid()), daemon=True)
    process.start()
    with suppress(ProcessLookupError, PermissionError):  # the child does it too: whichever is
        os.setpgid(process.pid, process.pid)  # first, the group exists before it is killed
    send.close()
    return _Running(index, process, receive, timeout)


def _collect(running: list[_Running], done: dict[int, object]) -> None:
    """Wait for a result, a death or the nearest deadline; move what ended into ``done``."""
    # At most _POLL seconds, so that run sees a signal whose exception was swallowed.
    deadlines = [t.deadline for t in running if t.deadline is not None]
    wait_for = max(0.0, min([_POLL, *(d - time.monotonic() for d in deadlines)]))
    ready = wait([t.result for t in running], wait_for)
    now = time.monotonic()
    for task in list(running):
        if task.result in ready:
            try:
                done[task.index] = task.result.recv()
            except (EOFError, OSError):  # it died before sending
                task.process.join()
                done[task.index] = Died(task.process.exitcode)
        elif task.deadline is not None and now >= task.deadline:
            _kill(task.process)
            done[task.index] = TimedOut(task.timeout)
        else:
            continue
        task.result.close()
        _kill(task.process)
        running.remove(task)


def _kill(process: multiprocessing.Process) -> None:
    """Kill ``process``'s group (what it started too) and reap it."""
    if process.pid is not None and process.exitcode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()  # not (yet) the leader of a group
    process.join()


def _child(send: Connection, call: tuple[Callable, tuple], parent: int) -> None:
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(target=_watch, args=(parent,), daemon=True).start()
    function, args = call
    send.send(function(*args))
    send.close()


def _watch(parent: int) -> None:
    """Kill this child's group once its parent is gone (it is then another process's child)."""
    while os.getppid() == parent:
        time.sleep(_POLL)
    os.killpg(0, signal.SIGKILL)


@contextmanager
def _interrupted() -> Iterator[list[int]]:
    """SIGTERM exits the parent (status 143, as its default would), and SIGINT (Ctrl-C) is a
    KeyboardInterrupt, both through the ``finally`` that kills the children; only from the main
    thread, where Python runs signal handlers. A handler raises where the main thread is, which
    may be a place whose exceptions Python ignores ("Exception ignored in": a fork hook such as
    logging's lock release, run as a child starts — seen under load, and glc regress then
    waited on its children for ever); so each also records its signal in the list yielded,
    which ``run`` checks at least every ``_POLL`` seconds (``_raise``)."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum, frame):
        received.append(signum)
        _raise(signum)

    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, handler)}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not if SIGINT is ignored
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, handler)
    try:
        yield received
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _raise(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)
