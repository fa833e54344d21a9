"""Signatures over manifest digests in cosign's format, and the trust policy (pure).

aiplat signs what cosign signs (:mod:`aiplat.artifacts.cosign`): the simple-signing payload
binding ``HOST/REPO`` to the manifest digest, signed with an ECDSA P-256 key (cosign's
default; Ed25519 and RSA keys work too), so ``cosign verify --key aiplat.pub`` and every
admission controller that checks cosign key-pair signatures accept a model aiplat signed,
and aiplat accepts a model ``cosign sign --key`` signed. Signing the digest rather than a
tag means a moved tag can never borrow a signature. The payload's repository must be the
model's (the registry host may differ, so a mirror verifies too).

Signatures made by aiplat before it spoke cosign's format (a JSON blob of media type
:data:`SIGNATURE_TYPE` with an Ed25519 signature) still verify; nothing writes them.

The policy (YAML) names public keys (PEM, e.g. a ``cosign.pub``) and ordered rules; the
first rule whose repository pattern matches decides: ``require: signed`` with the keys it
trusts, or ``require: none``. A pattern is ``HOST/PATH`` (or ``*``, every repository), and
its two parts are matched apart, with fnmatch's ``*``, ``?`` and ``[...]``: the host's name
against the registry's name and its port against the port (a pattern without one matches
a registry without one), each compared canonically (lower-case, default ports 443 and 80
dropped, an IP address in its one spelling;
:func:`~aiplat.artifacts.reference.canonical_host`), and the path against the repository,
where ``*`` spans folders. So a host glob never crosses ``/`` or ``:``: ``*.corp.example/*``
is every repository of every subdomain of corp.example, as ``*.corp.example`` is in
containers-policy.json's scopes (which take no port either), and not
``127.0.0.1:5155/x.corp.example/y`` (matched as one string, its ``*`` took
``127.0.0.1:5155/x``). A repository no rule matches is refused: a policy file means "deny
unless said otherwise". Parsing is strict: a key given twice in one mapping (two
``rules:``, which YAML loaders silently resolve to the last) is refused with its line, and
so is a pattern with no path (``h:1`` names no repository: write ``h:1/*``).

Nothing here does I/O: callers read files and talk to registries.
"""

from __future__ import annotations

import base64
import fnmatch
import json
from dataclasses import dataclass
from typing import Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aiplat.artifacts import cosign, limits
from aiplat.artifacts.cosign import PrivateKey, PublicKey
from aiplat.artifacts.errors import ArtifactInputError, SignatureError
from aiplat.artifacts.reference import canonical_name, host_and_port, shown
from aiplat.errors import InputError

SIGNATURE_TYPE = "application/vnd.aiplat.signature.v1+json"  # the format before cosign's
PAYLOAD_TYPE = "aiplat model signature v1"
_KEY_TYPES = (Ed25519PrivateKey, ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)
_PUBLIC_TYPES = (Ed25519PublicKey, ec.EllipticCurvePublicKey, rsa.RSAPublicKey)


def key_id(public: PublicKey) -> str:
    return cosign.fingerprint(public)


def generate_key() -> ec.EllipticCurvePrivateKey:
    """A new signing key of cosign's default type (ECDSA P-256)."""
    return ec.generate_private_key(ec.SECP256R1())


def public_pem(public: PublicKey) -> str:
    return public.public_bytes(serialization.Encoding.PEM,
                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def private_pem(private: PrivateKey) -> bytes:
    return private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())


def load_private_key(pem: bytes, where: str, password: bytes | None = None) -> PrivateKey:
    """An unencrypted PEM private key, or cosign's encrypted one (``password``)."""
    if any(f"BEGIN {t}".encode() in pem for t in cosign.ENCRYPTED_PEM_TYPES):
        if password is None:
            raise ArtifactInputError(f"{where}: a cosign encrypted key (fix: set COSIGN_PASSWORD"
                                     " to its password)")
        return cosign.decrypt_cosign_key(pem, password, where)
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as e:
        raise ArtifactInputError(f"{where}: not an unencrypted PEM private key ({e}); create one"
                                 " with `aiplat model sign --generate-key FILE`") from None
    if not isinstance(key, _KEY_TYPES):
        raise ArtifactInputError(f"{where}: a {type(key).__name__}; aiplat signs with ECDSA,"
                                 " Ed25519 or RSA keys")
    return key


def load_public_key(pem: str, where: str) -> PublicKey:
    try:
        key = serialization.load_pem_public_key(pem.encode())
    except (ValueError, TypeError) as e:
        raise ArtifactInputError(f"{where}: not a PEM public key ({e}); paste the .pub file"
                                 " written by `aiplat model sign --generate-key` or"
                                 " `cosign generate-key-pair`") from None
    if not isinstance(key, _PUBLIC_TYPES):
        raise ArtifactInputError(f"{where}: a {type(key).__name__}; signatures are checked"
                                 " with ECDSA, Ed25519 or RSA keys")
    return key


@dataclass(frozen=True)
class Signature:
    """One signature found in the registry: cosign's (payload + signature), or a legacy
    aiplat blob (``signature`` None, the blob in ``payload``)."""

    payload: bytes
    signature: bytes | None
    where: str = ""


def sign(private: PrivateKey, docker_reference: str, digest: str) -> Signature:
    """cosign's signature over ``docker_reference@digest`` (``HOST/REPO``)."""
    data = cosign.payload(docker_reference, digest)
    return Signature(data, cosign.sign_bytes(private, data))


def legacy_payload(repository: str, digest: str) -> bytes:
    doc = {"critical": {"identity": {"repository": repository},
                        "image": {"manifest-digest": digest}, "type": PAYLOAD_TYPE}}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def legacy_blob(private: Ed25519PrivateKey, repository: str, digest: str) -> bytes:
    """A signature blob in the format aiplat wrote before cosign's (tests of migration)."""
    data = legacy_payload(repository, digest)
    doc = {"keyId": key_id(private.public_key()),
           "payload": base64.b64encode(data).decode(),
           "signature": base64.b64encode(private.sign(data)).decode()}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class SignatureCheck:
    key_id: str
    valid: bool
    reason: str


def check_signature(sig: Signature | bytes, repository: str, digest: str,
                    keys: dict[str, PublicKey]) -> SignatureCheck:
    """Check one signature (or a legacy blob) against the trusted ``keys`` (id -> key)."""
    if isinstance(sig, bytes):
        return _check_legacy(sig, repository, digest, keys)
    if sig.signature is None:
        return _check_legacy(sig.payload, repository, digest, keys)
    claim = cosign.claims(sig.payload)
    if claim is None:
        return SignatureCheck("?", False, "not a cosign simple-signing payload")
    reference, signed = claim
    if signed != digest or cosign.repository_of(reference) != repository:
        return SignatureCheck("?", False, f"signs {shown(reference)}@{shown(signed)}, another"
                                          f" manifest or repository, not {repository}@{digest}")
    for kid, key in keys.items():
        if cosign.verify_bytes(key, sig.signature, sig.payload):
            return SignatureCheck(kid, True, "ok")
    return SignatureCheck("?", False, "signed by a key the policy does not trust here (or"
                                      " the signature is corrupt)")


def _check_legacy(blob: bytes, repository: str, digest: str,
                  keys: dict[str, PublicKey]) -> SignatureCheck:
    try:
        doc = limits.peer_json(blob)
        kid = shown(str(doc["keyId"]), 80)  # the blob's claim, printed in refusals
        data = base64.b64decode(doc["payload"])
        sig = base64.b64decode(doc["signature"])
    except (ValueError, KeyError, TypeError):
        return SignatureCheck("?", False, "malformed signature blob")
    if data != legacy_payload(repository, digest):
        return SignatureCheck(kid, False, f"signs another manifest or repository, not "
                                          f"{repository}@{digest}")
    key = keys.get(kid)
    if not isinstance(key, Ed25519PublicKey):
        return SignatureCheck(kid, False, "signed by a key the policy does not trust here")
    if not cosign.verify_bytes(key, sig, data):
        return SignatureCheck(kid, False, "the signature does not verify with the key")
    return SignatureCheck(kid, True, "ok")


# ---------------------------------------------------------------------------- policy


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class KeySpec(_Model):
    public_key: str = Field(alias="publicKey", min_length=1)


class Rule(_Model):
    repositories: list[str] = Field(min_length=1)
    require: Literal["signed", "none"]
    keys: list[str] = []


class PolicyDoc(_Model):
    api_version: Literal["aiplat/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["TrustPolicy"]
    keys: dict[str, KeySpec] = {}
    rules: list[Rule] = Field(min_length=1)


@dataclass(frozen=True)
class Decision:
    require_signature: bool
    keys: dict[str, PublicKey]
    rule: str


@dataclass(frozen=True)
class Policy:
    doc: PolicyDoc
    public_keys: dict[str, PublicKey]
    source: str

    def decide(self, name: str) -> Decision:
        """The rule for ``registry/repository`` (first match wins; no match refuses). Hosts
        compare canonically, in the name and the patterns alike: ``LOCALHOST:5000/m`` is
        ``localhost:5000/m``, ``reg.example:443/m`` is ``reg.example/m`` and a pattern's
        ``127.1:5000`` is ``127.0.0.1:5000``, so another spelling of a signed repository's host
        cannot fall through to a later rule (and a reference may not use one:
        :func:`~aiplat.artifacts.reference.parse_registry` refuses it)."""
        canon = canonical_name(name)
        for i, rule in enumerate(self.doc.rules):
            if any(_matches(pat, canon) for pat in rule.repositories):
                keys = {key_id(self.public_keys[k]): self.public_keys[k] for k in rule.keys}
                return Decision(rule.require == "signed", keys, f"{self.source}: rules[{i}]")
        raise SignatureError(
            f"{self.source}: no rule matches {name}; the policy refuses it (fix: add a rule"
            f" with repositories: ['{name}'] (require: signed and its keys, or require: none))")


EVERY_REPOSITORY = "*"
"""The one pattern without a ``/``: every repository of every registry."""


def _matches(pattern: str, name: str) -> bool:
    """Whether ``pattern`` (``HOST/PATH``) matches the canonical ``name``: the host's name,
    its port and the repository each against their own part of the pattern, so no ``*``
    of the host reaches past a ``:`` or a ``/``."""
    if pattern == EVERY_REPOSITORY:
        return True
    host_pattern, _, path_pattern = canonical_name(pattern).partition("/")
    host, _, path = name.partition("/")
    want_name, want_port = host_and_port(host_pattern)
    got_name, got_port = host_and_port(host)
    if (want_port is None) != (got_port is None):
        return False
    return (fnmatch.fnmatchcase(got_name, _literal_brackets(want_name))
            and (want_port is None or fnmatch.fnmatchcase(got_port or "", want_port))
            and fnmatch.fnmatchcase(path, path_pattern))


def _literal_brackets(host: str) -> str:
    """An IPv6 host's brackets (``[::1]``) as fnmatch reads them literally, not as a
    character class."""
    if host.startswith("[") and host.endswith("]"):
        return "[[]" + host[1:-1] + "[]]"
    return host


def _check_patterns(doc: PolicyDoc, source: str) -> None:
    """Every pattern names repositories: ``HOST/PATH``, or ``*``."""
    for i, rule in enumerate(doc.rules):
        for j, pattern in enumerate(rule.repositories):
            if pattern != EVERY_REPOSITORY and "/" not in pattern:
                raise ArtifactInputError(
                    f"{source}: rules[{i}].repositories[{j}]: {pattern[:100]!r} names a"
                    f" registry but no repository, so it matches none; write"
                    f" {pattern[:100] + '/*'!r} for every repository there (or '*' for every"
                    " repository of every registry)")


def parse_policy(text: str, source: str) -> Policy:
    from aiplat import inputs

    fix = "see `aiplat model sign --help` for the TrustPolicy format"
    try:
        # Bounded (nesting, alias expansion), duplicate keys refused with their line: YAML
        # would keep only the last one, e.g. a second `rules:` that drops the first.
        raw = inputs.mapping(inputs.parse_yaml(text, source, "a TrustPolicy"), source,
                             "a TrustPolicy", fix)
    except InputError as e:
        raise ArtifactInputError(str(e)) from None
    try:
        doc = PolicyDoc.model_validate(raw)
    except ValidationError as e:
        lines = [f"{source}: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
                 for err in e.errors()]
        raise ArtifactInputError("\n".join(lines) + f"\n(fix: {fix})") from None
    _check_patterns(doc, source)
    keys = {name: load_public_key(k.public_key, f"{source}: keys.{name}.publicKey")
            for name, k in doc.keys.items()}
    for i, rule in enumerate(doc.rules):
        unknown = [k for k in rule.keys if k not in keys]
        if unknown:
            raise ArtifactInputError(f"{source}: rules[{i}].keys: unknown key(s) {unknown};"
                                     f" define them under keys: (known: {sorted(keys)})")
        if rule.require == "signed" and not rule.keys:
            raise ArtifactInputError(f"{source}: rules[{i}]: require: signed needs keys: [...]")
    return Policy(doc, keys, source)
