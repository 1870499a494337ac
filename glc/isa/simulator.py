"""The ISA simulator: executes a program bit-exactly on numpy arrays (docs/isa.md, semantics).

The host places the image in DRAM, the dispatcher decodes the words it fetches from there in
order until HALT, the cycle model (glc/isa/cycles.py) decides
when each instruction issues, and the instructions execute whole, vectorised, in that order, so
errors come out in the order the hardware meets them and deadlocks are the model's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from glc.errors import GlcError, Span
from glc.hwconfig import HwConfig
from glc.isa import linear, vector_linear, vector_table
from glc.isa.asm import format_instruction
from glc.isa.cycles import Timeline, schedule
from glc.isa.encoding import DecodeError, Instruction, decode, illegal_reason, to_bytes
from glc.isa.fields import LIN_SCALES, VECTOR_OPS, WORD_BYTES
from glc.isa.status import Counters, ErrorCode, MachineError
from glc.isa.transfer import element_bytes, expand, local_rows, pitch, written_rows


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
        spans: list[Span] | None = None, base: int | None = None) -> Result:
    """Execute a program image. `dram` is the initial DRAM (zero-extended to `dram_bytes`); the
    host writes the image into it at byte address `base` (default: `program_base`) and starts
    the machine there. `spans` locate each word in its source for error messages. Raises
    MachineError on an error.
    """
    return _Machine(config, dram, spans or []).run(words, program_base(config, len(words))
                                                   if base is None else base)


def program_base(config: HwConfig, words: int) -> int:
    """Where the host puts an image of `words` instructions by default: the highest
    64-byte-aligned address at which it ends inside DRAM, clear of data placed from address 0."""
    return max(0, (config.dram_bytes - words * WORD_BYTES) // WORD_BYTES * WORD_BYTES)


def place_image(dram: np.ndarray, words: list[int], base: int) -> None:
    """Write `words` into `dram` at `base` as the host does before it starts the machine
    (docs/isa.md, "Instruction fetch"); a GlcError if it does not fit or overlaps data."""
    image = np.frombuffer(to_bytes(words), dtype=np.uint8)
    if base % WORD_BYTES or base < 0 or base + image.size > dram.size:
        raise GlcError(f"a program image of {len(words)} words at DRAM {base} does not fit "
                       f"{WORD_BYTES}-byte aligned in {dram.size} bytes of DRAM")
    if dram[base:base + image.size].any():
        raise GlcError(f"the program image at DRAM {base} … {base + image.size - 1} overlaps "
                       "the program's data")
    dram[base:base + image.size] = image


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
        self.tables = vector_table.empty(n)  # the vector unit's tables (VECTOR table, lut)

    def run(self, words: list[int], base: int) -> Result:
        """Decode, schedule, execute in issue order; raise the first error the machine meets."""
        place_image(self.dram, words, base)
        program, fault = self._decode(base)
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

    def _decode(self, base: int) -> tuple[list[Instruction], MachineError | None]:
        """Decode the words the dispatcher fetches from DRAM at `base`, in order, up to HALT;
        the first bad or unfetchable word becomes the stream's fault."""
        program: list[Instruction] = []
        pc = 0
        while True:
            address = base + pc * WORD_BYTES
            if address + WORD_BYTES > self.config.dram_bytes:
                return program, self._error(ErrorCode.FETCH_RANGE, pc,
                                            f"word {pc} at DRAM {address} lies outside "
                                            f"0 … {self.config.dram_bytes - 1}", None)
            word = int.from_bytes(self.dram[address:address + WORD_BYTES].tobytes(), "little")
            try:
                instruction = decode(word)
            except DecodeError as error:
                return program, self._error(error.code, pc, error.detail, None, f"0x{word:x}")
            reason = illegal_reason(instruction, self.config.array_size,
                                    self.config.column_split)
            if reason:
                return program, self._error(ErrorCode.ILLEGAL_FIELD, pc, reason, instruction)
            program.append(instruction)
            if instruction.op.name == "halt":
                return program, None
            pc += 1

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
        elif name == "vector":
            self._vector(instruction)

    def _matmul(self, instruction: Instruction) -> None:
        sp, acc, rows = instruction["sp"], instruction["acc"], instruction["rows"]
        _check_rows(sp, rows, self.sp, ErrorCode.SP_RANGE, "scratchpad")
        _check_rows(acc, rows, self.acc, ErrorCode.ACC_RANGE, "accumulator")
        if instruction["split"]:
            _check_rows(instruction["acc2"], rows, self.acc, ErrorCode.ACC_RANGE, "accumulator")
        if self.swap_pending:
            self.weights, self.swap_pending = self.shadow, False
        # int8 products summed in int32 (exact: |sum| ≤ N·2^14); accumulation wraps mod 2^32.
        a, weights = self.sp[sp:sp + rows].astype(np.int32), self.weights.astype(np.int32)
        if instruction["split"]:  # each half of the array meets the row's first N/2 elements
            half = self.config.array_size // 2
            results = ((acc, a[:, :half] @ weights[:half]),
                       (instruction["acc2"], a[:, :half] @ weights[half:]))
        else:
            results = ((acc, a @ weights),)
        for first, product in results:
            if instruction["accumulate"]:
                self.acc[first:first + rows] += product
            else:
                self.acc[first:first + rows] = product

    def _vector(self, instruction: Instruction) -> None:
        """Fold `group` source rows into each of `count` ACC rows (docs/isa.md, VECTOR)."""
        source, label, code = ((self.acc, "accumulator", ErrorCode.ACC_RANGE)
                               if instruction["src_acc"]
                               else (self.sp, "scratchpad", ErrorCode.SP_RANGE))
        count, group, dst = instruction["count"], instruction["group"], instruction["dst"]
        rows = (instruction["src"] + instruction["ostride"] * np.arange(count)[:, None]
                + instruction["gstride"] * np.arange(group))
        last = int(rows.max())
        if last >= source.shape[0]:
            raise _Fault(code, f"{label} row {last} exceeds its {source.shape[0]} rows")
        op = VECTOR_OPS[instruction["op"]]
        if op == "table":  # dst is the first entry (the decoder checked its range)
            vector_table.fill(self.tables, dst, source[rows[:, 0]])
            return
        _check_rows(dst, count, self.acc, ErrorCode.ACC_RANGE, "accumulator")
        if op == "lut":
            self.acc[dst:dst + count] = vector_table.lookup(self.tables, source[rows[:, 0]])
            return
        if op == "lin":  # int8 rows only: no overlap with dst
            scales = [instruction[f] for f in LIN_SCALES[:group]]
            self.acc[dst:dst + count] = vector_linear.combine(
                [source[rows[:, j]] for j in range(group)], instruction["offset"],
                instruction["fixed"], scales)
            return
        fold = VECTOR_FOLDS[op]
        # Outputs are made in order (docs/isa.md, VECTOR): where accumulator sources overlap the
        # rows written, output i reads what outputs before it wrote, so go row by row.
        overlap = instruction["src_acc"] and bool(((rows >= dst) & (rows < dst + count)).any())
        batches = [np.arange(i, i + 1) for i in range(count)] if overlap else [np.arange(count)]
        for batch in batches:
            result = fold(source[rows[batch]].astype(np.int64), axis=1)  # [outputs, N]
            if instruction["accumulate"]:
                result = fold(np.stack([self.acc[dst + batch].astype(np.int64), result]), axis=0)
            # add and mul wrap modulo 2^32 like the accumulator: keep the low 32 bits.
            self.acc[dst + batch] = _wrap32(result)

    def _transfer_checks(self, instruction: Instruction, memory: np.ndarray, code: ErrorCode,
                         label: str):
        """Range-check a LOAD/STORE and return its runs (docs/isa.md, "Range checks")."""
        _check_rows(instruction["row"], written_rows(instruction, self.config.array_size),
                    memory, code, label)
        runs = expand(instruction)
        width, apart = element_bytes(instruction), pitch(instruction)
        # Only in-bounds elements touch DRAM: the end of each must lie inside it.
        ends = runs.address[:, None] + apart * np.arange(instruction["run"]) + width
        outside = runs.inside & (ends > self.config.dram_bytes)
        if outside.any():
            run, element = np.unravel_index(np.argmax(outside), outside.shape)
            first = int(runs.address[run]) + apart * int(element)
            raise _Fault(ErrorCode.DRAM_RANGE,
                         f"element at DRAM {first} … {first + width - 1} is outside "
                         f"0 … {self.config.dram_bytes - 1}")
        return runs, width

    def _load(self, instruction: Instruction) -> None:
        to_acc = instruction["acc"]
        memory = self.acc if to_acc else self.sp
        label = "accumulator" if to_acc else "scratchpad"
        code = ErrorCode.ACC_RANGE if to_acc else ErrorCode.SP_RANGE
        runs, width = self._transfer_checks(instruction, memory, code, label)
        run, n = instruction["run"], self.config.array_size
        block = np.zeros((local_rows(instruction), n), dtype=memory.dtype)
        # Every element of a run starts as the pad value; in-bounds ones are read from DRAM.
        values = np.full(runs.inside.shape, instruction["pad"], dtype=memory.dtype)
        run_at, element = np.nonzero(runs.inside)
        at = runs.address[run_at] + pitch(instruction) * element
        raw = self.dram[at[:, None] + np.arange(width)]
        values[run_at, element] = raw.view("<i4")[:, 0] if to_acc else raw.view(np.int8)[:, 0]
        block[runs.row[:, None], runs.column[:, None] + np.arange(run)] = values
        row = instruction["row"]
        if instruction["transpose"]:
            # Blocks of N local rows, each written transposed into N scratchpad rows.
            blocks = -(-block.shape[0] // n)
            padded = np.zeros((blocks * n, n), dtype=block.dtype)
            padded[:block.shape[0]] = block
            block = padded.reshape(blocks, n, n).transpose(0, 2, 1).reshape(blocks * n, n)
        memory[row:row + block.shape[0]] = block

    def _store(self, instruction: Instruction) -> None:
        runs, width = self._transfer_checks(instruction, self.acc, ErrorCode.ACC_RANGE,
                                            "accumulator")
        run, row = instruction["run"], instruction["row"]
        columns = runs.column[:, None] + np.arange(run)
        values = self.acc[row + runs.row[:, None], columns]
        # The table rows (biases, multipliers) are read by the element's column, or with
        # `qrows` by local row mod N.
        if instruction["qrows"]:
            columns = np.broadcast_to(runs.row[:, None] % self.config.array_size, columns.shape)
        if instruction["bias"]:
            _check_rows(instruction["brow"], 1, self.acc, ErrorCode.ACC_RANGE, "accumulator")
            values = _wrap32(values.astype(np.int64) + self.acc[instruction["brow"]][columns])
        if instruction["relu"]:
            values = np.maximum(values, 0)
        if instruction["raw"]:
            data = values.astype("<i4")
        elif instruction["linear"]:
            # An element's multiplier is in ACC row `qrow` (float32 bits): in the element's
            # column, or with `qrows` in column (local row mod N).
            _check_rows(instruction["qrow"], 1, self.acc, ErrorCode.ACC_RANGE, "accumulator")
            multipliers = self.acc[instruction["qrow"]].view(np.uint32)[columns]
            data = linear.requantize_linear(values, multipliers, instruction["zero"])
        else:
            data = requantize(values, instruction["shift"])
        run_at, element = np.nonzero(runs.inside)
        data = data[run_at, element].view(np.uint8).reshape(-1, width)
        index = (runs.address[run_at] + width * element)[:, None] + np.arange(width)
        _write_in_order(self.dram, index.ravel(), data.ravel())


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


def _wrap32(values: np.ndarray) -> np.ndarray:
    """int64 → int32 modulo 2^32 (two's complement), as the accumulator wraps."""
    return values.astype(np.int32)


VECTOR_FOLDS = {"add": np.sum, "max": np.max, "mul": np.prod}


def _check_rows(first: int, count: int, memory: np.ndarray, code: ErrorCode, label: str) -> None:
    if first + count > memory.shape[0]:
        raise _Fault(code, f"{label} rows {first} … {first + count - 1} exceed its "
                           f"{memory.shape[0]} rows")
