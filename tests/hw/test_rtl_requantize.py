"""The store path's requantize unit against the language contract's formula."""

from tbutil import run_unit


def test_requantize_rounds_and_saturates_like_the_contract():
    run_unit("requantize", "cocotb_requantize", {}, "requantize")
