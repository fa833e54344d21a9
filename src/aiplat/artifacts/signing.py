"""Ed25519 signatures over manifest digests, and the trust policy that requires them (pure).

What is signed is a small canonical JSON payload binding the repository (without the registry
host, so a mirror verifies too) to the manifest digest, in the spirit of the containers
"simple signing" format; signing the digest rather than a tag means a moved tag can never
borrow a signature. A signature travels as an OCI artifact in the same repository: a
manifest with ``artifactType`` :data:`SIGNATURE_TYPE`, an empty config, one layer per
signature and ``subject`` pointing at the model, tagged ``sha256-<hex>.sig`` (registries with
the referrers API also find it through ``subject``).

The policy (YAML) names public keys and ordered rules; the first rule whose repository
pattern (fnmatch on ``registry/repository``) matches decides: ``require: signed`` with the
keys it trusts, or ``require: none``. A repository no rule matches is refused: a policy
file means "deny unless said otherwise". Parsing is strict: a key given twice in one mapping
(two ``rules:``, which YAML loaders silently resolve to the last) is refused with its line.

Nothing here does I/O: callers read files and talk to registries.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aiplat.artifacts.errors import ArtifactInputError, SignatureError

SIGNATURE_TYPE = "application/vnd.aiplat.signature.v1+json"
PAYLOAD_TYPE = "aiplat model signature v1"


def signed_payload(repository: str, digest: str) -> bytes:
    doc = {"critical": {"identity": {"repository": repository},
                        "image": {"manifest-digest": digest}, "type": PAYLOAD_TYPE}}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


def key_id(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return "ed25519:" + hashlib.sha256(raw).hexdigest()[:16]


def public_pem(public: Ed25519PublicKey) -> str:
    return public.public_bytes(serialization.Encoding.PEM,
                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def private_pem(private: Ed25519PrivateKey) -> bytes:
    return private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())


def load_private_key(pem: bytes, where: str) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as e:
        raise ArtifactInputError(f"{where}: not an unencrypted PEM private key ({e}); create one"
                                 " with `aiplat model sign --generate-key FILE`") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ArtifactInputError(f"{where}: the key is not Ed25519; aiplat signs with Ed25519")
    return key


def load_public_key(pem: str, where: str) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(pem.encode())
    except (ValueError, TypeError) as e:
        raise ArtifactInputError(f"{where}: not a PEM public key ({e}); paste the .pub file"
                                 " written by `aiplat model sign --generate-key`") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ArtifactInputError(f"{where}: the key is not Ed25519")
    return key


def sign(private: Ed25519PrivateKey, repository: str, digest: str) -> bytes:
    """The signature blob (JSON) for ``repository@digest``."""
    payload = signed_payload(repository, digest)
    doc = {"keyId": key_id(private.public_key()),
           "payload": base64.b64encode(payload).decode(),
           "signature": base64.b64encode(private.sign(payload)).decode()}
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class SignatureCheck:
    key_id: str
    valid: bool
    reason: str


def check_signature(blob: bytes, repository: str, digest: str,
                    keys: dict[str, Ed25519PublicKey]) -> SignatureCheck:
    """Check one signature blob against the trusted ``keys`` (key id -> key)."""
    try:
        doc = json.loads(blob)
        kid = str(doc["keyId"])
        payload = base64.b64decode(doc["payload"])
        sig = base64.b64decode(doc["signature"])
    except (ValueError, KeyError, TypeError):
        return SignatureCheck("?", False, "malformed signature blob")
    if payload != signed_payload(repository, digest):
        return SignatureCheck(kid, False, f"signs another manifest or repository, not "
                                          f"{repository}@{digest}")
    key = keys.get(kid)
    if key is None:
        return SignatureCheck(kid, False, "signed by a key the policy does not trust here")
    try:
        key.verify(sig, payload)
    except InvalidSignature:
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
    keys: dict[str, Ed25519PublicKey]
    rule: str


@dataclass(frozen=True)
class Policy:
    doc: PolicyDoc
    public_keys: dict[str, Ed25519PublicKey]
    source: str

    def decide(self, name: str) -> Decision:
        """The rule for ``registry/repository`` (first match wins; no match refuses)."""
        for i, rule in enumerate(self.doc.rules):
            if any(fnmatch.fnmatchcase(name, pat) for pat in rule.repositories):
                keys = {key_id(self.public_keys[k]): self.public_keys[k] for k in rule.keys}
                return Decision(rule.require == "signed", keys, f"{self.source}: rules[{i}]")
        raise SignatureError(
            f"{self.source}: no rule matches {name}; the policy refuses it. To fix: add a rule"
            f" with repositories: ['{name}'] (require: signed and its keys, or require: none)")


class _DuplicateKeyError(Exception):
    def __init__(self, key: object, line: int, first: int) -> None:
        super().__init__(key)
        self.key, self.line, self.first = key, line, first


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (merge keys aside)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark.line)
            except TypeError:
                continue  # an unhashable key: SafeLoader reports it below
            if first != key_node.start_mark.line:
                raise _DuplicateKeyError(key, key_node.start_mark.line + 1, first + 1)
        return super().construct_mapping(node, deep=deep)


def parse_policy(text: str, source: str) -> Policy:
    try:
        raw = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except _DuplicateKeyError as e:
        raise ArtifactInputError(
            f"{source}:{e.line}: duplicate key {e.key!r} (first at line {e.first}); YAML would"
            " keep only the last one. To fix: merge the two into one") from None
    except yaml.YAMLError as e:
        raise ArtifactInputError(f"{source}: not YAML: {e}") from None
    try:
        doc = PolicyDoc.model_validate(raw)
    except ValidationError as e:
        lines = [f"{source}: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
                 for err in e.errors()]
        raise ArtifactInputError("\n".join(lines) + "\n(fix: see `aiplat model sign --help`"
                                 " for the TrustPolicy format)") from None
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
