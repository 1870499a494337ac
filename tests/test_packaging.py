"""What a fresh clone's set-up relies on: dependencies bounded to the major versions glc is
written against, and the README's virtual environment kept out of git."""

import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_click_is_bounded_to_its_current_major():
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (click,) = [d for d in dependencies if d.startswith("click")]
    assert "<9" in click.replace(" ", ""), click


def test_the_readme_virtual_environment_is_ignored():
    ignored = subprocess.run(["git", "check-ignore", "-q", ".venv/bin/python"], cwd=ROOT,
                             check=False)
    assert ignored.returncode == 0
