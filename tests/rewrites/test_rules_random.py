"""The rows whose conditions and right sides do arithmetic (permutations, reshapes), on seeded
random shapes: wherever a row fires, its two sides evaluate equal. The generators also produce
cases the conditions must refuse (regrouped items, a moved tuple axis); a wrong condition that
let one through would fail the equality."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_rules import RULES, rewritten

from glc.inputs import random_inputs
from glc.interp import interpret
from glc.syntax.printer import print_term

TRIALS = 40


def ints(values) -> str:
    return " ".join(str(v) for v in values)


def factor(total: int, parts: int, rng: np.random.Generator) -> list[int]:
    """``parts`` random positive integers whose product is ``total``."""
    dims = [1] * parts
    for p in prime_factors(total):
        dims[int(rng.integers(parts))] *= p
    return dims


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def tensor(rng: np.random.Generator, rank: int, high: int = 4) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(1, high + 1, rank))


def check_equal(name: str, source: str) -> bool:
    """Apply the row; if it fires, assert both sides equal. Returns whether it fired."""
    term, result, env = rewritten(name, source)
    if result is None:
        return False
    arrays = random_inputs(env, list(env), 0)
    left, _ = interpret(term, arrays)
    right, _ = interpret(result, arrays)
    assert left.shape == right.shape and np.array_equal(left, right), print_term(result)
    return True


def decl(name: str, dims: tuple[int, ...]) -> str:
    return f"(input {name} (shape {ints(dims)}) int8)\n"


def transposes(rng):
    dims = tensor(rng, int(rng.integers(2, 5)))
    n = int(rng.integers(0, len(dims) + 1))
    p, q = rng.permutation(len(dims)), rng.permutation(len(dims))
    return "collapse-nested-transposes", decl("a", dims) + (
        f"(access-transpose (access-transpose (access (access-tensor a) {n}) (list {ints(p)})) "
        f"(list {ints(q)}))")


def slice_or_pad_across_transpose(rng):
    dims = tensor(rng, int(rng.integers(2, 5)), 5)
    p = rng.permutation(len(dims))
    k = int(rng.integers(len(dims)))
    moved = tuple(dims[j] for j in p)
    if rng.integers(2):
        lo = int(rng.integers(0, dims[k]))
        hi = int(rng.integers(lo + 1, dims[k] + 1))
        inner, outer = f"access-slice (access-tensor a) {k} {lo} {hi}", None
        lo2 = int(rng.integers(0, moved[k]))
        outer = f"{k} {lo2} {int(rng.integers(lo2 + 1, moved[k] + 1))}"
        kind = "slice"
    else:
        pad = ("zero-padding", "min-padding")[int(rng.integers(2))]
        before, after = (int(x) for x in rng.integers(0, 3, 2))
        inner = f"access-pad (access-tensor a) {pad} {k} {before} {after}"
        outer = f"{pad} {k} {before} {after}"
        kind = "pad"
    if rng.integers(2):
        return f"bubble-{kind}-through-transpose", decl("a", dims) + (
            f"(access-transpose ({inner}) (list {ints(p)}))")
    return f"sink-{kind}-through-transpose", decl("a", dims) + (
        f"(access-{kind} (access-transpose (access-tensor a) (list {ints(p)})) {outer})")


def product(rng, item_rank: int | None = None):
    """A cartesian product's operands: declarations and two accesses with equal items."""
    item = tensor(rng, item_rank or int(rng.integers(1, 3)))
    sa, sb = tensor(rng, int(rng.integers(0, 3))), tensor(rng, int(rng.integers(0, 3)))
    source = decl("a", sa + item) + decl("b", sb + item)
    a = f"(access (access-tensor a) {len(sa)})"
    b = f"(access (access-tensor b) {len(sb)})"
    return source, a, b, (sa, sb, item)


def reshape_under_dot(rng):
    source, a, b, (sa, sb, item) = product(rng)
    total = math.prod(sa) * math.prod(sb) * 2 * math.prod(item)
    s_count = math.prod(sa) * math.prod(sb) * (2 if rng.integers(3) == 0 else 1)
    shape = factor(s_count, int(rng.integers(0, 3)) if s_count == 1 else int(rng.integers(1, 3)),
                   rng)
    rest = total // s_count
    divisors = [d for d in range(1, rest + 1) if rest % d == 0]
    first = 2 if rest % 2 == 0 and rng.integers(3) else int(rng.choice(divisors))
    items = [first, *factor(rest // first, int(rng.integers(1, 3)), rng)]
    target = f"(access-shape (shape {ints(shape)}) (shape {ints(items)}))"
    return "bubble-reshape-through-compute-dot-product", source + (
        f"(compute dot-product (access-reshape (access-cartesian-product {a} {b}) {target}))")


def reshape_under_product(rng):
    source, a, b, (sa, sb, item) = product(rng)
    inner_item = math.prod(item)
    outer_item = factor(inner_item, int(rng.integers(1, 3)), rng)
    # Sometimes move a factor 2 of the items into the shape on both sides: equal outer items,
    # but whole items no longer kept, which the row must refuse.
    regroup = rng.integers(4) == 0 and len(outer_item) == 1 and outer_item[0] % 2 == 0
    sides = []
    for access, s in ((a, sa), (b, sb)):
        count = math.prod(s)
        if regroup:
            shape, items = factor(count * 2, 1, rng), [outer_item[0] // 2]
        else:
            shape, items = factor(count, int(rng.integers(1, 3)), rng), outer_item
        sides.append(f"(access-reshape (access-flatten {access}) "
                     f"(access-shape (shape {ints(shape)}) (shape {ints(items)})))")
    return "bubble-reshape-through-cartesian-product", source + (
        f"(access-cartesian-product {sides[0]} {sides[1]})")


def reshape_on_one_side(rng):
    """A product of a reshaped operand and a flat one (a batched matrix by a matrix or vector,
    issue 41 item 12), the reshape on either side. One time in four the reshape regroups the
    items (the flat side then has the regrouped items, so the product still types), which the
    rows must refuse."""
    item = tensor(rng, int(rng.integers(1, 3)))
    inner = math.prod(item)
    regroup = rng.integers(4) == 0 and inner % 2 == 0
    s_reshaped, s_flat = tensor(rng, int(rng.integers(1, 3))), tensor(rng, int(rng.integers(0, 2)))
    count = math.prod(s_reshaped)
    if regroup:
        shape, items = factor(count * 2, 1, rng), [inner // 2]
    else:
        shape, items = factor(count, int(rng.integers(1, 3)), rng), [inner]
    source = decl("a", s_reshaped + item) + decl("b", tuple(s_flat) + tuple(items))
    reshaped = (f"(access-reshape (access-flatten (access (access-tensor a) {len(s_reshaped)})) "
                f"(access-shape (shape {ints(shape)}) (shape {ints(items)})))")
    flat = f"(access (access-tensor b) {len(s_flat)})"
    if rng.integers(2):
        return "bubble-reshape-through-cartesian-product-left", source + (
            f"(access-cartesian-product {reshaped} {flat})")
    return "bubble-reshape-through-cartesian-product-right", source + (
        f"(access-cartesian-product {flat} {reshaped})")


def vector_second(rng):
    """A product of rows by a vector, sometimes of other ranks (which the row must leave)."""
    item = tensor(rng, 1)
    sa = tensor(rng, 1 if rng.integers(4) else int(rng.integers(0, 3)))
    sb = () if rng.integers(4) else tensor(rng, 1)
    source = decl("a", sa + item) + decl("b", sb + item)
    return "vector-operand-first", source + (
        f"(compute dot-product (access-cartesian-product (access (access-tensor a) {len(sa)}) "
        f"(access (access-tensor b) {len(sb)})))")


def shape_first(rng, n: int, ndim: int, keep_tuple: bool, mix: bool = True) -> list[int]:
    """A permutation of ``ndim`` dims that keeps the first ``n`` among themselves and, if
    ``keep_tuple``, dim ``n`` in place (if ``mix``, one time in five any permutation)."""
    if mix and rng.integers(5) == 0:
        return [int(j) for j in rng.permutation(ndim)]
    head = [int(j) for j in rng.permutation(n)]
    tail = list(range(n, ndim))
    if keep_tuple:
        rest = [n + 1 + int(j) for j in rng.permutation(ndim - n - 1)]
        return head + [n] + rest
    return head + tail


def transpose_under_dot(rng):
    source, a, b, (sa, sb, item) = product(rng)
    n = len(sa) + len(sb)
    p = shape_first(rng, n, n + 1 + len(item), keep_tuple=True)
    return "bubble-transpose-through-dot-product", source + (
        f"(compute dot-product (access-transpose (access-cartesian-product {a} {b}) "
        f"(list {ints(p)})))")


def transpose_in_product(rng):
    source, a, b, (sa, sb, item) = product(rng)
    if rng.integers(2):
        p = shape_first(rng, len(sa), len(sa) + len(item), keep_tuple=False, mix=False)
        return "bubble-transpose-through-cartesian-product-left", source + (
            f"(access-cartesian-product (access-transpose {a} (list {ints(p)})) {b})")
    p = shape_first(rng, len(sb), len(sb) + len(item), keep_tuple=False, mix=False)
    return "bubble-transpose-through-cartesian-product-right", source + (
        f"(access-cartesian-product {a} (access-transpose {b} (list {ints(p)})))")


def concatenate_or_slice_in_product(rng):
    item = tensor(rng, int(rng.integers(1, 3)))
    sa, sb = tensor(rng, int(rng.integers(1, 3))), tensor(rng, int(rng.integers(1, 3)))
    side = int(rng.integers(3))  # 0 left shape axis, 1 right shape axis, 2 an item axis
    ka = int(rng.integers(len(sa))) if side == 0 else len(sa) + int(rng.integers(len(item)))
    kb = int(rng.integers(len(sb))) if side == 1 else len(sb) + ka - len(sa)
    a_dims, b_dims = sa + item, sb + item
    extra = int(rng.integers(1, 3))
    a2 = tuple(d + extra if j == ka else d for j, d in enumerate(a_dims))
    b2 = tuple(d + extra if j == kb else d for j, d in enumerate(b_dims))
    source = decl("a", a_dims) + decl("b", b_dims) + decl("c", a2) + decl("d", b2)
    acc = {x: f"(access (access-tensor {x}) {n})" for x, n in
           (("a", len(sa)), ("b", len(sb)), ("c", len(sa)), ("d", len(sb)))}
    where = ("left", "right", "item-axis")[side]
    if rng.integers(2):
        left = f"(access-concatenate {acc['a']} {acc['c']} {ka})" if side != 1 else acc["a"]
        right = f"(access-concatenate {acc['b']} {acc['d']} {kb})" if side != 0 else acc["b"]
        return f"bubble-concatenate-through-cartesian-product-{where}", source + (
            f"(access-cartesian-product {left} {right})")
    lo = int(rng.integers(0, a2[ka] if side != 1 else b2[kb]))
    hi = int(rng.integers(lo + 1, (a2[ka] if side != 1 else b2[kb]) + 1))
    left = f"(access-slice {acc['c']} {ka} {lo} {hi})" if side != 1 else acc["a"]
    right = f"(access-slice {acc['d']} {kb} {lo} {hi})" if side != 0 else acc["b"]
    return f"bubble-slice-through-cartesian-product-{where}", source + (
        f"(access-cartesian-product {left} {right})")


GENERATORS = [transposes, slice_or_pad_across_transpose, reshape_under_dot, reshape_under_product,
              reshape_on_one_side, vector_second, transpose_under_dot, transpose_in_product,
              concatenate_or_slice_in_product]


@pytest.mark.parametrize("generate", GENERATORS, ids=lambda g: g.__name__)
def test_row_fires_soundly_on_random_shapes(generate):
    rng = np.random.default_rng(sum(map(ord, generate.__name__)))
    fired = 0
    for _ in range(TRIALS):
        name, source = generate(rng)
        assert name in RULES
        try:
            fired += check_equal(name, source)
        except Exception as error:  # a well-formed case is required: report which one
            raise AssertionError(f"{name}:\n{source}") from error
    # The generators aim at the rows' conditions: most trials must exercise the right side.
    assert fired >= TRIALS // 4
