"""Credentials and tokens go only to the host they belong to; identities are compared the
way they are meant (issue #38).

Each test failed before its fix: a cached bearer token followed a ``Link`` to another host
and to plain HTTP, and an upload ``Location`` to another host (and to plain HTTP); a 401
from another host got a token requested with the user's credentials for a scope of its
choosing, and that token sent to it; ``LOCALHOST:P`` skipped a ``localhost:P/...`` signed
rule for a catch-all; ``sha512:`` pins were never checked; signing a tag signed the digest
a lying HEAD reported; credentials from an auth file every user can read came without a
word. The redirect test held before (httpx drops the header across origins); it guards that.
Later (the red team's GT5): Basic credentials and a token obtained with them followed an
upload ``Location`` to another port of the registry's host, and credentials went to a token
realm there: "the registry's host" meant any port.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from artifacts_fakes import FakeRegistry
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aiplat.artifacts import cosign
from aiplat.artifacts.auth import Credentials, load_credentials
from aiplat.artifacts.client import RegistryClient, RetryPolicy
from aiplat.artifacts.errors import ArtifactInputError, RegistryError
from aiplat.artifacts.reference import parse_reference, sha256_digest, signature_tag
from aiplat.artifacts.signatures import sign_reference
from aiplat.artifacts.signing import parse_policy, public_pem

HOST = "reg.test:5000"
SECRET = "Bearer T0K"  # the token the registry's service gives for alice's credentials
BASIC = "Basic " + base64.b64encode(b"alice:s3cret").decode()

Handler = Callable[[httpx.Request], httpx.Response]


class World:
    """reg.test:5000 behind a token service that wants alice's credentials, and evil.test
    (or any other origin) that records what it is sent."""

    def __init__(self, registry: Handler) -> None:
        self.registry = registry
        self.elsewhere: list[httpx.Request] = []
        self.token_requests: list[httpx.Request] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if (url.scheme, url.host, url.port) != ("https", "reg.test", 5000):
            self.elsewhere.append(request)
            if request.method == "PUT":
                return httpx.Response(201)
            return httpx.Response(200, json={"tags": ["stolen"]})
        if url.path == "/token":
            self.token_requests.append(request)
            if request.headers.get("authorization") != BASIC:
                return httpx.Response(401)
            return httpx.Response(200, json={"token": "T0K"})
        if request.headers.get("authorization") != SECRET:
            scope = f"repository:{url.path.split('/')[2]}:pull,push"
            return httpx.Response(401, headers={"WWW-Authenticate": (
                f'Bearer realm="https://{HOST}/token",service="reg",scope="{scope}"')})
        return self.registry(request)

    def client(self) -> RegistryClient:
        return RegistryClient(HOST, credentials=Credentials("alice", "s3cret"),
                              transport=httpx.MockTransport(self.handle),
                              retry=RetryPolicy(attempts=1, backoff=0))

    def leaked(self) -> list[str]:
        return [f"{r.method} {r.url}" for r in self.elsewhere if "authorization" in r.headers]


@pytest.mark.parametrize("link", ["https://evil.test/v2/m/tags/list?last=v1",
                                  f"http://{HOST}/v2/m/tags/list?last=v1",
                                  "https://reg.test:5001/v2/m/tags/list?last=v1"])
def test_a_cached_token_never_follows_a_link_off_the_registry(link: str) -> None:
    w = World(lambda r: httpx.Response(200, json={"tags": ["v1"]},
                                       headers={"Link": f'<{link}>; rel="next"'}))
    with pytest.raises(RegistryError, match="not the registry"):
        w.client().tags("m")
    assert w.leaked() == [] and w.elsewhere == []


@pytest.mark.parametrize("location", ["https://evil.test/v2/m/blobs/uploads/1?_state=s",
                                      f"http://{HOST}/v2/m/blobs/uploads/1?_state=s",
                                      "https://reg.test:8443/v2/m/blobs/uploads/1?_state=s",
                                      "https://reg.test/v2/m/blobs/uploads/1?_state=s"])
def test_a_cached_token_never_follows_an_upload_location_off_the_registry(
        location: str) -> None:
    def registry(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(202, headers={"Location": location})
        return httpx.Response(404)

    w = World(registry)
    data = b"weights"
    w.client().upload_blob("m", sha256_digest(data), len(data), io.BytesIO(data))
    assert w.elsewhere and w.leaked() == []


class BasicWorld(World):
    """reg.test:5000 asking for alice's password (Basic), and anything elsewhere that records
    what it is sent: another port of the same host is another server."""

    def handle(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if (url.scheme, url.host, url.port) != ("https", "reg.test", 5000):
            self.elsewhere.append(request)
            return httpx.Response(201 if request.method == "PUT" else 200,
                                  json={"token": "T0K"})
        if request.headers.get("authorization") != BASIC:
            return httpx.Response(401, headers={"WWW-Authenticate": 'Basic realm="reg"'})
        return self.registry(request)


@pytest.mark.parametrize("location", ["https://reg.test:8443/v2/m/blobs/uploads/1?_state=s",
                                      "https://reg.test/v2/m/blobs/uploads/1?_state=s"])
def test_basic_credentials_never_follow_an_upload_location_to_another_port(
        location: str) -> None:
    w = BasicWorld(lambda r: httpx.Response(202, headers={"Location": location})
                   if r.method == "POST" else httpx.Response(404))
    data = b"weights"
    w.client().upload_blob("m", sha256_digest(data), len(data), io.BytesIO(data))
    assert w.elsewhere and w.leaked() == []


def test_a_401_from_another_host_gets_no_token_and_no_credentials() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "evil.test":  # asks for a token to another repository
            w.elsewhere.append(request)
            return httpx.Response(401, headers={"WWW-Authenticate": (
                f'Bearer realm="https://{HOST}/token",scope="repository:secret/x:push"')})
        return w.handle(request)

    w = World(lambda r: httpx.Response(202, headers={
        "Location": "https://evil.test/v2/m/blobs/uploads/1"}) if r.method == "POST"
        else httpx.Response(404))
    c = RegistryClient(HOST, credentials=Credentials("alice", "s3cret"),
                       transport=httpx.MockTransport(handler), retry=RetryPolicy(attempts=1))
    data = b"weights"
    with pytest.raises(RegistryError, match="401"):
        c.upload_blob("m", sha256_digest(data), len(data), io.BytesIO(data))
    assert [r.url.params.get("scope") for r in w.token_requests] == ["repository:m:pull,push"]
    assert w.elsewhere and w.leaked() == []


def test_a_redirect_to_another_host_carries_no_token() -> None:
    w = World(lambda r: httpx.Response(307, headers={"Location": "https://evil.test/blob"}))
    assert w.client().tags("m") == ["stolen"]
    assert w.elsewhere and w.leaked() == []


def test_the_registrys_own_pages_still_get_the_token() -> None:
    def registry(request: httpx.Request) -> httpx.Response:
        last = request.url.params.get("last")
        return httpx.Response(200, json={"tags": [last or "v1"]}, headers={} if last else {
            "Link": '</v2/m/tags/list?n=1000&last=v2>; rel="next"'})

    w = World(registry)
    assert w.client().tags("m") == ["v1", "v2"]
    assert len(w.token_requests) == 1  # the cached token served the second page


# ---------------------------------------------------------------------------- trust policy


def _policy(signed: str) -> str:
    pem = public_pem(Ed25519PrivateKey.generate().public_key()).replace("\n", "\\n")
    return ("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\n"
            f'keys:\n  release: {{publicKey: "{pem}"}}\n'
            f'rules:\n  - {{repositories: ["{signed}"], require: signed, keys: [release]}}\n'
            '  - {repositories: ["*"], require: none}\n')


@pytest.mark.parametrize(("rule", "name"), [
    ("localhost:5000/prod/*", "LOCALHOST:5000/prod/m"),
    ("localhost:5000/prod/*", "LocalHost:5000/prod/m"),
    ("LOCALHOST:5000/prod/*", "localhost:5000/prod/m"),
    ("reg.example/prod/*", "reg.example:443/prod/m"),
    ("reg.example:443/prod/*", "REG.example/prod/m"),
    ("reg.example/prod/*", "reg.example:80/prod/m"),
    ("[::1]:5000/prod/*", "[::1]:5000/prod/m"),
    ("[::1]:5000/prod/*", "[0::1]:5000/prod/m"),
    ("127.1:5055/prod/*", "127.0.0.1:5055/prod/m"),  # a pattern may spell its host any way
    ("0x7f.0.0.1:5055/prod/*", "127.0.0.1:5055/prod/m"),
    ("[::ffff:127.0.0.1]:5055/prod/*", "127.0.0.1:5055/prod/m"),
    ("127.0.0.1:05055/prod/*", "127.0.0.1:5055/prod/m"),
    ("reg.example:0443/prod/*", "reg.example/prod/m"),
    ("REG.example.:443/prod/*", "reg.example/prod/m"),
])
def test_a_signed_rule_matches_every_spelling_of_its_host(rule: str, name: str) -> None:
    decision = parse_policy(_policy(rule), "p.yaml").decide(name)
    assert decision.require_signature and decision.rule == "p.yaml: rules[0]"


@pytest.mark.parametrize("name", ["localhost:5001/prod/m", "reg.example:8443/prod/m",
                                  "evil-localhost:5000/prod/m"])
def test_other_hosts_and_ports_stay_other(name: str) -> None:
    rule = "localhost:5000/prod/*" if "localhost" in name else "reg.example/prod/*"
    assert not parse_policy(_policy(rule), "p.yaml").decide(name).require_signature


OTHER_SPELLINGS = [  # of 127.0.0.1:5055, each of which pulled an unsigned model
    "127.0.0.1:05055", "127.0.0.1:0005", "127.1:5055", "127.0.1:5055", "2130706433:5055",
    "0x7f.0.0.1:5055", "0x7f000001:5055", "0177.0.0.1:5055", "127.000.000.001:5055",
    "0X7F.1:5055", "[::ffff:127.0.0.1]:5055", "[::ffff:7f00:1]:5055",
    "[0:0:0:0:0:ffff:7f00:1]:5055",
]


@pytest.mark.parametrize("spelling", OTHER_SPELLINGS)
def test_another_spelling_of_a_signed_registrys_address_is_refused(spelling: str) -> None:
    """A rule for 127.0.0.1:5055 and a catch-all: the resolver reads each spelling as
    127.0.0.1 and httpx connects there, but the policy compared it as another host."""
    with pytest.raises(ArtifactInputError) as info:
        parse_reference(f"{spelling}/prod/m:1")
    assert "write 127.0.0.1:5" in str(info.value) and info.value.exit_code == 2
    with pytest.raises(ArtifactInputError):
        RegistryClient(spelling)


@pytest.mark.parametrize(("spelling", "fix"), [
    ("127.0.0.1:\u0665\u0660\u0665\u0665", "not a registry host"),  # Arabic-Indic 5055
    ("127.0.0.1:\uff15\uff10\uff15\uff15", "not a registry host"),  # full-width 5055
    ("127.0.0.1:005055", "not a registry host"),
    ("reg.example:0443", "write reg.example:443"),
    ("reg.example:00080", "write reg.example:80"),
    ("127.0.0.08:5055", "no IPv4 address"), ("1.2.3.4.5:5055", "no IPv4 address"),
    ("0x:5055", "no registry's address"), ("0.0.0.0:5055", "no registry's address"),
    ("0:5055", "no registry's address"), ("[::]:5055", "no registry's address"),
    ("[::ffff:0.0.0.0]:5055", "no registry's address"),
])
def test_ports_are_ascii_digits_and_numbers_are_addresses_in_one_spelling(
        spelling: str, fix: str) -> None:
    spelling = spelling.encode().decode("unicode_escape")
    with pytest.raises(ArtifactInputError, match=fix):
        parse_reference(f"{spelling}/prod/m:1")


def test_the_spellings_that_stay_are_the_policys_own() -> None:
    policy = parse_policy(_policy("127.0.0.1:5055/prod/*"), "p.yaml")
    for host in ("127.0.0.1:5055", "[::1]:5055", "localhost:5055", "reg.example:5055"):
        ref = parse_reference(f"{host}/prod/m:1")  # accepted as written
        assert policy.decide(ref.name).require_signature == host.startswith("127.")


# ---------------------------------------------------------------------------- digests


def _model(fake: FakeRegistry) -> tuple[bytes, str, str]:
    body = json.dumps({"schemaVersion": 2, "config": {
        "mediaType": "x", "digest": sha256_digest(b"{}"), "size": 2}}).encode()
    sha512 = "sha512:" + hashlib.sha512(body).hexdigest()
    fake.manifests["m"] = {"v1": body, sha256_digest(body): body, sha512: body}
    return body, sha256_digest(body), sha512


def test_a_sha512_pin_is_checked_against_the_bytes() -> None:
    fake = FakeRegistry()
    body, sha256, sha512 = _model(fake)
    c = RegistryClient(HOST, transport=fake.transport, retry=RetryPolicy(attempts=1))
    assert c.get_manifest("m", sha512) == (body, sha256, "")
    other = "sha512:" + "0" * 128
    fake.manifests["m"][other] = body  # the registry serves other bytes under the pin
    with pytest.raises(RegistryError, match="served other content"):
        c.get_manifest("m", other)


def test_signing_a_tag_signs_the_digest_of_the_bytes_not_the_heads_claim() -> None:
    fake = FakeRegistry()
    _, digest, _ = _model(fake)
    decoy = json.dumps({"schemaVersion": 2, "config": {
        "mediaType": "decoy", "digest": sha256_digest(b"{}"), "size": 2}}).encode()
    fake.manifests["m"][sha256_digest(decoy)] = decoy
    fake.head_digest["v1"] = sha256_digest(decoy)  # HEAD names another manifest
    c = RegistryClient(HOST, transport=fake.transport, retry=RetryPolicy(attempts=1))
    signed = sign_reference(c, parse_reference(f"{HOST}/m:v1"), Ed25519PrivateKey.generate())
    assert signed.digest == digest
    sig = json.loads(fake.manifests["m"][signature_tag(digest)])
    payload = fake.blobs[sig["layers"][0]["digest"]]
    assert cosign.claims(payload) == (f"{HOST}/m", digest)
    assert signature_tag(sha256_digest(decoy)) not in fake.manifests["m"]


# ---------------------------------------------------------------------------- auth files


def test_credentials_from_an_auth_file_others_can_read_come_with_a_warning(
        tmp_path: Path) -> None:
    auth = tmp_path / "config.json"
    auth.write_text(json.dumps({"auths": {"https://Reg.Test:5000/v1/": {
        "auth": base64.b64encode(b"alice:s3cret").decode()}}}))
    env = {"REGISTRY_AUTH_FILE": str(auth)}
    for mode, who in ((0o644, "every user"), (0o640, "its group")):
        auth.chmod(mode)
        creds = load_credentials(HOST, env, tmp_path)
        assert creds is not None and creds.password == "s3cret"
        assert str(auth) in creds.warning and f"chmod 600 {auth}" in creds.warning
        assert who in creds.warning and f"{mode:04o}" in creds.warning
        assert RegistryClient(HOST, credentials=creds).warnings == [creds.warning]
    auth.chmod(0o600)
    creds = load_credentials("REG.test:5000", env, tmp_path)  # any spelling of the host
    assert creds is not None and creds.warning == ""
    assert RegistryClient(HOST, credentials=creds).warnings == []
