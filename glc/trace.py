"""``glc run --trace FILE.json``: when each unit of the machine worked on which instruction, as a
Chrome / Perfetto trace (the Trace Event Format's JSON: open it in ui.perfetto.dev or
chrome://tracing; docs/trace.md).

A run is a list of records, one per machine run (an image, glc/lower/image.py) or host step, in
program order. An image's record holds its slices: per track, the cycles an instruction held it.
They come from the cycle model (glc/isa/cycles.py) or from the RTL (hw/unit_trace.sv's record of
the signals its counters count), and the two agree slice for slice (RTL cycles = model). Each
unit's slices are exactly the cycles its busy counter counts (docs/isa.md, "Counters"): a LOAD,
STORE or VECTOR from issue to completion, a MATMUL while its rows enter the array; a PRELOAD or an
EXEC SYNC, which the counter does not count, is an instant at its issue. A unit's stall track
holds what its stall counters count, each wait under the instruction that waits; ``fetch`` the
fetch port reading each word; ``dispatch`` an instant per word dispatched.

In the file one cycle is one microsecond of the viewer's time axis (the format's unit); the
images are laid end to end, host steps (numpy, untimed) as instants between them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.isa.asm import format_instruction
from glc.isa.cycles import Timeline, schedule
from glc.isa.encoding import Instruction
from glc.isa.fields import UNITS, WORD_BYTES
from glc.lower.image import BARRIER
from glc.outdir import check_file_target

STEPS, FETCH, DISPATCH = "steps", "fetch", "dispatch"


def stall_track(unit: str) -> str:
    """The track of ``unit``'s waits (for a token, or for the DRAM port)."""
    return f"{unit} stall"


# The tracks, top to bottom: the program's steps, fetch, dispatch, then each unit and its waits.
TRACKS = (STEPS, FETCH, DISPATCH, *(t for unit in UNITS for t in (unit, stall_track(unit))))
PID = 1


@dataclass(frozen=True, order=True)
class Slice:
    """Instruction ``pc`` held ``track`` for cycles ``start`` … ``end`` − 1 (``end == start``:
    an instant); ``cause`` names a wait ("token" or "dram")."""

    track: str
    start: int
    end: int
    pc: int
    cause: str = ""


@dataclass
class Record:
    """One machine run or host step of a program: its steps as (name, first pc, end pc) — a host
    step has none of the image's pcs — its instructions, slices and cycles."""

    steps: list[tuple[str, int, int]]
    instructions: list[Instruction] = field(default_factory=list)
    slices: list[Slice] = field(default_factory=list)
    cycles: int = 0


def image_record(image, config: HwConfig, rtl_log: str | None = None) -> Record:
    """The record of one image (glc/lower/image.py's Image): its slices from the RTL's record
    ``rtl_log`` when given, else from the cycle model."""
    instructions = image.instructions
    if rtl_log is None:
        timeline = schedule(instructions, config, stalls=True)
        slices, cycles = model_slices(instructions, timeline, config), timeline.counters.cycles
    else:
        slices, cycles = rtl_slices(rtl_log, instructions)
    return Record(_step_ranges(image), instructions, slices, cycles)


def host_record(name: str) -> Record:
    """The record of a host step (numpy, untimed)."""
    return Record([(name, 0, 0)])


def _step_ranges(image) -> list[tuple[str, int, int]]:
    """Each kernel's pcs in the image: its instructions but HALT, a barrier of three SYNCs
    between kernels (glc/lower/image.py)."""
    ranges, first = [], 0
    for step in image.steps:
        end = first + len(step.kernel.instructions) - 1
        ranges.append((step.name, first, end))
        first = end + len(BARRIER)
    return ranges


def model_slices(instructions: list[Instruction], timeline: Timeline,
                 config: HwConfig) -> list[Slice]:
    """The slices of the cycle model's ``timeline`` (scheduled with ``stalls=True``)."""
    beats = -(-WORD_BYTES // config.fetch_port_bytes)
    slices = [Slice(FETCH, start, start + beats, pc)
              for pc, start in enumerate(timeline.fetch[:len(instructions)])]
    slices += [Slice(DISPATCH, cycle, cycle, pc) for pc, cycle in timeline.dispatch.items()]
    for pc, start in timeline.issue.items():
        unit, name = timeline.units[pc], instructions[pc].op.name
        if unit != "exec":
            end = timeline.complete[pc]
        else:
            end = start + instructions[pc]["rows"] if name == "matmul" else start
        slices.append(Slice(unit, start, end, pc))
    waits: dict[tuple[str, int, str], list[int]] = {}  # the open wait of each (unit, pc, cause)
    for unit, cause, pc, start, end in timeline.stalls or []:
        span = waits.get((unit, pc, cause))
        if span is not None and span[1] == start:  # the model charges a wait event by event
            span[1] = end
        else:
            if span is not None:
                slices.append(Slice(stall_track(unit), span[0], span[1], pc, cause))
            waits[unit, pc, cause] = [start, end]
    slices += [Slice(stall_track(unit), start, end, pc, cause)
               for (unit, pc, cause), (start, end) in waits.items()]
    return sorted(slices)


def rtl_slices(log: str, instructions: list[Instruction]) -> tuple[list[Slice], int]:
    """The slices of hw/unit_trace.sv's record and the cycles it ends at. A unit's busy cycles
    belong to the instruction it issued last (on EXEC: the last MATMUL, the only instruction
    its busy signal counts); a wait to the instruction the recorder names."""
    slices: list[Slice] = []
    busy: dict[str, tuple[int, int]] = {}  # unit → (pc, first cycle) of its open slice
    waits: dict[tuple[str, str], tuple[int, int]] = {}  # (unit, cause) → (pc, first cycle)
    fetching: tuple[int, int] | None = None
    end = None

    def close(track: str, opened: tuple[int, int] | None, cycle: int, cause: str = "") -> None:
        if opened is not None and opened[1] < cycle:
            slices.append(Slice(track, opened[1], cycle, opened[0], cause))

    for number, line in enumerate(log.splitlines(), 1):
        parts = line.split()
        try:
            cycle, kind, values = int(parts[0]), parts[1], [int(p) for p in parts[2:]]
        except (IndexError, ValueError):
            raise GlcError(f"line {number}: not a unit trace line: {line!r}") from None
        if kind == "E":
            end = cycle
            break
        unit = UNITS[values[0]] if kind in "IBTD" else None
        if kind == "I":
            pc = values[1]
            if unit == "exec" and instructions[pc].op.name != "matmul":
                slices.append(Slice(unit, cycle, cycle, pc))
            else:
                close(unit, busy.pop(unit, None), cycle)
                busy[unit] = (pc, cycle)
        elif kind == "B" and not values[1]:
            close(unit, busy.pop(unit, None), cycle)
        elif kind in "TD":
            cause = "token" if kind == "T" else "dram"
            if values[1]:
                waits[unit, cause] = (values[2], cycle)
            else:
                close(stall_track(unit), waits.pop((unit, cause), None), cycle, cause)
        elif kind == "P":
            slices.append(Slice(DISPATCH, cycle, cycle, values[1]))
        elif kind == "F":
            close(FETCH, fetching, cycle)
            fetching = (values[1], cycle)
        elif kind == "R" and not values[1]:
            close(FETCH, fetching, cycle)
            fetching = None
    if end is None:
        raise GlcError("the RTL's unit trace ends before the machine stopped")
    for unit, opened in busy.items():
        close(unit, opened, end)
    for (unit, cause), opened in waits.items():
        close(stall_track(unit), opened, end, cause)
    close(FETCH, fetching, end)
    # The fetch unit reads on past HALT until its buffer is full; the program ends there.
    return sorted(s for s in slices if s.pc < len(instructions)), end


def busy_cycles(slices: list[Slice]) -> dict[str, int]:
    """The cycles of each track's slices (a unit's: its busy counter)."""
    found = dict.fromkeys(TRACKS, 0)
    for s in slices:
        found[s.track] += s.end - s.start
    return found


def chrome_trace(records: list[Record], title: str) -> dict:
    """The Trace Event Format object of a run: a process named ``title``, a thread per track,
    the images end to end."""
    tids = {track: index for index, track in enumerate(TRACKS, 1)}
    events: list[dict] = [{"ph": "M", "pid": PID, "name": "process_name",
                           "args": {"name": title}}]
    for track, tid in tids.items():
        events.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_name",
                       "args": {"name": track}})
        events.append({"ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index",
                       "args": {"sort_index": tid}})
    offset = 0
    for image, record in enumerate(records):
        if not record.instructions:  # a host step
            events.append({"ph": "i", "s": "t", "pid": PID, "tid": tids[STEPS], "ts": offset,
                           "name": record.steps[0][0], "cat": STEPS,
                           "args": {"host step": "numpy, untimed"}})
            continue
        owner = {pc: name for name, first, end in record.steps for pc in range(first, end)}
        spans: dict[str, list[int]] = {}
        for s in record.slices:
            events.append(_event(s, record.instructions[s.pc], owner.get(s.pc), image,
                                 tids[s.track], offset))
            if s.track in UNITS and s.pc in owner:
                span = spans.setdefault(owner[s.pc], [s.start, s.end])
                span[0], span[1] = min(span[0], s.start), max(span[1], s.end)
        for name, (start, end) in spans.items():
            events.append({"ph": "X", "pid": PID, "tid": tids[STEPS], "ts": offset + start,
                           "dur": end - start, "name": name, "cat": STEPS,
                           "args": {"image": image}})
        offset += record.cycles
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"time unit": "1 µs on the time axis is 1 machine cycle",
                          "cycles": offset}}


def _event(s: Slice, instruction: Instruction, step: str | None, image: int, tid: int,
           offset: int) -> dict:
    """One slice as a complete event ("X"), an instant ("i") where it has no cycles."""
    name = f"{instruction.op.name} pc {s.pc}"
    if s.cause:
        name = f"{'token' if s.cause == 'token' else 'DRAM port'} wait: {name}"
    event = {"pid": PID, "tid": tid, "ts": offset + s.start, "name": name, "cat": s.track}
    if s.end > s.start:
        event |= {"ph": "X", "dur": s.end - s.start}
    else:
        event |= {"ph": "i", "s": "t"}
    if s.track not in (FETCH, DISPATCH):
        fields = dict(zip((f.name for f in instruction.op.fields), instruction.values,
                          strict=True))
        event["args"] = {"pc": s.pc, "image": image, "step": step or "barrier",
                         "asm": format_instruction(instruction), **fields}
    return event


def write_trace(path: Path, records: list[Record], title: str) -> None:
    """Write the trace of ``records`` as JSON to ``path``."""
    try:
        with Path(path).open("w") as file:
            json.dump(chrome_trace(records, title), file, separators=(",", ":"))
    except OSError as error:
        raise GlcError(f"cannot write: {error.strerror}", str(path)) from None


def check_trace_path(path: Path | None) -> None:
    """Refuse a ``--trace`` path before the work: a .json file in a folder that exists
    (glc/outdir.py)."""
    if path is None:
        return
    path = Path(path)
    check_file_target(path, option="--trace")
    if path.suffix != ".json":
        raise GlcError("--trace writes a Trace Event Format .json file: give a path ending "
                       "in .json", str(path))
