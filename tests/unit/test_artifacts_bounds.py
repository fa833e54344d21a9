"""Everything a registry or token service sends is read with a bound (issue #38).

Hostile peers, on a real loopback socket where the transport matters (headers, trickles,
gzip) and behind ``httpx.MockTransport`` with streaming bodies elsewhere. Each test failed
before its fix: a 200 MiB manifest and a 256 MiB gzip bomb were read whole, an error
document too, a signature payload and a token answer were buffered before any check (or
never checked), a slow token server was waited for byte by byte, ``Link`` pages were
followed forever (a self-link looped), a referrer listed 300 times was fetched 300 times
and 150 of them were all fetched, and answers of the wrong JSON shape ended in tracebacks.
The huge-header test held before (httpcore caps headers at 100 KiB); it guards that. The
last section is attacks of the same kinds tried afterwards, each of which got through
(a redirect loop, an upload Location or a token realm that is no HTTP URL: tracebacks; a
``Link`` listing ``prev`` before ``next`` was followed backwards; a tag or repository name
with a terminal escape or a newline in it was printed as listed, and so were a registry's
error messages and a signature's claims in the errors that quote them).
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import random
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from artifacts_fakes import Endless, FakeRegistry, LoopbackServer, answer

from aiplat.artifacts import cosign
from aiplat.artifacts.client import RegistryClient, RetryPolicy
from aiplat.artifacts.errors import ArtifactError, RegistryError, SignatureError
from aiplat.artifacts.limits import MAX_LISTING_SECONDS, MAX_PAGES, MAX_SIGNATURES, MiB
from aiplat.artifacts.modelpack import OCI_MANIFEST, Descriptor, Manifest
from aiplat.artifacts.reference import sha256_digest, signature_tag
from aiplat.artifacts.signatures import find_signatures
from aiplat.artifacts.signing import Signature, check_signature

HOST = "reg.test:5000"
JSON = {"Content-Type": "application/json"}


def client(handler: Callable[[httpx.Request], httpx.Response], **kw: Any) -> RegistryClient:
    return RegistryClient(HOST, transport=httpx.MockTransport(handler),
                          retry=RetryPolicy(attempts=1, backoff=0), **kw)


def loopback(srv: LoopbackServer, timeout: float = 60.0) -> RegistryClient:
    return RegistryClient(srv.host, retry=RetryPolicy(attempts=1, backoff=0), timeout=timeout)


# ---------------------------------------------------------------------------- sizes


def test_a_200_mib_manifest_is_refused_at_4_mib_while_it_streams() -> None:
    sent = [0]

    def respond(_m: str, _p: str, _h: dict[str, str], conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: " + OCI_MANIFEST.encode()
                     + b"\r\nContent-Length: %d\r\n\r\n" % (200 * MiB))
        for _ in range(200):
            conn.sendall(b" " * MiB)
            sent[0] += MiB

    with LoopbackServer(respond) as srv:
        with pytest.raises(RegistryError) as info:
            loopback(srv).get_manifest("m", "v1")
        msg = str(info.value)
        assert "manifest" in msg and "4 MiB" in msg and "MAX_MANIFEST_BYTES" in msg
        assert srv.host in msg and "(fix: " in msg
    assert sent[0] < 64 * MiB  # the client hung up: the rest was never sent


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    """261 KB of gzip that decodes to 256 MiB of zeros."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    zero = bytes(MiB)
    return b"".join([*(z.compress(zero) for _ in range(256)), z.flush()])


def test_a_gzip_bomb_is_refused_at_the_bound_without_being_decompressed(
        gzip_bomb: bytes) -> None:
    def respond(_m: str, _p: str, _h: dict[str, str], conn: socket.socket) -> None:
        answer(conn, "200 OK", {"Content-Type": OCI_MANIFEST, "Content-Encoding": "gzip"},
               gzip_bomb)

    with LoopbackServer(respond) as srv:
        c = loopback(srv)
        tracemalloc.start()
        try:
            with pytest.raises(RegistryError, match=r"larger than 4 MiB"):
                c.get_manifest("m", "v1")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert srv.requests[0][2].get("accept-encoding") == "identity"
    assert len(gzip_bomb) < 300_000 and peak < 32 * MiB, peak


def test_an_error_document_is_cut_not_read_whole() -> None:
    body = Endless(b"e" * 65536, 100 * MiB)
    c = client(lambda r: httpx.Response(500, stream=body))
    with pytest.raises(RegistryError, match="HTTP 500"):
        c.ping()
    assert body.sent <= 8 * 1024 + 65536


@pytest.mark.parametrize("encoding", ["gzip, gzip", "br", "compress"])
def test_an_encoding_aiplat_cannot_bound_is_refused(encoding: str) -> None:
    c = client(lambda r: httpx.Response(200, stream=Endless(b"x" * 1024, 4096),
                                        headers={"Content-Encoding": encoding}))
    with pytest.raises(RegistryError, match="Content-Encoding"):
        c.get_manifest("m", "v1")


def test_a_signature_payload_is_refused_at_1_mib_while_it_streams() -> None:
    fake = FakeRegistry()
    model = json.dumps({"schemaVersion": 2, "config": {
        "mediaType": "x", "digest": sha256_digest(b"{}"), "size": 2}}).encode()
    digest = sha256_digest(model)
    liar = sha256_digest(b"a small payload")
    sig = Manifest(Descriptor(cosign.OCI_CONFIG, sha256_digest(b"{}"), 2), (
        Descriptor(cosign.SIMPLESIGNING, liar, 250,  # says 250 bytes, streams 50 MiB
                   {cosign.SIGNATURE_ANNOTATION: base64.b64encode(b"sig").decode()}),))
    fake.manifests["m"] = {"v1": model, digest: model, signature_tag(digest): sig.to_bytes()}
    payload = Endless(b"p" * 65536, 50 * MiB)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(f"/blobs/{liar}"):
            return httpx.Response(200, stream=payload)
        return fake.handle(request)

    with pytest.raises(RegistryError) as info:
        find_signatures(client(handler), "m", digest)
    assert "signature payload" in str(info.value) and "1 MiB" in str(info.value)
    assert payload.sent <= MiB + 2 * 65536


# ---------------------------------------------------------------------------- token services


def _bearer_registry(token_answer: Callable[[], httpx.Response],
                     ) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/token":
            return token_answer()
        if request.headers.get("authorization") == "Bearer T0K":
            return httpx.Response(200, json={"tags": ["v1"]})
        return httpx.Response(401, headers={
            "WWW-Authenticate": f'Bearer realm="https://{HOST}/token",service="reg"'})
    return handler


def test_a_token_answer_is_read_within_128_kib() -> None:
    body = Endless(b"a" * 65536, 64 * MiB, head=b'{"token": "')
    c = client(_bearer_registry(lambda: httpx.Response(200, stream=body)))
    with pytest.raises(RegistryError) as info:
        c.tags("a/m")
    assert "token service's answer" in str(info.value) and "128 KiB" in str(info.value)
    assert body.sent <= 128 * 1024 + 2 * 65536


@pytest.mark.parametrize("doc", [[1, 2], {"token": 5}, {"token": "a b"}, {"token": ""},
                                 {"access_token": "x\r\nInjected: 1"}])
def test_a_token_answer_of_the_wrong_shape_is_a_clean_error(doc: object) -> None:
    c = client(_bearer_registry(lambda: httpx.Response(200, json=doc)))
    with pytest.raises(RegistryError, match="sent no usable token"):
        c.tags("a/m")


def test_a_token_service_that_trickles_is_given_up_on() -> None:
    token = json.dumps({"token": "T" * 200}).encode()

    def respond(_m: str, path: str, headers: dict[str, str], conn: socket.socket) -> None:
        if path.startswith("/token"):
            conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n"
                         b"Content-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(token))
            for i in range(len(token)):  # a byte every 50 ms: 10 s for the whole answer
                conn.sendall(token[i:i + 1])
                time.sleep(0.05)
        elif headers.get("authorization", "").startswith("Bearer "):
            answer(conn, "200 OK", JSON, b'{"tags": ["v1"]}')
        else:
            answer(conn, "401 Unauthorized", {"WWW-Authenticate": (
                f'Bearer realm="http://{srv.host}/token",service="reg"')}, b"")

    with LoopbackServer(respond) as srv:
        t0 = time.monotonic()
        with pytest.raises(RegistryError, match="trickles"):
            loopback(srv, timeout=0.5).tags("a/m")
        assert time.monotonic() - t0 < 5


def test_huge_headers_are_a_clean_error() -> None:
    def respond(_m: str, _p: str, _h: dict[str, str], conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\n")
        for i in range(10_000):  # 10 MB of headers
            conn.sendall(b"X-Junk-%d: %s\r\n" % (i, b"j" * 1000))

    with LoopbackServer(respond) as srv, pytest.raises(RegistryError, match="after 1 attempt"):
        loopback(srv).ping()


# ---------------------------------------------------------------------------- listings


def _pages(next_of: Callable[[httpx.URL], str | None], names: list[str] | None = None,
           ) -> tuple[list[httpx.Request], RegistryClient]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) > 3 * MAX_PAGES:  # a guard for the code before the fix: it never ended
            return httpx.Response(500)
        link = next_of(request.url)
        headers = {"Link": f'<{link}>; rel="next"'} if link else {}
        return httpx.Response(200, json={"name": "a/m", "tags": names or ["v1"],
                                         "repositories": names or ["a/m"]}, headers=headers)

    return seen, client(handler)


@pytest.mark.parametrize(("name", "next_of", "words"), [
    ("self-link", str, "already read"),
    ("two-page-cycle", lambda url: "/v2/a/m/tags/list?n=1000&last=b"
     if "last=b" not in str(url) else "/v2/a/m/tags/list?n=1000", "already read"),
    ("endless", lambda url: f"/v2/a/m/tags/list?n=1&last={url.params.get('last', '0')}0",
     f"more than {MAX_PAGES} pages"),
    ("another-host", lambda url: "https://evil.test/v2/a/m/tags/list?last=x", "evil.test"),
    ("another-scheme", lambda url: f"http://{HOST}/v2/a/m/tags/list?last=x", "http://"),
    ("another-port", lambda url: "https://reg.test:5001/v2/a/m/tags/list?last=x", "5001"),
    ("not-a-url", lambda url: "http://[::1/x", "not a URL"),
])
def test_tags_pages_stop_at_loops_foreign_links_and_the_page_cap(
        name: str, next_of: Callable[[httpx.URL], str], words: str) -> None:
    seen, c = _pages(next_of)
    with pytest.raises(RegistryError) as info:
        c.tags("a/m")
    assert words in str(info.value) and "(fix: " in str(info.value), info.value
    assert len(seen) <= MAX_PAGES
    assert all(r.url.host == "reg.test" and r.url.port == 5000 and r.url.scheme == "https"
               for r in seen)  # never a request off the registry


@pytest.mark.parametrize("listing", ["tags", "catalog"])
def test_a_listing_has_a_deadline_not_only_a_page_count(listing: str) -> None:
    """The red team's link_trickle: each page arrived within the client's timeout (60 s), so
    MAX_PAGES of them could take 16 hours; a listing now ends at MAX_LISTING_SECONDS."""
    now = [0.0]

    def slow(request: httpx.Request) -> httpx.Response:
        now[0] += 50.0  # each page takes 50 s to arrive, under the timeout of one answer
        last = request.url.params.get("last", "0")
        return httpx.Response(200, json={"tags": ["v1"], "repositories": ["a/m"]}, headers={
            "Link": f'</v2/a/m/tags/list?n=1&last={last}0>; rel="next"'})

    c = client(slow, clock=lambda: now[0])
    with pytest.raises(RegistryError) as info:
        c.tags("a/m") if listing == "tags" else c.catalog()
    msg = str(info.value)
    assert f"{MAX_LISTING_SECONDS:.0f} s (MAX_LISTING_SECONDS)" in msg and "(fix: " in msg, msg
    assert now[0] <= MAX_LISTING_SECONDS + 50


def test_catalog_pages_stop_at_a_self_link_too() -> None:
    _, c = _pages(str)
    with pytest.raises(RegistryError, match="already read"):
        c.catalog()


def test_pages_within_the_caps_are_all_read() -> None:
    _, c = _pages(lambda url: None if "last=c" in str(url) else
                  f"/v2/a/m/tags/list?n=1&last={'c' if 'last=b' in str(url) else 'b'}")
    assert c.tags("a/m") == ["v1", "v1", "v1"]


@pytest.mark.parametrize("doc", [[], {"tags": "v1"}, {"tags": [1, 2]}, "text"])
def test_a_tags_answer_of_the_wrong_shape_is_a_clean_error(doc: object) -> None:
    c = client(lambda r: httpx.Response(200, json=doc))
    with pytest.raises(RegistryError, match="OCI distribution API"):
        c.tags("a/m")


# ---------------------------------------------------------------------------- referrers


def _signed_on_a_referrers_registry(listed: list[dict[str, object]] | None = None,
                                    ) -> tuple[FakeRegistry, str, str]:
    """A model and one signature manifest (under the tag, and as a referrer)."""
    fake = FakeRegistry()
    model = json.dumps({"schemaVersion": 2, "config": {
        "mediaType": "x", "digest": sha256_digest(b"{}"), "size": 2}}).encode()
    digest = sha256_digest(model)
    payload = cosign.payload(f"{HOST}/m", digest)
    fake.blobs[sha256_digest(payload)] = payload
    layer = Descriptor(cosign.SIMPLESIGNING, sha256_digest(payload), len(payload),
                       {cosign.SIGNATURE_ANNOTATION: base64.b64encode(b"s").decode()})
    sig = Manifest(Descriptor(cosign.OCI_CONFIG, sha256_digest(b"{}"), 2), (layer,) * 300)
    body = sig.to_bytes()
    sig_digest = sha256_digest(body)
    fake.manifests["m"] = {"v1": model, digest: model, sig_digest: body}
    ref = {"mediaType": OCI_MANIFEST, "digest": sig_digest, "size": len(body),
           "artifactType": cosign.REFERRER_TYPE}
    fake.referrers = {digest: listed if listed is not None else [ref] * 300}
    return fake, digest, sig_digest


def test_a_referrer_listed_300_times_is_fetched_once_and_its_payload_once() -> None:
    fake, digest, sig_digest = _signed_on_a_referrers_registry()
    sigs = find_signatures(client(fake.handle), "m", digest)
    assert len(sigs) == 1
    gets = [p for m, p, _ in fake.log if m == "GET"]
    assert gets.count(f"/v2/m/manifests/{sig_digest}") == 1
    assert len(fake.blob_gets(sigs and sha256_digest(sigs[0].payload))) == 1


def test_more_referrers_than_cosign_allows_are_refused_before_any_is_fetched() -> None:
    many = [{"mediaType": OCI_MANIFEST, "digest": sha256_digest(b"%d" % i), "size": 10,
             "artifactType": cosign.REFERRER_TYPE} for i in range(MAX_SIGNATURES + 50)]
    fake, digest, _ = _signed_on_a_referrers_registry(many)
    with pytest.raises(SignatureError) as info:
        find_signatures(client(fake.handle), "m", digest)
    assert f"{MAX_SIGNATURES + 50} signature manifests" in str(info.value)
    assert "MAX_SIGNATURES" in str(info.value) and "(fix: " in str(info.value)
    assert not [p for m, p, _ in fake.log if m == "GET" and "/manifests/sha256:" in p]


def _padded_signature_manifests(fake: FakeRegistry, digest: str, n: int, size: int,
                                ) -> list[dict[str, object]]:
    """``n`` distinct signature manifests of about ``size`` bytes each (padded with layers
    that carry no signature, as the red team's refs_big), stored in ``fake``."""
    refs = []
    for i in range(n):
        pad = tuple(Descriptor("x/y", f"sha256:{k:064x}", 1) for k in range(size // 100))
        body = Manifest(Descriptor(cosign.REFERRER_TYPE, f"sha256:{i:064x}", 2), pad,
                        artifact_type=cosign.REFERRER_TYPE).to_bytes()
        fake.manifests["m"][sha256_digest(body)] = body
        refs.append({"mediaType": OCI_MANIFEST, "digest": sha256_digest(body),
                     "size": len(body), "artifactType": cosign.REFERRER_TYPE})
    return refs


def _streamed(fake: FakeRegistry) -> Callable[[httpx.Request], httpx.Response]:
    """``fake``'s answers, manifests streamed (httpx reads a body given as bytes at once,
    before any bound could stop it)."""
    def handle(request: httpx.Request) -> httpx.Response:
        r = fake.handle(request)
        if "/manifests/" not in request.url.path or r.status_code != 200:
            return r
        return httpx.Response(200, headers=r.headers, stream=Endless(r.content, len(r.content)))
    return handle


def test_a_signature_manifest_is_refused_past_1_mib_while_it_streams() -> None:
    """A referrer of 3.9 MiB was read whole (the 4 MiB bound of a model's manifest): a
    signature manifest of cosign's is a few KiB."""
    fake, digest, _ = _signed_on_a_referrers_registry()
    fake.referrers = {digest: _padded_signature_manifests(fake, digest, 1, 3900 * 1024)}
    with pytest.raises(RegistryError) as info:
        find_signatures(client(_streamed(fake)), "m", digest)
    msg = str(info.value)
    assert "signature manifest" in msg and "1 MiB (MAX_SIGNATURE_MANIFEST_BYTES" in msg, msg


def test_the_sig_tags_manifest_is_bounded_as_a_signature_manifest() -> None:
    fake, digest, _ = _signed_on_a_referrers_registry([])
    big = _padded_signature_manifests(fake, digest, 1, 2 * MiB)[0]
    fake.manifests["m"][signature_tag(digest)] = fake.manifests["m"][str(big["digest"])]
    with pytest.raises(RegistryError, match="MAX_SIGNATURE_MANIFEST_BYTES"):
        find_signatures(client(_streamed(fake)), "m", digest)


def test_signature_manifests_are_bounded_together_not_only_each() -> None:
    """The red team's refs_big: 100 referrers of 4 MiB each, every one under the bound of a
    manifest, were all read and kept (1.2 GB of RSS); each is now under the bound of one
    signature manifest, and all together under MAX_SIGNATURES_BYTES."""
    fake, digest, _ = _signed_on_a_referrers_registry()
    fake.referrers = {digest: _padded_signature_manifests(fake, digest, 20, 900 * 1024)}
    with pytest.raises(SignatureError) as info:
        find_signatures(client(fake.handle), "m", digest)
    msg = str(info.value)
    assert "more than 4 MiB (MAX_SIGNATURES_BYTES" in msg and "(fix: " in msg, msg
    fetched = [p for m, p, _ in fake.log if m == "GET" and "/manifests/sha256:" in p]
    assert len(fetched) <= 5


def test_signature_payloads_are_bounded_together_not_only_each() -> None:
    """100 payloads of 1 MiB each (each under its bound) would be 100 MiB held at once."""
    fake = FakeRegistry()
    model = json.dumps({"schemaVersion": 2, "config": {
        "mediaType": "x", "digest": sha256_digest(b"{}"), "size": 2}}).encode()
    digest = sha256_digest(model)
    layers = []
    for i in range(10):
        payload = b"%d" % i + b" " * (MiB - 8)
        fake.blobs[sha256_digest(payload)] = payload
        layers.append(Descriptor(cosign.SIMPLESIGNING, sha256_digest(payload), len(payload),
                                 {cosign.SIGNATURE_ANNOTATION: base64.b64encode(b"s").decode()}))
    sig = Manifest(Descriptor(cosign.OCI_CONFIG, sha256_digest(b"{}"), 2), tuple(layers))
    fake.manifests["m"] = {"v1": model, digest: model, signature_tag(digest): sig.to_bytes()}
    with pytest.raises(SignatureError, match="MAX_SIGNATURES_BYTES"):
        find_signatures(client(fake.handle), "m", digest)
    assert sum(len(fake.blob_gets(x.digest)) for x in layers) <= 4


def test_referrers_of_the_wrong_shape_are_skipped_or_a_clean_error() -> None:
    fake, digest, _ = _signed_on_a_referrers_registry([1, "x", {"digest": 5}, None])  # type: ignore[list-item]
    assert find_signatures(client(fake.handle), "m", digest) == []
    index = {"Content-Type": "application/vnd.oci.image.index.v1+json"}
    c = client(lambda r: httpx.Response(200, json={"manifests": 7}, headers=index))
    with pytest.raises(RegistryError, match="not a list"):
        c.referrers("m", digest, cosign.REFERRER_TYPE)


# ---------------------------------------------------------------------------- manifests


@pytest.mark.parametrize("doc", [
    b'{"schemaVersion": 2, "config": {"mediaType": "x", "digest": "sha256:' + b"a" * 64
    + b'", "size": 1}, "layers": 5}',
    b'{"schemaVersion": 2, "config": {"mediaType": "x", "digest": "sha256:' + b"a" * 64
    + b'", "size": 1, "annotations": ["a"]}}',
    b'{"schemaVersion": 2, "config": {"mediaType": "x", "digest": "md5:1", "size": 1}}',
    b'{"schemaVersion": 2, "config": {"mediaType": "x", "digest": "sha256:' + b"a" * 64
    + b'", "size": true}}',
    b"[" * 100_000 + b"]" * 100_000,
])
def test_a_manifest_of_the_wrong_shape_is_an_artifact_error_not_a_traceback(doc: bytes) -> None:
    with pytest.raises(ArtifactError) as info:
        Manifest.from_bytes(doc, "reg/m:v1")
    assert info.value.exit_code == 1 and str(info.value).startswith("reg/m:v1")


# ---------------------------------------------------------------------------- more of the kind


def test_a_redirect_loop_is_one_registry_error() -> None:
    loop = client(lambda r: httpx.Response(302, headers={"Location": r.url.path}))
    with pytest.raises(RegistryError, match="TooManyRedirects"):
        loop.ping()
    with pytest.raises(RegistryError, match="TooManyRedirects"), \
            loop.stream_blob("m", sha256_digest(b"x")):
        pass


def test_an_upload_location_that_is_not_a_url_is_one_registry_error() -> None:
    c = client(lambda r: httpx.Response(202, headers={"Location": "http://[::1/x"}))
    with pytest.raises(RegistryError, match="not a URL"):
        c.upload_blob("m", sha256_digest(b"x"), 1, io.BytesIO(b"x"))
    assert c.mount_blob("m", sha256_digest(b"x"), "other") is False  # its cleanup too


@pytest.mark.parametrize("realm", ["", "/token", "file:///etc/passwd", "ftp://reg.test/t"])
def test_a_token_service_that_is_not_an_http_url_is_refused(realm: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(401, headers={"WWW-Authenticate": f'Bearer realm="{realm}"'})

    with pytest.raises(RegistryError, match=r"not an HTTP\(S\) URL"):
        client(handler).ping()
    assert [r.url.path for r in seen] == ["/v2/"]


def test_the_next_link_is_the_one_marked_next() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("last") == "b":
            return httpx.Response(200, json={"tags": ["b"]})
        return httpx.Response(200, json={"tags": ["a"]}, headers={"Link": (
            '</v2/m/tags/list?n=1000&last=z>; rel="prev", '
            '</v2/m/tags/list?n=1000&last=b>; rel="next"')})

    assert client(handler).tags("m") == ["a", "b"]


@pytest.mark.parametrize(("key", "name"), [
    ("tags", "v1\x1b]0;owned\x07"), ("tags", "v1\n"), ("tags", "-v"), ("tags", "t" * 200),
    ("repositories", "a/B"), ("repositories", "a/m\r\nfake line"), ("repositories", "../x"),
])
def test_a_listed_name_outside_the_spec_grammar_is_refused_not_printed(
        key: str, name: str) -> None:
    c = client(lambda r: httpx.Response(200, json={key: ["ok", name]}))
    with pytest.raises(RegistryError, match="by the OCI distribution spec") as info:
        c.tags("m") if key == "tags" else c.catalog()
    assert "\x1b" not in str(info.value) and "\n" not in str(info.value)


def test_a_registrys_words_reach_the_terminal_escaped() -> None:
    evil = "\x1b]0;owned\x07\nerror: all good"
    c = client(lambda r: httpx.Response(403, json={"errors": [{"code": "DENIED",
                                                                "message": evil}]}))
    with pytest.raises(RegistryError) as info:
        c.ping()
    assert "\x1b" not in str(info.value) and "\n" not in str(info.value)
    assert "DENIED" in str(info.value)
    for junk in ({"errors": 5}, {"errors": [5]}, {"errors": "x"}):
        with pytest.raises(RegistryError, match="HTTP 403"):
            client(lambda r, j=junk: httpx.Response(403, json=j)).ping()
    payload = cosign.payload(f"{HOST}/m{evil}", "sha256:" + "0" * 64)
    check = check_signature(Signature(payload, b"sig"), "m", "sha256:" + "1" * 64, {})
    assert not check.valid and "\x1b" not in check.reason and "\n" not in check.reason
    legacy = json.dumps({"keyId": evil, "payload": "", "signature": ""}).encode()
    check = check_signature(legacy, "m", "sha256:" + "1" * 64, {})
    assert "\x1b" not in check.key_id and "\n" not in check.key_id


# ---------------------------------------------------------------------------- encoded bytes
#
# Found by the red team after the bounds above (each failed before its fix): a gzip answer
# with one byte after its end looped for ever at 100% CPU (zlib took the byte, gave nothing
# and kept it; the deadline was only checked between network chunks), for a manifest, a
# token answer and a blob alike; and only decoded bytes were counted, so a gzip header whose
# file name never ends, endless empty deflate blocks and bytes after the end of the stream
# were read for as long as the registry sent them (57 GB, 48 GB, 470 MB in 976 MB of RSS).


def _finishes(call: Callable[[], object], seconds: float = 20.0) -> BaseException | None:
    """What ``call`` raised (None if nothing), failing the test when it has not finished
    within ``seconds``: the code before the fix never did, so it runs in a thread."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as e:  # handed to the test as it is
            outcome.append(e)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, f"still running after {seconds} s (a loop that never ends)"
    return outcome[0]


HANGS = gzip.compress(b" " * 131072) + b"x"  # the red team's 164 bytes


def _encoded(body: bytes, encoding: str = "gzip") -> Callable[[], httpx.Response]:
    return lambda: httpx.Response(200, stream=Endless(b"", 0, head=body),
                                  headers={"Content-Encoding": encoding, **JSON})


def _read_blob(c: RegistryClient) -> None:
    with c.stream_blob("m", sha256_digest(b"x")) as r:
        for _ in r.iter_bytes():
            pass


@pytest.mark.parametrize("read", [
    lambda c: c.get_manifest("m", "v1"),
    lambda c: c.get_blob_bytes("m", sha256_digest(b"x")),
    _read_blob,  # no bound on a blob's decoded bytes, no deadline: nothing ended the loop
    lambda c: c.tags("m"),
], ids=["manifest", "config-blob", "streamed-blob", "tags"])
def test_a_byte_after_the_end_of_a_gzip_answer_is_refused_not_looped_on(
        read: Callable[[RegistryClient], object]) -> None:
    c = client(lambda r: _encoded(HANGS)())
    error = _finishes(lambda: read(c))
    assert isinstance(error, RegistryError), error
    assert "after the end of its gzip stream" in str(error) and HOST in str(error)


def test_a_token_answer_with_a_byte_after_its_gzip_stream_is_refused() -> None:
    c = client(_bearer_registry(_encoded(HANGS)))
    error = _finishes(lambda: c.tags("a/m"))
    assert isinstance(error, RegistryError) and "token service's answer" in str(error)
    assert "after the end" in str(error)


def test_an_error_answer_with_a_byte_after_its_gzip_stream_ends_cleanly() -> None:
    small = gzip.compress(b'{"errors": [{"code": "DENIED", "message": "no"}]}') + b"x"
    for body in (HANGS, small):
        c = client(lambda r, b=body: httpx.Response(
            403, stream=Endless(b"", 0, head=b), headers={"Content-Encoding": "gzip"}))
        error = _finishes(c.ping)
        assert isinstance(error, RegistryError), error


NO_END_NAME = b"\x1f\x8b\x08\x08" + bytes(4) + b"\x00\x03"  # FNAME set: a name follows
ZLIB_HEADER = b"\x78\x9c"
EMPTY_STORED_BLOCK = b"\x00\x00\x00\xff\xff"  # a stored block of no bytes, not the last


@pytest.mark.parametrize(("encoding", "head", "chunk", "words"), [
    ("gzip", NO_END_NAME, b"A" * 65536, "MAX_ENCODING_OVERHEAD"),
    ("deflate", ZLIB_HEADER, EMPTY_STORED_BLOCK * 13107, "MAX_ENCODING_OVERHEAD"),
    ("gzip", gzip.compress(b'{"tags": ["v1"]}'), bytes(65536), "after the end"),
    ("gzip", gzip.compress(b'{"tags": ["v1"]}'), gzip.compress(b" " * 65536),
     "after the end"),  # a second member: one stream is decoded, not a series
], ids=["gzip-name-never-ends", "empty-deflate-blocks", "zeros-after-the-end",
        "members-after-the-first"])
def test_encoded_bytes_are_bounded_not_only_decoded_ones(
        encoding: str, head: bytes, chunk: bytes, words: str) -> None:
    for read in (lambda c: c.tags("m"), _read_blob):
        body = Endless(chunk, 256 * MiB, head=head)
        c = client(lambda r, b=body: httpx.Response(
            200, stream=b, headers={"Content-Encoding": encoding, **JSON}))
        with pytest.raises(RegistryError) as info:
            read(c)
        assert words in str(info.value) and "(fix: " in str(info.value), info.value
        assert body.sent <= 512 * 1024, body.sent


def test_a_real_compressor_stays_within_the_encoded_bound() -> None:
    """Incompressible bytes grow a little under gzip (stored blocks): still accepted."""
    noise = random.Random(38).randbytes(3 * MiB)
    for level in (0, 1, 9):
        grown = gzip.compress(noise, level)
        assert len(grown) > len(noise)
        c = client(lambda r, g=grown: _encoded(g)())
        assert c.get_blob_bytes("m", sha256_digest(noise)) == noise
    tags = json.dumps({"tags": ["v1"]}).encode()
    assert client(lambda r: _encoded(gzip.compress(tags, 0))()).tags("m") == ["v1"]
    deflate = zlib.compress(tags)
    assert client(lambda r: _encoded(deflate, "deflate")()).tags("m") == ["v1"]


# ---------------------------------------------------------------------------- JSON depth
#
# Found by the red team (each failed before its fix): a few thousand nested ``[`` in a tags
# or catalog page, an error document, a token answer, a referrers index or a signature's
# payload ended in a RecursionError traceback. Every peer's JSON is parsed by one helper
# (limits.peer_json) that refuses more than MAX_JSON_DEPTH levels.

DEEP = b"[" * 5000 + b"]" * 5000


def _deep(key: str) -> bytes:
    return b'{"%s": %s}' % (key.encode(), DEEP)


@pytest.mark.parametrize("read", [
    lambda: client(lambda r: httpx.Response(200, content=_deep("tags"))).tags("m"),
    lambda: client(lambda r: httpx.Response(200, content=_deep("repositories"))).catalog(),
    lambda: client(lambda r: httpx.Response(200, content=b"[" * 65 + b"]" * 65)).tags("m"),
], ids=["tags", "catalog", "65-levels"])
def test_a_listing_nested_too_deep_is_a_clean_error(read: Callable[[], object]) -> None:
    with pytest.raises(RegistryError) as info:
        read()
    assert "nested more than 64 levels deep (MAX_JSON_DEPTH)" in str(info.value)
    assert HOST in str(info.value)


def test_an_error_document_nested_too_deep_falls_back_to_the_status() -> None:
    c = client(lambda r: httpx.Response(400, content=_deep("errors")))
    with pytest.raises(RegistryError, match="HTTP 400 Bad Request"):
        c.tags("m")


def test_a_token_answer_nested_too_deep_is_no_usable_token() -> None:
    c = client(_bearer_registry(lambda: httpx.Response(200, content=_deep("token"))))
    with pytest.raises(RegistryError, match="sent no usable token"):
        c.tags("a/m")


def test_a_referrers_index_nested_too_deep_is_a_clean_error() -> None:
    index = {"Content-Type": "application/vnd.oci.image.index.v1+json"}
    c = client(lambda r: httpx.Response(200, content=_deep("manifests"), headers=index))
    with pytest.raises(RegistryError, match="nested more than 64"):
        c.referrers("m", sha256_digest(b"m"), cosign.REFERRER_TYPE)


@pytest.mark.parametrize("payload", [
    b'{"critical": ' + DEEP + b"}", DEEP,
    b'{"critical": {"type": "cosign container image signature", "identity": '
    + b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"}}",
])
def test_a_signature_payload_nested_too_deep_is_an_invalid_signature(payload: bytes) -> None:
    digest = "sha256:" + "1" * 64
    assert cosign.claims(payload) is None
    check = check_signature(Signature(payload, b"sig"), "m", digest, {})
    assert not check.valid and "not a cosign simple-signing payload" in check.reason
    legacy = check_signature(payload, "m", digest, {})  # the format before cosign's
    assert not legacy.valid and legacy.reason == "malformed signature blob"


def test_a_manifest_or_safetensors_header_past_64_levels_is_refused() -> None:
    from aiplat.artifacts.load import parse_header

    doc = b'{"schemaVersion": 2, "x": ' + b"[" * 65 + b"]" * 65 + b"}"
    with pytest.raises(ArtifactError, match="nested more than 64"):
        Manifest.from_bytes(doc, "reg/m:v1")
    header = b'{"t": ' + DEEP + b"}"
    data = len(header).to_bytes(8, "little") + header
    with pytest.raises(ArtifactError, match="nested more than 64"):
        parse_header(data, len(data), "m.safetensors")


@pytest.mark.parametrize("number", [b"NaN", b"Infinity", b"-Infinity", b"1e999999"])
def test_a_number_json_cannot_hold_is_refused(number: bytes) -> None:
    """Python reads these, and model inspect -o json wrote them back: not JSON."""
    c = client(lambda r: httpx.Response(200, content=b'{"tags": ["v1"], "n": %s}' % number))
    with pytest.raises(RegistryError, match="not a JSON object"):
        c.tags("m")


def test_an_answer_in_one_byte_chunks_costs_its_bytes_not_an_object_each() -> None:
    """Chunked transfer in one-byte chunks: each became a bytes object in httpx's list, so a
    4 MiB page held about 250 MB (the red team's chunk_endless, found afterwards)."""
    body = Endless(b" ", 256 * 1024, head=b'{"tags": ["v1"]}')
    c = client(lambda r: httpx.Response(200, stream=body, headers=JSON))
    tracemalloc.start()
    try:
        assert c.tags("m") == ["v1"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MiB, peak  # before: 23 MB for these 256 KiB
