"""Localizing a miscompile: ``glc run --check-each`` and ``glc run --bisect``.

``check_each``: every value the lowering placed in DRAM (``Program.values``: a node of the
extracted term and the view of the buffer holding it) is read back from the run's final DRAM
and compared, bit for bit, with the interpreter's value of the same node. Nothing is freed
(docs/lowering.md, "Memory plan"), so the final DRAM holds each step's result as that step
left it; the first step in program order holding a value that differs is the first wrong
step, named by its define and, for an imported model, its ONNX node.

``bisect``: the same extracted term lowered again with optimizations switched off
(glc/lower/optimizations.py), run and compared: the smallest set whose switching-off makes the
result match (each of its members needed: switching any one back on breaks it again) names the
optimizations at fault. The extraction is not redone, so what changes is the lowering alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from glc.compare import DEFAULT_TOLERANCE, FloatTolerance, compare
from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.interp import evaluate, interpret
from glc.ir.term import Term
from glc.ir.types import Access
from glc.lower.execute import Outcome, execute, read_view
from glc.lower.lowering import lower
from glc.lower.optimizations import NAMES
from glc.lower.program import Program


@dataclass
class WrongStep:
    """The first step holding a value that differs from the interpreter's."""

    step: str
    index: int  # in program order
    node: Term
    differ: int
    total: int
    first: tuple[int, ...]  # the first differing index
    got: object
    expected: object
    define: str | None = None  # the source's define (and ONNX node), where one owns the node

    def line(self) -> str:
        where = f" ({self.define})" if self.define else ""
        return (f"first wrong step {self.step}{where}: {self.differ} of {self.total} elements "
                f"differ, first at {self.first}: {self.got}, expected {self.expected}")

    def to_json(self) -> dict:
        return {"step": self.step, "index": self.index, "define": self.define,
                "differ": self.differ, "total": self.total, "first": list(self.first),
                "got": _scalar(self.got), "expected": _scalar(self.expected)}


def check_each(program: Program, outcome: Outcome, term: Term,
               arrays: Mapping[str, np.ndarray],
               define_of: Callable[[Term], str | None] = lambda node: None
               ) -> tuple[WrongStep | None, int]:
    """The first wrong step of a run of ``program`` (lowered from ``term``) and how many
    values were compared; ``define_of`` names a node of ``term`` after the source."""
    values, _ = evaluate(term, arrays)
    writer = {step.output: index for index, step in enumerate(program.steps)}
    found, compared = None, 0
    for key, (node, view) in program.values.items():
        expected = values.get(key)
        if view.buffer not in writer or not isinstance(expected, np.ndarray):
            continue  # an input (or a view of one), or a value no tensor holds
        compared += 1
        got = read_view(outcome.dram, program, view, outcome.freed).astype(expected.dtype)
        differs = got != expected
        if np.issubdtype(expected.dtype, np.floating):
            differs &= ~(np.isnan(got) & np.isnan(expected))
        count = int(np.count_nonzero(differs))
        index = writer[view.buffer]
        if count and (found is None or (index, -expected.size) < (found.index, -found.total)):
            first = tuple(int(i) for i in np.argwhere(differs)[0]) if differs.ndim else ()
            found = WrongStep(program.steps[index].name, index, node, count, expected.size,
                              first, got[first].item(), expected[first].item())
    if found is not None:
        found.define = define_of(found.node)
    return found, compared


@dataclass
class Bisection:
    """What ``bisect`` found: ``culprits`` (None where the optimizations are not at fault:
    the result matches with all of them on, or is wrong with all of them off) and each trial
    as (the optimizations switched off, whether the result then matched)."""

    culprits: frozenset[str] | None
    trials: list[tuple[frozenset[str], bool]]

    def line(self) -> str:
        if self.culprits is None:
            on, off = self.trials[0][1], self.trials[-1][1]
            if on:
                return "bisect: the result matches with every optimization on"
            assert not off
            return ("bisect: the result is wrong with every optimization off: the fault is in "
                    "the plain lowering, the kernels or the machine, not an optimization")
        names = ", ".join(sorted(self.culprits))
        return (f"bisect: switching off {names} makes the result match "
                f"({len(self.trials)} lowerings; --disable {','.join(sorted(self.culprits))})")

    def to_json(self) -> dict:
        return {"culprits": sorted(self.culprits) if self.culprits is not None else None,
                "trials": [{"disabled": sorted(d), "match": m} for d, m in self.trials]}


def bisect(term: Term, env: Mapping[str, Access], config: HwConfig,
           arrays: Mapping[str, np.ndarray], engine: str,
           tolerance: FloatTolerance = DEFAULT_TOLERANCE,
           disabled: frozenset[str] = frozenset(), max_cycles: int | None = None) -> Bisection:
    """The smallest set of optimizations (beyond ``disabled``, off throughout) whose
    switching-off makes ``term``'s lowering compute the interpreter's result on ``engine``:
    all off first (else they are not at fault), then each switched back on where the result
    still matches without it (a 1-minimal set: every member is needed)."""
    reference, _ = interpret(term, arrays)
    trials: list[tuple[frozenset[str], bool]] = []

    def matches(off: frozenset[str]) -> bool:
        try:
            program = lower(term, env, config, disabled=off | disabled)
            result = execute(program, arrays, engine, max_cycles).result
            match = compare(result, reference, tolerance).match
        except GlcError:  # refused or unfit without them: no evidence they are at fault
            match = False
        trials.append((off, match))
        return match

    candidates = frozenset(NAMES) - disabled
    if matches(frozenset()) or not matches(candidates):
        return Bisection(None, trials)
    culprits = candidates
    for name in NAMES:
        if name in culprits and matches(culprits - {name}):
            culprits -= {name}
    return Bisection(culprits, trials)


def _scalar(value: object) -> object:
    return value if isinstance(value, int | float | bool) else str(value)
