"""An in-memory OCI registry behind ``httpx.MockTransport``, with fault injection, and a
raw loopback HTTP server for answers no well-behaved server sends.

Unit tests of the artifacts client and pull use them instead of patching: the fake speaks
enough of the distribution API (manifests, blobs with Range, uploads with mount/PATCH/PUT,
tags, referrers: a 404 like distribution 2.8 unless ``referrers`` lists some) and can answer
with a status, cut a blob body after N bytes or lie in a HEAD. :class:`Endless` is a body
that streams and counts what was taken from it (a bound must stop reading, not read and
then complain). :class:`LoopbackServer` writes whole HTTP answers on a real socket (huge
headers, trickles, gzip bombs). The real registry is exercised by tests/integration.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx


class Endless(httpx.SyncByteStream):
    """``total`` bytes of ``chunk`` repeated, streamed; ``sent`` counts what was read."""

    def __init__(self, chunk: bytes, total: int, head: bytes = b"") -> None:
        self.chunk, self.total, self.head, self.sent = chunk, total, head, 0

    def __iter__(self) -> Iterator[bytes]:
        if self.head:
            self.sent += len(self.head)
            yield self.head
        while self.sent < self.total:
            self.sent += len(self.chunk)
            yield self.chunk


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
    referrers: dict[str, list[dict[str, object]]] | None = None  # digest -> descriptors
    head_digest: dict[str, str] = field(default_factory=dict)  # ref -> a HEAD's claim

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
            if method == "HEAD":
                digest = self.head_digest.get(rest, digest)
            headers = {"Docker-Content-Digest": digest,
                       "Content-Type": json.loads(body).get("mediaType", "")}
            return httpx.Response(200, content=b"" if method == "HEAD" else body,
                                  headers=headers)
        if kind == "tags":
            tags = [t for t in self.manifests.get(repo, {}) if not t.startswith("sha256:")]
            return httpx.Response(200, json={"name": repo, "tags": tags})
        if kind == "referrers":
            if self.referrers is None:
                return httpx.Response(404)
            index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
                     "manifests": self.referrers.get(rest, [])}
            return httpx.Response(200, json=index, headers={
                "Content-Type": "application/vnd.oci.image.index.v1+json"})
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


Respond = Callable[[str, str, dict[str, str], socket.socket], None]
"""(method, path, headers, socket): write the whole answer on the socket."""


class LoopbackServer:
    """A raw HTTP/1.1 server on 127.0.0.1 (one thread per connection) whose ``respond``
    writes every byte of each answer itself; ``host`` is its ``127.0.0.1:PORT``."""

    def __init__(self, respond: Respond) -> None:
        self.respond = respond
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.host = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop = True
        self.sock.close()
        self._thread.join(timeout=5)

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                got = conn.recv(65536)
                if not got:
                    return
                data += got
            head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            method, path, _ = head[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip()
                       for k, _, v in (line.partition(":") for line in head[1:])}
            self.requests.append((method, path, headers))
            # The client may hang up mid-answer: what it read is what the test measures.
            with contextlib.suppress(OSError):
                self.respond(method, path, headers, conn)


def answer(conn: socket.socket, status: str, headers: dict[str, str], body: bytes) -> None:
    """Write one whole answer (Content-Length from the body unless given); the server
    answers one request per connection, and says so."""
    lines = [f"HTTP/1.1 {status}", "Connection: close",
             *(f"{k}: {v}" for k, v in headers.items())]
    if not any(k.lower() == "content-length" for k in headers):
        lines.append(f"Content-Length: {len(body)}")
    conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
