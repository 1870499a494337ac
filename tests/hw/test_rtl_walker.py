"""The DMA address generator (nested strided loops with zero padding) at several port widths."""

import pytest
from tbutil import run_unit

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent


@pytest.mark.parametrize("port", [4, 16])
def test_transfer_walker_follows_the_transfer_pattern(port):
    run_unit("transfer_walker", "cocotb_walker", {"PORT_BYTES": port}, f"walker-p{port}")
