"""The RTL decoder and the Python encoder agree on every field check (docs/isa.md)."""

import pytest
from tbutil import run_unit

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent


@pytest.mark.parametrize(("n", "column_split"), [(4, 1), (16, 1), (4, 0)])
def test_decoder_matches_the_python_encoding(n, column_split):
    """Both sides of `column_split` (docs/isa.md: MATMUL `split` is ILLEGAL_FIELD without it)."""
    run_unit("decoder", "cocotb_decoder", {"ARRAY_SIZE": n, "COLUMN_SPLIT": column_split},
             f"decoder-n{n}-split{column_split}")
