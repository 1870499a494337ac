"""A kernel's result laid out for the step that reads it (docs/lowering.md, "Reoriented
producers"), and when any value may move (docs/lowering.md, "Optimizations by name, and when a
value may move"): only while no node but the one being lowered holds a view of it, and the
lowering's check that none moved under a reader (``verify``).

A kernel stores C = A·B row-major, or Cᵀ when the search ran it the other way round (Cᵀ =
Bᵀ·Aᵀ): the orientation picks the result's layout, and the search picks it for the kernel
alone. A max pool over an NCHW conv's output then reads one element a run, or a channels-last
copy of it (SqueezeNet at 224×224: its stem's 788 544-byte result copied in 104 857 cycles,
against the stem's own 114 475). Where the consumer would copy or read slowly a result that
only it reads, the producer is lowered again in its other orientation, which stores the result
channels-last, and kept where that kernel and the consumer over its result take fewer cycles
than the producer as it was and the consumer's best.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from glc.errors import GlcError
from glc.ir.term import Term
from glc.lower.program import Buffer, HostStep, KernelStep
from glc.lower.transfer import OperandUnexpressible
from glc.lower.view import View


@dataclass
class _State:
    """What lowering a node changes, to put back when a trial does not pay."""

    steps: list[KernelStep | HostStep]
    buffers: dict[str, Buffer]
    top: int
    host_top: int
    in_dram: dict[int, View]
    unfused: set[int]
    repacked: dict
    oriented: dict[str, tuple[int, bool]]
    folds: dict[str, Term]
    fired: Counter[str]


class Reorient:
    """The lowering's reoriented producers (a mixin of the lowering, which holds the memory
    plan and records each kernel's orientation in ``oriented``: its result buffer → the node it
    computes and whether it ran as Cᵀ)."""

    def _reoriented(self, base: Term, consumer: Callable[[View], int | None], current: int
                    ) -> View | None:
        """``base``'s value computed by its kernel in the other orientation, where that kernel
        and ``consumer`` over the new value (its cycles, None if it cannot read it) take fewer
        cycles than the kernel as it is and ``current`` (the consumer's best over the old
        value); else None, the lowering as it was. Only a kernel whose result no step after it
        reads: its step is replaced, not kept beside the new one. Tried by the analytic model
        (no instructions built), then lowered again with them if it pays; not inside another
        trial (the producer's own operands keep their producers as they are)."""
        found = self._reorientable(base) if self.enabled("reorient") else None
        if found is None:
            return None
        at, swap = found
        saved = self._state()
        old = self.program.steps[at]
        build, self.build = self.build, False
        try:
            view = self._lowered_again(base, at, self.forced, swap)
            cycles = consumer(view)
            pays = cycles is not None and cycles + self._made(len(saved.steps) - 1) < \
                self._cost(old) + current
        except (GlcError, OperandUnexpressible):
            pays = False
        finally:
            self.build = build
        if pays and not build:
            self.fired["reorient"] += 1
            return view
        self._restore(saved)
        if not pays:
            return None
        # Built, the kernels' instruction-level cycles decide (an estimate may be some % off).
        view = self._lowered_again(base, at, self.forced, swap)
        if cycles + self._made(len(saved.steps) - 1, exact=True) < \
                old.kernel.predicted_cycles(self.config) + current:
            self.fired["reorient"] += 1
            return view
        self._restore(saved)
        return None

    def _reorientable(self, base: Term) -> tuple[int, bool] | None:
        """Where ``base``'s value is the result of a kernel step no later step reads, outside
        a trial: the step's index and the orientation to try."""
        if self.forced:
            return None
        source = self.in_dram.get(id(base))
        made = self.oriented.get(source.buffer) if source is not None else None
        if made is None or made[0] != id(base):
            return None
        at = self._sole_kernel_step(base, source.buffer)
        return None if at is None else (at, not made[1])

    def _sole_kernel_step(self, node: Term, buffer: str) -> int | None:
        """The index of the one kernel step writing ``buffer``, ``node``'s value, where no
        step after it reads the buffer and no node but the one being lowered has taken the
        value (so another step may compute it elsewhere instead), else None. A node part-way
        through its lowering may hold a view of the buffer without a step yet: a residual add
        of a conv block's output and its input took the input's view before the conv under
        it asked for the input channels-last (issue 37's ResNet-18 block)."""
        if id(node) in self.kept or not self.readers.get(id(node), set()) <= \
                {self.lowering[-1] if self.lowering else None}:
            return None
        steps = self.program.steps
        at = [i for i, s in enumerate(steps) if s.output == buffer]
        if len(at) != 1 or not isinstance(steps[at[0]], KernelStep) or \
                any(buffer in s.inputs for s in steps[at[0] + 1:]):
            return None
        return at[0]

    def _made(self, first: int, exact: bool = False) -> int:
        """The cycles of the steps from ``first`` on (a trial's producer and its copies)."""
        return sum(self._cost(s, exact) for s in self.program.steps[first:])

    def _lowered_again(self, base: Term, at: int, marks: dict, mark) -> View:
        """``base``'s value lowered again in place of its kernel (step ``at``), with ``mark``
        in ``marks`` for it while it is (``forced``: the orientation its kernel must take;
        ``placed``: the band of a concatenation it must write); its old buffer dropped (the
        name free again; its memory is not reused)."""
        self._retire(at, base)
        del self.in_dram[id(base)]
        marks[id(base)] = mark
        try:
            return self._materialise(base)
        finally:
            del marks[id(base)]

    def verify(self) -> int | None:
        """None if every step reads only buffers that are inputs or that steps before it
        wrote, and every value lies in such a buffer; else the node whose value an
        optimization moved away from a buffer something still reads (a view taken before the
        move: its step would read memory nothing writes)."""
        written = set(self.program.inputs)
        for step in self.program.steps:
            for name in step.inputs:
                if name not in written and name != step.output:
                    return self.retired.get(name, -1)
            written.add(step.output)
        views = [view for _, view in self.program.values.values()] + [self.program.output]
        for view in views:
            if view.buffer not in self.program.buffers:
                return self.retired.get(view.buffer, -1)
        return None

    def _retire(self, at: int, node: Term) -> None:
        """Step ``at``, which computed ``node``, dropped with its buffer, whose name is not
        given again (``verify`` finds any view left over it), and with the repacks made for it
        alone: the step lowered again may read its operands otherwise (SqueezeNet at 224: a
        fire's 3×3 conv written into its concatenation's band read an im2col copy, and the
        transposed copy its first lowering had made ran for no reader, 2 × 3 147 cycles)."""
        step = self.program.steps.pop(at)
        del self.program.buffers[step.output]
        self.retired[step.output] = id(node)
        read = {name for s in self.program.steps for name in s.inputs}
        read |= {view.buffer for _, view in self.program.values.values()}
        for index in reversed(range(len(self.program.steps))):
            copy = self.program.steps[index]
            if isinstance(copy, KernelStep) and copy.kernel.kind == "repack" and \
                    copy.output in step.inputs and copy.output not in read:
                del self.program.steps[index]
                del self.program.buffers[copy.output]
                self.repacked = {key: name for key, name in self.repacked.items()
                                 if name != copy.output}

    def _cost(self, step: KernelStep | HostStep, exact: bool = False) -> int:
        """A step's cycles as the cost extraction counts them, or with ``exact`` the
        instruction-level model's (the step built)."""
        if not isinstance(step, KernelStep):
            return 0
        return step.kernel.predicted_cycles(self.config) if exact else \
            step.kernel.estimated_cycles(self.config)

    def _state(self) -> _State:
        return _State(list(self.program.steps), dict(self.program.buffers), self.top,
                      self.host_top, dict(self.in_dram), set(self.unfused), dict(self.repacked),
                      dict(self.oriented), dict(self.folds), Counter(self.fired))

    def _restore(self, state: _State) -> None:
        """The lowering as ``state`` holds it (copies: a state may be restored twice)."""
        self.program.steps, self.program.buffers = list(state.steps), dict(state.buffers)
        self.top, self.host_top = state.top, state.host_top
        self.in_dram, self.unfused = dict(state.in_dram), set(state.unfused)
        self.repacked, self.oriented = dict(state.repacked), dict(state.oriented)
        self.folds, self.fired = dict(state.folds), Counter(state.fired)
