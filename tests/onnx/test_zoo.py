"""The model zoo (glc/onnx/zoo.py): every light architecture with seeded weights, quantized by
onnxruntime at a reduced resolution, imported, compiled and run with ``glc run --engine isa``;
the result equals onnxruntime's output bit for bit. ResNet-50 and SqueezeNet also run on the n16
RTL (issue 11), their cycles equal to the model's. The resolution keeps the module to minutes on
two cores (each model's smallest that it and onnxruntime's quantizer take); full size belongs
to scripts/bench.py (``--only onnx``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.onnx.importer import import_model
from glc.onnx.zoo import make
from glc.rewrites import DEFAULT, select

UINT8 = dict(activations="uint8", per_channel=True)

# (model, resolution, quantization). uint8 activations: then onnxruntime fuses every conv into
# an integer QLinearConv, so its output is exact on every CPU; with int8 ones it runs some as
# float Conv (ResNet-50: 20 of the 53), whose rounding is its sgemm's (docs/onnx.md, "The zoo").
# AlexNet, ZFNet-512 and Inception v1 need 64 (a pool window, onnxruntime's shape inference),
# Inception v2 128. ~4 minutes of CPU in all.
ZOO = [
    ("resnet50", 32, UINT8),  # ~25 s of CPU: its residual DAG compiled as a DAG (docs/onnx.md)
    ("squeezenet", 32, dict()),
    ("squeezenet", 32, UINT8),
    ("squeezenet", 32, dict(form="QOperator")),
    ("bvlc_alexnet", 64, UINT8),
    ("densenet121", 32, UINT8),
    ("inception_v1", 64, UINT8),
    ("inception_v2", 128, UINT8),
    ("shufflenet", 32, UINT8),
    ("vgg19", 32, UINT8),  # ~70 s: its 140 M weights quantized and compiled
    ("zfnet512", 64, UINT8),
]


# On the RTL (~25 s and ~100 s on two cores; the n16 build is the RTL tests' own).
RTL_ZOO = [ZOO[0], ZOO[1]]


def _ids(models):
    return [f"{n}@{r}-{'-'.join(map(str, o.values())) or 'int8'}" for n, r, o in models]


def _run_zoo(tmp_path, name, resolution, options, engine: str) -> dict:
    """The model made, imported and run on ``engine`` (n16); its figures, after checking the
    result equals onnxruntime's output bit for bit."""
    model = make(name, tmp_path / f"{name}.onnx", resolution=resolution, **options)
    runner = CliRunner()
    folder = tmp_path / "program"
    imported = runner.invoke(main, ["import", str(model), "-o", str(folder)])
    assert imported.exit_code == 0, imported.output
    result = tmp_path / "result.npy"
    run = runner.invoke(main, ["run", str(folder), "--engine", engine, "--config", "n16",
                               "-o", str(result), "--json", "--report"])
    assert run.exit_code == 0, run.output
    figures = json.loads(run.output)
    assert figures["kernels"] > 0
    assert np.array_equal(np.load(result), np.load(folder / "output.npy"))
    # Every step names the ONNX node it computes (issue 41 item 15: an imported SqueezeNet left
    # 8 of 44 steps unnamed), a repack the node of the step it serves.
    assert [s["step"] for s in figures["steps"] if not s["node"]] == []
    return figures


@pytest.mark.parametrize("name,resolution,options", ZOO, ids=_ids(ZOO))
def test_zoo_model_runs_bit_exact_on_the_isa(tmp_path, name, resolution, options):
    _run_zoo(tmp_path, name, resolution, options, "isa")


def test_no_step_of_squeezenet_at_160_runs_for_no_reader(tmp_path):
    # Issue 41 item 15: a fire's 3×3 conv lowered again to write its concatenation's band read
    # an im2col copy, and the transposed copy its first lowering had made stayed, read by no
    # step and named after no node (SqueezeNet at 224: 2 such, 6 294 cycles; at 160: 1).
    folder = import_model(make("squeezenet", tmp_path / "squeezenet.onnx", resolution=160),
                          tmp_path / "program").folder
    config = load_config("n16")
    program = compile_program(load(folder), rules=select(DEFAULT, config.array_size),
                              config=config).lowered
    read = {name for step in program.steps for name in step.inputs} | {program.output.buffer}
    assert [step.name for step in program.steps if step.output not in read] == []


@pytest.mark.parametrize("name,resolution,options", RTL_ZOO, ids=_ids(RTL_ZOO))
def test_zoo_model_runs_bit_exact_on_the_rtl_in_the_models_cycles(tmp_path, name, resolution,
                                                                  options):
    figures = _run_zoo(tmp_path, name, resolution, options, "rtl")
    assert figures["engine"] == "rtl" and figures["match"] is True
    assert figures["cycles"] == figures["predicted_cycles"]
    # Every layer on the accelerator, residual adds (VECTOR lin) and SqueezeNet's
    # concatenations of differently quantized parts (each requantized by a `lin`) included:
    # the host only quantizes the float input and dequantizes the logits.
    assert [h.split(": ")[1] for h in figures["host"]] == ["quantize-linear",
                                                            "dequantize-linear"]
