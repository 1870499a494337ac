"""The analytic cost of a systolic kernel: gemm.py's schedule as tile operations.

``estimate`` predicts the cycles of the kernel glc/lower/kernel.py builds for C = A·B
without building it: it enumerates the blockings gemm.py may choose (glc/isa/gemm_plan.py:
``plan``; step order, block of A rows, weight group, split MATMULs, A slices in parts),
rules out those a lower bound shows cannot win (``_bound``), and costs the rest from short
runs of their schedules through the tile-level pipeline model (glc/cost/sampling.py), per
tile the instructions and DRAM beats of the transfers the operand's view needs
(glc/cost/tiles.py). Kernel estimates are memoised per signature (the operands' views and
the config), tile costs per target and canonical tile, gemm.py's program per shape and each
run of it per tile costs (glc/cost/steps.py), so extraction and every choice of the
lowering (orientation, step order) cost a candidate once and share most of its runs and
tiles.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, replace

from glc.cache import remembered
from glc.cost.sampling import extrapolated, weight_port
from glc.cost.tiles import NO_TABLE, KernelTiles, TableCost
from glc.errors import GlcError
from glc.hwconfig import HwConfig
from glc.isa.gemm_plan import GemmLayout, MatrixRows, plan
from glc.lower.transfer import Target

ORDERS = ("k-outer", "j-outer")
GROUP_ROWS = 4  # grouped weight loads are costed for blocks of fewer than GROUP_ROWS·N rows


@dataclass(frozen=True)
class Estimate:
    """A kernel's predicted cycles and the step order, block of A rows and weight loads they
    are for."""

    cycles: int
    order: str
    block_rows: int  # the block of A rows (gemm.py's Mb)
    group: int = 1  # j-outer's weight tiles a LOAD (gemm.py)
    split: bool = False  # the last K tile's output tiles in pairs, split MATMULs (gemm.py)
    spread: bool = False  # k-outer's A slices loaded in parts (gemm_plan.py, step_plan)


def estimate(a: tuple[Target, ...], b: tuple[Target, ...], c: Target, raw: bool, relu: bool,
             shift: int, config: HwConfig, k_tiles, o_tiles,
             orders=ORDERS, block_rows: int = 0, table: TableCost = NO_TABLE) -> Estimate:
    """The predicted cycles of build_kernel's kernel for these operands (per part of K, views
    already shared over K; ``k_tiles`` its (part, range) tiles, ``o_tiles`` the output
    tiles: glc/lower/tiling.py), the fastest of ``orders``. Memoised per
    signature: the views and element sizes (not which tensors they are or where they lie, a
    view's offset included: a tile's beats do not depend on its address; so a layer's equal
    chunks are one estimate), the output conversion and table, the config."""
    return _estimate(tuple(map(_placed, a)), tuple(map(_placed, b)), _placed(c), raw, relu, shift,
                     config, tuple(k_tiles), tuple(o_tiles), tuple(orders), block_rows, table)


def _placed(t: Target) -> Target:
    """The target as the signature has it: not which tensor it is or where it lies."""
    return replace(t, address=0, view=replace(t.view, buffer="", offset=0))


@functools.lru_cache(maxsize=4096)
def _estimate(*signature) -> Estimate:
    """Memoised in memory (this process) and in the schedule cache (glc/cache.py: across
    compiles), by the whole signature: the same arguments give the same estimate."""
    return remembered("estimate", signature, lambda: _search(*signature))


def forget() -> None:
    """Empty this process's memos of estimates and their plans (for a caller that changes
    what the model reads, as tests do)."""
    _estimate.cache_clear()
    _planned.cache_clear()


def lower_bound(a: tuple[Target, ...], b: tuple[Target, ...], c: Target, raw: bool,
                relu: bool, shift: int, config: HwConfig, k_tiles, o_tiles, orders=ORDERS,
                block_rows: int = 0, table: TableCost = NO_TABLE) -> int:
    """A lower bound on ``estimate``'s cycles for the same arguments, without running any
    schedule: the least of its plans' bounds (``_bound``; an estimate is the cycles of one of
    its plans, never below that plan's bound). Raises what ``estimate`` raises where the
    kernel has no plan. The schedule search skips an estimate this shows cannot win."""
    plans = _planned(tuple(map(_placed, a)), tuple(map(_placed, b)), _placed(c), raw, relu,
                     shift, config, tuple(k_tiles), tuple(o_tiles), tuple(orders), block_rows,
                     table)
    return plans.bounds[0][0]


@dataclass(frozen=True)
class _Plans:
    """A signature's tiles and its plans, each with its lower bound, in the order ``_search``
    costs them (by bound, then by index: the first of equals wins)."""

    tiles: KernelTiles
    m: int
    bounds: tuple[tuple[int, int, GemmLayout], ...]


@functools.lru_cache(maxsize=64)
def _planned(a: tuple[Target, ...], b: tuple[Target, ...], c: Target, raw: bool, relu: bool,
             shift: int, config: HwConfig, k_tiles, o_tiles, orders, block_rows: int,
             table: TableCost) -> _Plans:
    """The plans ``_search`` costs (memoised for the few calls between a bound and its
    estimate: the tiles' costs found while costing stay with them)."""
    n = config.array_size
    m = a[0].view.dims[0] if len(a[0].view.groups) == 2 else 1
    k_pad, o_pad = len(k_tiles) * n, len(o_tiles) * n
    mode = {"raw": int(raw), "relu": int(relu), "shift": shift}
    tiles = KernelTiles(a, b, c, mode, k_tiles, o_tiles, config, table)
    canonical = replace(config, dram_bytes=1 << 32)
    group = _group(tiles, config) if "j-outer" in orders and m < GROUP_ROWS * n else 1
    # Split MATMULs where the last K tile holds at most N/2 rows (docs/isa.md, MATMUL `split`).
    splits = {False, splittable(config, k_tiles, o_tiles)}
    plans = {}  # each order's and weight group's, the block dividing M or ragged (gemm.py)
    for order, size, ragged, split in itertools.product(orders, {1, group}, (False, True),
                                                        splits):
        if (size == 1 or order == "j-outer") and (size == 1 or not split):
            found = plan(m, k_pad, o_pad, canonical, MatrixRows(k_pad), order, raw, block_rows,
                         size, ragged, split)
            # A slice filling the LOAD queue: in parts too, first (the pick where they tie).
            if found and order == "k-outer" and fills_queue(tiles, found.block_rows, config):
                plans[replace(found, spread=True)] = None
            plans[found] = None
    layouts = list(filter(None, plans))
    if not layouts:
        raise GlcError(f"gemm {m}x{k_pad}x{o_pad} does not fit the memories of {config.name}")
    # The weights' port cycles matter where some plan reloads them block after block.
    weights = weight_port(tiles) if any(layout.block_rows < m for layout in layouts) else \
        (0.0, 0.0)
    written = math.prod(c.view.dims) * c.element
    bounds = sorted((_bound(m, len(k_tiles), len(o_tiles), layout, weights, written, config),
                     index, layout) for index, layout in enumerate(layouts))
    return _Plans(tiles, m, tuple(bounds))


def _search(a: tuple[Target, ...], b: tuple[Target, ...], c: Target, raw: bool, relu: bool,
            shift: int, config: HwConfig, k_tiles, o_tiles, orders, block_rows: int,
            table: TableCost) -> Estimate:
    plans = _planned(a, b, c, raw, relu, shift, config, k_tiles, o_tiles, orders, block_rows,
                     table)
    best = None
    first = None
    # The fastest plan, the first of equals, costing plans in order of their lower bound
    # and none whose bound shows it cannot win (each a few milliseconds).
    for bound, index, layout in plans.bounds:
        if best is not None and (bound, index) > (best.cycles, first):
            continue
        # The bound holds on the machine: an extrapolation below it is held to it.
        cycles = max(extrapolated(plans.m, len(k_tiles), len(o_tiles), layout, plans.tiles,
                                  config), bound)
        if best is None or (cycles, index) < (best.cycles, first):
            first = index
            best = Estimate(cycles, layout.order, layout.block_rows, layout.weight_group,
                            layout.split, layout.spread)
    return best


def fills_queue(tiles: KernelTiles, rows: int, config: HwConfig) -> bool:
    """Whether an A slice of ``rows`` rows (the first K tile's) is more LOADs than half the
    LOAD queue (a transposing slice is a LOAD per N rows): k-outer then costs its plans with
    the slices loaded in parts too (gemm_plan.py, ``spread``): a slice that fills the LOAD
    queue holds the dispatcher, and with it the array's next steps, until the queue drains
    (6 % of an NCHW 1×1 1024→256 @14 kernel's cycles), and its LOADs hold the port from the
    weights."""
    return tiles.load_a(0, rows, 0)[0] > config.queue_depth // 2


def _bound(m: int, tiles_k: int, tiles_j: int, layout: GemmLayout,
           weights: tuple[float, float], written: int, config: HwConfig) -> int:
    """A lower bound on the cycles of the plan's kernel (glc/cost/pipeline.py's rules): the
    array streams each step's rows one MATMUL after another and starts a PRELOAD at most
    every N cycles; the port is held a cycle per set-up and per beat, every block loading
    all the weights (``weights``: their set-up cycles and beats, sampling.py's
    ``weight_port``; a plan grouping or splitting weight LOADs counted by beats alone) and
    the result written once, ``dram_port_bytes`` a beat."""
    n = config.array_size
    blocks = -(-m // layout.block_rows)
    steps = blocks * (tiles_k * tiles_j - (tiles_j // 2 if layout.split else 0))
    set_up, beats = weights
    per_block = beats + (set_up if layout.weight_group == 1 and not layout.split else 0)
    return max(steps * max(layout.block_rows, n),
               int(blocks * per_block) + written // config.dram_port_bytes)


def splittable(config: HwConfig, k_tiles, o_tiles) -> bool:
    """Whether a kernel of these tiles may split its last K tile's MATMULs: the array splits,
    that tile holds at most N/2 K rows (the rest of its A columns are the LOAD's zeros) and
    there are output tiles to pair."""
    return bool(config.column_split) and len(o_tiles) > 1 and \
        k_tiles[-1][1][1] <= config.array_size // 2


def _group(tiles: KernelTiles, config: HwConfig) -> int:
    """The weight tiles a grouped schedule loads at once (1: none): the most, dividing the K
    tiles, whose every group's LOADs take at most half the LOAD queue, for an output tile of
    each width (an image row of 28 pixels is cut 16 + 12, and a 12-pixel transposed tile is a
    LOAD a K tile where a 16-pixel one is a LOAD a group) and the last. The dispatcher hands
    out a group's LOADs ahead of the MATMULs before them, in program order, so a group of
    more holds the array's next steps behind a full LOAD queue (a group of 13 pieces, K = 200
    cut into N-row LOADs, ran 31 % over its estimate while the model took the queues as deep
    enough). Only blocks of fewer than GROUP_ROWS·N rows are grouped: at that
    many rows a step the tiles' own LOADs and their drains hide behind the MATMULs."""
    tiles_k = len(tiles.k_tiles)
    widths = {count: j for j, (_, count) in reversed(list(enumerate(tiles.o_tiles)))}
    outputs = {*widths.values(), len(tiles.o_tiles) - 1}
    for size in range(tiles_k, 1, -1):
        if tiles_k % size == 0 and all(
                tiles.load_group(kk, size, j)[0] <= config.queue_depth // 2
                for kk in range(0, tiles_k, size) for j in outputs):
            return size
    return 1
