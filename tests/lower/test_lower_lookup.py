"""``table-lookup`` on the vector unit (glc/lower/lookup.py): VECTOR lut after its table."""

from __future__ import annotations

import numpy as np
import pytest
from exactness import exact

from glc.hwconfig import load_config
from glc.interp import env_types
from glc.isa.fields import VECTOR_OPS
from glc.lower.lowering import lower
from glc.syntax.reader import parse_term


def _lookup(term: str, dims: tuple[int, ...], seed: int):
    rng = np.random.default_rng(seed)
    codes = rng.integers(-128, 128, dims).astype(np.int8)
    codes.flat[:2] = [-128, 127]  # the table's first and last entries
    return parse_term(term), {"x": codes,
                              "t": rng.integers(-128, 128, 256).astype(np.int8)}


def _ops(program) -> list[str]:
    return [VECTOR_OPS[i["op"]] for step in program.kernels for i in step.kernel.instructions
            if i.op.name == "vector"]


@pytest.mark.parametrize(("config", "dims"), [("n16", (1, 8, 8, 24)), ("n16", (3, 5, 7)),
                                              ("n4", (2, 16, 9)), ("n16", (300,)),
                                              ("n4", (1, 3, 40, 40))])
def test_a_table_lookup_is_a_vector_lut_after_its_table_and_is_exact(config, dims):
    term, arrays = _lookup("(table-lookup (access-tensor x) (access-tensor t))", dims,
                           seed=sum(dims))
    program = lower(term, env_types(arrays), load_config(config))
    assert program.figures()["host_steps"] == 0
    ops = _ops(program)
    assert ops[0] == "table" and set(ops[1:]) == {"lut"}
    exact(term, arrays, program)


def test_a_lookup_of_a_view_under_relu_is_one_kernel_and_exact():
    """The codes a transposed view, the result through the STORE's relu."""
    term, arrays = _lookup("(compute relu (table-lookup (access-transpose (access-tensor x) "
                           "(list 1 0 2)) (access-tensor t)))", (6, 20, 16), seed=7)
    program = lower(term, env_types(arrays), load_config("n16"))
    assert len(program.kernels) == 1 and program.figures()["host_steps"] == 0
    exact(term, arrays, program)


def test_a_table_whose_entries_are_not_one_run_is_a_host_step():
    """A column of a 256×2 tensor: its entries two bytes apart, which the transposing LOAD of
    glc/lower/lookup.py does not read."""
    rng = np.random.default_rng(3)
    arrays = {"x": rng.integers(-128, 128, (4, 16)).astype(np.int8),
              "t": rng.integers(-128, 128, (256, 2)).astype(np.int8)}
    term = parse_term("(table-lookup (access-tensor x) (access-squeeze (access-slice "
                      "(access-tensor t) 1 1 2) 1))")
    program = lower(term, env_types(arrays), load_config("n16"))
    assert program.figures()["host_steps"] == 1 and not program.kernels
    exact(term, arrays, program)


@pytest.mark.rtl
@pytest.mark.parametrize("config", ["n16", "n4"])
def test_table_lookups_on_the_rtl_equal_the_model(config):
    term, arrays = _lookup("(table-lookup (access-tensor x) (access-tensor t))", (2, 16, 20),
                           seed=11)
    exact(term, arrays, lower(term, env_types(arrays), load_config(config)), "rtl")
