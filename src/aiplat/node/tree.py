"""A host's file system under a root, read as what it may be: someone else's recording.

``aiplat node inventory --root TREE`` reads a tree that another host (or person) recorded, so
every reader under ``aiplat.node`` goes through one ``Tree``: a path whose links lead out of
the root is not followed (sysfs's own relative links inside it are), only regular files are
opened (never a FIFO, device or socket: checked before opening), and no file is read past a
bound (``ATTR_MAX_BYTES`` for an attribute, ``inputs.TREE_MAX_BYTES`` for a procfs or package
database file). The reading itself is ``aiplat.inputs.read_in_tree``.

A refusal becomes one line in ``warnings`` (the inventory shows them), not an exception: the
rest of the node is still read. A missing or unreadable file is None without a word, since
sysfs attributes come and go with kernels and drivers. On the live host (root ``/``)
nothing is outside the root and the same bounds hold.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from aiplat import inputs
from aiplat.errors import InputError

ATTR_MAX_BYTES = 64 * 1024
"""A sysfs attribute holds at most one page (4 KiB on x86-64, 64 KiB on arm64's largest
pages); PCI config space is 4 KiB."""

TEXT_MAX_BYTES = inputs.TREE_MAX_BYTES
"""procfs and package files (/proc/cpuinfo, /var/lib/dpkg/status, kern.log's tail)."""

MAX_ENTRIES = 65_536
"""Entries read from one directory: a node's busiest (/sys/class/net with thousands of pod
veths, /sys/bus/pci/devices with SR-IOV functions) stays far below; a tree past it is not a
host's, and is read that far, with a warning."""

MAX_WARNINGS = 50
"""Refusals listed one by one; past this a hostile tree gets one summary line, not one per
file."""


@dataclass
class Tree:
    """The files under ``root``, and what was refused while reading them."""

    root: Path
    warnings: list[str] = field(default_factory=list)
    refused: int = 0

    @classmethod
    def of(cls, root: str | Path | Tree) -> Tree:
        """``root`` itself when it is a Tree (its warnings collect), else a new one."""
        return root if isinstance(root, Tree) else cls(Path(root))

    @property
    def live(self) -> bool:
        return str(self.root) == "/"

    def path(self, rel: str) -> Path:
        """``rel`` (``/proc/cpuinfo``) under the root."""
        return self.root / rel.lstrip("/")

    def warn(self, message: str) -> None:
        """Keep ``message`` (a refusal, a value that is not what the file holds on a host);
        once, though several readers may meet the same file."""
        if message in self.warnings:
            return
        self.refused += 1
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(message)
        elif len(self.warnings) == MAX_WARNINGS:
            self.warnings.append(f"{self.root}: more files refused or ignored than listed "
                                 "here (links out of the tree, special or oversized files, "
                                 "values no host has); fix the recording")

    def _refuse(self, e: InputError) -> None:
        self.warn(str(e))

    def data(self, path: Path, max_bytes: int = ATTR_MAX_BYTES, *,
             tail: bool = False) -> bytes | None:
        try:
            return inputs.read_in_tree(self.root, path, max_bytes=max_bytes, tail=tail)
        except InputError as e:
            self._refuse(e)
        except OSError:
            pass
        return None

    def text(self, path: Path, max_bytes: int = ATTR_MAX_BYTES, *,
             tail: bool = False) -> str | None:
        data = self.data(path, max_bytes, tail=tail)
        return None if data is None else data.decode(errors="replace").strip()

    def number(self, path: Path) -> int | None:
        text = self.text(path)
        if text is None:
            return None
        try:
            return int(text, 0) if text.startswith("0x") else int(text)
        except ValueError:
            return None

    def resolve(self, path: Path) -> Path | None:
        """``path`` with its links resolved, None (and a warning) when they leave the root."""
        try:
            return inputs.inside(self.root, path)
        except InputError as e:
            self._refuse(e)
            return None

    def exists(self, path: Path) -> bool:
        real = self.resolve(path)
        return real is not None and real.exists()

    def is_dir(self, path: Path) -> bool:
        real = self.resolve(path)
        return real is not None and real.is_dir()

    def is_file(self, path: Path) -> bool:
        real = self.resolve(path)
        return real is not None and real.is_file()

    def entries(self, path: Path) -> list[Path]:
        """The entries of the directory ``path`` (as ``path / name``), sorted; none when it
        is missing or its links leave the root (a host's directory is never listed)."""
        if not self.is_dir(path):
            return []
        names: list[str] = []
        try:
            with os.scandir(path) as it:
                for e in it:
                    if len(names) == MAX_ENTRIES:
                        self.warn(f"{path}: more than {MAX_ENTRIES} entries, the rest not "
                                  "read (fix: record the directory from a host)")
                        break
                    names.append(e.name)
        except OSError:
            return []
        return sorted(path / name for name in names)

    def glob(self, path: Path, pattern: str) -> list[Path]:
        """``path.glob(pattern)``, sorted, keeping only matches whose directory stays inside
        the root (a pattern like ``nvidia-caps/*`` walks a link the tree may hold)."""
        if not self.is_dir(path):
            return []
        found: list[Path] = []
        for p in path.glob(pattern):
            if len(found) == MAX_ENTRIES:
                self.warn(f"{path}: more than {MAX_ENTRIES} matches of {pattern}, the rest "
                          "not read (fix: record the directory from a host)")
                break
            if p.parent == path or self.is_dir(p.parent):
                found.append(p)
        return sorted(found)

    @staticmethod
    def link_name(path: Path) -> str | None:
        """The basename of a symlink's target (``driver`` -> ``nvidia``), None when absent;
        reads the link itself, follows nothing."""
        try:
            return os.path.basename(os.readlink(path))
        except OSError:
            return None
