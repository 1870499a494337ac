"""``glc --version`` names the commit the package runs from, not only the version number."""

import subprocess

from click.testing import CliRunner

from glc import version
from glc.cli import main


def test_version_names_the_checkouts_commit():
    head = subprocess.run(["git", "-C", str(version.SOURCE), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("glc ")
    assert f"(commit {head[:12]}" in result.output


def test_version_outside_a_checkout_says_the_commit_is_unknown(monkeypatch, tmp_path):
    monkeypatch.setattr(version, "SOURCE", tmp_path)  # no .git here or above in tmp
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert "commit unknown" in result.output
