"""glc/isa/races.py: accesses of a local row by two units that no token orders. A hand-written
LOAD and MATMUL over the same rows race without a token and not with one; every GEMM schedule
gemm.py emits over a grid of shapes, orders, blocks, splits, spreads and groups is race-free on
the cycle model's timeline — the check that finds issue 37's split schedule (three weight
buffers with two output tiles: a block's next A slice loaded over rows its second tile still
read), which computed the right numbers on some timings."""

from __future__ import annotations

import itertools

import pytest

from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.isa.asm import assemble
from glc.isa.cycles import predict
from glc.isa.gemm import gemm_program
from glc.isa.gemm_plan import GemmLayout, step_plan
from glc.isa.races import races

N4 = load_config("n4")


def _races(text: str, config=N4):
    program = assemble(text, config).instructions()
    return races(program, predict(program, config), config)


def test_a_matmul_over_rows_a_load_writes_races_without_a_token():
    found = _races("load run=4, count0=4, stride0=4\nmatmul rows=4\nhalt")
    assert [(r.memory, r.unit, r.other) for r in found] == [("scratchpad", "exec", "load")] * 1
    assert _races("load run=4, count0=4, stride0=4, push_next\nmatmul rows=4, pop_prev\n"
                  "halt") == []


def test_a_load_over_rows_a_matmul_still_reads_races():
    """The shape of issue 37's fault: the LOAD waits for a token, but from the MATMUL before
    the one reading its rows."""
    text = ("load run=4, count0=8, stride0=4, push_next\n"
            "matmul rows=4, pop_prev, push_prev\n"
            "matmul sp=4, rows=4\n"
            "load run=4, row=4, dram=64, count0=4, stride0=4, pop_next\n"
            "halt")
    found = _races(text)
    assert found and found[0].memory == "scratchpad" and found[0].row == 4
    assert {found[0].unit, found[0].other} == {"load", "exec"}


SHAPES = [(m, k, n_out) for m in (9, 40, 130) for k in (4, 8, 12) for n_out in (4, 8, 12, 16)]


@pytest.mark.parametrize(("m", "k", "n_out"), SHAPES)
def test_every_gemm_schedule_is_race_free(m, k, n_out):
    for order, cap, split, spread, group in itertools.product(
            ("k-outer", "j-outer"), (0, 8), (False, True), (False, True), (1, 2)):
        if (group > 1 and (order != "j-outer" or split)) or (spread and order != "k-outer"):
            continue
        try:
            text, _ = gemm_program(m, k, n_out, N4, shift=3, order=order, block_rows=cap,
                                   ragged=bool(cap), split=split, spread=spread, group=group)
        except GlcError:
            continue  # a plan the memories do not hold
        assert _races(text) == [], (order, cap, split, spread, group)


def test_the_split_schedule_of_issue_37_is_race_free_at_n16():
    n16 = load_config("n16")
    text, layout = gemm_program(504, 48, 32, n16, shift=8, order="k-outer", block_rows=252,
                                split=True)
    assert layout.split and layout.weight_buffers == 2
    assert _races(text, n16) == []


def test_a_slice_loaded_before_its_buffer_is_free_is_refused():
    """Three weight buffers for two output tiles of a split last K tile: step_plan says so
    rather than load the slice anyway."""
    layout = GemmLayout(a=0, b=0, c=0, order="k-outer", block_rows=8, chunks=1,
                        weight_buffers=3, acc_slots=2, split=True)
    with pytest.raises(GlcError, match="needed at step"):
        step_plan(16, 12, 8, 4, layout)
