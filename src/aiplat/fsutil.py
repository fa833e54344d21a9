"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Each file is written to a temporary name in the same directory, flushed and fsynced, then
renamed over the target (rename is atomic within a file system). Callers render every output
in memory first and only then write, so a failure while computing writes nothing at all.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path


def atomic_write(path: str | Path, data: str | bytes, mode: int = 0o644) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    # Persist the rename itself; without this a crash can lose the new directory entry.
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_tree(root: str | Path, files: Mapping[str, str | bytes]) -> list[Path]:
    """Write already-rendered ``files`` (relative path -> content) under ``root``."""
    written = []
    for rel, content in files.items():
        path = Path(root) / rel
        atomic_write(path, content)
        written.append(path)
    return written
