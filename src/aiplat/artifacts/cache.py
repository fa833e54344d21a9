"""The node-local model cache: content-addressed blobs, hard-link snapshots, locks, LRU.

Layout under the cache root (one file system, so hard links and renames work)::

    blobs/sha256/<hex>       verified blob, read-only (0444); written as tmp + fsync + rename
    tmp/<hex>.partial        a download in progress; kept after a crash so the next pull
                             resumes it with an HTTP range request
    manifests/sha256/<hex>   the manifest bytes of every snapshot
    snapshots/<hex>/         the model directory for manifest <hex>: hard links to blobs plus
                             the small files of the config tar; created in a temp dir and
                             renamed into place, so it exists only when complete
    refs/<registry>/<repo>/<tag>   the digest a tag resolved to at the last pull
    pins/<hex>               pinned snapshots (never evicted)
    quarantine/<hex>.<time>  blobs that failed verification
    locks/                   ``<hex>.lock`` per blob: concurrent pulls download a blob once;
                             ``cache.lock``: pulls hold it shared, gc/evict exclusive

Folders are created 0750 whatever the umask (``tmp``, ``locks`` and ``quarantine`` 0700),
looser existing ones are tightened and reported (``Cache.untrusted_folders``: verify is
not clean, a pull warns), and a folder that is a symlink is refused: nobody else may plant
files where a pull writes. A blob another uid owns, or with a hard link outside the cache,
is corrupt (:meth:`Cache.blob_problem`): its holder could rewrite it after any hash. Files
the cache writes itself (partial downloads, locks) are opened with ``O_NOFOLLOW``, so a
planted symlink is an error, never a write through to its target. Consumers that run as
another user read snapshots through the cache's group (``chgrp -R GROUP`` the cache root;
its folders are group-readable).

Why hard links: a warm pull of a model already on the node copies nothing, and two tags
that share shards share the bytes. Blobs are read-only so a process writing through a
snapshot cannot silently corrupt the shared copy; ``verify`` (and every warm pull) also
checks that each weight file is still the blob's inode, each config-tar file holds the
tar's bytes, no other file was added, the snapshot is a folder (not a link to one) and
nothing in it is writable by group or others (:meth:`Cache.snapshot_problem`).

LRU works on snapshots (the unit a job uses): the snapshot directory's mtime is touched on
every pull, eviction removes the least recently used unpinned snapshots and then the blobs
no remaining snapshot references, until the blobs fit the limit.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import shutil
import stat
import tarfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aiplat import inputs
from aiplat.artifacts.errors import (
    ArtifactError,
    ArtifactInputError,
    ManifestError,
    StorageError,
    storage_error,
)
from aiplat.artifacts.modelpack import Manifest, layout, safe_relpath
from aiplat.artifacts.reference import Reference, check_digest
from aiplat.errors import InputError
from aiplat.fsutil import atomic_write

READ_SIZE = 8 * 1024 * 1024
MAX_META_BYTES = 4 * 1024 * 1024
"""The largest manifest or tag file the cache reads back (a manifest is a few KiB)."""


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def hash_file(path: Path, buf_size: int = READ_SIZE) -> str:
    h = hashlib.sha256()
    buf = bytearray(buf_size)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
    return "sha256:" + h.hexdigest()


def regular_hash(path: Path) -> str | None:
    """:func:`hash_file` of a regular file; None for anything else planted in its place (a
    FIFO, a device, a folder, a symlink): opened without following links and without
    blocking, so verification never waits on a pipe or reads /dev/zero forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        h = hashlib.sha256()
        while chunk := os.read(fd, READ_SIZE):
            h.update(chunk)
        return "sha256:" + h.hexdigest()
    finally:
        os.close(fd)


def _tar_problem(blob: Path, snap: Path, where: str, expected: set[str]) -> str | None:
    """Why a member of the config tar ``blob`` is not in ``snap`` with the tar's bytes
    (None when all are); adds every member's path to ``expected``."""
    with tarfile.open(blob, mode="r:") as tar:
        for member in tar:
            rel = safe_relpath(member.name, where)
            expected.add(rel)
            if member.isreg():
                data = tar.extractfile(member)
                want = hashlib.sha256()
                while data is not None and (chunk := data.read(READ_SIZE)):
                    want.update(chunk)
                if _regular_sha256(snap / rel, member.size) != want.hexdigest():
                    return f"{rel} is not the file its config-tar layer holds"
    return None


def _regular_sha256(path: Path, size: int) -> str | None:
    """The sha256 hex of ``path`` if it is a regular file of ``size`` bytes (opened without
    following a link or blocking on a FIFO), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != size:
            return None
        h = hashlib.sha256()
        while chunk := os.read(fd, READ_SIZE):
            h.update(chunk)
        return h.hexdigest()
    finally:
        os.close(fd)


# Write bits a snapshot never has (folders are made 0750, tar members lose them in
# tarfile.data_filter, blobs are 0444): one that has them is a file others could change
# after the check, between verify and the server that loads it.
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def _untrusted(st: os.stat_result, owners: frozenset[int]) -> str | None:
    """Why a cache file or folder with status ``st`` may be changed by someone other than
    the cache's owner (None when it may not): its owner can always chmod it and write."""
    if st.st_uid not in owners:
        return f"is owned by uid {st.st_uid}, not the cache's owner"
    if st.st_mode & _OTHERS_WRITE:
        return "can be written by group or others"
    return None


def _extra_file(snap: Path, expected: set[str], weights: set[str],
                owners: frozenset[int]) -> str | None:
    """The first path in ``snap`` that no layer put there, a link where a folder of the
    model should be, anything another user owns or group or others may write, or a config
    file with another hard link (None when there is none): a planted tokenizer or Python
    file changes what a server loads as surely as an edited one. ``weights`` are the links
    to cached blobs."""
    why = _untrusted(os.lstat(snap), owners)  # a folder: snapshot_problem checked
    if why:
        return f"the snapshot folder {why}"
    folders = {"/".join(rel.split("/")[:n]) for rel in expected
               for n in range(1, rel.count("/") + 1)}
    for dirpath, dirnames, filenames in os.walk(snap):
        base = Path(dirpath).relative_to(snap)
        for name in (*dirnames, *filenames):
            rel = (base / name).as_posix()
            if rel not in expected and rel not in folders:
                return f"{rel} is not part of the model"
            st = os.lstat(Path(dirpath) / name)
            if name in dirnames and not stat.S_ISDIR(st.st_mode):
                return f"{rel} is a symlink, not the model's folder"
            why = _untrusted(st, owners)
            if why:
                return f"{rel} {why}"
            # A weight file is one more link to its blob; a config file has one link only,
            # else a folder outside the cache holds the same inode.
            if stat.S_ISREG(st.st_mode) and rel not in weights and st.st_nlink != 1:
                return f"{rel} has another hard link outside the snapshot"
    return None


def link_snapshot(snapshot: Path, link: Path) -> None:
    """Point the symlink ``link`` at ``snapshot``, atomically (a reader sees the old model or
    the new one, never none): a stable path for a server's arguments (``pull --link``).
    Relative when both sit in one tree, so it resolves wherever that tree is mounted."""
    if link.is_symlink() or not link.exists():
        parent = link.parent.resolve()
        target = os.path.relpath(snapshot.resolve(), parent) if parent.exists() else str(snapshot)
        tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        os.symlink(target, tmp)
        os.replace(tmp, link)
        return
    raise FileExistsError(errno.EEXIST, "exists and is not a symlink", str(link))


@dataclass(frozen=True)
class SnapshotInfo:
    digest: str
    path: Path
    size: int
    last_used: float
    pinned: bool
    refs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class VerifyResult:
    checked: int
    bytes: int
    corrupt: list[str]
    quarantined: list[Path]
    removed_snapshots: list[str]
    modified_snapshots: list[str]
    # Cache folders found writable by group or others (then tightened): anyone could have
    # swapped what they hold, so the cache is not clean even when every hash matches.
    untrusted_folders: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.corrupt or self.modified_snapshots or self.untrusted_folders)


@dataclass(frozen=True)
class GcResult:
    removed_snapshots: list[str]
    removed_blobs: list[str]
    removed_partials: list[str]
    freed_bytes: int


FOLDER_MODE = 0o750
PRIVATE_MODE = 0o700
_FOLDERS = {"blobs": FOLDER_MODE, "blobs/sha256": FOLDER_MODE, "tmp": PRIVATE_MODE,
            "manifests": FOLDER_MODE, "manifests/sha256": FOLDER_MODE,
            "snapshots": FOLDER_MODE, "refs": FOLDER_MODE, "pins": FOLDER_MODE,
            "quarantine": PRIVATE_MODE, "locks": PRIVATE_MODE}


def own_dir(path: Path, mode: int = FOLDER_MODE) -> bool:
    """Make ``path`` a directory of at most ``mode`` (umask or not); refuse a symlink.
    True when it was there and group or others could write it (its contents are not to be
    trusted: the caller reports it)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, mode)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise ArtifactInputError(
            f"{path} is a symlink or not a directory; the model cache follows no links in its"
            " own folders (fix: remove it (aiplat makes it again) or pass another --cache)")
    if stat.S_IMODE(st.st_mode) & ~mode:
        os.chmod(path, stat.S_IMODE(st.st_mode) & mode)
    return bool(st.st_mode & _OTHERS_WRITE)


class Cache:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise ArtifactInputError(f"cache {self.root} is not a directory"
                                     " (fix: pass --cache DIR)")
        self.untrusted_folders: list[str] = []
        try:
            self.root.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
            st = self.root.stat()
            # The cache's owner (and root) made every file in it; a file another uid owns
            # was put there by someone who can rewrite it after any check.
            self.owners = frozenset({st.st_uid, 0})
            if st.st_mode & 0o022:  # others could swap its folders: keep their read access only
                os.chmod(self.root, stat.S_IMODE(st.st_mode) & ~0o022)
                self.untrusted_folders.append(str(self.root))
            for sub, sub_mode in _FOLDERS.items():
                if own_dir(self.root / sub, sub_mode):
                    self.untrusted_folders.append(str(self.root / sub))
        except OSError as e:
            raise storage_error(e, "cannot set up the model cache in", self.root) from None

    # ------------------------------------------------------------------ paths

    @staticmethod
    def _hex(digest: str) -> str:
        algo, hexd = check_digest(digest).split(":", 1)
        if algo != "sha256":
            raise ArtifactInputError(f"{digest}: the cache stores sha256 blobs only")
        return hexd

    def blob_path(self, digest: str) -> Path:
        return self.root / "blobs/sha256" / self._hex(digest)

    def partial_path(self, digest: str) -> Path:
        return self.root / "tmp" / f"{self._hex(digest)}.partial"

    def lock_path(self, digest: str) -> Path:
        return self.root / "locks" / f"{self._hex(digest)}.lock"

    def snapshot_path(self, digest: str) -> Path:
        return self.root / "snapshots" / self._hex(digest)

    def manifest_path(self, digest: str) -> Path:
        return self.root / "manifests/sha256" / self._hex(digest)

    def has_blob(self, digest: str) -> bool:
        return self.blob_path(digest).exists()

    # ------------------------------------------------------------------ cache-wide lock

    def _open_lock(self, path: Path) -> int:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise self.planted(path) from None
            raise storage_error(e, "cannot open the lock file", path) from None

    def planted(self, path: Path) -> StorageError:
        return StorageError(
            f"{path} is a symlink or not a file aiplat made; the model cache follows no links"
            f" (fix: remove it (rm {path}) and check who else can write to {self.root})")

    @contextlib.contextmanager
    def blob_lock(self, digest: str) -> Iterator[None]:
        """Exclusive per blob across threads and processes (``flock`` on a file opened per
        call, so two threads of one process exclude each other too)."""
        fd = self._open_lock(self.lock_path(digest))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    @contextlib.contextmanager
    def _cache_lock(self, exclusive: bool, blocking: bool = True) -> Iterator[bool]:
        fd = self._open_lock(self.root / "locks/cache.lock")
        try:
            op = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
            try:
                fcntl.flock(fd, op if blocking else op | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)  # closing releases the lock

    def using(self) -> contextlib.AbstractContextManager[bool]:
        """Held (shared) by a pull: gc and eviction wait for, or skip, running pulls."""
        return self._cache_lock(exclusive=False)

    # ------------------------------------------------------------------ blobs and manifests

    def commit_blob(self, partial: Path, digest: str) -> Path:
        """Make a verified, fsynced, read-only (0444, set through its descriptor) partial
        file the blob (atomic rename)."""
        target = self.blob_path(digest)
        os.replace(partial, target)
        fsync_dir(target.parent)
        return target

    def check_blob(self, digest: str) -> bool:
        """Re-hash a cached blob before a new snapshot uses it; a corrupt one (or anything
        that is not a plain file, or that someone else could rewrite: :meth:`blob_problem`)
        goes to quarantine/ and the answer is False."""
        path = self.blob_path(digest)
        if self.blob_problem(digest) is None and hash_file(path) == digest:
            return True
        self.quarantine(digest)
        return False

    def _cache_links(self) -> dict[tuple[int, int], int]:
        """(dev, inode) -> how many regular files under snapshots/ (finished or being made)
        are that inode: the hard links the cache itself made to its blobs."""
        out: dict[tuple[int, int], int] = {}
        for dirpath, _, filenames in os.walk(self.root / "snapshots"):
            for name in filenames:
                with contextlib.suppress(FileNotFoundError):  # a snapshot being removed
                    st = os.lstat(os.path.join(dirpath, name))
                    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                        key = (st.st_dev, st.st_ino)
                        out[key] = out.get(key, 0) + 1
        return out

    def blob_problem(self, digest: str,
                     links: dict[tuple[int, int], int] | None = None) -> str | None:
        """Why the blob of ``digest`` may hold other bytes tomorrow (None when it may not):
        not a plain file, owned by another user or writable by group or others, or a hard
        link more than the blob itself plus its links in snapshots/ (another folder holds
        the inode and can rewrite it through a snapshot). ``links``: from _cache_links."""
        path = self.blob_path(digest)
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return "not a plain file"
        why = _untrusted(st, self.owners)
        if why:
            return why
        if st.st_nlink > 1:
            made = (links if links is not None else self._cache_links()).get(
                (st.st_dev, st.st_ino), 0)
            if st.st_nlink > 1 + made and links is not None:
                made = self._cache_links().get((st.st_dev, st.st_ino), 0)  # a pull since
            if st.st_nlink > 1 + made:
                return f"has {st.st_nlink - 1 - made} hard link(s) outside the cache"
        return None

    def quarantine(self, digest: str) -> Path:
        dest = self.root / "quarantine" / f"{self._hex(digest)}.{time.time_ns()}"
        os.replace(self.blob_path(digest), dest)
        return dest

    def store_manifest(self, digest: str, data: bytes) -> None:
        atomic_write(self.manifest_path(digest), data)

    def load_manifest(self, digest: str) -> Manifest | None:
        """The cached manifest; None when it is missing or damaged, or one aiplat no longer
        accepts (stored before a rule was added: more than MAX_LAYERS layers, an annotation
        that is no string). Then the snapshot is treated as unknown (verify reports it, a
        pull fetches the manifest again and says why it refuses it), and a FIFO or a link
        to a device planted there is never read."""
        try:
            data = inputs.read_bytes(self.manifest_path(digest), "a cached manifest",
                                     max_bytes=MAX_META_BYTES)
        except InputError:
            return None
        if hashlib.sha256(data).hexdigest() != self._hex(digest):
            self.manifest_path(digest).unlink(missing_ok=True)
            return None
        try:
            return Manifest.from_bytes(data, str(self.manifest_path(digest)))
        except ArtifactError:
            return None

    # ------------------------------------------------------------------ refs, pins, use

    def _ref_path(self, ref: Reference) -> Path:
        return self.root / "refs" / ref.registry / ref.repository / (ref.tag or "latest")

    def record_ref(self, ref: Reference, digest: str) -> None:
        if ref.tag:
            folder = self.root / "refs"
            for part in (ref.registry, *ref.repository.split("/")):
                folder = folder / part
                own_dir(folder)
            atomic_write(self._ref_path(ref), digest + "\n")

    def refs(self) -> dict[str, list[str]]:
        """digest -> the ``registry/repo:tag`` names that last resolved to it."""
        out: dict[str, list[str]] = {}
        base = self.root / "refs"
        for path in sorted(p for p in base.rglob("*") if p.is_file()):
            rel = path.relative_to(base)
            name = f"{'/'.join(rel.parts[:-1])}:{rel.parts[-1]}"
            try:
                digest = inputs.read_text(path, "a cached tag", max_bytes=MAX_META_BYTES)
            except InputError:
                continue  # damaged (binary, huge): the next pull of the tag rewrites it
            out.setdefault(digest.strip(), []).append(name)
        return out

    def pin(self, digest: str, label: str = "") -> None:
        atomic_write(self.root / "pins" / self._hex(digest), label + "\n")

    def unpin(self, digest: str) -> None:
        (self.root / "pins" / self._hex(digest)).unlink(missing_ok=True)

    def pinned(self) -> set[str]:
        return {"sha256:" + p.name for p in (self.root / "pins").iterdir() if p.is_file()}

    def touch(self, digest: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.utime(self.snapshot_path(digest))

    # ------------------------------------------------------------------ inventory

    def snapshot_digests(self) -> list[str]:
        # A symlink is listed (wherever it points) so that verify reports it and a pull
        # makes the snapshot again.
        return sorted("sha256:" + p.name for p in (self.root / "snapshots").iterdir()
                      if (p.is_dir() or p.is_symlink()) and not p.name.startswith("."))

    def blob_digests(self) -> list[str]:
        return sorted("sha256:" + p.name for p in (self.root / "blobs/sha256").iterdir())

    def referenced_blobs(self, snapshots: list[str] | None = None) -> set[str]:
        used: set[str] = set()
        for digest in self.snapshot_digests() if snapshots is None else snapshots:
            m = self.load_manifest(digest)
            if m is not None:
                used.add(m.config.digest)
                used.update(layer.digest for layer in m.layers)
        return used

    def blobs_size(self) -> int:
        return sum(p.lstat().st_size for p in (self.root / "blobs/sha256").iterdir())

    def snapshots(self) -> list[SnapshotInfo]:
        refs, pins = self.refs(), self.pinned()
        out = []
        for digest in self.snapshot_digests():
            m = self.load_manifest(digest)
            path = self.snapshot_path(digest)
            out.append(SnapshotInfo(
                digest=digest, path=path, size=m.total_size if m else 0,
                last_used=path.lstat().st_mtime, pinned=digest in pins,
                refs=refs.get(digest, [])))
        return out

    # ------------------------------------------------------------------ verify, gc, evict

    def snapshot_problem(self, digest: str, manifest: Manifest,
                         links: dict[tuple[int, int], int] | None = None) -> str | None:
        """Why the snapshot of ``digest`` is not exactly the model its manifest lays out, or
        ``None`` when it is: every weight file still the cached blob (same inode and size),
        every member of a config-tar layer there with the tar's bytes (a same-size edit of
        a model's Python file is found), and no other file. Reads the config files (small)
        and stats the weights (large, guarded by their read-only blob)."""
        snap = self.snapshot_path(digest)
        expected: set[str] = set()
        try:
            if not stat.S_ISDIR(os.lstat(snap).st_mode):  # before any path through it
                return ("the snapshot is a symlink or not a directory; the model cache"
                        " follows no links in its own folders")
            if links is None:
                links = self._cache_links()
            for layer, rel in layout(manifest, digest):
                st = os.lstat(snap / rel)
                blob = os.stat(self.blob_path(layer.digest))
                if (st.st_ino, st.st_dev) != (blob.st_ino, blob.st_dev) \
                        or st.st_size != layer.size:
                    return f"{rel} is no longer the cached blob {layer.digest}"
                why = self.blob_problem(layer.digest, links)
                if why:
                    return f"{rel}: the cached blob {layer.digest} {why}"
                expected.add(rel)
            weights = set(expected)
            for layer in manifest.layers:
                if layer.media_type.endswith(".tar"):
                    why = _tar_problem(self.blob_path(layer.digest), snap, digest, expected)
                    if why:
                        return why
            return _extra_file(snap, expected, weights, self.owners)
        except FileNotFoundError as e:
            return f"{e.filename} is missing"
        except (OSError, tarfile.TarError, ValueError, OverflowError, EOFError,
                ManifestError) as e:  # what tarfile raises on a hostile header (pull._TAR_ERRORS)
            return str(e)[:200]

    def verify(self, quarantine: bool = True) -> VerifyResult:
        """Re-hash every blob, and check every snapshot file against its blob or its
        config-tar layer (:meth:`snapshot_problem`); move corrupt blobs to quarantine/ and
        drop the snapshots that use them or were modified."""
        corrupt, moved, total, blobs = [], [], 0, self.blob_digests()
        links = self._cache_links()
        for digest in blobs:
            path = self.blob_path(digest)
            total += path.lstat().st_size
            if self.blob_problem(digest, links) is not None or regular_hash(path) != digest:
                corrupt.append(digest)
        modified = []
        for digest in self.snapshot_digests():
            m = self.load_manifest(digest)
            if m is None or self.snapshot_problem(digest, m, links) is not None:
                modified.append(digest)
        removed: list[str] = []
        if quarantine:
            with self._cache_lock(exclusive=True):
                for digest in corrupt:
                    moved.append(self.quarantine(digest))
                bad = set(corrupt)
                for sd in self.snapshot_digests():
                    m = self.load_manifest(sd)
                    uses = {m.config.digest, *(x.digest for x in m.layers)} if m else set()
                    if sd in modified or uses & bad:
                        self._remove_snapshot(sd)
                        removed.append(sd)
        return VerifyResult(len(blobs), total, corrupt, moved, removed, modified,
                            list(self.untrusted_folders))

    def _remove_snapshot(self, digest: str) -> None:
        path = self.snapshot_path(digest)
        # Rename first so a reader never sees a half-deleted model directory.
        doomed = path.with_name(f".rm-{path.name}-{os.getpid()}-{threading.get_ident()}")
        try:
            os.replace(path, doomed)
        except FileNotFoundError:
            return  # not there, or another pull removed it first
        if stat.S_ISDIR(os.lstat(doomed).st_mode):
            shutil.rmtree(doomed)
        else:
            doomed.unlink()  # a link planted in its place: not what it points to

    def discard_snapshot(self, digest: str) -> None:
        """Remove one snapshot (a pull found it incomplete and makes it again)."""
        self._remove_snapshot(digest)

    def _remove_unused_blobs(self) -> tuple[list[str], int]:
        used = self.referenced_blobs()
        removed, freed = [], 0
        for digest in self.blob_digests():
            if digest not in used:
                path = self.blob_path(digest)
                st = path.lstat()
                freed += st.st_size
                if stat.S_ISDIR(st.st_mode):  # planted in a blob's place: not ours to keep
                    shutil.rmtree(path)
                else:
                    path.unlink()
                removed.append(digest)
        return removed, freed

    def gc(self, partials: bool = True) -> GcResult:
        """Remove blobs no snapshot uses (and stale partial downloads); waits for pulls."""
        with self._cache_lock(exclusive=True):
            for leftover in (self.root / "snapshots").glob(".*"):
                shutil.rmtree(leftover, ignore_errors=True)
            removed, freed = self._remove_unused_blobs()
            gone = []
            if partials:
                for p in (self.root / "tmp").iterdir():
                    freed += p.stat().st_size
                    p.unlink()
                    gone.append(p.name)
            for digest in list(self.pinned()):
                if not self.snapshot_path(digest).exists():
                    self.unpin(digest)
        return GcResult([], removed, gone, freed)

    def evict(self, max_bytes: int, blocking: bool = False,
              keep: frozenset[str] = frozenset()) -> GcResult:
        """LRU: drop least recently used unpinned snapshots until blobs fit ``max_bytes``.

        Skips (returns an empty result) when another pull holds the cache and ``blocking``
        is false: that pull evicts when it finishes.
        """
        with self._cache_lock(exclusive=True, blocking=blocking) as got:
            if not got:
                return GcResult([], [], [], 0)
            removed_snaps: list[str] = []
            removed_blobs, freed = self._remove_unused_blobs()
            if self.blobs_size() <= max_bytes:
                return GcResult([], removed_blobs, [], freed)
            pins = self.pinned() | keep
            candidates = sorted((s for s in self.snapshot_digests() if s not in pins),
                                key=lambda d: self.snapshot_path(d).stat().st_mtime)
            for digest in candidates:
                if self.blobs_size() <= max_bytes:
                    break
                self._remove_snapshot(digest)
                removed_snaps.append(digest)
                more, f = self._remove_unused_blobs()
                removed_blobs += more
                freed += f
            return GcResult(removed_snaps, removed_blobs, [], freed)
