"""Run random well-typed programs (scripts/randprog.py) through glc and count what went wrong.

Each program is checked three ways against the generator's own numpy result: the interpreter
(glc/interp.py), then the compiled program run with its kernels on the ISA simulator or the RTL
(the path ``glc run`` takes). The table counts programs, passes, those the config cannot hold
(``DoesNotFit``: a limit, not a bug), refusals (any other one-line GlcError on a well-typed
program), tracebacks (any other exception), hangs (past ``--timeout`` seconds) and mismatches
(a result differing from numpy: ints bit for bit, floats within float rounding).

Usage: ``python scripts/fuzz.py --count N [--engine isa|rtl] [--seed S] [--config n16]
[--timeout SECONDS] [--jobs J] [--json]``; exit status 1 when anything but passes and unfit
programs was found (each is listed with its seed: ``make(seed)`` regenerates it).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from randprog import Case, make  # noqa: E402

KINDS = ("pass", "unfit", "refused", "traceback", "hang", "mismatch")
# Saturation limits for the fuzz: the programs are small; a tighter budget than the default keeps
# a run of thousands short without changing what they extract.
FUZZ_TIME_LIMIT = 2.0


@dataclass
class Outcome:
    """What happened to one program: its kind, and a line saying why."""

    seed: int
    kind: str
    detail: str = ""
    seconds: float = 0.0
    kernels: int = 0  # accelerator kernels the compiled program ran


def agrees(result: np.ndarray, expected: np.ndarray) -> str:
    """"" when ``result`` equals ``expected`` (shape, dtype and values: integers bit for bit,
    floats within a few ulps, NaN where both have it), else what differs."""
    result = np.asarray(result)
    if result.shape != expected.shape:
        return f"shape {result.shape}, expected {expected.shape}"
    if result.dtype != expected.dtype:
        return f"dtype {result.dtype}, expected {expected.dtype}"
    if expected.dtype.kind == "f":
        rtol = 1e-5 if expected.dtype == np.float32 else 1e-12
        same = np.isclose(result, expected, rtol=rtol, atol=rtol, equal_nan=True)
    else:
        same = result == expected
    if not np.all(same):
        return f"{int(np.size(same) - np.count_nonzero(same))} of {same.size} elements differ"
    return ""


def check(case: Case, engine: str, config_name: str = "n16") -> Outcome:
    """Interpret, compile and run ``case``; classify what happened."""
    from glc.compiler import compile_program
    from glc.egraph.runner import Limits
    from glc.errors import DoesNotFit, GlcError
    from glc.hwconfig import load_config
    from glc.inputs import load
    from glc.interp import interpret
    from glc.lower.execute import execute
    from glc.rewrites import DEFAULT, select

    start = time.perf_counter()
    config = load_config(config_name)
    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "p"
            path.mkdir()
            (path / "p.gls").write_text(case.text)
            for name, value in case.inputs.items():
                np.save(path / f"{name}.npy", value)
            bundle = load(path)
        arrays = bundle.arrays
        with np.errstate(all="ignore"):
            reference, _ = interpret(bundle.program.body, arrays)
        wrong = agrees(reference, case.expected)
        if wrong:
            return Outcome(case.seed, "mismatch", f"interpreter: {wrong}")
        result = compile_program(bundle, rules=select(DEFAULT, config.array_size),
                                 limits=Limits(time_limit=FUZZ_TIME_LIMIT), config=config)
        with np.errstate(all="ignore"):
            outcome = execute(result.lowered, arrays, engine)
        wrong = agrees(outcome.result, case.expected)
        if wrong:
            return Outcome(case.seed, "mismatch", f"{engine}: {wrong}")
    except DoesNotFit as error:
        return Outcome(case.seed, "unfit", str(error))
    except GlcError as error:
        return Outcome(case.seed, "refused", str(error).splitlines()[0])
    except Exception as error:  # the fuzz's finding: reported with where it was raised
        frame = traceback.extract_tb(error.__traceback__)[-1]
        return Outcome(case.seed, "traceback", f"{type(error).__name__}: {error} "
                                               f"({Path(frame.filename).name}:{frame.lineno})")
    return Outcome(case.seed, "pass", seconds=round(time.perf_counter() - start, 3),
                   kernels=len(result.lowered.kernels))


def _serve(connection, engine: str, config: str, zero_d: bool) -> None:
    """A worker: checks the seeds it is sent until told to stop (None)."""
    while (seed := connection.recv()) is not None:
        try:
            case = make(seed, zero_d=zero_d)
        except Exception as error:  # a bug of the generator's, reported as one
            connection.send(asdict(Outcome(seed, "traceback", f"generator: {error!r}")))
            continue
        connection.send(asdict(check(case, engine, config)))


class Worker:
    """One process checking programs, killed and replaced when a program hangs."""

    def __init__(self, engine: str, config: str, zero_d: bool):
        self.engine, self.config, self.zero_d = engine, config, zero_d
        self._start()

    def _start(self) -> None:
        self.connection, theirs = multiprocessing.Pipe()
        self.process = multiprocessing.Process(target=_serve,
                                               args=(theirs, self.engine, self.config,
                                                     self.zero_d),
                                               daemon=True)
        self.process.start()

    def run(self, seed: int, timeout: float) -> Outcome:
        start = time.perf_counter()
        self.connection.send(seed)
        if self.connection.poll(timeout):
            try:
                return Outcome(**self.connection.recv())
            except EOFError:
                self._restart()
                return Outcome(seed, "traceback", "the worker process died")
        self._restart()
        return Outcome(seed, "hang", f"no answer in {timeout:g} s",
                       round(time.perf_counter() - start, 3))

    def _restart(self) -> None:
        self.process.kill()
        self.process.join()
        self._start()

    def close(self) -> None:
        self.connection.send(None)
        self.process.join(5)


def fuzz(count: int, engine: str, seed: int, config: str, timeout: float, jobs: int,
         progress: bool, zero_d: bool = True) -> list[Outcome]:
    """Check ``count`` programs from ``seed`` on, ``jobs`` at a time."""
    from concurrent.futures import ThreadPoolExecutor

    workers = [Worker(engine, config, zero_d) for _ in range(jobs)]
    free = list(workers)
    outcomes: list[Outcome] = []

    def one(s: int) -> Outcome:
        worker = free.pop()
        try:
            return worker.run(s, timeout)
        finally:
            free.append(worker)

    with ThreadPoolExecutor(jobs) as pool:
        for done, outcome in enumerate(pool.map(one, range(seed, seed + count)), 1):
            outcomes.append(outcome)
            if progress:
                bad = sum(o.kind not in ("pass", "unfit") for o in outcomes)
                print(f"\r{done}/{count} programs, {bad} findings", end="", file=sys.stderr,
                      flush=True)
    if progress:
        print(file=sys.stderr)
    for worker in workers:
        worker.close()
    return outcomes


def table(outcomes: list[Outcome], engine: str, config: str, seconds: float) -> str:
    """The figures, then one line per finding."""
    counts = {kind: sum(o.kind == kind for o in outcomes) for kind in KINDS}
    kernels = sum(o.kernels for o in outcomes)
    lines = [f"engine {engine}, config {config}: {len(outcomes)} programs in {seconds:.0f} s, "
             f"{kernels} kernels run on the accelerator",
             "programs  " + "  ".join(f"{k:>9}" for k in KINDS),
             f"{len(outcomes):>8}  " + "  ".join(f"{counts[k]:>9}" for k in KINDS)]
    findings = [o for o in outcomes if o.kind not in ("pass", "unfit")]
    # The same defect once, with how often and a seed that shows it (names and paths vary).
    groups: dict[tuple[str, str], list[int]] = {}
    for o in findings:
        key = (o.kind, re.sub(r"'[^']*'|/\S*|\d+", "…", o.detail))
        groups.setdefault(key, []).append(o.seed)
    lines += [f"{len(seeds):>6} x {kind}: {detail} (seed {seeds[0]})"
              for (kind, detail), seeds in sorted(groups.items(), key=lambda g: -len(g[1]))]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--engine", choices=("isa", "rtl"), default="isa")
    parser.add_argument("--seed", type=int, default=0, help="The first program's seed.")
    parser.add_argument("--config", default="n16")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="Seconds before a program counts as a hang.")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--no-zero-d", dest="zero_d", action="store_false",
                        help="No 0-d values (scalars, whole-tensor reductions).")
    parser.add_argument("--json", action="store_true", help="One JSON object instead.")
    args = parser.parse_args()
    start = time.perf_counter()
    outcomes = fuzz(args.count, args.engine, args.seed, args.config, args.timeout, args.jobs,
                    progress=sys.stderr.isatty() and not args.json, zero_d=args.zero_d)
    seconds = time.perf_counter() - start
    if args.json:
        print(json.dumps({"engine": args.engine, "config": args.config, "seconds": seconds,
                          "programs": len(outcomes),
                          **{k: sum(o.kind == k for o in outcomes) for k in KINDS},
                          "findings": [asdict(o) for o in outcomes
                                       if o.kind not in ("pass", "unfit")]}))
    else:
        print(table(outcomes, args.engine, args.config, seconds))
    return int(any(o.kind not in ("pass", "unfit") for o in outcomes))


if __name__ == "__main__":
    sys.exit(main())
