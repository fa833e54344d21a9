"""An in-memory OCI registry behind ``httpx.MockTransport``, with fault injection.

Unit tests of the artifacts client and pull use it instead of patching: it speaks enough
of the distribution API (manifests, blobs with Range, uploads with mount/PATCH/PUT, tags,
a 404 referrers endpoint like distribution 2.8) and can answer with a status or cut a
blob body after N bytes. The real registry is exercised by tests/integration.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx


class _DroppingStream(httpx.SyncByteStream):
    def __init__(self, data: bytes, drop_after: int | None) -> None:
        self.data, self.drop_after = data, drop_after

    def __iter__(self) -> Iterator[bytes]:
        step = 4096
        for i in range(0, len(self.data), step):
            if self.drop_after is not None and i >= self.drop_after:
                raise httpx.ReadError("connection reset by peer (injected)")
            yield self.data[i:i + step]


@dataclass
class FakeRegistry:
    blobs: dict[str, bytes] = field(default_factory=dict)
    manifests: dict[str, dict[str, bytes]] = field(default_factory=dict)  # repo -> ref -> body
    uploads: dict[str, bytearray] = field(default_factory=dict)
    log: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    fail: list[int] = field(default_factory=list)         # statuses for the next requests
    fail_blob_gets: list[int] = field(default_factory=list)
    drop_blob_after: list[int] = field(default_factory=list)  # per blob GET: cut after bytes
    range_support: bool = True

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def blob_gets(self, digest: str) -> list[dict[str, str]]:
        return [h for m, p, h in self.log if m == "GET" and p.endswith(f"/blobs/{digest}")]

    def handle(self, request: httpx.Request) -> httpx.Response:
        path, method = request.url.path, request.method
        self.log.append((method, path, dict(request.headers)))
        if self.fail:
            return httpx.Response(self.fail.pop(0), json={"errors": [
                {"code": "UNKNOWN", "message": "injected failure"}]})
        if path == "/v2/":
            return httpx.Response(200, json={})
        m = re.match(r"^/v2/(.+)/(manifests|blobs|tags|referrers)/(.*)$", path)
        if not m:
            return httpx.Response(404)
        repo, kind, rest = m.groups()
        if kind == "manifests":
            refs = self.manifests.setdefault(repo, {})
            if method == "PUT":
                body = request.read()
                digest = "sha256:" + hashlib.sha256(body).hexdigest()
                refs[rest] = body
                refs[digest] = body
                return httpx.Response(201, headers={"Docker-Content-Digest": digest})
            if rest not in refs:
                return httpx.Response(404, json={"errors": [{"code": "MANIFEST_UNKNOWN"}]})
            body = refs[rest]
            digest = "sha256:" + hashlib.sha256(body).hexdigest()
            headers = {"Docker-Content-Digest": digest,
                       "Content-Type": json.loads(body).get("mediaType", "")}
            return httpx.Response(200, content=b"" if method == "HEAD" else body,
                                  headers=headers)
        if kind == "tags":
            tags = [t for t in self.manifests.get(repo, {}) if not t.startswith("sha256:")]
            return httpx.Response(200, json={"name": repo, "tags": tags})
        if kind == "referrers":
            return httpx.Response(404)
        return self._blobs(request, repo, rest)

    def _blobs(self, request: httpx.Request, repo: str, rest: str) -> httpx.Response:
        method = request.method
        if rest.startswith("uploads"):
            if method == "POST":
                mount = request.url.params.get("mount")
                if mount and mount in self.blobs:
                    return httpx.Response(201)
                uid = uuid.uuid4().hex
                self.uploads[uid] = bytearray()
                return httpx.Response(202, headers={
                    "Location": f"/v2/{repo}/blobs/uploads/{uid}?_state=abc"})
            uid = rest.split("/", 1)[1]
            if request.url.params.get("_state") != "abc":
                return httpx.Response(404, json={"errors": [{"code": "BLOB_UPLOAD_INVALID"}]})
            buf = self.uploads[uid]
            if method == "PATCH":
                start = int(request.headers["content-range"].split("-")[0])
                if start != len(buf):
                    return httpx.Response(416)
                buf += request.read()
                return httpx.Response(202, headers={
                    "Location": f"/v2/{repo}/blobs/uploads/{uid}?_state=abc"})
            if method == "PUT":
                buf += request.read()
                digest = request.url.params["digest"]
                if "sha256:" + hashlib.sha256(buf).hexdigest() != digest:
                    return httpx.Response(400, json={"errors": [{"code": "DIGEST_INVALID"}]})
                self.blobs[digest] = bytes(buf)
                return httpx.Response(201)
            return httpx.Response(405)
        digest = rest
        if digest not in self.blobs:
            return httpx.Response(404, json={"errors": [{"code": "BLOB_UNKNOWN"}]})
        data = self.blobs[digest]
        if method == "HEAD":
            return httpx.Response(200, headers={"Content-Length": str(len(data))})
        if self.fail_blob_gets:
            return httpx.Response(self.fail_blob_gets.pop(0))
        status, start = 200, 0
        rng = request.headers.get("range")
        if rng and self.range_support:
            start = int(rng.removeprefix("bytes=").split("-")[0])
            status = 206
        drop = self.drop_blob_after.pop(0) if self.drop_blob_after else None
        return httpx.Response(status, stream=_DroppingStream(data[start:], drop))
