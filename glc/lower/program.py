"""The lowered program: where every tensor lives (the memory plan), the steps in order
(accelerator kernels and host steps), the result's view, and its figures. Made by
glc/lower/lowering.py, run by glc/lower/execute.py, written by glc/lower/artefacts.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.ir.term import Term
from glc.isa.fields import WORD_BYTES
from glc.isa.transfer import dram_span
from glc.lower.kernel import Kernel
from glc.lower.view import View

ALIGN = 64  # bytes: every tensor starts on a DRAM port beat boundary (P ≤ 64 in hw/configs)


def aligned(address: int) -> int:
    """The next address on a DRAM beat boundary (ALIGN)."""
    return -(-address // ALIGN) * ALIGN


@dataclass(frozen=True)
class Buffer:
    """A tensor in DRAM: row-major, little-endian, at ``address``."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    address: int

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass
class KernelStep:
    """Run ``kernel`` on the accelerator; it writes buffer ``output``."""

    name: str
    kernel: Kernel
    inputs: list[str]
    output: str


@dataclass
class HostStep:
    """Evaluate ``term`` with the interpreter into buffer ``output``, each of its symbols read
    from DRAM through its view in ``views``; ``copy``: it only materialises an operand view the
    DMA cannot walk."""

    name: str
    term: Term
    views: dict[str, View]
    output: str
    copy: bool = False
    # A product left to numpy: why the array does not take it, said wherever the host steps
    # are listed (issue 41: such products ran on the host without a word).
    why: str = ""

    @property
    def inputs(self) -> list[str]:
        """The buffers it reads."""
        return list(dict.fromkeys(v.buffer for v in self.views.values()))


@dataclass
class Program:
    """The lowered program: where every tensor lives, the steps in order, the result's view.

    Addresses below the config's ``dram_bytes`` are the accelerator's DRAM; a tensor only host
    steps touch may lie beyond it, in the host's memory."""

    config: HwConfig
    buffers: dict[str, Buffer]
    inputs: list[str]
    steps: list[KernelStep | HostStep] = field(default_factory=list)
    output: View | None = None
    output_dtype: str = ""
    # Each node of the lowered term whose value lies in DRAM → (the node, the view holding it):
    # what ``glc run --check-each`` compares with the interpreter's value of the same node.
    values: dict[int, tuple[Term, View]] = field(default_factory=dict, repr=False,
                                                 compare=False)
    # Each optimization (glc/lower/optimizations.py) → how many of its choices the lowering kept.
    fired: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    # The compute ideal of the source program (glc/cost/ideal.py), set by compile_program or
    # read from the manifest; None for a program lowered from a bare term (then its kernels').
    ideal: int | None = field(default=None, repr=False, compare=False)
    # Kernel results whose DRAM later steps reuse once the host step reading them has run
    # (lowering.py, ``_release_read``): execute keeps a copy of each for --check-each.
    freed: set[str] = field(default_factory=set, repr=False, compare=False)
    _figures: dict | None = field(default=None, repr=False, compare=False)
    _runs: tuple | None = field(default=None, repr=False, compare=False)  # image.schedule's

    @property
    def kernels(self) -> list[KernelStep]:
        return [s for s in self.steps if isinstance(s, KernelStep)]

    @property
    def host_steps(self) -> list[HostStep]:
        return [s for s in self.steps if isinstance(s, HostStep)]

    @property
    def memory_bytes(self) -> int:
        """The end of the highest tensor (DRAM and the host memory beyond it)."""
        return max((b.address + b.nbytes for b in self.buffers.values()), default=0)

    def live_dram_bytes(self, first: KernelStep) -> int:
        """The end of the DRAM tensors that ``first`` and the steps after it touch, the result's
        among them: what an image starting at ``first`` must not overwrite. A tensor only
        earlier steps touched is dead (its space may hold a later tensor, lowering.py's
        ``_release_read``)."""
        later = self.steps[self.steps.index(first):]
        touched = {self.output.buffer} | {name for step in later for name in
                                          [*step.inputs, step.output]}
        return max((b.address + b.nbytes for b in self.buffers.values()
                    if b.name in touched and b.address < self.config.dram_bytes), default=0)

    def estimated_cycles(self) -> int:
        """The analytic model's cycles summed over the kernels (a fold, not estimated
        analytically, by the instruction-level model): the cost extraction compares."""
        return sum(s.kernel.estimated_cycles(self.config) for s in self.kernels)

    def figures(self) -> dict:
        """instructions and predicted cycles (over the images the kernels run as, the
        instruction-level model once per image), ideal cycles (the source program's, ``ideal``;
        without one, summed over the kernels), host steps (counted, and each named with its
        operator). Computed once, but the ideal, which may be set later."""
        if self._figures is None:
            self._figures = self._compute_figures()
        ideal = self.ideal if self.ideal is not None else \
            sum(s.kernel.ideal_cycles(self.config) for s in self.kernels)
        return {key: ideal if key == "ideal_cycles" else value
                for key, value in self._figures.items()}

    def _compute_figures(self) -> dict:
        from glc.lower.image import Image, schedule  # images are made of this module's steps

        images = [run for run in schedule(self) if isinstance(run, Image)]
        dram = self.config.dram_bytes
        data = max((b.address + b.nbytes for b in self.buffers.values() if b.address < dram),
                   default=0)
        # An image sits at the top of DRAM above the tensors still live when it runs
        # (glc/lower/execute.py): the memory plan's peak is the largest such sum.
        peak = max([data, *(self.live_dram_bytes(i.steps[0]) + WORD_BYTES * len(i.instructions)
                            for i in images)])
        return {"kernels": len(self.kernels),
                "images": len(images),
                "instructions": sum(len(i.instructions) for i in images),
                "predicted_cycles": sum(i.predicted_cycles(self.config) for i in images),
                "ideal_cycles": None,  # figures() fills it in
                "host_steps": len([s for s in self.host_steps if not s.copy]),
                "host_copies": len([s for s in self.host_steps if s.copy]),
                "dram_data_bytes": data,
                "dram_peak_bytes": peak,
                "dram_bytes": dram,
                "host": [f"{s.name}: {_describe(s.term)}" + (f" (on the host: {s.why})"
                                                             if s.why else "")
                         for s in self.host_steps]}

    def check_stores(self, span) -> None:
        """Every STORE of a kernel step lands inside the buffer the step writes, else a
        GlcError at ``span``: a kernel scheduled for a result address its buffer then did not
        get (DRAM allocated between the schedule search and the result's allocation) would
        write over other tensors — a wrong number, never an error, without this check."""
        for step in self.steps:
            if not isinstance(step, KernelStep):
                continue
            buffer = self.buffers[step.output]
            for instruction in step.kernel.instructions:
                if instruction.op.name != "store" or (found := dram_span(instruction)) is None:
                    continue
                if found[0] < buffer.address or found[1] > buffer.address + buffer.nbytes:
                    raise GlcError(f"the lowering's step {step.name} stores DRAM {found[0]} … "
                                   f"{found[1] - 1}, outside its buffer {buffer.name} at "
                                   f"{buffer.address} … {buffer.address + buffer.nbytes - 1} "
                                   "(an internal error)", span)


def _describe(term: Term) -> str:
    """A host step's operator, e.g. ``compute reduce-max``."""
    if term.op == "compute":
        return f"compute {term.args[0].value[0]}"
    return term.op
