"""Signatures in the registry, in cosign's layout: attach (push) and collect.

See :mod:`aiplat.artifacts.cosign` for the formats. Attaching writes the OCI 1.1 referrers
form where the registry serves the referrers API (``GET /v2/<name>/referrers/<digest>``
answers an image index), and cosign's ``sha256-<hex>.sig`` tag otherwise. Either way the
signature manifest holds every signature made so far (one simple-signing layer per key;
signing again with the same key replaces that key's layer), so several keys (release
team, security team) can sign the same model.

Collecting reads both places, because ``cosign sign`` writes the tag even on a registry
that serves referrers: the referrers of the digest (cosign's signature artifact type, and
the artifact type of aiplat's format before cosign's) and the tag.
"""

from __future__ import annotations

import base64
import binascii

from aiplat.artifacts import cosign
from aiplat.artifacts.client import RegistryClient
from aiplat.artifacts.cosign import PrivateKey
from aiplat.artifacts.errors import ArtifactError, RegistryError, SignatureError
from aiplat.artifacts.modelpack import Descriptor, Manifest
from aiplat.artifacts.push import push_blob_bytes
from aiplat.artifacts.reference import Reference, signature_tag
from aiplat.artifacts.signing import (
    SIGNATURE_TYPE,
    Policy,
    Signature,
    check_signature,
    key_id,
    sign,
)

PAYLOAD_LIMIT = 1024 * 1024
REFERRER_TYPES = (cosign.REFERRER_TYPE, SIGNATURE_TYPE)


def _tag_manifest(client: RegistryClient, repo: str, digest: str) -> Manifest | None:
    try:
        body, _, _ = client.get_manifest(repo, signature_tag(digest))
    except RegistryError as e:
        if e.status == 404:
            return None
        raise
    try:
        return Manifest.from_bytes(body, f"{repo}:{signature_tag(digest)}")
    except ArtifactError:
        return None  # an index or junk under the tag: no signature of ours


def _referrer_manifests(client: RegistryClient, repo: str,
                        refs: list[dict[str, object]]) -> list[tuple[str, Manifest]]:
    out = []
    for r in refs:
        body, digest, _ = client.get_manifest(repo, str(r["digest"]))
        try:
            out.append((digest, Manifest.from_bytes(body, f"{repo}@{digest}")))
        except ArtifactError:
            continue
    return out


def _signatures_in(client: RegistryClient, repo: str, manifest: Manifest,
                   where: str) -> list[Signature]:
    out = []
    for layer in manifest.layers:
        if layer.media_type == cosign.SIMPLESIGNING:
            b64 = layer.annotations.get(cosign.SIGNATURE_ANNOTATION, "")
            try:
                raw = base64.b64decode(b64, validate=True)
            except (binascii.Error, ValueError):
                continue
            if not raw or layer.size > PAYLOAD_LIMIT:
                continue
            out.append(Signature(client.get_blob_bytes(repo, layer.digest, PAYLOAD_LIMIT), raw,
                                 where))
        elif layer.media_type == SIGNATURE_TYPE and layer.size <= PAYLOAD_LIMIT:
            out.append(Signature(client.get_blob_bytes(repo, layer.digest, PAYLOAD_LIMIT), None,
                                 where))
    return out


def find_signatures(client: RegistryClient, repo: str, digest: str) -> list[Signature]:
    """Every signature of ``repo@digest``: its referrers (when served) and its ``.sig`` tag."""
    found: list[Signature] = []
    refs = client.referrers(repo, digest, REFERRER_TYPES)
    for d, m in _referrer_manifests(client, repo, refs or []):
        found += _signatures_in(client, repo, m, f"referrer {d[:19]}")
    tagged = _tag_manifest(client, repo, digest)
    if tagged is not None:
        found += _signatures_in(client, repo, tagged, f"tag {signature_tag(digest)}")
    unique = {(s.payload, s.signature): s for s in found}
    return list(unique.values())


def attach_signature(client: RegistryClient, ref: Reference, key: PrivateKey) -> str:
    """Sign ``ref`` (resolved to its digest) in cosign's format and push the signature
    manifest; returns its digest."""
    repo = ref.repository
    digest = ref.digest or client.head_manifest(repo, ref.identifier)
    if digest is None:
        raise RegistryError(f"{ref}: no such manifest to sign", 404)
    body, _, media = client.get_manifest(repo, digest)
    sig = sign(key, f"{client.registry}/{repo}", digest)
    payload_digest = push_blob_bytes(client, repo, sig.payload)
    layer = Descriptor(cosign.SIMPLESIGNING, payload_digest, len(sig.payload),
                       {cosign.SIGNATURE_ANNOTATION: base64.b64encode(sig.signature or b"")
                        .decode()})
    refs = client.referrers(repo, digest, cosign.REFERRER_TYPE)
    referrers = refs is not None
    if referrers:
        previous = [m for _, m in _referrer_manifests(client, repo, refs or [])]
    else:
        tagged = _tag_manifest(client, repo, digest)
        previous = [tagged] if tagged is not None else []
    mine = {key_id(key.public_key()): key.public_key()}
    layers: list[Descriptor] = []
    for m in previous:
        for x in m.layers:
            if x.media_type != cosign.SIMPLESIGNING or x in layers:
                continue
            old = _signatures_in(client, repo, Manifest(m.config, (x,)), "")
            if old and check_signature(old[0], repo, digest, mine).valid:
                continue  # this key signs again: its new signature replaces the old one
            layers.append(x)
    layers.append(layer)
    config = cosign.image_config([x.digest for x in layers])
    config_digest = push_blob_bytes(client, repo, config)
    if referrers:
        manifest = Manifest(config=Descriptor(cosign.REFERRER_TYPE, config_digest, len(config)),
                            layers=tuple(layers), artifact_type=cosign.REFERRER_TYPE,
                            subject=Descriptor(media, digest, len(body)))
        data = manifest.to_bytes()
        from aiplat.artifacts.reference import sha256_digest

        return client.put_manifest(repo, sha256_digest(data), data)
    manifest = Manifest(config=Descriptor(cosign.OCI_CONFIG, config_digest, len(config)),
                        layers=tuple(layers))
    return client.put_manifest(repo, signature_tag(digest), manifest.to_bytes())


def enforce_policy(client: RegistryClient, ref: Reference, digest: str, policy: Policy) -> str:
    """Raise SignatureError unless the policy accepts ``ref``@``digest``; say why it did."""
    decision = policy.decide(ref.name)
    if not decision.require_signature:
        return f"unsigned allowed by {decision.rule}"
    sigs = find_signatures(client, ref.repository, digest)
    if not sigs:
        raise SignatureError(
            f"{ref.name}@{digest} is not signed, and {decision.rule} requires a signature."
            f" To fix: sign it (aiplat model sign {ref.name}@{digest} --key KEY, or cosign"
            " sign --key KEY) with a key the rule trusts")
    checks = [check_signature(s, ref.repository, digest, decision.keys) for s in sigs]
    good = sorted({c.key_id for c in checks if c.valid})
    if not good:
        why = "; ".join(f"{c.key_id}: {c.reason}" for c in checks)
        raise SignatureError(
            f"{ref.name}@{digest}: no valid signature from a trusted key ({why});"
            f" {decision.rule} requires one. To fix: sign with a trusted key, or add the"
            " signer's public key to the rule if you trust it")
    return f"signed by {', '.join(good)} ({decision.rule})"
