"""Stride-1 depthwise convolutions with the image read once: band kernels.

A depthwise product on the array (glc/lower/depthwise.py) is one GEMM per N channels whose K
tiles are the taps: gemm.py's schedule loads each tap's im2col tile from DRAM, so every image
pixel crosses the port once per tap (9 times for 3×3), and the layer is bound by the port, not
by the array (MobileNet's 3×3 over 144 channels at 56×56: 31.5 k beats a group against 28 k
MATMUL rows).

At stride 1 the taps' im2col rows are the same image rows shifted: output pixel (y, x) at tap
(ky, kx) reads image pixel (y + ky, x + kx). So a band kernel loads each block of image rows
once, as an extended grid of W′ = OW + KW − 1 pixels a row (the padding the LOAD's zero fill),
and streams output row y of tap (ky, kx) from scratchpad row (y + ky)·W′ + kx: one MATMUL of
OW rows an output row, into accumulator rows y·OW …, all taps accumulating there. Back-to-back
MATMULs stream without a bubble (docs/isa.md, "Timing"), so the halo (the KW − 1 grid columns
beyond a row's outputs) is never computed: one streamed row per output pixel and tap, the
1/N packing's bound, where a MATMUL over the whole grid streamed W′/OW as many (1.14 at 14×14).
A block's output rows are contiguous in the accumulator and leave in one STORE's transfers.

The schedule, per block j of every group of N channels (blocks group-major): LOAD the group's
tap tiles (the diagonal weights, once a group) and the block's image rows into half j mod 2 of
the scratchpad, PRELOAD and MATMUL each tap into half j mod 2 of the accumulator, STORE. Tokens:
the loads of block j + 2 wait for block j's MATMULs (ex2ld), block j + 2's first PRELOAD for
block j's STOREs (st2ex); block j's STOREs are spread between block j + 1's MATMULs, so the
dispatcher, paced by the EXEC queue, hands them out while the array computes.

Its cost is the instruction-level model's (glc/isa/cycles.py) over the built kernel: it is one
kernel a layer, and the lowering keeps it where it is faster than the GEMM per group.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from glc.hwconfig import HwConfig
from glc.isa.encoding import Instruction
from glc.lower.depthwise import Store
from glc.lower.fold import flagged
from glc.lower.kernel import Kernel
from glc.lower.table import StoreTable
from glc.lower.transfer import Target, transfers
from glc.lower.view import Digit, View, advanced, merge


@dataclass(frozen=True)
class Band:
    """A group's im2col A ((rows y, x) × (taps, channel)) read as shifted image rows: the
    pixel digits ``y``, ``x``, the channel digit, and per tap (in A's K order) its shift
    (dy, dx); ``transpose`` N where the channels are not contiguous but the pixels are (an
    NCHW image), so the grid is loaded by transposing LOADs, N pixels of a channel a run."""

    view: View
    y: Digit
    x: Digit
    channel: Digit
    shifts: tuple[tuple[int, int], ...]
    kw: int
    transpose: int = 0

    @property
    def width(self) -> int:
        """W′: output pixels a row plus the halo; loaded transposed, rounded up to whole
        blocks of N pixels (a transposing LOAD writes N scratchpad rows a block)."""
        width = self.x.size + self.kw - 1
        return -(-width // self.transpose) * self.transpose if self.transpose else width

    @property
    def kh(self) -> int:
        """Kernel rows: image rows a block reads beyond its output rows, plus one."""
        return max(dy for dy, _ in self.shifts) + 1

    def image(self, first_row: int, rows: int) -> View:
        """Image rows [first_row, first_row + rows) of the extended grid (rows × W′ pixels, the
        group's channels as columns), at tap (0, 0)."""
        return replace(advanced(self.view, self.y, first_row),
                       groups=((Digit(rows, self.y.stride, self.y.coefs),
                                Digit(self.width, self.x.stride, self.x.coefs)),
                               (self.channel,)))


def band(a: View, n: int) -> Band | None:
    """A's view as a band: its rows two pixel digits (y, x), its K two tap digits and the
    channel, each tap digit walking the image as one pixel digit does (stride 1); the channels
    contiguous, or else the pixels along x (loaded transposed, ``n`` the array size); else
    None."""
    rows, items = merge(a.groups[0]), a.groups[1]
    if len(rows) != 2 or not items:
        return None
    channel, taps = items[-1], merge(items[:-1])
    y, x = rows
    if len(taps) != 2 or any(channel.coefs) or 1 not in (channel.stride, x.stride):
        return None
    found = {}
    for index, tap in enumerate(taps):
        for name, pixel in (("y", y), ("x", x)):
            if (tap.stride, tap.coefs) == (pixel.stride, pixel.coefs):
                found[name] = index
    if sorted(found.values()) != [0, 1]:
        return None
    shifts = tuple((i if found["y"] == 0 else j, j if found["x"] == 1 else i)
                   for i in range(taps[0].size) for j in range(taps[1].size))
    return Band(a, y, x, channel, shifts, taps[found["x"]].size,
                0 if channel.stride == 1 else n)


@dataclass(frozen=True)
class Group:
    """One group of channels: its band, its diagonal weights B (taps·width × width), its C
    (output pixels × width, a block of the layer's result)."""

    band: Band
    b: Target
    c: Target
    image_address: int


SPLITS = (1, 2, 4)  # blocks a group is cut into beyond what fits, tried (band_kernel)


def band_kernel(label: str, groups: list[Group], store: Store, table: StoreTable | None,
                config: HwConfig) -> Kernel | None:
    """The band kernel over every group, the fastest of its block sizes by the
    instruction-level model (the largest that fits, or cut 2 or 4 times finer: a block's
    LOADs and STOREs overlap the others' MATMULs, the first and last do not, and a block
    reads KH − 1 halo rows more), its ``estimated`` those cycles; None where a block of one
    output row does not fit half the scratchpad and accumulator. ``table``: the bias and
    multipliers over the layer's channels, group g's STOREs reading its column tile g, in the
    accumulator's top rows (the halves below them)."""
    first = groups[0].band
    out_h, width = first.y.size, first.width
    local = config
    if table is not None:
        reserved = table.reserve(out_h * first.x.size, _columns(groups), config.array_size,
                                 config.accumulator_rows)
        local = replace(config, accumulator_rows=config.accumulator_rows - reserved)
    sp_half, acc_half = _halves(first, local)
    fits = min(out_h, acc_half // first.x.size, sp_half // width - first.kh + 1)
    if fits < 1:
        return None
    least = -(-out_h // fits)
    built = [_built(label, groups, store, table, local, -(-out_h // blocks))
             for blocks in sorted({min(out_h, least * split) for split in SPLITS})]
    best = min(built, key=lambda k: k.predicted_cycles(config))
    return replace(best, estimated=best.predicted_cycles(config))


def _columns(groups: list[Group]) -> list[tuple[int, int]]:
    """Each group's (first channel, channels): its column tile of the table."""
    out, first = [], 0
    for group in groups:
        width = group.c.view.dims[1]
        out.append((first, width))
        first += width
    return out


def _halves(band: Band, config: HwConfig) -> tuple[int, int]:
    """The scratchpad rows and accumulator rows of half the local memories a block takes (the
    scratchpad's top rows hold two groups' tap tiles)."""
    weights = len(band.shifts) * config.array_size
    return (config.scratchpad_rows - 2 * weights) // 2, config.accumulator_rows // 2


def _built(label: str, groups: list[Group], store: Store, table: StoreTable | None,
           config: HwConfig, rows: int) -> Kernel:
    """The band kernel in blocks of ``rows`` output rows, ``config``'s accumulator rows those
    below the table."""
    n = config.array_size
    first = groups[0].band
    taps, width, kh = len(first.shifts), first.width, first.kh
    out_h, out_w = first.y.size, first.x.size
    weights = taps * n
    sp_half, acc_half = _halves(first, config)
    blocks = [(g, r0, min(rows, out_h - r0)) for g in range(len(groups))
              for r0 in range(0, out_h, rows)]
    raw = store.raw
    mode = {"raw": int(raw), "relu": int(store.relu), "shift": store.shift}

    def loads(j: int) -> list[Instruction]:
        g, r0, count = blocks[j]
        group = groups[g]
        fields = []
        if r0 == 0:  # the group's tap tiles, once
            channels = group.c.view.dims[1]
            for t in range(taps):
                fields += transfers(group.b, (t * channels, channels), (0, channels),
                                    2 * sp_half + g % 2 * weights + t * n, {})
        image = group.band.image(r0, count + kh - 1)
        fields += transfers(Target(image, group.image_address, 1, first.transpose),
                            (0, image.dims[0]), (0, image.dims[1]), j % 2 * sp_half, {})
        return flagged("load", fields, {"pop_next": int(j >= 2)}, {"push_next": 1})

    def stores(j: int) -> list[Instruction]:
        g, r0, count = blocks[j]
        c = groups[g].c
        fields = transfers(c, (r0 * out_w, count * out_w), (0, c.view.dims[1]),
                           j % 2 * acc_half,
                           mode | (table.column(g) if table is not None else {}))
        return flagged("store", fields, {"pop_prev": 1},
                       {"push_prev": int(j + 2 < len(blocks))})

    def execs(j: int) -> list[list[Instruction]]:
        g, _, count = blocks[j]
        out = []
        for t, (dy, dx) in enumerate(first.shifts):
            pair = [Instruction.make("preload", row=2 * sp_half + g % 2 * weights + t * n,
                                     pop_prev=int(t == 0), pop_next=int(t == 0 and j >= 2))]
            for i in range(count):
                last = t == taps - 1 and i == count - 1
                pair.append(Instruction.make(
                    "matmul", sp=j % 2 * sp_half + (i + dy) * width + dx,
                    acc=j % 2 * acc_half + i * out_w, rows=out_w, accumulate=int(t > 0),
                    push_prev=int(last and j + 2 < len(blocks)), push_next=int(last)))
            out.append(pair)
        return out

    out = loads(0) + (loads(1) if len(blocks) > 1 else [])
    for j in range(len(blocks)):
        pending = stores(j - 1) if j else []
        taps_j = execs(j)
        share = -(-len(pending) // len(taps_j))
        for t, pair in enumerate(taps_j):
            out += pair + pending[t * share:(t + 1) * share]
        if j + 2 < len(blocks):
            out += loads(j + 2)
    out += stores(len(blocks) - 1)
    out.append(Instruction.make("halt"))
    if table is not None:  # first: every STORE waits for a MATMUL, which waits for a LOAD
        out = table.loads(_columns(groups), len(table.vectors) * len(groups)) + out
    channels = sum(g.c.view.dims[1] for g in groups)
    return Kernel(label, out_h * out_w, taps * channels, channels, raw, store.relu, store.shift,
                  out, table is not None and table.bias is not None, kind="diagonal")
