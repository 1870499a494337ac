"""Random compositions (scripts/randcompose.py: int8 programs of several kernels, fan-out, two
layouts, folds between kernels, residual sums, concatenations) against the generator's own numpy
results, on the interpreter and on the ISA simulator through the compiler (n16 and n4);
``python scripts/fuzz.py --compositions`` runs the same check longer."""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from generated import COMPOSITIONS as SAMPLES
from generated import compositions
from test_fuzz_programs import ROOT, findings, load_script

randcompose = load_script("randcompose")
reference = load_script("reference_numerics")

# One xdist worker runs every test that reads the generated sample (scripts/test.sh runs the
# suite with --dist loadgroup): a worker generates and runs it once, for all of them.
pytestmark = pytest.mark.xdist_group("generated")


@pytest.mark.parametrize("config", SAMPLES)
def test_compositions_equal_numpy_on_the_interpreter_and_the_isa(config):
    """Each composition's result numpy's, its images free of races (glc/isa/races.py)."""
    outcomes = compositions(config)
    assert findings(outcomes) == []
    assert sum(o.kind == "pass" for o in outcomes) >= 0.9 * len(outcomes)
    assert sum(o.kernels for o in outcomes) >= 2 * len(outcomes)


def test_every_feature_is_in_the_sample():
    seen = set().union(*(randcompose.make(seed).features for seed in SAMPLES["n16"]))
    assert randcompose.FEATURES - seen == set()


def test_the_residual_block_over_a_residual_sum_is_generated_at_varied_shapes():
    """The shape of issue 37's miscompile: s = add-linear(a, b) read by a conv and by
    add-linear(block, s) (two readers), the block two convs with requantize-linear."""
    cases = [case for case in map(randcompose.make, range(120))
             if case.kind == randcompose.RESIDUAL]
    assert len({case.expected.shape for case in cases}) >= 10
    for case in cases:
        lines = case.text.splitlines()
        s = next(line.split()[1] for line in lines if "(add-linear (access-tensor x0)" in line)
        assert sum(f" {s})" in line or f" {s} " in line for line in lines) >= 3  # its readers
        assert case.text.count("requantize-linear") == 2
    # padded with the sum's zero point (not for 1×1 kernels, which read no padding)
    assert sum("access-pad-value" in case.text for case in cases) >= len(cases) // 2


def test_the_generators_float32_numbers_follow_the_contract():
    """fma rounds once: the double nearest 1 + 2^-24 + 2^-60 is the float32 midpoint 1 + 2^-24,
    which rounds to 1 by ties-to-even; the exact sum is above it and rounds up."""
    assert reference.to_float32(Fraction(1) + Fraction(1, 2 ** 24) + Fraction(1, 2 ** 60)) == \
        np.float32(1 + 2 ** -23)
    assert reference.to_float32(Fraction(1) + Fraction(1, 2 ** 24)) == np.float32(1)
    # requantize-linear: float32(2^24 + 1) is 2^24 (to even), times 2^-24 is 1, plus z = 3.
    acc = np.array([2 ** 24 + 1, -7, 10 ** 6], np.int32)
    m = np.array([2.0 ** -24, 0.5, 1.0], np.float32)
    assert reference.requantize_linear(acc, m, 3).tolist() == [4, -1, 127]
    # add-linear with offset 128 on one pair, by hand: ra = rb = 1, F = zc' - za' - zb'.
    a, b = np.array([10], np.int8), np.array([-20], np.int8)
    got = reference.add_linear(a, b, 0.5, 1, 0.5, 2, 0.5, 3, 128)
    assert got.tolist() == [min(max((10 + 128) + (-20 + 128) + (3 + 128) - (1 + 128) - (2 + 128),
                                    0), 255) - 128]


def test_fuzz_script_prints_the_compositions_table():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "fuzz.py"), "--compositions",
                           "--count", "2", "--seed", "5"], env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[2].split() == ["2", "2", "0", "0", "0", "0", "0", "0"]  # ... race, mismatch


@pytest.mark.parametrize("seed", [700001, 700019, 700036])
def test_a_host_steps_result_takes_no_dram_a_later_kernel_used(seed):
    """A host step's result lies in the host's memory until a kernel reads it; moved into DRAM
    then, it must not take space a host step gave back since (lowering.py ``_to_dram``): the
    host step wrote it when it ran, before the kernel that used the space (found in the final
    review: 3 of 60 wrong at seed 700000, first bad 268b64d). The three programs are frozen
    under tests/data/compositions (program, inputs, numpy's output.npy), as the generator drew
    them before it made depthwise convs and batched products (seed 700019 draws one since)."""
    from glc.compiler import compile_program
    from glc.hwconfig import load_config
    from glc.inputs import load
    from glc.lower.execute import execute
    from glc.rewrites import DEFAULT, select

    bundle = load(ROOT / "tests" / "data" / "compositions" / f"seed{seed}")
    lowered = compile_program(bundle, rules=select(DEFAULT, 16), config=load_config("n16")).lowered
    outcome = execute(lowered, bundle.arrays, "isa", check_races=True)
    assert np.array_equal(outcome.result, bundle.expected)


def _compiled(case, folder):
    """``case``'s bundle, and its program compiled for n16 as ``glc run`` compiles it."""
    from glc.compiler import compile_program
    from glc.hwconfig import load_config
    from glc.inputs import load
    from glc.rewrites import DEFAULT, select

    (folder / "p.gls").write_text(case.text)
    for name, value in case.inputs.items():
        np.save(folder / f"{name}.npy", value)
    bundle = load(folder)
    return bundle, compile_program(bundle, rules=select(DEFAULT, 16),
                                   config=load_config("n16")).lowered


def test_generated_depthwise_convs_requantize_in_their_kernels_stores(tmp_path):
    """The generator reaches the depthwise path of glc import's QLinearConv (docs/lowering.md,
    "ONNX's requantization of a depthwise conv"): in the n16 sample, compositions whose
    depthwise conv has a per-channel bias and requantize-linear run it as diagonal kernels
    whose STOREs add the bias and requantize (a table, \"linear\" STOREs), no fold."""
    reached = []
    for seed in SAMPLES["n16"]:
        case = randcompose.make(seed)
        if "depthwise requantize-linear" not in case.features or len(reached) == 3:
            continue
        folder = tmp_path / str(seed)
        folder.mkdir()
        _, lowered = _compiled(case, folder)
        reached += [seed] if any(
            step.kernel.kind == "diagonal" and step.kernel.bias and any(
                i.op.name == "store" and i["linear"] for i in step.kernel.instructions)
            for step in lowered.kernels) else []
    assert len(reached) == 3


def test_generated_batched_products_run_on_the_array(tmp_path):
    """The generator's batched products (attention's form, docs/lowering.md "Batched
    products": an image read as a batch of matrices, times fresh ones, one broadcast over the
    batch, or its own transpose) are kernels, not host steps: in the first three of the n16
    sample that have one, no host step computes a dot product."""
    seeds = [seed for seed in SAMPLES["n16"]
             if "batched product" in randcompose.make(seed).features][:3]
    assert len(seeds) == 3
    for seed in seeds:
        folder = tmp_path / str(seed)
        folder.mkdir()
        _, lowered = _compiled(randcompose.make(seed), folder)
        assert lowered.kernels
        assert not [step for step in lowered.host_steps if "dot-product" in str(step.term)]
