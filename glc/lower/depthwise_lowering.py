"""A depthwise product's kernels (docs/lowering.md, "Depthwise products"): on the array one per
N channels (glc/lower/depthwise.py) or one band kernel (glc/lower/band.py), or on the vector
unit one kernel over every channel (glc/lower/fold.py, a pair's products summed over the taps),
whichever the cycle model counts fewer with the copies each reads; the copies that make the
operands' channels contiguous. A mixin of the lowering (glc/lower/lowering.py's ``_Lowerer``),
whose memory plan and steps these methods extend."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from glc.errors import DoesNotFit, GlcError
from glc.ir.term import Term
from glc.ir.types import Access
from glc.lower import band, depthwise, linear
from glc.lower.depthwise import Store
from glc.lower.fold import Fold, build_fold_kernel
from glc.lower.kernel import Kernel
from glc.lower.program import KernelStep
from glc.lower.repack import Repack, repacks
from glc.lower.schedule import orient, search
from glc.lower.table import StoreTable
from glc.lower.transfer import STEPPED, OperandUnexpressible, Target, Unexpressible
from glc.lower.view import NotAffine, View, access_chain, merge, row_major, through, view_of

Built = tuple[list[Kernel], bool]  # a depthwise product's kernels, and whether they are a band


class Depthwises:
    """The lowering's depthwise products."""

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
        self.fired["channel-repack"] += 1
        return self._read_over(term, base, repack.view(self._copy_of(repack, source)))

    def _channel_repack(self, term: Term, view: View, channel: int
                        ) -> tuple[Repack, View, Term] | None:
        """The repack ``_contiguous_channels`` reads ``term`` through, with the stored view it
        copies and the term of that tensor; None where the channels are contiguous already or
        no repack makes them so."""
        if _contiguous(view, channel) or not self.enabled("channel-repack"):
            return None
        base = access_chain(term)[1]
        source = self._materialise(base)
        for repack in repacks(source):
            over = self._read_over(term, base, repack.view("copy"))
            if _contiguous(over, channel):
                return repack, source, base
        return None

    def _direct_band(self, label: str, found: depthwise.Depthwise, image: Term, rows: int,
                     store: Store) -> Kernel | None:
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
                         (rows, found.channels), store.raw)
        kernel = self._band(label, found, x_address, rows, store)
        if kernel is None:
            return None
        repack, source, base = copy
        copied = 0 if (source, repack.dim) in self.repacked else repack.cycles(config=self.config)
        groups = -(-found.channels // self.config.array_size)
        if kernel.estimated <= copied + found.items * rows * groups:
            return kernel
        # The copy's view under a stand-in name: the band's cycles do not depend on addresses.
        over = self._read_over(image, base, repack.view("copy"))
        other = depthwise.plan(over, found.w, found.rank)
        banded = self._band(label, other, 0, rows, store) if other else None
        if banded is None or kernel.estimated > copied + banded.estimated:
            return None
        return kernel

    def _band(self, label: str, found: depthwise.Depthwise, x_address: int, rows: int,
              store: Store) -> Kernel | None:
        """The band kernel over every group of the product (glc/lower/band.py: the image read
        once, every tap a shifted stream of it), its image at ``x_address``, its result at the
        top of DRAM; None where a group reads no band, none fits or a transfer cannot walk
        it. B (the diagonal tap tiles) is loaded transposed where its channels are a run."""
        if not self.enabled("depthwise-band"):
            return None
        n = self.config.array_size
        w_address = self.program.buffers[found.w.buffer].address
        channels, raw = found.channels, store.raw
        esize = 4 if raw else 1
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
            table = self._depthwise_table(found, store.vectors, store.plan, 0, channels)
            return band.band_kernel(label, groups, store, table, self.config)
        except (Unexpressible, OperandUnexpressible, GlcError):
            return None

    def _packed_channels(self, term: Term, w: View, rank: int) -> View | None:
        """The image ``term`` of a depthwise product whose channel dim is no single digit (a
        channel shuffle's reshape-transpose-reshape below its windows) read from a repack of
        the tensor under its windows and pads, in which the channels are one contiguous digit;
        the copy a kernel step. The smallest such copy of a tensor no larger than the one under
        it (a windowed view would copy every tap), or None."""
        if not self.enabled("channel-repack"):
            return None
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
        self.fired["channel-repack"] += 1
        return through(chain[:index], repack.view(self._copy_of(repack, source)), self.types)

    def _depthwise(self, node: Term, core: Term, relu: bool, shift: int | None,
                   views: Term | None, plan: linear.LinearPlan | None = None) -> View | None:
        """One kernel per N channels of a depthwise product (glc/lower/depthwise.py), the relu
        and requantize — or with ``plan`` ONNX's bias and requantization (glc/lower/linear.py)
        — in their STOREs, their results side by side in one buffer; the node's value, or None
        where the operands do not read as one (it stays a host step) or the STOREs cannot read
        the bias and multipliers by column (a fold and a host step apply them)."""
        x_term, w_term = core.args[1].args
        x, w = (view_of(t, self.types, self._materialise) for t in (x_term, w_term))
        dims = self.types[id(core)].dims
        found = depthwise.plan(x, w, len(dims))
        if found is None and (packed := self._packed_channels(x_term, w, len(dims))):
            x, found = packed, depthwise.plan(packed, w, len(dims))
        if found is None:
            return None
        vectors = {} if plan is None else \
            linear.vectors(plan, self.types, self.rule.affine, self._materialise)
        if vectors is None:
            return None
        try:  # checked before anything is emitted: each group's table is a cut of this one
            self._depthwise_table(found, vectors, plan, 0, found.channels)
        except OperandUnexpressible:
            return None
        raw = shift is None and "m" not in vectors
        rows = math.prod(dims) // found.channels
        label = self._label(node)
        store = Store(raw, relu, shift or 0, vectors, plan)
        saved, first = self._state(), len(self.program.steps)
        arrayed = self._on_array(label, found, x_term, w_term, rows, store)
        if arrayed is None:
            return None
        on_vector = self._on_vector(label, found, x_term, w_term, rows, store, saved, first,
                                    sum(k.estimated for k in arrayed[0]))
        kernels, found = on_vector or arrayed
        return self._depthwise_steps(kernels, found, dims, store, views, core)

    def _on_array(self, label: str, found: depthwise.Depthwise, x_term: Term, w_term: Term,
                  rows: int, store: Store) -> tuple[list[Kernel], depthwise.Depthwise] | None:
        """The product's kernels on the array, a band kernel or one per N channels, with the
        copies they read made; None where the operands read as no depthwise product once
        copied or a kernel cannot be built (the node stays a host step)."""
        x, w, rank = found.x, found.w, found.rank
        # Each K tile is N channels of one tap: both operands load it in runs where their
        # channels are contiguous, so a layout where they are not is repacked first — the
        # image only where a band kernel cannot read it as it lies (_direct_band), or where
        # its producer does not store it channels-last instead (_image_reoriented).
        w = self._contiguous_channels(w_term, w, found.channel)
        found = depthwise.plan(x, w, rank)
        if found is None:
            return None
        direct = self._direct_band(label, found, x_term, rows, store)
        if direct is not None:
            self.fired["depthwise-band"] += 1
            return [direct], found
        uncopied = self._state()
        copied = self._contiguous_channels(x_term, x, found.channel)
        found = depthwise.plan(copied, w, rank)
        built = found and self._array_kernels(label, found, rows, store)
        if not built:
            return None
        if copied is not x:
            built, found = self._image_reoriented(x_term, found, built, uncopied,
                                                  lambda f: self._array_kernels(
                                                      label, f, rows, store))
        kernels, banded = built
        if banded:
            self.fired["depthwise-band"] += 1
        return kernels, found

    def _array_kernels(self, label: str, found: depthwise.Depthwise, rows: int, store: Store
                       ) -> tuple[list[Kernel], bool] | None:
        """The kernels over ``found``'s operands as they lie — one per N channels, or the band
        kernel where it is faster — and whether they are the band; None where an operand
        cannot lie in DRAM or a kernel cannot be built."""
        x, w, n = found.x, found.w, self.config.array_size
        if not all(self._reaches(v) for v in (x, w)):
            return None
        raw, vectors, plan, relu, shift = store.raw, store.vectors, store.plan, store.relu, \
            store.shift
        channels = found.channels
        address = {b: self.program.buffers[b].address for b in (x.buffer, w.buffer)}
        kernels = []
        for first in range(0, channels, n):  # the last group takes what is left
            width = min(n, channels - first)
            a, b = found.operands(first, width)
            targets = {"a": Target(a, address[a.buffer], 1), "b": Target(b, address[b.buffer], 1)}
            if not first:  # the groups read the same tensors, into one result
                self._check_fits(targets, (rows, channels), raw)
            c_address = self.top + first * (4 if raw else 1)  # its columns of (pixels, C)
            try:
                table = self._depthwise_table(found, vectors, plan, first, width)
                chosen = search(targets, (rows, width), raw, relu, shift, c_address,
                                self.config, {False: table}, c_stride=channels)
                kernel = self.kernels.build(label, chosen, raw, relu, shift, self.config,
                                            table) if self.build else \
                    Kernel(label, rows, a.dims[1], width, raw, relu, shift, [],
                           "bias" in vectors)
            except (OperandUnexpressible, GlcError):
                return None
            kernels.append(replace(kernel, kind="diagonal", estimated=chosen.cycles))
        banded = self._band(label, found, address[x.buffer], rows, store)
        if banded is not None and banded.estimated < sum(k.estimated for k in kernels):
            return [banded], True  # the image read once (glc/lower/band.py), where faster
        return kernels, False

    def _on_vector(self, label: str, found: depthwise.Depthwise, x_term: Term, w_term: Term,
                   rows: int, store: Store, saved, first: int, array: int
                   ) -> tuple[list[Kernel], depthwise.Depthwise] | None:
        """The product on the vector unit (glc/lower/fold.py, one kernel over every channel:
        per pixel a VECTOR ``mul`` of its taps' rows by the weights', then one ``add`` over
        each pixel's taps), where it and its copies take fewer cycles than the
        array's ``array`` cycles and the copies ``_on_array`` made after step ``first``; then
        the lowering as it was at ``saved`` (before those copies) plus its own, else None and
        the lowering as ``_on_array`` left it. On the array B's diagonal takes N cycles a tap to
        preload whatever the pixels, so a small map (MobileNet's last layers, 1×1 and 2×2) is
        bound by preloads; the vector unit's three rows a tap and pixel (two read by ``mul``,
        one by ``add``) are then fewer. Its image's channels must be contiguous (a row is N
        channels); its weights are read as they lie — OIHW by transposing LOADs, a run of taps
        a channel — or from a channels-last copy, whichever is faster. Not built where its
        rows alone are no fewer."""
        config = self.config
        n, channels, items = config.array_size, found.channels, found.items
        best = array + self._made(first)
        if not self.enabled("depthwise-vector") or \
                3 * rows * items * -(-channels // n) * config.vector_passes >= best:
            return None
        arrayed, chosen = self._state(), None
        for copied in (False, True):
            self._restore(saved)
            w = self._contiguous_channels(w_term, found.w, found.channel) if copied else found.w
            uncopied = self._state()
            x = self._contiguous_channels(x_term, found.x, found.channel)
            over = depthwise.plan(x, w, found.rank)
            made = over and self._vector_kernels(label, over, rows, store)
            kernel = made and made[0][0]
            cycles = kernel and kernel.estimated + self._made(first)
            if kernel is not None and cycles < best:
                best, chosen = cycles, (self._state(), kernel, over,
                                        None if x is found.x else uncopied)
        if chosen is None:
            self._restore(arrayed)
            return None
        state, kernel, over, uncopied = chosen
        self._restore(state)
        built = [kernel], False
        if uncopied is not None:
            built, over = self._image_reoriented(x_term, over, built, uncopied,
                                                 lambda f: self._vector_kernels(
                                                     label, f, rows, store))
        self.fired["depthwise-vector"] += 1
        return built[0], over

    def _image_reoriented(self, x_term: Term, found: depthwise.Depthwise, built: Built,
                          uncopied, build: Callable[[depthwise.Depthwise], Built | None]
                          ) -> tuple[Built, depthwise.Depthwise]:
        """``built`` (kernels, and whether they are a band) over ``found``, its image a
        channels-last copy made after the lowering's state ``uncopied``; or where the image's
        producer, lowered again in its other orientation, stores it channels-last and that and
        ``build``'s kernels over it take fewer cycles than the producer as it was, the copy
        and ``built``'s kernels (glc/lower/reorient.py), those kernels and no copy.
        MobileNet's expand convs store NCHW for themselves; the depthwise conv after each
        would copy its image otherwise."""
        copies = sum(self._cost(s) for s in self.program.steps[len(uncopied.steps):])
        copied = self._state()
        self._restore(uncopied)
        base = access_chain(x_term)[1]

        def over(value: View) -> depthwise.Depthwise | None:
            x = self._read_over(x_term, base, value)
            trial = depthwise.plan(x, found.w, found.rank)
            return trial if trial is not None and _contiguous(x, found.channel) else None

        def cycles(value: View) -> int | None:
            trial = over(value)
            made = trial and build(trial)
            return sum(k.estimated for k in made[0]) if made else None

        value = self._reoriented(base, cycles, sum(k.estimated for k in built[0]) + copies)
        if value is not None and (trial := over(value)) is not None and \
                (made := build(trial)):
            return made, trial
        self._restore(copied)
        return built, found

    def _vector_kernels(self, label: str, found: depthwise.Depthwise, rows: int, store: Store
                        ) -> Built | None:
        """``_on_vector``'s kernel over ``found``'s operands (and False: no band), its cycles
        the model's; None
        where a transfer cannot walk them, its tiles do not fit or an operand cannot lie in
        DRAM below its lowest address (``_reaches``, which moves it there: the state this is
        built in is the one it is kept in)."""
        n = self.config.array_size
        x, w = found.matrices()
        if not all(self._reaches(v) for v in (x, w)):
            return None
        strided = merge(w.groups[1])[0].stride != 1  # OIHW: a channel's taps are the run
        operands = (Target(x, self.program.buffers[x.buffer].address, 1),
                    Target(w, self.program.buffers[w.buffer].address, 1, n if strided else 0))
        fold = Fold("mul", operands, 1, rows * found.items, found.channels, False,
                    reduce=found.items)
        c = Target(row_major("depthwise", (rows, found.channels)), self.top,
                   4 if store.raw else 1)
        try:
            table = self._depthwise_table(found, store.vectors, store.plan, 0, found.channels)
            kernel = build_fold_kernel(label, fold, c, store.raw, store.relu, store.shift,
                                       self.config, table)
        except (OperandUnexpressible, DoesNotFit):
            return None
        return [replace(kernel, estimated=kernel.predicted_cycles(self.config))], False

    def _depthwise_table(self, found: depthwise.Depthwise, vectors: dict[str, View],
                         plan: linear.LinearPlan | None, first: int, width: int
                         ) -> StoreTable | None:
        """The table (glc/lower/table.py) of the channels [first, first + width), None without
        vectors: the bias and multipliers as (pixels × channels) matrices, read by column (the
        channels are C's columns). OperandUnexpressible where a vector varies along the pixels
        or its channels are no single digit: the STOREs cannot read it."""
        if not vectors:
            return None
        targets = {}
        for which, view in vectors.items():
            matrix = found.vector(view, first, width)
            if matrix is None:
                raise OperandUnexpressible(which, "its channels are no single digit")
            targets[which] = Target(matrix, self._to_dram(matrix.buffer).address, 4)
        table = StoreTable(targets.get("m"), plan.zero if plan is not None else 0,
                           targets.get("bias"))
        table.check()
        if table.by_rows:
            raise OperandUnexpressible(table.vectors[0][0], "it varies along the pixels")
        return table

    def _depthwise_steps(self, kernels: list[Kernel], found: depthwise.Depthwise,
                         dims: tuple[int, ...], store: Store, views: Term | None,
                         core: Term) -> View:
        """The depthwise product's kernels as steps writing one buffer (pixels, C), at the
        address their STOREs were built for; the node's value (with a ``requantize-linear``,
        the layer's view of it)."""
        rows = math.prod(dims) // found.channels
        out = self._allocate(self._fresh("kernel"),
                             Access((rows, found.channels), (), "int32" if store.raw else "int8"),
                             dram=True)
        inputs = [found.x.buffer, found.w.buffer] + [v.buffer for v in store.vectors.values()]
        for index, kernel in enumerate(kernels):
            self.program.steps.append(KernelStep(f"{out}.{index}", kernel, inputs, out))
        result = found.result(out, dims)
        if views is not None:  # the data movement over the converted result
            result = view_of(views, self.types, lambda t: result if t is core else None)
        if store.plan is not None and store.plan.chain is not None:
            result = view_of(store.plan.chain, self.types,
                             lambda t: result if t is core else None)
        return result


def _contiguous(view: View, channel: int) -> bool:
    """Whether ``view``'s dim ``channel`` walks its tensor one element at a time: N channels a
    run, what both kinds of depthwise kernel load."""
    return merge(view.groups[channel])[0].stride == 1
