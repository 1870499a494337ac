"""A deliberately naive second reading of docs/isa.md "Timing": it steps every cycle and checks
each rule literally. glc/isa/cycles.py (event-driven) must give the same numbers."""

from __future__ import annotations

import math

from glc.isa.fields import UNITS, VECTOR_OPS

TOKEN = {("load", "pop_next"): "ex2ld", ("load", "push_next"): "ld2ex",
         ("load", "pop_vec"): "vu2ld", ("load", "push_vec"): "ld2vu",
         ("exec", "pop_prev"): "ld2ex", ("exec", "pop_next"): "st2ex",
         ("exec", "push_prev"): "ex2ld", ("exec", "push_next"): "ex2st",
         ("store", "pop_prev"): "ex2st", ("store", "push_prev"): "st2ex",
         ("store", "pop_vec"): "vu2st", ("store", "push_vec"): "st2vu",
         ("vector", "pop_prev"): "ld2vu", ("vector", "pop_next"): "st2vu",
         ("vector", "push_prev"): "vu2ld", ("vector", "push_next"): "vu2st"}
PUSHES = ("push_prev", "push_next", "push_vec")


def _beats(ins, port):
    wide = ins["acc"] if ins.op.name == "load" else ins["raw"]
    counts = [ins[f"count{k}"] for k in range(4)]
    # A strided run (LOAD `step`) spans run · 2**step bytes.
    span = ins["run"] * (4 if wide else 1 << ins.get("step"))
    return math.prod(counts) * math.ceil(span / port)


def _pops(unit, ins):
    return [TOKEN[unit, f] for f in ("pop_prev", "pop_next", "pop_vec") if ins.get(f)]


def _transpose_writes(ins, t, n, port):
    """The cycle after a transposing LOAD's last SP row write, block by block, literally."""
    counts = [ins[f"count{k}"] for k in range(4)]
    rows = math.prod(counts[ins["inner"]:])
    per_row = _beats(ins, port) // rows
    write_end = None
    for block in range(-(-rows // n)):
        last_beat = t + min((block + 1) * n, rows) * per_row
        start = last_beat + 1 if write_end is None else max(last_beat + 1, write_end)
        write_end = start + n
    return write_end


def reference_schedule(program, config, limit=100_000, unfetchable=False):
    """(dispatch, issue, complete, counters dict, (error name, pc, cycle) or None).

    `unfetchable`: the word after the program lies outside DRAM (FETCH_RANGE), else it is a
    bad word that faults once it has arrived."""
    n, port, depth = config.array_size, config.dram_port_bytes, config.queue_depth
    fetch_beats = math.ceil(64 / config.fetch_port_bytes)
    unit_of = [ins.unit for ins in program]
    d, t, e = {}, {}, {}
    fetch = []  # start cycle of each fetched word
    port_until = {}  # transposing loads release the port before they complete
    queue = {u: [] for u in UNITS}
    tokens = dict.fromkeys(sorted(set(TOKEN.values())), 0)
    stalls = {f"stall_token_{u}": 0 for u in UNITS} | {"stall_dram_load": 0, "stall_dram_store": 0}
    pc, halted = 0, False
    for c in range(limit):
        # the fetcher: engine free, a buffer slot free (dispatches before this cycle count)
        engine_free = not fetch or c >= fetch[-1] + fetch_beats
        held = len(fetch) - sum(1 for q in d if d[q] < c)
        if engine_free and held < config.fetch_buffer_words:
            fetch.append(c)
        for p, end in e.items():  # pushes of instructions completing now
            if end == c:
                for flag in PUSHES:
                    if program[p].get(flag):
                        counter = TOKEN[unit_of[p], flag]
                        if tokens[counter] == 255:
                            return d, t, e, stalls, ("TOKEN_OVERFLOW", p, c)
                        tokens[counter] += 1
        # dispatch (sees queue entries freed before this cycle)
        dispatched = False
        turn = not halted and (pc == 0 or c >= d[pc - 1] + 1)
        if turn and pc >= len(program) and unfetchable:
            return d, t, e, stalls, ("FAULT", pc, c)
        if turn and pc < len(fetch) and c >= fetch[pc] + fetch_beats:
            if pc >= len(program):
                return d, t, e, stalls, ("FAULT", pc, c)
            u = unit_of[pc]
            if u is None or len(queue[u]) < depth:
                d[pc] = c
                dispatched = True
                if u is None:
                    halted = True
                else:
                    queue[u].append(pc)
                pc += 1
        issued = dict.fromkeys(UNITS, False)
        port_busy = any(t[p] <= c < port_until.get(p, e[p]) for p in t
                        if program[p].op.name in ("load", "store"))
        blocked = {}
        for u in UNITS:
            if not queue[u]:
                continue
            h = queue[u][0]
            ins = program[h]
            if d[h] + 1 > c:
                continue
            if u != "exec" and not _unit_free(u, t, e, c, unit_of):
                continue
            if u == "exec" and not _exec_ready(ins, program, t, e, c):
                continue
            if any(tokens[k] == 0 for k in _pops(u, ins)):
                stalls[f"stall_token_{u}"] += 1
                blocked[u] = h
                continue
            if ins.op.name in ("load", "store") and port_busy:
                stalls[f"stall_dram_{u}"] += 1
                continue
            if config.vector_shares_ports and _waits_for_acc_ports(ins, program, t, e, c):
                continue
            for k in _pops(u, ins):
                tokens[k] -= 1
            queue[u].pop(0)
            t[h] = c
            if u == "exec":
                e[h] = {"preload": c + n, "matmul": c + ins.get("rows") + 2 * n - 1}.get(
                    ins.op.name, c + 1)
            elif u == "vector":
                e[h] = c + 1 + (ins["count"] * ins["group"] * config.vector_passes
                                if ins.op.name == "vector" else 0)
                op = VECTOR_OPS[ins["op"]] if ins.op.name == "vector" else None
                if op == "lut":
                    e[h] += 2  # "lut E = t + 3 + count·S": the tables' registered read
                elif op in ("add", "max", "mul"):
                    # revision 3.3: "E = t + 3 + count·group·S", and 2 cycles before each
                    # output after the first where the source span meets the outputs
                    e[h] += 2
                    last_src = ins["src"] + (ins["count"] - 1) * ins["ostride"] \
                        + (ins["group"] - 1) * ins["gstride"]
                    outputs = range(ins["dst"], ins["dst"] + ins["count"])
                    if ins["src_acc"] and any(ins["src"] <= r <= last_src for r in outputs):
                        e[h] += 2 * (ins["count"] - 1)
            else:
                # "E = t + 1 + beats" for a LOAD, "t + 2 + beats" for a STORE (revision 3.1:
                # the accumulator's registered read of its first row); SYNC t + 1
                setup = {"load": 1, "store": 2}.get(ins.op.name, 1)
                e[h] = c + setup + (_beats(ins, port) if ins.op.name != "sync" else 0)
                if ins.get("transpose"):
                    port_until[h] = e[h]
                    e[h] = _transpose_writes(ins, c, n, port)
            if ins.op.name in ("load", "store"):
                port_busy = True
            issued[u] = True
        if halted and not any(queue.values()):
            last = max(e.values(), default=0)
            for p, end in e.items():  # the pushes still to come
                for flag in PUSHES:
                    if end > c and program[p].get(flag):
                        tokens[TOKEN[unit_of[p], flag]] += 1
                        if tokens[TOKEN[unit_of[p], flag]] > 255:
                            return d, t, e, stalls, ("TOKEN_OVERFLOW", p, end)
            counters = {"cycles": max(d[pc - 1] + 1, last), **stalls}
            return d, t, e, counters, None
        in_flight = any(t[p] <= c < e[p] for p in t) or any(issued.values())
        all_waiting = all(not queue[u] or u in blocked for u in UNITS)
        arrived = pc < len(fetch) and c >= fetch[pc] + fetch_beats
        stuck = halted or (pc < len(program) and arrived and unit_of[pc] is not None
                           and len(queue[unit_of[pc]]) >= depth)
        if not in_flight and all_waiting and blocked and stuck and not dispatched:
            first = next(u for u in UNITS if u in blocked)
            return d, t, e, stalls, ("DEADLOCK", blocked[first], c)
    raise AssertionError("the reference ran out of cycles")


def _waits_for_acc_ports(ins, program, t, e, c):
    """The shared accumulator ports: a VECTOR waits while a LOAD to ACC is in progress and, if
    it reads ACC, while a STORE is (this cycle's included: they issue first); a LOAD to ACC
    waits while a VECTOR is, a STORE while a VECTOR that reads ACC is."""
    def vector(other, reading):
        return other.op.name == "vector" and (
            not reading or bool(other["src_acc"] or other["accumulate"]))

    name = ins.op.name
    if name == "vector":
        reads = bool(ins["src_acc"] or ins["accumulate"])
        holds = lambda o: o.op.name == "load" and o["acc"] or reads and o.op.name == "store"  # noqa: E731
    elif name == "store":
        holds = lambda o: vector(o, True)  # noqa: E731
    elif name == "load" and ins["acc"]:
        holds = lambda o: vector(o, False)  # noqa: E731
    else:
        return False
    return any(t[p] <= c < e[p] for p in t if holds(program[p]))


def _unit_free(unit, t, e, c, unit_of):
    return all(e[p] <= c for p in t if unit_of[p] == unit)


def _exec_ready(ins, program, t, e, c):
    done = [p for p in t if program[p].unit == "exec"]
    if any(t[p] >= c for p in done):  # one issue per cycle
        return False
    matmuls = [p for p in done if program[p].op.name == "matmul"]
    preloads = [p for p in done if program[p].op.name == "preload"]
    if ins.op.name == "preload":
        # The previous PRELOAD has completed; it is after the last swapping MATMUL's issue
        # (one issue per cycle, above), which is all revision 2.6 asks.
        return not any(e[p] > c for p in preloads)
    if ins.op.name == "matmul":
        # The previous MATMUL's rows have all entered; a swap needs its PRELOAD issued only.
        return not any(t[p] + program[p]["rows"] > c for p in matmuls)
    return True
