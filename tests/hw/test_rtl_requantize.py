"""The store path's requantize unit against the language contract's formula."""

import pytest
from tbutil import run_unit

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent


def test_requantize_rounds_and_saturates_like_the_contract():
    run_unit("requantize", "cocotb_requantize", {}, "requantize")
