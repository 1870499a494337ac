"""Where the lowering's operands lie: layout changes it makes on the accelerator before a kernel
(glc/lower/repack.py), as candidates of the schedule search (``_relayout``) and for the operands
of a depthwise product (``_contiguous_channels``). A mixin of the lowering
(glc/lower/lowering.py's ``_Lowerer``), whose memory plan and steps these methods extend."""

from __future__ import annotations

import math
from dataclasses import replace

from glc.cost.limit import array_ideal
from glc.errors import GlcError
from glc.ir.term import Term
from glc.ir.types import Access
from glc.lower import band, depthwise
from glc.lower.kernel import Kernel
from glc.lower.program import KernelStep, aligned
from glc.lower.repack import Repack, repacks
from glc.lower.schedule import Schedule, orient, search
from glc.lower.transfer import STEPPED, OperandUnexpressible, Target, Unexpressible
from glc.lower.view import NotAffine, View, access_chain, merge, through, view_of


class Relayout:
    """The lowering's layout choices; ``repacked`` (set by the lowering) maps (tensor view,
    dim moved last) to the buffer of its copy, so a copy is made once."""

    repacked: dict[tuple[View, int], str]

    def _contiguous_channels(self, term: Term, view: View, channel: int) -> View:
        """``term``'s ``view``, or where its dim ``channel`` is not contiguous its view over a
        repack of its tensor (glc/lower/repack.py) in which it is, the copy a kernel step:
        OIHW depthwise weights (channels 9 bytes apart) then load B a tile a beat, and an NCHW
        image its K tiles in runs, for a copy of each (the image's is ~1/9 of its im2col
        traffic)."""
        found = self._channel_repack(term, view, channel)
        if found is None:
            return view
        repack, source, base = found
        name = self._copy_of(repack, source)
        return view_of(term, self.types,
                       lambda t: repack.view(name) if t is base else self._materialise(t))

    def _channel_repack(self, term: Term, view: View, channel: int
                        ) -> tuple[Repack, View, Term] | None:
        """The repack ``_contiguous_channels`` reads ``term`` through, with the stored view it
        copies and the term of that tensor; None where the channels are contiguous already or
        no repack makes them so."""
        if merge(view.groups[channel])[0].stride == 1:
            return None
        base = access_chain(term)[1]
        source = self._materialise(base)
        for repack in repacks(source):
            copied = repack.view("copy")
            over = view_of(term, self.types,
                           lambda t, v=copied: v if t is base else self._materialise(t))
            if merge(over.groups[channel])[0].stride == 1:
                return repack, source, base
        return None

    def _direct_band(self, label: str, found: depthwise.Depthwise, image: Term, rows: int,
                     raw: bool, relu: bool, shift: int) -> Kernel | None:
        """The band kernel (glc/lower/band.py) over a depthwise product's ``image`` as it lies
        where ``_contiguous_channels`` would repack it: an NCHW image read by transposing LOADs,
        N pixels of a channel a run. Kept where its cycles are at most the copy's plus the
        bound of any kernel over the copy (the 1/N packing streams taps · pixels rows a group
        of N channels), or plus the band over the copy's (the kernel a stride-1 depthwise conv
        takes there); else None, nothing emitted."""
        copy = self._channel_repack(image, found.x, found.channel)
        if copy is None or not all(self._reaches(v) for v in (found.x, found.w)):
            return None
        x_address = self.program.buffers[found.x.buffer].address
        self._check_fits({"x": Target(found.x, x_address, 1),
                          "w": Target(found.w, self.program.buffers[found.w.buffer].address, 1)},
                         (rows, found.channels), raw)
        kernel = self._band(label, found, x_address, rows, raw, relu, shift)
        if kernel is None:
            return None
        repack, source, base = copy
        copied = 0 if (source, repack.dim) in self.repacked else repack.cycles(config=self.config)
        groups = -(-found.channels // self.config.array_size)
        if kernel.estimated <= copied + math.prod(found.x.dims[found.rank:]) * rows * groups:
            return kernel
        # The copy's view under a stand-in name: the band's cycles do not depend on addresses.
        over = view_of(image, self.types,
                       lambda t: repack.view("copy") if t is base else self._materialise(t))
        other = depthwise.plan(over, found.w, found.rank)
        banded = self._band(label, other, 0, rows, raw, relu, shift) if other else None
        if banded is None or kernel.estimated > copied + banded.estimated:
            return None
        return kernel

    def _band(self, label: str, found: depthwise.Depthwise, x_address: int, rows: int,
              raw: bool, relu: bool, shift: int) -> Kernel | None:
        """The band kernel over every group of the product (glc/lower/band.py: the image read
        once, every tap a shifted stream of it), its image at ``x_address``, its result at the
        top of DRAM; None where a group reads no band, none fits or a transfer cannot walk
        it. B (the diagonal tap tiles) is loaded transposed where its channels are a run."""
        n = self.config.array_size
        w_address = self.program.buffers[found.w.buffer].address
        channels, esize = found.channels, 4 if raw else 1
        groups = []
        for first in range(0, channels, n):
            width = min(n, channels - first)
            a, b = found.operands(first, width)
            read = band.band(a, n)
            if read is None:
                return None
            channel = merge(b.groups[0])[-1]
            b_target = Target(b, w_address, 1, n if channel.stride in STEPPED else 0)
            targets = {"a": Target(a, x_address, 1), "b": b_target}
            c = orient(targets, (rows, width), False, self.top + first * esize, raw, channels)[2]
            groups.append(band.Group(read, b_target, c, x_address))
        try:
            return band.band_kernel(label, groups, raw, relu, shift, self.config)
        except Unexpressible:
            return None

    def _packed_channels(self, term: Term, w: View, rank: int) -> View | None:
        """The image ``term`` of a depthwise product whose channel dim is no single digit (a
        channel shuffle's reshape-transpose-reshape below its windows) read from a repack of
        the tensor under its windows and pads, in which the channels are one contiguous digit;
        the copy a kernel step. The smallest such copy of a tensor no larger than the one under
        it (a windowed view would copy every tap), or None."""
        chain, bottom = access_chain(term)
        under = self._materialise(bottom)
        best = None
        for index in range(len(chain) + 1):
            try:
                below = through(chain[index:], under, self.types)
            except NotAffine:
                continue
            if math.prod(below.dims) > math.prod(under.dims) or below.coords:
                continue
            for repack in repacks(below):
                try:
                    image = through(chain[:index], repack.view("repack"), self.types)
                except NotAffine:
                    continue
                if depthwise.plan(image, w, rank) is not None and \
                        (best is None or repack.nbytes < best[0].nbytes):
                    best = (repack, below, index)
        if best is None:
            return None
        repack, source, index = best
        return through(chain[:index], repack.view(self._copy_of(repack, source)), self.types)

    def _relayout(self, systolic: Term, targets: dict[str, Target], chosen: Schedule,
                  dims: tuple[int, ...], raw: bool, relu: bool, shift: int,
                  tables: dict) -> tuple[Schedule, dict[str, Target]]:
        """The schedule with an operand read from a repack of its tensor (glc/lower/repack.py)
        where the copy and the kernel over it take fewer cycles than the kernel as it is; a
        repack chosen becomes a kernel before this one. Operand by operand, A then B with A's
        choice kept: at most four more searches, and none where the copy cannot pay (the
        kernel is already within a copy's port floor, 2·bytes/P, of its compute ideal)."""
        config = self.config
        ideal = array_ideal(math.prod(dims), targets["a"].view.dims[-1], 1,
                            config.array_size)
        esize = 4 if raw else 1
        for which, operand in zip("ab", systolic.args[2:], strict=True):
            base = access_chain(operand)[1]
            source = self._materialise(base)
            if targets[which].view.buffer != source.buffer or \
                    self.program.buffers[source.buffer].dtype != "int8":
                continue  # a host copy of the operand, or no int8 tensor
            best = None
            for repack in repacks(source):
                name = self.repacked.get((source, repack.dim))
                fresh, cost, top = name is None, 0, self.top
                if fresh:
                    if ideal + 2 * repack.nbytes // config.dram_port_bytes >= chosen.cycles:
                        continue
                    cost = repack.cycles(config)
                    name, address, top = self._fresh("repack"), top, aligned(top + repack.nbytes)
                    if ideal + cost >= chosen.cycles or \
                            top + math.prod(dims) * esize > config.dram_bytes:
                        continue
                else:
                    address = self.program.buffers[name].address
                copied = repack.view(name)
                try:
                    # The operand's chain over the copy: a pad or slice of a dim the copy's
                    # order splits (a reshape above the transposed tensor) is no view.
                    view = view_of(operand, self.types,
                                   lambda t, b=base, v=copied: v if t is b else
                                   self._materialise(t))
                    found = search({**targets, which: Target(view, address, 1)}, dims, raw,
                                   relu, shift, top, config, tables)
                except (NotAffine, OperandUnexpressible, GlcError):
                    continue
                if found.cycles + cost < chosen.cycles:
                    chosen = found
                    best = (repack, name, fresh, {**targets, which: Target(view, address, 1)})
            if best is not None:
                repack, name, fresh, targets = best
                if fresh:
                    self._repack(repack, source, name)
        return chosen, targets

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
        config = self.config
        kernel = repack.costed(config)
        source_address = self._to_dram(source.buffer).address
        if self.build:
            kernel = replace(repack.kernel(source_address, name, self.top, config),
                             estimated=kernel.estimated)
        self._allocate(name, Access(repack.shape, (), "int8"), dram=True)
        self.program.steps.append(KernelStep(name, kernel, [source.buffer], name))
        self.repacked[(source, repack.dim)] = name
