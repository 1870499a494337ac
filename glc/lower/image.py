"""Instruction images: consecutive kernels joined into one program for the machine.

Kernels with no host step between them run as one image: each kernel's instructions without its
HALT, a barrier between them, one HALT at the end. The barrier orders every DRAM access of the
next kernel after every STORE of the previous one, through the token chain the ISA has (docs/isa.md,
"Dependency tokens": STORE → EXEC → LOAD): the STORE unit's SYNC pushes st2ex when the last STORE
has completed, the EXEC unit's SYNC relays it as ex2ld, and the LOAD unit's SYNC waits for it. It
also keeps the next kernel's LOADs off scratchpad rows the previous kernel's MATMULs still read.
A kernel joins only if its tokens balance (every push popped), so no token of one kernel can
release an instruction of the next; gemm.py's schedules do.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from glc.hwconfig import HwConfig
from glc.isa.asm import format_instruction
from glc.isa.cycles import steps_cycles
from glc.isa.encoding import Instruction, encode
from glc.isa.fields import WORD_BYTES
from glc.isa.steps import TOKEN_FIELDS, TOKENS, decode_all
from glc.lower.program import HostStep, KernelStep, Program

BARRIER = (Instruction.make("sync", unit=2, push_prev=1),
           Instruction.make("sync", unit=1, pop_next=1, push_prev=1),
           Instruction.make("sync", unit=0, pop_next=1))
HALT = Instruction.make("halt")


@dataclass
class Image:
    """One machine run: the kernels it holds, in order."""

    steps: list[KernelStep]
    _cycles: dict[HwConfig, int] = field(default_factory=dict, repr=False, compare=False)

    @property
    def instructions(self) -> list[Instruction]:
        out: list[Instruction] = []
        for index, step in enumerate(self.steps):
            if index:
                out += BARRIER
            out += step.kernel.instructions[:-1]
        return [*out, HALT]

    @property
    def words(self) -> list[int]:
        return _each_distinct(encode, self.instructions)

    def predicted_cycles(self, config: HwConfig) -> int:
        """The cycle model's count for the whole image, memoised (a kernel alone is its own
        image: the same instructions, so its own memoised count)."""
        if len(self.steps) == 1:
            return self.steps[0].kernel.predicted_cycles(config)
        if config not in self._cycles:
            barrier = decode_all(BARRIER, config)
            steps = []
            for index, step in enumerate(self.steps):  # as ``instructions`` joins them
                if index:
                    steps += barrier
                steps += step.kernel.steps(config)[:-1]
            self._cycles[config] = steps_cycles([*steps, *decode_all([HALT], config)], config)
        return self._cycles[config]

    def text(self) -> str:
        """The assembly: each kernel under its comment, the barriers, one HALT."""
        parts = []
        lines: dict[tuple, str] = {}  # each distinct instruction's line, across the kernels
        for index, step in enumerate(self.steps):
            if index:
                parts.append("; barrier: the next kernel's loads wait for these stores\n"
                             + _listing(BARRIER, lines))
            kernel = step.kernel
            parts.append(f"; ---- kernel {step.name}: reads {', '.join(step.inputs)}, writes "
                         f"{step.output}\n{kernel.header()}"
                         + _listing(kernel.instructions[:-1], lines))
        return "".join(parts) + "halt\n"


def _listing(instructions, lines: dict[tuple, str]) -> str:
    """The instructions' assembly lines (what ``disassemble`` gives for their words, without
    encoding and decoding 600 000 of them again for a ResNet-50), each distinct one formatted
    once (``_each_distinct``, with ``lines`` its memo)."""
    return "".join(_each_distinct(lambda i: format_instruction(i) + "\n", instructions, lines))


def _each_distinct(function, instructions, memo: dict | None = None) -> list:
    """``function`` of each instruction, computed once per distinct one (by opcode and field
    values): a network's repeated kernels share all but their transfers' addresses, and
    ResNet-50 224×224's 603 874 instructions are 158 177 distinct ones."""
    memo = {} if memo is None else memo
    out = []
    for instruction in instructions:
        key = (instruction.op.code, instruction.values)
        found = memo.get(key)
        if found is None:
            found = memo[key] = function(instruction)
        out.append(found)
    return out


def balanced(instructions: list[Instruction]) -> bool:
    """Whether every token pushed is popped (each counter ends where it started)."""
    net = dict.fromkeys(TOKENS.values(), 0)
    for instruction in instructions:
        # The (field position, counter) of its opcode's pops and pushes (docs/isa.md,
        # "Dependency tokens"), as the cycle model decodes them.
        pops, pushes = TOKEN_FIELDS[instruction.op.code, instruction.unit]
        values = instruction.values
        for position, counter in pushes:
            net[counter] += values[position]
        for position, counter in pops:
            net[counter] -= values[position]
    return not any(net.values())


def schedule(program: Program) -> list[Image | HostStep]:
    """The program's runs in order: host steps, and images of consecutive kernels (joined while
    they balance and while the image fits in DRAM above the tensors live when it starts: the
    machine streams an image of any length from DRAM, but the host must place it there).
    Memoised on the program while its steps stay the same, so each image's cycles are modelled
    once."""
    key = tuple(map(id, program.steps))
    if program._runs is None or program._runs[0] != key:
        program._runs = (key, _schedule(program))
    return program._runs[1]


def _schedule(program: Program) -> list[Image | HostStep]:
    out: list[Image | HostStep] = []
    room = 0  # instruction words the last image may still take
    first_balanced = False  # whether the last image's first kernel balances
    for step in program.steps:
        if isinstance(step, HostStep):
            out.append(step)
            continue
        last = out[-1] if out else None
        words = len(step.kernel.instructions) - 1 + len(BARRIER)  # its HALT becomes a barrier
        # The barrier balances and every kernel after an image's first joined balanced, so
        # the image balances where its first kernel does (counting the whole image at every
        # step was quadratic: 200 s of MobileNetV2's 240 once no host step cut it; counting
        # the first kernel at every join, 3 % of ResNet-50's compile).
        if isinstance(last, Image) and words <= room and first_balanced and \
                balanced(step.kernel.instructions):
            last.steps.append(step)
            room -= words
        else:
            out.append(Image([step]))
            room = image_room(program, step) - len(step.kernel.instructions)
            first_balanced = balanced(step.kernel.instructions)
    return out


def image_room(program: Program, first: KernelStep) -> int:
    """How many instruction words an image starting at ``first`` may hold: the host puts it at
    the top of DRAM (glc.isa.simulator.program_base; DRAM sizes are whole words), above every
    tensor that ``first`` and the steps after it touch."""
    return max(0, (program.config.dram_bytes - program.live_dram_bytes(first)) // WORD_BYTES)
