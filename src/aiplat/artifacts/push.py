"""Push a packaged model: skip blobs the registry has, mount across repositories, chunk.

Order matters for a registry that validates references: blobs first, config, then the
manifest under its tag. Each blob is checked with HEAD (skip if present), then offered as a
cross-repository mount from the repositories the caller names (the registry links the
existing blob without a byte moving), and only then uploaded — in ``chunk_size`` PATCHes
when larger than one chunk. Blobs upload in parallel.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from aiplat.artifacts.client import DEFAULT_CHUNK, Readable, RegistryClient
from aiplat.artifacts.modelpack import OCI_MANIFEST
from aiplat.artifacts.package import Layer, Package
from aiplat.artifacts.reference import Reference


@dataclass
class PushResult:
    reference: Reference
    digest: str
    uploaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    mounted: list[str] = field(default_factory=list)
    uploaded_bytes: int = 0


class _Counted:
    """A reader that reports how many bytes each read returned (for a progress bar)."""

    def __init__(self, f: Readable, seen: Callable[[int], None]) -> None:
        self._f, self._seen = f, seen

    def read(self, size: int = -1, /) -> bytes:
        data = self._f.read(size)
        self._seen(len(data))
        return data


def push_package(client: RegistryClient, ref: Reference, package: Package, *,
                 mount_from: list[str] | None = None, chunk_size: int = DEFAULT_CHUNK,
                 concurrency: int = 4,
                 progress: Callable[[str, int], None] | None = None,
                 on_total: Callable[[int], None] | None = None) -> PushResult:
    """Push ``package`` to ``ref``; ``on_total(bytes)`` first, then ``progress(digest, n)``
    per chunk read (blobs the registry has or mounts count whole)."""
    repo = ref.repository
    result = PushResult(reference=ref, digest="")

    def one(layer: Layer) -> tuple[str, str, int]:
        d = layer.descriptor
        if client.has_blob(repo, d.digest):
            if progress:
                progress(d.digest, d.size)
            return "skipped", d.digest, 0
        for source in mount_from or []:
            if source != repo and client.mount_blob(repo, d.digest, source):
                if progress:
                    progress(d.digest, d.size)
                return "mounted", d.digest, 0
        with layer.open() as f:
            reader: Readable = f
            if progress:
                reader = _Counted(f, lambda n: progress(d.digest, n))
            client.upload_blob(repo, d.digest, d.size, reader, chunk_size)
        return "uploaded", d.digest, d.size

    # A model may list the same file content twice; push each blob once.
    unique = list({layer.descriptor.digest: layer for layer in package.layers}.values())
    config = Layer(package.manifest.config, data=package.config)
    if on_total is not None:
        on_total(sum(layer.descriptor.size for layer in [*unique, config]))
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        outcomes = list(pool.map(one, [*unique, config]))
    for kind, digest, size in outcomes:
        getattr(result, kind).append(digest)
        result.uploaded_bytes += size
    body = package.manifest_bytes
    result.digest = client.put_manifest(repo, ref.tag or "latest", body, OCI_MANIFEST)
    result.reference = ref.with_digest(result.digest)
    return result


def push_blob_bytes(client: RegistryClient, repo: str, data: bytes) -> str:
    """Small helper for signatures and configs: skip-existing upload of in-memory bytes."""
    from aiplat.artifacts.reference import sha256_digest

    digest = sha256_digest(data)
    if not client.has_blob(repo, digest):
        client.upload_blob(repo, digest, len(data), io.BytesIO(data))
    return digest
