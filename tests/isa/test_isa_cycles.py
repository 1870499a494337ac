"""The cycle model against timings worked out by hand from docs/isa.md ("Timing"), and the
256×256×256 GEMM against the ideal."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from isa_cycle_reference import reference_schedule

from glc.hwconfig import load_config
from glc.isa.asm import assemble
from glc.isa.cycles import predict, schedule
from glc.isa.encoding import Instruction
from glc.isa.fields import UNIT_FLAGS
from glc.isa.gemm import gemm_program
from glc.isa.status import ErrorCode, MachineError

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
    # load 0: issues d+1 = 1, 8 beats -> E = 1 + 1 + 8 = 10; load 1: 10 .. 10 + 1 + 4 = 15;
    # preload at 15 (its token), E = 19; matmul at 19, E = 19 + 8 + 2·4 − 1 = 34;
    # store at 34: 8 rows of 16 bytes = 32 beats, E = 34 + 1 + 32 = 67.
    assert [t.issue[pc] for pc in range(5)] == [1, 10, 15, 19, 34]
    assert [t.complete[pc] for pc in range(5)] == [10, 15, 19, 34, 67]
    c = t.counters
    assert (c.cycles, c.busy_load, c.busy_exec, c.busy_store) == (67, 14, 8, 33)
    # preload waits from 3 (dispatched in 2) to 15; the store from 5 to 34
    assert (c.stall_token_exec, c.stall_token_store) == (12, 29)
    assert c.macs == 16 * 8


@pytest.mark.parametrize(("rows", "issues", "cycles"), [
    # second preload: after the first swap has spread (5 + N = 9), done at 13;
    # 12 rows >= 2N: the second matmul follows the first one's rows without a bubble (5 + 12)
    (12, [1, 5, 9, 17], 17 + 12 + 7),
    # 4 rows < 2N: it waits for the preload (13)
    (4, [1, 5, 9, 13], 13 + 4 + 7),
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
    # load 0 holds the port for [1, 6); at 6 load 2 and the store both could go: the load wins
    # ([6, 9)), the store goes at 9 and takes 1 + 4 beats.
    assert [t.issue[pc] for pc in range(3)] == [1, 9, 6]
    assert t.counters.cycles == 14
    assert (t.counters.stall_dram_store, t.counters.stall_dram_load) == (7, 0)
    assert (t.counters.busy_load, t.counters.busy_store) == (8, 5)


def test_a_full_queue_stalls_the_dispatcher():
    shallow = dataclasses.replace(N4, queue_depth=1)
    t = _timeline("""
    load row=0, run=N, count0=8, stride0=N
    load row=0, run=N, count0=1
    sync unit=exec
    load row=0, run=N, count0=1
    halt
    """, shallow)
    # instruction 1 waits for a slot: load 0 issues in 1, so 1 dispatches in 2; instruction 3
    # waits for instruction 1 to issue (10, when load 0 completes) and dispatches in 11.
    assert [t.dispatch[pc] for pc in range(5)] == [0, 2, 3, 11, 12]
    assert [t.complete[pc] for pc in range(4)] == [10, 12, 5, 14]
    assert t.counters.cycles == 14


def test_a_dispatcher_stuck_behind_a_blocked_queue_is_a_deadlock():
    shallow = dataclasses.replace(N4, queue_depth=1)
    program = assemble("load row=0, run=N, pop_next\nload row=0, run=N\nhalt", shallow)
    t = schedule(program.instructions(), shallow)
    assert (t.error.code, t.error.pc, t.error_cycle) == (ErrorCode.DEADLOCK, 0, 1)
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


@st.composite
def _programs(draw):
    """Short random programs over every opcode and flag (faults and deadlocks included)."""
    program = []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["load", "store", "preload", "matmul", "sync"]))
        if kind == "sync":
            unit = draw(st.integers(0, 2))
            legal = UNIT_FLAGS[("load", "exec", "store")[unit]]
            flags = {f: 1 for f in legal if draw(st.booleans())}
            program.append(Instruction.make("sync", unit=unit, **flags))
            continue
        unit = {"load": "load", "store": "store"}.get(kind, "exec")
        flags = {f: 1 for f in UNIT_FLAGS[unit] if draw(st.integers(0, 3)) == 0}
        if kind in ("load", "store"):
            wide = "acc" if kind == "load" else "raw"
            fields = {wide: draw(st.integers(0, 1)), "run": draw(st.integers(1, 4)),
                      "count0": draw(st.integers(1, 5)), "count2": draw(st.integers(1, 2))}
        elif kind == "matmul":
            fields = {"rows": draw(st.integers(1, 12))}
        else:
            fields = {}
        program.append(Instruction.make(kind, **flags, **fields))
    return [*program, Instruction.make("halt")]


@settings(max_examples=300, deadline=None)
@given(_programs(), st.integers(1, 3), st.sampled_from([1, 4, 6]))
def test_event_model_equals_a_cycle_by_cycle_reading_of_the_rules(program, depth, port):
    config = dataclasses.replace(N4, queue_depth=depth, dram_port_bytes=port)
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
