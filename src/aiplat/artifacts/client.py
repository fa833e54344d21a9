"""A small OCI distribution client over httpx, with retries and an injectable transport.

Only the endpoints a model store needs (distribution spec v1.1): manifests (GET/HEAD/PUT),
blobs (HEAD, ranged GET, cross-repository mount, monolithic and chunked upload), tags list,
catalog and referrers. Tests pass ``transport=httpx.MockTransport(handler)`` instead of
patching; integration tests use a real registry.

Retries: transport errors (refused, reset, timeouts) and 429/5xx answers are retried with
exponential backoff (``backoff * 2**n``, capped at 8 s) and then raised as one
:class:`RegistryError` that names the request, the attempts and the last cause. Streaming
downloads are retried one level up (:mod:`aiplat.artifacts.pull`) because a retry there must
resume at the byte already received rather than start over.

Every answer is read within a bound (:mod:`aiplat.artifacts.limits`): the client's response
hook puts each body — redirects, 401s and token answers included — behind a stream that
decodes gzip/deflate step by step (one stream, nothing after its end, and no more encoded
bytes than :func:`limits.max_encoded` allows for what they decode to), counts the decoded
bytes and stops at the request's ``Bound`` (an error body is cut, anything else refused
with a :class:`RegistryError` that names the registry, the thing and the limit). Listings
follow ``Link`` pages on the registry only, within a page and byte budget, and refuse a
loop; referrers are de-duplicated.

Every request is bounded in time too: all its attempts together wait on the network (connect,
TLS handshake, every socket read: interim ``1xx`` answers, redirects and their bodies, a token
service's answer, the answer's headers and, unless it is a blob, its body) no longer than
``limits.MAX_EXCHANGE_SECONDS``, and follow at most ``limits.MAX_REDIRECTS`` redirects.
httpx has no total timeout and httpcore reads interim answers in a loop of its own, so the
count is kept where the waiting happens: httpcore's network backend is wrapped
(:class:`_WaitingBackend`), and each read is given no longer than the request has left.

Plain HTTP is used for loopback registries unless ``plain_http`` says otherwise; everything
else is HTTPS. Loopback is an address, not a spelling: an IP literal in 127.0.0.0/8 or
``::1``, or a name every one of whose addresses is loopback (``localhost``);
``127.attacker.example`` is a name like any other. Credentials go over plain HTTP only to
a loopback address itself (an IP literal, or ``localhost``, which the hosts file answers):
another name was resolved once, here, and httpx resolves it again when it connects, so a
DNS answer that changes in between would carry them off in the clear
(:mod:`aiplat.artifacts.auth`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import socket
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import httpcore
import httpx

from aiplat.artifacts import limits
from aiplat.artifacts.auth import Credentials, RegistryAuth, bare_host
from aiplat.artifacts.errors import ArtifactInputError, DigestMismatchError, RegistryError
from aiplat.artifacts.limits import BOUND, Bound
from aiplat.artifacts.modelpack import MANIFEST_ACCEPT, OCI_INDEX, OCI_MANIFEST
from aiplat.artifacts.reference import (
    check_digest,
    is_repository,
    is_tag,
    matches,
    parse_registry,
    sha256_digest,
    shown,
)

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
DEFAULT_CHUNK = 64 * 1024 * 1024
READ_BYTES = 1024 * 1024


def read_larger_chunks() -> None:
    """Make httpcore read HTTP/1.1 responses in 1 MiB socket reads instead of 64 KiB.

    httpcore's read size is a class attribute (``HTTP11Connection.READ_NUM_BYTES``) with no
    public setting, and httpx builds its connections itself. Model blobs are gigabytes: 1 MiB
    reads cut a 2.15 GB cold pull's CPU time by a quarter here (user 2.3 -> 1.85 s, system
    2.3 -> 1.5 s) and its wall time from 3.8 to 2.9 s on two cores. It is raised once,
    process-wide; a read returns what has arrived, so small responses are unaffected. If a
    future httpcore drops the attribute, nothing happens (tests check the chunk size).
    """
    try:
        from httpcore._sync.http11 import HTTP11Connection
    except ImportError:  # pragma: no cover - httpcore is httpx's transport
        return
    if getattr(HTTP11Connection, "READ_NUM_BYTES", READ_BYTES) < READ_BYTES:
        HTTP11Connection.READ_NUM_BYTES = READ_BYTES


class Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


INFLATE_STEP = 64 * 1024
"""Decoded bytes produced per step of a gzip/deflate answer: what one step may allocate."""

JOIN_BYTES = 64 * 1024
"""Pieces of an answer smaller than this are joined before they are handed on."""

_WBITS = {"gzip": 31, "x-gzip": 31, "deflate": 15}


class _Inflater:
    """One layer of gzip or deflate, decoded a step at a time as the encoded bytes arrive.

    Each step yields at most INFLATE_STEP bytes, so a bomb is counted before it is
    decompressed; the stream ends where it says it ends (:attr:`zlib.Decompress.eof`), and a
    byte after that is refused rather than handed to zlib again (which took it, gave
    nothing and kept it: a loop forever); the encoded bytes may not outgrow the decoded ones
    (:func:`limits.max_encoded`), so a header that never ends or empty blocks without end
    cannot stream for ever while decoding to nothing."""

    def __init__(self, encoding: str, fail: Callable[[str], RegistryError]) -> None:
        self.encoding, self.fail = encoding, fail
        self.d = zlib.decompressobj(_WBITS[encoding])
        self.encoded = self.decoded = 0

    def __call__(self, data: bytes) -> Iterator[bytes]:
        """The decoded bytes of the next ``data`` the peer sent."""
        self.encoded += len(data)
        try:
            yield from self._steps(data)
        except zlib.error as e:
            raise self.fail(f"is corrupt {self.encoding} ({e})") from None
        if self.encoded > limits.max_encoded(self.decoded):
            raise self.fail(
                f"is {self.encoded} bytes of {self.encoding} that decode to {self.decoded}"
                f" (more than {limits.max_encoded(self.decoded)}, MAX_ENCODING_OVERHEAD: no"
                " compressor writes that); aiplat stopped reading there")

    def _steps(self, data: bytes) -> Iterator[bytes]:
        pending = True  # a full step may leave output inside zlib after all input is taken
        while not self.d.eof and (data or pending):
            piece = self.d.decompress(data, INFLATE_STEP)
            data = self.d.unconsumed_tail
            pending = len(piece) == INFLATE_STEP
            self.decoded += len(piece)
            if piece:
                yield piece
        if self.d.eof and (data or self.d.unused_data):
            raise self.fail(f"has bytes after the end of its {self.encoding} stream; aiplat"
                            " decodes one stream and nothing after it")


def _inflater(encoding: str, fail: Callable[[str], RegistryError]) -> _Inflater | None:
    """A step-wise decoder for ``Content-Encoding: encoding`` (None for identity)."""
    if encoding in ("", "identity"):
        return None
    if encoding not in _WBITS:
        raise fail(f"came with Content-Encoding {encoding[:40]!r}; aiplat asks for none and"
                   " decodes only one layer of gzip or deflate")
    return _Inflater(encoding, fail)


class _BoundedStream(httpx.SyncByteStream):
    """An answer's body as aiplat reads it: decoded here step by step, counted while it
    streams, cut at ``limit`` (``cut``: error documents) or refused past it, and — when
    ``seconds`` is set — refused when it has not arrived whole by then (a trickle; checked
    at every step, so a peer whose bytes take long to decode is stopped too)."""

    def __init__(self, inner: Any, inflate: Callable[[bytes], Iterator[bytes]] | None, *,
                 limit: int | None, cut: bool, seconds: float | None,
                 fail: Callable[[str], RegistryError], too_large: str) -> None:
        self.inner, self.inflate, self.limit, self.cut = inner, inflate, limit, cut
        self.seconds, self.fail, self.too_large = seconds, fail, too_large

    def __iter__(self) -> Iterator[bytes]:
        """The bounded pieces; those of an answer read whole (one with a limit) joined up to
        JOIN_BYTES: a peer's one-byte chunks would otherwise each become an object of their
        own in httpx's list (a 4 MiB answer in 4 million objects: 250 MB). Large pieces pass
        uncopied, and a blob's as they come (the caller writes them out, and resumes after
        the last one)."""
        if self.limit is None:
            yield from self._bounded()
            return
        joined = bytearray()
        for piece in self._bounded():
            if not joined and len(piece) >= JOIN_BYTES:
                yield piece
                continue
            joined += piece
            if len(joined) >= JOIN_BYTES:
                yield bytes(joined)
                joined.clear()
        if joined:
            yield bytes(joined)

    def _bounded(self) -> Iterator[bytes]:
        deadline = time.monotonic() + self.seconds if self.seconds else None
        total = 0
        for raw in self.inner:
            for piece in self.inflate(raw) if self.inflate else (raw,):
                total += len(piece)
                if self.limit is not None and total > self.limit:
                    if not self.cut:
                        raise self.fail(self.too_large)
                    yield piece[:len(piece) - (total - self.limit)]
                    return
                yield piece
                self._in_time(deadline)
            self._in_time(deadline)

    def _in_time(self, deadline: float | None) -> None:
        if deadline is not None and time.monotonic() > deadline:
            raise self.fail(f"had not arrived whole after {self.seconds:.0f} s (it"
                            " trickles in); aiplat gave up on it")

    def close(self) -> None:
        self.inner.close()


_T = TypeVar("_T")


class _Waiting:
    """What one request may still spend waiting on the network (MAX_EXCHANGE_SECONDS, or
    less), used up by every connection, TLS handshake and socket read made for it."""

    def __init__(self, seconds: float, why: str) -> None:
        self.seconds, self.why, self.left = seconds, why, seconds

    def wait(self, step: Callable[[float | None], _T], timeout: float | None,
             timed_out: type[Exception]) -> _T:
        """``step(t)``, given no longer than what is left (nor its own ``timeout``)."""
        if self.left <= 0:
            raise _HeldTooLongError(self)
        capped = timeout is None or self.left < timeout
        start = time.monotonic()
        try:
            return step(self.left if capped else timeout)
        except timed_out:
            if capped:
                raise _HeldTooLongError(self) from None
            raise
        finally:
            self.left -= time.monotonic() - start


class _HeldTooLongError(RegistryError):
    """A request's waiting ran out (raised from a socket read, inside httpcore: the
    connection is dropped, not reused)."""

    def __init__(self, waiting: _Waiting) -> None:
        super().__init__(
            f"the registry kept aiplat waiting more than {waiting.seconds:g} s for its answer"
            f" ({waiting.why}; interim (1xx) answers, redirects and their bodies, retries"
            " and a token service's answer all count); aiplat gave up on it")


_WAITING: ContextVar[_Waiting | None] = ContextVar("aiplat_registry_waiting", default=None)
"""The waiting left to the request this thread is making (httpx's sync client connects and
reads in the caller's thread); None outside one."""


def _waited(step: Callable[[float | None], _T], timeout: float | None,
            timed_out: type[Exception]) -> _T:
    """``step(timeout)``, counted against the current request's :class:`_Waiting`, if any
    (none: a blob's body, after its headers)."""
    waiting = _WAITING.get()
    return step(timeout) if waiting is None else waiting.wait(step, timeout, timed_out)


class _WaitingStream(httpcore.NetworkStream):
    """A connection whose reads (and TLS handshake) use up the current request's
    :class:`_Waiting`; writes do not: sending aiplat's own upload is not waiting."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return _waited(lambda t: self.inner.read(max_bytes, t), timeout,
                       httpcore.ReadTimeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, timeout)

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _WaitingStream(_waited(
            lambda t: self.inner.start_tls(ssl_context, server_hostname, t), timeout,
            httpcore.ConnectTimeout))

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _WaitingBackend(httpcore.NetworkBackend):
    """httpcore's network backend, its connections wrapped in :class:`_WaitingStream`."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self.inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        return _WaitingStream(_waited(
            lambda t: self.inner.connect_tcp(host, port, t, local_address, socket_options),
            timeout, httpcore.ConnectTimeout))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _WaitingStream(_waited(
            lambda t: self.inner.connect_unix_socket(path, t, socket_options), timeout,
            httpcore.ConnectTimeout))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def _count_waiting(client: httpx.Client) -> None:
    """Put the connections of ``client``'s transports (its own, and those httpx made for
    proxies from the environment) behind :class:`_WaitingBackend`.

    The wait for an answer happens inside httpcore, which reads interim answers in a loop of
    its own: only the socket reads see them. httpx 0.28 has no public way to give its
    transport a network backend (encode/httpx#3180), so the pool's is reached by its
    attribute; httpx is pinned, and the tests (test_artifacts_exchange.py) fail if this
    stops wrapping. An injected transport without a pool (a test's MockTransport) is left
    as it is."""
    for transport in (client._transport, *client._mounts.values()):
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if isinstance(backend, httpcore.NetworkBackend) \
                and not isinstance(backend, _WaitingBackend):
            pool._network_backend = _WaitingBackend(backend)  # type: ignore[union-attr]


Resolver = Callable[[str], list[str]]


def registry_host(registry: str) -> str:
    """``host[:port]`` or ``[v6][:port]`` -> the bare host, lower-case (as httpx's URL.host)."""
    return bare_host(registry)


def resolve_host(host: str) -> list[str]:
    """Every address ``host`` resolves to (empty when it does not resolve)."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    return [str(info[4][0]) for info in infos]


def _is_loopback_address(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def is_loopback(registry: str, resolve: Resolver = resolve_host) -> bool:
    """Whether ``registry`` (``host[:port]``) is this machine: an IP literal that is
    loopback, or a name that resolves, and resolves only, to loopback addresses."""
    host = registry_host(registry)
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    addresses = resolve(host)
    return bool(addresses) and all(_is_loopback_address(a) for a in addresses)


def is_loopback_address(registry: str) -> bool:
    """Whether ``registry`` is this machine by an address no DNS answer changes: a loopback
    IP literal, or ``localhost`` (the hosts file's); where credentials may go in the clear."""
    host = registry_host(registry)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    backoff: float = 0.2
    max_backoff: float = 8.0

    def delay(self, attempt: int) -> float:
        return float(min(self.max_backoff, self.backoff * (2 ** attempt)))


class RegistryClient:
    """One registry; safe to share between threads (httpx.Client is)."""

    def __init__(
        self,
        registry: str,
        *,
        credentials: Credentials | None = None,
        transport: httpx.BaseTransport | None = None,
        plain_http: bool | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 60.0,
        max_connections: int = 16,
        sleep: Callable[[float], None] = time.sleep,
        resolve: Resolver = resolve_host,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = parse_registry(registry)
        self.loopback = is_loopback(registry, resolve)
        plain = self.loopback if plain_http is None else plain_http
        self.base = f"{'http' if plain else 'https'}://{registry}"
        self.retry = retry or RetryPolicy()
        self.sleep, self.clock = sleep, clock
        self.timeout = timeout
        # Said once, where the caller can show it: credentials others can read.
        self.warnings = [credentials.warning] if credentials and credentials.warning else []
        read_larger_chunks()
        try:
            self.http = httpx.Client(
                base_url=self.base,
                auth=RegistryAuth(credentials, registry, is_loopback_address(registry),
                                  "http" if plain else "https"),
                transport=transport,
                timeout=httpx.Timeout(timeout, connect=10.0),
                limits=httpx.Limits(max_connections=max_connections,
                                    max_keepalive_connections=max_connections),
                follow_redirects=True,
                max_redirects=limits.MAX_REDIRECTS,
                # No compression asked for: blobs are hashed as they arrive, and an answer
                # compressed anyway is decoded under its bound (_bound_answer).
                headers={"User-Agent": "aiplat", "Accept-Encoding": "identity"},
                event_hooks={"response": [self._bound_answer]},
            )
            self.http.build_request("GET", "/v2/")
            _count_waiting(self.http)
        except (httpx.InvalidURL, UnicodeError, ValueError) as e:
            raise ArtifactInputError(f"{registry!r} is not a registry host httpx can use"
                                     f" ({e}); write HOST[:PORT] in ASCII (an IDN as its"
                                     " xn-- form)") from None

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ bounded answers

    def _bound_answer(self, response: httpx.Response) -> None:
        """Put every answer's body (redirects, 401s and token answers included: httpx calls
        this hook for each) behind its bound before anything reads it."""
        request = response.request
        bound: Bound = request.extensions.get(BOUND) or limits.METADATA
        where = f"{request.method} {request.url.copy_with(query=None)}"

        def fail(problem: str) -> RegistryError:
            return RegistryError(
                f"{where}: the {bound.what} (registry {self.registry}) {problem} (fix:"
                f" check that {self.base} is the registry you meant and that nothing between"
                " (a proxy) rewrites its answers)")

        ok = 200 <= response.status_code < 300
        encoding = response.headers.get("content-encoding", "").strip().lower()
        inflate = _inflater(encoding, fail)
        response.headers.pop("content-encoding", None)  # decoded here, not again by httpx
        limit = bound.limit if ok else limits.MAX_ERROR_BYTES
        response.stream = _BoundedStream(
            response.stream, inflate, limit=limit, cut=not ok,
            seconds=self.timeout if limit is not None else None, fail=fail,
            too_large=f"is larger than {bound.describe()}; aiplat stopped reading there")

    # ------------------------------------------------------------------ requests with retries

    def _fail(self, what: str, attempts: int, cause: str, status: int | None) -> RegistryError:
        return RegistryError(
            f"{what} on {self.base} failed after {attempts} attempt(s): {cause} (fix: check"
            f" the registry answers (curl {self.base}/v2/), the reference and your credentials)",
            status,
        )

    @contextmanager
    def _waiting(self, wait: tuple[float, str] | None = None) -> Iterator[None]:
        """Count the network waits made inside against one request's :class:`_Waiting`:
        ``wait`` (seconds, and the constant that says so), MAX_EXCHANGE_SECONDS if None."""
        seconds, why = wait or (limits.MAX_EXCHANGE_SECONDS, "MAX_EXCHANGE_SECONDS")
        token = _WAITING.set(_Waiting(seconds, why))
        try:
            yield
        finally:
            _WAITING.reset(token)

    def _held(self, what: str, e: _HeldTooLongError) -> RegistryError:
        return RegistryError(f"{what} on {self.base}: {e} (fix: check that {self.base} is"
                             " the registry you meant and that nothing between (a proxy)"
                             " holds its answers)")

    def request(self, method: str, path: str, *, ok: tuple[int, ...] = (200,),
                bound: Bound = limits.METADATA, wait: tuple[float, str] | None = None,
                **kwargs: object) -> httpx.Response:
        """Send with retries; return a response whose status is in ``ok``, its body read
        within ``bound``, all attempts waiting for the registry no longer than ``wait``
        (seconds, and the constant that says so; MAX_EXCHANGE_SECONDS by default)."""
        what = f"{method} {path.split('?', 1)[0]}"
        try:
            with self._waiting(wait):
                return self._attempts(what, method, path, ok=ok, bound=bound, kwargs=kwargs)
        except _HeldTooLongError as e:  # not retried: the registry held this request long enough
            raise self._held(what, e) from None

    def _attempts(self, what: str, method: str, path: str, *, ok: tuple[int, ...],
                  bound: Bound, kwargs: dict[str, object]) -> httpx.Response:
        last, status = "", None
        for attempt in range(self.retry.attempts):
            if attempt:
                self.sleep(self.retry.delay(attempt - 1))
            try:
                r = self.http.request(method, path, extensions={BOUND: bound},
                                      **kwargs)  # type: ignore[arg-type]
            except httpx.TransportError as e:
                last, status = f"{e.__class__.__name__}: {e}", None
                continue
            except (httpx.HTTPError, httpx.InvalidURL) as e:
                # A redirect loop, or a URL the registry named (an upload Location) that is
                # none: asking again gets the same answer.
                raise self._fail(what, attempt + 1, _problem(e), None) from None
            if r.status_code in ok:
                return r
            status = r.status_code
            last = f"HTTP {r.status_code} {_error_text(r)}"
            if r.status_code not in RETRY_STATUSES:
                raise self._fail(what, attempt + 1, last, status)
        raise self._fail(what, self.retry.attempts, last, status)

    # ------------------------------------------------------------------ API

    def ping(self) -> None:
        self.request("GET", "/v2/")

    def head_manifest(self, repo: str, ident: str) -> str | None:
        """The sha256 digest the registry claims for ``ident`` (unchecked: the manifest's
        bytes are checked against it when fetched); None when it has none, or claims
        something that is not a sha256 digest."""
        r = self.request("HEAD", f"/v2/{repo}/manifests/{ident}", ok=(200, 404),
                         headers={"Accept": MANIFEST_ACCEPT})
        if r.status_code == 404:
            return None
        claimed = r.headers.get("docker-content-digest") or ""
        return claimed if _SHA256_RE.fullmatch(claimed) else None

    def get_manifest(self, repo: str, ident: str, bound: Bound = limits.MANIFEST,
                     ) -> tuple[bytes, str, str]:
        """(body, sha256 digest, media type), within ``bound`` (a model's manifest:
        MAX_MANIFEST_BYTES); the digest is computed, and a pinned (sha256 or sha512) or
        claimed digest checked against the bytes, never trusted."""
        r = self.request("GET", f"/v2/{repo}/manifests/{ident}", ok=(200, 404),
                         bound=bound, headers={"Accept": MANIFEST_ACCEPT})
        if r.status_code == 404:
            raise RegistryError(
                f"{self.registry}/{repo}: no manifest {ident!r}; list the tags with"
                f" `aiplat model tags {self.registry}/{repo}`", 404)
        body = r.content
        digest = sha256_digest(body)
        claimed = r.headers.get("docker-content-digest") or ""
        if _DIGEST_RE.fullmatch(ident) and not matches(body, ident):
            raise RegistryError(f"{self.registry}/{repo}: manifest {ident} came back with "
                                f"digest {digest}; the registry served other content")
        if _DIGEST_RE.fullmatch(claimed) and not matches(body, claimed):
            raise RegistryError(f"{self.registry}/{repo}:{ident}: Docker-Content-Digest "
                                f"{claimed} does not match the body ({digest})")
        media = r.headers.get("content-type", OCI_MANIFEST).split(";")[0].strip()
        return body, digest, media

    def put_manifest(self, repo: str, ref: str, body: bytes, media_type: str = OCI_MANIFEST,
                     ) -> str:
        r = self.request("PUT", f"/v2/{repo}/manifests/{ref}", ok=(201,), content=body,
                         headers={"Content-Type": media_type})
        digest = sha256_digest(body)
        claimed = r.headers.get("docker-content-digest")
        if claimed and claimed != digest:
            raise RegistryError(f"PUT manifest: registry stored {claimed}, expected {digest}")
        return digest

    def has_blob(self, repo: str, digest: str) -> bool:
        r = self.request("HEAD", f"/v2/{repo}/blobs/{digest}", ok=(200, 404))
        return r.status_code == 200

    def start_upload(self, repo: str, mount: str | None = None,
                     mount_from: str | None = None) -> tuple[bool, str]:
        """POST an upload; (True, '') when a cross-repository mount succeeded, else
        (False, location of the upload session)."""
        params = {"mount": mount, "from": mount_from} if mount and mount_from else None
        r = self.request("POST", f"/v2/{repo}/blobs/uploads/", ok=(201, 202), params=params)
        if r.status_code == 201:
            return True, ""
        location = r.headers.get("location")
        if not location:
            raise RegistryError(f"POST /v2/{repo}/blobs/uploads/: no Location header")
        return False, location

    def mount_blob(self, repo: str, digest: str, from_repo: str) -> bool:
        mounted, location = self.start_upload(repo, digest, from_repo)
        if not mounted:
            # Not mountable (unknown there): drop the session the registry opened instead,
            # as a courtesy: a failure here changes nothing for the push.
            with contextlib.suppress(httpx.HTTPError, httpx.InvalidURL, RegistryError), \
                    self._waiting():
                self.http.delete(location)
        return mounted

    def upload_blob(self, repo: str, digest: str, size: int, source: Readable,
                    chunk_size: int = DEFAULT_CHUNK) -> None:
        """Upload ``size`` bytes from ``source``: one PUT when small, PATCH chunks when not."""
        check_digest(digest)
        _, location = self.start_upload(repo)
        if size <= chunk_size:
            data = source.read(size)
            self.request("PUT", _with_digest(location, digest), ok=(201,), content=data,
                         headers={"Content-Type": "application/octet-stream"})
            return
        offset = 0
        while offset < size:
            data = source.read(min(chunk_size, size - offset))
            if not data:
                raise RegistryError(f"upload of {digest}: source ended at byte {offset} of {size}")
            end = offset + len(data) - 1
            # A retried PATCH at the same range is safe: the server rejects a wrong offset
            # with 416, which surfaces as an error rather than silently corrupting the blob.
            r = self.request("PATCH", location, ok=(202,), content=data, headers={
                "Content-Type": "application/octet-stream",
                "Content-Range": f"{offset}-{end}", "Content-Length": str(len(data))})
            location = r.headers.get("location", location)
            offset = end + 1
        self.request("PUT", _with_digest(location, digest), ok=(201,),
                     headers={"Content-Length": "0"})

    def push_bytes(self, repo: str, data: bytes) -> str:
        import io

        digest = sha256_digest(data)
        if not self.has_blob(repo, digest):
            self.upload_blob(repo, digest, len(data), io.BytesIO(data))
        return digest

    def get_blob_bytes(self, repo: str, digest: str,
                       bound: Bound = limits.SMALL_BLOB) -> bytes:
        """A small blob (config, signature payload) read within ``bound`` while it streams,
        verified against its digest."""
        r = self.request("GET", f"/v2/{repo}/blobs/{check_digest(digest)}", bound=bound)
        if not matches(r.content, digest):
            raise DigestMismatchError(f"{self.registry}/{repo}: blob {digest} does not match its "
                                 "digest; the registry's copy is corrupt (fix: push it again)")
        return r.content

    @contextmanager
    def stream_blob(self, repo: str, digest: str, offset: int = 0) -> Iterator[httpx.Response]:
        """One streamed GET (no retries here; the caller resumes). Status 200 or 206. The
        answer's headers (redirects and interim answers included) come within
        MAX_EXCHANGE_SECONDS; the body is not bounded here: the caller stops at the
        descriptor's size."""
        headers = {"Range": f"bytes={offset}-"} if offset else {}
        what = f"GET {repo}/blobs/{digest}"
        try:
            with contextlib.ExitStack() as stack:
                with self._waiting():
                    r = stack.enter_context(self.http.stream(
                        "GET", f"/v2/{repo}/blobs/{digest}", headers=headers,
                        extensions={BOUND: limits.BLOB}))
                    if r.status_code not in (200, 206):
                        r.read()
                        raise RegistryError(f"{what}: HTTP {r.status_code} {_error_text(r)}",
                                            r.status_code)
                yield r
        except httpx.TransportError:
            raise  # the caller resumes
        except _HeldTooLongError as e:
            raise self._held(what, e) from None
        except (httpx.HTTPError, httpx.InvalidURL) as e:  # a redirect loop: not worth a retry
            raise RegistryError(f"{what} on {self.base}: {_problem(e)}") from None

    def tags(self, repo: str) -> list[str]:
        names = self._listing(f"/v2/{repo}/tags/list?n=1000", "tags", f"tags of {repo}",
                              missing=f"{self.registry}/{repo}: no such repository")
        return sorted(names)

    def catalog(self) -> list[str]:
        return sorted(self._listing("/v2/_catalog?n=1000", "repositories", "catalog"))

    def _listing(self, first: str, key: str, what: str, missing: str = "") -> list[str]:
        """Every name of a paged listing. Pages are followed through ``Link`` on this
        registry only (same scheme, host and port: a page elsewhere could be anyone's), at
        most MAX_PAGES of them, MAX_LISTING_BYTES and MAX_LISTING_SECONDS together; a page
        named twice is a loop and refused."""
        origin = self.http.base_url
        url = origin.join(first)
        seen: set[str] = set()
        out: list[str] = []
        total = 0
        deadline = self.clock() + limits.MAX_LISTING_SECONDS
        for page in range(limits.MAX_PAGES):
            if page and self.clock() > deadline:
                raise self._listing_error(
                    what, f"its {page} pages took more than {limits.MAX_LISTING_SECONDS:.0f} s"
                    " (MAX_LISTING_SECONDS) and it has more")
            seen.add(str(url))
            # A page waits no longer than the listing has left.
            left = max(0.0, deadline - self.clock())
            wait = (left, f"what was left of MAX_LISTING_SECONDS"
                          f" ({limits.MAX_LISTING_SECONDS:.0f} s a listing)") \
                if left < limits.MAX_EXCHANGE_SECONDS else None
            r = self.request("GET", str(url), ok=(200, 404) if missing else (200,),
                             bound=limits.LISTING_PAGE, wait=wait)
            if r.status_code == 404:
                raise RegistryError(missing, 404)
            total += len(r.content)
            if total > limits.MAX_LISTING_BYTES:
                raise self._listing_error(what, f"its pages hold more than"
                                          f" {limits.MAX_LISTING_BYTES // limits.MiB} MiB"
                                          " (MAX_LISTING_BYTES)")
            out += _names(_json_object(r, f"{self.registry}: the {what}"), key,
                          f"{self.registry}: the {what}")
            link = _next_link(r)
            if link is None:
                return out
            try:
                url = r.url.join(link)
            except httpx.InvalidURL:
                raise self._listing_error(what, f"its Link {link[:100]!r} is not a URL") \
                    from None
            if (url.scheme, url.host, url.port) != (origin.scheme, origin.host, origin.port):
                raise self._listing_error(
                    what, f"its Link points at {url.scheme}://{url.netloc.decode()[:100]},"
                    " not the registry; aiplat follows pages on the registry itself only")
            if str(url) in seen:
                raise self._listing_error(what, "its Link points back at a page already read"
                                          " (a loop)")
        raise self._listing_error(what, f"it has more than {limits.MAX_PAGES} pages"
                                  " (MAX_PAGES)")

    def _listing_error(self, what: str, problem: str) -> RegistryError:
        return RegistryError(f"{self.registry}: the {what} stops here: {problem} (fix:"
                             f" check that {self.base} is the registry you meant)")

    def referrers(self, repo: str, digest: str, artifact_type: str | tuple[str, ...],
                  ) -> list[dict[str, object]] | None:
        """Referrers of ``digest`` of ``artifact_type`` (one, or any of several), each digest
        once; ``None`` when the registry does not serve the referrers API."""
        types = (artifact_type,) if isinstance(artifact_type, str) else artifact_type
        params = {"artifactType": types[0]} if len(types) == 1 else None
        r = self.request("GET", f"/v2/{repo}/referrers/{digest}", ok=(200, 404),
                         bound=limits.REFERRERS, params=params)
        if r.status_code == 404 or OCI_INDEX not in r.headers.get("content-type", ""):
            return None
        where = f"{self.registry}/{repo}: the referrers of {digest[:19]}"
        manifests = _json_object(r, where).get("manifests") or []
        if not isinstance(manifests, list):
            raise RegistryError(f"{where}: 'manifests' is not a list; the registry's answer"
                                " is not an OCI image index")
        out: dict[str, dict[str, object]] = {}
        for m in manifests:
            d = m.get("digest") if isinstance(m, dict) else None
            if isinstance(d, str) and _DIGEST_RE.fullmatch(d) and d not in out \
                    and m.get("artifactType") in types:
                out[d] = m  # one listed 300 times is one referrer
        return list(out.values())


def _problem(e: httpx.HTTPError | httpx.InvalidURL) -> str:
    """An httpx error that no retry changes, for a message."""
    if isinstance(e, httpx.TooManyRedirects):
        return (f"TooManyRedirects: more than {limits.MAX_REDIRECTS} redirects"
                " (MAX_REDIRECTS; a registry redirects a blob once, to its storage)")
    return f"{e.__class__.__name__}: {e}"


_SHA256_RE = re.compile(r"sha256:[a-f0-9]{64}")
_DIGEST_RE = re.compile(r"sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128}")


def _json_object(r: httpx.Response, where: str) -> dict[str, Any]:
    """The JSON object an answer holds, or a RegistryError naming ``where``."""
    try:
        doc = limits.peer_json(r.content)
    except ValueError as e:
        raise RegistryError(f"{where} is not a JSON object: {shown(str(e), 100)}; check that"
                            " the registry speaks the OCI distribution API") from None
    if not isinstance(doc, dict):
        raise RegistryError(f"{where} is not a JSON object; check that the registry speaks"
                            " the OCI distribution API")
    return doc


def _names(doc: dict[str, Any], key: str, where: str) -> list[str]:
    """The tags or repositories of one page, each checked against the distribution spec's
    grammar: a name with a newline or a terminal escape in it is not printed to anyone."""
    names = doc.get(key) or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise RegistryError(f"{where}: {key!r} is not a list of names; check that the"
                            " registry speaks the OCI distribution API")
    valid, noun = (is_tag, "tag") if key == "tags" else (is_repository, "repository")
    bad = next((n for n in names if not valid(n)), None)
    if bad is not None:
        raise RegistryError(f"{where}: {bad[:80]!r} is not a {noun} name by the OCI"
                            " distribution spec; check that the registry"
                            " speaks the OCI distribution API")
    return names


def _with_digest(location: str, digest: str) -> str:
    # The upload URL carries the registry's own state in its query: merge, never replace.
    try:
        return str(httpx.URL(location).copy_merge_params({"digest": digest}))
    except httpx.InvalidURL:
        raise RegistryError(f"the registry named the upload {location[:100]!r}, which is not"
                            " a URL; check the registry (or a proxy before it)") from None


def _error_text(r: httpx.Response) -> str:
    """The registry's error codes and messages (escaped: they are printed to a terminal)."""
    try:
        errors = limits.peer_json(r.content).get("errors") or []
        return shown("; ".join(f"{e.get('code')}: {e.get('message')}" for e in errors), 300)
    except (ValueError, AttributeError, TypeError, httpx.ResponseNotRead):
        return r.reason_phrase


_LINK_RE = re.compile(r'<([^>]*)>\s*;[^,<]*\brel="?next"?', re.ASCII)


def _next_link(r: httpx.Response) -> str | None:
    """The ``rel="next"`` target of a ``Link`` header (RFC 8288; one of several links)."""
    m = _LINK_RE.search(r.headers.get("link", ""))
    return m.group(1).strip() if m else None


def open_client(registry: str, *, plain_http: bool | None = None, concurrency: int = 4,
                transport: httpx.BaseTransport | None = None) -> RegistryClient:
    """A client with the credentials the docker/podman auth files hold for ``registry``."""
    from aiplat.artifacts.auth import load_credentials

    return RegistryClient(registry, credentials=load_credentials(registry),
                          plain_http=plain_http, transport=transport,
                          max_connections=max(4, concurrency + 2))
