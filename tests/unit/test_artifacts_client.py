"""The registry client and pull against an in-memory registry (MockTransport) with faults."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
from pathlib import Path

import httpx
import pytest
from artifacts_fakes import FakeRegistry

from aiplat.artifacts.auth import Credentials
from aiplat.artifacts.cache import Cache
from aiplat.artifacts.client import RegistryClient, RetryPolicy
from aiplat.artifacts.errors import DigestMismatchError, RegistryError
from aiplat.artifacts.modelpack import ModelInfo
from aiplat.artifacts.package import package_dir
from aiplat.artifacts.pull import pull
from aiplat.artifacts.push import push_package
from aiplat.artifacts.reference import parse_reference, sha256_digest

HOST = "registry.test:5000"


def client(fake: FakeRegistry, sleeps: list[float] | None = None) -> RegistryClient:
    log = sleeps if sleeps is not None else []
    return RegistryClient(HOST, transport=fake.transport, plain_http=True,
                          retry=RetryPolicy(attempts=4, backoff=0.5), sleep=log.append)


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    d.mkdir()
    (d / "model-00001-of-00002.safetensors").write_bytes(os.urandom(300_000))
    (d / "model-00002-of-00002.safetensors").write_bytes(os.urandom(200_000))
    (d / "config.json").write_text('{"architectures": ["X"]}')
    (d / "tokenizer.json").write_text("{}")
    return d


def test_retries_5xx_with_exponential_backoff_then_succeeds() -> None:
    fake, sleeps = FakeRegistry(fail=[500, 503]), []
    client(fake, sleeps).ping()
    assert sleeps == [0.5, 1.0]


def test_gives_a_clear_final_error_after_the_attempts() -> None:
    fake, sleeps = FakeRegistry(fail=[500] * 10), []
    with pytest.raises(RegistryError) as e:
        client(fake, sleeps).ping()
    msg = str(e.value)
    assert "after 4 attempt(s)" in msg and "HTTP 500" in msg and "injected failure" in msg
    assert "(fix: " in msg and sleeps == [0.5, 1.0, 2.0]


def test_does_not_retry_client_errors() -> None:
    fake = FakeRegistry(fail=[403])
    with pytest.raises(RegistryError, match="after 1 attempt"):
        client(fake).ping()


def test_chunked_upload_patches_ranges_and_keeps_the_upload_state() -> None:
    fake = FakeRegistry()
    data = os.urandom(10_000)
    digest = sha256_digest(data)
    client(fake).upload_blob("m", digest, len(data), io.BytesIO(data), chunk_size=4096)
    patches = [h["content-range"] for m, _, h in fake.log if m == "PATCH"]
    assert patches == ["0-4095", "4096-8191", "8192-9999"]
    assert fake.blobs[digest] == data


def test_push_skips_existing_and_mounts(model_dir: Path) -> None:
    fake = FakeRegistry()
    c = client(fake)
    pkg = package_dir(model_dir, ModelInfo(name="m"))
    first = push_package(c, parse_reference(f"{HOST}/a/m:v1"), pkg, chunk_size=64 * 1024)
    assert len(first.uploaded) == 4 and first.uploaded_bytes > 500_000
    again = push_package(c, parse_reference(f"{HOST}/a/m:v1"), pkg)
    assert again.uploaded == [] and len(again.skipped) == 4
    assert again.digest == first.digest
    # The fake's HEAD is global, so check mounting through a fresh registry's POST only.
    fake2 = FakeRegistry(blobs=dict(fake.blobs))
    c2 = client(fake2)
    c2.has_blob = lambda repo, digest: False  # type: ignore[method-assign]
    mounted = push_package(c2, parse_reference(f"{HOST}/b/m:v1"), pkg, mount_from=["a/m"])
    assert len(mounted.mounted) == 4 and mounted.uploaded == []


def test_packaging_is_reproducible(model_dir: Path) -> None:
    a = package_dir(model_dir, ModelInfo(name="m"))
    os.utime(model_dir / "config.json", (1, 1))
    b = package_dir(model_dir, ModelInfo(name="m"))
    assert a.manifest_bytes == b.manifest_bytes
    paths = [x.filepath for x in a.manifest.layers]
    assert paths[:2] == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]


def _pushed(model_dir: Path, fake: FakeRegistry) -> str:
    pkg = package_dir(model_dir, ModelInfo(name="m"))
    return push_package(client(fake), parse_reference(f"{HOST}/a/m:v1"), pkg).digest


def test_pull_resumes_after_a_dropped_connection(model_dir: Path, tmp_path: Path) -> None:
    fake = FakeRegistry()
    _pushed(model_dir, fake)
    fake.drop_blob_after = [102_400]  # the fake cuts at 4 KiB boundaries
    sleeps: list[float] = []
    res = pull(client(fake, sleeps), Cache(tmp_path / "c"), parse_reference(f"{HOST}/a/m:v1"),
               concurrency=1)
    big = max((d for d in fake.blobs), key=lambda d: len(fake.blobs[d]))
    ranges = [h.get("range") for h in fake.blob_gets(big)]
    assert ranges == [None, "bytes=102400-"] and sleeps == [0.5]
    for name in ("model-00001-of-00002.safetensors", "config.json"):
        assert (res.path / name).read_bytes() == (model_dir / name).read_bytes()


def test_pull_restarts_when_the_server_ignores_range(model_dir: Path, tmp_path: Path) -> None:
    fake = FakeRegistry(range_support=False)
    _pushed(model_dir, fake)
    fake.drop_blob_after = [100_000]
    res = pull(client(fake), Cache(tmp_path / "c"), parse_reference(f"{HOST}/a/m:v1"),
               concurrency=1)
    assert (res.path / "model-00001-of-00002.safetensors").read_bytes() == (
        model_dir / "model-00001-of-00002.safetensors").read_bytes()


def test_pull_retries_500_on_blobs_then_fails_clearly(model_dir: Path, tmp_path: Path) -> None:
    fake = FakeRegistry()
    _pushed(model_dir, fake)
    fake.fail_blob_gets = [500] * 50
    cache = Cache(tmp_path / "c")
    with pytest.raises(RegistryError) as e:
        pull(client(fake), cache, parse_reference(f"{HOST}/a/m:v1"), concurrency=1)
    assert "after 4 attempts" in str(e.value) and "resume" in str(e.value)
    assert cache.blob_digests() == [] and cache.snapshot_digests() == []


def test_corrupt_blob_is_refused_and_never_cached(model_dir: Path, tmp_path: Path) -> None:
    fake = FakeRegistry()
    _pushed(model_dir, fake)
    victim = max(fake.blobs, key=lambda d: len(fake.blobs[d]))
    data = bytearray(fake.blobs[victim])
    data[1000] ^= 0xFF
    fake.blobs[victim] = bytes(data)
    cache = Cache(tmp_path / "c")
    with pytest.raises(DigestMismatchError, match="nothing entered the cache"):
        pull(client(fake), cache, parse_reference(f"{HOST}/a/m:v1"), concurrency=1)
    assert victim not in cache.blob_digests()
    assert not cache.partial_path(victim).exists() and cache.snapshot_digests() == []


def test_manifest_with_wrong_digest_is_refused() -> None:
    fake = FakeRegistry()
    body = b'{"schemaVersion":2}'
    other = "sha256:" + hashlib.sha256(b"x").hexdigest()
    fake.manifests["a"] = {other: body}
    with pytest.raises(RegistryError, match="other content"):
        client(fake).get_manifest("a", other)


def test_bearer_token_flow_and_secret_never_in_repr() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/token":  # the token service, on the registry's origin
            assert request.headers["authorization"].startswith("Basic ")
            assert request.url.params["scope"] == "repository:a/m:pull"
            return httpx.Response(200, json={"token": "T0K"})
        if request.headers.get("authorization") != "Bearer T0K":
            return httpx.Response(401, headers={"WWW-Authenticate": (
                f'Bearer realm="https://{HOST}/token",service="reg",'
                'scope="repository:a/m:pull"')})
        return httpx.Response(200, json={"name": "a/m", "tags": ["v1"]})

    creds = Credentials("alice", "s3cret", "test")
    c = RegistryClient(HOST, credentials=creds, transport=httpx.MockTransport(handler))
    assert c.tags("a/m") == ["v1"]
    assert c.tags("a/m") == ["v1"]  # the cached token is reused: no new 401
    assert [r.url.path for r in seen].count("/token") == 1
    assert "s3cret" not in repr(creds) and "s3cret" not in repr(c.http.auth)


def test_basic_auth_flow() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        expect = "Basic " + base64.b64encode(b"bob:pw").decode()
        if request.headers.get("authorization") != expect:
            return httpx.Response(401, headers={"WWW-Authenticate": 'Basic realm="r"'})
        return httpx.Response(200, json={"repositories": ["a", "b"]})

    c = RegistryClient(HOST, credentials=Credentials("bob", "pw"),
                       transport=httpx.MockTransport(handler))
    assert c.catalog() == ["a", "b"]


def test_tags_follow_pagination() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("last") == "b":
            return httpx.Response(200, json={"tags": ["c"]})
        return httpx.Response(200, json={"tags": ["a", "b"]},
                              headers={"Link": '</v2/m/tags/list?n=2&last=b>; rel="next"'})

    assert RegistryClient(HOST, transport=httpx.MockTransport(handler)).tags("m") == \
        ["a", "b", "c"]


def test_json_of_fake_manifest_is_modelpack(model_dir: Path) -> None:
    fake = FakeRegistry()
    digest = _pushed(model_dir, fake)
    doc = json.loads(fake.manifests["a/m"][digest])
    assert doc["artifactType"] == "application/vnd.cncf.model.manifest.v1+json"
