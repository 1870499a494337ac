"""Folds on the vector unit laid out for their operands and their consumers (glc/lower/folds.py):
rows of a width short of N joined into longer columns, and a fold that writes the layout the
kernel after it would copy its result into."""

from __future__ import annotations

import numpy as np
import pytest
from exactness import exact

from glc.hwconfig import load_config
from glc.interp import env_types
from glc.isa.transfer import SETUP
from glc.lower import fold, folds
from glc.lower.folds import Folds
from glc.lower.lowering import lower
from glc.lower.view import Digit, View, row_major
from glc.syntax.reader import parse_term

# A residual add of two NCHW tensors, requantized to int8 (ResNet's, between its 1×1 convs).
ADD = ("(compute (requantize 1) (compute elementwise-add (access-pair (access (access-tensor x1) "
       "4) (access (access-tensor x2) 4))))")


def _add(c: int, hw: int, seed: int):
    rng = np.random.default_rng(seed)
    return parse_term(ADD), {name: rng.integers(-128, 128, (1, c, hw, hw)).astype(np.int8)
                             for name in ("x1", "x2")}


def _projection(c: int, hw: int, out: int, seed: int):
    """The add read by a 1×1 stride-2 conv with OIHW filters (a stage's projection shortcut), as
    the extraction spells it: filters streamed, the add's pixels every other one."""
    _, arrays = _add(c, hw, seed)
    pixels = ((hw - 1) // 2 + 1) ** 2
    windows = (f"(access (access-squeeze (access-windows (access {ADD} 1) (shape {c} 1 1) "
               f"(shape 1 2 2)) 1) 3)")
    term = parse_term(f"(systolic-array {c} {pixels} "
                      f"(access-flatten (access (access-tensor filters) 1)) "
                      f"(access (access-transpose (access-flatten {windows}) (list 1 0)) 0))")
    rng = np.random.default_rng(seed + 1)
    arrays["filters"] = rng.integers(-128, 128, (out, c, 1, 1)).astype(np.int8)
    return term, arrays


def _operands(*views: View) -> list:
    return [list(v.groups) for v in views]


def test_rows_short_of_n_are_joined_while_every_operand_walks_them_as_one_run():
    nchw = row_major("x", (1, 64, 28, 28))
    assert folds._joined(_operands(nchw, nchw), 16) == 2  # 28 → 784 columns, 16 | 784
    assert folds._joined(_operands(nchw), 4) == 1  # 28: already a multiple of N
    # 7×7 rows of 512 channels: 49 columns, then the rows would be one: stop at 49.
    small = row_major("x", (512, 7, 7))
    assert folds._joined(_operands(small), 16) == 2
    # An operand that walks H and W apart (28 of each row of 32) keeps the columns as they are.
    sliced = View("y", 0, ((Digit(64, 28 * 32, ()),), (Digit(28, 32, ()),),
                           (Digit(28, 1, ()),)), ())
    assert folds._joined(_operands(row_major("x", (64, 28, 28)), sliced), 16) == 1


@pytest.mark.parametrize(("config", "c", "hw"), [("n16", 64, 28), ("n16", 64, 7),
                                                  ("n4", 16, 14)])
def test_a_residual_add_over_nchw_fills_the_lanes_and_is_exact(monkeypatch, config, c, hw):
    """Rows of 28 pixels fill 28 of 32 lanes, of 7 pixels 7 of 16, of 14 on n4 14 of 16: joined
    with the rows above (784, 49 or 196 columns) the add takes fewer cycles than over the rows
    as they were (ResNet-50's stage-2 adds: 88 117 → 75 934 cycles, its port floor 75 264)."""
    config = load_config(config)
    term, arrays = _add(c, hw, seed=c + hw)
    program = lower(term, env_types(arrays), config)
    (add,) = program.kernels
    assert add.kernel.instructions[0]["count0"] == c  # a tile's rows: the channels
    outcome = exact(term, arrays, program)
    monkeypatch.setattr(folds, "_joined", lambda operands, n: 1)
    as_rows = lower(term, env_types(arrays), config)
    assert outcome.cycles < as_rows.figures()["predicted_cycles"]


def test_a_fold_writes_the_layout_its_consumer_would_copy_it_into(monkeypatch):
    """A stride-2 1×1 conv 256→512 over a 14×14 NCHW residual add repacks the add's result
    channels-last; the add writes it so itself instead (its operands, strided in that order,
    read by transposing LOADs): no copy, exact, the model's cycles, fewer than add and copy."""
    config = load_config("n16")
    term, arrays = _projection(256, 14, 512, seed=3)
    program = lower(term, env_types(arrays), config)
    kinds = [s.kernel.kind for s in program.kernels]
    assert kinds == ["fold", "matmul"]
    fold = program.kernels[0].kernel
    assert any(i.get("transpose") for i in fold.instructions)
    outcome = exact(term, arrays, program)
    monkeypatch.setattr(Folds, "_fold_into", lambda *args: False)
    copied = lower(term, env_types(arrays), config)
    assert [s.kernel.kind for s in copied.kernels] == ["fold", "repack", "matmul"]
    assert outcome.cycles < copied.figures()["predicted_cycles"]


@pytest.mark.parametrize(("config", "c", "hw"), [("n16", 512, 28), ("n4", 16, 14)])
def test_a_pair_takes_the_faster_of_its_two_load_orders_near_the_port_floor(monkeypatch, config,
                                                                            c, hw):
    """A residual add is bound by the port (two rows in, one out, per two rows the VECTOR
    reads). Tile i + 2's LOADs go once VECTOR i has read its rows, or after the STORE two tiles
    before (through an EXEC SYNC); the lowering takes the order the model counts fewer cycles
    for, and comes within 1 % of the port's floor — its bytes' beats and the set-up cycles each
    LOAD and STORE holds the port for (docs/isa.md, Timing) — exact and in the model's cycles.
    Until revision 3.3 the LOADs won the port's ties against tile i's STORE and only the
    ordered LOADs came near the floor (512×28×28: 87 726 cycles unordered, 76 020 ordered);
    with the VECTOR's completion 2 cycles later they no longer meet, and the unordered LOADs
    are the faster (75 976 against 76 023 ordered; 75 460 the floor)."""
    config = load_config(config)
    term, arrays = _add(c, hw, seed=c)
    program = lower(term, env_types(arrays), config)
    (add,) = program.kernels
    outcome = exact(term, arrays, program)
    beats = 3 * c * hw * hw // config.dram_port_bytes  # two operands in, the result out
    floor = beats + sum(SETUP[i.op.name] for i in add.kernel.instructions
                        if i.op.name in SETUP)
    if config.name == "n16":
        assert outcome.cycles < 1.01 * floor
    built = fold._fold_kernel
    for ordered in (False, True):
        monkeypatch.setattr(fold, "_fold_kernel",
                            lambda *args, ordered=ordered: built(*args[:-1], ordered))
        other = lower(term, env_types(arrays), config)
        assert outcome.cycles <= other.figures()["predicted_cycles"]


@pytest.mark.rtl
def test_folds_laid_out_anew_on_the_rtl_equal_the_model():
    config = load_config("n16")
    for term, arrays in (_add(64, 7, seed=5), _add(64, 28, seed=6),
                         _projection(256, 14, 512, seed=3)):
        program = lower(term, env_types(arrays), config)
        exact(term, arrays, program, "rtl")
