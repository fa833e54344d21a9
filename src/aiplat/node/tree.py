"""A host's file system under a root, read as what it may be: someone else's recording.

``aiplat node inventory --root TREE`` reads a tree that another host (or person) recorded, so
every reader under ``aiplat.node`` goes through one ``Tree``: a path whose links lead out of
the root is not followed (sysfs's own relative links inside it are), only regular files are
opened (never a FIFO, device or socket: checked before opening), and no file is read past a
bound (``ATTR_MAX_BYTES`` for an attribute, ``inputs.TREE_MAX_BYTES`` for a procfs or package
database file). The reading itself is ``aiplat.inputs.read_in_tree``; listing, testing and
globbing go through the same walk (``inputs.open_dir_in_tree``, ``inputs.stat_in_tree``), so a
recorder swapping a directory for a link while the tree is read changes nothing but a miss.

A refusal becomes one line in ``warnings`` (the inventory shows them), not an exception: the
rest of the node is still read. A missing or unreadable file is None without a word, since
sysfs attributes come and go with kernels and drivers. On the live host (root ``/``)
nothing is outside the root and the same bounds hold.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from aiplat import inputs
from aiplat.errors import InputError
from aiplat.text import shown

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
        once, though several readers may meet the same file. It quotes the tree's names and
        text, so it is kept terminal-safe (``aiplat.text.shown``) for every output: YAML
        writes a bidi override as it is."""
        message = shown(message)
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
        """The attribute at ``path`` as the kernel writes a number (decimal, or hex after
        ``0x``); None when missing, and a warning when it holds something else."""
        text = self.text(path)
        if text is None:
            return None
        n = inputs.ascii_int(text, 16 if text.startswith("0x") else 10)
        if n is None and text:
            self.warn(f"{path}: ignored: '{_short(text)}' is not a number (fix: record the "
                      "file from the host again)")
        return n

    def numbered(self, entries: list[Path], prefix: str = "") -> list[tuple[int, Path]]:
        """The ``entries`` named ``prefix`` and a number (``node1``, a port ``1``) with that
        number, in its order; a name with anything else (``node1²``) is skipped with a warning:
        no kernel writes it."""
        out = []
        for p in entries:
            n = inputs.ascii_int(p.name[len(prefix):]) if p.name.startswith(prefix) else None
            if n is None or n < 0:
                self.warn(f"{p}: ignored: not {prefix or 'a number'}N with N in ASCII digits "
                          "(fix: record the directory from the host again)")
            else:
                out.append((n, p))
        return sorted(out)

    def resolve(self, path: Path) -> Path | None:
        """``path`` with its links resolved, None (and a warning) when they leave the root.
        A name to read under, not a check: every read walks the tree again."""
        try:
            return inputs.inside(self.root, path)
        except InputError as e:
            self._refuse(e)
        except OSError:  # a link swapped for a directory while it was resolved
            pass
        return None

    def _stat(self, path: Path) -> os.stat_result | None:
        try:
            return inputs.stat_in_tree(self.root, path)
        except InputError as e:
            self._refuse(e)
        except OSError:
            pass
        return None

    def exists(self, path: Path) -> bool:
        return self._stat(path) is not None

    def is_dir(self, path: Path) -> bool:
        st = self._stat(path)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def is_file(self, path: Path) -> bool:
        st = self._stat(path)
        return st is not None and stat.S_ISREG(st.st_mode)

    def entries(self, path: Path) -> list[Path]:
        """The entries of the directory ``path`` (as ``path / name``), sorted; none when it
        is missing or its links leave the root (a host's directory is never listed)."""
        return [path / name for name in self._names(path, f"{path}: more than {MAX_ENTRIES} "
                                                    "entries, the rest not read")]

    def _names(self, path: Path, too_many: str) -> list[str]:
        try:
            fd = inputs.open_dir_in_tree(self.root, path)
        except InputError as e:
            self._refuse(e)
            return []
        except OSError:
            return []
        names: list[str] = []
        try:
            with os.scandir(fd) as it:
                for entry in it:
                    if len(names) == MAX_ENTRIES:
                        self.warn(f"{too_many} (fix: record the directory from a host)")
                        break
                    names.append(entry.name)
        except OSError:
            return []
        finally:
            os.close(fd)
        return sorted(names)

    def glob(self, path: Path, pattern: str) -> list[Path]:
        """The matches of ``pattern`` (one ``fnmatch`` pattern per level, ``hwmon*/temp*``)
        under the directory ``path``, sorted; each level is listed through the tree's walk,
        so no match lies behind a link out of the root."""
        found = [path]
        for i, level in enumerate(pattern.split("/")):
            deeper = i < pattern.count("/")
            step: list[Path] = []
            for d in found:
                names = self._names(d, f"{path}: more than {MAX_ENTRIES} matches of "
                                       f"{pattern}, the rest not read")
                step += [d / n for n in fnmatch.filter(names, level)
                         if not deeper or self.is_dir(d / n)]
                if len(step) >= MAX_ENTRIES:
                    self.warn(f"{path}: more than {MAX_ENTRIES} matches of {pattern}, the rest "
                              "not read (fix: record the directory from a host)")
                    step = step[:MAX_ENTRIES]
                    break
            found = step
        return sorted(found)

    @staticmethod
    def link_name(path: Path) -> str | None:
        """The basename of a symlink's target (``driver`` -> ``nvidia``), None when absent;
        reads the link itself, follows nothing."""
        try:
            return os.path.basename(os.readlink(path))
        except OSError:
            return None


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
