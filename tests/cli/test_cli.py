"""The CLI contract: outputs, --json, and bad input as one located line with exit status 1."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from glc.cli import main

PROGRAMS = Path(__file__).parents[2] / "programs"


def glc(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def assert_user_error(result, location: str, fragment: str):
    """Exit 1, one line on stderr that starts with the location, no traceback."""
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(location), lines[0]
    assert fragment in lines[0]
    assert "Traceback" not in result.output


def test_check_prints_the_access_shape_and_dtype():
    result = glc("check", PROGRAMS / "conv2d-nchw-int8")
    assert result.exit_code == 0
    assert result.stdout.strip() == "((1,6,8,8),()) int32"


def test_check_json():
    result = glc("check", PROGRAMS / "matmul-int8", "--json")
    assert json.loads(result.stdout) == {"kind": "access", "shape": [12, 7], "item": [],
                                         "dtype": "int32"}


@pytest.mark.parametrize("name", sorted(p.name for p in PROGRAMS.iterdir() if p.is_dir()))
def test_interp_reports_the_match(name):
    result = glc("interp", PROGRAMS / name, "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["match"] is True and figures["inputs"] == "given"
    expected = np.load(PROGRAMS / name / "output.npy")
    assert tuple(figures["shape"]) + tuple(figures["item"]) == expected.shape
    assert figures["dtype"] == str(expected.dtype)


def test_interp_writes_the_result(tmp_path):
    out = tmp_path / "r.npy"
    result = glc("interp", PROGRAMS / "dense-int8", "-o", out)
    assert result.exit_code == 0 and "match" in result.stdout and ": yes" in result.stdout
    np.testing.assert_array_equal(np.load(out), np.load(PROGRAMS / "dense-int8" / "output.npy"))


def test_interp_mismatch_exits_1(tmp_path):
    folder = tmp_path / "matmul"
    shutil.copytree(PROGRAMS / "matmul-int8", folder)
    expected = np.load(folder / "output.npy")
    expected[0, 0] += 1
    np.save(folder / "output.npy", expected)
    result = glc("interp", folder)
    assert "NO (1 of 84 elements differ" in result.stdout
    assert_user_error(result, str(folder / "output.npy"), "result does not match")


def test_interp_without_inputs_uses_seeded_random_ones(tmp_path):
    source = tmp_path / "k.gls"
    source.write_text("(input a (shape 3 4) int8)\n(compute reduce-sum (access a 1))\n")
    first, second = glc("interp", source, "--json"), glc("interp", source, "--json")
    assert json.loads(first.stdout)["inputs"] == "random (seed 0)"
    assert first.stdout == second.stdout


# (program text, expected location suffix, message fragment)
BAD_PROGRAMS = [
    ("(input a (shape 2 3) int8)\n(access a 1", ":2:1", "never closed"),
    ("(input a (shape 2 3) int8)\n(acces a 1)", ":2:2", "unknown operator 'acces'"),
    ("(input a (shape 2 3) int8)\n(access-slice a 0 1)", ":2:1", "takes 4 arguments"),
    ("(input a (shape 2 3) int8)\n(access-cartesian-product (access a 1) (access a 0))", ":2:1",
     "needs equal item shapes, got (3) and (2,3)"),
    ("(input a (shape 2 3) int8)\n(compute dot-product (access a 2))", ":2:22",
     "dot-product needs at least 1 item dim"),
    ("(compute relu (access b 1))", ":1:23", "no shape is known for 'b'"),
    ("(input a (shape 2 3) int8)\n(compute softmax (access a 1))", ":2:18", "float dtype"),
]


@pytest.mark.parametrize("text,where,fragment", BAD_PROGRAMS, ids=[b[2] for b in BAD_PROGRAMS])
@pytest.mark.parametrize("command", ["check", "interp"])
def test_bad_program_is_one_located_line(tmp_path, command, text, where, fragment):
    source = tmp_path / "bad.gls"
    source.write_text(text)
    assert_user_error(glc(command, source), f"{source}{where}: error: ", fragment)


def _folder(tmp_path, name="matmul-int8"):
    folder = tmp_path / name
    shutil.copytree(PROGRAMS / name, folder)
    return folder


def test_missing_input_names_the_file(tmp_path):
    folder = _folder(tmp_path)
    (folder / "b.npy").unlink()
    assert_user_error(glc("interp", folder), str(folder / "b.npy"), "missing input for symbol 'b'")


def test_extra_input_names_the_file(tmp_path):
    folder = _folder(tmp_path)
    np.save(folder / "c.npy", np.zeros(3, np.int8))
    assert_user_error(glc("interp", folder), str(folder / "c.npy"), "no symbol 'c'")


def test_misshaped_input_names_both_sources(tmp_path):
    folder = _folder(tmp_path)
    np.save(folder / "a.npy", np.zeros((12, 21), np.int8))
    result = glc("check", folder)
    assert_user_error(result, str(folder / "a.npy"), "'a' is (12,20) int8 at ")
    assert "matmul-int8.gls:2:1" in result.stderr and "but (12,21) int8" in result.stderr


def test_corrupt_npy_names_the_file(tmp_path):
    folder = _folder(tmp_path)
    (folder / "a.npy").write_bytes(b"not a tensor")
    assert_user_error(glc("interp", folder), str(folder / "a.npy"), "cannot load tensor")


def test_shapes_json_gives_shapes_and_disagreement_is_an_error(tmp_path):
    source = tmp_path / "plain.gls"
    source.write_text("(compute reduce-sum (access x 1))")
    shapes = tmp_path / "shapes.json"
    shapes.write_text('{"x": [4, 5]}')
    result = glc("check", source, "--shapes", shapes)
    assert result.exit_code == 0 and result.stdout.strip() == "((4),()) float64"
    inputs = tmp_path / "in"
    inputs.mkdir()
    np.save(inputs / "x.npy", np.zeros((4, 6)))
    assert_user_error(glc("check", source, "--shapes", shapes, "--inputs", inputs),
                      str(inputs / "x.npy"), "'x' is (4,5)")
    shapes.write_text('{"x": [4, "five"]}')
    assert_user_error(glc("check", source, "--shapes", shapes), str(shapes), "non-negative")
    shapes.write_text('{"x": [true, 5]}')  # JSON's true is no dim, though Python's bool is int
    assert_user_error(glc("check", source, "--shapes", shapes), str(shapes), "non-negative")


def test_program_folder_needs_one_program(tmp_path):
    assert_user_error(glc("check", tmp_path), str(tmp_path), "exactly one .gls")
    assert_user_error(glc("check", tmp_path / "nope.gls"), str(tmp_path / "nope.gls"),
                      "no such program")


def test_debug_shows_the_traceback(tmp_path):
    source = tmp_path / "bad.gls"
    source.write_text("(acces a 1)")
    result = CliRunner().invoke(main, ["--debug", "check", str(source)])
    assert result.exit_code == 1 and type(result.exception).__name__ == "GlcError"


def test_the_installed_entry_point_reports_errors_without_traceback(tmp_path):
    source = tmp_path / "bad.gls"
    source.write_text("(access x")
    done = subprocess.run([sys.executable, "-m", "glc", "check", str(source)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == (f"{source}:1:1: error: unexpected end of file: this '(' is "
                                   "never closed; expected ')'")


def test_isa_commands_report_errors_through_the_cli(tmp_path):
    source = tmp_path / "bad.s"
    source.write_text("halt\nfrobnicate row=0\n")
    result = glc("asm", source, "--stats")
    assert_user_error(result, f"{source}:2:1: error: ", "frobnicate")


def test_rules_lists_every_row_of_the_table():
    from glc.rewrites import select

    result = glc("rules")
    assert result.exit_code == 0
    listed = [line for line in result.stdout.splitlines() if line and not line[0].isspace()]
    # Each row's name and its rule sets (issue 41 item 18: no row named its set).
    assert [line.split()[0] for line in listed] == [rule.name for rule in select("all", 16)]
    assert "systolic-array  [tensorise]" in listed
    assert "bubble-slice-through-transpose  [layout, bubble]" in listed
    assert "computed from the match" not in result.stdout
    assert_user_error(glc("rules", "--rules", "nope"), "error: ", "unknown rule set 'nope'")


def test_rules_are_sized_by_the_config_as_compile_sizes_them():
    """One source for the array size (issue 10): the config, as for glc compile."""
    listed = glc("rules", "--rules", "tensorise", "--config", "n4").stdout
    assert "systolic-array-with-blocking-4-4" in listed
    assert "systolic-array-with-blocking-16-16" not in listed
    configs = Path(__file__).resolve().parents[2] / "hw" / "configs"
    assert_user_error(glc("rules", "--config", "n3"), f"{configs / 'n3.toml'}: error: ",
                      "no hardware configuration 'n3'")


def test_verbose_prints_one_line_per_stage_on_stderr():
    result = CliRunner().invoke(main, ["-v", "interp", str(PROGRAMS / "mlp-int8"), "--json"])
    assert result.exit_code == 0
    stages = [line.split(":")[0] for line in result.stderr.splitlines()]
    assert stages == ["load", "interp"]
    # distinct nodes: the program is hash-consed (its three literal 1s are one node, ...)
    assert "nodes 20" in result.stderr and "elements 80" in result.stderr
    assert json.loads(result.stdout)["match"] is True


def test_verbose_run_prints_each_compile_stage_then_the_simulation():
    result = CliRunner().invoke(main, ["-v", "run", str(PROGRAMS / "mlp-int8"), "--engine", "isa"])
    assert result.exit_code == 0, result.output
    stages = [line.split(":")[0] for line in result.stderr.splitlines()]
    assert stages == ["compile", "saturate", "extract", "lower", "simulate"]
    # The cycles are the program's recorded baseline (the RTL's, equal to the cycle model's).
    baseline = json.loads((PROGRAMS.parent / "hw" / "baselines" / "n16.json").read_text())
    cycles = baseline["mlp-int8"]["cycles"]
    assert f"predicted_cycles {cycles}" in result.stderr and f"cycles {cycles}" in result.stdout


@pytest.mark.parametrize("command", ["interp", "run"])
def test_out_refuses_a_folder_and_a_path_not_ending_in_npy(tmp_path, command):
    # Issue 12 item 5: -o DIR used to write DIR.npy silently.
    folder = PROGRAMS / "dense-int8"
    extra = ["--engine", "isa"] if command == "run" else []
    assert_user_error(glc(command, folder, *extra, "-o", tmp_path), str(tmp_path), "names a folder")
    assert_user_error(glc(command, folder, *extra, "-o", tmp_path / "r.txt"),
                      str(tmp_path / "r.txt"), "ending in .npy")
    assert sorted(tmp_path.parent.glob(tmp_path.name + "*.npy")) == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["interp", "run"])
def test_out_refuses_to_write_into_the_inputs_folder(tmp_path, command):
    # Issue 12 item 5: -o prog/result.npy made the next run fail with "unexpected input".
    folder = _folder(tmp_path, "dense-int8")
    extra = ["--engine", "isa"] if command == "run" else []
    # Issue 41 item 16: output.npy is no input, it is the expected result: said so.
    for name, reason in (("result.npy", "inputs folder"), ("x.npy", "inputs folder"),
                         ("output.npy", "would overwrite the expected result output.npy")):
        before = sorted(p.name for p in folder.iterdir())
        assert_user_error(glc(command, folder, *extra, "-o", folder / name), str(folder / name),
                          reason)
        assert sorted(p.name for p in folder.iterdir()) == before
    assert glc("interp", folder).exit_code == 0


def test_out_to_an_unwritable_path_is_one_line(tmp_path):
    target = tmp_path / "missing" / "r.npy"
    assert_user_error(glc("interp", PROGRAMS / "dense-int8", "-o", target), str(target),
                      f"no such folder {target.parent} to write into")


def test_the_gls_path_of_a_program_folder_means_the_folder(tmp_path):
    # Issue 12 item 6: prog/prog.gls ignored the folder's inputs and output.npy.
    folder = _folder(tmp_path)
    source = folder / "matmul-int8.gls"
    result = glc("interp", source, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["inputs"] == "given"
    assert json.loads(result.stdout)["match"] is True and "random" not in result.stderr
    expected = np.load(folder / "output.npy")
    expected[0, 0] += 1
    np.save(folder / "output.npy", expected)
    assert_user_error(glc("interp", source), str(folder / "output.npy"), "does not match")


def test_random_inputs_are_announced_on_a_line_of_their_own(tmp_path):
    # Issue 12 item 6: random inputs were used silently by interp, run, simulate and regress.
    source = tmp_path / "alone" / "dense.gls"
    source.parent.mkdir()
    source.write_text((PROGRAMS / "dense-int8" / "dense-int8.gls").read_text())
    note = "note: random inputs (seed 5) for x, w: "
    for args in (["interp", source], ["run", source, "--engine", "isa"],
                 ["interp", source, "--json"]):
        result = glc(*args, "--seed", "5")
        assert result.exit_code == 0, result.output
        assert [line for line in result.stderr.splitlines() if line.startswith(note)] == [
            note + f"{source.parent} holds no <symbol>.npy"]
    assert glc("compile", PROGRAMS / "dense-int8", "-o", tmp_path / "out").exit_code == 0
    result = glc("simulate", tmp_path / "out", "--isa", "--seed", "5", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["inputs"] == "random (seed 5)"
    assert note + "no inputs folder (give a program folder or --inputs DIR)" in result.stderr
    given = glc("simulate", tmp_path / "out", "--isa", "--inputs", PROGRAMS / "dense-int8")
    assert given.exit_code == 0 and "note:" not in given.stderr
    result = glc("regress", source.parent, "--engine", "isa", "--jobs", "1", "--baselines",
                 tmp_path / "b.json")
    assert "note: alone: random (seed 0) inputs" in result.stderr, result.output


def test_a_folder_with_output_npy_but_no_inputs_names_the_missing_input(tmp_path):
    # Issue 12 item 6: random inputs against output.npy looked like a compiler bug.
    folder = _folder(tmp_path, "reduce-sum-int8")
    (symbol,) = [p for p in folder.glob("*.npy") if p.name != "output.npy"]
    symbol.unlink()
    for command in ("interp", "run"):
        assert_user_error(glc(command, folder), str(symbol),
                          f"missing input for symbol '{symbol.stem}' (the folder has output.npy")


NOT_TENSORS = [("(literal 3)", "got the number 3"), ("(shape 1 2)", "got shape (1,2)"),
               ("(list 1 0)", "got list (1,0)"),
               ("(input a (shape 2 3) int8)\n(get-access-shape (access a 1))",
                "got access-shape ((2),(3))")]


@pytest.mark.parametrize("text,fragment", NOT_TENSORS, ids=[n[1] for n in NOT_TENSORS])
@pytest.mark.parametrize("command", [["interp"], ["interp", "--json"], ["compile"],
                                     ["run", "--engine", "isa"]], ids=" ".join)
def test_a_result_that_is_no_tensor_is_one_located_line(tmp_path, command, text, fragment):
    # Issue 12 item 14: these were AttributeError tracebacks. Only where a tensor is needed
    # (issue 41 item 11: glc check types them).
    source = tmp_path / "static.gls"
    source.write_text(text + "\n")
    where = f"{source}:{text.count(chr(10)) + 1}:1"
    message = "the result must be an access pattern (a tensor), " + fragment
    result = glc(command[0], source, *command[1:])
    if "--json" in command:  # the error is the JSON object on stdout
        assert result.exit_code == 1 and "Traceback" not in result.output
        error = json.loads(result.stdout)
        assert error["where"] == where and error["error"].startswith(message)
    else:
        assert_user_error(result, f"{where}: error: ", message)
    assert "only a tensor is evaluated or compiled" in result.output


# What glc check prints for each: (program, line, JSON object).
CHECKED = [("(literal 3)", "number 3", {"kind": "number", "value": 3}),
           ("(shape 1 2)", "shape (1,2)", {"kind": "shape", "dims": [1, 2]}),
           ("(list 1 0)", "list (1,0)", {"kind": "list", "items": [1, 0]}),
           ("(input a (shape 2 3) int8)\n(get-access-shape (access a 1))",
            "access-shape ((2),(3))", {"kind": "access-shape", "shape": [2], "item": [3]}),
           ("(input a (shape 2 3) int8)\n(access a 1)", "((2),(3)) int8",
            {"kind": "access", "shape": [2], "item": [3], "dtype": "int8"})]


@pytest.mark.parametrize("text,line,fields", CHECKED, ids=[c[1] for c in CHECKED])
def test_check_types_a_result_of_any_kind(tmp_path, text, line, fields):
    # Issue 41 item 11: check refused shapes, lists and numbers that the language types.
    source = tmp_path / "static.gls"
    source.write_text(text + "\n")
    result = glc("check", source)
    assert result.exit_code == 0 and result.stdout == line + "\n", result.output
    result = glc("check", source, "--json")
    assert result.exit_code == 0 and json.loads(result.stdout) == fields, result.output


# Issue 12 item 15: (program, location suffix, message fragment); each passed check, then crashed.
SIZES = [
    ("(input x (shape 4 0) int8)\n(compute reduce-max (access x 1))", ":2:29",
     "'x' has dims (4,0): every dimension must be at least 1"),
    ("(input x (shape 4 0) int8)\n(compute dot-product (access-cartesian-product (access x 1) "
     "(access x 1)))", ":2:56", "every dimension must be at least 1"),
    ("(input x (shape 1 3) int8)\n(access-broadcast x (access-shape (shape 0 3) (shape)))",
     ":2:1", "access-broadcast gives a tensor of dims (0,3): every dimension must be at least 1"),
    ("(input x (shape 2 3) int8)\n(access-pad x zero-padding 0 4294967296 0)", ":2:30",
     "integer literal 4294967296 does not fit int32"),
    ("(access-literal (literal 99999999999999999999))", ":1:26", "does not fit int32"),
    ("(input x (shape 2 3) int8)\n(compute (requantize 9999999999999999999) (access x 1))",
     ":2:22", "does not fit int32"),
    ("(input x (shape 100000 100000) int8)\n(compute reduce-sum (access x 1))", ":2:29",
     "10000000000 elements, more than glc's limit of 268435456 per tensor"),
    ("(input x (shape 2 3) int8)\n(access-pad x zero-padding 0 0 2000000000)", ":2:1",
     "access-pad gives a tensor of dims (2000000002,3): 6000000006 elements"),
    # An integer cartesian product is lazy only for the dot product over it.
    ("(input a (shape 1024 1024) int8)\n(compute reduce-sum (access-cartesian-product "
     "(access a 1) (access a 1)))", ":2:21",
     "compute materialises a cartesian product of dims (1024,1024,2,1024): 2147483648"),
    ("(input a (shape 1024 1024) int8)\n(access-cartesian-product (access a 1) (access a 1))",
     ":2:1", "access-cartesian-product gives a tensor of dims (1024,1024,2,1024): 2147483648"),
    ("(input a (shape 1024 1024) float32)\n(compute dot-product (access-cartesian-product "
     "(access a 1) (access a 1)))", ":2:22", "access-cartesian-product gives a tensor of dims"),
]


def test_a_dot_product_over_a_cartesian_product_past_the_limit_checks(tmp_path):
    # A 1024³ GEMM: its pairs (2³¹ elements) are never materialised (issue 9: 1024³ runs).
    text = ("(input a (shape 1024 1024) int8)\n(compute dot-product (access-cartesian-product "
            "(access a 1) (access (access-transpose a (list 1 0)) 1)))\n")
    source = tmp_path / "gemm.gls"
    source.write_text(text)
    result = glc("check", source)
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["((1024,1024),())", "int32"]


@pytest.mark.parametrize("text,where,fragment", SIZES, ids=[s[2][:40] for s in SIZES])
@pytest.mark.parametrize("command", [["check"], ["interp"], ["run", "--engine", "isa"]],
                         ids=" ".join)
def test_zero_size_huge_and_out_of_range_sizes_are_located_errors(tmp_path, command, text, where,
                                                                  fragment):
    source = tmp_path / "size.gls"
    source.write_text(text + "\n")
    assert_user_error(glc(command[0], source, *command[1:]), f"{source}{where}: error: ",
                      fragment)


def test_an_npy_input_too_large_is_refused_from_its_header(tmp_path):
    folder = _folder(tmp_path, "dense-int8")
    header = b"{'descr': '|i1', 'fortran_order': False, 'shape': (100000, 100000), }\n"
    (folder / "x.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little")
                                   + header)  # no data: it is never read
    assert_user_error(glc("interp", folder), str(folder / "x.npy"),
                      "10000000000 elements, more than glc's limit")
    np.save(folder / "x.npy", np.zeros((4, 0), np.int8))
    assert_user_error(glc("interp", folder), str(folder / "x.npy"), "at least 1")


def _npy_bytes(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def _header(text: bytes, version: bytes = b"\x01\x00") -> bytes:
    size = len(text).to_bytes(2 if version == b"\x01\x00" else 4, "little")
    return b"\x93NUMPY" + version + size + text


_GOOD = _npy_bytes(np.zeros((4, 32), np.int8))
# Issue 12 item 16: (file bytes, message fragment). An empty file printed a bare "Aborted!".
BAD_NPY = {
    "empty": (b"", "not a valid .npy file"),
    "npz": (b"PK\x03\x04" + _GOOD, "the magic string is not correct"),
    "truncated": (_GOOD[:-5], "not a valid .npy file"),
    "garbled-header": (_GOOD[:10] + b"{'descr': '|i1', 'shape': (3, (}" + _GOOD[42:],
                       "not a valid .npy file"),
    "huge-header": (_header(b"{'descr': '|i1', 'fortran_order': False, 'shape': (1,), 'x': '"
                            + b"a" * 20000 + b"'}", b"\x02\x00"), "not a valid .npy file"),
    "pickled-objects": (_npy_bytes(np.array([{"a": 1}], dtype=object), allow_pickle=True),
                        "unsupported dtype object"),
    "negative-dims": (_header(b"{'descr': '|i1', 'fortran_order': False, 'shape': (-1, 4), }\n"),
                      "negative dims"),
    "big-endian": (_npy_bytes(np.zeros((4, 32), ">i4")), "unsupported dtype >i4"),
}


@pytest.mark.parametrize("name", sorted(BAD_NPY))
def test_a_malformed_npy_is_one_line_naming_the_file(tmp_path, name):
    data, fragment = BAD_NPY[name]
    folder = _folder(tmp_path, "dense-int8")
    (folder / "x.npy").write_bytes(data)
    for command in (["interp"], ["check"], ["run", "--engine", "isa"]):
        assert_user_error(glc(command[0], folder, *command[1:]), f"{folder / 'x.npy'}: error: ",
                          fragment)


def test_text_files_that_are_not_utf8_name_the_byte(tmp_path):
    shapes = tmp_path / "shapes.json"
    shapes.write_bytes(b'{"x": [4, 5]}\n\xff')
    source = tmp_path / "p.gls"
    source.write_text("(compute reduce-sum (access x 1))\n")
    assert_user_error(glc("check", source, "--shapes", shapes), f"{shapes}:2:1: error: ",
                      "byte 0xff is not UTF-8")
    config = tmp_path / "c.toml"
    config.write_bytes(b'array_size = 4\n# \xfe\n')
    assert_user_error(glc("compile", PROGRAMS / "dense-int8", "--config", config),
                      f"{config}:2:3: error: ", "cannot read configuration: byte 0xfe")
    source.write_bytes(b"(input x (shape 2 3) int8)\n(compute relu (access x 1))\xff\n")
    assert_user_error(glc("check", source), f"{source}:2:28: error: ", "byte 0xff is not UTF-8")


def test_a_byte_order_mark_is_read_past_and_a_nul_is_located(tmp_path):
    source = tmp_path / "p.gls"
    source.write_bytes(b"\xef\xbb\xbf(input x (shape 2 3) int8)\n(compute relu (access x 1))\n")
    result = glc("check", source)
    assert result.exit_code == 0 and result.stdout.strip() == "((2),(3)) int8"
    shapes = tmp_path / "shapes.json"
    shapes.write_bytes(b'\xef\xbb\xbf{"x": [4, 5]}')
    source.write_text("(compute reduce-sum (access x 1))\n")
    assert glc("check", source, "--shapes", shapes).stdout.strip() == "((4),()) float64"
    source.write_bytes(b"(input x (shape 2 3) int8)\n(compute relu\x00 (access x 1))\n")
    assert_user_error(glc("check", source), f"{source}:2:14: error: ",
                      "control character '\\x00' (U+0000) is not allowed")
    source.write_bytes(b"(input x (shape 2 3) int8)\n(compute \xef\xbb\xbfrelu (access x 1))\n")
    assert_user_error(glc("check", source), f"{source}:2:10: error: ", "U+FEFF")


def test_an_output_folder_under_a_file_is_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert_user_error(glc("compile", PROGRAMS / "dense-int8", "-o", blocker / "out"),
                      str(blocker / "out"), "a parent of it is a file")


def test_an_npy_header_numpy_warns_about_loads_without_stderr_noise(tmp_path):
    # Found by the fuzz suite: a header numpy parses only by its Python 2 path printed a
    # UserWarning on stderr beside the result.
    folder = _folder(tmp_path, "dense-int8")
    x = np.load(folder / "x.npy")
    header = b"{'descr': '|i1', 'fortran_order': False, 'shape': (4, 32), }" + b" " * 20 + b"\n"
    header += b" " * (118 - len(header))  # text after the newline: numpy's Python 2 path
    (folder / "x.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little")
                                   + header + x.tobytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pytest would otherwise capture what a user sees
        result = glc("interp", folder)
    assert result.exit_code == 0 and ": yes" in result.stdout, result.output
    assert result.stderr == ""


def test_asm_to_an_unwritable_path_is_one_line(tmp_path):
    source = tmp_path / "h.s"
    source.write_text("halt\n")
    target = tmp_path / "missing" / "h.bin"
    assert_user_error(glc("asm", source, "-o", target), str(target),
                      f"no such folder {target.parent} to write into")


def test_a_nan_the_program_computes_prints_no_numpy_warning(tmp_path):
    """Issue 41, item 10: sqrt of a negative float32 is NaN, on the host as in the interpreter;
    numpy's RuntimeWarning about it leaked onto stderr ahead of the result."""
    (tmp_path / "p.gls").write_text("(input x (shape 2 3) float32)\n(compute sqrt (access x 1))\n")
    np.save(tmp_path / "x.npy", np.array([[-1, 2, 3], [4, 5, 6]], np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pytest would otherwise capture what a user sees
        result = glc("interp", tmp_path)
    assert result.exit_code == 0, result.output
    assert result.stderr == "" and "nan" in result.stdout
