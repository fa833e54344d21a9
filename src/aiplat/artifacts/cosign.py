"""cosign's key-pair signature formats, so the Kubernetes world's verifiers check aiplat's
signatures and aiplat checks theirs (pure: bytes in, bytes out).

What cosign signs is the containers "simple signing" payload::

    {"critical":{"identity":{"docker-reference":"HOST/REPO"},
                 "image":{"docker-manifest-digest":"sha256:..."},
                 "type":"cosign container image signature"},"optional":null}

with the key's own scheme (ECDSA P-256 over SHA-256, DER-encoded, cosign's default key type;
Ed25519; RSA PKCS#1 v1.5 with SHA-256). The payload is a layer of media type
:data:`SIMPLESIGNING` in an OCI image manifest; the base64 signature is that layer's
annotation :data:`SIGNATURE_ANNOTATION`. The manifest is found in one of two places:

- the tag ``sha256-<hex>.sig`` in the model's repository (every cosign, every registry);
- the OCI 1.1 referrers form (``cosign sign --registry-referrers-mode=oci-1-1``, verified
  with ``cosign verify --experimental-oci11``): the same manifest pushed by digest with
  ``subject`` naming the model and ``artifactType`` (and config media type)
  :data:`REFERRER_TYPE`, listed by ``GET /v2/<name>/referrers/<digest>``.

Key files: public keys are PEM ``PUBLIC KEY`` (SubjectPublicKeyInfo), what ``cosign
generate-key-pair`` writes to ``cosign.pub`` and ``cosign verify --key`` reads. Private keys
are unencrypted PKCS#8 PEM (what ``aiplat model sign --generate-key`` writes) or cosign's own
``ENCRYPTED SIGSTORE PRIVATE KEY`` (scrypt + NaCl secretbox, password from
``COSIGN_PASSWORD``), decrypted here with :func:`decrypt_cosign_key`.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from nacl.exceptions import CryptoError
from nacl.secret import SecretBox

from aiplat.artifacts import limits
from aiplat.artifacts.errors import ArtifactInputError

SIMPLESIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"
SIGNATURE_ANNOTATION = "dev.cosignproject.cosign/signature"
REFERRER_TYPE = "application/vnd.dev.cosign.artifact.sig.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
PAYLOAD_TYPE = "cosign container image signature"
ENCRYPTED_PEM_TYPES = ("ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY")

PublicKey = Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey
PrivateKey = Ed25519PrivateKey | ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def payload(docker_reference: str, digest: str) -> bytes:
    """The simple-signing payload cosign writes for ``docker_reference@digest``, byte for
    byte (Go's encoding/json of cosign's struct: this key order, no spaces)."""
    doc = {"critical": {"identity": {"docker-reference": docker_reference},
                        "image": {"docker-manifest-digest": digest}, "type": PAYLOAD_TYPE},
           "optional": None}
    return json.dumps(doc, separators=(",", ":")).encode()


def claims(data: bytes) -> tuple[str, str] | None:
    """(docker-reference, manifest digest) a payload claims, or None when it is not a
    cosign simple-signing payload."""
    try:
        doc = limits.peer_json(data)
        critical = doc["critical"]
        if critical["type"] != PAYLOAD_TYPE:
            return None
        return str(critical["identity"]["docker-reference"]), \
            str(critical["image"]["docker-manifest-digest"])
    except (ValueError, KeyError, TypeError):
        return None


def repository_of(docker_reference: str) -> str:
    """``HOST[:PORT]/REPO`` -> ``REPO`` (a first part with a dot, a colon or ``localhost``
    is a registry host, as in Docker's reference grammar)."""
    first, _, rest = docker_reference.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return rest
    return docker_reference


def sign_bytes(private: PrivateKey, data: bytes) -> bytes:
    if isinstance(private, ec.EllipticCurvePrivateKey):
        return private.sign(data, ec.ECDSA(hashes.SHA256()))
    if isinstance(private, rsa.RSAPrivateKey):
        return private.sign(data, padding.PKCS1v15(), hashes.SHA256())
    return private.sign(data)


def verify_bytes(public: PublicKey, signature: bytes, data: bytes) -> bool:
    try:
        if isinstance(public, ec.EllipticCurvePublicKey):
            public.verify(signature, data, ec.ECDSA(hashes.SHA256()))
        elif isinstance(public, rsa.RSAPublicKey):
            public.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
        else:
            public.verify(signature, data)
    except (InvalidSignature, ValueError):
        return False
    return True


def image_config(layer_digests: list[str]) -> bytes:
    """The config blob of cosign's signature image (go-containerregistry's empty image with
    the signature layers appended)."""
    doc: dict[str, Any] = {
        "architecture": "", "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"} for _ in layer_digests], "os": "",
        "rootfs": {"type": "layers", "diff_ids": list(layer_digests)}, "config": {}}
    return json.dumps(doc, separators=(",", ":")).encode()


# ------------------------------------------------------------------ cosign's encrypted key


def secretbox_open(box: bytes, nonce: bytes, key: bytes) -> bytes | None:
    """NaCl ``crypto_secretbox_open`` (XSalsa20-Poly1305, tag(16) || ciphertext), what
    cosign seals its private key with; PyNaCl's libsodium binding (``cryptography`` has
    no XSalsa20)."""
    if len(box) < 16 or len(nonce) != 24 or len(key) != 32:
        return None
    try:
        return bytes(SecretBox(key).decrypt(box, nonce))
    except CryptoError:
        return None


_SCRYPT_PARAMS = {(32768, 8, 1), (65536, 8, 1), (131072, 8, 1)}  # go-securesystemslib's


def decrypt_cosign_key(pem: bytes, password: bytes, where: str) -> PrivateKey:
    """The private key in cosign's ``ENCRYPTED SIGSTORE PRIVATE KEY`` PEM."""
    text = pem.decode(errors="replace")
    body = "".join(line for line in text.splitlines() if line and not line.startswith("-----"))
    try:
        doc = limits.peer_json(base64.b64decode(body))
        kdf, cipher = doc["kdf"], doc["cipher"]
        params = (int(kdf["params"]["N"]), int(kdf["params"]["r"]), int(kdf["params"]["p"]))
        salt, nonce = base64.b64decode(kdf["salt"]), base64.b64decode(cipher["nonce"])
        box = base64.b64decode(doc["ciphertext"])
        names = (kdf["name"], cipher["name"])
    except (ValueError, KeyError, TypeError):
        raise ArtifactInputError(f"{where}: not a cosign encrypted private key") from None
    if names != ("scrypt", "nacl/secretbox") or params not in _SCRYPT_PARAMS:
        raise ArtifactInputError(f"{where}: unsupported key encryption {names} {params}")
    n, r, p = params
    key = Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(password)
    der = secretbox_open(box, nonce, key)
    if der is None:
        raise ArtifactInputError(f"{where}: wrong password for the cosign key (set"
                                 " COSIGN_PASSWORD to the password given to cosign"
                                 " generate-key-pair)")
    private = serialization.load_der_private_key(der, password=None)
    if not isinstance(private, Ed25519PrivateKey | ec.EllipticCurvePrivateKey
                      | rsa.RSAPrivateKey):
        raise ArtifactInputError(f"{where}: a {type(private).__name__}; cosign keys are"
                                 " ECDSA, Ed25519 or RSA")
    return private


def fingerprint(public: PublicKey) -> str:
    """A short stable name for a key: scheme and the SHA-256 of its public bytes."""
    if isinstance(public, Ed25519PublicKey):
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return "ed25519:" + hashlib.sha256(raw).hexdigest()[:16]
    der = public.public_bytes(serialization.Encoding.DER,
                              serialization.PublicFormat.SubjectPublicKeyInfo)
    if isinstance(public, ec.EllipticCurvePublicKey):
        scheme = {"secp256r1": "ecdsa-p256", "secp384r1": "ecdsa-p384",
                  "secp521r1": "ecdsa-p521"}.get(public.curve.name, "ecdsa")
    else:
        scheme = f"rsa{public.key_size}"
    return f"{scheme}:" + hashlib.sha256(der).hexdigest()[:16]
