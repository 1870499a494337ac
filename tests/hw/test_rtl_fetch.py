"""The instruction fetch unit at a full-word port (one word a cycle) and a narrow one (three
cycles a word, a two-word buffer)."""

import pytest
from tbutil import run_unit


@pytest.mark.parametrize(("words", "port"), [(4, 64), (2, 24)])
def test_fetch_unit_follows_the_fetch_timing(words, port):
    run_unit("fetch_unit", "cocotb_fetch",
             {"FETCH_BUFFER_WORDS": words, "FETCH_PORT_BYTES": port, "DRAM_BYTES": 128 + 64 * 40},
             f"fetch-f{words}-p{port}")
