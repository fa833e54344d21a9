"""Signatures in the registry: attach (push) and collect (referrers API, else the tag).

See :mod:`aiplat.artifacts.signing` for the format. Adding a signature reads the existing
signature manifest under ``sha256-<hex>.sig`` and re-pushes it with one more layer, so
several keys (release team, security team) can sign the same model.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aiplat.artifacts.client import RegistryClient
from aiplat.artifacts.errors import RegistryError, SignatureError
from aiplat.artifacts.modelpack import EMPTY_DIGEST, EMPTY_JSON, OCI_EMPTY, Descriptor, Manifest
from aiplat.artifacts.push import push_blob_bytes
from aiplat.artifacts.reference import Reference, signature_tag
from aiplat.artifacts.signing import SIGNATURE_TYPE, Policy, check_signature, sign


def _signature_manifest(client: RegistryClient, repo: str, digest: str) -> Manifest | None:
    try:
        body, _, _ = client.get_manifest(repo, signature_tag(digest))
    except RegistryError as e:
        if e.status == 404:
            return None
        raise
    return Manifest.from_bytes(body, f"{repo}:{signature_tag(digest)}")


def attach_signature(client: RegistryClient, ref: Reference, key: Ed25519PrivateKey) -> str:
    """Sign ``ref`` (resolved to its digest) and push; returns the signature manifest digest."""
    repo = ref.repository
    digest = ref.digest or client.head_manifest(repo, ref.identifier)
    if digest is None:
        raise RegistryError(f"{ref}: no such manifest to sign", 404)
    body, _, media = client.get_manifest(repo, digest)
    blob = sign(key, repo, digest)
    blob_digest = push_blob_bytes(client, repo, blob)
    push_blob_bytes(client, repo, EMPTY_JSON)
    existing = _signature_manifest(client, repo, digest)
    layers = [x for x in (existing.layers if existing else ()) if x.digest != blob_digest]
    layers.append(Descriptor(SIGNATURE_TYPE, blob_digest, len(blob)))
    manifest = Manifest(
        config=Descriptor(OCI_EMPTY, EMPTY_DIGEST, len(EMPTY_JSON)),
        layers=tuple(layers),
        artifact_type=SIGNATURE_TYPE,
        subject=Descriptor(media, digest, len(body)),
    )
    return client.put_manifest(repo, signature_tag(digest), manifest.to_bytes())


def signature_blobs(client: RegistryClient, repo: str, digest: str) -> list[bytes]:
    manifests: list[Manifest] = []
    referrers = client.referrers(repo, digest, SIGNATURE_TYPE)
    if referrers:
        for r in referrers:
            body, _, _ = client.get_manifest(repo, str(r["digest"]))
            manifests.append(Manifest.from_bytes(body))
    else:
        m = _signature_manifest(client, repo, digest)
        if m is not None:
            manifests.append(m)
    return [client.get_blob_bytes(repo, layer.digest)
            for m in manifests for layer in m.layers if layer.media_type == SIGNATURE_TYPE]


def enforce_policy(client: RegistryClient, ref: Reference, digest: str, policy: Policy) -> str:
    """Raise SignatureError unless the policy accepts ``ref``@``digest``; say why it did."""
    decision = policy.decide(ref.name)
    if not decision.require_signature:
        return f"unsigned allowed by {decision.rule}"
    blobs = signature_blobs(client, ref.repository, digest)
    if not blobs:
        raise SignatureError(
            f"{ref.name}@{digest} is not signed, and {decision.rule} requires a signature."
            f" To fix: sign it (aiplat model sign {ref.name}@{digest} --key KEY) with a key"
            " the rule trusts")
    checks = [check_signature(b, ref.repository, digest, decision.keys) for b in blobs]
    good = [c for c in checks if c.valid]
    if not good:
        why = "; ".join(f"{c.key_id}: {c.reason}" for c in checks)
        raise SignatureError(
            f"{ref.name}@{digest}: no valid signature from a trusted key ({why});"
            f" {decision.rule} requires one. To fix: sign with a trusted key, or add the"
            " signer's public key to the rule if you trust it")
    return f"signed by {', '.join(c.key_id for c in good)} ({decision.rule})"
