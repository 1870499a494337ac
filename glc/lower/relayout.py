"""Where the lowering's operands lie: layout changes it makes on the accelerator before a kernel
(glc/lower/repack.py), as candidates of the schedule search (``_relayout``), and the copies
themselves (``_copy_of``, ``_repack``), which the depthwise products' operands use too
(glc/lower/depthwise_lowering.py). A mixin of the lowering (glc/lower/lowering.py's
``_Lowerer``), whose memory plan and steps these methods extend."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

from glc.cost.limit import array_ideal
from glc.errors import GlcError
from glc.ir.term import Term
from glc.ir.types import Access
from glc.lower.program import KernelStep, aligned
from glc.lower.repack import Gather, Repack, gathers, repacks
from glc.lower.schedule import Schedule, search
from glc.lower.transfer import OperandUnexpressible, Target
from glc.lower.view import NotAffine, View, access_chain


class Relayout:
    """The lowering's layout choices; ``repacked`` (set by the lowering) maps (tensor view,
    dim moved last) to the buffer of its copy, so a copy is made once."""

    repacked: dict[tuple[View, int], str]

    def _relayout(self, systolic: Term, targets: dict[str, Target], chosen: Schedule,
                  dims: tuple[int, ...], raw: bool, relu: bool, shift: int,
                  tables: dict) -> tuple[Schedule, dict[str, Target]]:
        """The schedule with an operand read from a repack of its tensor, or gathered whole
        (glc/lower/repack.py), where the copy and the kernel over it take fewer cycles than the
        kernel as it is; a copy chosen becomes a kernel before this one. Operand by operand,
        each with the other's choice kept, until neither changes; then, where neither alone
        paid, both tensors repacked at once — an NCHW image and its OIHW weights: a
        channels-last image walks K with the channels innermost, which the OIHW weights read
        9 or 25 bytes apart, so only the two copies together load in runs (a 64→16 5×5/2 conv
        at 17×17: 32 451 cycles as it lies, 0.25 of its limit; 16 361 with both copies). A
        search is skipped where its copies cannot pay (the kernel is already within their
        port floor, 2·bytes/P, of its compute ideal). But first, an operand another kernel
        computed for this one alone may have that kernel run in its other orientation, which
        stores the result transposed (glc/lower/reorient.py), where that beats the best the
        copies reach with the producers as they are."""
        sources = {}
        for which, operand in zip("ab", systolic.args[2:], strict=True):
            base = access_chain(operand)[1]
            if base.op != "symbol" and id(base) not in self.in_dram:
                # The operand is a host copy made from base's own operands (its view was not
                # affine): base's value is wanted nowhere, and computing it here would cost
                # its steps and move the DRAM top under the schedule's result address.
                continue
            source = self._materialise(base)
            if targets[which].view.buffer == source.buffer and \
                    self.program.buffers[source.buffer].dtype == "int8":
                sources[which] = (operand, base, source)  # else a host copy, or no int8 tensor

        reorientable = [w for w, (_, base, _) in sources.items() if self._reorientable(base)]
        if not reorientable:
            return self._repacked(sources, targets, chosen, dims, raw, relu, shift, tables)
        # The copies' best first, the producers as they are: what a reoriented one must beat.
        saved, first = self._state(), len(self.program.steps)
        copied = self._repacked(dict(sources), targets, chosen, dims, raw, relu, shift, tables)
        best, with_copies = copied[0].cycles + self._made(first), self._state()
        self._restore(saved)
        reoriented = False
        for which in reorientable:
            operand, base, _ = sources[which]
            value = self._reoriented(base, lambda v, w=which, o=operand, b=base, t=targets:
                                     self._over(w, o, b, v, t, dims, raw, relu, shift, tables),
                                     best)
            if value is not None:  # its producer now stores it as this kernel reads it
                targets = dict(targets, **{which: self._target_over(operand, base, value)})
                chosen = search(targets, dims, raw, relu, shift, self.top, self.config, tables)
                sources[which] = (operand, base, value)
                reoriented = True
        if not reoriented:  # the dry run's copies, made
            self._restore(with_copies)
            return copied
        return self._repacked(sources, targets, chosen, dims, raw, relu, shift, tables)

    def _repacked(self, sources: dict, targets: dict[str, Target], chosen: Schedule,
                  dims: tuple[int, ...], raw: bool, relu: bool, shift: int, tables: dict
                  ) -> tuple[Schedule, dict[str, Target]]:
        """``_relayout``'s copies: operand by operand, then both (its docstring); made."""
        def unpacked() -> dict:
            return {w: s for w, s in sources.items() if targets[w].view.buffer == s[2].buffer}

        changed = True
        while changed:  # until no operand left as it lies gains a repack: at most three rounds
            changed = False
            for which, (operand, base, source) in unpacked().items():
                kept = []
                view = targets[which].view
                candidates = [*((source, r) for r in repacks(source) if self.enabled("repack")),
                              *((view, g) for g in gathers(view, which, math.prod(source.dims))
                                if self.enabled("gather"))]
                for copied, repack in candidates:
                    trial = self._over_repacks([(which, operand, base, copied, repack)],
                                               targets, chosen, dims, raw, relu, shift, tables)
                    if trial is not None:
                        chosen, targets, kept = trial
                self._make_repacks(kept)
                changed = changed or bool(kept)
        if len(unpacked()) == 2 and self.enabled("repack"):
            kept = []
            for pair in itertools.product(*(repacks(s[2]) for s in sources.values())):
                picks = [(w, *s, r) for (w, s), r in zip(sources.items(), pair, strict=True)]
                trial = self._over_repacks(picks, targets, chosen, dims, raw, relu, shift,
                                           tables)
                if trial is not None:
                    chosen, targets, kept = trial
            self._make_repacks(kept)
        return chosen, targets

    def _target_over(self, operand: Term, base: Term, value: View) -> Target:
        """The operand read over ``value`` as its base tensor's value, in DRAM."""
        view = self._read_over(operand, base, value)
        return Target(view, self._to_dram(view.buffer).address, 1)

    def _over(self, which: str, operand: Term, base: Term, value: View,
              targets: dict[str, Target], dims: tuple[int, ...], raw: bool, relu: bool,
              shift: int, tables: dict) -> int | None:
        """This kernel's estimate with operand ``which`` read over ``value`` (a reoriented
        producer's result: glc/lower/reorient.py); None where it cannot be run so."""
        try:
            trial = dict(targets, **{which: self._target_over(operand, base, value)})
            return search(trial, dims, raw, relu, shift, self.top, self.config, tables).cycles
        except (NotAffine, OperandUnexpressible, GlcError):
            return None

    def _over_repacks(self, picks: list, targets: dict[str, Target], chosen: Schedule,
                      dims: tuple[int, ...], raw: bool, relu: bool, shift: int, tables: dict
                      ) -> tuple[Schedule, dict[str, Target], list] | None:
        """The best schedule with each pick's operand (which, operand term, its tensor's term,
        the view copied, the copy: a Repack of the tensor's stored view or a Gather of the
        operand's) read from that copy, where it and the copies not made yet beat ``chosen``:
        the schedule, the targets and the copies to make; else None. The copies not made yet
        would lie from ``self.top`` up, in the order given."""
        config = self.config
        ideal = array_ideal(math.prod(dims), targets["a"].view.dims[-1], 1, config.array_size)
        fresh_bytes = sum(r.nbytes for *_, source, r in picks
                          if (source, r.dim) not in self.repacked)
        if ideal + 2 * fresh_bytes // config.dram_port_bytes >= chosen.cycles:
            return None
        trial, cost, top, made = dict(targets), 0, self.top, []
        for which, operand, base, source, repack in picks:
            name = self.repacked.get((source, repack.dim))
            if name is None:
                name = self._fresh("repack", [m[2] for m in made])
                address, top = top, aligned(top + repack.nbytes)
                cost += repack.cycles(config)
                made.append((repack, source, name))
            else:
                address = self.program.buffers[name].address
            copied = repack.view(name)
            try:
                # The operand's chain over the copy (a gathered operand is the copy itself): a
                # pad or slice of a dim the copy's order splits (a reshape above the transposed
                # tensor) is no view.
                view = copied if isinstance(repack, Gather) else \
                    self._read_over(operand, base, copied)
            except NotAffine:
                return None
            trial[which] = Target(view, address, 1)
        if ideal + cost >= chosen.cycles or \
                top + math.prod(dims) * (4 if raw else 1) > config.dram_bytes:
            return None
        try:
            found = search(trial, dims, raw, relu, shift, top, config, tables)
        except (OperandUnexpressible, GlcError):
            return None
        return (found, trial, made) if found.cycles + cost < chosen.cycles else None

    def _make_repacks(self, made: list) -> None:
        """The copies ``_over_repacks`` found worth making, in its order (their addresses)."""
        for repack, source, name in made:
            self.fired["gather" if isinstance(repack, Gather) else "repack"] += 1
            self._repack(repack, source, name)

    def _copy_of(self, repack: Repack, source: View) -> str:
        """The buffer of ``repack`` of ``source``: the copy already made, or a new one."""
        name = self.repacked.get((source, repack.dim))
        if name is None:
            name = self._fresh("repack")
            self._repack(repack, source, name)
        return name

    def _repack(self, repack: Repack, source: View, name: str) -> None:
        """The copy ``name`` of ``source`` as a kernel step: built, or as costing sees it;
        estimated either way by the copy's instruction-level count (copy_cycles), as the
        search compared it."""
        if self._fold_into(repack, source, name):  # the fold before writes the copy itself
            self.repacked[(source, repack.dim)] = name
            return
        config = self.config
        kernel = repack.costed(config)
        source_address = self._to_dram(source.buffer).address
        if self.build:
            kernel = replace(repack.kernel(source_address, name, self.top, config),
                             estimated=kernel.estimated)
        self._allocate(name, Access(repack.shape, (), "int8"), dram=True)
        self.program.steps.append(KernelStep(name, kernel, [source.buffer], name))
        self.repacked[(source, repack.dim)] = name
