"""Matrix·vector and batched products on the array (issue 41, item 12): a product with the
vector second, or with a batch dim before the rows, ran as a numpy host step without a word (a
256×256 by 256 product was ``kernels 0``, the same product with the vector first one kernel).
Each is now one kernel whose result on the ISA simulator equals the interpreter's bit for bit,
in the cycle model's cycles; a product the array cannot take says why."""

from __future__ import annotations

import pytest
from exactness import exact

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import random_inputs
from glc.ir.types import Access
from glc.rewrites import DEFAULT, select
from glc.syntax.reader import parse_program


def _access(name: str, split: int) -> str:
    return f"(access (access-tensor {name}) {split})"


def _product(left: str, right: str) -> str:
    return f"(compute dot-product (access-cartesian-product {left} {right}))"


def _compiled(inputs: dict[str, tuple[tuple[int, ...], str]], body: str, config_name: str):
    text = "".join(f"(input {name} (shape {' '.join(map(str, dims))}) {dtype})\n"
                   for name, (dims, dtype) in inputs.items()) + body
    program = parse_program(text, "<product>")
    env = {name: Access(dims, (), dtype) for name, (dims, dtype) in inputs.items()}
    config = load_config(config_name)
    result = compile_program(program, env, rules=select(DEFAULT, config.array_size),
                             config=config)
    return program, env, result.lowered


# (inputs, the product, config): the vector second, of the size and of odd ones; a
# batch dim on the first operand, on the second, on both, and under a vector second.
PRODUCTS = {
    "matrix-vector-256": ({"a": ((256, 256), "int8"), "v": ((256,), "int8")},
                          _product(_access("a", 1), _access("v", 0)), "n16"),
    "matrix-vector-13x37": ({"a": ((13, 37), "int8"), "v": ((37,), "int8")},
                            _product(_access("a", 1), _access("v", 0)), "n16"),
    "matrix-vector-5x7-n4": ({"a": ((5, 7), "int8"), "v": ((7,), "int8")},
                             _product(_access("a", 1), _access("v", 0)), "n4"),
    "batched-by-matrix": ({"a": ((3, 5, 19), "int8"), "b": ((7, 19), "int8")},
                          _product(_access("a", 2), _access("b", 1)), "n16"),
    "batched-by-vector": ({"a": ((3, 5, 19), "int8"), "v": ((19,), "int8")},
                          _product(_access("a", 2), _access("v", 0)), "n16"),
    "vector-by-batched": ({"v": ((20,), "int8"), "a": ((3, 7, 20), "int8")},
                          _product(_access("v", 0), _access("a", 2)), "n16"),
    "matrix-by-batched-n4": ({"a": ((6, 9), "int8"), "b": ((2, 3, 9), "int8")},
                             _product(_access("a", 1), _access("b", 2)), "n4"),
    "batched-by-batched": ({"a": ((2, 3, 11), "int8"), "b": ((2, 5, 11), "int8")},
                           _product(_access("a", 2), _access("b", 2)), "n16"),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_product_is_one_kernel_equal_to_the_interpreter(name):
    inputs, body, config = PRODUCTS[name]
    program, env, lowered = _compiled(inputs, body, config)
    figures = lowered.figures()
    assert (figures["kernels"], figures["host_steps"], figures["host_copies"]) == (1, 0, 0), \
        figures["host"]
    for seed in range(2):
        exact(program.body, random_inputs(env, list(env), seed), lowered)


@pytest.mark.parametrize(("inputs", "body", "why"), [
    ({"u": ((19,), "int8"), "v": ((19,), "int8")}, _product(_access("u", 0), _access("v", 0)),
     "a product of ((),(19)) int8 by ((),(19)) int8: a vector by a vector"),
    ({"a": ((5, 19), "float32"), "v": ((19,), "float32")},
     _product(_access("a", 1), _access("v", 0)),
     "its operands are float32: the array multiplies int8"),
    # rows paired item by item, neither a depthwise conv nor a batch of products (a batched
    # product is one kernel per batch element, tests/lower/test_lower_batched.py)
    ({"a": ((4, 8, 16), "int8"), "b": ((4, 8, 16), "int8")},
     "(compute dot-product (access-pair (access (access-tensor a) 2) "
     "(access (access-tensor b) 2)))",
     "a product of ((4,8),(16)) int8 and ((4,8),(16)) int8 paired item by item"),
])
def test_a_product_left_to_the_host_says_why(inputs, body, why):
    _, _, lowered = _compiled(inputs, body, "n16")
    (host,) = lowered.figures()["host"]
    assert host.startswith("host1: ") and f"(on the host: {why}" in host
