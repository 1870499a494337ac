"""Every shared test program (tests/isa/programs/, glc/isa/cases.py) on the RTL at N = 4 and
N = 16: DRAM bit-identical to the ISA simulator and to numpy, the same error code and instruction
for the faulty ones, and every counter, cycles included, equal to the cycle model's."""

import re
import time

import numpy as np
import pytest
from hwvariants import N4_LANES2, N4_SHARED

from glc.errors import GlcError
from glc.hwconfig import config_from_dict, load_config
from glc.isa import simulator
from glc.isa.asm import assemble
from glc.isa.cases import CASES, build_case
from glc.isa.encoding import Instruction, encode
from glc.isa.gemm import conv2d_program, gemm_program
from glc.isa.status import ErrorCode, MachineError
from glc.sim.run import run_program

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent

GOOD = [name for name, spec in CASES.items() if not isinstance(spec, tuple)]
BAD = [name for name, spec in CASES.items() if isinstance(spec, tuple)]
CONFIGS = ["n4", "n16"]


def assembles_on(name, hw):
    """Whether the shared program ``name`` is legal on ``hw``: `matmul_split`'s split MATMULs
    are ILLEGAL_FIELD without `column_split` (docs/isa.md), and assembling refuses them."""
    return name != "matmul_split" or bool(hw.column_split)


def check_against_model(label, hw, words, dram):
    """Run on the RTL and the ISA simulator; assert equal DRAM and counters (cycles too)."""
    model = simulator.run(words, hw, dram)
    rtl = run_program(hw, words, dram, max_cycles=50 * model.counters.cycles + 1000)
    predicted = model.counters.cycles
    print(f"{label}: RTL {rtl.cycles} cycles, cycle model {predicted} "
          f"({rtl.cycles / predicted - 1:+.2%}), simulated at {rtl.cycles / rtl.run_seconds:,.0f}"
          " cycles/s")
    assert (rtl.error, rtl.timed_out) == (ErrorCode.OK, False)
    np.testing.assert_array_equal(rtl.dram, model.dram)
    assert rtl.counters.as_dict() == model.counters.as_dict()
    return rtl


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", GOOD)
def test_program_on_rtl_matches_isa_simulator(name, config):
    hw = load_config(config)
    case = build_case(name, hw, seed=1)
    rtl = check_against_model(f"{name} at {config}", hw, case.program.words, case.dram)
    for address, expected in case.expected:
        np.testing.assert_array_equal(rtl.dram[address:address + expected.size], expected)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", BAD)
def test_faulty_program_stops_with_its_error_status(name, config):
    hw = load_config(config)
    case = build_case(name, hw)
    start = time.perf_counter()
    rtl = run_program(hw, case.program.words, case.dram, max_cycles=100_000)
    assert time.perf_counter() - start < 30
    assert not rtl.timed_out
    assert (rtl.error, rtl.error_pc) == (case.error, case.error_pc)
    with pytest.raises(MachineError, match=f"{case.error.name} at instruction {case.error_pc}"):
        rtl.raise_for_status()


@pytest.mark.parametrize("hw", [N4_LANES2, N4_SHARED], ids=lambda hw: hw.name)
@pytest.mark.parametrize("name", [name for name in GOOD if name.startswith("vector")])
def test_vector_programs_on_a_vector_unit_of_half_the_lanes(name, hw):
    """n4 with two vector lanes: each source row in two passes, lin in blocks of two outputs
    (a short last one waiting a cycle), with ports of its own or taking turns with STORE and
    LOAD on theirs, every result and cycle as the models say."""
    case = build_case(name, hw, seed=4)
    rtl = check_against_model(f"{name} at {hw.name}", hw, case.program.words, case.dram)
    for address, expected in case.expected:
        np.testing.assert_array_equal(rtl.dram[address:address + expected.size], expected)


def test_shared_programs_on_an_odd_configuration():
    """N = 5, a 3-byte DRAM port, 2-entry queues, a 2-word prefetch buffer filled 24 bytes a
    cycle (3 cycles a word, so the dispatcher starves), a vector unit of one lane (five cycles
    a row) on shared accumulator ports, an array that cannot split (N odd): nothing assumes
    powers of two, N = P, a fetch that keeps up or a vector unit as wide as the array with
    ports of its own."""
    hw = config_from_dict({"array_size": 5, "scratchpad_rows": 1024, "accumulator_rows": 256,
                           "dram_bytes": 65536, "dram_port_bytes": 3, "fetch_buffer_words": 2,
                           "fetch_port_bytes": 24, "queue_depth": 2,
                           "vector_lanes": 1, "vector_shares_ports": 1, "column_split": 0},
                          "odd")
    for name in filter(lambda name: assembles_on(name, hw), GOOD):
        case = build_case(name, hw, seed=2)
        check_against_model(f"{name} at N=5, P=3", hw, case.program.words, case.dram)
    for name in BAD:
        case = build_case(name, hw)
        rtl = run_program(hw, case.program.words, case.dram, max_cycles=100_000)
        assert (rtl.error, rtl.error_pc) == (case.error, case.error_pc), name


def test_a_load_waiting_for_its_accumulator_turn_waits_for_the_port_from_the_next_cycle():
    """On shared accumulator ports a LOAD to ACC waits for the VECTOR in progress (no counter
    charges the turn); a STORE issuing meanwhile holds the DRAM port from the next cycle as the
    LOAD unit sees it, so the LOAD's DRAM stall starts then (it started a cycle early in the
    cycle model, not in the RTL, before 2026-12-07)."""
    text = """
    load   acc, row=0, dram=32, run=N, count0=8, push_next
    matmul sp=200, acc=100, rows=12, pop_prev, push_next
    load   row=0, dram=0, run=N, count0=8, push_vec
    vector src=0, dst=16, count=8, pop_prev
    sync   unit=0
    load   acc, row=32, dram=64, run=N, count0=1
    store  raw, row=0, dram=1024, run=N, count0=8, stride0=4*N, pop_prev
    halt
    """
    words = assemble(text, N4_SHARED).words
    dram = np.zeros(N4_SHARED.dram_bytes, dtype=np.uint8)
    dram[:128] = np.arange(128, dtype=np.uint8)
    rtl = check_against_model("turn then port", N4_SHARED, words, dram)
    # The VECTOR issues at 44 (its token from the SP LOAD, E = 35 + 1 + 8) and completes at
    # 44 + 3 + 8·2 = 63; the STORE's token comes from the MATMUL (35 + 12 + 2·4 − 1 = 54), and
    # it holds the port over [54, 54 + 2 + 32); the last LOAD waits for its turn over
    # [45, 63) and for the port over [55, 88): 33 cycles of DRAM stall.
    assert rtl.counters.stall_dram_load == 33


def test_a_split_matmul_is_an_illegal_field_where_the_array_does_not_split():
    """`split` needs `column_split` (docs/isa.md, MATMUL): on n4-shared, which stands for the
    FPGA configurations, the RTL's decoder refuses it as the ISA simulator does."""
    words = [encode(Instruction.make("sync", unit=1)),
             encode(Instruction.make("matmul", split=1, acc=0, acc2=5, rows=4)),
             encode(Instruction.make("halt"))]
    with pytest.raises(MachineError) as model:
        simulator.run(words, N4_SHARED)
    rtl = run_program(N4_SHARED, words, b"", max_cycles=100_000)
    assert (model.value.code, model.value.pc) == (ErrorCode.ILLEGAL_FIELD, 1)
    assert (rtl.error, rtl.error_pc) == (ErrorCode.ILLEGAL_FIELD, 1)


def test_running_off_the_end_of_dram_is_fetch_range():
    """A program at the top of DRAM without HALT: the word after it cannot be fetched."""
    hw = load_config("n4")
    words = assemble("sync unit=exec\n" * 40, hw).words
    with pytest.raises(MachineError) as model:
        simulator.run(words, hw)
    rtl = run_program(hw, words, b"", max_cycles=100_000)
    assert (rtl.error, rtl.error_pc) == (model.value.code, model.value.pc)
    assert (rtl.error, rtl.error_pc) == (ErrorCode.FETCH_RANGE, len(words))


def test_a_program_longer_than_the_prefetch_buffer_streams_and_runs_past_halt():
    """Twenty-five times the 32-word buffer, HALT in the middle of the image and zeros
    (ILLEGAL_OPCODE if dispatched) behind it: the fetch runs on, the dispatcher stops.  The
    image (865 words, 54 KiB) is sized to n4's 128 KiB DRAM."""
    hw = load_config("n4")
    words = assemble("sync unit=load, push_next\nsync unit=exec, pop_prev\n" * 400 + "halt\n",
                     hw).words + [0] * 64
    assert len(words) > 25 * hw.fetch_buffer_words
    check_against_model("801-word stream at n4", hw, words, b"")


def test_a_256th_token_is_token_overflow():
    hw = load_config("n4")
    words = assemble("sync unit=load, push_next\n" * 256 + "halt\n", hw).words
    with pytest.raises(MachineError) as model:
        simulator.run(words, hw)
    rtl = run_program(hw, words, b"", max_cycles=100_000)
    assert (rtl.error, rtl.error_pc) == (model.value.code, model.value.pc)
    assert (rtl.error, rtl.error_pc) == (ErrorCode.TOKEN_OVERFLOW, 255)


def test_watchdog_stops_a_program_that_does_not_finish_in_time():
    hw = load_config("n4")
    words = assemble("matmul rows=200\n" * 8 + "halt\n", hw).words
    rtl = run_program(hw, words, b"", max_cycles=500)
    assert rtl.timed_out
    assert rtl.cycles <= 500
    with pytest.raises(GlcError, match="watchdog: the program did not finish within 500 cycles"):
        rtl.raise_for_status()
    # Issue 41 item 18: which unit and which pc. Eight MATMULs of 200 rows: EXEC runs the third
    # (pc 2) at cycle 500 (each takes 200 rows and the array's fill), busy all through the
    # last cycles the harness watched, the other units idle.
    assert re.search(r"in its last (\d+) cycles LOAD idle; EXEC busy \1; STORE idle; "
                     r"VECTOR idle", rtl.stuck), rtl.stuck
    assert "at cycle 500 the cycle model has EXEC running at pc 2" in rtl.stuck


@pytest.mark.parametrize(("m", "k", "n_out", "raw", "group", "order", "cap"), [
    (40, 12, 16, False, 1, "auto", 0), (96, 8, 8, True, 1, "auto", 0),
    # Weights in groups (j-outer): of all 3 K tiles; of 2 and of 3 of 6, whose later groups'
    # first steps wait for their group's LOAD and then for their own A slice (40 rows, loaded
    # after the group's LOAD: a MATMUL released by the wrong token would read it unwritten).
    (40, 12, 16, False, 3, "j-outer", 0), (40, 24, 8, True, 2, "j-outer", 0),
    (40, 24, 8, False, 3, "j-outer", 0),
    # Ragged blocks: 3 of 13 rows for M = 37, 3 of 44 in chunks of 11 for M = 130 (the last
    # block overlapping the one before, its rows stored twice), in each order.
    (37, 12, 16, False, 1, "k-outer", 13), (130, 8, 12, True, 1, "j-outer", 50)])
def test_generated_gemm_on_rtl_matches_isa_simulator(m, k, n_out, raw, group, order, cap):
    hw = load_config("n4")
    text, layout = gemm_program(m, k, n_out, hw, raw=raw, relu=not raw, shift=0 if raw else 7,
                                order=order, group=group, block_rows=cap, ragged=bool(cap))
    assert bool(m % layout.block_rows) == bool(cap)
    rng = np.random.default_rng(m)
    dram = np.zeros(hw.dram_bytes, dtype=np.uint8)
    dram[layout.a:layout.b] = rng.integers(0, 256, layout.b - layout.a, dtype=np.uint8)
    dram[layout.b:layout.c] = rng.integers(0, 256, layout.c - layout.b, dtype=np.uint8)
    check_against_model(f"gemm {m}x{k}x{n_out} at n4", hw, assemble(text, hw).words, dram)


def test_generated_conv2d_on_rtl_matches_isa_simulator():
    hw = load_config("n4")
    text, layout = conv2d_program(6, 5, 8, 8, hw, relu=True, shift=6)
    dram = np.zeros(hw.dram_bytes, dtype=np.uint8)
    dram[layout.a:layout.c] = np.random.default_rng(3).integers(0, 256, layout.c - layout.a,
                                                                 dtype=np.uint8)
    check_against_model("conv2d 6x5x8->8 at n4", hw, assemble(text, hw).words, dram)


def test_gemm_256_cubed_streams_at_full_efficiency_on_n16():
    hw = load_config("n16")
    text, layout = gemm_program(256, 256, 256, hw, shift=8)
    rng = np.random.default_rng(0)
    dram = np.zeros(hw.dram_bytes, dtype=np.uint8)
    dram[layout.a:layout.c] = rng.integers(0, 256, layout.c - layout.a, dtype=np.uint8)
    rtl = check_against_model("gemm 256^3 at n16", hw, assemble(text, hw).words, dram)
    ideal = 256 ** 3 // 16 ** 2
    print(f"gemm 256^3 at n16: efficiency {ideal / rtl.cycles:.4f}")
    assert ideal / rtl.cycles >= 0.95
