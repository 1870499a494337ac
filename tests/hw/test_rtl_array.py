"""The systolic array against numpy, at several N."""

import pytest
from tbutil import run_unit

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent


@pytest.mark.parametrize("n", [1, 4, 16])
def test_array_streams_matmuls_through_shadow_weights(n):
    run_unit("systolic_array", "cocotb_array", {"N": n, "TAG_W": 8}, f"array-n{n}")
