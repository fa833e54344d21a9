"""Signatures in the registry, in cosign's layout: attach (push) and collect.

See :mod:`aiplat.artifacts.cosign` for the formats. Attaching writes the OCI 1.1 referrers
form where the registry serves the referrers API (``GET /v2/<name>/referrers/<digest>``
answers an image index), and cosign's ``sha256-<hex>.sig`` tag otherwise. Either way the
signature manifest holds every signature made so far (one simple-signing layer per key;
signing again with the same key replaces that key's layer), so several keys (release
team, security team) can sign the same model.

Collecting reads both places, because ``cosign sign`` writes the tag even on a registry
that serves referrers: the referrers of the digest (cosign's signature artifact type, and
the artifact type of aiplat's format before cosign's) and the tag. What a registry lists is
bounded: referrers and signature layers are de-duplicated, more than ``MAX_SIGNATURES`` of
either is refused (cosign's limit), each signature manifest is read within
``MAX_SIGNATURE_MANIFEST_BYTES`` and each payload within ``MAX_SIGNATURE_PAYLOAD_BYTES``
while they stream, and all of them together within ``MAX_SIGNATURES_BYTES``
(:mod:`aiplat.artifacts.limits`): a :class:`_Budget` counts them.

Signing a tag signs the bytes: the manifest is fetched, hashed, and that digest is signed
(and returned to print), never a digest the registry merely reports.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from aiplat.artifacts import cosign, limits
from aiplat.artifacts.client import RegistryClient
from aiplat.artifacts.cosign import PrivateKey
from aiplat.artifacts.errors import ArtifactError, RegistryError, SignatureError
from aiplat.artifacts.modelpack import Descriptor, Manifest
from aiplat.artifacts.push import push_blob_bytes
from aiplat.artifacts.reference import Reference, sha256_digest, signature_tag
from aiplat.artifacts.signing import (
    SIGNATURE_TYPE,
    Policy,
    Signature,
    check_signature,
    key_id,
    sign,
)

PAYLOAD_LIMIT = limits.MAX_SIGNATURE_PAYLOAD_BYTES
REFERRER_TYPES = (cosign.REFERRER_TYPE, SIGNATURE_TYPE)


def _too_many(client: RegistryClient, repo: str, digest: str, n: int, what: str,
              ) -> SignatureError:
    return SignatureError(
        f"{client.registry}/{repo}@{digest}: the registry lists {n} {what}, more than"
        f" {limits.MAX_SIGNATURES} (MAX_SIGNATURES, cosign's limit); aiplat checks none of"
        " them (fix: delete the stale signature manifests of this model in the registry"
        " and sign it again)")


class _Budget:
    """The bytes read so far for one model's signatures (manifests and payloads), refused
    past MAX_SIGNATURES_BYTES: each is bounded, but a hundred at their bound are not."""

    def __init__(self, client: RegistryClient, repo: str, digest: str) -> None:
        self.client, self.repo, self.digest, self.spent = client, repo, digest, 0

    def take(self, n: int, what: str) -> None:
        self.spent += n
        if self.spent > limits.MAX_SIGNATURES_BYTES:
            raise SignatureError(
                f"{self.client.registry}/{self.repo}@{self.digest}: its {what} hold more than"
                f" {limits.MAX_SIGNATURES_BYTES // limits.MiB} MiB (MAX_SIGNATURES_BYTES;"
                " cosign's signatures of a model are a few KiB); aiplat checks none of them"
                " (fix: delete the stale signature manifests of this model in the registry"
                " and sign it again)")

    def manifest(self, ident: str, where: str) -> tuple[str, Manifest] | None:
        """The signature manifest ``ident`` (a digest or the .sig tag) and its digest,
        within MAX_SIGNATURE_MANIFEST_BYTES; None when it is no image manifest (an index
        or junk: no signature of ours)."""
        body, digest, _ = self.client.get_manifest(self.repo, ident, limits.SIGNATURE_MANIFEST)
        self.take(len(body), "signature manifests")
        try:
            return digest, Manifest.from_bytes(body, where)
        except ArtifactError:
            return None


def _tag_manifest(budget: _Budget) -> Manifest | None:
    tag = signature_tag(budget.digest)
    try:
        found = budget.manifest(tag, f"{budget.repo}:{tag}")
    except RegistryError as e:
        if e.status == 404:
            return None
        raise
    return found[1] if found else None


def _referrer_manifests(budget: _Budget, refs: list[dict[str, object]],
                        ) -> list[tuple[str, Manifest]]:
    out = []
    for r in refs:
        found = budget.manifest(str(r["digest"]), f"{budget.repo}@{r['digest']}")
        if found is not None:
            out.append(found)
    return out


def _signature_layers(manifest: Manifest) -> list[Descriptor]:
    """The layers of a signature manifest that carry a signature aiplat can check."""
    return [x for x in manifest.layers
            if x.media_type in (cosign.SIMPLESIGNING, SIGNATURE_TYPE)]


_Layer = tuple[Descriptor, str]  # a signature layer and where it was found


def _key(x: Descriptor) -> tuple[str, str, int, tuple[tuple[str, str], ...]]:
    return x.media_type, x.digest, x.size, tuple(sorted(x.annotations.items()))


def _signatures_in(budget: _Budget, layers: list[_Layer]) -> list[Signature]:
    """The signatures the ``layers`` carry, each payload read once, within
    MAX_SIGNATURE_PAYLOAD_BYTES while it streams (and the budget)."""
    payloads: dict[str, bytes] = {}
    out = []
    for layer, where in layers:
        raw: bytes | None = None
        if layer.media_type == cosign.SIMPLESIGNING:
            b64 = layer.annotations.get(cosign.SIGNATURE_ANNOTATION, "")
            try:
                raw = base64.b64decode(b64, validate=True)
            except (binascii.Error, ValueError):
                continue
            if not raw:
                continue
        if layer.size > PAYLOAD_LIMIT:
            continue  # says so itself: not a payload aiplat reads
        if layer.digest not in payloads:
            budget.take(layer.size, "signature manifests and payloads")  # before the read
            payloads[layer.digest] = budget.client.get_blob_bytes(
                budget.repo, layer.digest, limits.SIGNATURE_PAYLOAD)
        out.append(Signature(payloads[layer.digest], raw, where))
    return out


def _collect(client: RegistryClient, repo: str, digest: str,
             manifests: list[tuple[str, Manifest]]) -> list[_Layer]:
    """Every signature layer of ``manifests`` once (a layer listed twice is one), at most
    MAX_SIGNATURES."""
    layers: dict[tuple[str, str, int, tuple[tuple[str, str], ...]], _Layer] = {}
    for where, m in manifests:
        for x in _signature_layers(m):
            layers.setdefault(_key(x), (x, where))
    if len(layers) > limits.MAX_SIGNATURES:
        raise _too_many(client, repo, digest, len(layers), "signature layers")
    return list(layers.values())


def _signature_manifests(budget: _Budget, refs: list[dict[str, object]],
                         ) -> list[tuple[str, Manifest]]:
    if len(refs) > limits.MAX_SIGNATURES:
        raise _too_many(budget.client, budget.repo, budget.digest, len(refs),
                        "signature manifests (referrers)")
    return [(f"referrer {d[:19]}", m) for d, m in _referrer_manifests(budget, refs)]


def find_signatures(client: RegistryClient, repo: str, digest: str) -> list[Signature]:
    """Every signature of ``repo@digest``: its referrers (when served) and its ``.sig`` tag;
    each referrer, layer and payload once, at most MAX_SIGNATURES and MAX_SIGNATURES_BYTES
    in all."""
    budget = _Budget(client, repo, digest)
    refs = client.referrers(repo, digest, REFERRER_TYPES) or []
    manifests = _signature_manifests(budget, refs)
    tagged = _tag_manifest(budget)
    if tagged is not None:
        manifests.append((f"tag {signature_tag(digest)}", tagged))
    found = _signatures_in(budget, _collect(client, repo, digest, manifests))
    unique = {(s.payload, s.signature): s for s in found}
    return list(unique.values())


@dataclass(frozen=True)
class Signed:
    """What :func:`sign_reference` signed (the manifest digest it hashed itself) and the
    digest of the signature manifest it pushed."""

    digest: str
    signature: str


def signed_manifest(client: RegistryClient, ref: Reference) -> tuple[bytes, str, str]:
    """The manifest ``ref`` names, fetched whole: (bytes, their sha256 digest, media type).
    A tag is resolved by its bytes, not by the digest a HEAD reports; a pinned digest (sha256
    or sha512) is checked against the bytes by the client."""
    return client.get_manifest(ref.repository, ref.identifier)


def sign_reference(client: RegistryClient, ref: Reference, key: PrivateKey) -> Signed:
    """Sign ``ref``'s manifest in cosign's format: fetch it, hash its bytes, sign that
    digest, push the signature manifest; return both digests."""
    repo = ref.repository
    body, digest, media = signed_manifest(client, ref)
    sig = sign(key, f"{client.registry}/{repo}", digest)
    payload_digest = push_blob_bytes(client, repo, sig.payload)
    layer = Descriptor(cosign.SIMPLESIGNING, payload_digest, len(sig.payload),
                       {cosign.SIGNATURE_ANNOTATION: base64.b64encode(sig.signature or b"")
                        .decode()})
    refs = client.referrers(repo, digest, cosign.REFERRER_TYPE)
    referrers = refs is not None
    budget = _Budget(client, repo, digest)
    if referrers:
        previous = _signature_manifests(budget, refs or [])
    else:
        tagged = _tag_manifest(budget)
        previous = [("", tagged)] if tagged is not None else []
    mine = {key_id(key.public_key()): key.public_key()}
    layers: list[Descriptor] = []
    for x, where in _collect(client, repo, digest, previous):
        if x.media_type != cosign.SIMPLESIGNING:
            continue
        old = _signatures_in(budget, [(x, where)])
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
        return Signed(digest, client.put_manifest(repo, sha256_digest(data), data))
    manifest = Manifest(config=Descriptor(cosign.OCI_CONFIG, config_digest, len(config)),
                        layers=tuple(layers))
    return Signed(digest, client.put_manifest(repo, signature_tag(digest), manifest.to_bytes()))


def attach_signature(client: RegistryClient, ref: Reference, key: PrivateKey) -> str:
    """:func:`sign_reference`, returning the signature manifest's digest."""
    return sign_reference(client, ref, key).signature


def enforce_policy(client: RegistryClient, ref: Reference, digest: str, policy: Policy) -> str:
    """Raise SignatureError unless the policy accepts ``ref``@``digest``; say why it did."""
    decision = policy.decide(ref.name)
    if not decision.require_signature:
        return f"unsigned allowed by {decision.rule}"
    sigs = find_signatures(client, ref.repository, digest)
    if not sigs:
        raise SignatureError(
            f"{ref.name}@{digest} is not signed, and {decision.rule} requires a signature"
            f" (fix: sign it (aiplat model sign {ref.name}@{digest} --key KEY, or cosign"
            " sign --key KEY) with a key the rule trusts)")
    checks = [check_signature(s, ref.repository, digest, decision.keys) for s in sigs]
    good = sorted({c.key_id for c in checks if c.valid})
    if not good:
        why = "; ".join(f"{c.key_id}: {c.reason}" for c in checks)
        raise SignatureError(
            f"{ref.name}@{digest}: no valid signature from a trusted key ({why});"
            f" {decision.rule} requires one (fix: sign with a trusted key, or add the"
            " signer's public key to the rule if you trust it)")
    return f"signed by {', '.join(good)} ({decision.rule})"
