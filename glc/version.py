"""What ``glc --version`` prints: the package's version and the commit it was built from.

The version number alone does not name a build (it has stayed 0.1.0 through every change), so the
commit of the checkout the package runs from is asked of git each time; an installed copy outside a
git checkout, or a machine without git, says so rather than guessing.
"""

import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str | None:
    """git's output for ``args`` in the source checkout, or None where git cannot answer."""
    try:
        done = subprocess.run(["git", "-C", str(SOURCE), *args], capture_output=True, text=True,
                              timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def describe() -> str:
    """``glc VERSION (commit HASH[, modified])``; ``(commit unknown: ...)`` outside a checkout."""
    try:
        number = version("glc")
    except PackageNotFoundError:
        number = "unknown"
    commit = _git("rev-parse", "HEAD")
    if commit is None:
        return f"glc {number} (commit unknown: {SOURCE} is not a git checkout or git is missing)"
    changed = _git("status", "--porcelain", "--untracked-files=no")
    suffix = ", modified" if changed else ""
    return f"glc {number} (commit {commit[:12]}{suffix})"
