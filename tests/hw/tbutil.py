"""Shared pieces of the unit testbenches: packing lanes into top-level ports, and running a
cocotb module on a cached build from a pytest function."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from glc.sim.build import Design, build_root, run_cocotb

HERE = Path(__file__).resolve().parent


def pack(lanes: Sequence[int], width: int) -> int:
    """Lanes (lane 0 in the low bits) as one integer, each lane two's-complement in ``width``."""
    mask = (1 << width) - 1
    return sum((int(v) & mask) << (width * i) for i, v in enumerate(lanes))


def unpack(value: int, width: int, count: int, *, signed: bool = True) -> np.ndarray:
    """The inverse of pack: ``count`` lanes of ``width`` bits, as int64."""
    mask = (1 << width) - 1
    lanes = [(int(value) >> (width * i)) & mask for i in range(count)]
    if signed:
        lanes = [v - (1 << width) if v >> (width - 1) else v for v in lanes]
    return np.array(lanes, dtype=np.int64)


def env_int(name: str) -> int:
    """An integer handed to the cocotb side through the environment."""
    return int(os.environ[name])


def run_unit(top: str, module: str, parameters: Mapping[str, int], name: str) -> None:
    """Build ``top`` with ``parameters`` (cached) and run every cocotb test in tests/hw/``module``.

    The parameters are also passed to the cocotb side as ``GLC_<NAME>`` environment variables.
    """
    env = {f"GLC_{k}": str(v) for k, v in parameters.items()}
    run_cocotb(Design(top, dict(parameters)), module, run_dir=build_root() / "runs" / name,
               env=env, module_dir=HERE)
