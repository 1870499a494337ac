"""scripts/trace_network.py: the first tensor where an imported network differs from
onnxruntime, and a float conv's distance from a rounding tie."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import trace_network  # noqa: E402

from glc.onnx import fusions  # noqa: E402
from glc.onnx.importer import import_model  # noqa: E402

DATA = Path(__file__).parent / "data"


def test_the_trace_names_the_int8_pool_read_as_uint8s(tmp_path, monkeypatch):
    """With the pool's type read wrong (every fused QDQ pool uint8's, as before fusions.
    fused_offset), the first tensor that differs is the QLinearAveragePool onnxruntime fused
    in int8, and only tensors after it; with it read right, none differs."""
    model = DATA / "qdq-int8-kept-average-pool.onnx"
    monkeypatch.setattr(fusions, "fused_offset", lambda t, node, reader: 128)
    wrong = trace_network.trace(model, import_model(model, tmp_path / "wrong").folder)
    monkeypatch.undo()
    right = trace_network.trace(model, import_model(model, tmp_path / "right").folder)
    differing = [row for row in wrong if row.differ]
    assert differing and differing[0].op == "QLinearAveragePool"
    compared = [row for row in right if row.differ is not None]
    # the convs and the pool, and the float Add onnxruntime keeps (float32 tensors are
    # compared too)
    assert [row.define for row in compared] == ["a", "p", "b", "e"]
    assert all(row.differ == 0 for row in compared)
    assert [row.tensor for row in wrong] == [row.tensor for row in right]
    before = [row.tensor for row in wrong].index(differing[0].tensor)
    assert all(row.differ in (0, None) for row in wrong[:before])


def test_a_float_convs_differing_code_is_measured_against_the_tie(tmp_path):
    """A genuine float-reference (tests/onnx/data/qdq-int8-float-conv-near-tie.onnx: the
    cut-down Add network, 16 channels 16×16, symmetric int8): onnxruntime runs conv ``b`` in
    float and its code differs from glc's integer reading at one of 4 096 outputs, whose exact
    value is 0.4999993 quanta — onnxruntime's float order rounds it up, the exact value (and
    glc) down."""
    model = DATA / "qdq-int8-float-conv-near-tie.onnx"
    folder = import_model(model, tmp_path / "p").folder
    first = next(row for row in trace_network.trace(model, folder) if row.differ)
    assert (first.define, first.differ) == ("b", 1)
    ((index, theirs, ours, quanta),) = trace_network.tie(model, folder, "b")
    assert (theirs, ours) == (1, 0) and 0.4999990 < quanta < 0.5, index


def test_the_tie_takes_onnx_names_as_an_exporter_writes_them(tmp_path):
    """The same network with torch.onnx.export's names: the input ``input`` (a word of the
    language, saved by the import as ``input_2``) and the conv's output ``/m/b.0/Conv_output_0``
    (its define ``m_b_0_Conv_output_0``); ``--tie`` takes the ONNX name and finds both (each was
    a KeyError before, on every torchvision model of the suite)."""
    import onnx

    model = onnx.load(DATA / "qdq-int8-float-conv-near-tie.onnx")
    renamed = {"x": "input", "b": "/m/b.0/Conv_output_0"}
    for node in model.graph.node:
        node.input[:] = [renamed.get(name, name) for name in node.input]
        node.output[:] = [renamed.get(name, name) for name in node.output]
    model.graph.input[0].name = "input"
    path = tmp_path / "exported.onnx"
    onnx.save(model, path)
    folder = import_model(path, tmp_path / "p").folder
    ((index, theirs, ours, quanta),) = trace_network.tie(path, folder, "/m/b.0/Conv_output_0")
    assert (theirs, ours) == (1, 0) and 0.4999990 < quanta < 0.5, index
