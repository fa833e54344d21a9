"""Attacks on pull and the cache, each reproduced against the in-memory registry first.

Every test here failed before its fix: an untrusted model rewriting a signed model's cached
weights through a hard link, manifests that cannot be laid out (clean errors, not
tracebacks), a corrupt cached blob reused by another snapshot, a warm pull serving an
incomplete snapshot, ``127.<anything>`` taken for loopback, credentials sent to a foreign
token server, a policy with a duplicate key, symlinks followed in the cache, folders made
with the process umask. Disk-full faults need a small file system and live in
``tests/integration/test_artifacts_security_registry.py``.
"""

from __future__ import annotations

import base64
import io
import os
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from artifacts_fakes import FakeRegistry
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aiplat.artifacts.auth import Credentials
from aiplat.artifacts.cache import Cache
from aiplat.artifacts.client import RegistryClient, RetryPolicy, is_loopback
from aiplat.artifacts.errors import (
    ArtifactError,
    ArtifactInputError,
    ManifestError,
    RegistryError,
    StorageError,
)
from aiplat.artifacts.modelpack import (
    FILEPATH,
    MAX_LAYERS,
    TITLE,
    WEIGHT_CONFIG_TAR,
    WEIGHT_RAW,
    Descriptor,
    Manifest,
    ModelInfo,
    model_config,
    model_manifest,
)
from aiplat.artifacts.package import package_dir
from aiplat.artifacts.pull import pull
from aiplat.artifacts.push import push_package
from aiplat.artifacts.reference import parse_reference, sha256_digest
from aiplat.artifacts.signatures import attach_signature
from aiplat.artifacts.signing import parse_policy, public_pem

HOST = "reg.test:5000"
GOOD = os.urandom(64 * 1024)
EVIL = b"attacker's weights".ljust(len(GOOD), b"!")


def client(fake: FakeRegistry) -> RegistryClient:
    return RegistryClient(HOST, transport=fake.transport, retry=RetryPolicy(backoff=0))


def put_blob(fake: FakeRegistry, data: bytes) -> str:
    digest = sha256_digest(data)
    fake.blobs[digest] = data
    return digest


def raw(fake: FakeRegistry, path: str, data: bytes) -> Descriptor:
    return Descriptor(WEIGHT_RAW, put_blob(fake, data), len(data), {FILEPATH: path, TITLE: path})


Member = tuple[tarfile.TarInfo, bytes | None]


def member(name: str, data: bytes = b"{}", kind: bytes = tarfile.REGTYPE,
           link: str = "") -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o644
    if kind == tarfile.REGTYPE:
        info.size = len(data)
        return info, data
    return info, None


def tar_layer(fake: FakeRegistry, members: list[Member] | bytes) -> Descriptor:
    if isinstance(members, bytes):
        data = members
    else:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for info, body in members:
                tar.addfile(info, io.BytesIO(body) if body is not None else None)
        data = buf.getvalue()
    return Descriptor(WEIGHT_CONFIG_TAR, put_blob(fake, data), len(data),
                      {TITLE: "config-files.tar"})


def put_manifest(fake: FakeRegistry, repo: str, layers: list[Descriptor]) -> str:
    config = model_config(ModelInfo(name="x"), [x.digest for x in layers])
    body = model_manifest(put_blob(fake, config), len(config), layers).to_bytes()
    digest = sha256_digest(body)
    fake.manifests.setdefault(repo, {}).update({"v1": body, digest: body})
    return digest


def model_dir(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


# ---------------------------------------------------------------------------- cache poisoning


@pytest.mark.parametrize("tar_first", [False, True], ids=["raw-then-tar", "tar-then-raw"])
def test_untrusted_tar_layer_cannot_rewrite_a_signed_models_cached_weights(
        tmp_path: Path, tar_first: bool) -> None:
    fake = FakeRegistry()
    c = client(fake)
    key = Ed25519PrivateKey.generate()
    prod = parse_reference(f"{HOST}/prod/m:v1")
    pkg = package_dir(model_dir(tmp_path / "m", {"w.safetensors": GOOD, "config.json": b"{}"}),
                      ModelInfo(name="m"))
    push_package(c, prod, pkg)
    attach_signature(c, prod, key)
    pem = public_pem(key.public_key()).replace("\n", "\\n")
    policy = parse_policy(
        "apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\n"
        f'keys:\n  release: {{publicKey: "{pem}"}}\n'
        f'rules:\n  - {{repositories: ["{HOST}/prod/*"], require: signed, keys: [release]}}\n'
        f'  - {{repositories: ["{HOST}/scratch/*"], require: none}}\n', "policy.yaml")
    cache = Cache(tmp_path / "cache")
    first = pull(c, cache, prod, policy=policy)
    assert (first.path / "w.safetensors").read_bytes() == GOOD

    # The attacker's unsigned model lists the signed model's blob as a weight file and
    # ships a tar layer with a file at the same path.
    weight = raw(fake, "w.safetensors", GOOD)
    evil_tar = tar_layer(fake, [member("w.safetensors", EVIL)])
    put_manifest(fake, "scratch/evil", [evil_tar, weight] if tar_first else [weight, evil_tar])
    with pytest.raises(ManifestError, match=r"w\.safetensors"):
        pull(c, cache, parse_reference(f"{HOST}/scratch/evil:v1"), policy=policy)

    again = pull(c, cache, prod, policy=policy)
    assert again.trust.startswith("signed by")
    assert (again.path / "w.safetensors").read_bytes() == GOOD
    assert cache.verify(quarantine=False).clean
    assert [p.name for p in (tmp_path / "cache/snapshots").iterdir()] == [first.path.name]


def test_a_manifest_lying_about_a_cached_blobs_size_cannot_get_it_quarantined(
        tmp_path: Path) -> None:
    fake = FakeRegistry()
    c = client(fake)
    ref = parse_reference(f"{HOST}/prod/m:v1")
    push_package(c, ref, package_dir(model_dir(tmp_path / "m", {"w.safetensors": GOOD}),
                                     ModelInfo(name="m")))
    cache = Cache(tmp_path / "cache")
    pull(c, cache, ref)
    liar = Descriptor(WEIGHT_RAW, sha256_digest(GOOD), 5, {FILEPATH: "w.safetensors"})
    put_manifest(fake, "scratch/liar", [liar])
    with pytest.raises(ManifestError, match="has 5 bytes"):
        pull(c, cache, parse_reference(f"{HOST}/scratch/liar:v1"))
    assert list((tmp_path / "cache/quarantine").iterdir()) == []
    assert pull(c, cache, ref).warm


# ---------------------------------------------------------------------------- hostile manifests


def _hostile(fake: FakeRegistry, case: str) -> list[Descriptor]:
    w = raw(fake, "w.safetensors", GOOD)
    cases: dict[str, Callable[[], list[Descriptor]]] = {
        "file-then-dir": lambda: [raw(fake, "a", b"1"), raw(fake, "a/b", b"2")],
        "dir-then-file": lambda: [raw(fake, "a/b", b"1"), raw(fake, "a", b"2")],
        "same-path-twice": lambda: [raw(fake, "a", b"1"), raw(fake, "./a", b"2")],
        "5000-char-name": lambda: [raw(fake, "x" * 5000 + ".safetensors", b"1")],
        "300-char-component": lambda: [raw(fake, "d/" + "y" * 300, b"1")],
        "dot-dot-path": lambda: [raw(fake, "../../etc/cron.d/x", b"1")],
        "tar-escapes": lambda: [w, tar_layer(fake, [member("../escaped.json")])],
        "tar-absolute-path": lambda: [w, tar_layer(fake, [member("/tmp/abs.json")])],
        "tar-absolute-symlink": lambda: [w, tar_layer(fake, [
            member("passwd", kind=tarfile.SYMTYPE, link="/etc/passwd")])],
        "tar-relative-symlink": lambda: [w, tar_layer(fake, [
            member("link", kind=tarfile.SYMTYPE, link="w.safetensors")])],
        "tar-hard-link": lambda: [w, tar_layer(fake, [
            member("c.json"), member("h.json", kind=tarfile.LNKTYPE, link="c.json")])],
        "tar-device-node": lambda: [w, tar_layer(fake, [member("dev", kind=tarfile.CHRTYPE)])],
        "tar-fifo": lambda: [w, tar_layer(fake, [member("fifo", kind=tarfile.FIFOTYPE)])],
        "tar-5000-char-name": lambda: [w, tar_layer(fake, [member("z" * 5000)])],
        "tar-file-under-weight": lambda: [w, tar_layer(fake, [member("w.safetensors/x")])],
        "tar-twice-same-file": lambda: [w, tar_layer(fake, [member("c.json"), member("c.json")])],
        "tar-not-a-tar": lambda: [w, tar_layer(fake, os.urandom(3000))],
        "tar-file-then-weight-below": lambda: [
            tar_layer(fake, [member("a")]), raw(fake, "a/w.safetensors", GOOD)],
        # The red team's fp_surrogate, fp_c1 and tar_badutf8 (issue #38): a traceback
        # (UnicodeEncodeError), or a file named with a terminal's control characters.
        "surrogate-path": lambda: [raw(fake, "\ud800.safetensors", b"1")],
        "c1-path": lambda: [raw(fake, "a\x9b2J.safetensors", b"1")],
        "bidi-path": lambda: [raw(fake, "a\u202egpj.safetensors", b"1")],
        "newline-path": lambda: [raw(fake, "a\nb.safetensors", b"1")],
        "tar-non-utf8-name": lambda: [w, tar_layer(fake, _latin1_tar("\xff.json"))],
        "tar-c1-name": lambda: [w, tar_layer(fake, [member("c\x9b.json")])],
        "annotation-not-a-string": lambda: [Descriptor(
            WEIGHT_RAW, put_blob(fake, b"1"), 1, {FILEPATH: ["../../x"]})],  # type: ignore[dict-item]
        # The red team's tar_pax_uid and tar_pax_sparse (round 4, G5): tarfile raised
        # OverflowError (os.utime) or ValueError (the sparse map), not a TarError.
        "tar-pax-mtime-1e30": lambda: [w, tar_layer(fake, [_pax("c.json", mtime="1e30")])],
        "tar-pax-mtime-nan": lambda: [w, tar_layer(fake, [_pax("c.json", mtime="nan")])],
        "tar-pax-mtime-inf": lambda: [w, tar_layer(fake, [_pax("c.json", mtime="inf")])],
        "tar-pax-mtime-30-digits": lambda: [w, tar_layer(fake, [_pax("c.json", mtime="9" * 30)])],
        "tar-gnu-sparse-1.0-broken-map": lambda: [w, tar_layer(fake, [_pax(
            "c.json", **{"GNU.sparse.major": "1", "GNU.sparse.minor": "0",
                         "GNU.sparse.name": "s.json", "GNU.sparse.realsize": "10"})])],
    }
    return cases[case]()


def _pax(name: str, **headers: str) -> Member:
    info, body = member(name)
    info.pax_headers = headers
    return info, body


def _latin1_tar(name: str) -> bytes:
    """A tar whose member's name is not UTF-8 (a ustar header in latin-1)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT,
                      encoding="latin-1") as tar:
        info = tarfile.TarInfo(name)
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    return buf.getvalue()


HOSTILE = ["file-then-dir", "dir-then-file", "same-path-twice", "5000-char-name",
           "300-char-component", "dot-dot-path", "tar-escapes", "tar-absolute-path",
           "tar-absolute-symlink", "tar-relative-symlink", "tar-hard-link", "tar-device-node",
           "tar-fifo", "tar-5000-char-name", "tar-file-under-weight", "tar-twice-same-file",
           "tar-not-a-tar", "tar-file-then-weight-below", "surrogate-path", "c1-path",
           "bidi-path", "newline-path", "tar-non-utf8-name", "tar-c1-name",
           "annotation-not-a-string", "tar-pax-mtime-1e30", "tar-pax-mtime-nan",
           "tar-pax-mtime-inf", "tar-pax-mtime-30-digits", "tar-gnu-sparse-1.0-broken-map"]
NAMED = {"surrogate-path", "c1-path", "bidi-path", "newline-path", "tar-non-utf8-name",
         "tar-c1-name", "annotation-not-a-string"}
# Paths wrong in the manifest itself are refused before a byte of the model moves.
BEFORE_DOWNLOAD = {"file-then-dir", "dir-then-file", "same-path-twice", "5000-char-name",
                   "300-char-component", "dot-dot-path", "surrogate-path", "c1-path",
                   "bidi-path", "newline-path", "annotation-not-a-string"}


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_manifests_are_refused_with_one_clean_error(tmp_path: Path, case: str) -> None:
    fake = FakeRegistry()
    put_manifest(fake, "scratch/hostile", _hostile(fake, case))
    cache = Cache(tmp_path / "cache")
    with pytest.raises(ManifestError) as info:
        pull(client(fake), cache, parse_reference(f"{HOST}/scratch/hostile:v1"))
    message = str(info.value)
    assert "\n" not in message and len(message) < 600 and "refus" in message
    assert message.isprintable(), message  # escaped: nothing reaches the terminal raw
    if case in NAMED:
        assert "layers[" in message, message  # which layer
    assert "/blobs/" not in message, message  # the model's path, not the cache's
    assert info.value.exit_code == 1
    assert cache.snapshot_digests() == []
    assert list((tmp_path / "cache/snapshots").iterdir()) == []  # no half-made snapshot
    assert not (tmp_path / "escaped.json").exists() and not Path("/tmp/abs.json").exists()
    if case in BEFORE_DOWNLOAD:
        assert [p for m, p, _ in fake.log if m == "GET" and "/blobs/" in p] == []
        assert cache.blob_digests() == []


def test_a_manifest_of_more_layers_than_max_layers_is_refused_before_any_download(
        tmp_path: Path) -> None:
    """The red team's layers_many: 15,003 layers of a few bytes each (well within the 4 MiB
    of a manifest) were 15,003 downloads and files, 170 s of model pull."""
    fake = FakeRegistry()
    layers = [Descriptor(WEIGHT_RAW, put_blob(fake, b"%d" % i), len(b"%d" % i),
                         {FILEPATH: f"d/{i}.bin"}) for i in range(MAX_LAYERS + 1)]
    put_manifest(fake, "scratch/many", layers)
    with pytest.raises(ManifestError) as info:
        pull(client(fake), Cache(tmp_path / "cache"), parse_reference(f"{HOST}/scratch/many:v1"))
    msg = str(info.value)
    assert f"{MAX_LAYERS + 1:,} layers" in msg and f"{MAX_LAYERS:,} (MAX_LAYERS" in msg, msg
    assert [p for m, p, _ in fake.log if m == "GET" and "/blobs/" in p] == []
    body = model_manifest(sha256_digest(b"{}"), 2, layers[:MAX_LAYERS]).to_bytes()
    assert len(Manifest.from_bytes(body).layers) == MAX_LAYERS  # the bound itself is fine


# ---------------------------------------------------------------------------- integrity


def _two_models(tmp_path: Path, fake: FakeRegistry) -> tuple[RegistryClient, str, str]:
    c = client(fake)
    a = package_dir(model_dir(tmp_path / "a", {"w.safetensors": GOOD}), ModelInfo(name="a"))
    b = package_dir(model_dir(tmp_path / "b", {"w.safetensors": GOOD,
                                               "x.safetensors": os.urandom(1000)}),
                    ModelInfo(name="b"))
    push_package(c, parse_reference(f"{HOST}/m/a:v1"), a)
    push_package(c, parse_reference(f"{HOST}/m/b:v1"), b)
    return c, f"{HOST}/m/a:v1", f"{HOST}/m/b:v1"


def test_a_corrupt_cached_blob_is_rehashed_and_replaced_before_another_snapshot_uses_it(
        tmp_path: Path) -> None:
    fake = FakeRegistry()
    c, a, b = _two_models(tmp_path, fake)
    cache = Cache(tmp_path / "cache")
    pull(c, cache, parse_reference(a))
    shared = sha256_digest(GOOD)
    blob = cache.blob_path(shared)
    os.chmod(blob, 0o644)
    with open(blob, "r+b") as f:
        f.write(b"rot")
    res = pull(c, cache, parse_reference(b))
    assert (res.path / "w.safetensors").read_bytes() == GOOD
    assert shared in res.downloaded  # fetched again, not reused
    assert [p.name.split(".")[0] for p in (tmp_path / "cache/quarantine").iterdir()] == \
        [shared.split(":")[1]]
    # The first model's snapshot still holds the rotten inode: its warm pull re-makes it.
    again = pull(c, cache, parse_reference(a))
    assert (again.path / "w.safetensors").read_bytes() == GOOD
    assert cache.verify(quarantine=False).clean


def test_an_intact_cached_blob_is_reused_after_rehashing(tmp_path: Path) -> None:
    fake = FakeRegistry()
    c, a, b = _two_models(tmp_path, fake)
    cache = Cache(tmp_path / "cache")
    pull(c, cache, parse_reference(a))
    res = pull(c, cache, parse_reference(b))
    assert sha256_digest(GOOD) in res.shared
    assert len(fake.blob_gets(sha256_digest(GOOD))) == 1


@pytest.mark.parametrize("damage", ["weight-deleted", "weight-replaced", "weight-truncated",
                                    "config-file-deleted", "config-file-truncated"])
def test_a_warm_pull_never_returns_an_incomplete_snapshot(tmp_path: Path, damage: str) -> None:
    fake = FakeRegistry()
    c = client(fake)
    ref = parse_reference(f"{HOST}/m/a:v1")
    pkg = package_dir(model_dir(tmp_path / "a", {"w.safetensors": GOOD,
                                                 "config.json": b'{"a": 1}'}),
                      ModelInfo(name="a"))
    push_package(c, ref, pkg)
    cache = Cache(tmp_path / "cache")
    snap = pull(c, cache, ref).path
    name = "w.safetensors" if damage.startswith("weight") else "config.json"
    target = snap / name
    if damage.endswith("deleted"):
        target.unlink()
    elif damage == "weight-replaced":
        target.unlink()
        target.write_bytes(EVIL)
    else:
        os.chmod(target, 0o644)
        os.truncate(target, 3)
    res = pull(c, cache, ref)
    assert not res.warm and any("incomplete" in n for n in res.notes)
    assert (res.path / "w.safetensors").read_bytes() == GOOD
    assert (res.path / "config.json").read_bytes() == b'{"a": 1}'
    assert pull(c, cache, ref).warm
    assert cache.verify(quarantine=False).clean


# ---------------------------------------------------------------------------- loopback, credentials


def test_loopback_is_an_address_that_resolves_to_loopback_not_a_name_prefix() -> None:
    def dns(table: dict[str, list[str]]) -> Callable[[str], list[str]]:
        return lambda host: table.get(host, [])

    evil = dns({"127.attacker.example": ["203.0.113.7"]})
    assert not is_loopback("127.attacker.example:5000", resolve=evil)
    assert not is_loopback("127.attacker.example", resolve=evil)
    assert not is_loopback("127.0.0.1.nip.example:5000", resolve=dns({}))  # unresolvable
    assert is_loopback("127.0.0.1:5000") and is_loopback("127.3.2.1")
    assert is_loopback("[::1]:5000") and is_loopback("[::1]")
    assert not is_loopback("[2001:db8::1]:5000") and not is_loopback("10.0.0.1:5000")
    assert is_loopback("localhost:5000", resolve=dns({"localhost": ["127.0.0.1", "::1"]}))
    assert is_loopback("reg.local:5000", resolve=dns({"reg.local": ["127.0.0.2"]}))
    mixed = dns({"reg.local": ["127.0.0.1", "198.51.100.3"]})
    assert not is_loopback("reg.local:5000", resolve=mixed)
    c = RegistryClient("127.attacker.example:5000", resolve=evil)
    assert c.base == "https://127.attacker.example:5000"
    assert RegistryClient("127.0.0.1:5000").base == "http://127.0.0.1:5000"


def _token_flow(registry: str, realm: str, plain_http: bool | None = None,
                ) -> tuple[list[httpx.Request], RegistryClient]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/token":
            return httpx.Response(200, json={"token": "T0K"})
        if request.headers.get("authorization") != "Bearer T0K":
            return httpx.Response(401, headers={
                "WWW-Authenticate": f'Bearer realm="{realm}",service="reg"'})
        return httpx.Response(200, json={"tags": ["v1"]})

    c = RegistryClient(registry, credentials=Credentials("alice", "s3cret"),
                       transport=httpx.MockTransport(handler), plain_http=plain_http,
                       retry=RetryPolicy(attempts=1))
    return seen, c


@pytest.mark.parametrize(("registry", "realm", "plain", "sent"), [
    ("reg.test:5000", "https://reg.test:5000/token", None, True),
    ("reg.test:5000", "https://reg.test/token", None, False),  # same host, other port
    ("reg.test:5000", "https://reg.test:8443/token", None, False),
    ("reg.test:5000", "https://auth.other.test/token", None, False),
    ("reg.test:5000", "http://reg.test:5000/token", None, False),  # plain HTTP, not loopback
    ("reg.test:5000", "http://evil.example/token", None, False),
    ("127.0.0.1:5000", "http://127.0.0.1:5000/token", None, True),  # loopback: HTTP is fine
    ("127.0.0.1:5000", "http://127.0.0.1:5001/token", None, False),  # but not another port
    ("127.0.0.1:5000", "https://127.0.0.1:5000/token", None, False),  # nor another scheme
    ("127.0.0.1:5000", "http://evil.example/token", None, False),
])
def test_credentials_go_only_to_the_registrys_own_origin_over_tls_unless_loopback(
        registry: str, realm: str, plain: bool | None, sent: bool) -> None:
    seen, c = _token_flow(registry, realm, plain)
    assert c.tags("a/m") == ["v1"]  # an anonymous token still works where one is given
    token_requests = [r for r in seen if r.url.path == "/token"]
    assert len(token_requests) == 1
    basic = "Basic " + base64.b64encode(b"alice:s3cret").decode()
    assert (token_requests[0].headers.get("authorization") == basic) is sent
    assert all("s3cret" not in str(r.url) for r in seen)


@pytest.mark.parametrize(("registry", "sent"), [
    ("reg.local:5000", False), ("localhost:5000", True), ("127.0.0.1:5000", True),
    ("[::1]:5000", True),
])
def test_credentials_go_in_the_clear_only_to_a_loopback_address_not_a_name(
        registry: str, sent: bool) -> None:
    """reg.local resolved to 127.0.0.1 when the client was made, so it speaks plain HTTP; but
    httpx resolves it again to connect, and a DNS answer that changed in between (a spoofed
    one) would have been sent alice's password in the clear: it was, before."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if "authorization" in request.headers:
            return httpx.Response(200, json={"tags": ["v1"]})
        return httpx.Response(401, headers={"WWW-Authenticate": 'Basic realm="r"'})

    dns = {"reg.local": ["127.0.0.1"], "localhost": ["127.0.0.1", "::1"]}
    c = RegistryClient(registry, credentials=Credentials("alice", "s3cret"),
                       transport=httpx.MockTransport(handler), retry=RetryPolicy(attempts=1),
                       resolve=lambda host: dns.get(host, []))
    assert c.base.startswith("http://")  # loopback: plain HTTP, as before
    if sent:
        assert c.tags("m") == ["v1"]
        return
    with pytest.raises(RegistryError, match="not a loopback address") as info:
        c.tags("m")
    assert "by its address" in str(info.value)
    assert all("authorization" not in r.headers for r in seen)


def test_withheld_credentials_are_named_in_the_error_when_the_token_server_refuses() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "auth.other.test":
            return httpx.Response(401 if "authorization" not in request.headers else 200,
                                  json={"token": "T"})
        return httpx.Response(401, headers={
            "WWW-Authenticate": 'Bearer realm="https://auth.other.test/token"'})

    c = RegistryClient(HOST, credentials=Credentials("alice", "s3cret"),
                       transport=httpx.MockTransport(handler), retry=RetryPolicy(attempts=1))
    with pytest.raises(RegistryError, match="not the registry's origin") as info:
        c.tags("a/m")
    assert "s3cret" not in str(info.value)


def test_basic_credentials_are_not_sent_over_plain_http_to_a_remote_registry() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(401, headers={"WWW-Authenticate": 'Basic realm="r"'})

    c = RegistryClient(HOST, credentials=Credentials("bob", "pw"), plain_http=True,
                       transport=httpx.MockTransport(handler), retry=RetryPolicy(attempts=1))
    with pytest.raises(RegistryError, match="plain HTTP"):
        c.catalog()
    assert all("authorization" not in r.headers for r in seen)


# ---------------------------------------------------------------------------- policy parsing


@pytest.mark.parametrize(("text", "line", "key"), [
    ("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\n"
     "rules:\n  - {repositories: ['h:1/prod/*'], require: none}\n"
     "rules:\n  - {repositories: ['h:1/*'], require: none}\n", 5, "rules"),
    ("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\nrules:\n"
     "  - repositories: ['h:1/*']\n    require: none\n    require: signed\n", 6, "require"),
])
def test_a_policy_with_a_duplicate_key_is_refused_with_file_and_line(
        text: str, line: int, key: str) -> None:
    with pytest.raises(ArtifactInputError,
                       match=rf"^p\.yaml: key '{key}' appears twice \(line {line}\)"):
        parse_policy(text, "p.yaml")


# ---------------------------------------------------------------------------- symlinks and modes


def _one_model(tmp_path: Path) -> tuple[RegistryClient, str, str]:
    fake = FakeRegistry()
    c = client(fake)
    ref = f"{HOST}/m/a:v1"
    push_package(c, parse_reference(ref),
                 package_dir(model_dir(tmp_path / "a", {"w.safetensors": GOOD}),
                             ModelInfo(name="a")))
    return c, ref, sha256_digest(GOOD)


@pytest.mark.parametrize("planted", ["partial", "lock"])
def test_a_symlink_planted_in_the_cache_is_never_followed(tmp_path: Path, planted: str) -> None:
    c, ref, weight = _one_model(tmp_path)
    cache = Cache(tmp_path / "cache")
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    link = cache.partial_path(weight) if planted == "partial" else cache.lock_path(weight)
    link.symlink_to(victim)
    with pytest.raises(StorageError, match="symlink") as info:
        pull(c, cache, parse_reference(ref))
    assert str(link) in str(info.value)
    assert victim.read_bytes() == b"precious"
    assert weight not in cache.blob_digests()


def test_cache_folders_are_private_whatever_the_umask(tmp_path: Path) -> None:
    c, ref, _ = _one_model(tmp_path)
    old = os.umask(0)
    try:
        cache = Cache(tmp_path / "cache")
        res = pull(c, cache, parse_reference(ref))
    finally:
        os.umask(old)
    folders = [tmp_path / "cache", *(p for p in (tmp_path / "cache").rglob("*") if p.is_dir())]
    assert res.path in folders and len(folders) > 10
    for d in folders:
        mode = stat.S_IMODE(d.stat().st_mode)
        assert mode & 0o027 == 0, f"{d} is {oct(mode)}"
    for sub in ("tmp", "locks", "quarantine"):
        assert stat.S_IMODE((tmp_path / "cache" / sub).stat().st_mode) == 0o700


def test_a_cache_subfolder_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "cache/tmp").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ArtifactInputError, match="symlink"):
        Cache(tmp_path / "cache")


def test_every_refusal_is_an_artifact_error() -> None:
    # One tree for callers: the CLI prints these on one line and exits 1.
    assert issubclass(ManifestError, ArtifactError) and issubclass(StorageError, ArtifactError)
