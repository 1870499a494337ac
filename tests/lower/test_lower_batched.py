"""Batched products on the array (glc/lower/batched.py): C[β] = A[β]·B[β] written as a dot
product over an access-pair of A broadcast over N and Bᵀ over M (attention's Q·Kᵀ and P·V, as
glc/onnx/attention.py writes them) is one kernel per batch element, equal to numpy's matmul
and to the interpreter, in the cycle model's cycles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from exactness import exact

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.ir.types import Access
from glc.rewrites import DEFAULT, select
from glc.syntax.reader import parse_program


def _batched(a: str, b: str, batch: tuple[int, ...], m: int, n: int, k: int) -> str:
    """``a`` (batch…, M, K) times ``b`` (batch…, K, N), both access expressions of that rank
    (a dim of 1 in either batch broadcast), as the import writes it."""
    rank = len(batch) + 2
    target = f"(access-shape (shape {' '.join(map(str, batch + (m, n, k)))}) (shape))"
    perm = " ".join(map(str, list(range(rank - 2)) + [rank - 1, rank - 2]))
    x = f"(access (access-broadcast (access-insert-axis {a} {rank - 1}) {target}) {rank})"
    w = (f"(access (access-broadcast (access-insert-axis (access-transpose {b} (list {perm})) "
         f"{rank - 2}) {target}) {rank})")
    return f"(compute dot-product (access-pair {x} {w}))"


def _compiled(inputs: dict[str, tuple[int, ...]], body: str, config_name: str):
    text = "".join(f"(input {name} (shape {' '.join(map(str, dims))}) int8)\n"
                   for name, dims in inputs.items()) + body
    program = parse_program(text, "<batched>")
    env = {name: Access(dims, (), "int8") for name, dims in inputs.items()}
    config = load_config(config_name)
    lowered = compile_program(program, env, rules=select(DEFAULT, config.array_size),
                              config=config).lowered
    return program, lowered


def _arrays(inputs: dict[str, tuple[int, ...]], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {name: rng.integers(-128, 128, dims).astype(np.int8) for name, dims in inputs.items()}


# (a's dims, b's dims, config): heads of attention, a batch of one, a broadcast batch (a dim
# of 1 on either side), two batch dims, sizes the array does not divide.
CASES = {
    "heads-2-n16": ((2, 8, 16), (2, 16, 8), "n16"),
    "batch-heads-n4": ((2, 3, 5, 7), (2, 3, 7, 6), "n4"),
    "odd-n16": ((3, 13, 37), (3, 37, 19), "n16"),
    "a-broadcast-n4": ((1, 6, 9), (3, 9, 5), "n4"),
    "b-broadcast-n4": ((2, 1, 4, 6, 9), (1, 3, 1, 9, 5), "n4"),
    "wide-n16": ((2, 3, 16), (2, 16, 48), "n16"),
    "tall-n16": ((2, 64, 32), (2, 32, 2), "n16"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("convert", [False, True], ids=["int32", "relu-requantize"])
def test_a_batched_product_is_a_kernel_per_batch_element(name, convert):
    a_dims, b_dims, config = CASES[name]
    batch = tuple(np.broadcast_shapes(a_dims[:-2], b_dims[:-2]))
    body = _batched("(access-tensor a)", "(access-tensor b)", batch, a_dims[-2], b_dims[-1],
                    a_dims[-1])
    if convert:
        body = f"(compute (requantize 9) (compute relu {body}))"
    inputs = {"a": a_dims, "b": b_dims}
    program, lowered = _compiled(inputs, body, config)
    figures = lowered.figures()
    assert figures["host_steps"] == figures["host_copies"] == 0, figures["host"]
    assert figures["kernels"] == math.prod(batch)
    for seed in range(2):
        arrays = _arrays(inputs, seed)
        outcome = exact(program.body, arrays, lowered)
        product = np.matmul(arrays["a"].astype(np.int64), arrays["b"].astype(np.int64))
        if convert:
            product = np.clip((np.maximum(product, 0) + 256) >> 9, -128, 127)
        assert np.array_equal(outcome.result, product)


def test_a_product_of_few_columns_runs_transposed_in_every_element():
    """64×32 by 32×2 per element: Cᵀ = Bᵀ·Aᵀ keeps the 64 rows of A stationary (the schedule
    search's choice for the first element, taken by all); each element's Cᵀ lies after the
    one before, and the result is read back through the transposed view."""
    _, lowered = _compiled({"a": (2, 64, 32), "b": (2, 32, 2)}, _batched(
        "(access-tensor a)", "(access-tensor b)", (2,), 64, 2, 32), "n16")
    (buffer,) = [b for b in lowered.buffers.values() if b.name.startswith("kernel")]
    assert buffer.shape == (2 * 2, 64)


def test_the_heads_of_a_projection_are_views_of_it():
    """Attention's head split: q and k (tokens, heads·dim) seen as (heads, tokens, dim) and
    (heads, dim, tokens) through a reshape and a transpose, no copy."""
    heads, tokens, dim = 2, 8, 16
    q = (f"(access-transpose (access-reshape (access-tensor q) (access-shape "
         f"(shape {tokens} {heads} {dim}) (shape))) (list 1 0 2))")
    kt = (f"(access-transpose (access-reshape (access-tensor k) (access-shape "
          f"(shape {tokens} {heads} {dim}) (shape))) (list 1 2 0))")
    inputs = {"q": (tokens, heads * dim), "k": (tokens, heads * dim)}
    program, lowered = _compiled(inputs, _batched(q, kt, (heads,), tokens, tokens, dim), "n16")
    figures = lowered.figures()
    assert (figures["kernels"], figures["host_steps"], figures["host_copies"]) == (heads, 0, 0)
    exact(program.body, _arrays(inputs, 3), lowered)


@pytest.mark.rtl
def test_a_batched_product_on_the_rtl_equals_the_interpreter_and_the_model():
    product = _batched("(access-tensor a)", "(access-tensor b)", (2,), 5, 6, 7)
    body = f"(compute (requantize 8) {product})"
    inputs = {"a": (2, 5, 7), "b": (2, 7, 6)}
    program, lowered = _compiled(inputs, body, "n4")
    assert lowered.figures()["kernels"] == 2
    exact(program.body, _arrays(inputs, 5), lowered, engine="rtl")


def _with_vectors(inputs, body, vectors, config="n4"):
    """``_compiled`` with int32/float32 vector inputs beside the int8 operands."""
    text = "".join(f"(input {name} (shape {' '.join(map(str, dims))}) {dtype})\n"
                   for name, (dims, dtype) in {**{k: (v, "int8") for k, v in inputs.items()},
                                               **vectors}.items()) + body
    program = parse_program(text, "<batched>")
    env = {name: Access(dims, (), dtype) for name, (dims, dtype) in
           {**{k: (v, "int8") for k, v in inputs.items()}, **vectors}.items()}
    cfg = load_config(config)
    lowered = compile_program(program, env, rules=select(DEFAULT, cfg.array_size),
                              config=cfg).lowered
    return program, lowered


def _spread(name: str, of: tuple[int, ...], dims: tuple[int, ...]) -> str:
    return (f"(access-broadcast (access-reshape (access-tensor {name}) (access-shape "
            f"(shape {' '.join(map(str, of))}) (shape))) (access-shape "
            f"(shape {' '.join(map(str, dims))}) (shape)))")


@pytest.mark.parametrize("along", ["rows", "columns"])
def test_the_requantization_and_a_bias_vector_are_in_the_kernels_stores(along):
    """ONNX's requantization of a batched product plus a bias that is the same along C's
    columns (a zero point's row sums) or rows (its column sums): no fold, every element's
    STOREs add its slice of the bias and requantize (glc/lower/linear.py)."""
    batch, m, n, k = (2, 3), 5, 6, 7
    dims = batch + (m, n)
    of = batch + ((m, 1) if along == "rows" else (1, n))
    product = _batched("(access-tensor a)", "(access-tensor b)", batch, m, n, k)
    body = (f"(requantize-linear (compute elementwise-add (access-pair {product} "
            f"{_spread('bias', of, dims)})) {_spread('mult', (1,) * 4, dims)} -3)")
    inputs = {"a": batch + (m, k), "b": batch + (k, n)}
    vectors = {"bias": (of, "int32"), "mult": ((1, 1, 1, 1), "float32")}
    program, lowered = _with_vectors(inputs, body, vectors)
    figures = lowered.figures()
    assert figures["host_steps"] == 0 and figures["kernels"] == 6, figures["host"]
    assert all(s.kernel.kind == "matmul" for s in lowered.kernels)
    rng = np.random.default_rng(7)
    arrays = _arrays(inputs, 7) | {
        "bias": rng.integers(-5000, 5000, of).astype(np.int32),
        "mult": np.full((1, 1, 1, 1), 0.0123, np.float32)}
    exact(program.body, arrays, lowered)


def test_a_bias_alone_is_added_by_the_kernels():
    """A batched product plus a bias the same along C's rows, no requantization: the int32
    result with the bias from the STOREs (the column sums before a requantization by rows)."""
    batch, m, n, k = (2,), 9, 6, 5
    dims = batch + (m, n)
    product = _batched("(access-tensor a)", "(access-tensor b)", batch, m, n, k)
    body = (f"(compute elementwise-add (access-pair {product} "
            f"{_spread('bias', batch + (1, n), dims)}))")
    inputs = {"a": batch + (m, k), "b": batch + (k, n)}
    program, lowered = _with_vectors(inputs, body, {"bias": (batch + (1, n), "int32")})
    figures = lowered.figures()
    assert figures["host_steps"] == 0 and figures["kernels"] == 2, figures["host"]
    assert all(s.kernel.kind == "matmul" for s in lowered.kernels)
    arrays = _arrays(inputs, 8) | {
        "bias": np.random.default_rng(8).integers(-9000, 9000, batch + (1, n)).astype(np.int32)}
    exact(program.body, arrays, lowered)


@pytest.mark.rtl
def test_a_requantized_batched_product_on_the_rtl_equals_the_interpreter_and_the_model():
    """The STOREs' tables of the batched kernels (a bias along C's rows, one multiplier)."""
    batch, m, n, k = (2,), 5, 6, 7
    dims = batch + (m, n)
    product = _batched("(access-tensor a)", "(access-tensor b)", batch, m, n, k)
    body = (f"(requantize-linear (compute elementwise-add (access-pair {product} "
            f"{_spread('bias', batch + (m, 1), dims)})) {_spread('mult', (1, 1, 1), dims)} 4)")
    inputs = {"a": batch + (m, k), "b": batch + (k, n)}
    vectors = {"bias": (batch + (m, 1), "int32"), "mult": ((1, 1, 1), "float32")}
    program, lowered = _with_vectors(inputs, body, vectors)
    assert lowered.figures()["host_steps"] == 0
    arrays = _arrays(inputs, 9) | {
        "bias": np.random.default_rng(9).integers(-4000, 4000, batch + (m, 1)).astype(np.int32),
        "mult": np.full((1, 1, 1), 0.0173, np.float32)}
    exact(program.body, arrays, lowered, engine="rtl")
