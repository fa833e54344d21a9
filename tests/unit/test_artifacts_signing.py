"""Signatures in cosign's format, the trust policy and its enforcement against an in-memory
registry (tag form, and the OCI 1.1 referrers form where the registry serves it)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from pathlib import Path

import httpx
import pytest
from artifacts_fakes import FakeRegistry
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aiplat.artifacts import cosign
from aiplat.artifacts.client import RegistryClient, RetryPolicy
from aiplat.artifacts.errors import ArtifactInputError, SignatureError
from aiplat.artifacts.modelpack import OCI_INDEX, ModelInfo
from aiplat.artifacts.package import package_dir
from aiplat.artifacts.push import push_package
from aiplat.artifacts.reference import parse_reference, signature_tag
from aiplat.artifacts.signatures import attach_signature, enforce_policy, find_signatures
from aiplat.artifacts.signing import (
    Policy,
    Signature,
    check_signature,
    generate_key,
    key_id,
    legacy_blob,
    load_private_key,
    parse_policy,
    private_pem,
    public_pem,
    sign,
)

D = "sha256:" + "cd" * 32
HOST = "reg.test:5000"

Key = Ed25519PrivateKey | ec.EllipticCurvePrivateKey


def policy_text(keys: dict[str, Key], rules: str) -> str:
    lines = ["apiVersion: aiplat/v1alpha1", "kind: TrustPolicy", "keys:" if keys else "keys: {}"]
    for name, k in keys.items():
        pem = public_pem(k.public_key()).replace("\n", "\\n")
        lines.append(f'  {name}: {{publicKey: "{pem}"}}')
    return "\n".join(lines) + "\nrules:\n" + rules


def test_payload_is_cosigns_simple_signing_byte_for_byte() -> None:
    assert cosign.payload("h:5000/models/m", D) == (
        b'{"critical":{"identity":{"docker-reference":"h:5000/models/m"},"image":'
        b'{"docker-manifest-digest":"' + D.encode() + b'"},"type":"cosign container image'
        b' signature"},"optional":null}')
    assert cosign.repository_of("127.0.0.1:5000/models/m") == "models/m"
    assert cosign.repository_of("localhost/m") == "m"
    assert cosign.repository_of("library/m") == "library/m"


@pytest.mark.parametrize("make", [generate_key, Ed25519PrivateKey.generate],
                         ids=["ecdsa-p256", "ed25519"])
def test_signature_verifies_only_for_its_digest_repo_and_key(make: object) -> None:
    assert callable(make)
    k, other = make(), make()
    sig = sign(k, "h:5000/models/m", D)
    keys = {key_id(k.public_key()): k.public_key()}
    assert check_signature(sig, "models/m", D, keys).valid
    assert check_signature(sig, "models/m", D, keys).key_id == key_id(k.public_key())
    assert not check_signature(sig, "models/other", D, keys).valid
    assert not check_signature(sig, "models/m", "sha256:" + "00" * 32, keys).valid
    assert "does not trust" in check_signature(
        sig, "models/m", D, {key_id(other.public_key()): other.public_key()}).reason
    assert sig.signature is not None
    forged = Signature(sig.payload, bytes([sig.signature[0] ^ 1]) + sig.signature[1:])
    assert not check_signature(forged, "models/m", D, keys).valid
    # The payload is what is signed: another digest in a valid-looking payload fails.
    swapped = Signature(cosign.payload("h:5000/models/m", "sha256:" + "00" * 32), sig.signature)
    assert not check_signature(swapped, "models/m", "sha256:" + "00" * 32, keys).valid
    assert "simple-signing" in check_signature(Signature(b"junk", b"x"), "models/m", D,
                                               keys).reason


def test_legacy_aiplat_signatures_still_verify() -> None:
    k = Ed25519PrivateKey.generate()
    blob = legacy_blob(k, "models/m", D)
    keys = {key_id(k.public_key()): k.public_key()}
    assert check_signature(blob, "models/m", D, keys).valid
    assert check_signature(Signature(blob, None), "models/m", D, keys).valid
    assert not check_signature(blob, "models/other", D, keys).valid
    assert check_signature(b"junk", "models/m", D, keys).reason == "malformed signature blob"


def test_generated_key_is_cosigns_default_type_and_loads_back() -> None:
    k = generate_key()
    assert isinstance(k.curve, ec.SECP256R1)
    assert key_id(k.public_key()).startswith("ecdsa-p256:")
    back = load_private_key(private_pem(k), "k")
    assert key_id(back.public_key()) == key_id(k.public_key())
    assert public_pem(k.public_key()).startswith("-----BEGIN PUBLIC KEY-----")


# A key written by `cosign generate-key-pair` (cosign v3.1.3) with COSIGN_PASSWORD=aiplat-test.
COSIGN_KEY = """-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----
eyJrZGYiOnsibmFtZSI6InNjcnlwdCIsInBhcmFtcyI6eyJOIjo2NTUzNiwiciI6
OCwicCI6MX0sInNhbHQiOiIvcytMMjhYRHVTMGZvYms5aXpxWDluUG1vZmsrZEtp
bXM5MmQvYnk1aVl3PSJ9LCJjaXBoZXIiOnsibmFtZSI6Im5hY2wvc2VjcmV0Ym94
Iiwibm9uY2UiOiJ0VEFNdyszaEZtTHB1RWtvQVFaajIwNVJFaDg5MXB5byJ9LCJj
aXBoZXJ0ZXh0IjoiWXM4bXBoZkFxYmxuVFYxanJINXJFQlh2S3hRWHVUeDRSdDZm
MUhPdDhqT2dtQnFIZm9kdnh1L0VTL0Z6NlNVYTdxdGEzNzBKd0FsRk01SXUvZnpt
WDlEY0pFcFNYU2owL0IxT2ZzTldJVFhWMkd4VFpBb2tUNjgrSHNmNGJEOEFWRW9S
eDQxT3VPUXgwT1lleTNQN1hGN1dDNmdYcmwzYTdhcjJLV0VTbVdZdHFVaGFxUHov
b1dzVjUyRys4VnlLYm1Ka2tXK0lrczNzMUE9PSJ9
-----END ENCRYPTED SIGSTORE PRIVATE KEY-----
"""
COSIGN_PUB = """-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEGqOFcnabK6ApQ4fTiPR2Z+D1T+dJ
IsZBRKu7nL/FS4jI+OP5P326HELhkS83ihcaCRu8y9UPZfHXB2TSIPyEMQ==
-----END PUBLIC KEY-----
"""


def test_cosign_encrypted_key_decrypts_with_its_password() -> None:
    k = load_private_key(COSIGN_KEY.encode(), "cosign.key", b"aiplat-test")
    assert public_pem(k.public_key()) == COSIGN_PUB
    with pytest.raises(ArtifactInputError, match="wrong password"):
        load_private_key(COSIGN_KEY.encode(), "cosign.key", b"nope")
    with pytest.raises(ArtifactInputError, match="COSIGN_PASSWORD"):
        load_private_key(COSIGN_KEY.encode(), "cosign.key")


def test_policy_first_match_wins_and_no_match_refuses() -> None:
    k = Ed25519PrivateKey.generate()
    pol = parse_policy(policy_text({"rel": k}, (
        '  - {repositories: ["h:1/prod/*"], require: signed, keys: [rel]}\n'
        '  - {repositories: ["h:1/*"], require: none}\n')), "p.yaml")
    assert pol.decide("h:1/prod/m").require_signature
    assert not pol.decide("h:1/scratch/m").require_signature
    with pytest.raises(SignatureError, match="no rule matches other:1/x"):
        pol.decide("other:1/x")


def _host_wildcard_policy() -> Policy:
    """The red team's polw.yaml (issue #38): corp hosts need nothing, the release registry a
    signature."""
    return parse_policy(policy_text({"rel": Ed25519PrivateKey.generate()}, (
        "  - {repositories: ['*.corp.example/*'], require: none}\n"
        "  - {repositories: ['127.0.0.1:5155/*'], require: signed, keys: [rel]}\n")), "p.yaml")


@pytest.mark.parametrize("name", [
    "127.0.0.1:5155/x.corp.example/y",  # the signed registry, by a repository's name
    "127.0.0.1:5155/team/a.corp.example",
])
def test_a_host_wildcard_does_not_reach_into_the_repository(name: str) -> None:
    """``*.corp.example/*`` matched ``127.0.0.1:5155/x.corp.example/y`` as one string (its
    ``*`` took ``127.0.0.1:5155/x``), so the signed registry's models pulled unsigned."""
    decision = _host_wildcard_policy().decide(name)
    assert decision.require_signature and decision.rule == "p.yaml: rules[1]"


@pytest.mark.parametrize("name", [
    "evil.example/x.corp.example/y", "evil.example/a.corp.example",
    "x.corp.example.evil.example/m", "evilcorp.example/m", "corp.example/m",
    "reg.corp.example:5000/m",  # a port is another server, as in containers-policy.json
])
def test_a_host_wildcard_matches_hosts_only(name: str) -> None:
    with pytest.raises(SignatureError, match="no rule matches"):
        _host_wildcard_policy().decide(name)


@pytest.mark.parametrize("name", ["reg.corp.example/m", "a.b.corp.example/team/m",
                                  "REG.corp.example:443/m"])
def test_a_host_wildcard_matches_its_subdomains(name: str) -> None:
    decision = _host_wildcard_policy().decide(name)
    assert not decision.require_signature and decision.rule == "p.yaml: rules[0]"


@pytest.mark.parametrize(("pattern", "name", "matched"), [
    ("*", "127.0.0.1:5155/a/b", True),  # the catch-all: every host and port
    ("h:1/*", "h:1/a/b/c", True),  # a path's * spans folders, as before
    ("*.corp.example:*/*", "reg.corp.example:5000/m", True),
    ("*.corp.example:*/*", "reg.corp.example/m", False),
    ("127.0.0.1:51*/*", "127.0.0.1:5155/m", True),
    ("127.0.0.1:51*/*", "127.0.0.1:6155/m/5155/x", False),
    ("reg.?xample/*", "reg.example/m", True),
    ("reg[./]example/*", "reg/example/m", False),
    ("[::1]:5000/*", "[::1]:5000/m", True),
    ("*/m", "h:1/m", False),  # a host glob stops at the port's colon too
])
def test_host_and_path_are_matched_apart(pattern: str, name: str, matched: bool) -> None:
    pol = parse_policy(policy_text({}, f"  - {{repositories: ['{pattern}'], require: none}}\n"),
                       "p.yaml")
    if matched:
        assert pol.decide(name).rule == "p.yaml: rules[0]"
    else:
        with pytest.raises(SignatureError, match="no rule matches"):
            pol.decide(name)


@pytest.mark.parametrize("pattern", ["h:1", "*.corp.example", "reg.example"])
def test_a_pattern_without_a_repository_part_is_refused(pattern: str) -> None:
    """``h:1`` matched nothing (it named no repository) and said nothing about it."""
    with pytest.raises(ArtifactInputError) as info:
        parse_policy(policy_text({}, f"  - {{repositories: ['{pattern}'], require: none}}\n"),
                     "p.yaml")
    msg = str(info.value)
    assert "p.yaml: rules[0].repositories[0]" in msg and f"'{pattern}/*'" in msg, msg


@pytest.mark.parametrize(("rules", "fragment"), [
    ('  - {repositories: ["*"], require: signed, keys: [nope]}\n', "unknown key"),
    ('  - {repositories: ["*"], require: signed}\n', "needs keys"),
    ('  - {repositories: ["*"], require: maybe}\n', "rules.0.require"),
])
def test_bad_policies_name_the_field(rules: str, fragment: str) -> None:
    with pytest.raises(ArtifactInputError, match=fragment) as e:
        parse_policy(policy_text({}, rules), "p.yaml")
    assert "p.yaml" in str(e.value)


def test_bad_public_key_is_input_error() -> None:
    text = ("apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\nkeys:\n  k: {publicKey: nope}\n"
            'rules:\n  - {repositories: ["*"], require: none}\n')
    with pytest.raises(ArtifactInputError, match=r"keys\.k\.publicKey"):
        parse_policy(text, "p.yaml")


class ReferrersRegistry(FakeRegistry):
    """The fake registry, serving the OCI 1.1 referrers API like distribution v3."""

    def handle(self, request: httpx.Request) -> httpx.Response:
        m = re.match(r"^/v2/(.+)/referrers/(sha256:[0-9a-f]{64})$", request.url.path)
        if not m:
            return super().handle(request)
        self.log.append((request.method, request.url.path, dict(request.headers)))
        repo, digest = m.groups()
        entries, seen = [], set()
        for body in self.manifests.get(repo, {}).values():
            doc = json.loads(body)
            d = "sha256:" + hashlib.sha256(body).hexdigest()
            if (doc.get("subject") or {}).get("digest") == digest and d not in seen:
                seen.add(d)
                entries.append({"mediaType": doc["mediaType"], "digest": d, "size": len(body),
                                "artifactType": doc.get("artifactType")})
        return httpx.Response(200, json={"schemaVersion": 2, "mediaType": OCI_INDEX,
                                         "manifests": entries},
                              headers={"Content-Type": OCI_INDEX})


def pushed(tmp_path: Path, fake: FakeRegistry) -> tuple[RegistryClient, str]:
    d = tmp_path / "m"
    d.mkdir()
    (d / "w.safetensors").write_bytes(os.urandom(5000))
    c = RegistryClient(HOST, transport=fake.transport, retry=RetryPolicy(backoff=0))
    ref = parse_reference(f"{HOST}/prod/m:v1")
    return c, push_package(c, ref, package_dir(d, ModelInfo(name="m"))).digest


@pytest.mark.parametrize("referrers", [False, True], ids=["tag", "referrers"])
def test_attach_and_enforce_against_registry(tmp_path: Path, referrers: bool) -> None:
    fake = ReferrersRegistry() if referrers else FakeRegistry()
    c, digest = pushed(tmp_path, fake)
    ref = parse_reference(f"{HOST}/prod/m:v1")
    good, bad = generate_key(), generate_key()
    pol = parse_policy(policy_text({"rel": good}, (
        f'  - {{repositories: ["{HOST}/prod/*"], require: signed, keys: [rel]}}\n')), "p")
    with pytest.raises(SignatureError, match="is not signed"):
        enforce_policy(c, ref, digest, pol)
    attach_signature(c, ref, bad)
    with pytest.raises(SignatureError, match="does not trust"):
        enforce_policy(c, ref, digest, pol)
    attach_signature(c, ref, good)  # a second signature joins the first
    last = attach_signature(c, ref, good)  # and signing again replaces it, not adds
    assert enforce_policy(c, ref, digest, pol).startswith(f"signed by {key_id(good.public_key())}")
    body = fake.manifests["prod/m"][last]
    doc = json.loads(body)
    layers = doc["layers"]
    assert [x["mediaType"] for x in layers] == [cosign.SIMPLESIGNING] * 2
    assert all(base64.b64decode(x["annotations"][cosign.SIGNATURE_ANNOTATION]) for x in layers)
    payload = fake.blobs[layers[0]["digest"]]
    assert payload == cosign.payload(f"{HOST}/prod/m", digest)
    config = json.loads(fake.blobs[doc["config"]["digest"]])
    assert config["rootfs"]["diff_ids"] == [x["digest"] for x in layers]
    has_tag = signature_tag(digest) in fake.manifests["prod/m"]
    if referrers:  # pushed by digest, found through subject; no tag
        assert not has_tag
        assert doc["artifactType"] == doc["config"]["mediaType"] == cosign.REFERRER_TYPE
        assert doc["subject"]["digest"] == digest
    else:  # cosign's tag form: a plain image manifest
        assert has_tag and "subject" not in doc and "artifactType" not in doc
        assert doc["config"]["mediaType"] == cosign.OCI_CONFIG
    assert len(find_signatures(c, "prod/m", digest)) >= 2


def test_signatures_under_the_tag_are_found_on_a_referrers_registry(tmp_path: Path) -> None:
    """`cosign sign` writes the tag even where referrers are served; pull must look there."""
    tag_only = FakeRegistry()
    c, digest = pushed(tmp_path, tag_only)
    k = generate_key()
    attach_signature(c, parse_reference(f"{HOST}/prod/m:v1"), k)
    both = ReferrersRegistry(blobs=tag_only.blobs, manifests=tag_only.manifests)
    c2 = RegistryClient(HOST, transport=both.transport, retry=RetryPolicy(backoff=0))
    sigs = find_signatures(c2, "prod/m", digest)
    assert len(sigs) == 1 and sigs[0].where.startswith("tag ")


def test_legacy_signature_manifest_still_enforced(tmp_path: Path) -> None:
    from aiplat.artifacts.modelpack import EMPTY_DIGEST, EMPTY_JSON, OCI_EMPTY, Descriptor, Manifest
    from aiplat.artifacts.push import push_blob_bytes
    from aiplat.artifacts.signing import SIGNATURE_TYPE

    fake = FakeRegistry()
    c, digest = pushed(tmp_path, fake)
    k = Ed25519PrivateKey.generate()
    blob = legacy_blob(k, "prod/m", digest)
    push_blob_bytes(c, "prod/m", EMPTY_JSON)
    old = Manifest(config=Descriptor(OCI_EMPTY, EMPTY_DIGEST, 2),
                   layers=(Descriptor(SIGNATURE_TYPE, push_blob_bytes(c, "prod/m", blob),
                                      len(blob)),), artifact_type=SIGNATURE_TYPE)
    c.put_manifest("prod/m", signature_tag(digest), old.to_bytes())
    pol = parse_policy(policy_text({"rel": k}, (
        f'  - {{repositories: ["{HOST}/prod/*"], require: signed, keys: [rel]}}\n')), "p")
    ref = parse_reference(f"{HOST}/prod/m:v1")
    assert "signed by ed25519:" in enforce_policy(c, ref, digest, pol)
