"""scripts/bench.py --only models (scripts/benchmarks/models.py, scripts/model_suite.py): a
small graph built with onnx.helper goes through the suite's own per-case pipeline (quantized in
the four forms, cached, imported, compiled, run on the ISA simulator in a child process), and
its rows through the tables, the ranking and ``--json``; without torch, as in CI. Only the
export of an architecture needs torch, and is skipped without it."""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest import float_model, weights
from onnx import helper

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import bench  # noqa: E402
import model_suite  # noqa: E402
from benchmarks import models  # noqa: E402

from glc.errors import GlcError  # noqa: E402
from glc.onnx.importer import onnxruntime_output  # noqa: E402


def _small(path: Path, outputs: int = 1) -> Path:
    """conv 3×3 → relu over a 1×4×6×6 image, saved as a float model; with ``outputs`` 2 the
    relu's input is a second output (glc imports one)."""
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    model = float_model(nodes, [("x", (1, 4, 6, 6))], ("y", (1, 8, 6, 6)),
                        {"w": weights(rng, 8, 4, 3, 3), "b": rng.normal(0, 0.1, 8)})
    if outputs == 2:
        model.graph.output.append(helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT,
                                                                (1, 8, 6, 6)))
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, path)
    return path


def _cases(source: Path) -> list[models.Case]:
    return [models.Case("small", None, form, source=source) for form in model_suite.FORMS]


def test_a_small_graph_in_each_form_is_a_row_of_figures_or_a_refusal(tmp_path):
    source = _small(tmp_path / "small" / "float.onnx")
    rows = models.measure_all(_cases(source), 1, 300.0, tmp_path)
    assert [(r["model"], r["input"], r["form"]) for r in rows] == \
        [("small", "-", form) for form in model_suite.FORMS]
    for row in rows:  # figures or one refusal line, never both missing
        assert ("cycles" in row) != ("refusal" in row), row
        assert "\n" not in row.get("refusal", "")
    # QDQ with uint8 activations: the conv on the array, exact (tests/onnx's conv tests).
    (u8,) = [r for r in rows if r["form"] == "qdq-u8"]
    assert u8["bit-exact"] is True and u8["kernels"] >= 1 and u8["cycles"] > 0
    assert u8["import s"] >= 0 and u8["compile s"] >= 0 and 0 < u8["vs roofline"] <= 1
    assert "dot-product" not in u8["host by op"]
    # each form quantized once, beside the float model, in the format onnxruntime runs
    for form in model_suite.FORMS:
        cached = source.with_name(f"{form}.onnx")
        feeds = {"x": np.ones((1, 4, 6, 6), np.float32)}
        assert onnxruntime_output(cached, feeds).shape == (1, 8, 6, 6)
    stamps = {f: source.with_name(f"{f}.onnx").stat().st_mtime_ns for f in model_suite.FORMS}
    again = models.measure_all(_cases(source)[:1], 1, 300.0, tmp_path)
    assert again[0]["cycles"] == u8["cycles"]
    assert stamps == {f: source.with_name(f"{f}.onnx").stat().st_mtime_ns
                      for f in model_suite.FORMS}


def test_forms_differ_as_their_quantizers_do(tmp_path):
    """QDQ forms hold QuantizeLinear nodes, QOperator a QLinearConv, dynamic a
    DynamicQuantizeLinear; only qdq-u8's weights are per-channel (a scale per channel), and
    qdq-s8's activations int8 with zero points 0 (symmetric)."""
    source = _small(tmp_path / "small" / "float.onnx")
    ops, graphs = {}, {}
    for form in model_suite.FORMS:
        graph = onnx.load(model_suite.quantized_model(source, form, 0)).graph
        graphs[form], ops[form] = graph, {n.op_type for n in graph.node}
    assert "QuantizeLinear" in ops["qdq-u8"] and "QuantizeLinear" in ops["qdq-s8"]
    assert "QLinearConv" in ops["qop-u8"]
    assert "DynamicQuantizeLinear" in ops["dynamic"]
    inits = {f: {i.name: onnx.numpy_helper.to_array(i) for i in g.initializer}
             for f, g in graphs.items()}
    weight_scales = [v for k, v in inits["qdq-u8"].items() if k.startswith("w") and "scale" in k]
    assert weight_scales and weight_scales[0].shape == (8,)
    zeros = [v for k, v in inits["qdq-s8"].items() if "zero_point" in k]
    assert not any(z.any() for z in zeros)  # the bias's int32 zero point among them
    assert {z.dtype for z in zeros} == {np.dtype(np.int8), np.dtype(np.int32)}


def test_a_refusal_names_its_stage_in_one_line(tmp_path):
    two = _small(tmp_path / "two" / "float.onnx", outputs=2)
    broken = tmp_path / "broken" / "float.onnx"
    broken.parent.mkdir()
    broken.write_bytes(b"not a model")
    rows = models.measure_all([models.Case("two", None, "qdq-u8", source=two),
                               models.Case("broken", None, "qdq-u8", source=broken)],
                              1, 300.0, tmp_path)
    assert rows[0]["refusal"] == "import: the model has 2 outputs; glc imports one"
    assert rows[1]["refusal"].startswith("quantize: ")


def test_a_hang_and_a_crash_are_rows(tmp_path, monkeypatch):
    source = _small(tmp_path / "small" / "float.onnx")
    (timed,) = models.measure_all(_cases(source)[:1], 1, 0.01, tmp_path)
    assert timed["refusal"] == "timeout: over 0.01 s"
    monkeypatch.setattr(models, "measure", lambda case, cache: os._exit(3))
    (died,) = models.measure_all(_cases(source)[:1], 1, 300.0, tmp_path)
    assert died["refusal"] == "crash: the process ended with status 3"


def test_an_exception_inside_glc_is_marked_a_traceback():
    from glc.onnx.importer import parse_input_shapes

    with pytest.raises(AttributeError) as raised:
        parse_input_shapes((None,))
    line = models._exception(raised.value, in_glc=True)
    assert line.startswith("TRACEBACK AttributeError: ") and "glc/onnx/importer.py:" in line
    assert not models._exception(raised.value, in_glc=False).startswith("TRACEBACK")


def test_a_missing_package_refuses_its_architectures_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(model_suite.ARCHITECTURES, "resnet18", model_suite.Architecture(
        lambda size: None, "no_such_package_for_glc", 32))
    row = models.measure(models.Case("resnet18", 32, "qdq-u8"), tmp_path)
    assert row["refusal"] == ("export: no_such_package_for_glc cannot be imported "
                              "(pip install -e '.[models]')")


def test_without_torch_the_section_is_skipped_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(model_suite, "missing_extras", lambda: ["torch", "torchvision"])
    with pytest.raises(GlcError, match="needs torch"):
        models.run()
    monkeypatch.setattr(sys, "argv", ["bench.py", "--only", "models"])
    with pytest.raises(SystemExit) as exited:
        bench.main()
    assert exited.value.code == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "models: skipped: the model suite needs torch, which cannot be imported "
        "(pip install -e '.[models]')"]


ROWS = [  # three architectures, refusals written as glc writes them
    {"model": "a", "input": "32x32", "form": "qdq-u8", "import s": 1.0, "bit-exact": True,
     "cycles": 10},
    {"model": "a", "input": "32x32", "form": "dynamic",
     "refusal": "import: node 'q0' (DynamicQuantizeLinear): this operator is not supported"},
    {"model": "b", "input": "-", "form": "qdq-u8",
     "refusal": "import: node 'b/m1' (MatMul): got dims (1, 2, 64, 64) and (1, 2, 64, 64)"},
    {"model": "b", "input": "-", "form": "dynamic",
     "refusal": "import: node 'q1' (DynamicQuantizeLinear): this operator is not supported"},
    {"model": "c", "input": "-", "form": "qdq-u8",
     "refusal": "import: node 'c/m9' (MatMul): got dims (1, 4, 8, 8) and (1, 4, 8, 8)"},
    {"model": "c", "input": "-", "form": "qop-u8",
     "refusal": "import: node 'c/m9' (MatMul): got dims (1, 4, 8, 8) and (1, 4, 8, 8)"},
    {"model": "c", "input": "-", "form": "dynamic", "import s": 2.0, "bit-exact": False,
     "cycles": 5},
    {"model": "c", "input": "-", "form": "qdq-s8",
     "refusal": "quantize: onnxruntime cannot load the model: Type Error: input parameter "
                "(c.layer.0.bias_quantized) of operator (QGemm) in node (/c/MatMul_quant)"},
]


def test_refusals_are_ranked_by_the_architectures_they_block():
    (_, ranking), (_, per_model) = models.summaries(ROWS)
    # DynamicQuantizeLinear blocks a and b (2 cases); the batched MatMul b and c (3 cases):
    # a tie on architectures, broken by cases
    assert [(r["refusal"], r["architectures"], r["cases"], r["blocks"]) for r in ranking] == [
        ("import: (MatMul): got dims (…) and (…)", 2, 3, "b, c"),
        ("import: (DynamicQuantizeLinear): this operator is not supported", 2, 2, "a, b"),
        ("quantize: onnxruntime cannot load the model: Type Error: input parameter (…) of "
         "operator (QGemm) in node (…)", 1, 1, "c")]
    assert per_model == [
        {"model": "a", "imports": "qdq-u8 32x32", "runs": "qdq-u8 32x32",
         "bit-exact": "qdq-u8 32x32"},
        {"model": "b", "imports": "none", "runs": "none", "bit-exact": "none"},
        {"model": "c", "imports": "dynamic", "runs": "dynamic", "bit-exact": "none"}]


def test_the_table_and_json_carry_the_rows_and_the_ranking(monkeypatch, capsys):
    monkeypatch.setattr(models, "run", lambda **options: ROWS)
    monkeypatch.setattr(sys, "argv", ["bench.py", "--only", "models", "--json"])
    bench.main()
    printed = json.loads(capsys.readouterr().out)
    assert printed["models"] == ROWS
    assert printed["models: refusals, ranked by the architectures they block"][1]["cases"] == 2
    monkeypatch.setattr(sys, "argv", ["bench.py", "--only", "models"])
    bench.main()
    text = capsys.readouterr().out
    assert "## models: " in text and "### refusals, ranked by the architectures they block" in text
    assert text.count("| model ") == 2  # the rows' table and the per-architecture one


def test_the_options_reach_the_section(monkeypatch):
    seen = {}

    @functools.wraps(models.run)  # its signature: bench.py passes the options it names
    def run(**options):
        seen.update(options)
        return ROWS
    monkeypatch.setattr(models, "run", run)
    monkeypatch.setattr(sys, "argv", ["bench.py", "--only", "models", "--json", "--jobs", "2",
                                      "--full", "--model", "vit", "--model", "gru"])
    bench.main()
    assert seen == {"jobs": 2, "full": True, "models": ["vit", "gru"]}


def test_the_cases_are_every_model_in_every_form():
    chosen = models.cases()
    assert len(chosen) == len(model_suite.ARCHITECTURES) * len(model_suite.FORMS)
    full = models.cases(full=True, models=["resnet18", "resnet34"])
    assert [(c.model, c.size) for c in full if c.form == "dynamic"] == [
        ("resnet18", 32), ("resnet18", 224), ("resnet34", 32)]
    with pytest.raises(GlcError, match="no model nope"):
        models.cases(models=["nope"])


def test_an_architecture_exports_with_seeded_weights(tmp_path):
    """torch's part: the keyword spotter exported twice with one seed gives the same weights,
    with another seed others; onnxruntime runs the export."""
    pytest.importorskip("torch", reason="the models extra is not installed")
    first = model_suite.float_model(tmp_path / "a", "kws-conv1d", None, 0)
    same = model_suite.float_model(tmp_path / "b", "kws-conv1d", None, 0)
    other = model_suite.float_model(tmp_path / "c", "kws-conv1d", None, 1)

    def weights_of(path):
        return [onnx.numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer]
    assert all(np.array_equal(x, y) for x, y in zip(weights_of(first), weights_of(same),
                                                    strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(weights_of(first), weights_of(other),
                                                        strict=True))
    out = onnxruntime_output(first, model_suite.sample_inputs(first, 0, 1)[0])
    assert out.shape == (1, 12)
