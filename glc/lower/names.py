"""Step names in program order (issue 41): each buffer a step writes renamed after what writes
it and numbered as the steps run.

The lowering names a buffer when it allocates it, and optimizations then reorder or rebuild
steps: a fold rebuilt into the layout a repack would copy to keeps the repack's name
(``repack1`` for a residual Add, glc/lower/folds.py ``_fold_into``), a step dropped leaves a
gap, and a step made by a recursion runs before one named earlier (``kernel12`` listed before
``kernel11``). So a lowered program is renamed once, after the lowering: ``kernel`` for the
array's products, ``fold`` for the vector unit's folds, ``repack`` for its layout copies,
``concat`` for a concatenation's bands, ``host`` and ``copy`` for numpy's steps, each numbered
1, 2, … in the order its first step runs. Inputs keep their names.
"""

from __future__ import annotations

import re
from dataclasses import replace

from glc.ir.term import leaf, rebuild
from glc.lower.program import HostStep, KernelStep, Program

# A kernel's unit → the stem of the buffer it writes.
STEMS = {"matmul": "kernel", "diagonal": "kernel", "fold": "fold", "repack": "repack",
         "vector-depthwise": "fold"}


def renumber(program: Program) -> Program:
    """``program`` with its steps' buffers renamed in program order (in place; returned)."""
    writers: dict[str, list] = {}
    for step in program.steps:
        writers.setdefault(step.output, []).append(step)
    names, counts = {}, {}
    for output, steps in writers.items():
        if output in program.inputs:
            continue
        stem = _stem(output, steps)
        counts[stem] = counts.get(stem, 0) + 1
        while f"{stem}{counts[stem]}" in program.inputs:  # an input's name is its own
            counts[stem] += 1
        names[output] = f"{stem}{counts[stem]}"
    if all(old == new for old, new in names.items()):
        return program
    program.buffers = {names.get(n, n): replace(b, name=names.get(n, n))
                       for n, b in program.buffers.items()}
    program.steps = [_renamed(step, names) for step in program.steps]
    program.output = _view(program.output, names)
    program.values = {key: (node, _view(view, names))
                      for key, (node, view) in program.values.items()}
    program.freed = {names.get(n, n) for n in program.freed}
    return program


def _stem(output: str, steps: list) -> str:
    if len(steps) > 1:  # the bands of a concatenation, or a kernel in parts: as named
        return re.sub(r"\d+$", "", output)
    (step,) = steps
    if isinstance(step, HostStep):
        return "copy" if step.copy else "host"
    return STEMS.get(step.kernel.kind, "kernel")


def _name(text: str, names: dict[str, str]) -> str:
    """A step or symbol name with its buffer renamed: ``kernel3``, ``concat1.0``,
    ``kernel2_view0``."""
    match = re.fullmatch(r"(.+?)((?:\.\d+)|(?:_view\d+))?", text)
    base, suffix = match[1], match[2] or ""
    return names.get(base, base) + suffix if base in names else text


def _view(view, names):
    return None if view is None else replace(view, buffer=names.get(view.buffer, view.buffer))


def _renamed(step, names: dict[str, str]):
    if isinstance(step, HostStep):
        term = rebuild(step.term, lambda t: leaf("symbol", _name(t.value, names))
                       if t.op == "symbol" else None)
        views = {_name(symbol, names): _view(view, names) for symbol, view in step.views.items()}
        return HostStep(_name(step.name, names), term, views, names.get(step.output, step.output),
                        step.copy, step.why)
    label = re.sub(r"(?<![\w.])([A-Za-z_][\w]*)(?![\w.])",
                   lambda m: names.get(m[1], m[1]), step.kernel.label)
    kernel = replace(step.kernel, label=label)
    kernel._cycles.update(step.kernel._cycles)  # the cycle model's counts stay good
    return KernelStep(_name(step.name, names), kernel,
                      [names.get(n, n) for n in step.inputs], names.get(step.output, step.output))
