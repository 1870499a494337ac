"""Output folders written whole or not at all: ``glc compile -o DIR``.

The files are written into a fresh folder beside DIR (same parent, so the same file system) and
renamed into place only once all of them are complete. An interrupt or an error leaves DIR as it
was and removes the partial folder. Replacing an existing DIR takes two renames (DIR aside, the new
folder in, then the old one removed); whichever of them is interrupted, DIR or its moved-aside copy
is a complete folder, never a mix of two compilations.

A folder is only replaced if it is empty or holds the marker file the writer names (for
``glc compile``, ``manifest.json``): ``-o`` naming a program folder or a home directory is refused,
not emptied.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from glc.errors import GlcError


@contextmanager
def replacing(folder: str | Path, marker: str) -> Iterator[Path]:
    """A new empty folder to write into; on leaving the block without an exception it replaces
    ``folder`` (which must be absent, empty, or hold the file ``marker``), otherwise it is
    removed and ``folder`` is left untouched."""
    shown = str(folder)
    folder = Path(os.path.abspath(folder))  # "." and "a/.." need a real name and parent
    _check_replaceable(folder, shown, marker)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        fresh = _beside(folder, "new")
        fresh.mkdir()
    except OSError as error:
        reason = error.strerror
        if isinstance(error, FileExistsError | NotADirectoryError):
            reason = "a parent of it is a file"
        raise GlcError(f"cannot create the output folder: {reason}", shown) from None
    try:
        yield fresh
        _swap(fresh, folder, shown)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise


def _check_replaceable(folder: Path, shown: str, marker: str) -> None:
    if folder.exists() and not folder.is_dir():
        raise GlcError("the output must be a folder, and this is a file", shown)
    if folder.is_dir():
        try:
            empty = not any(folder.iterdir())
        except OSError as error:
            raise GlcError(f"cannot read the output folder: {error.strerror}", shown) from None
        if not empty and not (folder / marker).is_file():
            raise GlcError(f"the output folder is not empty and holds no {marker}, so glc did "
                           "not write it; refusing to replace it (give a new or empty folder)",
                           shown)


def _swap(fresh: Path, folder: Path, shown: str) -> None:
    """Put ``fresh`` where ``folder`` is, keeping the old folder until the new one is in."""
    old = _beside(folder, "old") if folder.exists() else None
    try:
        if old is not None:
            os.rename(folder, old)
        os.rename(fresh, folder)
    except OSError as error:
        if old is not None and old.exists() and not folder.exists():
            os.rename(old, folder)
        raise GlcError(f"cannot replace the output folder: {error.strerror}", shown) from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _beside(folder: Path, role: str) -> Path:
    """A hidden, unused name in ``folder``'s parent (a rename there never crosses devices)."""
    return folder.parent / f".{folder.name}.{role}-{os.getpid()}-{secrets.token_hex(4)}"
