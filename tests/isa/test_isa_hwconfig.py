"""Hardware configurations: the two shipped files, and located errors for bad ones."""

import pytest

from glc.errors import GlcError
from glc.hwconfig import load_config


def test_n16_and_n4_are_the_documented_machines():
    n16, n4 = load_config("n16"), load_config("n4")
    assert (n16.array_size, n16.scratchpad_rows, n16.accumulator_rows) == (16, 16384, 4096)
    assert (n16.dram_bytes, n16.dram_port_bytes) == (64 << 20, 16)
    assert (n16.fetch_buffer_words, n16.fetch_port_bytes) == (32, 64)
    assert (n4.array_size, n4.dram_port_bytes) == (4, 4)
    assert n16.verilog_parameters()["ARRAY_SIZE"] == 16


def test_a_path_loads_like_a_name(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text("array_size = 8\nscratchpad_rows = 64\naccumulator_rows = 32\n"
                    "dram_bytes = 4096\ndram_port_bytes = 8\nfetch_buffer_words = 16\n"
                    "fetch_port_bytes = 64\nqueue_depth = 2\nvector_lanes = 8\n"
                    "vector_shares_ports = 1\ncolumn_split = 1\n")
    config = load_config(path)
    assert (config.array_size, config.queue_depth, config.name) == (8, 2, "mine")
    assert config.verilog_parameters()["VECTOR_SHARES_PORTS"] == 1


@pytest.mark.parametrize(("text", "message"), [
    ("array_size = 1\n", "array_size must be an integer in 2 … 128"),
    ("array_size = 'big'\n", "array_size must be an integer"),
    ("colour = 3\n", "unknown configuration key(s) colour"),
    ("vector_lanes = 3\n", "vector_lanes must divide array_size (8), not 3"),
    ("vector_lanes = 0\n", "vector_lanes must be an integer in 1 … 128"),
    ("vector_shares_ports = 2\n", "vector_shares_ports must be an integer in 0 … 1"),
    ("column_split = 2\n", "column_split must be an integer in 0 … 1"),
    ("accumulator_rows = 33\ncolumn_split = 1\n", "column_split needs an even array_size"),
    ("array_size = [\n", "not valid TOML"),
])
def test_bad_configs_name_the_file(tmp_path, text, message):
    good = {"array_size": 8, "scratchpad_rows": 64, "accumulator_rows": 32, "dram_bytes": 4096,
            "dram_port_bytes": 8, "fetch_buffer_words": 16, "fetch_port_bytes": 64,
            "queue_depth": 2, "vector_lanes": 4, "vector_shares_ports": 0,
            "column_split": 0}
    keys = {line.split("=")[0].strip() for line in text.splitlines()}
    lines = [f"{k} = {v}" for k, v in good.items() if k not in keys]
    path = tmp_path / "bad.toml"
    path.write_text("\n".join(lines) + "\n" + text)
    with pytest.raises(GlcError) as caught:
        load_config(path)
    assert message in caught.value.message
    assert str(path) in str(caught.value)


def test_a_missing_key_and_an_unknown_name_are_errors(tmp_path):
    path = tmp_path / "short.toml"
    path.write_text("array_size = 8\n")
    with pytest.raises(GlcError, match="missing configuration key"):
        load_config(path)
    with pytest.raises(GlcError, match="no hardware configuration 'n99'"):
        load_config("n99")
