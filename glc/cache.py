"""glc's cache: content-addressed entries on disk, shared by every glc process of a user.

Two kinds of entry live in one folder (docs/cache.md):

- ``compile``: a whole compile (glc/compiler.py, ``compile_program``) keyed by the program's
  text, its inputs' types, the hardware config, the rules, every compile option and glc itself;
- ``schedule``: one costing of the schedule search (glc/cost/kernel.py's estimate of a kernel
  signature, glc/isa/cycles.py's count of a kernel's instructions), so a compile searches each
  distinct kernel once and a recompile after a small edit searches only what changed.

Every key holds glc's version and a digest of glc's own source files, so an edited compiler
never reads an entry an older one wrote. An entry is a header, the sha256 of its payload and
the payload (a pickle); it is written to a unique temporary file and renamed into place, so
parallel writers (``glc regress --jobs N``) never leave half an entry, and an entry whose
checksum or unpickling fails is ignored (and rewritten by the next compile): never a traceback,
never a wrong result.

The folder is ``$GLC_CACHE_DIR``, else ``$XDG_CACHE_HOME/glc``, else ``~/.cache/glc``.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import io
import os
import pickle
import secrets
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from glc.errors import GlcError
from glc.ir.term import Term, walk

KINDS = ("compile", "schedule")
MAGIC = b"glc-cache 1\n"
_DIGEST = 32  # sha256 bytes after MAGIC
SOURCE = Path(__file__).resolve().parent  # glc's own package: its files key every entry
# A cache write that fails (a full disk, a read-only folder) loses only the speed-up: the
# compile has its result; these are the errors it swallows.
_WRITE_ERRORS = (OSError, pickle.PicklingError, RecursionError)


def location() -> Path:
    """The cache folder: ``$GLC_CACHE_DIR``, ``$XDG_CACHE_HOME/glc`` or ``~/.cache/glc``."""
    if os.environ.get("GLC_CACHE_DIR"):
        return Path(os.environ["GLC_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "glc"
    return Path.home() / ".cache" / "glc"


@functools.cache
def source_digest() -> str:
    """The sha256 of glc's version and every source file of the package (path and bytes), so
    an edited compiler keys its entries apart from the one before the edit."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256()
    try:
        digest.update(version("glc").encode())
    except PackageNotFoundError:
        digest.update(b"unknown")
    for path in sorted(SOURCE.rglob("*")):
        if path.suffix in (".py", ".lark") and path.is_file():
            digest.update(str(path.relative_to(SOURCE)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def key(kind: str, *parts: object) -> str:
    """The key of an entry of ``kind``: the sha256 of glc's source digest and the ``repr`` of
    each part (frozen dataclasses, tuples, strings and numbers: their repr names every field)."""
    digest = hashlib.sha256(f"{kind}\0{source_digest()}".encode())
    for part in parts:
        digest.update(b"\0" + (part if isinstance(part, bytes) else repr(part).encode()))
    return digest.hexdigest()


@dataclass(frozen=True)
class Cache:
    """The cache folder ``root``: ``get``, ``put``, ``info`` and ``clear`` of its entries."""

    root: Path

    def _path(self, kind: str, name: str) -> Path:
        return self.root / kind / name[:2] / name

    def get(self, kind: str, name: str) -> object | None:
        """The entry's value; None if it is absent, unreadable, or fails its checksum."""
        try:
            data = self._path(kind, name).read_bytes()
        except OSError:
            return None
        payload = data[len(MAGIC) + _DIGEST:]
        if not data.startswith(MAGIC) or \
                hashlib.sha256(payload).digest() != data[len(MAGIC):len(MAGIC) + _DIGEST]:
            return None
        try:
            return _loads(payload)
        except Exception:  # a payload that passed its checksum but glc cannot read: a miss
            return None

    def put(self, kind: str, name: str, value: object) -> None:
        """Write the entry whole or not at all: a unique temporary file renamed over it."""
        path = self._path(kind, name)
        temporary = path.with_name(f".{name}.{os.getpid()}-{secrets.token_hex(4)}")
        try:
            payload = _dumps(value)
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(temporary, path)
        except _WRITE_ERRORS:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)

    def _files(self) -> Iterator[tuple[str, Path]]:
        for kind in KINDS:
            folder = self.root / kind
            if folder.is_dir():
                yield from ((kind, p) for p in folder.rglob("*") if p.is_file())

    def info(self) -> dict:
        """The folder, and each kind's entries and bytes (temporary files left by a killed
        writer counted with them)."""
        found = {kind: {"entries": 0, "bytes": 0} for kind in KINDS}
        for kind, path in self._files():
            with contextlib.suppress(OSError):
                found[kind]["bytes"] += path.stat().st_size
                found[kind]["entries"] += 1
        return {"location": str(self.root), **found,
                "entries": sum(f["entries"] for f in found.values()),
                "bytes": sum(f["bytes"] for f in found.values())}

    def clear(self) -> int:
        """Remove every entry; returns how many files were removed."""
        removed = 0
        for _, path in list(self._files()):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
        return removed


class _Pickler(pickle.Pickler):
    """A pickler that writes every Term as an index into a flat table of nodes, children
    first: pickle recurses once per level of nesting, and a network's term is thousands of
    levels deep (ResNet-50's passed Python's recursion limit)."""

    def __init__(self, file: io.BytesIO):
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self.table: list[tuple] = []
        self.index: dict[int, int] = {}
        self.kept: list[Term] = []  # the ids in ``index`` stay those of live terms

    def persistent_id(self, obj: object) -> int | None:
        if type(obj) is not Term:
            return None
        if id(obj) not in self.index:
            self.kept.append(obj)
            for node in walk(obj, self.index):
                self.index[id(node)] = len(self.table)
                self.table.append((node.op, tuple(self.index[id(a)] for a in node.args),
                                   node.value, node.span))
        return self.index[id(obj)]


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """The cyclic garbage collector off: (un)pickling a compile makes millions of objects (a
    ResNet-50 is 604 k instructions), each batch of which would start a collection over all
    of them (15 s to read ResNet-50's entry with it, 4.7 s without, on a loaded machine)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _dumps(value: object) -> bytes:
    file = io.BytesIO()
    pickler = _Pickler(file)
    with _no_collection():
        pickler.dump(value)
    return pickle.dumps((pickler.table, file.getvalue()), pickle.HIGHEST_PROTOCOL)


def _loads(payload: bytes) -> object:
    table, body = pickle.loads(payload)
    terms: list[Term] = []
    for op, args, value, span in table:
        terms.append(Term(op, tuple(terms[a] for a in args), value, span))
    unpickler = pickle.Unpickler(io.BytesIO(body))
    unpickler.persistent_load = terms.__getitem__
    with _no_collection():
        return unpickler.load()


def open_cache(enabled: bool = True) -> Cache | None:
    """The user's cache (``location()``), or None with ``enabled`` false (``--no-cache``)."""
    if not enabled:
        return None
    root = location()
    if root.exists() and not root.is_dir():
        raise GlcError("the cache location is a file, not a folder (set GLC_CACHE_DIR to "
                       "another path, or run with --no-cache)", str(root))
    return Cache(root)


# The cache the schedule search of the compile in progress reads and writes: set by
# compile_program for the length of one compile (``schedules``), None outside one or with
# --no-cache. A context variable rather than a parameter: the costings it memoises sit many
# calls deep in the lowering and the extraction's cost, which would all pass it on unused.
_SCHEDULES: ContextVar[Cache | None] = ContextVar("glc_schedules", default=None)


@contextlib.contextmanager
def schedules(cache: Cache | None) -> Iterator[None]:
    """Within the block, ``remembered`` reads and writes ``cache``'s schedule entries."""
    token = _SCHEDULES.set(cache)
    try:
        yield
    finally:
        _SCHEDULES.reset(token)


def remembered(what: str, parts: tuple, compute: Callable[[], object]) -> object:
    """``compute()``, or the value the schedule cache holds for ``what`` over ``parts`` (all of
    the computation's inputs: the value must be a function of them alone); a computed value is
    written back. Without a schedule cache (``schedules``), just ``compute()``."""
    cache = _SCHEDULES.get()
    if cache is None:
        return compute()
    name = key("schedule", what, *parts)
    value = cache.get("schedule", name)
    if value is None:
        value = compute()
        cache.put("schedule", name, value)
    return value
