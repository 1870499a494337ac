"""Images: kernels with no host step between them run as one program, joined by a barrier, only
when their tokens balance; the joined image computes what the kernels compute one by one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from glc.hwconfig import load_config
from glc.interp import env_types, interpret
from glc.isa.encoding import Instruction
from glc.lower.execute import execute
from glc.lower.image import Image, balanced, schedule
from glc.lower.lowering import lower
from glc.syntax.reader import parse_term

ROOT = Path(__file__).resolve().parents[2]
# Three layers, each reading the previous one's int8 result from DRAM.
CHAIN = """(systolic-array 6 5 (access (compute (requantize 6) (systolic-array 7 6 (access
 (compute relu (compute (requantize 6) (systolic-array 9 7 (access (access-tensor x) 1)
 (access (access-tensor w1) 0)))) 1) (access (access-tensor w2) 0))) 1)
 (access (access-tensor w3) 0))"""


def _chain():
    rng = np.random.default_rng(5)
    arrays = {name: rng.integers(-128, 128, dims).astype(np.int8) for name, dims in
              (("x", (11, 9)), ("w1", (9, 7)), ("w2", (7, 6)), ("w3", (6, 5)))}
    term = parse_term(CHAIN)
    return term, arrays, lower(term, env_types(arrays), load_config("n4"))


def test_a_chain_of_kernels_is_one_image_and_matches():
    term, arrays, program = _chain()
    runs = schedule(program)
    assert len(runs) == 1 and [s.name for s in runs[0].steps] == [s.name for s in
                                                                  program.kernels]
    assert all(balanced(s.kernel.instructions) for s in program.kernels)
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "isa")
    assert np.array_equal(outcome.result, expected) and len(outcome.counters) == 1
    assert outcome.cycles == runs[0].predicted_cycles(program.config)


def test_a_kernel_whose_tokens_do_not_balance_runs_alone():
    _, _, program = _chain()
    first = program.kernels[0]
    extra = Instruction.make("sync", unit=0, push_next=1)  # a token nobody pops
    unbalanced = replace(first.kernel, instructions=[extra, *first.kernel.instructions])
    assert not balanced(unbalanced.instructions)
    program.steps[program.steps.index(first)] = replace(first, kernel=unbalanced)
    images = [run for run in schedule(program) if isinstance(run, Image)]
    assert [len(i.steps) for i in images] == [1, 2]


def test_an_image_ends_where_dram_above_the_live_tensors_is_full(tmp_path):
    """A program whose kernels fit in DRAM only a few at a time runs as several images, each
    placed above the tensors live while it runs, and computes the same result: ResNet-50 at
    224×224 on n16 (a 38.7 MB image of 604 002 instructions beside 44.4 MB of tensors) did not
    fit as one. Here: a chain whose one image needs more DRAM than the config has."""
    from glc.isa.fields import WORD_BYTES
    from glc.isa.simulator import program_base

    term, arrays, whole = _chain()
    [one] = schedule(whole)
    need = whole.live_dram_bytes(one.steps[0]) + WORD_BYTES * len(one.instructions)
    alone = max(whole.live_dram_bytes(s) + WORD_BYTES * len(s.kernel.instructions)
                for s in whole.kernels)  # the most DRAM one kernel's image needs
    size = -(-alone // WORD_BYTES) * WORD_BYTES
    assert size < need
    text = (ROOT / "hw" / "configs" / "n4.toml").read_text()
    small = tmp_path / "small.toml"
    small.write_text(text.replace(f"dram_bytes = {whole.config.dram_bytes}",
                                  f"dram_bytes = {size}"))
    config = load_config(str(small))
    assert config.dram_bytes == size
    program = lower(term, env_types(arrays), config)
    images = [run for run in schedule(program) if isinstance(run, Image)]
    assert len(images) > 1 and sum(len(i.steps) for i in images) == len(program.kernels)
    for image in images:
        assert program_base(config, len(image.words)) >= program.live_dram_bytes(image.steps[0])
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "isa")
    assert np.array_equal(outcome.result, expected) and len(outcome.counters) == len(images)
    assert program.figures()["dram_peak_bytes"] <= config.dram_bytes
