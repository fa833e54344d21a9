"""Pull a model into the cache: resolve, check the policy, download, verify, snapshot.

1. Resolve the tag to a digest (HEAD; a digest reference needs no request) and enforce the
   trust policy on that digest, before any byte of the model moves.
2. If the snapshot for the digest exists and is exactly the model (each weight file still
   the cached blob's inode, each config-tar member there with the tar's bytes, no other
   file: :meth:`Cache.snapshot_problem`, a few ``stat`` calls and a read of the small
   files), touch it and return: a warm pull is one request. A snapshot that is not is
   removed and made again like a cold pull.
3. Otherwise fetch the manifest and check its layout (every path safe, none clashing with
   another: :func:`aiplat.artifacts.modelpack.layout`) before a byte of the model moves,
   then download the missing blobs in parallel (largest first). Each blob: take its file
   lock (a concurrent pull of the same blob waits, then finds it committed and downloads
   nothing); a blob already cached is re-hashed before this snapshot uses it (a corrupt one
   is quarantined and downloaded again); resume ``tmp/<hex>.partial`` (opened with
   ``O_NOFOLLOW``) with ``Range`` after re-hashing its prefix, hash while streaming, retry
   transport errors and 5xx with backoff (resuming each time), queue writeback while
   streaming (:mod:`writeback`), fsync, compare the digest (a mismatch deletes the partial
   file: nothing corrupt enters the cache), then rename into ``blobs/``.
4. Build the snapshot in a private temp directory and rename it into place: first unpack
   the tar layers while the directory holds no link to any cached blob (members must be
   plain files and directories with safe paths, each written once), then hard-link the
   weight files; ``os.link`` never replaces a path, so no layer can write through a link
   into a blob that another (signed) model's snapshot shares.

Failures are :mod:`aiplat.artifacts.errors`: a manifest that cannot be laid out is a
:class:`ManifestError`, a full disk or a planted symlink a :class:`StorageError`, each one
line with the fix.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
import tarfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from aiplat.artifacts.cache import FOLDER_MODE, READ_SIZE, Cache
from aiplat.artifacts.client import RETRY_STATUSES, RegistryClient
from aiplat.artifacts.errors import (
    DigestMismatchError,
    ManifestError,
    RegistryError,
    StorageError,
    storage_error,
)
from aiplat.artifacts.modelpack import Descriptor, Manifest, layout, safe_relpath
from aiplat.artifacts.reference import Reference
from aiplat.artifacts.signatures import enforce_policy
from aiplat.artifacts.signing import Policy
from aiplat.artifacts.writeback import WriteBehind

Progress = Callable[[str, int], None]


@dataclass
class PullResult:
    reference: Reference
    digest: str
    path: Path
    warm: bool
    trust: str = "no policy"
    downloaded: list[str] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)
    bytes_downloaded: int = 0
    bytes_resumed: int = 0
    total_bytes: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)  # warnings: the pull still succeeded


@dataclass
class _BlobOutcome:
    digest: str
    downloaded: bool
    bytes_downloaded: int = 0
    bytes_resumed: int = 0


class _RateLimiter:
    """A shared bytes-per-second budget (``--max-rate``) so a pull does not flood a link."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self.start = time.monotonic()
        self.sent = 0
        self.lock = threading.Lock()

    def take(self, n: int) -> None:
        if not self.rate:
            return
        with self.lock:
            self.sent += n
            wait = self.sent / self.rate - (time.monotonic() - self.start)
        if wait > 0:
            time.sleep(wait)


def _run_all(fn: Callable[[Descriptor], _BlobOutcome], items: list[Descriptor],
             concurrency: int) -> list[_BlobOutcome]:
    """Run ``fn`` over ``items`` in parallel; on the first failure cancel what has not
    started (a failed pull should fail now, not after every other blob was tried)."""
    failed = threading.Event()

    def guarded(item: Descriptor) -> _BlobOutcome | None:
        if failed.is_set():
            return None
        try:
            return fn(item)
        except BaseException:
            failed.set()
            raise

    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    try:
        futures = [pool.submit(guarded, item) for item in items]
        results = [f.result() for f in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [r for r in results if r is not None]


def resolve(client: RegistryClient, ref: Reference) -> str:
    """The sha256 digest ``ref`` names. A sha512 pin is fetched and checked against the
    bytes (the client does), which are then known by their sha256 digest: the one the
    cache, the signatures and the registry's own index use."""
    if ref.digest and ref.digest.startswith("sha256:"):
        return ref.digest
    claimed = None if ref.digest else client.head_manifest(ref.repository, ref.identifier)
    if claimed is not None:
        return claimed  # checked against the bytes when the manifest is fetched
    _, digest, _ = client.get_manifest(ref.repository, ref.identifier)
    return digest


def _rehash(fd: int, h: hashlib._Hash) -> int:
    """Hash what ``fd`` holds from its start (the prefix of a resumed download)."""
    buf = bytearray(READ_SIZE)
    view = memoryview(buf)
    n_total = 0
    while n := os.readv(fd, [buf]):
        h.update(view[:n])
        n_total += n
    return n_total


def fetch_blob(client: RegistryClient, cache: Cache, repo: str, desc: Descriptor, *,
               limiter: _RateLimiter | None = None, progress: Progress | None = None,
               ) -> _BlobOutcome:
    """Download one blob into the cache exactly once across threads and processes; a blob
    already cached is re-hashed first (quarantined and downloaded again when corrupt)."""
    digest = desc.digest
    part = cache.partial_path(digest)
    try:
        with cache.blob_lock(digest):
            if cache.has_blob(digest) and cache.check_blob(digest):
                real = cache.blob_path(digest).stat().st_size
                if real != desc.size:  # the blob is sound: the manifest is what is wrong
                    raise ManifestError(f"{repo}: a layer says blob {digest} has {desc.size}"
                                        f" bytes; it has {real}; refusing the model")
                return _BlobOutcome(digest, False)
            return _download(client, cache, repo, desc, part=part, limiter=limiter,
                             progress=progress)
    except OSError as e:
        raise storage_error(e, f"cannot store blob {digest} of {repo} at",
                            e.filename or part) from None


_FLAGS = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC


def _download(client: RegistryClient, cache: Cache, repo: str, desc: Descriptor, *,  # noqa: C901 (ratchet)
              part: Path, limiter: _RateLimiter | None, progress: Progress | None,
              ) -> _BlobOutcome:
    digest, size = desc.digest, desc.size
    try:
        fd = os.open(part, _FLAGS, 0o600)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise cache.planted(part) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise cache.planted(part)  # a hard link to someone's file, a FIFO, ...
        h = hashlib.sha256()
        offset = _rehash(fd, h) if st.st_size else 0
        if offset > size:
            os.ftruncate(fd, 0)
            h, offset = hashlib.sha256(), 0
        resumed, got = offset, 0
        attempt, last = 0, ""
        while offset < size:
            if attempt >= client.retry.attempts:
                raise RegistryError(
                    f"GET {repo}/blobs/{digest} failed after {attempt} attempts, at byte"
                    f" {offset} of {size}: {last}. The partial download is kept; run the"
                    " pull again to resume it, or check the registry"
                    f" (curl {client.base}/v2/)")
            if attempt:
                client.sleep(client.retry.delay(attempt - 1))
            attempt += 1
            try:
                with client.stream_blob(repo, digest, offset) as r:
                    if offset and r.status_code == 200:  # no range support: start over
                        os.ftruncate(fd, 0)
                        h, offset, resumed = hashlib.sha256(), 0, 0
                    behind = WriteBehind(fd, offset)
                    for chunk in r.iter_raw():
                        os.write(fd, chunk)
                        behind.wrote(len(chunk))
                        h.update(chunk)
                        offset += len(chunk)
                        got += len(chunk)
                        if limiter is not None:
                            limiter.take(len(chunk))
                        if progress is not None:
                            progress(digest, len(chunk))
                        if offset > size:
                            break
                if offset < size:
                    last = f"connection ended at byte {offset} of {size}"
            except httpx.TransportError as e:
                last = f"{e.__class__.__name__}: {e}"
            except RegistryError as e:
                if e.status not in RETRY_STATUSES:
                    raise
                last = str(e)
        os.fsync(fd)
        os.fchmod(fd, 0o444)
    finally:
        os.close(fd)
    actual = "sha256:" + h.hexdigest()
    if offset != size or actual != digest:
        part.unlink(missing_ok=True)
        raise DigestMismatchError(
            f"{repo}: blob {digest} arrived as {offset} bytes with digest {actual} (expected"
            f" {size} bytes); it was discarded and nothing entered the cache. The"
            " registry's copy is corrupt or was replaced: push the model again")
    cache.commit_blob(part, digest)
    return _BlobOutcome(digest, True, got, resumed)


def _is_tar(layer: Descriptor) -> bool:
    return layer.media_type.endswith(".tar")


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return f"a symlink to {member.linkname!r}"
    if member.islnk():
        return f"a hard link to {member.linkname!r}"
    if member.isdev():
        return "a device node or FIFO"
    if member.issparse():
        return "a sparse file"
    return "" if member.isreg() or member.isdir() else f"of tar type {member.type!r}"


# What tarfile raises on a hostile header besides TarError: ValueError from its own parsing
# (a GNU sparse 1.0 map, a name that does not decode) and from os.utime (a PAX mtime of nan),
# OverflowError from os.utime (a PAX mtime of 1e30 or inf), EOFError from a short read.
_TAR_ERRORS = (tarfile.TarError, ValueError, OverflowError, EOFError)


def _unpack(blob: Path, dest: Path, where: str, written: set[str]) -> None:
    """Extract one config tar into ``dest``: plain files and directories only, each path
    safe and written once (by any layer)."""

    def only_plain(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo:
        name = f"{where}: member"
        kind = _tar_kind(member)
        if kind:
            raise ManifestError(f"{name} {member.name[:60]!r} is {kind}; a config tar holds"
                                " only plain files and directories; refusing the model")
        rel = safe_relpath(member.name, name)
        if member.isreg():
            if rel in written:
                raise ManifestError(f"{name} {rel!r} is written twice; refusing the model")
            written.add(rel)
        return tarfile.data_filter(member, path)

    try:
        with tarfile.open(blob, mode="r:") as tar:
            tar.extractall(dest, filter=only_plain)
    except _TAR_ERRORS as e:
        raise ManifestError(f"{where}: not a usable tar layer ({str(e)[:200]});"
                            " refusing the model") from None


# A path the layers cannot agree on: the manifest's fault, not the disk's.
_LAYOUT_ERRNOS = frozenset({errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG,
                            errno.ELOOP})


def _materialise(cache: Cache, digest: str, manifest: Manifest, where: str) -> Path:
    placed = layout(manifest, where)
    final = cache.snapshot_path(digest)
    tmp = final.with_name(f".tmp-{final.name}-{os.getpid()}-{threading.get_ident()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(mode=FOLDER_MODE)
        # Tar layers first, while the directory holds no link to any cached blob: whatever
        # a tar writes lands in files of its own.
        written: set[str] = set()
        for i, layer in enumerate(manifest.layers):
            if _is_tar(layer):
                _unpack(cache.blob_path(layer.digest), tmp, f"{where} layers[{i}]", written)
        # Then the weight files. os.link never replaces a path: one a tar already wrote (or
        # a file in the way of a directory) is refused, not overwritten.
        for layer, rel in placed:
            folder = tmp
            for part in rel.split("/")[:-1]:
                folder = folder / part
                with contextlib.suppress(FileExistsError):
                    os.mkdir(folder, FOLDER_MODE)  # a file in the way fails the link below
            try:
                os.link(cache.blob_path(layer.digest), tmp / rel, follow_symlinks=False)
            except FileExistsError:
                raise ManifestError(f"{where}: two layers write {rel!r} (a weight file and a"
                                    " tar member); refusing the model") from None
        os.utime(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.exists():
                raise
            shutil.rmtree(tmp)  # another pull finished the same snapshot first
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if e.errno in _LAYOUT_ERRNOS:
            # os.link names the cached blob first: the path in the model is the other one
            bad = next((str(f) for f in (e.filename2, e.filename)
                        if f and str(f).startswith(str(tmp))), str(e.filename or ""))
            bad = bad[len(str(tmp)) + 1:] if bad.startswith(str(tmp)) else bad
            raise ManifestError(f"{where}: the layers cannot be laid out as a model directory"
                                f" ({e.strerror}: {bad[:80]!r}); refusing the model") from None
        raise storage_error(e, "cannot build the model directory", final) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def incomplete(cache: Cache, digest: str, manifest: Manifest) -> str | None:
    """Why the snapshot of ``digest`` is not the whole model, or ``None`` when it is (the
    same check as ``model verify``: :meth:`Cache.snapshot_problem`)."""
    return cache.snapshot_problem(digest, manifest)


_UNTRUSTED_FOLDER = ("the cache folder {} was writable by others: its contents are not"
                     " trusted (tightened now; each blob and snapshot file is checked for"
                     " another owner or hard link before use; run aiplat model verify)")


def _record_ref(cache: Cache, ref: Reference, digest: str, notes: list[str]) -> None:
    """The tag -> digest record is bookkeeping (``model ls``): failing to write it must not
    fail a pull whose model is complete, so it becomes a warning."""
    try:
        cache.record_ref(ref, digest)
    except (OSError, StorageError) as e:
        why = e.strerror if isinstance(e, OSError) else str(e)
        notes.append(f"could not record {ref} -> {digest} in {cache.root / 'refs'} ({why});"
                     " the model is complete, only `aiplat model ls` will not name this tag"
                     f" (fix: free space on the file system of {cache.root})")


def pull(client: RegistryClient, cache: Cache, ref: Reference, *, policy: Policy | None = None,
         concurrency: int = 4, max_rate: float | None = None,
         max_cache_bytes: int | None = None, progress: Progress | None = None,
         on_total: Callable[[int], None] | None = None) -> PullResult:
    """Pull ``ref`` into ``cache``; ``on_total(bytes)`` once the manifest says how much there
    is, then ``progress(digest, n)`` per chunk read (cached blobs count whole, once)."""
    t0 = time.perf_counter()
    if policy is not None:
        policy.decide(ref.name)  # a repository the policy refuses needs no request at all
    digest = resolve(client, ref)
    trust = enforce_policy(client, ref, digest, policy) if policy is not None else "no policy"
    where = f"{ref.name}@{digest}"
    notes: list[str] = [_UNTRUSTED_FOLDER.format(f) for f in cache.untrusted_folders]
    with cache.using():
        snap = cache.snapshot_path(digest)
        manifest = cache.load_manifest(digest)
        if (snap.is_dir() or snap.is_symlink()) and manifest is not None:
            why = incomplete(cache, digest, manifest)
            if why is None:
                cache.touch(digest)
                _record_ref(cache, ref, digest, notes)
                return PullResult(ref.with_digest(digest), digest, snap, True, trust,
                                  total_bytes=manifest.total_size,
                                  seconds=time.perf_counter() - t0, notes=notes)
            notes.append(f"the cached snapshot {snap} was incomplete or modified ({why});"
                         " made it again")
            cache.discard_snapshot(digest)
        if manifest is None:
            body, _, _ = client.get_manifest(ref.repository, digest)
            manifest = Manifest.from_bytes(body, where)
            layout(manifest, where)  # refuse a manifest that cannot be laid out, now
            try:
                cache.store_manifest(digest, body)
            except OSError as e:
                raise storage_error(e, "cannot store the manifest in",
                                    cache.manifest_path(digest)) from None
        blobs = {d.digest: d for d in (manifest.config, *manifest.layers)}
        todo = sorted(blobs.values(), key=lambda d: -d.size)
        limiter = _RateLimiter(max_rate) if max_rate else None

        if on_total is not None:
            on_total(sum(d.size for d in todo))

        def one(d: Descriptor) -> _BlobOutcome:
            out = fetch_blob(client, cache, ref.repository, d, limiter=limiter,
                             progress=progress)
            if progress is not None and not out.downloaded:
                progress(d.digest, d.size)
            elif progress is not None and out.bytes_resumed:
                progress(d.digest, out.bytes_resumed)
            return out

        outcomes = _run_all(one, todo, concurrency)
        path = _materialise(cache, digest, manifest, where)
        _record_ref(cache, ref, digest, notes)
    result = PullResult(ref.with_digest(digest), digest, path, False, trust,
                        total_bytes=manifest.total_size, notes=notes)
    for o in outcomes:
        (result.downloaded if o.downloaded else result.shared).append(o.digest)
        result.bytes_downloaded += o.bytes_downloaded
        result.bytes_resumed += o.bytes_resumed
    if max_cache_bytes is not None:
        # Never evict what this pull just returned.
        cache.evict(max_cache_bytes, keep=frozenset({digest}))
    result.seconds = time.perf_counter() - t0
    return result
