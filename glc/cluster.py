"""``glc regress --scheduler``: the programs as tasks on a Dask cluster (``distributed``).

``ADDRESS`` is a running ``dask scheduler`` (``tcp://host:port``) whose ``dask worker``s may be
on other machines; ``local`` starts a ``LocalCluster`` of ``--jobs`` single-threaded worker
processes on this one. Each program is one task, ``run_one`` of glc/regress.py, and its row
comes back in program order. The workers read the program folders and the hardware config from
the paths they are given, so machines must share the filesystem (or hold the same checkout at
the same path); each builds the Verilator model of a design once (glc/sim/build.py caches and
locks the build, shared where the build folder is). Dask reruns a task whose worker was lost on
another worker and returns each task's result once: a killed worker loses nothing and counts
nothing twice; a task that kills every worker it runs on (Dask's ``KilledWorker``, after its
allowed failures) is a ``crash`` row. With ``--timeout`` a task runs its program in a child
process of the worker (glc/workers.py) that is killed at the limit: a ``hang`` row.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence

from glc import workers
from glc.errors import GlcError

LOCAL = "local"
CONNECT_SECONDS = 20


def run(calls: Sequence[tuple[Callable, tuple]], scheduler: str, jobs: int,
        timeout: float | None = None) -> Iterator[object]:
    """Each call's result (or ``workers.TimedOut`` / ``workers.Died``), in the order of
    ``calls``, computed on the cluster ``scheduler`` (an address, or ``local``)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise GlcError("--scheduler needs Dask's distributed: pip install 'glc[dask]'") from None
    cluster = None
    try:
        if scheduler == LOCAL:
            cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
        client = Client(cluster if cluster is not None else scheduler,
                        timeout=CONNECT_SECONDS)
    except (OSError, TimeoutError, ValueError) as error:
        if cluster is not None:
            cluster.close()
        raise GlcError(f"cannot reach the Dask scheduler at {scheduler}: {error}") from None
    run_id = uuid.uuid4().hex[:12]  # the keys of this run's tasks, so no other run's are reused
    try:
        futures = [client.submit(_task, function, args, timeout, key=f"glc-{run_id}-{i}")
                   for i, (function, args) in enumerate(calls)]
        for future in futures:
            yield _result(future)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _result(future) -> object:
    from distributed import KilledWorker

    try:
        return future.result()
    except KilledWorker:
        return workers.Died(None)


def _task(function: Callable, args: tuple, timeout: float | None) -> object:
    """On a worker: the call, in a child process killed at ``timeout`` if there is one."""
    if timeout is None:
        return function(*args)
    return next(workers.run([(function, args)], 1, timeout))
