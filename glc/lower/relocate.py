"""Each distinct systolic kernel of a lowering built once, and relocated for every node that
repeats it.

A network repeats its layers: its identical bottlenecks differ only in where their tensors lie
in DRAM and in their output's zero point. A kernel's instructions depend on its operands'
addresses in one field alone: a transfer's ``dram``, the operand's address plus the element
offset the view walks to (glc/lower/transfer.py, ``_emit``), wrapped to 32 bits (docs/isa.md);
and on ONNX's zero point in one other: the ``zero`` of each STORE that requantizes
(``linear``, glc/lower/table.py). So a kernel is built once per *signature* — its operands'
views without their buffers' names or addresses, their element sizes and layouts, the
schedule, the output conversion, the table's vectors and state but its zero point, the config
— with every operand at address 0 and a zero point of 0, remembering which operand each
transfer reads or writes (``build_kernel``'s ``operands``); a node with the same signature
gets a copy whose transfers have their operand's address added and whose requantizing STOREs
its zero point. The instructions are those a build at the real addresses gives, word for word
(tests/lower/test_lower_relocate.py compares both).

The cycle model reads neither field (glc/isa/steps.py), so a relocated kernel shares its
template's memoised cycles.

The memo lives for one ``lower`` call (glc/lower/lowering.py): a term's lowering, and its
retries.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from glc.hwconfig import HwConfig
from glc.isa.encoding import Instruction
from glc.isa.fields import BY_NAME
from glc.lower.kernel import Kernel, build_kernel
from glc.lower.schedule import Schedule
from glc.lower.table import StoreTable
from glc.lower.transfer import Target

# The `dram` field's values (docs/isa.md: a DRAM address wraps) and where LOAD and STORE hold
# it; where a STORE holds its `linear` flag and `zero`, and the values `zero` takes.
_WRAP = 1 << next(f.width for f in BY_NAME["load"].fields if f.name == "dram")
_DRAM = {name: BY_NAME[name].index["dram"] for name in ("load", "store")}
_LINEAR, _ZERO = BY_NAME["store"].index["linear"], BY_NAME["store"].index["zero"]
_ZEROS = range(BY_NAME["store"].checks[_ZERO][3], BY_NAME["store"].checks[_ZERO][4] + 1)


@dataclass(frozen=True)
class _Template:
    """A kernel built with every operand at address 0 and a zero point of 0; ``moved`` each
    transfer's instruction index, operand, and whether it is a STORE that requantizes (takes
    the zero point); the table's state after the build (``reserve`` and ``pieces`` set it)."""

    kernel: Kernel
    moved: tuple[tuple[int, str, bool], ...]
    table_row: int
    table: tuple


def _unplaced(target: Target | None) -> Target | None:
    """The target without its tensor's name and address: what its transfers depend on but for
    their DRAM addresses (its view's offset stays: it is walked, not added)."""
    if target is None:
        return None
    return replace(target, address=0, view=replace(target.view, buffer=""))


def _table_signature(table: StoreTable | None) -> tuple | None:
    if table is None:
        return None
    return (_unplaced(table.multipliers), _unplaced(table.bias), table.table_row,
            table.by_rows, tuple(table.table.items()))


class Kernels:
    """The kernels one lowering has built, by signature; ``built`` and ``relocated`` count the
    builds and the copies."""

    def __init__(self) -> None:
        self._templates: dict[tuple, _Template] = {}
        self.built = 0
        self.relocated = 0

    def build(self, label: str, chosen: Schedule, raw: bool, relu: bool, shift: int,
              config: HwConfig, table: StoreTable | None) -> Kernel:
        """``build_kernel``'s kernel for the schedule ``chosen`` (glc/lower/kernel.py),
        labelled ``label``; ``table`` is left as that build leaves it."""
        signature = (_unplaced(chosen.a), _unplaced(chosen.b), _unplaced(chosen.c),
                     chosen.order, chosen.k_inner, chosen.block_rows, chosen.flat, chosen.group,
                     chosen.split, chosen.spread, raw, relu, shift, config,
                     _table_signature(table))
        template = self._templates.get(signature)
        if template is None:
            template = self._template(chosen, raw, relu, shift, config, table)
            self._templates[signature] = template
            self.built += 1
        else:
            self.relocated += 1
        bases = {"a": chosen.a.address, "b": chosen.b.address, "c": chosen.c.address}
        zero = 0
        if table is not None:
            table.table_row, table.table = template.table_row, dict(template.table)
            bases |= {which: target.address for which, target in table.vectors}
            zero = table.zero
            if zero not in _ZEROS:  # as Instruction.make refuses it
                raise ValueError(f"store zero={zero} outside {_ZEROS.start} … {_ZEROS.stop - 1}")
        instructions = list(template.kernel.instructions)
        for index, which, requantizes in template.moved:
            base = bases[which]
            if base or (zero and requantizes):
                ins = instructions[index]
                values = list(ins.values)
                at = _DRAM[ins.op.name]
                values[at] = (values[at] + base) % _WRAP
                if requantizes:
                    values[_ZERO] = zero
                instructions[index] = Instruction(ins.op, tuple(values))
        return replace(template.kernel, label=label, instructions=instructions,
                       _cycles=template.kernel._cycles, _steps=template.kernel._steps)

    @staticmethod
    def _template(chosen: Schedule, raw: bool, relu: bool, shift: int, config: HwConfig,
                  table: StoreTable | None) -> _Template:
        """The kernel built with every operand (and table vector) at address 0, and the
        table's zero point 0."""
        unplaced = None if table is None else replace(
            table, multipliers=_unplaced(table.multipliers), zero=0, bias=_unplaced(table.bias),
            table=dict(table.table))
        operands: list[str | None] = []
        kernel = build_kernel("", _unplaced(chosen.a), _unplaced(chosen.b),
                              _unplaced(chosen.c), raw, relu, shift, config, chosen.order,
                              chosen.k_inner, chosen.block_rows, unplaced, chosen.flat,
                              chosen.group, chosen.split, chosen.spread, operands)
        moved = tuple((index, which, ins.op.name == "store" and bool(ins.values[_LINEAR]))
                      for index, (which, ins) in enumerate(zip(operands, kernel.instructions,
                                                               strict=True)) if which)
        if unplaced is None:
            return _Template(kernel, moved, 0, ())
        return _Template(kernel, moved, unplaced.table_row, tuple(unplaced.table.items()))
