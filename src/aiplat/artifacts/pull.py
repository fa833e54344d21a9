"""Pull a model into the cache: resolve, check the policy, download, verify, snapshot.

1. Resolve the tag to a digest (HEAD; a digest reference needs no request) and enforce the
   trust policy on that digest, before any byte of the model moves.
2. If the snapshot for the digest exists, touch it and return: a warm pull is one request.
3. Otherwise fetch the manifest and download the missing blobs in parallel (largest first).
   Each blob: take its file lock (a concurrent pull of the same blob waits, then finds it
   committed and downloads nothing), resume ``tmp/<hex>.partial`` with ``Range`` after
   re-hashing its prefix, hash while streaming, retry transport errors and 5xx with
   backoff (resuming each time), queue writeback while streaming (:mod:`writeback`), fsync,
   compare the digest (a mismatch deletes the partial file: nothing corrupt enters the
   cache), then rename into ``blobs/``.
4. Build the snapshot of hard links (plus the extracted config tar) in a temp directory and
   rename it into place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from filelock import FileLock

from aiplat.artifacts.cache import READ_SIZE, Cache
from aiplat.artifacts.client import RETRY_STATUSES, RegistryClient
from aiplat.artifacts.errors import ArtifactError, DigestMismatchError, RegistryError
from aiplat.artifacts.modelpack import TITLE, Descriptor, Manifest, safe_relpath
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
    if ref.digest:
        return ref.digest
    digest = client.head_manifest(ref.repository, ref.identifier)
    if digest is None:
        _, digest, _ = client.get_manifest(ref.repository, ref.identifier)
    return digest


def _rehash(path: Path, h: hashlib._Hash) -> int:
    buf = bytearray(READ_SIZE)
    view = memoryview(buf)
    n_total = 0
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
            n_total += n
    return n_total


def fetch_blob(client: RegistryClient, cache: Cache, repo: str, desc: Descriptor, *,
               limiter: _RateLimiter | None = None, progress: Progress | None = None,
               ) -> _BlobOutcome:
    """Download one blob into the cache exactly once across threads and processes."""
    digest, size = desc.digest, desc.size
    if cache.has_blob(digest):
        return _BlobOutcome(digest, False)
    with FileLock(cache.lock_path(digest)):
        if cache.has_blob(digest):  # another process committed it while we waited
            return _BlobOutcome(digest, False)
        part = cache.partial_path(digest)
        h = hashlib.sha256()
        offset = _rehash(part, h) if part.exists() else 0
        if offset > size:
            part.unlink()
            h, offset = hashlib.sha256(), 0
        resumed, got = offset, 0
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
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


def _materialise(cache: Cache, digest: str, manifest: Manifest) -> Path:
    final = cache.snapshot_path(digest)
    tmp = final.with_name(f".tmp-{final.name}-{os.getpid()}-{threading.get_ident()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        for i, layer in enumerate(manifest.layers):
            blob = cache.blob_path(layer.digest)
            if layer.media_type.endswith(".tar"):
                with tarfile.open(blob) as tar:
                    # The "data" filter refuses absolute paths, "..", links out and devices.
                    tar.extractall(tmp, filter="data")
                continue
            name = layer.filepath or layer.annotations.get(TITLE)
            if not name:
                continue  # an unnamed layer has no place in the model directory
            rel = safe_relpath(name, f"{digest} layers[{i}]")
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                raise ArtifactError(f"{digest}: two layers write {rel}; the manifest is invalid")
            os.link(blob, target)
        os.utime(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.exists():
                raise
            shutil.rmtree(tmp)  # another pull finished the same snapshot first
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def pull(client: RegistryClient, cache: Cache, ref: Reference, *, policy: Policy | None = None,
         concurrency: int = 4, max_rate: float | None = None,
         max_cache_bytes: int | None = None, progress: Progress | None = None) -> PullResult:
    t0 = time.perf_counter()
    if policy is not None:
        policy.decide(ref.name)  # a repository the policy refuses needs no request at all
    digest = resolve(client, ref)
    trust = enforce_policy(client, ref, digest, policy) if policy is not None else "no policy"
    with cache.using():
        snap = cache.snapshot_path(digest)
        manifest = cache.load_manifest(digest)
        if snap.is_dir() and manifest is not None:
            cache.touch(digest)
            cache.record_ref(ref, digest)
            return PullResult(ref.with_digest(digest), digest, snap, True, trust,
                              total_bytes=manifest.total_size,
                              seconds=time.perf_counter() - t0)
        if manifest is None:
            body, _, _ = client.get_manifest(ref.repository, digest)
            manifest = Manifest.from_bytes(body, f"{ref.name}@{digest}")
            cache.store_manifest(digest, body)
        blobs = {d.digest: d for d in (manifest.config, *manifest.layers)}
        todo = sorted(blobs.values(), key=lambda d: -d.size)
        limiter = _RateLimiter(max_rate) if max_rate else None

        def one(d: Descriptor) -> _BlobOutcome:
            return fetch_blob(client, cache, ref.repository, d, limiter=limiter,
                              progress=progress)

        outcomes = _run_all(one, todo, concurrency)
        path = _materialise(cache, digest, manifest)
        cache.record_ref(ref, digest)
    result = PullResult(ref.with_digest(digest), digest, path, False, trust,
                        total_bytes=manifest.total_size)
    for o in outcomes:
        (result.downloaded if o.downloaded else result.shared).append(o.digest)
        result.bytes_downloaded += o.bytes_downloaded
        result.bytes_resumed += o.bytes_resumed
    if max_cache_bytes is not None:
        # Never evict what this pull just returned.
        cache.evict(max_cache_bytes, keep=frozenset({digest}))
    result.seconds = time.perf_counter() - t0
    return result
