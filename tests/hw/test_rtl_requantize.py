"""The store path's converters against the language contract: the rounding shift, and ONNX's
requantization (STORE `linear`) against numpy's float32."""

import pytest
from tbutil import run_unit

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent


def test_requantize_rounds_and_saturates_like_the_contract():
    run_unit("requantize", "cocotb_requantize", {}, "requantize")


def test_requantize_linear_equals_float32_bit_for_bit():
    run_unit("requantize_linear", "cocotb_requantize_linear", {}, "requantize_linear")


def test_vector_linear_equals_its_model_bit_for_bit():
    run_unit("vector_linear", "cocotb_vector_linear", {}, "vector_linear")


def test_vector_round_equals_its_model_bit_for_bit():
    run_unit("vector_round", "cocotb_vector_round", {}, "vector_round")
