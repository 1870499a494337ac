"""The analytic tile-level model (glc/cost/) against the instruction-level cycle model
(glc/isa/cycles.py): within 2 % on every kernel the lowering builds (issue 10)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from glc.compiler import compile_program
from glc.cost import kernel as cost_kernel
from glc.cost import sampling, steps
from glc.cost.kernel import Estimate, estimate
from glc.cost.pipeline import DMA, EX2ST, EXEC, LD2EX, LOAD, MATMUL, PRELOAD, STORE, Op, run
from glc.cost.tiles import NO_TABLE
from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.inputs import load
from glc.isa.cycles import predict
from glc.isa.gemm_plan import MatrixRows, plan
from glc.lower import kernel as lower_kernel
from glc.lower.kernel import build_kernel, kernel_estimate
from glc.lower.table import StoreTable
from glc.lower.tiling import shape
from glc.lower.transfer import Target
from glc.lower.view import Digit, View, row_major
from glc.rewrites import DEFAULT, select

PROGRAMS = Path(__file__).parents[2] / "programs"
TOLERANCE = 0.02
# Corpus programs with systolic kernels, on both shipped configurations (the two largest on n16
# only: on n4 they are hundreds of thousands of instructions to model).
SMALL = ("attention-qkt-int8", "mlp-int8", "cnn-int8", "dense-bias-int8", "dense-int8",
         "matmul-int8", "conv1d-int8", "conv2d-nchw-int8", "conv2d-nhwc-hwio-int8",
         "conv2d-stride2-asym-int8")
CASES = [(name, "n16") for name in ("gemm256-int8", "conv2d-nhwc64-int8", *SMALL)] + \
    [(name, "n4") for name in SMALL]


def _close(estimated: int, real: int) -> bool:
    return abs(estimated - real) <= TOLERANCE * real


@pytest.mark.parametrize("name,config_name", CASES)
def test_the_estimate_of_every_corpus_kernel_is_within_2_percent(name, config_name):
    config = load_config(config_name)
    try:
        lowered = compile_program(load(PROGRAMS / name), rules=select(DEFAULT, config.array_size),
                                  config=config).lowered
    except GlcError as error:  # too large for n4's memories: nothing to compare
        pytest.skip(str(error))
    kernels = [s.kernel for s in lowered.kernels if s.kernel.kind == "matmul"]
    assert kernels
    for kernel in kernels:
        real = kernel.predicted_cycles(config)
        assert _close(kernel.estimated, real), (kernel.estimated, real)


def _gemm(m: int, k: int, n_out: int, esize: int = 1) -> tuple[Target, Target, Target]:
    """A, B and C of a row-major GEMM, laid out one after the other from address 0 (C's
    elements ``esize`` bytes)."""
    return (Target(row_major("a", (m, k)), 0, 1), Target(row_major("b", (k, n_out)), m * k, 1),
            Target(row_major("c", (m, n_out)), m * k + k * n_out, esize))


def _fresh(a: Target, b: Target, c: Target, raw: bool, relu: bool, shift: int, config,
           orders: tuple[str, ...]) -> Estimate:
    """The analytic estimate of C = A·B over ``orders``, its memo cleared first (a test
    changes the sampling between two of them)."""
    tiling = shape(a, b, config.array_size)
    cost_kernel.forget()
    return estimate(tiling.a, tiling.b, c, raw, relu, shift, config, tiling.k_tiles,
                    tiling.o_tiles, orders)


# (M, K, Nout, raw, bias): tall, wide, a GEMV, a bias (per output column, added by the
# STOREs from the kernel's table), requantized output.
SHAPES = [(256, 128, 64, True, False), (32, 512, 256, False, False), (1, 1024, 256, True, False),
          (128, 64, 512, False, False), (64, 128, 128, True, True), (100, 48, 80, False, False)]


@pytest.mark.parametrize("m,k,n_out,raw,bias", SHAPES)
def test_the_estimate_of_a_gemm_in_either_order_is_within_2_percent(m, k, n_out, raw, bias):
    config = load_config("n16")
    a, b, c = _gemm(m, k, n_out, 4 if raw else 1)
    vector = View("bias", 0, ((Digit(m, 0, ()),), (Digit(n_out, 1, ()),)), ())

    def table() -> StoreTable | None:
        found = StoreTable(None, 0, Target(vector, 1 << 20, 4)) if bias else None
        if found is not None:
            found.check()
        return found

    cost = table().cost if bias else NO_TABLE
    for order in ("k-outer", "j-outer"):
        kernel = build_kernel("t", a, b, c, raw, False, 3 * (not raw), config, order,
                              table=table())
        real = predict(kernel.instructions, config).counters.cycles
        estimate = kernel_estimate(a, b, c, raw, False, 3 * (not raw), config, table=cost)
        chosen = build_kernel("t", a, b, c, raw, False, 3 * (not raw), config, estimate.order,
                              table=table())
        assert _close(estimate.cycles, predict(chosen.instructions, config).counters.cycles)
        assert estimate.cycles <= real * (1 + TOLERANCE)  # the faster order was kept


def test_tile_operations_follow_the_tokens_and_the_port():
    config = load_config("n4")
    # A LOAD of 2 instructions and 6 beats (ends at 1 + 8), a PRELOAD (N = 4 cycles) whose
    # MATMUL of 8 rows swaps one cycle after it issues (ISA revision 2.6; drain 2N - 1), a
    # STORE of 1 instruction and 8 beats after it.
    ops = [Op(LOAD, DMA, 2, 6, pushes=(LD2EX,)),
           Op(EXEC, PRELOAD, 1, 4, pops=(LD2EX,)),
           Op(EXEC, MATMUL, 1, 8, pushes=(EX2ST,)),
           Op(STORE, DMA, 1, 8, pops=(EX2ST,))]
    load_end = 2 + 2 + 6  # dispatched in cycle 1, issues in 2
    matmul_end = load_end + 1 + 8 + 7
    assert run(ops, config) == matmul_end + 1 + 8


def _dense(x: str, w: str, in_out: bool) -> str:
    weights = f"(access-transpose (access-tensor {w}) (list 1 0))" if in_out \
        else f"(access-tensor {w})"
    return f"(compute dot-product (access-cartesian-product (access {x} 1) (access {weights} 1)))"


def _nchw_conv(size: int, cin: int, cout: int, k: int, stride: int, pad: int) -> str:
    return f"""(input data (shape 1 {cin} {size} {size}) int8)
(input weights (shape {cout} {cin} {k} {k}) int8)
(compute (requantize 8) (access-transpose (compute dot-product (access-cartesian-product
 (access (access-tensor weights) 1)
 (access (access-squeeze (access-windows (access (access-pad (access-pad (access-tensor data)
   zero-padding 2 {pad} {pad}) zero-padding 3 {pad} {pad}) 1)
  (shape {cin} {k} {k}) (shape 1 {stride} {stride})) 1) 3))) (list 1 0 2 3)))
"""


def _nhwc_conv(size: int, cin: int, cout: int, k: int, stride: int, pad: int) -> str:
    return f"""(input data (shape 1 {size} {size} {cin}) int8)
(input weights (shape {k} {k} {cin} {cout}) int8)
(compute (requantize 8) (access-transpose (compute dot-product (access-cartesian-product
 (access (access-transpose (access-tensor weights) (list 3 2 0 1)) 1)
 (access (access-squeeze (access-windows (access (access-transpose (access-pad (access-pad
   (access-tensor data) zero-padding 1 {pad} {pad}) zero-padding 2 {pad} {pad}) (list 0 3 1 2)) 1)
  (shape {cin} {k} {k}) (shape 1 {stride} {stride})) 1) 3))) (list 1 2 3 0)))
"""


# Layers whose operands are not row-major in the product's sense (issue 9, item 3): weights
# stored in x out, an NCHW 3x3 convolution, a 7x7/2 stem with 3 channels, at bounded sizes.
LAYERS = {
    "dense-in-out": "(input x (shape 64 128) int8)\n(input w (shape 128 256) int8)\n"
                    + _dense("(access-tensor x)", "w", True),
    "nchw-3x3": _nchw_conv(16, 32, 32, 3, 1, 1),
    "stem-7x7s2": _nchw_conv(32, 3, 32, 7, 2, 3),
    # One output pixel, 745 K tiles in one block: extrapolated from 2 and 3 K tiles, 13.9 %
    # high, before the K tiles of one block were sampled in runs of 12 and 18.
    "nchw-7x7s3-one-pixel": _nchw_conv(8, 243, 64, 7, 3, 0),
    # K tiles of three kinds (a channel's 9 taps in tiles of 16): -2.8 % when extrapolated
    # from the first tiles alone, before the middle tiles were costed per kind (_k_runs).
    "nchw-3x3s3": _nchw_conv(39, 227, 19, 3, 3, 1),
    # Output tiles of a period of three kinds (39 pixels a row: 16, 16, 7): −43 % when
    # extrapolated from runs of 2 and 3 tiles, so the search chose a schedule 1.8× slower,
    # before blocks and output tiles were sampled in whole periods (_periodic_runs).
    "nhwc-5x5-2-channels": _nhwc_conv(39, 2, 172, 5, 1, 2),
}


@pytest.mark.parametrize("layer", [_nchw_conv(64, 3, 64, 7, 2, 3), _nhwc_conv(39, 2, 172, 5, 1, 2),
                                   _nchw_conv(39, 227, 19, 3, 3, 1)])
def test_the_weights_port_cycles_sampled_are_those_of_every_weight_tile(layer, tmp_path,
                                                                        monkeypatch):
    """sampling.weight_port sums the set-up cycles and beats of every weight tile from samples
    of K tiles (per kind) and output tiles (in whole periods): on a stem's im2col image (64
    output tiles), an NHWC image of 39-pixel rows (a period of 3) and K tiles of three kinds,
    the sums over every tile of every kernel the search costs."""
    (tmp_path / "layer.gls").write_text(layer)
    calls = []
    weight_port = cost_kernel.weight_port
    monkeypatch.setattr(cost_kernel, "weight_port",
                        lambda tiles: calls.append((tiles, weight_port(tiles))) or calls[-1][1])
    config = load_config("n16")
    compile_program(load(tmp_path), rules=select(DEFAULT, config.array_size), config=config)
    assert any(len(t.k_tiles) > sampling.LONG or len(t.o_tiles) > sampling.LONG
               for t, _ in calls)
    for tiles, (set_up, beats) in calls:
        costs = [tiles.load_b(kk, j) for kk in range(len(tiles.k_tiles))
                 for j in range(len(tiles.o_tiles))]
        assert round(set_up) == sum(c[0] for c in costs)
        assert round(beats) == sum(sum(b for b, _ in c[3]) if c[3] else c[1] for c in costs)


def _searched(tmp_path, monkeypatch, layer: str) -> list[tuple]:
    """The arguments of every kernel estimate the search makes compiling ``layer`` on n16."""
    (tmp_path / "layer.gls").write_text(layer)
    calls = []
    estimate_of = lower_kernel.estimate
    monkeypatch.setattr(lower_kernel, "estimate",
                        lambda *args, **kw: calls.append(args) or estimate_of(*args, **kw))
    config = load_config("n16")
    compile_program(load(tmp_path), rules=select(DEFAULT, config.array_size), config=config)
    return calls


def _sampled_and_whole(monkeypatch, args: tuple, order: str, rows: int) -> tuple[int, int]:
    """The estimate of one order and block cap for ``args``, sampled and run whole."""
    def cycles() -> int:
        cost_kernel.forget()
        return estimate(*args[:9], orders=(order,), block_rows=rows).cycles

    steps = sampling.WHOLE
    sampled = cycles()
    monkeypatch.setattr(sampling, "WHOLE", 1 << 40)
    whole = cycles()
    monkeypatch.setattr(sampling, "WHOLE", steps)
    return sampled, whole


def test_blocks_whose_kinds_repeat_are_sampled_in_whole_periods(tmp_path, monkeypatch):
    """An NCHW 3×3 conv of 64 channels at 56×56, the pixels as A rows: blocks of 98 and 49
    rows cut the image's 56-pixel rows at offsets that repeat every 4 and 8 blocks, so the
    blocks' A slices move differently; from runs of 2 and 3 blocks a k-outer plan came out up
    to 15 % above its whole run. Sampled in whole periods (KernelTiles.block_period), every
    such candidate the search estimates equals its whole run."""
    calls = _searched(tmp_path, monkeypatch, _nchw_conv(56, 64, 64, 3, 1, 1))
    pixels = [args for args in calls if args[0][0].view.dims[0] == 56 * 56]
    assert pixels
    for args in pixels:
        for rows in (98, 49):
            sampled, whole = _sampled_and_whole(monkeypatch, args, "k-outer", rows)
            assert abs(sampled - whole) <= 0.001 * whole, (rows, sampled, whole)


@pytest.mark.parametrize("cin,cout,rows", [(256, 64, 64), (24, 144, 18)])
def test_output_tiles_are_sampled_across_the_accumulator_banks(tmp_path, monkeypatch, cin, cout,
                                                              rows):
    """NCHW 1×1 convs at 56×56 (256→64, and 24→144 whose one-row last K tile splits its
    MATMULs), the image as B: j-outer's output tiles alternate between the accumulator's even
    and odd banks, so runs one tile (one pair) apart put the layer suite's candidates of these
    convs up to 2.1 % high and 4.4 % low (this compile's 24→144 ones 4.4 %); runs two tiles
    (two pairs) apart give every candidate its whole run's cycles."""
    calls = _searched(tmp_path, monkeypatch, _nchw_conv(56, cin, cout, 1, 1, 0))
    image = [args for args in calls if args[1][0].view.dims[-1] == 56 * 56]
    assert image
    for args in image:
        sampled, whole = _sampled_and_whole(monkeypatch, args, "j-outer", rows)
        assert abs(sampled - whole) <= 0.002 * whole, (sampled, whole)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_the_estimate_of_each_searched_layer_schedule_is_within_2_percent(name, tmp_path):
    (tmp_path / f"{name}.gls").write_text(LAYERS[name])
    config = load_config("n16")
    lowered = compile_program(load(tmp_path), rules=select(DEFAULT, config.array_size),
                              config=config).lowered
    kernels = [s.kernel for s in lowered.kernels]
    assert kernels
    for kernel in kernels:
        assert _close(kernel.estimated, kernel.predicted_cycles(config)), \
            (kernel.estimated, kernel.predicted_cycles(config))


def test_a_large_gemm_is_estimated_from_a_sample_as_if_run_whole(monkeypatch):
    """512x256x512: more steps than the model runs whole, so it is extrapolated from samples
    of its blocks, K tiles and output tiles (glc/cost/sampling.py, extrapolated): the same
    figure as the whole run to 0.2 %, and each order's within 0.2 % of the instruction level
    (k-outer's whole run was 2.1 % low while the model took the queues as deep enough, its
    sample equal to it; with the dispatcher's queues the whole run is exact and the sample
    0.11 % off it: the output tiles' runs of 12 and 18 average a per-tile cost that now
    repeats every 12)."""
    config = load_config("n16")
    m, k, n_out = 512, 256, 512
    a, b, c = _gemm(m, k, n_out, 4)

    def cycles(order: str) -> int:
        return _fresh(a, b, c, True, False, 0, config, (order,)).cycles

    sampled = {order: cycles(order) for order in ("k-outer", "j-outer")}
    monkeypatch.setattr(sampling, "WHOLE", 1 << 30)
    for order, figure in sampled.items():
        assert abs(figure - cycles(order)) <= 0.002 * figure, order
        kernel = build_kernel("t", a, b, c, True, False, 0, config, order)
        exact = predict(kernel.instructions, config).counters.cycles
        assert abs(figure - exact) <= 0.002 * exact, order


@pytest.mark.parametrize("column_split", [0, 1])
@pytest.mark.parametrize("k", [2, 8])
def test_output_tiles_of_few_steps_are_sampled_as_if_run_whole(monkeypatch, k, column_split):
    """j-outer over 273 output tiles of one or two K tiles (a 1×1 conv of 2 or 8 channels,
    NCHW, its 24 filters streamed, at n4): a run of 2 or 3 tiles is a few steps, short of the
    pipeline's steady state (7–43 % off); runs of at least J_STEPS steps give the whole run's
    figure to 0.2 %, with split MATMULs (K = 2) and without."""
    config = replace(load_config("n4"), column_split=column_split)
    m, n_out = 24, 1092
    a, b, c = _gemm(m, k, n_out)
    sampled = _fresh(a, b, c, False, True, 7, config, ("j-outer",)).cycles
    monkeypatch.setattr(sampling, "WHOLE", 1 << 30)
    assert abs(sampled - _fresh(a, b, c, False, True, 7, config, ("j-outer",)).cycles) <= \
        0.002 * sampled


# (M, K, Nout, config, plans skipped): kernels whose plans differ in blocks (many blocks reload
# every weight), in split MATMULs (n4's last K tile of one row) and in orders.
BOUNDED = [(64, 147, 2048, "n16", 4), (196, 256, 1024, "n16", 0), (3136, 24, 144, "n16", 2),
           (128, 768, 768, "n16", 0), (24, 9, 1092, "n4", 1), (100, 48, 80, "n4", 2)]


@pytest.mark.parametrize("m,k,n_out,config_name,skips", BOUNDED)
def test_plans_a_bound_rules_out_are_no_faster_and_the_search_picks_as_without_it(
        monkeypatch, m, k, n_out, config_name, skips):
    """_estimate costs plans in order of a lower bound and skips those it shows cannot win:
    the bound of the chosen plan's kernel is at most its instruction-level cycles (the bound
    is one on the machine, not only the model), the plans skipped are those expected, and
    the search picks what costing every plan (its extrapolated cycles held to its bound)
    picks."""
    config = load_config(config_name)
    a, b, c = _gemm(m, k, n_out)
    tiling = shape(a, b, config.array_size)
    costed, bounds, seen = [], [], []
    extrapolated, bound = cost_kernel.extrapolated, cost_kernel._bound
    monkeypatch.setattr(cost_kernel, "extrapolated",
                        lambda *args: seen.append(args[4]) or
                        costed.append((args[3], extrapolated(*args))) or costed[-1][1])
    monkeypatch.setattr(cost_kernel, "_bound",
                        lambda *args: bounds.append((args[3], bound(*args))) or bounds[-1][1])

    def search():
        cost_kernel.forget()
        return estimate(tiling.a, tiling.b, c, False, True, 7, config, tiling.k_tiles,
                        tiling.o_tiles)

    pruned = search()
    skipped = len(bounds) - len(costed)
    every = [(max(extrapolated(m, len(tiling.k_tiles), len(tiling.o_tiles), layout, seen[0],
                               config), low), index, layout)
             for index, (layout, low) in enumerate(bounds)]
    cycles, _, layout = min(every, key=lambda plan: plan[:2])
    assert (pruned.cycles, pruned.order, pruned.block_rows, pruned.group, pruned.split,
            pruned.spread) == (cycles, layout.order, layout.block_rows, layout.weight_group,
                               layout.split, layout.spread)
    chosen = build_kernel("t", a, b, c, False, True, 7, config, pruned.order,
                          block_rows=pruned.block_rows, group=pruned.group, split=pruned.split)
    assert dict(bounds)[layout] <= predict(chosen.instructions, config).counters.cycles
    assert skipped == skips


def _reference_run(ops, config) -> int:
    """docs/isa.md's timing over tile operations, every unit's candidate recomputed at every
    step and no periods skipped: what pipeline.run must give. The dispatcher hands out an
    instruction a cycle in program order into its unit's queue of ``queue_depth`` entries,
    an entry freed by its instruction's issue (a DMA's instructions issuing evenly over its
    hold of the port)."""
    n, depth = config.array_size, config.queue_depth
    ops = [one for op in ops for one in _instructions(op)]
    queues = [[], [], [], []]
    for op in ops:
        queues[op[0]].append(op[1:7])
    ready = [[], [], [], []]  # per unit, per dispatched operation: its earliest issue
    issued = [[], [], [], []]  # per unit, each instruction's issue cycle
    queued, state = [0] * 4, {"next": 0, "out": 0, "cycle": 0}

    def dispatch():
        while state["next"] < len(ops):
            unit, count = ops[state["next"]][0], ops[state["next"]][2]
            while state["out"] < count:
                k = queued[unit] - depth
                if k >= len(issued[unit]):
                    return
                state["cycle"] = max(state["cycle"] + 1, issued[unit][k] + 1 if k >= 0 else 0)
                if state["out"] == 0:
                    ready[unit].append(state["cycle"] + 1)
                state["out"] += 1
                queued[unit] += 1
            if count == 0:
                ready[unit].append(state["cycle"] + 2)
            state["next"], state["out"] = state["next"] + 1, 0

    heads, free, pushed, popped = [0] * 4, [0] * 4, [[] for _ in range(4)], [0] * 4
    consumer = {c: op[0] for op in ops for c in op[4]}
    port = exec_next = stream = preload_done = last = 0
    for _ in ops:
        dispatch()
        cands = []
        for unit, queue in enumerate(queues):
            if heads[unit] == len(ready[unit]):
                continue
            kind, _, _, pops, _, _ = queue[heads[unit]]
            if any(popped[c] >= len(pushed[c]) for c in pops):
                continue
            t = max([ready[unit][heads[unit]], free[unit],
                     *(sorted(pushed[c])[popped[c]] for c in pops)])
            t = max(t, port) if kind == DMA else max(t, exec_next, stream) if kind == MATMUL \
                else max(t, exec_next, preload_done) if kind == PRELOAD else max(t, exec_next)
            cands.append((t, unit))
        t, unit = min(cands)
        kind, instructions, length, pops, pushes, tail = queues[unit][heads[unit]]
        heads[unit] += 1
        for c in pops:
            popped[c] += 1
        if kind == DMA:
            issued[unit] += [t + j * (instructions + length) // instructions
                             for j in range(instructions)]
            port = t + instructions + length
            end = free[unit] = port + tail
        else:
            issued[unit].append(t)
            if kind == MATMUL:
                exec_next, stream, end = t + 1, t + length, t + length + 2 * n - 1
            elif kind == PRELOAD:
                exec_next, end = t + 1, t + n
                preload_done = end
            else:  # SYNC
                exec_next = end = t + 1
        for c in pushes:
            if c in consumer:
                pushed[c].append(end)
        last = max(last, end)
    return max(last, state["cycle"] + 1)  # HALT dispatches after the last instruction


def _instructions(op) -> list[tuple]:
    """A DMA with gaps as an operation per instruction (its pops on the first, its pushes on
    the last), any other operation as it is."""
    gaps = op[7] if len(op) > 7 else ()
    if not gaps:
        return [op]
    last = len(gaps) - 1
    return [(op[0], DMA, 1, moved, op[4] if i == 0 else (), op[5] if i == last else (), tail)
            for i, (moved, tail) in enumerate(gaps)]


@pytest.mark.parametrize("seed", range(6))
def test_the_array_run_ahead_of_the_dmas_gives_the_cycles_of_the_event_loop(seed):
    """pipeline.run advances the array as far as the pushes it pops are known, then the DMA
    that can issue first: on gemm.py's programs of both orders, with random tile costs (the
    DMAs hidden behind the array, or the array waiting on them), it gives the cycles of the
    event loop over the units in cycle order, with the dispatcher held by full queues (of
    2 and of 8 entries). Half the tiles of several instructions leave
    the port between them (``Dma.gaps``: run takes them whole unless the other unit takes
    a gap, the reference an operation per instruction), and the programs include split
    MATMULs' (the last K tile's output tiles in pairs)."""
    rng = np.random.default_rng(seed)
    config = load_config("n16")
    canonical = replace(config, dram_bytes=1 << 32)
    beats = (8, 64) if seed < 2 else (64, 400) if seed < 4 else (8, 400)

    def cost():
        count = int(rng.integers(1, 4))
        moved = [int(rng.integers(*beats)) for _ in range(count)]
        tails = [int(rng.integers(0, 20)) for _ in range(count)]
        gaps = tuple(zip(moved, tails, strict=True)) if count > 1 and rng.random() < 0.5 else ()
        return count, sum(moved) + sum(tails[:-1]), tails[-1], gaps

    for m, k, n_out, order, split, cap in (
            (64, 256, 512, "k-outer", False, 0), (192, 512, 128, "k-outer", False, 0),
            (128, 256, 256, "j-outer", False, 0), (48, 128, 768, "j-outer", False, 0),
            (64, 128, 144, "k-outer", True, 0), (96, 32, 144, "j-outer", True, 0),
            (192, 16, 144, "k-outer", True, 32)):  # a K of one tile: each step waits twice
        layout = plan(m, k, n_out, canonical, MatrixRows(k), order, True, cap, split=split)
        program = steps.tile_program(m, k, n_out, 16, layout, bool(seed % 2))
        ops = program.instantiate([cost() for _ in program.tiles])
        for depth in (2, 8):  # the queues of n16, and queues the dispatcher often fills
            deep = replace(config, queue_depth=depth)
            assert run(ops, deep) == _reference_run(ops, deep), (m, k, n_out, order, depth)


@pytest.mark.parametrize("n_out", [1299, 1283])
def test_grouped_output_tiles_are_sampled_in_whole_pairs(monkeypatch, n_out):
    """A 9×156×1299 GEMM (82 output tiles, an even count) and 9×156×1283 (81, odd), j-outer
    with its 10 K tiles' weights one LOAD a group: groups alternate in pairs, so the runs of
    output tiles have the dim's parity and differ by a pair (runs of 3 and 5 put the even one
    1.85 % above its whole run): the sample equals the whole run, which equals the
    instruction level."""
    config = load_config("n16")
    m, k = 9, 156
    a, b, c = _gemm(m, k, n_out)
    tiling = shape(a, b, config.array_size)
    sampled = _fresh(a, b, c, False, False, 7, config, ("j-outer",))
    assert sampled.group == len(tiling.k_tiles) and len(tiling.o_tiles) > sampling.WHOLE // 10
    monkeypatch.setattr(sampling, "WHOLE", 1 << 30)
    assert _fresh(a, b, c, False, False, 7, config, ("j-outer",)).cycles == sampled.cycles
    kernel = build_kernel("t", a, b, c, False, False, 7, config, "j-outer", group=sampled.group)
    assert predict(kernel.instructions, config).counters.cycles == sampled.cycles


def _grouped_candidates(tmp_path, monkeypatch, layer: str) -> list[tuple[tuple, dict]]:
    """The arguments of every ``kernel_estimate`` compiling ``layer`` on n16 makes, with the
    search's plans cut to the grouped ones from then on (an estimate with none raises)."""
    (tmp_path / "layer.gls").write_text(layer)
    calls = []
    searched = lower_kernel.kernel_estimate
    monkeypatch.setattr("glc.lower.schedule.kernel_estimate",
                        lambda *args, **kw: calls.append((args, kw)) or searched(*args, **kw))
    config = load_config("n16")
    compile_program(load(tmp_path), rules=select(DEFAULT, config.array_size), config=config)
    monkeypatch.undo()
    planned = cost_kernel.plan
    monkeypatch.setattr(cost_kernel, "plan", lambda *args: planned(*args) if args[8] > 1 else None)
    return calls


def test_grouped_transposing_weight_loads_leave_the_port_while_they_drain(tmp_path,
                                                                         monkeypatch):
    """An NHWC 5×5 conv of 3 channels into 56 at 61×61, its image B loaded transposed in
    groups of three K tiles of 15 rows (one LOAD a tile: rows short of N are not joined):
    between them each drains its last block with the port free, and a STORE that takes it
    there holds up the next LOAD. Summed at the group's end, the drains put every such
    candidate the search estimates 5.6–5.8 % low; as the gaps they are, each grouped
    candidate's estimate is its built kernel's instruction-level cycles."""
    grouped = 0
    for args, kw in _grouped_candidates(tmp_path, monkeypatch, _nhwc_conv(61, 3, 56, 5, 1, 2)):
        a, b, c, raw, relu, shift, here = args[:7]
        if not b.transpose:
            continue
        cost_kernel.forget()
        try:
            found = lower_kernel.kernel_estimate(*args, **kw)
        except GlcError:  # no grouped plan for these operands
            continue
        grouped += 1
        kernel = build_kernel("t", a, b, c, raw, relu, shift, here, found.order,
                              args[7] if len(args) > 7 else kw.get("k_inner"),
                              found.block_rows, flat=kw.get("flat", False), group=found.group)
        assert found.cycles == predict(kernel.instructions, here).counters.cycles
    assert grouped


def test_grouped_output_tiles_of_a_period_are_sampled_in_whole_pairs_of_it(tmp_path,
                                                                          monkeypatch):
    """An NCHW 5×5 conv of 9 channels into 35 at 38×38, the filters streamed: its 34 rows of
    pixels walked 8 rows a tile (columns 34 = 17 × 2 pixels), 85 output tiles whose kinds
    repeat every 5. A grouped plan's runs must differ by whole pairs of groups and whole
    periods (10): 5 apart, its grouped candidates came out up to 1.55 % low; now each
    equals its whole run."""
    checked, steps = 0, sampling.WHOLE
    for args, kw in _grouped_candidates(tmp_path, monkeypatch, _nchw_conv(38, 9, 35, 5, 1, 0)):
        if args[0].view.dims[0] != 35:
            continue
        try:
            cost_kernel.forget()
            sampled = lower_kernel.kernel_estimate(*args, **kw)
        except GlcError:  # no grouped plan for these operands
            continue
        monkeypatch.setattr(sampling, "WHOLE", 1 << 40)
        cost_kernel.forget()
        whole = lower_kernel.kernel_estimate(*args, **kw)
        monkeypatch.setattr(sampling, "WHOLE", steps)
        assert sampled.group > 1 and sampled.cycles == whole.cycles, (sampled, whole)
        checked += 1
    assert checked


# Searched layers whose candidates a sample misjudged (found on layers of random shapes), each
# now equal to its whole run to 0.1 %: (layer, A rows of the candidates, order, block rows).
SAMPLED_AS_WHOLE = {
    # Each channel's 25 taps a K tile of 16 and one of 9, alternating over 366 tiles: sampled
    # per kind (six tiles of one kind side by side) 1.3 % low; in whole periods of the kinds.
    "k-tiles-alternating": (_nchw_conv(34, 183, 18, 5, 2, 0), 18, "j-outer", (0,)),
    # 2 or 3 K tiles, 60 output tiles in blocks of 16 or 32 filters: output tiles in runs of
    # 12 and 18 left sampled blocks of 24-54 steps, whose STOREs the next block did not hide
    # (up to 6 % low); sampled so a block keeps BLOCK_STEPS steps.
    "blocks-of-few-k-tiles": (_nchw_conv(32, 3, 443, 3, 1, 0), 443, "k-outer", (32, 16)),
    # One output tile in blocks of a pixel row: j-outer's tiles take the accumulator's two
    # slots a block a turn, each waiting for the STORE two before it; blocks sampled a block
    # apart 4-7 % high, in whole turns exact.
    "accumulator-turns": (_nhwc_conv(51, 11, 12, 5, 1, 2), 51 * 51, "j-outer", (51, 27)),
    # 6 K tiles an output tile: runs of 12 steps (2 tiles) short of the steady state, 0.9 %
    # low; runs of J_STEPS = 24.
    "few-k-tiles-start-up": (_nhwc_conv(20, 10, 10, 3, 1, 0), 10, "j-outer", (0,)),
}


@pytest.mark.parametrize("name", sorted(SAMPLED_AS_WHOLE))
def test_searched_candidates_are_sampled_as_if_run_whole(name, tmp_path, monkeypatch):
    layer, rows, order, blocks = SAMPLED_AS_WHOLE[name]
    calls = [args for args in _searched(tmp_path, monkeypatch, layer)
             if args[0][0].view.dims[0] == rows]
    assert calls
    for args in calls:
        for block in blocks:
            sampled, whole = _sampled_and_whole(monkeypatch, args, order, block)
            assert abs(sampled - whole) <= 0.001 * whole, (block, sampled, whole)
