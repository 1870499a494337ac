"""Shared test set-up: tests marked ``rtl`` are skipped, with the reason, where Verilator's
toolchain is absent (glc/sim/toolchain.py says what the RTL needs)."""

from __future__ import annotations

import pytest

from glc.sim.toolchain import missing


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rtl = [item for item in items if item.get_closest_marker("rtl")]
    absent = missing() if rtl else []
    if absent:
        skip = pytest.mark.skip(reason=f"the RTL toolchain is absent: {', '.join(absent)} "
                                       "not found (README, 'Set-up')")
        for item in rtl:
            item.add_marker(skip)
