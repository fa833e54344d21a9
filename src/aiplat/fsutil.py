"""Atomic file writes: a reader sees the old files or the new ones, never half of either.

Each file is written to a temporary name in its own directory, flushed and fsynced, then
renamed over the target (rename is atomic within a file system). Callers render every output
in memory first and only then write, so a failure while computing writes nothing at all.

``write_tree`` writes many files as one change, in two phases: every file is staged first
(the slow part: writing and fsyncing), then all are renamed into place with SIGINT and
SIGTERM held back. A failure or an interrupt in either phase undoes this call's work: staged
files are removed, renamed ones get their previous content back (kept as a hard link until
the end), and directories this call created are removed again. Other files already in the
target directories are never touched, so a tree can be written into a directory that holds
more than the tree (``plan -d out`` keeps the user's other files).

A write that fails raises ``aiplat.errors.OutputError``: an ``InputError`` naming the path,
the system's reason and a fix, and also an ``OSError`` (same ``errno``) for callers that
catch that.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

from aiplat.errors import OutputError


def atomic_write(path: str | Path, data: str | bytes, mode: int = 0o644) -> None:
    _commit([(Path(path), data)], mode)


def write_tree(root: str | Path, files: Mapping[str, str | bytes],
               mode: int = 0o644) -> list[Path]:
    """Write already-rendered ``files`` (relative path -> content) under ``root``: all or none."""
    return _commit([(Path(root) / rel, content) for rel, content in files.items()], mode)


def _commit(items: list[tuple[Path, str | bytes]], mode: int) -> list[Path]:
    created: list[Path] = []  # directories this call made, parents first
    staged: list[tuple[Path, Path]] = []  # (temporary, target)
    placed: list[tuple[Path, Path | None, bool]] = []  # (target, backup, existed before)
    current = items[0][0] if items else Path(".")
    try:
        for target, content in items:
            current = target
            _make_dirs(target.parent, created)
            if target.is_dir() and not target.is_symlink():
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
            raw = content.encode("utf-8") if isinstance(content, str) else content
            staged.append((_stage(target, raw, mode), target))
        with _signals_held():
            for tmp, target in staged:
                current = target
                existed = target.exists() or target.is_symlink()
                backup = _backup(target) if existed else None
                os.replace(tmp, target)
                placed.append((target, backup, existed))
        for folder in dict.fromkeys(t.parent for _, t in staged):
            current = folder
            _fsync_dir(folder)
    except BaseException as e:
        _undo(staged, placed, created)
        if isinstance(e, OSError) and not isinstance(e, OutputError):
            raise OutputError(current, e) from e
        raise
    for _, backup, _ in placed:
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()
    return [t for t, _ in items]


def _make_dirs(folder: Path, created: list[Path]) -> None:
    missing = []
    probe = folder
    while not probe.is_dir():
        if probe.exists() or probe.is_symlink():  # a file (or a dangling link) in the way
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(probe))
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for d in reversed(missing):
        d.mkdir()
        created.append(d)


def _stage(target: Path, raw: bytes, mode: int) -> Path:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:100]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _backup(target: Path) -> Path | None:
    """A hard link to the file about to be replaced, so a failure can put it back."""
    if target.is_symlink() or not target.is_file():
        return None
    backup = target.with_name(f".{target.name[:100]}.{secrets.token_hex(4)}.old")
    try:
        os.link(target, backup)
    except OSError:  # a file system without hard links: the old content cannot come back
        return None
    return backup


def _undo(staged: list[tuple[Path, Path]], placed: list[tuple[Path, Path | None, bool]],
          created: list[Path]) -> None:
    for target, backup, existed in reversed(placed):
        with contextlib.suppress(OSError):
            if backup is not None:
                os.replace(backup, target)
            elif not existed:
                target.unlink()
    for tmp, _ in staged:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    for d in reversed(created):
        with contextlib.suppress(OSError):
            d.rmdir()


def _fsync_dir(folder: Path) -> None:
    # Persist the renames themselves; without this a crash can lose the new directory entries.
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back for the renames; they arrive right after, with all in place."""
    if threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


OWNED = ".aiplat-tree"  # the marker of a folder aiplat rewrites whole


def owned_marker(what: str) -> str:
    """The ``OWNED`` marker's text: who wrote the folder (``aiplat plan`` writes one into
    its ``kube/`` too, so ``kube render -d`` may rewrite that tree)."""
    return (f"# Written by {what}; the folder is rewritten whole each time: edit the spec, "
            "not these files.\n")


def write_owned_tree(root: str | Path, files: Mapping[str, str | bytes], what: str) -> list[Path]:
    """Write ``files`` as the whole content of ``root``: the folder aiplat owns (``OWNED``
    marker inside) ends holding exactly them, so a file the spec no longer renders does not
    linger to be applied by GitOps. A folder that holds anything without the marker is not
    aiplat's: refused (``InputError``, exit 2), nothing written or removed. ``what`` (the
    command) goes in the marker. Stale files go after the new ones are in place."""
    from aiplat.errors import InputError

    base = Path(root)
    if base.is_dir() and any(base.iterdir()) and not (base / OWNED).is_file():
        raise InputError(f"{base}: the folder holds files aiplat did not write (no {OWNED} "
                         "marker), and the tree rewrites its folder whole (fix: give a new or "
                         f"empty folder with -d, or move those files away)")
    new = {**files, OWNED: owned_marker(what)}
    written = write_tree(base, new)
    keep = {base / rel for rel in new}
    for p in sorted(base.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if p.is_symlink() or p.is_file():
            if p not in keep:
                p.unlink()
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()
    return written
