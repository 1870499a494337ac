"""programs/ is exactly what scripts/gen_programs.py writes, and its reference numerics are right.

The reference functions are checked against differently written computations (scalar loops over
Python integers, reshapes, float formulas) on small cases, so a slip in one is not repeated in
the other.
"""

from __future__ import annotations

import importlib.util
import itertools
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "programs"


def load_generator():
    """scripts/ is not a package: import the generator from its path."""
    spec = importlib.util.spec_from_file_location("gen_programs", ROOT / "scripts/gen_programs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gen = load_generator()
# Importing the generator put scripts/ on the path: its two helper modules import by name.
corpus = importlib.import_module("corpus")
num = importlib.import_module("reference_numerics")


def files_under(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder``, by relative path, with its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_committed_corpus_equals_a_fresh_generation(tmp_path):
    gen.write(tmp_path)
    fresh, committed = files_under(tmp_path), files_under(PROGRAMS)
    assert sorted(fresh) == sorted(committed)
    differing = [name for name in fresh if fresh[name] != committed[name]]
    assert differing == []


def test_generation_is_deterministic():
    first, second = gen.programs(), gen.programs()
    for a, b in zip(first, second, strict=True):
        assert a.source() == b.source()
        assert np.array_equal(a.output, b.output)


def sexprs(text: str) -> list:
    """The top-level forms of a .gls text, as nested lists of atoms (comments dropped)."""
    tokens = re.findall(r"\(|\)|[^\s()]+", re.sub(r";[^\n]*", "", text))
    stack: list[list] = [[]]
    for token in tokens:
        if token == "(":
            stack.append([])
        elif token == ")":
            assert len(stack) > 1, "unbalanced ')'"
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    assert len(stack) == 1, "unbalanced '('"
    return stack[0]


def walk(form):
    """Every list form inside ``form``, itself included."""
    if isinstance(form, list):
        yield form
        for child in form:
            yield from walk(child)


@pytest.mark.parametrize("folder", sorted(p for p in PROGRAMS.iterdir() if p.is_dir()),
                         ids=lambda p: p.name)
def test_program_folder_follows_the_convention(folder):
    source = (folder / f"{folder.name}.gls").read_text()
    assert source.startswith(f"; {folder.name}: ")
    forms = sexprs(source)
    *preamble, body = forms
    assert all(form[0] in ("input", "define") for form in preamble)
    assert body[0] not in ("input", "define")
    # Every tensor the program reads has an .npy, and every .npy but output.npy is read (a
    # define's name is read like a tensor but is no input).
    defined = {form[1] for form in preamble if form[0] == "define"}
    used = {node[1] for form in forms if form[0] != "input" for node in walk(form)
            if node[0] == "access-tensor"} - defined
    inputs = {p.stem for p in folder.glob("*.npy")} - {"output"}
    assert used == inputs
    declared = {form[1]: form for form in preamble if form[0] == "input"}
    for symbol in declared:
        array = np.load(folder / f"{symbol}.npy")
        assert declared[symbol][2] == ["shape", *map(str, array.shape)]
        assert declared[symbol][3] == str(array.dtype)
    assert set(declared) in (inputs, set())


def test_only_the_float_conv2d_has_no_declarations():
    undeclared = [p.name for p in gen.programs() if not p.declare]
    assert undeclared == ["conv2d-nchw-oihw"]


def conv2d_scalar(data, weights, stride, pad):
    """Conv2d NCHW/OIHW by seven nested loops over Python integers, padding by bounds checks."""
    n, c, h, w = data.shape
    o, _, kh, kw = weights.shape
    (top, bottom), (left, right) = pad
    oh = (h + top + bottom - kh) // stride[0] + 1
    ow = (w + left + right - kw) // stride[1] + 1
    out = np.zeros((n, o, oh, ow), dtype=object)
    for b, f, y, x in itertools.product(range(n), range(o), range(oh), range(ow)):
        total = 0
        for ch, dy, dx in itertools.product(range(c), range(kh), range(kw)):
            row, col = y * stride[0] + dy - top, x * stride[1] + dx - left
            if 0 <= row < h and 0 <= col < w:
                total += data[b, ch, row, col].item() * weights[f, ch, dy, dx].item()
        out[b, f, y, x] = total
    return out


CONV_CASES = [
    # (data shape, weight shape, stride, ((top, bottom), (left, right)))
    ((1, 2, 5, 5), (3, 2, 3, 3), (1, 1), ((1, 1), (1, 1))),
    ((2, 3, 6, 7), (2, 3, 3, 2), (2, 1), ((0, 1), (2, 0))),
    ((1, 1, 7, 4), (1, 1, 1, 1), (3, 2), ((0, 0), (0, 0))),
    ((1, 2, 4, 9), (4, 2, 2, 3), (1, 3), ((2, 0), (1, 2))),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_reference_matches_scalar_loops_on_int8(case):
    data_shape, weight_shape, stride, pad = case
    rng = np.random.default_rng(7)
    data, weights = corpus.int8(rng, *data_shape), corpus.int8(rng, *weight_shape)
    got = num.conv2d_nchw(data, weights, stride, pad)
    assert got.dtype == np.int32
    assert np.array_equal(got.astype(object), conv2d_scalar(data, weights, stride, pad))


def test_conv2d_reference_matches_scalar_loops_on_float64():
    rng = np.random.default_rng(8)
    data, weights = rng.standard_normal((1, 3, 6, 6)), rng.standard_normal((2, 3, 3, 3))
    got = num.conv2d_nchw(data, weights, (1, 1), ((1, 1), (1, 1)))
    want = conv2d_scalar(data, weights, (1, 1), ((1, 1), (1, 1))).astype(np.float64)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_int32_accumulation_wraps_like_numpys_int32_arithmetic():
    rng = np.random.default_rng(9)
    a = rng.integers(-(2**31), 2**31, size=64, dtype=np.int32)
    b = rng.integers(-(2**31), 2**31, size=64, dtype=np.int32)
    with np.errstate(over="ignore"):
        native = a * b + a  # numpy's int32 arithmetic is modulo 2**32
    assert np.array_equal(num.wrap_int32(a.astype(np.int64) * b + a), native)
    assert num.wrap_int32(np.array([2**31, -(2**31) - 1])).tolist() == [-(2**31), 2**31 - 1]


def test_matmul_reference_matches_loops_with_wrap():
    rng = np.random.default_rng(10)
    a = rng.integers(-(2**20), 2**20, size=(3, 4), dtype=np.int32)
    b = rng.integers(-(2**20), 2**20, size=(4, 5), dtype=np.int32)
    want = [[sum(int(a[i, k]) * int(b[k, j]) for k in range(4)) for j in range(5)]
            for i in range(3)]
    wrapped = [[(v + 2**31) % 2**32 - 2**31 for v in row] for row in want]
    assert num.matmul(a, b).tolist() == wrapped


@pytest.mark.parametrize("shape", [(1, 2, 7, 7), (2, 1, 4, 6), (1, 3, 5, 2)])
def test_maxpool_reference_matches_a_reshape_of_the_min_padded_input(shape):
    rng = np.random.default_rng(11)
    data = corpus.int8(rng, *shape)
    h, w = shape[2], shape[3]
    pad = ((0, h % 2), (0, w % 2))
    padded = np.full((*shape[:2], h + h % 2, w + w % 2), -128, dtype=np.int8)
    padded[:, :, :h, :w] = data
    n, c, ph, pw = padded.shape
    want = padded.reshape(n, c, ph // 2, 2, pw // 2, 2).max(axis=(3, 5))
    got = num.maxpool2d_nchw(data, 2, 2, pad)
    assert got.dtype == np.int8
    assert np.array_equal(got, want)


def test_maxpool_min_padding_never_wins_over_real_values():
    data = np.full((1, 1, 3, 3), -128, dtype=np.int8)
    data[0, 0, 2, 2] = -127
    got = num.maxpool2d_nchw(data, 2, 2, ((0, 1), (0, 1)))
    assert got[0, 0].tolist() == [[-128, -128], [-128, -127]]


@pytest.mark.parametrize("k", [0, 1, 3, 7, 12])
def test_requantize_reference_matches_float_round_half_up(k):
    values = np.concatenate([np.arange(-40000, 40000, 37), [2**31 - 1, -(2**31)]]).astype(np.int32)
    rounded = np.floor(values.astype(np.float64) / 2**k + 0.5) if k else values
    want = np.clip(rounded, -128, 127).astype(np.int8)
    assert np.array_equal(num.requantize(values, k), want)


def test_requantize_reference_is_exact_at_the_ends_of_int64():
    # The corpus's reference must not wrap where glc's interpreter once did (issue 12 item 1).
    values = np.array([2**63 - 1, -(2**63), 2**62, 255], np.int64)
    assert num.requantize(values, 1).tolist() == [127, -128, 127, 127]
    assert num.requantize(values, 62).tolist() == [2, -2, 1, 0]


def test_softmax_reference_matches_logsumexp_form():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 6)) * 10
    log_z = np.log(np.exp(x).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(num.softmax(x, axis=1), np.exp(x - log_z), rtol=1e-12)


def test_every_result_comment_matches_its_reference_output():
    for program in gen.programs():
        gen.check_result_comment(program)


def test_result_comment_check_rejects_a_wrong_derivation():
    program = gen.programs()[0]
    wrong = gen.Program(program.name, program.summary,
                        program.body.replace("; result: ((12,7),())", "; result: ((7,12),())"),
                        program.inputs, program.output)
    with pytest.raises(AssertionError):
        gen.check_result_comment(wrong)
