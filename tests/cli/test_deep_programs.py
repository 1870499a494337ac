"""Deep programs (issue 12 item 13): nesting far past Python's recursion limit is read, checked,
interpreted, printed, compiled and run; what cannot be is one located line, never RecursionError.
"""

from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from glc.cli import main
from glc.compiler import MAX_NODES, compile_program
from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.inputs import load
from glc.interp import interpret
from glc.ir.term import walk
from glc.lower.execute import execute
from glc.rewrites import DEFAULT, select
from glc.syntax.printer import print_term
from glc.syntax.reader import parse_program, parse_term

DEPTH = 5000
X = np.arange(6, dtype=np.int8).reshape(2, 3) - 3


def glc(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def nested(depth: int, form: str = "(access-transpose {} (list 1 0))") -> str:
    body = "x"
    for _ in range(depth):
        body = form.format(body)
    return "(input x (shape 2 3) int8)\n" + body + "\n"


def define_chain(depth: int, form: str = "(access-transpose {} (list 1 0))") -> str:
    lines = ["(input x (shape 2 3) int8)", "(define d0 (access-tensor x))"]
    lines += [f"(define d{i} {form.format(f'd{i - 1}')})" for i in range(1, depth)]
    return "\n".join(lines + [f"d{depth - 1}"]) + "\n"


def write(tmp_path, text: str):
    folder = tmp_path / "deep"
    folder.mkdir()
    (folder / "deep.gls").write_text(text)
    np.save(folder / "x.npy", X)
    return folder


def test_the_reader_and_printer_take_5000_nested_forms():
    program = parse_program(nested(DEPTH))
    # hash-consed: x, the one (list 1 0) and its two ints, then a transpose per level
    assert len(walk(program.body)) == DEPTH + 4
    again = parse_term(print_term(program.body))
    assert again == program.body and again is not program.body  # equality is iterative too
    assert again != parse_term(print_term(program.body).replace("(list 1 0)", "(list 0 1)", 1))
    value, _ = interpret(program.body, {"x": X})
    assert np.array_equal(value, X)  # an even number of transposes


@pytest.mark.parametrize("text", [nested(DEPTH), define_chain(DEPTH),
                                  nested(DEPTH, "(compute relu {})")],
                         ids=["nested-transposes", "define-chain", "nested-relus"])
def test_check_and_interp_take_5000_deep_programs(tmp_path, text):
    folder = write(tmp_path, text)
    model = _model(text)
    check = glc("check", folder)
    assert check.exit_code == 0, check.output
    assert check.stdout.strip() == f"(({','.join(map(str, model.shape))}),()) int8"
    result = glc("interp", folder, "-o", tmp_path / "r.npy")
    assert result.exit_code == 0, result.output
    assert np.array_equal(np.load(tmp_path / "r.npy"), model)


def _model(text: str) -> np.ndarray:
    """numpy's value of a nested() or define_chain() program over X."""
    if "relu" in text:
        return np.maximum(X, 0)
    return X if text.count("access-transpose") % 2 == 0 else X.T


@pytest.mark.parametrize("text", [nested(1000), define_chain(1000),
                                  nested(1000, "(compute relu {})")],
                         ids=["nested-transposes", "define-chain", "nested-relus"])
def test_compile_and_run_take_deep_programs(tmp_path, text):
    folder = write(tmp_path, text)
    result = glc("run", folder, "--engine", "isa", "-o", tmp_path / "r.npy")
    assert result.exit_code == 0 and "match: yes" in result.stdout, result.output
    assert np.array_equal(np.load(tmp_path / "r.npy"), _model(text))
    assert glc("compile", folder, "-o", tmp_path / "out").exit_code == 0
    result = glc("simulate", tmp_path / "out", "--inputs", folder, "--isa")
    assert result.exit_code == 0 and "match: yes" in result.stdout, result.output


def _product(operand: str) -> str:
    return (f"(compute (requantize 7) (compute dot-product (access-cartesian-product "
            f"(access {operand} 1) (access (access-transpose w (list 1 0)) 1))))")


def _lowers_in_few_frames(tmp_path, body: str, layers: int):
    """Compile ``body`` over 16×16 int8 ``x`` and ``w`` with room for the compiler's own frames
    but not one per layer; it must give ``layers`` kernels and run equal to the interpreter."""
    folder = tmp_path / "chain"
    folder.mkdir()
    (folder / "chain.gls").write_text("(input x (shape 16 16) int8)\n"
                                      "(input w (shape 16 16) int8)\n" + body + "\n")
    bundle = load(folder)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 150)
    try:
        result = compile_program(bundle, rules=select(DEFAULT, 16), config=load_config("n16"))
    finally:
        sys.setrecursionlimit(limit)
    assert len(result.lowered.kernels) == layers
    outcome = execute(result.lowered, bundle.arrays_or_random(0), "isa")
    reference, _ = interpret(bundle.program.body, bundle.arrays_or_random(0))
    assert np.array_equal(outcome.result, reference)
    return result


def test_kernels_nested_in_kernels_lower_past_the_recursion_limit(tmp_path):
    # Each kernel's operand is the previous kernel's result: the lowering recurses per kernel.
    body = "x"
    for _ in range(40):
        body = _product(body)
    _lowers_in_few_frames(tmp_path, body, 40)


def test_kernels_between_host_steps_lower_past_the_recursion_limit(tmp_path):
    # A float host step (a dynamically quantized network's activation) between each kernel and
    # the next nests as deep as the kernels: EfficientNet-B0's did past the frames its kernels
    # alone were given.
    body = "x"
    for _ in range(150):
        body = (f"(quantize-linear (compute sigmoid (dequantize-linear {_product(body)} 0.05 0)) "
                f"0.01 -50)")
    result = _lowers_in_few_frames(tmp_path, body, 150)
    assert result.lowered.figures()["host_steps"] == 150


def doubling(depth: int) -> str:
    """d_i = 2·d_(i-1) + x, each define using the previous twice: a DAG of ~10·depth nodes, a
    tree of 2^depth."""
    form = ("(access (compute elementwise-add (access-pair (access (compute elementwise-add "
            "(access-pair {0} {0})) 1) (access x 1))) 1)")
    lines = ["(input x (shape 2 3) int32)", "(define d0 (access x 1))"]
    lines += [f"(define d{i} {form.format(f'd{i - 1}')})" for i in range(1, depth)]
    return "\n".join(lines + [f"d{depth - 1}"]) + "\n"


def test_a_program_of_2_to_the_60_tree_nodes_compiles_and_runs_as_its_dag(tmp_path):
    folder = tmp_path / "double"
    folder.mkdir()
    (folder / "double.gls").write_text(doubling(60))
    x = np.arange(6, dtype=np.int32).reshape(2, 3) - 3
    np.save(folder / "x.npy", x)
    result = glc("run", folder, "--engine", "isa", "-o", tmp_path / "r.npy")
    assert result.exit_code == 0 and "match: yes" in result.stdout, result.output
    # d_59 = (2^60 - 1)·x, which int32's wrap-around makes -x
    assert np.array_equal(np.load(tmp_path / "r.npy"), -x)
    compiled = glc("compile", folder)  # with -o it prints a summary, not the term (issue 41)
    assert compiled.exit_code == 0, compiled.output
    # printed with a define per shared sub-term: one line per level, not 2^59 copies
    assert compiled.stdout.count("(define shared") == 59
    assert glc("compile", folder, "-o", tmp_path / "out").exit_code == 0
    assert len((tmp_path / "out" / "source.gls").read_text()) < 20_000


def test_a_program_past_the_node_cap_is_one_located_line(tmp_path):
    source = tmp_path / "long.gls"
    source.write_text(nested(300))  # 300 transposes over one shared (list 1 0): 304 nodes
    bundle = load(source)
    assert compile_program(bundle, max_nodes=304).lowered is None
    with pytest.raises(GlcError) as caught:
        compile_program(bundle, max_nodes=303)
    assert str(caught.value) == (f"{source}:2:1: error: the program has 304 distinct nodes; "
                                 "glc compiles at most 303")
    assert MAX_NODES == 1_000_000
