"""Ed25519 signatures, the trust policy and its enforcement against an in-memory registry."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from artifacts_fakes import FakeRegistry
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aiplat.artifacts.client import RegistryClient, RetryPolicy
from aiplat.artifacts.errors import ArtifactInputError, SignatureError
from aiplat.artifacts.modelpack import ModelInfo
from aiplat.artifacts.package import package_dir
from aiplat.artifacts.push import push_package
from aiplat.artifacts.reference import parse_reference, signature_tag
from aiplat.artifacts.signatures import attach_signature, enforce_policy
from aiplat.artifacts.signing import (
    check_signature,
    key_id,
    parse_policy,
    public_pem,
    sign,
)

D = "sha256:" + "cd" * 32
HOST = "reg.test:5000"


def policy_text(keys: dict[str, Ed25519PrivateKey], rules: str) -> str:
    lines = ["apiVersion: aiplat/v1alpha1", "kind: TrustPolicy", "keys:" if keys else "keys: {}"]
    for name, k in keys.items():
        pem = public_pem(k.public_key()).replace("\n", "\\n")
        lines.append(f'  {name}: {{publicKey: "{pem}"}}')
    return "\n".join(lines) + "\nrules:\n" + rules


def test_signature_verifies_only_for_its_digest_repo_and_key() -> None:
    k, other = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    blob = sign(k, "models/m", D)
    keys = {key_id(k.public_key()): k.public_key()}
    assert check_signature(blob, "models/m", D, keys).valid
    assert not check_signature(blob, "models/other", D, keys).valid
    assert not check_signature(blob, "models/m", "sha256:" + "00" * 32, keys).valid
    assert "does not trust" in check_signature(
        blob, "models/m", D, {key_id(other.public_key()): other.public_key()}).reason
    forged = blob.replace(b'"signature":"', b'"signature":"AAAA')
    assert not check_signature(forged, "models/m", D, keys).valid
    assert check_signature(b"junk", "models/m", D, keys).reason == "malformed signature blob"


def test_policy_first_match_wins_and_no_match_refuses() -> None:
    k = Ed25519PrivateKey.generate()
    pol = parse_policy(policy_text({"rel": k}, (
        '  - {repositories: ["h:1/prod/*"], require: signed, keys: [rel]}\n'
        '  - {repositories: ["h:1/*"], require: none}\n')), "p.yaml")
    assert pol.decide("h:1/prod/m").require_signature
    assert not pol.decide("h:1/scratch/m").require_signature
    with pytest.raises(SignatureError, match="no rule matches other:1/x"):
        pol.decide("other:1/x")


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


def test_attach_and_enforce_against_registry(tmp_path: Path) -> None:
    d = tmp_path / "m"
    d.mkdir()
    (d / "w.safetensors").write_bytes(os.urandom(5000))
    fake = FakeRegistry()
    c = RegistryClient(HOST, transport=fake.transport, retry=RetryPolicy(backoff=0))
    ref = parse_reference(f"{HOST}/prod/m:v1")
    digest = push_package(c, ref, package_dir(d, ModelInfo(name="m"))).digest
    good, bad = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    pol = parse_policy(policy_text({"rel": good}, (
        f'  - {{repositories: ["{HOST}/prod/*"], require: signed, keys: [rel]}}\n')), "p")
    with pytest.raises(SignatureError, match="is not signed"):
        enforce_policy(c, ref, digest, pol)
    attach_signature(c, ref, bad)
    with pytest.raises(SignatureError, match="does not trust"):
        enforce_policy(c, ref, digest, pol)
    attach_signature(c, ref, good)  # a second signature joins the first
    assert "signed by ed25519:" in enforce_policy(c, ref, digest, pol)
    sig_manifest = fake.manifests["prod/m"][signature_tag(digest)]
    assert sig_manifest.count(b"application/vnd.aiplat.signature.v1+json") >= 3
    assert b'"subject":{"mediaType"' in sig_manifest
