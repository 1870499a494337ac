"""The quantized operators (docs/language.md, "Quantized operators"): print/parse round trip,
located checker errors, and the interpreter against an element-by-element model of the contract
(Python's round() rounds half to even; numpy float32 scalars round each operation)."""

from __future__ import annotations

import numpy as np
import pytest

from glc.errors import GlcError
from glc.interp import interpret
from glc.ir.check import check
from glc.ir.quantized import dequantize_linear, linear_fold, quantize_linear, requantize_constants
from glc.ir.types import Access
from glc.syntax.printer import print_term
from glc.syntax.reader import parse_program, parse_term

PROGRAM = """(input acc (shape 2 5) int32)
(input m (shape 2 5) float32)
(input x (shape 2 5) int8)
(define r (requantize-linear (access-tensor acc) (access-tensor m) -7))
(define d (dequantize-linear (access-pad-value (access-tensor x) -3 1 1 2) 0.0235 5))
(access-concatenate (access-tensor r) (quantize-linear (access-slice d 1 0 5) 0.05 -128) 0)
"""


def _clamp(v):
    return max(-128, min(127, v))


def test_quantized_operators_print_and_parse_back():
    body = parse_program(PROGRAM).body
    assert parse_term(print_term(body)) == body


def test_quantized_operators_follow_the_contract_element_by_element():
    rng = np.random.default_rng(1)
    acc = rng.integers(-2**31, 2**31, (2, 5), dtype=np.int64).astype(np.int32)
    acc[0, :3] = [5, -5, 2**24 + 1]
    m = rng.uniform(1e-9, 1e-6, (2, 5)).astype(np.float32)
    m[0, :2] = 0.5
    x = rng.integers(-128, 128, (2, 5), dtype=np.int8)
    out, ty = interpret(parse_program(PROGRAM).body, {"acc": acc, "m": m, "x": x})
    assert ty == Access((4, 5), (), "int8")
    for i in range(2):
        for j in range(5):
            product = np.float32(acc[i, j]) * m[i, j]
            assert out[i, j] == _clamp(round(float(product)) - 7)
            padded = -3 if j == 0 else int(x[i, j - 1])
            value = np.float32(padded - 5) * np.float32(0.0235)
            assert out[2 + i, j] == _clamp(round(float(value / np.float32(0.05))) - 128)
    assert out[0, 0] == _clamp(2 - 7) and out[0, 1] == _clamp(-2 - 7)  # 2.5, -2.5: to even


@pytest.mark.parametrize("text,message", [
    ("(requantize-linear (access-tensor m) (access-tensor m) 0)",
     "<t>:1:20: error: requantize-linear needs an integer accumulator, got float32"),
    ("(requantize-linear (access-tensor acc) (access-tensor x) 0)",
     "<t>:1:40: error: requantize-linear needs float32 multipliers of the accumulator's dims"),
    ("(requantize-linear (access-tensor acc) (access-tensor m) 200)",
     "<t>:1:58: error: requantize-linear needs an int8 zero point"),
    ("(quantize-linear (access-tensor acc) 0.5 0)",
     "<t>:1:18: error: quantize-linear needs a float32 operand, got int32"),
    ("(dequantize-linear (access-tensor x) -1.0 0)",
     "<t>:1:38: error: dequantize-linear needs a positive finite float32 scale"),
    ("(average-pool-linear (access x 1) (access-tensor m) 0.5 0 0.5 0 0)",
     "<t>:1:35: error: average-pool-linear needs float32 divisors of the windows' shape dims (2)"),
    ("(average-pool-linear (access x 1) (dequantize-linear (compute reduce-max (access x 1)) 1.0 "
     "0) 0.5 0 0.5 0 64)", "<t>:1:107: error: average-pool-linear needs an offset of 0 (int8) or"),
    ("(access-pad-value (access-tensor x) 300 1 1 1)",
     "<t>:1:37: error: access-pad-value needs a padding value of dtype int8, got 300"),
])
def test_quantized_operator_errors_are_located(text, message):
    env = {"acc": Access((2, 5), (), "int32"), "m": Access((2, 5), (), "float32"),
           "x": Access((2, 5), (), "int8")}
    with pytest.raises(GlcError) as error:
        check(parse_term(text, "<t>"), env)
    assert str(error.value).startswith(message)


def test_average_pool_adds_the_zero_point_before_rounding():
    # mean 2.5 (a tie) plus zero point 3: rint(5.5) = 6, where rint(2.5) + 3 would be 5; the
    # second row's mean, -300, saturates; offset 128 (uint8 carried as int8) rounds in uint8.
    text = """(input w (shape 2 2) int8)
(input d (shape 2) float32)
(average-pool-linear (access (access-tensor w) 1) (access-tensor d) 0.5 -1 1.0 {z} {offset})"""
    w = np.array([[4, 5], [-128, -128]], dtype=np.int8)
    d = np.array([2.0, 0.2], dtype=np.float32)
    for z, offset, expected in ((3, 0, [6, -128]), (-125, 128, [-122, -128])):
        out, ty = interpret(parse_program(text.format(z=z, offset=offset)).body, {"w": w, "d": d})
        assert ty == Access((2,), (), "int8") and out.tolist() == expected


def test_a_requantization_is_one_lin_where_constants_round_like_the_division():
    """QuantizeLinear(DequantizeLinear(x)) to other parameters as the vector unit's ``lin``
    (glc/ir/quantized.py, ``requantize_constants``): the plain ratio and intercept miss an
    input now and then (the division rounds twice, the fma once); the constants offered give
    the interpreter's value on every int8 input, and where none near the plain pair do, none
    are offered (the lowering leaves that part to the host)."""
    f = np.float32
    x = np.arange(-128, 128, dtype=np.int8)

    def target(s, z, sc, zc):
        return quantize_linear(dequantize_linear(x, s, z), sc, zc)

    s, z, sc, zc = 0.19768467545509338, 3, 0.15366582572460175, 78
    ratio = f(f(s) / f(sc))
    plain = linear_fold([x], 0, f(zc - z * np.float64(ratio)), [ratio])
    assert not np.array_equal(plain, target(s, z, sc, zc))
    scale, fixed = requantize_constants(s, z, sc, zc)
    assert np.array_equal(linear_fold([x], 0, fixed, [scale]), target(s, z, sc, zc))
    rng = np.random.default_rng(11)
    offered = 0
    for _ in range(300):
        s, sc = float(f(rng.uniform(0.001, 0.3))), float(f(rng.uniform(0.001, 0.3)))
        z, zc = int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
        found = requantize_constants(s, z, sc, zc)
        if found is not None:
            offered += 1
            assert np.array_equal(linear_fold([x], 0, found[1], [found[0]]),
                                  target(s, z, sc, zc))
    assert offered >= 297
    assert requantize_constants(0.1828881800174713, 101, 0.1803828626871109, 103) is None


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 0.0, -0.5])
def test_requantize_linear_refuses_multipliers_not_finite_and_positive_at_the_form(bad):
    """Issue 41, item 6: a NaN multiplier's integer conversion is undefined (numpy warned and
    the hardware answered otherwise); the interpreter refuses it at the multipliers' form."""
    m = np.full((2, 5), 1e-7, np.float32)
    m[1, 3] = bad
    arrays = {"acc": np.zeros((2, 5), np.int32), "m": m, "x": np.zeros((2, 5), np.int8)}
    with pytest.raises(GlcError) as caught:
        interpret(parse_program(PROGRAM, "p.gls").body, arrays)
    assert str(caught.value) == ("p.gls:4:50: error: requantize-linear needs finite positive "
                                 f"multipliers, got {np.float32(bad)} at index (1, 3)")


def test_glc_run_refuses_a_nan_multiplier_before_running_the_program(tmp_path):
    """Issue 41, item 6, through the CLI: one located line, exit 1, whichever engine; the
    interpreter runs first, so the hardware's answer for a NaN is never compared with numpy's."""
    from click.testing import CliRunner

    from glc.cli import main

    (tmp_path / "p.gls").write_text(PROGRAM)
    m = np.full((2, 5), 1e-7, np.float32)
    m[0, 2] = np.nan
    np.save(tmp_path / "m.npy", m)
    np.save(tmp_path / "acc.npy", np.ones((2, 5), np.int32))
    np.save(tmp_path / "x.npy", np.ones((2, 5), np.int8))
    result = CliRunner().invoke(main, ["run", str(tmp_path), "--engine", "isa"])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines() == [f"{tmp_path / 'p.gls'}:4:50: error: requantize-linear "
                                          "needs finite positive multipliers, got nan at index "
                                          "(0, 2)"]
