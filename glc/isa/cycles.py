"""The cycle model: when each instruction dispatches, issues and completes (docs/isa.md, "Timing").

An event-driven model of the instruction fetch, the dispatcher, the four units, the shared DRAM
port and the token counters. It jumps from one event (a completion, a dispatch, a unit becoming
free) to the next, so its cost is proportional to the number of instructions, not cycles. The
RTL is held to its figures, the lowering uses it as its cost model, and the ISA simulator
executes instructions in the issue order it computes.
"""

from __future__ import annotations

import hashlib
import heapq
import pickle
from collections import deque
from dataclasses import dataclass, field

from glc.cache import remembered
from glc.hwconfig import HwConfig
from glc.isa.encoding import Instruction
from glc.isa.fields import UNITS, WORD_BYTES
from glc.isa.status import Counters, ErrorCode, MachineError
from glc.isa.steps import STEP_FIELDS, TOKENS, Step, decode_all

TOKEN_MAX = 255
_NEVER = float("inf")  # no event pending

@dataclass
class Timeline:
    """The schedule of a program: per instruction index its dispatch, issue and completion cycle.

    `error` is set when the machine stopped with an error (`error_cycle` is when); instructions
    that never issued have no entry in `issue`.
    """

    dispatch: dict[int, int] = field(default_factory=dict)
    issue: dict[int, int] = field(default_factory=dict)
    complete: dict[int, int] = field(default_factory=dict)
    counters: Counters = field(default_factory=Counters)
    units: dict[int, str] = field(default_factory=dict)
    error: MachineError | None = None
    error_cycle: int = 0
    fetch: list[int] = field(default_factory=list)  # the cycle word p's fetch starts
    # With schedule(..., stalls=True): each wait the stall counters charge, as (unit, cause
    # "token" or "dram", the waiting instruction, first cycle, end cycle); glc/trace.py draws them.
    stalls: list[tuple[str, str, int, int, int]] | None = None

    def issue_order(self) -> list[int]:
        """Instruction indices in issue order (same cycle: load, exec, store, vector)."""
        return sorted(self.issue, key=lambda pc: (self.issue[pc], UNITS.index(self.units[pc])))

    def at(self, cycle: int) -> dict[str, tuple[int, str]]:
        """What each unit is doing in ``cycle``: (pc, "running") for the instruction it has
        issued and not completed, (pc, "waiting") for the oldest one dispatched to it and not
        yet issued; a unit with neither is left out (what the RTL's watchdog message names)."""
        found: dict[str, tuple[int, str]] = {}
        for pc in sorted(self.dispatch):
            unit = self.units.get(pc)
            if unit is None or unit in found or self.dispatch[pc] > cycle:
                continue
            if self.issue.get(pc, cycle + 1) <= cycle < self.complete.get(pc, cycle + 1):
                found[unit] = (pc, "running")
            elif self.issue.get(pc, cycle + 1) > cycle:
                found[unit] = (pc, "waiting")
        return found


def predict(program: list[Instruction], config: HwConfig) -> Timeline:
    """The timeline of a legal program ending in HALT; raises the MachineError it stops with."""
    return _predicted(_Model(decode_all(program, config), config, None))


def _predicted(model: _Model) -> Timeline:
    timeline = model.run()
    if timeline.error is not None:
        raise timeline.error
    return timeline


def predicted_cycles(program: list[Instruction], config: HwConfig) -> int:
    """``predict``'s cycle count, remembered in the schedule cache (glc/cache.py) by what the
    model reads of the instructions (their decoded steps, so a kernel whose transfers differ
    from another's only in their DRAM addresses — a network's repeated layer — is modelled
    once) and the config."""
    return steps_cycles(decode_all(program, config), config)


def steps_cycles(steps: list[Step], config: HwConfig) -> int:
    """``predicted_cycles`` of a program already decoded (``decode_all``): an image joins
    its kernels' steps without decoding their instructions again."""
    words = pickle.dumps(list(map(STEP_FIELDS, steps)), pickle.HIGHEST_PROTOCOL)
    parts = (hashlib.sha256(words).digest(), config)

    def modelled() -> int:
        if parts not in _RECENT:
            if len(_RECENT) >= _RECENT_SIZE:
                del _RECENT[next(iter(_RECENT))]
            model = _Model(steps, config, None, cycles_only=True)
            _RECENT[parts] = _predicted(model).counters.cycles
        return _RECENT[parts]

    return remembered("cycles", parts, modelled)


# The counts of the programs modelled last in this process, by the same key, under the schedule
# cache (which a compile still reads and fills): without one (--no-cache, or the manifest
# written after the compile) a network's repeated layers are modelled once all the same. Ints,
# so a few thousand cost nothing.
_RECENT: dict[tuple[bytes, HwConfig], int] = {}
_RECENT_SIZE = 4096


def schedule(program: list[Instruction], config: HwConfig,
             fault: MachineError | None = None, stalls: bool = False) -> Timeline:
    """Run the cycle model over `program` (decoded, legal instructions).

    The program ends with HALT, or else `fault` is the error the dispatcher meets when it reaches
    index len(program) (an illegal word or the end of instruction memory). `stalls`: also record
    each stall in the timeline (off in the compiler's costing, which runs the model often).
    """
    model = _Model(decode_all(program, config), config, fault)
    if stalls:
        model.out.stalls = []
    return model.run()


class _Model:
    """The machine state the timing rules of docs/isa.md act on."""

    def __init__(self, steps: list[Step], config: HwConfig, fault: MachineError | None,
                 cycles_only: bool = False):
        self.steps = steps
        # ``cycles_only``: neither the stall counters (they change no timing) nor each issue
        # and completion (the model reads none back from the timeline; its dispatches it
        # does, which stay recorded).
        self.count_stalls = self.timeline = not cycles_only
        self.config = config
        self.shares_ports = config.vector_shares_ports
        self.fault = fault
        self.n = config.array_size
        self.out = Timeline()
        self.queues: dict[str, deque[int]] = {u: deque() for u in UNITS}
        self.tokens = dict.fromkeys(sorted(set(TOKENS.values())), 0)
        self.pushes: list[tuple[int, int, str]] = []  # (cycle, pc, counter)
        self.next_pc = 0
        self.dispatched = -1  # the last cycle the dispatcher dispatched in
        self.halted = False
        self.halt_cycle = 0
        self.busy_until = {"load": 0, "store": 0, "vector": 0}  # unit free from this cycle
        self.port_free = 0  # the DRAM port is free from this cycle
        self.exec_next = 0  # EXEC issues at most one instruction per cycle
        self.stream_free = 0  # the previous MATMUL's rows have all entered the array
        self.preload_done = 0  # the last PRELOAD's completion
        # With vector_shares_ports the vector unit takes turns with LOADs to ACC on the write
        # port and with STOREs on the read port (docs/isa.md, "Accumulator ports"): when the
        # last of each, the last VECTOR and the last VECTOR that reads ACC complete.
        self.acc_load_done = self.store_done = 0
        self.vector_done = self.vector_read_done = 0
        self.last_complete = 0
        # Instruction fetch (docs/isa.md, "Instruction fetch"): word p's fetch starts at
        # fetch_start[p] and it can dispatch from fetch_start[p] + fetch_beats.
        self.fetch_beats = -(-WORD_BYTES // config.fetch_port_bytes)
        self.fetch_start: list[int] = []
        self.ready_pc = self.ready_at = -1  # _dispatch_ready's word and its answer

    def run(self) -> Timeline:
        """Step from event to event until HALT drains, an error, or a deadlock. A unit's head's
        structural readiness is computed once per head, not at every event it waits through:
        only that unit's own issue changes what it reads (``_structural``). The next event is
        found in the loop, from locals (a call and attribute reads per event were a third of
        the model's time)."""
        cycle, out, units = 0, self.out, range(len(UNITS))
        queues = [self.queues[u] for u in UNITS]
        heads, ready = [-1] * len(UNITS), [0] * len(UNITS)
        steps, pushes, depth = self.steps, self.pushes, self.config.queue_depth
        n_steps = len(steps)
        structural, try_issue = self._structural, self._try_issue
        while True:
            if pushes and pushes[0][0] <= cycle:
                self._apply_pushes(cycle)
            if out.error is None and not self.halted and cycle >= (
                    self.ready_at if self.ready_pc == self.next_pc else self._dispatch_ready()):
                self._dispatch(cycle)
            if out.error is not None:
                return self._finish()
            issued, held = [False, False, False, False], self.port_free  # the port before issues
            for u in units:
                queue = queues[u]
                if not queue:
                    continue
                pc = queue[0]
                if heads[u] != pc:
                    heads[u], ready[u] = pc, structural(UNITS[u], pc)
                if ready[u] <= cycle:
                    issued[u] = try_issue(UNITS[u], pc, cycle)
            if self.halted and not any(queues):
                # Everything has issued; the remaining pushes can still overflow a counter.
                self._apply_pushes(self.last_complete)
                out.counters.cycles = max(self.halt_cycle + 1, self.last_complete)
                return self._finish()
            # The next cycle at which anything can change: comparisons, not min() (its hot
            # loop).
            following = _NEVER
            for t in (self.port_free, self.last_complete, self.acc_load_done, self.store_done,
                      self.vector_done, self.vector_read_done):
                if cycle < t < following:
                    following = t
            if pushes:
                t = pushes[0][0]
                if cycle < t < following:
                    following = t
            for u in units:
                queue = queues[u]
                if queue:
                    pc = queue[0]
                    if heads[u] != pc:
                        heads[u], ready[u] = pc, structural(UNITS[u], pc)
                    if cycle < ready[u] < following:
                        following = ready[u]
            if not self.halted:
                pc = self.next_pc
                unit = steps[pc].unit if pc < n_steps else None
                if unit is None or len(self.queues[unit]) < depth:  # its queue has room
                    at = self.ready_at if self.ready_pc == pc else self._dispatch_ready()
                    if at <= cycle:
                        at = cycle + 1
                    if at < following:
                        following = at
            if following == _NEVER:
                following = cycle + 1
            if True not in issued and self.dispatched != cycle and \
                    self.last_complete <= cycle and not pushes and self._deadlocked(cycle):
                self._deadlock(cycle)
                return self._finish()
            if self.count_stalls:
                for u in units:
                    if not issued[u] and queues[u] and ready[u] <= cycle:
                        self._count_stalls(cycle, following, issued, queues, ready, held)
                        break
            cycle = following

    def _finish(self) -> Timeline:
        self.out.fetch = self.fetch_start
        counters = self.out.counters
        counters.macs = self.n * self.n * counters.busy_exec
        if self.out.error is not None:
            counters.cycles = self.out.error_cycle
        return self.out

    def _stop(self, error: MachineError, cycle: int) -> None:
        if self.out.error is None:
            self.out.error, self.out.error_cycle = error, cycle

    def _apply_pushes(self, cycle: int) -> None:
        while self.pushes and self.pushes[0][0] <= cycle:
            when, pc, counter = heapq.heappop(self.pushes)
            if self.tokens[counter] == TOKEN_MAX:
                self._stop(MachineError(ErrorCode.TOKEN_OVERFLOW, pc,
                                        f"{counter} already holds {TOKEN_MAX} tokens"), when)
                return
            self.tokens[counter] += 1

    def _target(self, pc: int) -> str | None:
        return self.steps[pc].unit if pc < len(self.steps) else None

    def _dispatch(self, cycle: int) -> None:
        """Dispatch the next word, which has arrived (``_dispatch_ready``), if its queue has
        room."""
        pc = self.next_pc
        if pc == len(self.steps):
            # An unfetchable word stops the dispatcher as soon as it turns to it; a bad word
            # once it has arrived and could dispatch.
            self._stop(self.fault or MachineError(ErrorCode.ILLEGAL_OPCODE, pc,
                                                  "the program has no HALT"), cycle)
            return
        unit = self.steps[pc].unit
        if unit is None:  # HALT
            self.halted, self.halt_cycle = True, cycle
        elif len(self.queues[unit]) >= self.config.queue_depth:
            return
        else:
            self.queues[unit].append(pc)
        self.out.dispatch[pc] = cycle
        self.dispatched = cycle
        self.next_pc += 1

    def _arrival(self, pc: int) -> int:
        """The first cycle word `pc` is in the prefetch buffer. A fetch takes a buffer slot when
        it starts; a dispatch frees one for the next cycle (docs/isa.md, "Instruction fetch")."""
        while len(self.fetch_start) <= pc:
            p = len(self.fetch_start)
            start = self.fetch_start[-1] + self.fetch_beats if p else 0
            if p >= self.config.fetch_buffer_words:
                start = max(start, self.out.dispatch[p - self.config.fetch_buffer_words] + 1)
            self.fetch_start.append(start)
        return self.fetch_start[pc] + self.fetch_beats

    def _dispatch_ready(self) -> int:
        """The first cycle the dispatcher can act on its next word (fixed once the word before
        it has dispatched, so computed once per word)."""
        pc = self.next_pc
        if self.ready_pc != pc:
            unfetchable = (pc == len(self.steps) and self.fault is not None
                           and self.fault.code == ErrorCode.FETCH_RANGE)
            previous = self.out.dispatch[pc - 1] + 1 if pc else 0
            self.ready_pc = pc
            self.ready_at = previous if unfetchable else max(previous, self._arrival(pc))
        return self.ready_at

    def _structural(self, unit: str, pc: int) -> int:
        """The first cycle the unit's resources allow instruction `pc` to issue (tokens aside)."""
        ready = self.out.dispatch[pc] + 1
        name = self.steps[pc].name
        if unit != "exec":
            return max(ready, self.busy_until[unit])
        ready = max(ready, self.exec_next)
        # A PRELOAD's writes and a MATMUL's swap travel the array in step (ISA revision 2.6):
        # issuing after the other in EXEC's order is all either needs.
        if name == "preload":
            return max(ready, self.preload_done)
        if name == "matmul":
            return max(ready, self.stream_free)
        return ready

    def _tokens_ok(self, step: Step) -> bool:
        tokens = self.tokens
        return all(tokens[c] for c in step.pops)

    def _acc_turn(self, step: Step) -> int:
        """The first cycle the accumulator's shared ports let ``instruction`` issue: a VECTOR
        after the LOADs to ACC in progress and, if it reads ACC, the STOREs; a LOAD to ACC after
        the VECTOR in progress; a STORE after it if it reads ACC (in a cycle where both could
        issue, the LOAD or STORE goes first: ``run`` tries the units in UNITS order). Asked only
        where the ports are shared; 0 where the instruction uses neither."""
        name = step.name
        if name == "vector":
            return max(self.acc_load_done, self.store_done) if step.reads_acc \
                else self.acc_load_done
        if name == "store":
            return self.vector_read_done
        if name == "load" and step.reads_acc:
            return self.vector_done
        return 0

    def _try_issue(self, unit: str, pc: int, cycle: int) -> bool:
        """Issue ``pc``, the unit's head, structurally ready in ``cycle``, if its tokens, the
        DRAM port and the accumulator's ports let it."""
        step = self.steps[pc]
        tokens = self.tokens
        for counter in step.pops:
            if not tokens[counter]:
                return False
        if step.port and self.port_free > cycle:
            return False
        if self.shares_ports and self._acc_turn(step) > cycle:
            return False
        self.queues[unit].popleft()
        for counter in step.pops:
            tokens[counter] -= 1
        end = self._occupy(unit, step, cycle)
        for counter in step.pushes:
            heapq.heappush(self.pushes, (end, pc, counter))
        if self.timeline:
            out = self.out
            out.issue[pc], out.complete[pc] = cycle, end
            out.units[pc] = unit
        if end > self.last_complete:
            self.last_complete = end
        return True

    def _occupy(self, unit: str, step: Step, t: int) -> int:
        """Apply the timing rules of an instruction issuing at `t`; return its completion E."""
        name, counters, n = step.name, self.out.counters, self.n
        if unit == "vector":
            end = t + step.cost
            self.busy_until[unit] = end
            if name == "vector":
                self.vector_done = end
                if step.reads_acc:
                    self.vector_read_done = end
            counters.busy_vector += end - t
            return end
        if unit != "exec":
            end = t + step.cost
            if step.port:
                self.port_free = end
            if step.transpose:
                end = _transpose_end(step.rows, step.moved, t, n)
            if name == "store":
                self.store_done = end
            elif name == "load" and step.reads_acc:
                self.acc_load_done = end
            self.busy_until[unit] = end
            if unit == "load":
                counters.busy_load += end - t
            else:
                counters.busy_store += end - t
            return end
        self.exec_next = t + 1
        if name == "preload":
            self.preload_done = t + n
            return t + n
        if name == "matmul":
            rows = step.rows
            self.stream_free = t + rows
            counters.busy_exec += rows
            return t + rows + 2 * n - 1
        return t + 1

    def _blocked(self, unit: str, cycle: int) -> bool:
        """The unit's head is dispatched and ready but for a token it pops."""
        if not self.queues[unit]:
            return False
        pc = self.queues[unit][0]
        return (self._structural(unit, pc) <= cycle
                and not self._tokens_ok(self.steps[pc]))

    def _deadlocked(self, cycle: int) -> bool:
        """The rule of docs/isa.md: nothing in flight, every queue empty or blocked on a token,
        at least one blocked, and the dispatcher did not and cannot dispatch (``run`` checks
        that nothing issued or was dispatched in ``cycle`` and nothing is in flight)."""
        if not all(self._blocked(u, cycle) or not self.queues[u] for u in UNITS):
            return False
        if not any(self._blocked(u, cycle) for u in UNITS):
            return False
        if self.halted:
            return True
        return (self.next_pc < len(self.steps) and self._arrival(self.next_pc) <= cycle
                and self._queue_full(self.next_pc))

    def _queue_full(self, pc: int) -> bool:
        """Instruction `pc` goes to a queue that is full (the dispatcher must wait)."""
        unit = self._target(pc)
        return unit is not None and len(self.queues[unit]) >= self.config.queue_depth

    def _deadlock(self, cycle: int) -> None:
        unit = next(u for u in UNITS if self._blocked(u, cycle))
        pc = self.queues[unit][0]
        missing = [c for c in self.steps[pc].pops if not self.tokens[c]]
        self._stop(MachineError(ErrorCode.DEADLOCK, pc,
                                f"the {unit} unit waits for a {missing[0]} token that never comes"),
                   cycle)

    def _count_stalls(self, cycle: int, following: int, issued: list[bool],
                      queues: list[deque[int]], ready: list[int], held: int) -> None:
        """Charge the cycles [cycle, following) to each waiting unit's cause (docs/isa.md).
        ``held``: the DRAM port's end before this cycle's issues. A STORE waits for the port a
        LOAD takes in the same cycle; a LOAD only for one a STORE took in an earlier cycle (as
        the RTL's LOAD unit sees it, the STORE's registered hold): a STORE issuing while the
        LOAD waits for the accumulator's turn (which no counter charges) holds the port from
        the next cycle."""
        for u, queue in enumerate(queues):
            if issued[u] or not queue or ready[u] > cycle:
                continue
            pc = queue[0]
            step = self.steps[pc]
            first = cycle
            if not self._tokens_ok(step):
                cause = "token"
            elif step.port and self.port_free > cycle:
                cause = "dram"
                if step.name == "load" and held <= cycle:
                    first = cycle + 1
            else:
                continue
            if first == following:
                continue
            unit = UNITS[u]
            name = f"stall_{cause}_{unit}"
            counters = self.out.counters
            setattr(counters, name, getattr(counters, name) + following - first)
            if self.out.stalls is not None:
                self.out.stalls.append((unit, cause, pc, first, following))


def _transpose_end(rows: int, moved: int, t: int, n: int) -> int:
    """E of a transposing LOAD of `rows` local rows and `moved` beats issuing at t (docs/isa.md,
    "Transposing loads"): each block of N local rows is written, N scratchpad rows one a cycle,
    after its last beat and after the previous block's writes. A full block's beats take at
    least N cycles, so only the last block can wait for the one before it."""
    per_row = moved // rows
    blocks = -(-rows // n)
    write = t + rows * per_row + 1
    if blocks > 1:
        write = max(write, t + (blocks - 1) * n * per_row + 1 + n)
    return write + n
