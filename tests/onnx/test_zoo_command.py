"""``glc zoo NAME -o DIR``: a zoo model made, quantized and imported as a program folder that
runs bit for bit against onnxruntime; the quantized model is kept beside it."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.onnx.kernels import session_options

pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("form", ["qdq", "qop"])
def test_zoo_writes_a_program_folder_that_runs_bit_exact(tmp_path, form):
    import onnxruntime

    folder = tmp_path / "squeezenet"
    runner = CliRunner()
    made = runner.invoke(main, ["zoo", "squeezenet", "-o", str(folder), "--resolution", "32",
                                "--activations", "uint8", "--form", form])
    assert made.exit_code == 0, made.output
    # the folder's reference is the kept model's own output on the folder's input, run as
    # glc runs onnxruntime (exact integer products on any x86: glc/onnx/kernels.py)
    session = onnxruntime.InferenceSession(str(folder / "model.onnx"), session_options(),
                                           providers=["CPUExecutionProvider"])
    (graph_input,) = session.get_inputs()
    expected = session.run(None, {graph_input.name: np.load(folder / f"{graph_input.name}.npy")})[0]
    assert np.array_equal(np.load(folder / "output.npy"), expected)
    ops = {node.op_type for node in _graph(folder / "model.onnx").node}
    assert ("QLinearConv" in ops) == (form == "qop")
    run = runner.invoke(main, ["run", str(folder), "--engine", "isa", "--config", "n16"])
    assert run.exit_code == 0, run.output


def _graph(path):
    import onnx

    return onnx.load(path).graph


def test_zoo_at_a_resolution_the_model_cannot_take_is_one_line_exit_1(tmp_path):
    result = CliRunner().invoke(main, ["zoo", "squeezenet", "-o", str(tmp_path / "p"),
                                       "--resolution", "4"])
    assert result.exit_code == 1
    assert "squeezenet at resolution 4 cannot be made" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "p").exists()


def test_zoo_replaces_its_own_folder_and_no_other(tmp_path):
    """The kept model is written with the rest (glc's record of the folder lists it): a second
    `glc zoo -o` of the folder replaces it; a folder a user added a file to is refused."""
    folder = tmp_path / "squeezenet"
    args = ["zoo", "squeezenet", "-o", str(folder), "--resolution", "32"]
    assert CliRunner().invoke(main, args).exit_code == 0
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    (folder / "notes.txt").write_text("mine")
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 1
    assert "holds 'notes.txt', which glc did not write" in refused.output
    assert (folder / "notes.txt").read_text() == "mine"
