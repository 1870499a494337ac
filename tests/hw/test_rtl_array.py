"""The systolic array against numpy, at several N, whole and (SPLIT) with split rows mixed in."""

import pytest
from tbutil import run_unit

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent


@pytest.mark.parametrize(("n", "split"), [(1, 0), (4, 0), (16, 0), (2, 1), (4, 1), (16, 1)])
def test_array_streams_matmuls_through_shadow_weights(n, split):
    run_unit("systolic_array", "cocotb_array", {"N": n, "TAG_W": 8, "SPLIT": split},
             f"array-n{n}-split{split}")
