"""The ISA simulator: executes a program bit-exactly on numpy arrays (docs/isa.md, semantics).

The dispatcher decodes words in order until HALT, the cycle model (glc/isa/cycles.py) decides
when each instruction issues, and the instructions execute whole, vectorised, in that order, so
errors come out in the order the hardware meets them and deadlocks are the model's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from glc.errors import Span
from glc.hwconfig import HwConfig
from glc.isa.asm import format_instruction
from glc.isa.cycles import Timeline, schedule
from glc.isa.encoding import DecodeError, Instruction, decode, illegal_reason
from glc.isa.status import Counters, ErrorCode, MachineError
from glc.isa.transfer import element_bytes, expand, local_rows


def requantize(x: np.ndarray, shift: int) -> np.ndarray:
    """int32 → int8: `clamp((x + 2^(k−1)) >> k, −128, 127)` for k ≥ 1, `clamp(x)` for k = 0.

    The language contract's `(compute (requantize k) …)`; the add is exact (int64, no wrap).
    """
    wide = x.astype(np.int64)
    if shift:
        wide = (wide + (1 << (shift - 1))) >> shift
    return np.clip(wide, -128, 127).astype(np.int8)


@dataclass
class Result:
    """The machine after HALT: its memories, the counters and the schedule."""

    dram: np.ndarray  # uint8[dram_bytes]
    scratchpad: np.ndarray  # int8[scratchpad_rows, N]
    accumulator: np.ndarray  # int32[accumulator_rows, N]
    counters: Counters
    timeline: Timeline


def run(words: list[int], config: HwConfig, dram: np.ndarray | bytes | None = None,
        spans: list[Span] | None = None) -> Result:
    """Execute a program image. `dram` is the initial DRAM (zero-extended to `dram_bytes`);
    `spans` locate each word in its source for error messages. Raises MachineError on an error.
    """
    return _Machine(config, dram, spans or []).run(words)


class _Machine:
    def __init__(self, config: HwConfig, dram, spans: list[Span]):
        n = config.array_size
        self.config = config
        self.spans = spans
        self.dram = np.zeros(config.dram_bytes, dtype=np.uint8)
        if dram is not None:
            initial = np.frombuffer(bytes(dram), dtype=np.uint8)
            if initial.size > config.dram_bytes:
                raise MachineError(ErrorCode.DRAM_RANGE, 0,
                                   f"{initial.size} bytes of DRAM image exceed "
                                   f"dram_bytes={config.dram_bytes}")
            self.dram[:initial.size] = initial
        self.sp = np.zeros((config.scratchpad_rows, n), dtype=np.int8)
        self.acc = np.zeros((config.accumulator_rows, n), dtype=np.int32)
        self.shadow = np.zeros((n, n), dtype=np.int8)
        self.weights = np.zeros((n, n), dtype=np.int8)
        self.swap_pending = False

    def run(self, words: list[int]) -> Result:
        """Decode, schedule, execute in issue order; raise the first error the machine meets."""
        program, fault = self._decode(words)
        timeline = schedule(program, self.config, fault)
        for pc in timeline.issue_order():
            try:
                self._execute(program[pc])
            except _Fault as fault_here:
                raise self._error(fault_here.code, pc, fault_here.detail, program[pc]) from None
        error = timeline.error
        if error is not None:
            if error.pc >= len(program):  # the decode fault, already located and described
                raise error
            raise self._error(error.code, error.pc, error.detail, program[error.pc])
        return Result(self.dram, self.sp, self.acc, timeline.counters, timeline)

    def _decode(self, words: list[int]) -> tuple[list[Instruction], MachineError | None]:
        """Decode in dispatch order up to HALT; the first bad word becomes the stream's fault."""
        program: list[Instruction] = []
        for pc in range(self.config.imem_words):
            word = words[pc] if pc < len(words) else 0
            try:
                instruction = decode(word)
            except DecodeError as error:
                return program, self._error(error.code, pc, error.detail, None, f"0x{word:x}")
            reason = illegal_reason(instruction, self.config.array_size)
            if reason:
                return program, self._error(ErrorCode.ILLEGAL_FIELD, pc, reason, instruction)
            program.append(instruction)
            if instruction.op.name == "halt":
                return program, None
        return program, self._error(ErrorCode.IMEM_RANGE, self.config.imem_words,
                                    "ran past the end of instruction memory without HALT", None)

    def _error(self, code: ErrorCode, pc: int, detail: str, instruction: Instruction | None,
               text: str = "") -> MachineError:
        where = self.spans[pc] if pc < len(self.spans) else None
        shown = format_instruction(instruction) if instruction is not None else text
        return MachineError(code, pc, detail, shown, where)

    def _execute(self, instruction: Instruction) -> None:
        name = instruction.op.name
        if name == "load":
            self._load(instruction)
        elif name == "store":
            self._store(instruction)
        elif name == "preload":
            row = instruction["row"]
            _check_rows(row, self.config.array_size, self.sp, ErrorCode.SP_RANGE, "scratchpad")
            self.shadow = self.sp[row:row + self.config.array_size].copy()
            self.swap_pending = True
        elif name == "matmul":
            self._matmul(instruction)

    def _matmul(self, instruction: Instruction) -> None:
        sp, acc, rows = instruction["sp"], instruction["acc"], instruction["rows"]
        _check_rows(sp, rows, self.sp, ErrorCode.SP_RANGE, "scratchpad")
        _check_rows(acc, rows, self.acc, ErrorCode.ACC_RANGE, "accumulator")
        if self.swap_pending:
            self.weights, self.swap_pending = self.shadow, False
        # int8 products summed in int32 (exact: |sum| ≤ N·2^14); accumulation wraps mod 2^32.
        product = self.sp[sp:sp + rows].astype(np.int32) @ self.weights.astype(np.int32)
        if instruction["accumulate"]:
            self.acc[acc:acc + rows] += product
        else:
            self.acc[acc:acc + rows] = product

    def _transfer_checks(self, instruction: Instruction, memory: np.ndarray, code: ErrorCode,
                         label: str):
        """Range-check a LOAD/STORE and return its runs (docs/isa.md, "Range checks")."""
        _check_rows(instruction["row"], local_rows(instruction), memory, code, label)
        runs = expand(instruction)
        size = instruction["run"] * element_bytes(instruction)
        outside = runs.inside & (runs.address + size > self.config.dram_bytes)
        if outside.any():
            first = int(runs.address[np.argmax(outside)])
            raise _Fault(ErrorCode.DRAM_RANGE,
                         f"run at DRAM {first} … {first + size - 1} is outside "
                         f"0 … {self.config.dram_bytes - 1}")
        return runs, size

    def _load(self, instruction: Instruction) -> None:
        to_acc = instruction["acc"]
        memory = self.acc if to_acc else self.sp
        label = "accumulator" if to_acc else "scratchpad"
        code = ErrorCode.ACC_RANGE if to_acc else ErrorCode.SP_RANGE
        runs, size = self._transfer_checks(instruction, memory, code, label)
        run = instruction["run"]
        block = np.zeros((local_rows(instruction), self.config.array_size), dtype=memory.dtype)
        inside = runs.inside
        raw = self.dram[runs.address[inside, None] + np.arange(size)]
        values = raw.view("<i4") if to_acc else raw.view(np.int8)
        block[runs.row[inside, None], runs.column[inside, None] + np.arange(run)] = values
        row = instruction["row"]
        memory[row:row + block.shape[0]] = block

    def _store(self, instruction: Instruction) -> None:
        runs, size = self._transfer_checks(instruction, self.acc, ErrorCode.ACC_RANGE,
                                           "accumulator")
        run, row = instruction["run"], instruction["row"]
        inside = runs.inside
        values = self.acc[row + runs.row[inside, None], runs.column[inside, None] + np.arange(run)]
        if instruction["relu"]:
            values = np.maximum(values, 0)
        if instruction["raw"]:
            data = values.astype("<i4").view(np.uint8)
        else:
            data = requantize(values, instruction["shift"]).view(np.uint8)
        _write_in_order(self.dram, (runs.address[inside, None] + np.arange(size)).ravel(),
                        data.ravel())


class _Fault(Exception):
    """A range error found while executing; the machine adds the instruction and location."""

    def __init__(self, code: ErrorCode, detail: str):
        super().__init__(detail)
        self.code = code
        self.detail = detail


def _write_in_order(memory: np.ndarray, index: np.ndarray, data: np.ndarray) -> None:
    """memory[index] = data with the last write to a repeated index winning (docs/isa.md: runs
    are written in loop order), which numpy's fancy assignment does not promise."""
    last = index.size - 1 - np.unique(index[::-1], return_index=True)[1]
    memory[index[last]] = data[last]


def _check_rows(first: int, count: int, memory: np.ndarray, code: ErrorCode, label: str) -> None:
    if first + count > memory.shape[0]:
        raise _Fault(code, f"{label} rows {first} … {first + count - 1} exceed its "
                           f"{memory.shape[0]} rows")
