"""The RTL is clean under `verilator --lint-only -Wall` for every hardware configuration, and an
impossible parameter combination stops elaboration with $fatal."""

import pytest

from glc.hwconfig import CONFIG_DIR, load_config
from glc.sim.build import Design, lint
from glc.sim.run import design

pytestmark = pytest.mark.rtl  # needs Verilator's toolchain: skipped where it is absent

CONFIGS = sorted(path.stem for path in CONFIG_DIR.glob("*.toml"))


@pytest.mark.parametrize("config", CONFIGS)
def test_rtl_is_lint_clean(config):
    result = lint(design(load_config(config)))
    assert result.returncode == 0, result.stderr
    assert "%Warning" not in result.stderr and "%Error" not in result.stderr, result.stderr


def test_impossible_parameters_stop_elaboration():
    parameters = load_config("n4").verilog_parameters() | {"SCRATCHPAD_ROWS": 2}
    result = lint(Design("sim_top", parameters))
    assert result.returncode != 0
    assert "SCRATCHPAD_ROWS=2: must hold one N-row weight tile" in result.stderr
