"""Slice and Split (glc/onnx/movement.py): a channel split as ShuffleNetV2 makes it — half the
channels kept, half through a branch, concatenated and shuffled — imported as views, exact
against onnxruntime on the interpreter and the ISA simulator, in each quantized form."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, quantize, weights

from glc.errors import GlcError
from glc.inputs import load
from glc.interp import interpret
from glc.onnx.importer import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402

C, H, W = 16, 5, 7
INT64_MAX = np.iinfo(np.int64).max


def _halves(how: str) -> tuple[list, dict, int]:
    """Nodes splitting ``a`` along the channels into ``left`` and ``right``, their constants,
    and the opset they are spelled in."""
    half = C // 2
    if how == "split":  # opset 13: the sizes an input
        return ([helper.make_node("Split", ["a", "sizes"], ["left", "right"], axis=1)],
                {"sizes": np.array([half, half], np.int64)}, 13)
    if how == "split-even":  # no sizes: as many equal parts as outputs
        return [helper.make_node("Split", ["a"], ["left", "right"], axis=1)], {}, 13
    if how == "split-attribute":  # opset 11: the sizes an attribute
        return ([helper.make_node("Split", ["a"], ["left", "right"], axis=1,
                                  split=[half, half])], {}, 11)
    # Slice as torch exports x[:, :c] and x[:, c:]: an end of INT64_MAX, a negative start
    return ([helper.make_node("Slice", ["a", "s0", "e0", "ax"], ["left"]),
             helper.make_node("Slice", ["a", "s1", "e1", "ax"], ["right"])],
            {"s0": np.array([0], np.int64), "e0": np.array([half], np.int64),
             "s1": np.array([-half], np.int64), "e1": np.array([INT64_MAX], np.int64),
             "ax": np.array([1], np.int64)}, 13)


def _shuffle_unit(how: str, seed: int = 0):
    """conv → split → (left, conv(right)) → concat → channel shuffle → conv."""
    rng = np.random.default_rng(seed)
    halves, constants, opset = _halves(how)
    half = C // 2
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             *halves,
             helper.make_node("Conv", ["right", "w2"], ["branch"], pads=[1, 1, 1, 1]),
             helper.make_node("Concat", ["left", "branch"], ["joined"], axis=1),
             helper.make_node("Reshape", ["joined", "grouped"], ["g"]),
             helper.make_node("Transpose", ["g"], ["gt"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["gt", "flat"], ["shuffled"]),
             helper.make_node("Conv", ["shuffled", "w3"], ["y"])]
    constants |= {"w1": weights(rng, C, C, 3, 3), "w2": weights(rng, half, half, 3, 3),
                  "w3": weights(rng, C, C, 1, 1),
                  "grouped": np.array([1, 2, half, H, W], np.int64),
                  "flat": np.array([1, C, H, W], np.int64)}
    return float_model(nodes, [("x", (1, C, H, W))], ("y", (1, C, H, W)), constants, opset)


FORMS = [("uint8", "QDQ"), ("int8", "QDQ"), ("uint8", "QOperator")]


@pytest.mark.parametrize("how", ["split", "split-even", "split-attribute", "slice"])
@pytest.mark.parametrize(("activations", "form"), FORMS)
def test_a_channel_split_is_exact_against_onnxruntime(tmp_path, how, activations, form):
    path = quantize(_shuffle_unit(how), tmp_path / "m.onnx", activations=activations,
                    form=form)
    result = import_model(path, tmp_path / "p")
    assert result.program.read_text().count("access-slice") == 2
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)


@pytest.mark.parametrize(("activations", "form"), FORMS)
def test_a_channel_split_runs_on_the_accelerator(tmp_path, activations, form):
    path = quantize(_shuffle_unit("slice", seed=3), tmp_path / "m.onnx",
                    activations=activations, form=form)
    bundle = load(import_model(path, tmp_path / "p").folder)
    exact_on_the_isa(bundle)


def _one_slice(tmp_path, starts, ends, axes, steps=None):
    rng = np.random.default_rng(0)
    inputs = ["a", "s", "e", "ax"] + (["st"] if steps is not None else [])
    constants = {"w1": weights(rng, C, C, 1, 1), "s": np.array(starts, np.int64),
                 "e": np.array(ends, np.int64), "ax": np.array(axes, np.int64)}
    if steps is not None:
        constants["st"] = np.array(steps, np.int64)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"]),
             helper.make_node("Slice", inputs, ["y"], name="cut")]
    model = float_model(nodes, [("x", (1, C, H, W))], ("y", None), constants)
    return quantize(model, tmp_path / "m.onnx", activations="uint8", form="QDQ")


def test_a_slice_of_two_axes_with_negative_indices(tmp_path):
    path = _one_slice(tmp_path, [-4, 1], [INT64_MAX, -1], [-1, 2])
    result = import_model(path, tmp_path / "p")
    bundle = load(result.folder)
    assert bundle.expected.shape == (1, C, H - 2, 4)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)


@pytest.mark.parametrize(("starts", "ends", "steps", "message"), [
    ([0], [C], [2], "only steps of 1 are supported"),
    ([3], [3], None, "is empty"),
])
def test_a_slice_glc_cannot_take_is_refused_at_its_node(tmp_path, starts, ends, steps, message):
    path = _one_slice(tmp_path, starts, ends, [1], steps)
    with pytest.raises(GlcError, match=message) as caught:
        import_model(path, tmp_path / "p")
    assert "cut" in str(caught.value)


def test_a_slice_of_an_axis_out_of_range_is_refused_at_its_node(tmp_path):
    """onnxruntime's quantizer refuses such a model, so the axis is changed after it."""
    path = _one_slice(tmp_path, [0], [2], [1])
    model = onnx.load(path)
    (axes,) = [i for i in model.graph.initializer if i.name == "ax"]
    axes.CopyFrom(numpy_helper.from_array(np.array([4], np.int64), "ax"))
    onnx.save(model, path)
    # onnxruntime loads the model before the translation reads it (issue 41, item 9): its
    # shape inference refuses the axis first, in one line naming the node
    with pytest.raises(GlcError) as caught:
        import_model(path, tmp_path / "p")
    assert caught.value.message == ("onnxruntime cannot load the model: Node (cut) Op (Slice) "
                                    "[ShapeInferenceError] Unexpected axis value: 4. Expected "
                                    "range [-4, 4)")
