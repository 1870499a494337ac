"""Run random well-typed programs (scripts/randprog.py) through glc and count what went wrong.

Each program is checked three ways against the generator's own numpy result: the interpreter
(glc/interp.py), then the compiled program run with its kernels on the ISA simulator or the RTL
(the path ``glc run`` takes). The table counts programs, passes, those the config cannot hold
(``DoesNotFit``: a limit, not a bug), refusals (any other one-line GlcError on a well-typed
program), tracebacks (any other exception), hangs (past ``--timeout`` seconds), races (an
image whose tokens leave two units' accesses of a local row unordered, glc/isa/races.py,
whatever the numbers) and mismatches (a result differing from numpy: ints bit for bit, floats
within float rounding).

Usage: ``python scripts/fuzz.py --count N [--engine isa|rtl] [--seed S] [--config n16]
[--timeout SECONDS] [--jobs J] [--json]``; exit status 1 when anything but passes and unfit
programs was found (each is listed with its seed: ``make(seed)`` regenerates it).

``--networks``: random quantized ONNX networks (scripts/netgen.py) instead, each imported as
``glc import`` does (its ``output.npy`` onnxruntime's result), compiled and run; the compiled
result must equal the interpreter's bit for bit (else a ``mismatch``: a lowering bug) and the
interpreter onnxruntime's (else ``reference``: the import's or onnxruntime's disagreement,
counted apart; ``float-reference`` where onnxruntime ran some of the network's convs or Gemms
in float, whose rounding no integer reading reproduces: docs/onnx.md). Each finding is listed
with the commands that reproduce it.

``--compositions``: int8 programs of several kernels (scripts/randcompose.py: fan-out, layouts,
folds between kernels, residual sums, concatenations) instead, each against its own numpy result
as the programs are; ``randcompose.make(seed)`` regenerates one.
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
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from randcompose import make as compose  # noqa: E402
from randprog import Case, make  # noqa: E402

KINDS = ("pass", "unfit", "refused", "traceback", "hang", "race", "mismatch")
# A network's result is also held against onnxruntime's: a disagreement there is no lowering bug.
NETWORK_KINDS = (*KINDS, "reference", "float-reference")
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
    graph: str = ""  # a network's description (scripts/netgen.py)
    fired: tuple[str, ...] = ()  # the lowering's optimizations it kept (Program.fired)


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
            outcome = execute(result.lowered, arrays, engine, check_races=True)
        wrong = agrees(outcome.result, case.expected)
        if wrong:
            return Outcome(case.seed, "mismatch", f"{engine}: {wrong}")
    except Exception as error:
        return failed(case.seed, error)
    return Outcome(case.seed, "pass", seconds=round(time.perf_counter() - start, 3),
                   kernels=len(result.lowered.kernels), fired=tuple(result.lowered.fired))


def failed(seed: int, error: Exception, graph: str = "") -> Outcome:
    """The outcome an exception makes: unfit (``DoesNotFit``), refused (another one-line
    GlcError) or a traceback (anything else: the fuzz's finding, with where it was raised)."""
    from glc.errors import DoesNotFit, GlcError
    from glc.isa.races import Unordered

    if isinstance(error, DoesNotFit):
        return Outcome(seed, "unfit", str(error), graph=graph)
    if isinstance(error, Unordered):
        return Outcome(seed, "race", str(error), graph=graph)
    if isinstance(error, GlcError):
        return Outcome(seed, "refused", str(error).splitlines()[0], graph=graph)
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return Outcome(seed, "traceback", f"{type(error).__name__}: {error} "
                                      f"({Path(frame.filename).name}:{frame.lineno})", graph=graph)


def check_network(seed: int, engine: str, config_name: str = "n16") -> Outcome:
    """Import network ``seed`` (scripts/netgen.py) as ``glc import`` does, compile it and run it
    as ``glc run`` does; the compiled result against the interpreter's, the interpreter's
    against onnxruntime's, both bit for bit."""
    from netgen import make as make_network

    from glc.compare import FloatTolerance, compare
    from glc.compiler import compile_program
    from glc.hwconfig import load_config
    from glc.inputs import load
    from glc.interp import interpret
    from glc.lower.execute import execute
    from glc.onnx.importer import import_model
    from glc.rewrites import DEFAULT, select

    start = time.perf_counter()
    network = make_network(seed)
    exact = FloatTolerance(0.0, 0.0)  # the output is dequantized int8: equal, or a quantum off
    try:
        with tempfile.TemporaryDirectory() as folder:
            model = network.write(Path(folder) / "model.onnx")
            bundle = load(import_model(model, Path(folder) / "program").folder)
        with np.errstate(all="ignore"):
            reference, _ = interpret(bundle.program.body, bundle.arrays)
        onnxruntime = compare(reference, bundle.expected, exact)
        floats = 0 if onnxruntime.match else network.float_products()
        disagrees = "float-reference" if floats else "reference"
        against = "" if onnxruntime.match else (
            f"interpreter vs onnxruntime: {onnxruntime.detail}, onnxruntime running "
            f"{floats} convs or Gemms in float")
        try:
            config = load_config(config_name)
            result = compile_program(bundle, rules=select(DEFAULT, config.array_size),
                                     config=config)
            with np.errstate(all="ignore"):
                outcome = execute(result.lowered, bundle.arrays, engine, check_races=True)
        except Exception as error:
            if not against:
                raise
            # The import's disagreement is the finding; what the compile then did is its detail.
            kind = failed(seed, error).kind
            return Outcome(seed, disagrees, f"{against}; compiling: {kind}",
                           graph=network.description)
        compiled = compare(outcome.result, reference, exact)
        if not compiled.match:
            return Outcome(seed, "mismatch", "; ".join(filter(None, (
                f"compiled vs interpreter: {compiled.detail}", against))),
                graph=network.description)
        if against:
            return Outcome(seed, disagrees, against, graph=network.description,
                           fired=tuple(result.lowered.fired))
    except Exception as error:
        return failed(seed, error, network.description)
    return Outcome(seed, "pass", seconds=round(time.perf_counter() - start, 3),
                   kernels=len(result.lowered.kernels), graph=network.description,
                   fired=tuple(result.lowered.fired))


def _serve(connection, engine: str, config: str, zero_d: bool, networks: bool = False,
           compositions: bool = False) -> None:
    """A worker: checks the seeds it is sent until told to stop (None)."""
    while (seed := connection.recv()) is not None:
        try:
            if networks:
                connection.send(asdict(check_network(seed, engine, config)))
                continue
            if compositions:  # sized for the config's array (and so its DRAM)
                from glc.hwconfig import load_config

                case = compose(seed, load_config(config).array_size)
            else:
                case = make(seed, zero_d=zero_d)
        except Exception as error:  # a bug of the generator's, reported as one
            connection.send(asdict(Outcome(seed, "traceback", f"generator: {error!r}")))
            continue
        connection.send(asdict(check(case, engine, config)))


class Worker:
    """One process checking programs, killed and replaced when a program hangs."""

    def __init__(self, engine: str, config: str, zero_d: bool, networks: bool = False,
                 compositions: bool = False):
        self.engine, self.config, self.zero_d = engine, config, zero_d
        self.networks = networks
        self.compositions = compositions
        self._start()

    def _start(self) -> None:
        self.connection, theirs = multiprocessing.Pipe()
        self.process = multiprocessing.Process(target=_serve,
                                               args=(theirs, self.engine, self.config,
                                                     self.zero_d, self.networks,
                                                     self.compositions),
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


def fuzz(seeds: Sequence[int], engine: str, config: str, timeout: float, jobs: int,
         progress: bool, zero_d: bool = True, networks: bool = False,
         compositions: bool = False) -> list[Outcome]:
    """Check the programs (or ``networks``) of ``seeds``, ``jobs`` at a time."""
    from concurrent.futures import ThreadPoolExecutor

    workers = [Worker(engine, config, zero_d, networks, compositions) for _ in range(jobs)]
    free = list(workers)
    outcomes: list[Outcome] = []

    def one(s: int) -> Outcome:
        worker = free.pop()
        try:
            return worker.run(s, timeout)
        finally:
            free.append(worker)

    with ThreadPoolExecutor(jobs) as pool:
        for done, outcome in enumerate(pool.map(one, seeds), 1):
            outcomes.append(outcome)
            if progress:
                bad = sum(o.kind not in ("pass", "unfit") for o in outcomes)
                print(f"\r{done}/{len(seeds)} programs, {bad} findings", end="", file=sys.stderr,
                      flush=True)
    if progress:
        print(file=sys.stderr)
    for worker in workers:
        worker.close()
    return outcomes


def reproduce(seed: int, engine: str, config: str) -> str:
    """The commands that show network ``seed``'s finding by hand."""
    return (f"python scripts/netgen.py --seed {seed} -o model.onnx && glc import model.onnx "
            f"-o net && glc run net --engine {engine} --config {config}")


def table(outcomes: list[Outcome], engine: str, config: str, seconds: float,
          networks: bool = False) -> str:
    """The figures, then one line per finding (for networks with the commands reproducing it,
    and every mismatch and reference disagreement with its graph)."""
    kinds, unit = (NETWORK_KINDS, "networks") if networks else (KINDS, "programs")
    counts = {kind: sum(o.kind == kind for o in outcomes) for kind in kinds}
    kernels = sum(o.kernels for o in outcomes)
    lines = [f"engine {engine}, config {config}: {len(outcomes)} {unit} in {seconds:.0f} s, "
             f"{kernels} kernels run on the accelerator",
             f"{unit}  " + "  ".join(f"{k:>9}" for k in kinds),
             f"{len(outcomes):>8}  " + "  ".join(f"{counts[k]:>9}" for k in kinds)]
    findings = [o for o in outcomes if o.kind not in ("pass", "unfit")]
    # The same defect once, with how often and a seed that shows it (names and paths vary).
    groups: dict[tuple[str, str], list[int]] = {}
    for o in findings:
        key = (o.kind, re.sub(r"'[^']*'|/\S*|\d+", "…", o.detail))
        groups.setdefault(key, []).append(o.seed)
    lines += [f"{len(seeds):>6} x {kind}: {detail} (seed {seeds[0]})"
              + (f"\n         {reproduce(seeds[0], engine, config)}" if networks else "")
              for (kind, detail), seeds in sorted(groups.items(), key=lambda g: -len(g[1]))]
    lines += [f"seed {o.seed} {o.kind}: {o.detail}\n    {o.graph}" for o in findings
              if o.kind in ("mismatch", "reference", "float-reference") and o.graph]
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
    parser.add_argument("--compositions", action="store_true",
                        help="Multi-kernel compositions (scripts/randcompose.py) instead.")
    parser.add_argument("--networks", action="store_true",
                        help="Random quantized ONNX networks (scripts/netgen.py) against "
                             "onnxruntime instead.")
    parser.add_argument("--json", action="store_true", help="One JSON object instead.")
    args = parser.parse_args()
    start = time.perf_counter()
    outcomes = fuzz(range(args.seed, args.seed + args.count), args.engine, args.config,
                    args.timeout, args.jobs, progress=sys.stderr.isatty() and not args.json,
                    zero_d=args.zero_d, networks=args.networks, compositions=args.compositions)
    seconds = time.perf_counter() - start
    if args.json:
        kinds = NETWORK_KINDS if args.networks else KINDS
        print(json.dumps({"engine": args.engine, "config": args.config, "seconds": seconds,
                          "networks" if args.networks else "programs": len(outcomes),
                          **{k: sum(o.kind == k for o in outcomes) for k in kinds},
                          "findings": [asdict(o) for o in outcomes
                                       if o.kind not in ("pass", "unfit")]}))
    else:
        print(table(outcomes, args.engine, args.config, seconds, args.networks))
    return int(any(o.kind not in ("pass", "unfit") for o in outcomes))


if __name__ == "__main__":
    sys.exit(main())
