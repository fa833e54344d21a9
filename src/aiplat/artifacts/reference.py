"""Model references and digests (pure).

A reference names a manifest in a registry: ``HOST[:PORT]/REPO[:TAG][@sha256:HEX]``. Tags are
versions that can move; a digest is the immutable identity, so a reference with a digest pins
exactly one manifest (its tag, if any, is informational). The host is required: aiplat serves
private model stores and never guesses Docker Hub.

>>> r = parse_reference("127.0.0.1:5000/models/llama:v1")
>>> (r.registry, r.repository, r.tag, r.digest)
('127.0.0.1:5000', 'models/llama', 'v1', None)
>>> str(r.with_digest("sha256:" + "a" * 64))[-12:]
'aaaaaaaaaaaa'
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace

from aiplat.artifacts.errors import ArtifactInputError

# From the OCI distribution spec: repository path components and tags.
_COMPONENT = r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*"
_REPO_RE = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
_DIGEST_RE = re.compile(r"^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$")
# A registry host is "localhost" or has a dot or a port (as Docker decides), or is [IPv6].
_HOST_RE = re.compile(
    r"^(?:localhost|[\w-]+(?:\.[\w-]+)+|[\w-]+(?=:)|\[[0-9a-fA-F:]+\])(?::\d{1,5})?$"
)


def check_digest(digest: str) -> str:
    """Return ``digest`` if it is a valid sha256/sha512 digest, else raise ArtifactInputError."""
    if not _DIGEST_RE.match(digest):
        raise ArtifactInputError(
            f"{digest!r} is not a digest; expected sha256:<64 hex> (or sha512:<128 hex>)"
        )
    return digest


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def signature_tag(digest: str) -> str:
    """The tag that holds the signatures of the manifest ``digest``: ``sha256-<hex>.sig``."""
    algo, hexd = check_digest(digest).split(":", 1)
    return f"{algo}-{hexd}.sig"


@dataclass(frozen=True)
class Reference:
    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def name(self) -> str:
        """``registry/repository``: what a trust policy matches."""
        return f"{self.registry}/{self.repository}"

    @property
    def identifier(self) -> str:
        """What goes into ``/v2/<repo>/manifests/<identifier>``: the digest if pinned."""
        return self.digest or self.tag or "latest"

    def with_digest(self, digest: str) -> Reference:
        return replace(self, digest=check_digest(digest))

    def with_tag(self, tag: str) -> Reference:
        return replace(self, tag=tag, digest=None)

    def __str__(self) -> str:
        s = self.name
        if self.tag:
            s += f":{self.tag}"
        if self.digest:
            s += f"@{self.digest}"
        return s


def parse_reference(text: str) -> Reference:
    fix = "write it as HOST[:PORT]/REPO[:TAG][@sha256:HEX], e.g. 127.0.0.1:5000/models/llama:v1"
    raw = text.strip()
    digest = None
    if "@" in raw:
        raw, digest = raw.split("@", 1)
        check_digest(digest)
    if "/" not in raw:
        raise ArtifactInputError(f"reference {text!r} has no registry host; {fix}")
    host, rest = raw.split("/", 1)
    if not _HOST_RE.match(host):
        raise ArtifactInputError(f"reference {text!r}: {host!r} is not a registry host; {fix}")
    tag = None
    if ":" in rest:
        rest, tag = rest.rsplit(":", 1)
        if not _TAG_RE.match(tag):
            raise ArtifactInputError(
                f"reference {text!r}: tag {tag!r} is invalid (letters, digits, '._-', at most"
                f" 128, not starting with '.' or '-'); {fix}"
            )
    if not _REPO_RE.match(rest):
        raise ArtifactInputError(
            f"reference {text!r}: repository {rest!r} is invalid (lower-case path components"
            f" separated by '/'); {fix}"
        )
    if tag is None and digest is None:
        tag = "latest"
    return Reference(registry=host, repository=rest, tag=tag, digest=digest)
