"""The simulator is imported only where it is used: every other command starts without cocotb
(and works where it is not installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
# Import blocked: `import cocotb` raises ImportError, as where the package is not installed.
BLOCKED = "import sys; sys.modules.update(cocotb=None, cocotb_tools=None); "


def python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, check=False)


def test_importing_the_cli_does_not_import_cocotb():
    done = python("import sys, glc.cli; print(sorted(m for m in sys.modules "
                  "if m.split('.')[0] in ('cocotb', 'cocotb_tools')))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_check_and_an_isa_run_work_without_cocotb():
    program = ROOT / "programs" / "matmul-int8"
    for args in (["check", program], ["run", program, "--engine", "isa", "--config", "n4"]):
        done = python(BLOCKED + f"from glc.cli import main; main({[str(a) for a in args]!r})")
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr


def test_the_rtl_without_cocotb_is_one_line_naming_it():
    program = ROOT / "programs" / "matmul-int8"
    done = python(BLOCKED + f"from glc.cli import main; main(['run', {str(program)!r}])")
    assert done.returncode == 1
    assert done.stderr.startswith("error: the RTL engine needs cocotb")
    assert len(done.stderr.strip().splitlines()) == 1
