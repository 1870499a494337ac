"""Batched products on the array: one GEMM per batch element (docs/lowering.md, "Batched
products").

Attention's products (Q·Kᵀ and P·V over (batch, heads, seq, dim)) pair each batch element's
matrices with each other only. ``glc import`` writes C[β, m, n] = Σ_k A[β, m, k]·B[β, k, n]
as ``(compute dot-product (access-pair X W))`` with X = A broadcast over n and W = Bᵀ broadcast
over m, both of dims (β…, M, N, K…) (glc/onnx/attention.py). Read as views, X walks no memory
along n (stride 0) and W none along m; so at each batch index, X is the matrix A_β (M × K) and W
the matrix B_β (K × N) — a view each, advanced to the batch element's origin — and C_β = A_β·B_β
is an ordinary product on the array. The kernels write their results one after the other in
one buffer (β, M, N), or transposed (β, N, M) where the schedule search finds Cᵀ = Bᵀ·Aᵀ
faster (the same orientation for every element: they are all one shape) and the result is
int8 or the program's own (an int32 one is read in order by the fold that requantizes it).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

from glc.errors import GlcError
from glc.ir.term import Term
from glc.ir.types import Access
from glc.lower.kernel import Kernel
from glc.lower.linear import LinearPlan
from glc.lower.linear import vectors as vectors_of
from glc.lower.program import KernelStep
from glc.lower.schedule import search
from glc.lower.transfer import OperandUnexpressible, Target
from glc.lower.view import Digit, View, advanced, row_major, view_of


@dataclass(frozen=True)
class Batched:
    """The pair's operand views ``x`` (A broadcast over N) and ``w`` (Bᵀ broadcast over M), of
    dims (batch…, M, N, K…); ``rank`` is the output's: the batch dims, M and N."""

    x: View
    w: View
    rank: int

    @property
    def batch(self) -> tuple[int, ...]:
        return self.x.dims[:self.rank - 2]

    @property
    def mn(self) -> tuple[int, int]:
        return self.x.dims[self.rank - 2], self.x.dims[self.rank - 1]

    def operands(self, index: tuple[int, ...]) -> tuple[View, View]:
        """A (M × K) and B (K × N) of the batch element ``index``."""
        x, w = self.x, self.w
        for k, i in enumerate(index):
            x, w = _at(x, k, i), _at(w, k, i)
        m, n = self.rank - 2, self.rank - 1
        xk = tuple(d for g in x.groups[self.rank:] for d in g)
        wk = tuple(d for g in w.groups[self.rank:] for d in g)
        return replace(x, groups=(x.groups[m], xk)), replace(w, groups=(wk, w.groups[n]))


def _at(view: View, k: int, index: int) -> View:
    """``view`` advanced to index ``index`` of its dim ``k`` (its digits mixed-radix, the
    outermost first), the dim then of size 1."""
    for d in reversed(view.groups[k]):
        view = advanced(view, d, index % d.size)
        index //= d.size
    groups = list(view.groups)
    groups[k] = ()
    return replace(view, groups=tuple(groups))


def _still(group: tuple[Digit, ...]) -> bool:
    """Whether a dim reads one element whatever its index (a broadcast: stride 0, no
    coordinate moves)."""
    return all(d.stride == 0 and not any(d.coefs) for d in group)


def plan(x: View, w: View, rank: int) -> Batched | None:
    """The batched reading of a dot product over the pair (x, w) with ``rank`` ≥ 2 output
    dims: x still along the output's last dim (N) and w along the one before (M); else None."""
    if rank < 2 or x.dims != w.dims or len(x.dims) == rank or x.fill != 0 or w.fill != 0:
        return None
    if not (_still(x.groups[rank - 1]) and _still(w.groups[rank - 2])):
        return None
    return Batched(x, w, rank)


class Batches:
    """A mixin of the lowering (glc/lower/lowering.py's ``_Lowerer``): a batched product's
    kernels, whose memory plan and steps it extends."""

    def _batched(self, node: Term, core: Term, relu: bool, shift: int | None,
                 views: Term | None, linear: LinearPlan | None = None) -> View | None:
        """One kernel per batch element of a batched product, the relu and requantize — or
        with ``linear`` ONNX's bias and requantization (glc/lower/linear.py) — in their
        STOREs, their results one after another in one buffer; the node's value, or None where
        the operands do not read as one (it stays a host step) or the STOREs cannot apply the
        bias and multipliers (the requantization stays a fold)."""
        x, w = (view_of(t, self.types, self._materialise) for t in core.args[1].args)
        dims = self.types[id(core)].dims
        found = plan(x, w, len(dims))
        if found is None or not all(self._reaches(v) for v in (x, w)):
            return None
        vectors = {} if linear is None else \
            vectors_of(linear, self.types, self.rule.affine, self._materialise)
        if vectors is None:
            return None
        raw = shift is None and "m" not in vectors
        esize = 4 if raw else 1
        (m, n), count = found.mn, math.prod(found.batch)
        label = self._label(node)
        kernels: list[Kernel] = []
        # An int32 result inside the program is read by the step that requantizes it, a fold
        # of the vector unit over (β, M, N): stored as Cᵀ it reads across rows (a BERT layer's
        # Q·Kᵀ of 64 tokens: the fold at 2.3× its cycles, for 24 cycles the kernel saved). The
        # kernels' search picks the orientation of an int8 result, or of the program's own.
        orientations = (False,) if raw and node is not self.term else (False, True)
        for number, index in enumerate(itertools.product(*map(range, found.batch))):
            a, b = found.operands(index)
            targets = {"a": Target(a, self._to_dram(a.buffer).address, 1),
                       "b": Target(b, self._to_dram(b.buffer).address, 1)}
            for which, view in vectors.items():
                for k, i in enumerate(index):
                    view = _at(view, k, i)
                view = replace(view, groups=view.groups[len(index):])
                targets[which] = Target(view, self._to_dram(view.buffer).address, 4)
            tables = {False: None, True: None} if linear is None else {
                s: t for s in orientations if (t := self._table(targets, s, linear))}
            tables = {s: t for s, t in tables.items() if s in orientations}
            if not tables:
                return None
            if not number:
                self._check_fits(targets, (count * m, n), raw)
            try:
                chosen = search(targets, (m, n), raw, relu, shift or 0,
                                self.top + number * m * n * esize, self.config, tables)
                kernel = self.kernels.build(label, chosen, raw, relu, shift or 0, self.config,
                                            tables[chosen.swap]) if self.build else \
                    Kernel(label, m, a.dims[1], n, raw, relu, shift or 0, [], "bias" in vectors)
            except (OperandUnexpressible, GlcError):
                return None
            orientations = (chosen.swap,)  # every element in the first one's orientation
            kernels.append(replace(kernel, estimated=chosen.cycles))
        swap = orientations[0]
        inputs = sorted({x.buffer, w.buffer} | {v.buffer for v in vectors.values()})
        out = self._allocate(self._fresh("kernel"), Access(
            (count * n, m) if swap else (count * m, n), (), "int32" if raw else "int8"),
            dram=True)
        for number, kernel in enumerate(kernels):
            self.program.steps.append(KernelStep(f"{out}.{number}", kernel, inputs, out))
        if swap:  # each element's Cᵀ (N, M): the batch dims, then M and N swapped back
            stored = row_major(out, found.batch + (n, m))
            result = replace(stored, groups=stored.groups[:-2] + stored.groups[:-3:-1])
        else:
            result = row_major(out, dims)
        if views is not None:  # the data movement over the converted result
            result = view_of(views, self.types, lambda t: result if t is core else None)
        if linear is not None and linear.chain is not None:  # the layer's view of it
            result = view_of(linear.chain, self.types, lambda t: result if t is core else None)
        return result
