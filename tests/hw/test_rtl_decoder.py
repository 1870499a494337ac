"""The RTL decoder and the Python encoder agree on every field check (docs/isa.md)."""

import pytest
from tbutil import run_unit

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent


@pytest.mark.parametrize("n", [4, 16])
def test_decoder_matches_the_python_encoding(n):
    run_unit("decoder", "cocotb_decoder", {"ARRAY_SIZE": n}, f"decoder-n{n}")
