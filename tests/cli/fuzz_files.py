"""What fuzz_inputs.py's import and output targets draw: hostile ONNX models (valid quantized
models mutated in their graph — dims, names, nodes, types, opsets, initializers, attributes — or
in their bytes — flipped, truncated, spliced, emptied), ``--input-shape`` options right and
wrong, and ``-o`` targets in a sandbox (new, nested, empty, a user's folder, glc's own folder with
or without a user's file added, a file, the command's input, ``.``, ``..``, symlinks).

onnx and onnxruntime (the ``onnx`` extra) are imported only when a model is drawn."""

from __future__ import annotations

import functools
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

# Names the importer must keep apart from the language and from the folder's files.
NAMES = ["shape", "compute", "output", "input", "define", "relu", "access", "x", "w", "",
         "a\nb", "n\x00", "c\u2028d", "é", "1abc", "a b", "(", ";", "x_scale", "output.npy",
         "../up", "a" * 300]
OP_TYPES = ["Conv", "Relu", "Add", "MatMul", "Gemm", "Concat", "QuantizeLinear",
            "DequantizeLinear", "Softmax", "MaxPool", "GlobalAveragePool", "Reshape",
            "Transpose", "Mul", "Foo", "QLinearConv", "Identity", "Flatten"]
DIMS = [0, -1, 1, 2, 3, 7, 9, 64, 1 << 31, 1 << 40]
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -1.0, 1e30, 1e-30, 0.5, 3.0, 127.0, -128.0]
DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64"]


# ---- the base models: small quantized graphs, built once per process -----------------------

def _float_model(nodes, inputs, output, initializers):
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in inputs],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


@functools.cache
def base_models() -> tuple[bytes, ...]:
    """Serialized quantized models: a QDQ conv + relu, a QDQ matmul + add + relu, a QOperator
    conv + max pool, and the first with a symbolic batch dim (``--input-shape`` needed)."""
    from onnx import helper

    from glc.onnx.zoo import quantize

    rng = np.random.default_rng(0)

    def w(*dims):
        return rng.normal(0, 0.3, dims).astype(np.float32)

    conv = _float_model([helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3],
                                          name="c1"),
                         helper.make_node("Relu", ["y"], ["z"], name="r1")],
                        [("x", [1, 3, 8, 8])], "z", {"w": w(4, 3, 3, 3)})
    dense = _float_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
                          helper.make_node("Add", ["y", "b"], ["s"], name="add"),
                          helper.make_node("Relu", ["s"], ["z"], name="r1")],
                         [("x", [4, 8])], "z", {"w": w(8, 6), "b": w(6)})
    pooled = _float_model([helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[1, 1],
                                            name="c1"),
                           helper.make_node("MaxPool", ["y"], ["z"], kernel_shape=[2, 2],
                                            strides=[2, 2], name="pool")],
                          [("x", [1, 4, 6, 6])], "z", {"w": w(8, 4, 1, 1)})
    found = []
    with tempfile.TemporaryDirectory() as folder:
        for k, (model, form) in enumerate([(conv, "QDQ"), (dense, "QDQ"),
                                           (pooled, "QOperator")]):
            path = quantize(model, Path(folder) / f"m{k}.onnx", form=form)
            found.append(path.read_bytes())
    import onnx

    symbolic = onnx.load_from_string(found[0])
    symbolic.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    found.append(symbolic.SerializeToString())
    return tuple(found)


# ---- graph edits: each takes the model and hypothesis's draw --------------------------------

def _tensor_names(model) -> list[str]:
    graph = model.graph
    names = {*(v.name for v in graph.input), *(v.name for v in graph.output),
             *(i.name for i in graph.initializer)}
    for node in graph.node:
        names.update(node.input)
        names.update(node.output)
    return sorted(names)


def _pick(draw, items):
    return items[draw(st.integers(0, len(items) - 1))] if len(items) else None


def _edit_dim(model, draw):
    values = [*model.graph.input, *model.graph.output]
    dims = [d for v in values for d in v.type.tensor_type.shape.dim]
    dim = _pick(draw, dims)
    if dim is not None:
        if draw(st.booleans()):
            dim.dim_value = draw(st.sampled_from(DIMS))
        else:
            dim.dim_param = draw(st.sampled_from(["N", "", "batch"]))


def _rename(model, draw):
    old = _pick(draw, _tensor_names(model))
    new = draw(st.sampled_from(NAMES) | st.text(max_size=4))
    everywhere = draw(st.booleans())
    for node in model.graph.node:
        for field in (node.input, node.output):
            for k, name in enumerate(field):
                if name == old and (everywhere or draw(st.booleans())):
                    field[k] = new
    for value in [*model.graph.input, *model.graph.output, *model.graph.initializer]:
        if value.name == old and (everywhere or draw(st.booleans())):
            value.name = new


def _rename_node(model, draw):
    node = _pick(draw, model.graph.node)
    if node is not None:
        node.name = draw(st.sampled_from(NAMES) | st.text(max_size=4))


def _drop_node(model, draw):
    if model.graph.node:
        del model.graph.node[draw(st.integers(0, len(model.graph.node) - 1))]


def _duplicate_node(model, draw):
    node = _pick(draw, model.graph.node)
    if node is not None:
        model.graph.node.insert(draw(st.integers(0, len(model.graph.node))), node)


def _shuffle_nodes(model, draw):
    nodes = list(model.graph.node)
    order = draw(st.permutations(range(len(nodes))))
    del model.graph.node[:]
    model.graph.node.extend(nodes[k] for k in order)


def _elem_type(model, draw):
    value = _pick(draw, [*model.graph.input, *model.graph.output])
    if value is not None:
        value.type.tensor_type.elem_type = draw(st.integers(0, 25))


def _clear_shape(model, draw):
    value = _pick(draw, [*model.graph.input, *model.graph.output])
    if value is not None:
        value.type.tensor_type.ClearField("shape")


def _opset(model, draw):
    model.opset_import[0].version = draw(st.sampled_from([0, 1, 7, 10, 13, 19, 21, 23, 99]))
    if draw(st.booleans()):
        model.opset_import[0].domain = draw(st.sampled_from(["", "ai.onnx", "foo",
                                                             "com.microsoft"]))


def _ir_version(model, draw):
    model.ir_version = draw(st.sampled_from([0, 1, 3, 7, 8, 10, 99]))


def _initializer_values(model, draw):
    from onnx import numpy_helper

    initializer = _pick(draw, model.graph.initializer)
    if initializer is None:
        return
    array = numpy_helper.to_array(initializer)
    dtype = draw(st.sampled_from([str(array.dtype)] * 3 + DTYPES))
    if draw(st.booleans()):
        shape = array.shape
    else:
        shape = tuple(draw(st.lists(st.integers(0, 5), max_size=3)))
    values = np.full(shape, draw(st.sampled_from(SPECIAL)))
    with np.errstate(all="ignore"):
        initializer.CopyFrom(numpy_helper.from_array(values.astype(dtype), initializer.name))


def _initializer_dims(model, draw):
    initializer = _pick(draw, model.graph.initializer)
    if initializer is not None:
        initializer.dims[:] = draw(st.lists(st.sampled_from(DIMS), max_size=4))


def _drop_initializer(model, draw):
    if model.graph.initializer:
        del model.graph.initializer[draw(st.integers(0, len(model.graph.initializer) - 1))]


def _attribute(model, draw):
    from onnx import helper

    node = _pick(draw, model.graph.node)
    if node is None:
        return
    name = _pick(draw, [a.name for a in node.attribute]) or "axis"
    kept = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(kept)
    kind = draw(st.sampled_from(["int", "ints", "float", "string", "none"]))
    value = {"int": lambda: draw(st.sampled_from([-5, -1, 0, 1, 2, 3, 100])),
             "ints": lambda: draw(st.lists(st.sampled_from([-1, 0, 1, 2, 3, 9]), max_size=5)),
             "float": lambda: draw(st.sampled_from(SPECIAL)),
             "string": lambda: draw(st.sampled_from(["SAME_UPPER", "VALID", "x", ""])),
             "none": lambda: None}[kind]()
    if value is not None and value != []:
        node.attribute.append(helper.make_attribute(name, value))


def _op_type(model, draw):
    node = _pick(draw, model.graph.node)
    if node is not None:
        node.op_type = draw(st.sampled_from(OP_TYPES))


def _node_inputs(model, draw):
    node = _pick(draw, model.graph.node)
    if node is None:
        return
    choice = draw(st.sampled_from(["drop", "add", "swap"]))
    names = _tensor_names(model)
    if choice == "drop" and node.input:
        del node.input[draw(st.integers(0, len(node.input) - 1))]
    elif choice == "add":
        node.input.append(draw(st.sampled_from(["", "nowhere", *names])))
    elif node.input:
        node.input[draw(st.integers(0, len(node.input) - 1))] = draw(st.sampled_from(names))


def _outputs(model, draw):
    import copy

    outputs = model.graph.output
    choice = draw(st.sampled_from(["add", "drop", "point"]))
    if choice == "add" and outputs:
        outputs.append(copy.deepcopy(outputs[0]))
        outputs[-1].name = draw(st.sampled_from(_tensor_names(model)))
    elif choice == "drop" and outputs:
        del outputs[0]
    elif outputs:
        outputs[0].name = draw(st.sampled_from([*_tensor_names(model), "nothing"]))


def _domain(model, draw):
    node = _pick(draw, model.graph.node)
    if node is not None:
        node.domain = draw(st.sampled_from(["foo.bar", "com.microsoft", "ai.onnx.ml", ""]))


def _constant_node(model, draw):
    from onnx import helper, numpy_helper

    value = np.full(draw(st.lists(st.integers(0, 3), max_size=2)),
                    draw(st.sampled_from(SPECIAL)), np.float32)
    attribute = draw(st.sampled_from(["value", "value_float", "value_ints", "sparse_value"]))
    payload = {"value": numpy_helper.from_array(value), "value_float": 1.5,
               "value_ints": [1, 2], "sparse_value": numpy_helper.from_array(value)}[attribute]
    try:
        node = helper.make_node("Constant", [], [_pick(draw, _tensor_names(model)) or "k"],
                                **{attribute: payload})
    except (TypeError, ValueError):
        return
    model.graph.node.insert(draw(st.integers(0, len(model.graph.node))), node)


GRAPH_EDITS = [_edit_dim, _rename, _rename_node, _drop_node, _duplicate_node, _shuffle_nodes,
               _elem_type, _clear_shape, _opset, _ir_version, _initializer_values,
               _initializer_dims, _drop_initializer, _attribute, _op_type, _node_inputs,
               _outputs, _domain, _constant_node]


def _byte_edits(data: bytes, draw) -> bytes:
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["flip", "insert", "splice", "truncate", "empty"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if action == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif action == "truncate":
            del data[at:]
        elif action == "insert":
            data[at:at] = draw(st.binary(max_size=16))
        elif action == "splice":  # a piece of another model
            other = draw(st.sampled_from(base_models()))
            start = draw(st.integers(0, len(other)))
            data[at:at + draw(st.integers(0, 64))] = other[start:start + draw(st.integers(0, 64))]
        else:
            data = bytearray()
    return bytes(data)


@dataclass(frozen=True)
class Model:
    """A drawn model file and the ``--input-shape`` options given with it."""

    data: bytes
    input_shapes: tuple[str, ...]
    edits: tuple[str, ...]  # what was done to it, for a failure's report


def _input_shapes(model, draw) -> tuple[str, ...]:
    """Mostly none (a symbolic dim then gets its right one); else right, wrong or garbled ones.
    (Hypothesis favours small integers: the rare case is the largest.)"""
    if draw(st.integers(0, 5)) < 5:
        if model is not None and model.graph.input and any(
                d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim):
            dims = [d.dim_value or 1 for d in model.graph.input[0].type.tensor_type.shape.dim]
            return (f"{model.graph.input[0].name}={','.join(map(str, dims))}",)
        return ()
    items = []
    for _ in range(draw(st.integers(1, 2))):
        name = draw(st.sampled_from([model.graph.input[0].name if model is not None
                                     and model.graph.input else "x", "x", "nope", "", "a=b"]))
        dims = draw(st.lists(st.sampled_from([1, 1, 3, 4, 8, 6, 0, -2, 1 << 33]), max_size=5))
        text = f"{name}={','.join(map(str, dims))}"
        if draw(st.integers(0, 4)) == 0:
            text = draw(st.sampled_from(["x", "=", "x=", "x=1,,2", "x=a,b", "x=1.5", " x = 1"]))
        items.append(text)
    return tuple(items)


@st.composite
def hostile_models(draw) -> Model:
    """A base model with 0–3 graph edits, then (a third of the time) byte edits."""
    import onnx

    data = draw(st.sampled_from(base_models()))
    model = onnx.load_from_string(data)
    done = []
    for _ in range(draw(st.integers(0, 3))):
        edit = draw(st.sampled_from(GRAPH_EDITS))
        try:
            edit(model, draw)
        except (ValueError, TypeError, IndexError):  # onnx's helpers on an edited model
            done.append(f"{edit.__name__} (failed)")
            continue
        done.append(edit.__name__)
    try:
        data = model.SerializeToString()
    except Exception:  # a name protobuf cannot encode (a lone surrogate): keep the bytes
        done.append("unserializable")
    shapes = _input_shapes(model, draw)
    if draw(st.integers(0, 2)) == 2:  # a third of the time, more or less
        data = _byte_edits(data, draw)
        done.append("bytes")
    return Model(data, shapes, tuple(done))


# ---- -o targets ----------------------------------------------------------------------------

# Where the command runs, inside the sandbox: "." and ".." are folders of the sandbox too.
WORK = Path("root") / "work"
OUTPUTS = ["new", "new/deeper/out", ".", "..", "../..", "empty", "user", "user/", "./new/../user",
           "glc-out", "glc-out-touched", "link-user", "link-glc", "notes.txt", "notes.txt/out",
           "INPUT", "../keep", "a\nb", "glc-out/inner", "dangling"]


PARTS = ["new", "..", ".", "user", "glc-out", "notes.txt", "empty", "sub", "link-user",
         "link-glc", "dangling", "keep", "model.onnx", "dense", "a b", "x\ny", ".hidden", "é"]


@st.composite
def output_paths(draw) -> str:
    """One of OUTPUTS, or a path of 1–4 parts of the sandbox's names or short texts (a trailing
    slash sometimes) that stays inside the sandbox: the working directory is two levels down."""
    if draw(st.booleans()):
        return draw(st.sampled_from(OUTPUTS))
    parts = draw(st.lists(st.sampled_from(PARTS) | st.text(
        st.characters(blacklist_characters="/\x00"), min_size=1, max_size=3),
        min_size=1, max_size=4))
    while os.path.normpath(os.path.join(*WORK.parts, *parts)).startswith(".."):
        parts.remove("..")  # would leave the sandbox: a folder the check cannot see
    return "/".join(parts) + draw(st.sampled_from(["", "/"]))


def sandbox(folder: Path) -> Path:
    """A tree a user might run glc in, inside ``folder``; returns the working directory.

    ``root/keep`` beside the working directory; in it ``notes.txt``, an empty folder, a user's
    folder, a folder glc wrote (``.glc-output`` lists its files) and one a user added a file to,
    symlinks to a user's and to glc's folder, and a dangling one."""
    from glc.outdir import RECORD

    work = folder / WORK
    for path, text in [("root/keep/a.txt", "keep"), ("root/keep/sub/b.txt", "keep"),
                       ("root/work/notes.txt", "mine"), ("root/work/user/data.txt", "mine"),
                       ("root/work/user/sub/more.txt", "mine"),
                       ("root/work/glc-out/model.gls", "; glc's"),
                       ("root/work/glc-out-touched/model.gls", "; glc's"),
                       ("root/work/glc-out-touched/notes.txt", "mine")]:
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    (work / "empty").mkdir()
    for name in ("glc-out", "glc-out-touched"):
        (work / name / RECORD).write_text(json.dumps(["model.gls"]))
    os.symlink("user", work / "link-user")
    os.symlink("glc-out", work / "link-glc")
    os.symlink("nowhere", work / "dangling")
    return work


def tree(folder: Path) -> dict[str, bytes | str | None]:
    """Every entry below ``folder``: a file's bytes, a symlink's target, None for a folder."""
    found = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            found[key] = "-> " + os.readlink(path)
        elif path.is_file():
            found[key] = path.read_bytes()
        else:
            found[key] = None
    return found
