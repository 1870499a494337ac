"""ONNX's requantization on the accelerator (glc/lower/linear.py, docs/isa.md STORE `linear`):
a quantized conv or dense layer — int8 products, the bias, requantize-linear with per-tensor or
per-channel multipliers, the zero point, relu, padding with the input's zero point — is one
kernel whose STOREs requantize, with no host step but the float input's quantization and the
float output's dequantization; the ISA simulator's result equals onnxruntime bit for bit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import float_model, weights
from onnx import helper

from glc.cli import main
from glc.onnx import layers
from glc.onnx.zoo import quantize

FORMS = [dict(), dict(activations="uint8"), dict(per_channel=True), dict(form="QOperator"),
         dict(activations="uint8", form="QOperator", per_channel=True)]
FORM_IDS = ["int8", "uint8", "per-channel", "qoperator", "qoperator-uint8-per-channel"]
# The float model's edges: its input quantized, its output dequantized, on the host.
EDGES = {"quantize-linear", "dequantize-linear"}


def _run(model, tmp_path, config: str, options, engine: str = "isa") -> dict:
    path = quantize(model, tmp_path / "model.onnx", **options)
    runner = CliRunner()
    folder = tmp_path / "program"
    imported = runner.invoke(main, ["import", str(path), "-o", str(folder)])
    assert imported.exit_code == 0, imported.output
    result = tmp_path / "result.npy"
    run = runner.invoke(main, ["run", str(folder), "--engine", engine, "--config", config,
                               "-o", str(result), "--json"])
    assert run.exit_code == 0, run.output
    assert np.array_equal(np.load(result), np.load(folder / "output.npy"))
    return json.loads(run.output)


def _host_operators(figures: dict) -> set[str]:
    return {step.split(": ", 1)[1].split()[-1] for step in figures["host"]}


def _conv_relu():
    rng = np.random.default_rng(1)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3],
                            pads=[1, 0, 2, 1])
    relu = helper.make_node("Relu", ["y"], ["z"])
    return float_model([node, relu], [("x", [1, 5, 6, 5])], ("z", None),
                       {"w": weights(rng, 20, 5, 3, 3), "b": rng.normal(0, 0.1, 20)})


def _dense_chain():
    rng = np.random.default_rng(2)
    first = helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1)
    relu = helper.make_node("Relu", ["h"], ["r"])
    second = helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], transB=1)
    return float_model([first, relu, second], [("x", [6, 40])], ("y", None),
                       {"w1": weights(rng, 24, 40), "b1": rng.normal(0, 0.1, 24),
                        "w2": weights(rng, 10, 24), "b2": rng.normal(0, 0.1, 10)})


def _pool_head():
    """ResNet's head: a conv, the global average pool (a fold on the vector unit, requantized
    in its STOREs), the classifier."""
    rng = np.random.default_rng(3)
    conv = helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[1, 1])
    relu = helper.make_node("Relu", ["c"], ["r"])
    pool = helper.make_node("GlobalAveragePool", ["r"], ["p"])
    flat = helper.make_node("Flatten", ["p"], ["f"], axis=1)
    dense = helper.make_node("Gemm", ["f", "w2", "b2"], ["y"], transB=1)
    return float_model([conv, relu, pool, flat, dense], [("x", [1, 6, 5, 5])], ("y", None),
                       {"w": weights(rng, 12, 6, 1, 1), "w2": weights(rng, 7, 12),
                        "b2": rng.normal(0, 0.1, 7)})


def _mobilenet_block(stride: int = 1, size: int = 9, channels: int = 20):
    """MobileNetV2's inverted residual without the residual: expand 1×1, ReLU6, depthwise
    3×3 (a Conv whose groups are its channels), ReLU6, project 1×1; NCHW."""
    rng = np.random.default_rng(5)
    expand = helper.make_node("Conv", ["x", "w1", "b1"], ["e"], kernel_shape=[1, 1])
    clip1 = helper.make_node("Clip", ["e", "lo", "hi"], ["r1"])
    depthwise = helper.make_node("Conv", ["r1", "w2", "b2"], ["d"], kernel_shape=[3, 3],
                                 pads=[1, 1, 1, 1], strides=[stride, stride], group=channels)
    clip2 = helper.make_node("Clip", ["d", "lo", "hi"], ["r2"])
    project = helper.make_node("Conv", ["r2", "w3", "b3"], ["y"], kernel_shape=[1, 1])
    return float_model([expand, clip1, depthwise, clip2, project], [("x", [1, 6, size, size])],
                       ("y", None),
                       {"w1": weights(rng, channels, 6, 1, 1),
                        "b1": rng.normal(0, 0.1, channels),
                        "w2": weights(rng, channels, 1, 3, 3),
                        "b2": rng.normal(0, 0.1, channels),
                        "w3": weights(rng, 7, channels, 1, 1), "b3": rng.normal(0, 0.1, 7),
                        "lo": np.array(0, np.float32), "hi": np.array(6, np.float32)})


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("config", ["n4", "n16"])
def test_a_mobilenet_block_requantizes_its_depthwise_conv_on_the_array(tmp_path, config,
                                                                        stride):
    """QDQ uint8, per-channel weights: the depthwise conv's bias and requantization in its
    kernels' STOREs like the dense convs' (no host step but the edges), the result equal to
    onnxruntime's."""
    options = dict(activations="uint8", per_channel=True)
    figures = _run(_mobilenet_block(stride), tmp_path, config, options)
    assert _host_operators(figures) == EDGES, figures["host"]


@pytest.mark.parametrize(("config", "size", "stride"), [("n16", 1, 1), ("n16", 2, 1),
                                                        ("n16", 4, 2), ("n4", 1, 1)])
def test_a_mobilenet_block_on_a_small_map_runs_its_depthwise_conv_on_the_vector_unit(
        tmp_path, config, size, stride):
    """MobileNetV2's last blocks at 32×32: 40 channels on a 1×1 or 2×2 map (NCHW, QDQ uint8,
    per-channel weights). The depthwise conv runs on the vector unit (glc/lower/
    depthwise_lowering.py, ``_on_vector``): its image channels-last, copied or stored so by the
    expand conv in its other orientation, its OIHW weights read as they lie or copied; no host
    step but the edges, the result equal to onnxruntime's."""
    figures = _run(_mobilenet_block(stride, size, 40), tmp_path, config,
                   dict(activations="uint8", per_channel=True))
    assert _host_operators(figures) == EDGES, figures["host"]
    assert "vector-depthwise" in {s["unit"] for s in _compiled_steps(tmp_path, config)}


def _compiled_steps(tmp_path, config: str, *options: str) -> list[dict]:
    """The kernel steps of the program ``_run`` imported, compiled with ``options``."""
    out = tmp_path / f"compiled{'-'.join(options)}"
    (source,) = (tmp_path / "program").glob("*.gls")
    compiled = CliRunner().invoke(main, ["compile", str(source), "--config", config,
                                         "-o", str(out), *options])
    assert compiled.exit_code == 0, compiled.output
    return [s for s in json.loads((out / "manifest.json").read_text())["steps"]
            if s["kind"] != "host"]


def test_a_depthwise_conv_s_image_is_stored_channels_last_by_the_expand_conv(tmp_path):
    """A stride-2 depthwise conv (kernels per group on the array) needs its image's channels
    contiguous; the NCHW expand conv before it is lowered again in its other orientation,
    storing it channels-last (glc/lower/depthwise_lowering.py, ``_image_reoriented``), where
    that costs fewer cycles than copying the image: only the weights are copied, the whole
    takes fewer cycles than with ``--disable reorient`` (which copies the image), and the
    result is onnxruntime's."""
    _run(_mobilenet_block(2, 8, 40), tmp_path, "n16", dict(activations="uint8", per_channel=True))
    reoriented = _compiled_steps(tmp_path, "n16")
    copied = _compiled_steps(tmp_path, "n16", "--disable", "reorient")
    copies = [s["inputs"] for s in reoriented if s["unit"] == "repack"]
    assert copies == [["r2_w"]]
    assert len([s for s in copied if s["unit"] == "repack"]) == 2
    assert sum(s["predicted_cycles"] for s in reoriented) < \
        sum(s["predicted_cycles"] for s in copied)


@pytest.mark.parametrize("options", FORMS, ids=FORM_IDS)
def test_global_pool_requantizes_on_the_vector_unit(tmp_path, options):
    """The pool's sum, its zero-point correction (an int32 bias) and its requantization are
    one fold: the STOREs add the bias and requantize (glc/lower/fusion.py, ``_fold_bias``),
    no pass over the sums."""
    figures = _run(_pool_head(), tmp_path, "n4", options)
    assert _host_operators(figures) <= EDGES, figures["host"]
    assert [s["unit"] for s in _compiled_steps(tmp_path, "n4")] == ["matmul", "fold", "matmul"]


@pytest.mark.parametrize("options", FORMS, ids=FORM_IDS)
@pytest.mark.parametrize("config", ["n4", "n16"])
def test_quantized_conv_is_one_kernel_bit_exact(tmp_path, options, config):
    figures = _run(_conv_relu(), tmp_path, config, options)
    assert figures["kernels"] == 1
    assert _host_operators(figures) <= EDGES, figures["host"]


@pytest.mark.parametrize("options", FORMS, ids=FORM_IDS)
def test_quantized_dense_chain_is_kernels_only(tmp_path, options):
    figures = _run(_dense_chain(), tmp_path, "n4", options)
    assert figures["kernels"] == 2
    assert _host_operators(figures) <= EDGES, figures["host"]


def _wide_conv():
    rng = np.random.default_rng(4)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3],
                            pads=[1, 1, 1, 1])
    return float_model([node], [("x", [1, 64, 7, 7])], ("y", None),
                       {"w": weights(rng, 128, 64, 3, 3), "b": rng.normal(0, 0.1, 128)})


def test_wide_filters_are_imported_hwio_and_run_faster(tmp_path, monkeypatch):
    """The import lays a 3×3 conv's filters of 64 channels out HWIO, read through a transpose
    (glc/onnx/layers.py, _filters): bit-exact against onnxruntime, and fewer cycles on n16
    than with the filters as the model stores them (OIHW)."""
    (tmp_path / "hwio").mkdir()
    hwio = _run(_wide_conv(), tmp_path / "hwio", "n16", {})
    text = (tmp_path / "hwio" / "program" / "model.gls").read_text()
    assert "(shape 3 3 64 128) int8)" in text and "(list 3 2 0 1)" in text
    monkeypatch.setattr(layers, "WIDE_CHANNELS", 1 << 30)
    (tmp_path / "oihw").mkdir()
    oihw = _run(_wide_conv(), tmp_path / "oihw", "n16", {})
    assert "(shape 128 64 3 3) int8)" in (tmp_path / "oihw" / "program" / "model.gls").read_text()
    assert hwio["cycles"] < 0.9 * oihw["cycles"], (hwio["cycles"], oihw["cycles"])


@pytest.mark.rtl
@pytest.mark.parametrize("make", [_conv_relu, _dense_chain, _pool_head, _mobilenet_block],
                         ids=["conv", "dense", "pool", "mobilenet-block"])
def test_quantized_layers_on_the_rtl_equal_onnxruntime(tmp_path, make):
    # Per-channel multipliers with uint8 activations: the conv's STOREs go by row (qrows), the
    # dense layers' and the pool's by column; the RTL's cycles are the model's.
    options = dict(activations="uint8", form="QOperator", per_channel=True)
    figures = _run(make(), tmp_path, "n4", options, engine="rtl")
    assert figures["match"] is True and figures["engine"] == "rtl"
    assert figures["cycles"] == figures["predicted_cycles"]
