"""The cycle model against timings worked out by hand from docs/isa.md ("Timing"), and the
256×256×256 GEMM against the ideal."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from isa_cycle_reference import reference_schedule

from glc.hwconfig import load_config
from glc.isa import cycles
from glc.isa.asm import assemble
from glc.isa.cycles import Timeline, predict, schedule
from glc.isa.encoding import Instruction
from glc.isa.fields import UNIT_FLAGS, UNITS, VECTOR_OPS
from glc.isa.gemm import gemm_program
from glc.isa.status import Counters, ErrorCode, MachineError

N4 = load_config("n4")  # N = 4, P = 4 bytes per cycle


def _timeline(text, config=N4):
    return predict(assemble(text, config).instructions(), config)


def test_the_documented_example_program():
    text = """
    load  row=0,  dram=0, run=N, count0=2*N, stride0=N
    load  row=2*N, dram=32, run=N, count0=N, stride0=N, push_next
    preload row=2*N, pop_prev
    matmul sp=0, acc=0, rows=2*N, push_next
    store raw, row=0, dram=48, run=N, count0=2*N, stride0=4*N, pop_prev
    halt
    """
    t = _timeline(text)
    # word 0 is fetched in cycle 0 and dispatches in 1 (every later word one cycle after it);
    # load 0: issues d+1 = 2, 8 beats -> E = 2 + 1 + 8 = 11; load 1: 11 .. 11 + 1 + 4 = 16;
    # preload at 16 (its token), E = 20; matmul at 17 (its swap needs the preload issued
    # only, revision 2.6), E = 17 + 8 + 2·4 − 1 = 32;
    # store at 32: 8 rows of 16 bytes = 32 beats, E = 32 + 2 + 32 = 66 (its set-up and the
    # accumulator's registered read of its first row, revision 3.1).
    assert [t.dispatch[pc] for pc in range(6)] == [1, 2, 3, 4, 5, 6]
    assert [t.issue[pc] for pc in range(5)] == [2, 11, 16, 17, 32]
    assert [t.complete[pc] for pc in range(5)] == [11, 16, 20, 32, 66]
    c = t.counters
    assert (c.cycles, c.busy_load, c.busy_exec, c.busy_store) == (66, 14, 8, 34)
    # preload waits from 4 (dispatched in 3) to 16; the store from 6 to 32
    assert (c.stall_token_exec, c.stall_token_store) == (12, 26)
    assert c.macs == 16 * 8


@pytest.mark.parametrize(("rows", "issues", "cycles"), [
    # (word 0 arrives from DRAM in cycle 1; words dispatch one a cycle from cycle 1)
    # first preload at 2 (E = 6); the first matmul swaps at 3, its preload issued (revision
    # 2.6: the writes and the swap travel the array in step); the second preload when the
    # first has completed (6, E = 10);
    # 12 rows: the second matmul follows the first one's rows without a bubble (3 + 12)
    (12, [2, 3, 6, 15], 15 + 12 + 7),
    # 4 rows >= N: also without a bubble (3 + 4), one cycle after the second preload
    (4, [2, 3, 6, 7], 7 + 4 + 7),
])
def test_back_to_back_matmuls_stream_while_the_next_weights_preload(rows, issues, cycles):
    t = _timeline(f"preload row=0\nmatmul rows={rows}\npreload row=0\nmatmul rows={rows}\nhalt")
    assert [t.issue[pc] for pc in range(4)] == issues
    assert t.counters.cycles == cycles
    assert t.counters.busy_exec == 2 * rows


def test_load_wins_the_dram_port_and_the_store_stalls():
    t = _timeline("""
    load row=0, run=N, count0=4, stride0=N
    store raw, row=0, dram=100, run=N, count0=1
    load row=4, run=N, count0=2, stride0=N
    halt
    """)
    # load 0 holds the port for [2, 7); at 7 load 2 and the store both could go: the load wins
    # ([7, 10)), the store goes at 10 and takes 2 + 4 beats.
    assert [t.issue[pc] for pc in range(3)] == [2, 10, 7]
    assert t.counters.cycles == 16
    assert (t.counters.stall_dram_store, t.counters.stall_dram_load) == (7, 0)
    assert (t.counters.busy_load, t.counters.busy_store) == (8, 6)


def test_a_full_queue_stalls_the_dispatcher():
    shallow = dataclasses.replace(N4, queue_depth=1)
    t = _timeline("""
    load row=0, run=N, count0=8, stride0=N
    load row=0, run=N, count0=1
    sync unit=exec
    load row=0, run=N, count0=1
    halt
    """, shallow)
    # instruction 1 waits for a slot: load 0 issues in 2, so 1 dispatches in 3; instruction 3
    # waits for instruction 1 to issue (11, when load 0 completes) and dispatches in 12.
    assert [t.dispatch[pc] for pc in range(5)] == [1, 3, 4, 12, 13]
    assert [t.complete[pc] for pc in range(4)] == [11, 13, 6, 15]
    assert t.counters.cycles == 15


def test_a_dispatcher_stuck_behind_a_blocked_queue_is_a_deadlock():
    shallow = dataclasses.replace(N4, queue_depth=1)
    program = assemble("load row=0, run=N, pop_next\nload row=0, run=N\nhalt", shallow)
    t = schedule(program.instructions(), shallow)
    assert (t.error.code, t.error.pc, t.error_cycle) == (ErrorCode.DEADLOCK, 0, 2)
    with pytest.raises(MachineError, match="DEADLOCK"):
        predict(program.instructions(), shallow)


def test_gemm_256_cubed_at_n16_is_within_one_percent_of_ideal_plus_fill_and_drain():
    config = load_config("n16")
    text, _ = gemm_program(256, 256, 256, config, shift=8)
    counters = _timeline(text, config).counters
    n = config.array_size
    bound = -(-256 ** 3 // n ** 2) + 2 * n - 1  # every row streamed, one fill/drain
    assert counters.busy_exec == 65536
    assert bound <= counters.cycles <= 1.01 * bound
    assert 65536 / counters.cycles >= 0.95


def test_programs_that_differ_only_in_dram_addresses_are_modelled_once(monkeypatch):
    """predicted_cycles keys its memo by what the model reads (a network's repeated layers
    share one count); the model reads no DRAM address, so moving every transfer's address
    changes no cycle of the timeline."""
    config = load_config("n16")
    text, _ = gemm_program(64, 64, 64, config, shift=8)
    program = assemble(text, config).instructions()
    moved = [Instruction.make(i.op.name, **{**dict(zip((f.name for f in i.op.fields),
                                                       i.values, strict=True)),
                                            "dram": i["dram"] + 4096})
             if i.op.name in ("load", "store") else i for i in program]
    assert moved != program
    assert schedule(moved, config) == schedule(program, config)
    runs = []
    monkeypatch.setattr(cycles._Model, "run", lambda self: runs.append(self) or
                        Timeline(counters=dataclasses.replace(Counters(), cycles=len(runs))))
    monkeypatch.setattr(cycles, "_RECENT", {})
    assert cycles.predicted_cycles(program, config) == cycles.predicted_cycles(moved, config) == 1
    assert len(runs) == 1


@st.composite
def _programs(draw):
    """Short random programs over every opcode and flag (faults and deadlocks included)."""
    program = []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["load", "store", "preload", "matmul", "sync", "vector"]))
        if kind == "sync":
            unit = draw(st.integers(0, 3))
            legal = UNIT_FLAGS[UNITS[unit]]
            flags = {f: 1 for f in legal if draw(st.booleans())}
            program.append(Instruction.make("sync", unit=unit, **flags))
            continue
        unit = {"load": "load", "store": "store", "vector": "vector"}.get(kind, "exec")
        flags = {f: 1 for f in UNIT_FLAGS[unit] if draw(st.integers(0, 3)) == 0}
        if kind in ("load", "store"):
            wide = "acc" if kind == "load" else "raw"
            fields = {wide: draw(st.integers(0, 1)), "run": draw(st.integers(1, 4)),
                      "count0": draw(st.integers(1, 5)), "count2": draw(st.integers(1, 2))}
            if kind == "load" and not fields["acc"]:
                fields["transpose"] = draw(st.integers(0, 1))
        elif kind == "matmul":
            fields = {"rows": draw(st.integers(1, 12))}
        elif kind == "vector" and draw(st.booleans()):  # table and lut: group 1, SP rows
            op = draw(st.sampled_from(["lut", "table"]))
            fields = {"op": VECTOR_OPS.index(op), "count": draw(st.integers(1, 4))}
        elif kind == "vector":
            # src, dst and strides drawn so that accumulator sources meet the outputs or not
            fields = {"count": draw(st.integers(1, 4)), "group": draw(st.integers(1, 3)),
                      "src_acc": draw(st.integers(0, 1)), "accumulate": draw(st.integers(0, 1)),
                      "src": draw(st.integers(0, 6)), "dst": draw(st.integers(0, 6)),
                      "ostride": draw(st.integers(0, 2)), "gstride": draw(st.integers(0, 2))}
        else:
            fields = {}
        program.append(Instruction.make(kind, **flags, **fields))
    return [*program, Instruction.make("halt")]


@settings(max_examples=300, deadline=None)
@given(_programs(), st.integers(1, 3), st.sampled_from([1, 4, 6]), st.sampled_from([1, 2, 8]),
       st.sampled_from([64, 16]), st.sampled_from([4, 2, 1]), st.integers(0, 1))
def test_event_model_equals_a_cycle_by_cycle_reading_of_the_rules(program, depth, port, buffer,
                                                                   fetch_port, lanes, shares):
    config = dataclasses.replace(N4, queue_depth=depth, dram_port_bytes=port,
                                 fetch_buffer_words=buffer, fetch_port_bytes=fetch_port,
                                 vector_lanes=lanes, vector_shares_ports=shares)
    timeline = schedule(program, config)
    dispatch, issue, complete, counters, error = reference_schedule(program, config)
    if error is not None:
        assert timeline.error is not None
        assert (timeline.error.code.name, timeline.error.pc, timeline.error_cycle) == error
        return
    assert timeline.error is None
    assert (timeline.dispatch, timeline.issue, timeline.complete) == (dispatch, issue, complete)
    got = timeline.counters.as_dict()
    assert {k: got[k] for k in counters} == counters


@pytest.mark.parametrize(("rows", "inner_runs", "complete"), [
    # 8 local rows of 1 beat, N = 4: blocks end at beats 4 and 8 (cycles 6, 10); block 0 writes
    # [7, 11), block 1 [11, 15): E = 15
    (8, 1, 15),
    # 6 local rows: block 1 (2 rows) ends at cycle 8 but waits for block 0's writes (to 11)
    (6, 1, 15),
    # 3 local rows, one block: last beat 5, writes [6, 10)
    (3, 1, 10),
    # 8 rows of 2 runs (2 beats a row): blocks end at 10 and 18; writes [11, 15), [19, 23)
    (8, 2, 23),
])
def test_a_transposing_load_writes_each_block_after_its_last_beat(rows, inner_runs, complete):
    t = _timeline(f"load transpose, inner=1, run=2, count0={inner_runs}, count1={rows}\n"
                  "store raw, row=0, run=N, count0=1\nhalt")
    assert t.issue[0] == 2
    assert t.complete[0] == complete
    # the port is free after the last beat: the store issues then, not at the load's E
    assert t.issue[1] == 2 + 1 + rows * inner_runs


def test_a_vector_instruction_takes_a_cycle_per_source_row():
    t = _timeline("vector op=max, count=3, group=4, push_next\n"
                  "vector op=add, count=1, group=2\n"
                  "store raw, row=0, run=N, count0=1, pop_vec\nhalt")
    # 12 source rows: E = 2 + 3 + 12 (revision 3.3: the operands' and the combine's registers);
    # the store (its token at 17) moves 16 bytes in 4 beats after its 2 set-up cycles
    assert [t.issue[pc] for pc in range(3)] == [2, 17, 17]
    assert [t.complete[pc] for pc in range(3)] == [17, 22, 23]
    assert t.counters.busy_vector == 15 + 5


@pytest.mark.parametrize(("lanes", "count", "complete"), [
    # (revision 3.2: E = t + 7 + rows·S + w, the product's operands registered and the int8
    # conversion in two stages)
    # S = 1: blocks of 3; 5 outputs = a block of 3 and one of 2, whose row 1 waits 3 − 2 = 1:
    # E = t + 7 + 10 + 1, t = 2
    (4, 5, 20),
    # S = 2: blocks of 2; 5 outputs end in a block of 1, whose row 1 waits 3 − 2 = 1 cycle:
    # E = 2 + 7 + 20 + 1
    (2, 5, 30),
    (2, 4, 2 + 7 + 16),
    # S = 4: blocks of 1, a row's next 4 cycles after it: no wait
    (1, 5, 2 + 7 + 40),
])
def test_lin_reads_in_blocks_of_a_narrow_vector_units_passes(lanes, count, complete):
    config = dataclasses.replace(N4, vector_lanes=lanes)
    t = _timeline(f"vector op=lin, count={count}, group=2, gstride={count}\nhalt", config)
    assert (t.issue[0], t.complete[0]) == (2, complete)
    assert t.counters.busy_vector == complete - 2


@pytest.mark.parametrize(("op", "lanes", "complete"), [
    # issued in cycle 2; 5 rows of S = 4 / lanes cycles, then lut's 2 cycles of registered read
    # and a fold's 2 of registered operands and combine (revision 3.3)
    ("lut", 4, 2 + 3 + 5), ("lut", 2, 2 + 3 + 10), ("lut", 1, 2 + 3 + 20),
    ("add", 4, 2 + 3 + 5), ("mul", 1, 2 + 3 + 20),
    ("table", 4, 2 + 1 + 5), ("table", 1, 2 + 1 + 20),
])
def test_lut_and_folds_complete_two_cycles_after_their_reads_and_table_at_once(op, lanes,
                                                                              complete):
    config = dataclasses.replace(N4, vector_lanes=lanes)
    t = _timeline(f"vector op={op}, count=5, ostride=1\nhalt", config)
    assert (t.issue[0], t.complete[0]) == (2, complete)
    assert t.counters.busy_vector == complete - 2


@pytest.mark.parametrize("reads", [True, False])
def test_with_shared_ports_the_vector_unit_takes_turns_with_store_and_acc_loads(reads):
    text = ("load acc, row=0, run=N, count0=2\n"  # 2 rows of 16 bytes at P = 4: E = 2 + 1 + 8
            f"vector op=max, count=2, group=2{', accumulate' if reads else ''}\n"  # E = t + 7
            "store raw, row=0, run=N, count0=1\n"  # 4 beats: E = t + 2 + 4
            "load row=0, run=N\n"                  # to SP, 1 beat: E = t + 2
            "halt")
    own = _timeline(text)
    # The VECTOR beside the ACC LOAD (3 … 8); the SP LOAD wins the port at 11, the STORE at 13.
    assert [own.issue[pc] for pc in range(4)] == [2, 3, 13, 11]
    turns = _timeline(text, dataclasses.replace(N4, vector_shares_ports=1))
    # The VECTOR waits for the ACC LOAD's E = 11 and issues beside the SP LOAD, which uses no
    # accumulator port; the STORE, free of the DRAM port at 13, waits for the VECTOR's E = 18
    # if it reads ACC (its old rows, `accumulate`), else it has the read port to itself.
    store = 18 if reads else 13
    assert [turns.issue[pc] for pc in range(4)] == [2, 11, store, 11]
    assert turns.complete[2] == store + 6
    assert turns.counters.stall_dram_store == own.counters.stall_dram_store


@pytest.mark.parametrize(("fields", "complete"), [
    # issued in cycle 2, 3 outputs of 2 rows: E = 2 + 3 + 6 where the sources' span (rows
    # 20 … 24) misses the outputs (10 … 12) ...
    ("src_acc, src=20", 2 + 3 + 6),
    # ... and 2 cycles more before each output after the first where it meets them (revision
    # 3.3: an output's write lands 2 cycles after the next output's first read): output 2
    # reads row 11, output 1's; from row 12 on, no output reads an earlier one's row, but the
    # span (12 … 16) meets the outputs
    ("src_acc, src=9", 2 + 3 + 6 + 2 * 2),
    ("src_acc, src=12", 2 + 3 + 6 + 2 * 2),
    # int8 sources never meet the accumulator
    ("src=9", 2 + 3 + 6),
])
def test_a_fold_whose_accumulator_sources_meet_its_outputs_waits_for_each_write(fields,
                                                                                complete):
    t = _timeline(f"vector op=add, {fields}, dst=10, count=3, group=2, ostride=1, gstride=2\n"
                  "halt")
    assert (t.issue[0], t.complete[0]) == (2, complete)


def test_a_narrow_vector_unit_takes_n_over_l_cycles_a_source_row():
    t = _timeline("vector op=max, count=3, group=4\nhalt", dataclasses.replace(N4, vector_lanes=2))
    assert t.complete[0] == 2 + 3 + 12 * 2


def test_a_narrow_fetch_port_and_a_small_buffer_pace_the_dispatcher():
    slow = dataclasses.replace(N4, fetch_port_bytes=16, fetch_buffer_words=1)
    t = _timeline("sync unit=exec\nsync unit=exec\nsync unit=exec\nhalt", slow)
    # 4 cycles a word; one slot: word p+1's fetch starts the cycle after word p dispatches
    assert [t.dispatch[pc] for pc in range(4)] == [4, 9, 14, 19]


def test_the_timeline_says_what_each_unit_does_in_a_cycle():
    # What the RTL watchdog's message names (glc/sim/run.py): the STORE waits at pc 1 for the
    # MATMUL's token while EXEC runs pc 0, then runs; before dispatch and after HALT, nothing.
    hw = load_config("n4")
    program = assemble("matmul rows=200, push_next\nstore pop_prev, run=4, count0=1\nhalt\n",
                       hw).instructions()
    timeline = predict(program, hw)
    end = timeline.complete[0]
    assert timeline.at(100) == {"exec": (0, "running"), "store": (1, "waiting")}
    assert timeline.at(end) == {"store": (1, "running")}
    assert timeline.at(0) == {} and timeline.at(timeline.counters.cycles) == {}
