"""An integer cartesian product, and a reshape of one that keeps its pairs, are lazy: never
materialised for the dot product over them, so the size limit (2^28 elements) binds only where
something else consumes them. The im2col rewrites write ``(access-reshape
(access-cartesian-product ..) ..)``; before the reshape was lazy too, every conv whose pairs
passed the limit (a 207→251-channel 3×3 conv at 29×29: 2^29.6 elements) stayed a host step."""

from __future__ import annotations

import numpy as np
import pytest

from glc.compiler import compile_program
from glc.errors import GlcError
from glc.interp import interpret
from glc.ir.check import type_of
from glc.ir.term import walk
from glc.ir.types import Access
from glc.rewrites import select
from glc.syntax.reader import parse_program, parse_term

RNG = np.random.default_rng(11)
A = RNG.integers(-128, 128, (3, 4, 6), dtype=np.int8)
B = RNG.integers(-128, 128, (5, 4, 6), dtype=np.int8)
PAIRS = "(access-cartesian-product (access a 2) (access b 2))"
# The pairs' shape (3,4,5,4) re-split as (12,20) and their items (2,6) as (2,2,3).
RESHAPED = f"(access-reshape {PAIRS} (access-shape (shape 12 20) (shape 2 2 3)))"


def _run(source: str, **arrays):
    return interpret(parse_term(source, "case.gls"), arrays or {"a": A, "b": B})


def test_a_dot_product_over_reshaped_pairs_is_the_reshaped_contraction():
    got, ty = _run(f"(compute dot-product {RESHAPED})")
    expected = np.einsum("ijr,klr->ijkl", A.astype(np.int64), B.astype(np.int64))
    assert ty == Access((12, 20), (), "int32")
    assert np.array_equal(got, expected.reshape(12, 20).astype(np.int32))


def test_reshaped_pairs_materialised_hold_each_pair_in_row_major_order():
    got, _ = _run(RESHAPED)
    full = np.empty((3, 4, 5, 4, 2, 6), dtype=np.int8)
    full[..., 0, :] = A[:, :, None, None, :]
    full[..., 1, :] = B[None, None, :, :, :]
    assert np.array_equal(got, full.reshape(12, 20, 2, 2, 3))


def _big(consumer: str) -> str:
    # 2048 × 2048 pairs of 64-element items: 2^29 elements, twice the limit.
    pairs = "(access-cartesian-product (access x 1) (access y 1))"
    return f"(compute {consumer} (access-reshape {pairs} (access-shape (shape 4096 1024) " \
           f"(shape 2 8 8))))"


BIG_ENV = {"x": Access((2048, 64), (), "int8"), "y": Access((2048, 64), (), "int8")}


def test_a_reshape_of_pairs_past_the_limit_type_checks_under_a_dot_product():
    assert type_of(parse_term(_big("dot-product"), "case.gls"), BIG_ENV) == Access(
        (4096, 1024), (), "int32")


def test_materialising_reshaped_pairs_past_the_limit_is_a_located_error():
    with pytest.raises(GlcError) as caught:
        type_of(parse_term(_big("reduce-sum"), "case.gls"), BIG_ENV)
    assert "materialises a cartesian product of dims (4096,1024,2,8,8)" in caught.value.message
    assert caught.value.where.line == 1


def test_a_reshape_that_merges_the_pair_axis_into_the_item_is_a_tensor():
    # Items (2,8,8) as (16,8): the pair axis is no longer outermost, so the reshape is a tensor
    # held to the limit even under a dot product.
    source = _big("dot-product").replace("(shape 2 8 8)", "(shape 16 8)")
    with pytest.raises(GlcError, match="more than glc's limit"):
        type_of(parse_term(source, "case.gls"), BIG_ENV)


def test_a_conv_whose_im2col_pairs_pass_the_limit_is_put_on_the_array():
    # 207 → 251 channels, 3×3, 29×29 (pad 1 on the image): 251·841 pairs of 2·1863 elements.
    source = ("(compute dot-product (access-cartesian-product (access (access-tensor w) 1) "
              "(access (access-squeeze (access-windows (access (access-tensor x) 1) "
              "(shape 207 3 3) (shape 1 1 1)) 1) 3)))")
    env = {"x": Access((1, 207, 31, 31), (), "int8"), "w": Access((251, 207, 3, 3), (), "int8")}
    compiled = compile_program(parse_program(source, "conv.gls"), env,
                               select("im2col,tensorise", 16))
    ops = [t.op for t in walk(compiled.term)]
    assert "systolic-array" in ops or "systolic-array-with-blocking" in ops
    assert not any(t.op == "compute" and t.args[0].value == ("dot-product",)
                   for t in walk(compiled.term))
