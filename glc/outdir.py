"""Where glc writes: output folders written whole or not at all (``glc compile -o DIR``,
``glc import -o DIR``), and output files checked before the work (``glc rtl -o``, ``glc asm -o``).

A folder is written into a fresh folder beside DIR (same parent, so the same file system) and
renamed into place only once complete. An interrupt or an error leaves DIR as it was and removes
the partial folder. Replacing an existing DIR takes two renames (DIR aside, the new folder in,
then the old one removed); whichever of them is interrupted, DIR or its moved-aside copy is a
complete folder, never a mix of two runs. A run killed outright (SIGKILL, or SIGTERM, which
Python does not turn into an exception) leaves its hidden staging folder behind; the next run
writing the same DIR removes those whose process is gone.

One rule for every ``-o DIR``: a folder is only replaced if it is empty or glc wrote it — it
holds ``RECORD``, the list of the entries glc put there, and nothing else. ``-o`` naming a program
folder, a folder with a model or notes in it, a home directory, ``.`` or ``..`` is refused, never
emptied; so is glc's own folder once a user has added a file to it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from glc.errors import GlcError, printable

# The hidden file every folder glc writes holds: a JSON list of the folder's entries.
RECORD = ".glc-output"
_ROLES = ("new", "old")  # a staging folder being written; a replaced folder moved aside


@contextmanager
def replacing(folder: str | Path) -> Iterator[Path]:
    """A new empty folder to write into; on leaving the block without an exception it replaces
    ``folder`` (which must be absent, empty, or glc's: see the module's rule), otherwise it is
    removed and ``folder`` is left untouched."""
    shown = str(folder)
    folder = Path(os.path.abspath(folder))  # "." and "a/.." need a real name and parent
    _check_replaceable(folder, shown)  # again: the folder may have changed during the work
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(folder)
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


def check_folder_target(folder: str | Path) -> None:
    """Refuse an output folder ``replacing`` would refuse, before the work rather than after."""
    _check_replaceable(Path(os.path.abspath(folder)), str(folder))


def _check_replaceable(folder: Path, shown: str) -> None:
    if folder.exists() and not folder.is_dir():
        raise GlcError("the output must be a folder, and this is a file", shown)
    if not folder.is_dir():
        return
    cwd = Path(os.path.abspath(os.getcwd()))
    if cwd == folder or folder in cwd.parents:
        raise GlcError("the output folder holds the working directory, which replacing it "
                       "would remove; give another folder", shown)
    try:
        entries = sorted(p.name for p in folder.iterdir())
    except OSError as error:
        raise GlcError(f"cannot read the output folder: {error.strerror}", shown) from None
    if not entries:
        return
    written = _recorded(folder / RECORD)
    if written is None:
        raise GlcError(f"the output folder is not empty and holds no {RECORD}, so glc did not "
                       "write it; refusing to replace it (give a new or empty folder)", shown)
    foreign = [name for name in entries if name not in written and name != RECORD]
    if foreign:
        raise GlcError(f"the output folder holds '{printable(foreign[0])}', which glc did not "
                       "write; refusing to replace it (move it out, or give a new or empty "
                       "folder)", shown)


def _recorded(record: Path) -> set[str] | None:
    """The names ``record`` lists; None if it is missing or is not glc's list."""
    try:
        names = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return set(names)


def _swap(fresh: Path, folder: Path, shown: str) -> None:
    """Put ``fresh`` where ``folder`` is, keeping the old folder until the new one is in."""
    try:
        (fresh / RECORD).write_text(json.dumps(sorted(p.name for p in fresh.iterdir())) + "\n")
    except OSError as error:
        raise GlcError(f"cannot write the output folder: {error.strerror}", shown) from None
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
        _remove(old)


def _host() -> str:
    """A short tag of this machine: a pid names a process only on the machine that made it."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]


def _beside(folder: Path, role: str) -> Path:
    """A hidden, unused name in ``folder``'s parent (a rename there never crosses devices) that
    names this run's process, so a later run can tell a stale one."""
    return folder.parent / f".{folder.name}.{role}-{_host()}-{os.getpid()}-{secrets.token_hex(4)}"


def _remove_stale(folder: Path) -> None:
    """Remove the staging folders of earlier runs on ``folder`` that were killed: only names
    ``_beside`` makes, of this machine, whose process no longer runs. A moved-aside old folder
    whose replacement never arrived is put back instead."""
    pattern = re.compile(rf"\.{re.escape(folder.name)}\.({'|'.join(_ROLES)})-"
                         rf"{_host()}-(\d+)-[0-9a-f]{{8}}")
    for path in folder.parent.iterdir():
        found = pattern.fullmatch(path.name)
        if found is None or _running(int(found.group(2))):
            continue
        if found.group(1) == "old" and not folder.exists() and not path.is_symlink():
            os.rename(path, folder)
        else:
            _remove(path)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process (or no pid of ours): not ours to judge
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def check_file_target(path: Path, inputs: Iterable[Path] = (), option: str = "-o") -> None:
    """Refuse an output file path (given by ``option``) before the work: a folder, a parent
    folder that does not exist, or one of the command's own ``inputs`` (writing it would
    destroy it)."""
    shown = str(path)
    if path.is_dir():
        raise GlcError(f"{option} names a folder; give the file to write", shown)
    parent = path.parent
    if not parent.is_dir():
        raise GlcError(f"no such folder {printable(str(parent))} to write into", shown)
    for given in inputs:
        if path.exists() and given.exists() and os.path.samefile(path, given):
            raise GlcError(f"{option} names an input of this command; writing it would "
                           "destroy it", shown)


@contextmanager
def writing(path: str | Path) -> Iterator[Path]:
    """A hidden file beside ``path`` to write into; on leaving the block without an exception it
    is renamed over ``path`` (so ``path`` is written whole or not at all), otherwise removed."""
    shown, path = str(path), Path(os.path.abspath(path))
    temporary = _beside(path, "new")
    try:
        _remove_stale(path)
        yield temporary
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise GlcError(f"cannot write: {error.strerror}", shown) from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
