"""Random programs over every opcode of revision 2 on the RTL at N = 4, with a vector unit of four
lanes and of two (its source and old-row reads then share one accumulator port, hw/vector_unit.sv),
and of two taking turns with STORE and LOAD on their accumulator ports (docs/isa.md, "Accumulator
ports"): split MATMULs where the array splits (not on n4-shared), transposing, padded and
`xrun` transfers, VECTOR folds and all eight token counters, with random flags (so faults and
deadlocks come too). The RTL must agree with the ISA simulator on everything it reports: the
error code and instruction of a faulty program, or every counter and — where no two units touch
the same memory in overlapping cycles (docs/isa.md: an unordered race has an unspecified result)
— the whole DRAM."""

import numpy as np
import pytest
from hwvariants import N4_LANES2, N4_SHARED

from glc.hwconfig import load_config
from glc.isa import simulator
from glc.isa.encoding import Instruction, decode, encode
from glc.isa.fields import UNIT_FLAGS, UNITS, VECTOR_OPS
from glc.isa.status import ErrorCode, MachineError
from glc.isa.steps import TOKENS
from glc.isa.transfer import element_bytes, expand, local_rows, written_rows
from glc.sim.run import run_program

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent

N4 = load_config("n4")
N = N4.array_size
CONFIGS = {"n4": N4, "n4-lanes2": N4_LANES2, "n4-shared": N4_SHARED}
DATA = 4096  # bytes of random data at DRAM 0; transfers stay near it


def _flags(rng, unit: str, tokens: dict[str, int]) -> dict[str, int]:
    """Random token flags; a pop only of a token an earlier instruction pushed, so every wait
    points back in program order (no deadlock) while the units still overlap."""
    out = {}
    for flag in UNIT_FLAGS[unit]:
        counter = TOKENS[unit, flag]
        if flag.startswith("push") and rng.random() < 0.3:
            out[flag], tokens[counter] = 1, tokens[counter] + 1
        elif flag.startswith("pop") and tokens[counter] and rng.random() < 0.6:
            out[flag], tokens[counter] = 1, tokens[counter] - 1
    return out


def _transfer(rng, name: str) -> dict[str, int]:
    inner = int(rng.integers(0, 2))
    run = int(rng.integers(1, N // 2 + 1)) if inner else int(rng.integers(1, N + 1))
    # Rows and addresses spread over the memories, so that most programs have instructions
    # in flight together without racing for the same rows.
    fields = {"inner": inner, "run": run, "row": int(rng.integers(0, 200)),
              "dram": int(rng.integers(0, DATA // 2)), "xrun": int(rng.integers(0, 2)),
              "x0": int(rng.integers(-3, 3)), "xlim": int(rng.integers(0, 9)),
              "y0": int(rng.integers(-2, 2)), "ylim": int(rng.integers(0, 5))}
    for k in range(3):
        fields |= {f"count{k}": int(rng.integers(1, 3 if k < inner else 5)),
                   f"stride{k}": int(rng.integers(-64, 200)),
                   f"xcoef{k}": int(rng.integers(-N, N + 1)), f"ycoef{k}": int(rng.integers(-1, 2))}
    if name == "load":
        wide = int(rng.random() < 0.25)
        fields |= {"acc": wide, "pad": int(rng.integers(-128, 128)),
                   "transpose": int(not wide and rng.random() < 0.4),
                   "row": int(rng.integers(0, 200 if wide else 900))}
    else:
        raw = int(rng.random() < 0.5)
        fields |= {"raw": raw, "relu": int(rng.integers(0, 2)),
                   "shift": 0 if raw else int(rng.integers(0, 12)),
                   "dram": int(rng.integers(2 * DATA, 3 * DATA))}
    return fields


def _lin_constants(rng: np.random.Generator) -> dict[str, int]:
    """VECTOR lin's offset and float32 constants: a quantized add's range, or any legal
    exponent (saturating, vanishing)."""
    values = (rng.choice([-1, 1], 3) * 2.0 ** rng.uniform(-6, 6 if rng.random() < 0.7 else 60, 3))
    bits = values.astype(np.float32).view(np.uint32)
    return {"offset": int(rng.choice([0, 128, int(rng.integers(-256, 256))])),
            "fixed": int(bits[0]), "scale0": int(bits[1]), "scale1": int(bits[2])}


def _split(rng: np.random.Generator, acc: int, rows: int) -> dict[str, int]:
    """MATMUL `split` with the lower half's rows clear of acc's, above or below them, in the
    other accumulator bank (acc2 - acc odd: docs/isa.md); they may end past the accumulator."""
    gap = rows + int(rng.integers(0, 8))
    gap += 1 - gap % 2
    below = acc >= gap and rng.random() < 0.5
    return {"split": 1, "acc2": acc - gap if below else acc + gap}


def random_program(seed: int, column_split: int) -> list[int]:
    """About twenty instructions of every kind, then HALT; with ``column_split`` half the
    MATMULs split (without, the programs are those of before revision 2.9)."""
    rng = np.random.default_rng(seed)
    tokens = dict.fromkeys(TOKENS.values(), 0)
    out = []
    for _ in range(int(rng.integers(8, 24))):
        kind = str(rng.choice(["load", "load", "store", "preload", "matmul", "vector", "vector",
                               "sync"]))
        if kind == "sync":
            unit = int(rng.integers(0, 4))
            out.append(Instruction.make("sync", unit=unit, **_flags(rng, UNITS[unit], tokens)))
        elif kind in ("load", "store"):
            out.append(Instruction.make(kind, **_transfer(rng, kind), **_flags(rng, kind, tokens)))
        elif kind == "preload":
            out.append(Instruction.make("preload", row=int(rng.integers(0, 1000)),
                                        **_flags(rng, "exec", tokens)))
        elif kind == "matmul":
            fields = {"sp": int(rng.integers(0, 1000)), "acc": int(rng.integers(0, 240)),
                      "rows": int(rng.integers(1, 12)), "accumulate": int(rng.integers(0, 2))}
            if column_split and rng.random() < 0.5:
                fields |= _split(rng, fields["acc"], fields["rows"])
            out.append(Instruction.make("matmul", **fields, **_flags(rng, "exec", tokens)))
        else:
            op = int(rng.integers(0, len(VECTOR_OPS)))
            if VECTOR_OPS[op] in ("lut", "table"):  # group 1 over scratchpad rows
                count = int(rng.integers(1, 6))
                out.append(Instruction.make(
                    "vector", op=op, src=int(rng.integers(0, 900)),
                    dst=int(rng.integers(0, 256 - count if VECTOR_OPS[op] == "table" else 220)),
                    count=count, ostride=int(rng.integers(0, 5)),
                    **_flags(rng, "vector", tokens)))
                continue
            lin = VECTOR_OPS[op] == "lin"
            wide = rng.random() < (0.05 if lin else 0.4)  # lin refuses src_acc (ILLEGAL_FIELD)
            out.append(Instruction.make(
                "vector", op=op, accumulate=int(rng.random() < (0.05 if lin else 0.5)),
                src_acc=int(wide),
                src=int(rng.integers(0, 200 if wide else 900)), dst=int(rng.integers(0, 220)),
                count=int(rng.integers(1, 6)), group=int(rng.integers(1, 3 if lin else 5)),
                ostride=int(rng.integers(0, 5)), gstride=int(rng.integers(0, 5)),
                **(_lin_constants(rng) if lin else {}), **_flags(rng, "vector", tokens)))
    return [encode(i) for i in out] + [encode(Instruction.make("halt"))]


def _footprint(ins: Instruction) -> list[tuple[str, int, int, bool]]:
    """(memory, first, end, written) of what an instruction touches: rows of sp/acc, bytes of
    dram."""
    name = ins.op.name
    if name in ("load", "store"):
        runs = expand(ins)
        width = element_bytes(ins)
        ends = runs.address + width * ins["run"]
        dram = ("dram", int(runs.address.min()), int(ends.max()), name == "store")
        if name == "load":
            local = "acc" if ins["acc"] else "sp"
            return [dram, (local, ins["row"], ins["row"] + written_rows(ins, N), True)]
        return [dram, ("acc", ins["row"], ins["row"] + local_rows(ins), False)]
    if name == "preload":
        return [("sp", ins["row"], ins["row"] + N, False)]
    if name == "matmul":
        lower = [("acc", ins["acc2"], ins["acc2"] + ins["rows"], True)] if ins["split"] else []
        return [("sp", ins["sp"], ins["sp"] + ins["rows"], False),
                ("acc", ins["acc"], ins["acc"] + ins["rows"], True), *lower]
    if name == "vector":
        last = (ins["src"] + ins["ostride"] * (ins["count"] - 1)
                + ins["gstride"] * (ins["group"] - 1))
        read = ("acc" if ins["src_acc"] else "sp", ins["src"], last + 1, False)
        if VECTOR_OPS[ins["op"]] == "table":  # writes the unit's own tables
            return [read]
        return [read, ("acc", ins["dst"], ins["dst"] + ins["count"], True)]
    return []


def racy(program: list[Instruction], timeline) -> bool:
    """Two instructions of different units in flight together touch the same memory, one
    writing it."""
    spans = {pc: (timeline.issue[pc], timeline.complete[pc]) for pc in timeline.issue}
    for p in spans:
        for q in spans:
            if p >= q or timeline.units[p] == timeline.units[q]:
                continue
            if not (spans[p][0] < spans[q][1] and spans[q][0] < spans[p][1]):
                continue
            for mem, lo, hi, w in _footprint(program[p]):
                for mem2, lo2, hi2, w2 in _footprint(program[q]):
                    if mem == mem2 and (w or w2) and lo < hi2 and lo2 < hi:
                        return True
    return False


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed", range(16))
def test_a_random_program_runs_on_the_rtl_as_on_the_isa_simulator(seed, config):
    hw = CONFIGS[config]
    words = random_program(seed, hw.column_split)
    dram = np.zeros(hw.dram_bytes, dtype=np.uint8)
    dram[:DATA] = np.random.default_rng(1000 + seed).integers(0, 256, DATA, dtype=np.uint8)
    rtl = run_program(hw, words, dram, max_cycles=200_000)
    assert not rtl.timed_out
    try:
        model = simulator.run(words, hw, dram)
    except MachineError as error:
        assert (rtl.error, rtl.error_pc) == (error.code, error.pc)
        return
    assert rtl.error == ErrorCode.OK
    assert rtl.counters.as_dict() == model.counters.as_dict()
    if not racy([decode(w) for w in words], model.timeline):
        np.testing.assert_array_equal(rtl.dram, model.dram)
