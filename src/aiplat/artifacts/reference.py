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

import contextlib
import hashlib
import ipaddress
import re
from dataclasses import dataclass, replace

from aiplat.artifacts.errors import ArtifactInputError

# From the OCI distribution spec: repository path components and tags.
_COMPONENT = r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*"
_REPO_RE = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*$")
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
_DIGEST_RE = re.compile(r"^(sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$")
# A registry host is "localhost" or has a dot or a port (as Docker decides), or is [IPv6];
# DNS labels are ASCII letters, digits and inner hyphens (Docker's domain grammar), so
# nothing reaches the HTTP client that it cannot make a URL of.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_RE = re.compile(
    rf"^(?:(?P<name>localhost|{_LABEL}(?:\.{_LABEL})+|{_LABEL}(?=:))|\[(?P<v6>[0-9a-fA-F:.]+)\])"
    r"(?::(?P<port>\d{1,5}))?$"
)
_DEFAULT_PORTS = (":443", ":80")


def check_digest(digest: str) -> str:
    """Return ``digest`` if it is a valid sha256/sha512 digest, else raise ArtifactInputError."""
    if not _DIGEST_RE.match(digest):
        raise ArtifactInputError(
            f"{digest!r} is not a digest; expected sha256:<64 hex> (or sha512:<128 hex>)"
        )
    return digest


def shown(text: str, keep: int = 200) -> str:
    """A peer's string (a registry's error message, a signature's claim) as it may appear in
    aiplat's messages: cut to ``keep``, and escaped (repr) when it holds anything
    unprintable, so no escape sequence or line break reaches the reader's terminal."""
    text = text[:keep]
    return text if text.isprintable() else repr(text)


def is_tag(name: str) -> bool:
    """Whether ``name`` is a tag by the distribution spec's grammar."""
    return bool(_TAG_RE.fullmatch(name))


def is_repository(name: str) -> bool:
    """Whether ``name`` is a repository name by the distribution spec's grammar."""
    return bool(_REPO_RE.fullmatch(name)) and len(name) <= 255


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def digest_of(data: bytes, algorithm: str = "sha256") -> str:
    """``data``'s digest with ``algorithm`` (sha256 or sha512: what a digest may name)."""
    if algorithm not in ("sha256", "sha512"):
        raise ArtifactInputError(f"{algorithm!r} is not a digest algorithm aiplat checks;"
                                 " use sha256 (or sha512)")
    return f"{algorithm}:" + hashlib.new(algorithm, data).hexdigest()


def matches(data: bytes, digest: str) -> bool:
    """Whether ``data`` hashes to ``digest`` under the digest's own algorithm."""
    return digest_of(data, check_digest(digest).split(":", 1)[0]) == digest


def parse_registry(text: str) -> str:
    """``HOST[:PORT]`` if it names a registry (a DNS name with a dot, ``localhost``, a name
    with a port, an IP literal, ``[IPv6]``; a port 1-65535), else ArtifactInputError."""
    fix = ("write HOST[:PORT], e.g. 127.0.0.1:5000 or registry.example.com (a DNS name,"
           " an IP address or [IPv6], and a port from 1 to 65535)")
    m = _HOST_RE.match(text)
    if m is None or len(m.group("name") or "") > 253:
        raise ArtifactInputError(f"{text!r} is not a registry host; {fix}")
    if m.group("v6") is not None:
        try:
            ipaddress.IPv6Address(m.group("v6"))
        except ValueError:
            raise ArtifactInputError(f"{text!r}: {m.group('v6')!r} is not an IPv6 address;"
                                     f" {fix}") from None
    port = m.group("port")
    if port is not None and not 0 < int(port) < 65536:
        raise ArtifactInputError(f"{text!r}: port {port} is out of range; {fix}")
    return text


def canonical_name(name: str) -> str:
    """``HOST[:PORT]/REPO`` as a trust policy compares it: the host lower-case and a default
    port (443, 80) dropped, so ``LOCALHOST:5000/m`` is ``localhost:5000/m`` and
    ``reg.example:443/m`` is ``reg.example/m``. Works on patterns too (``*`` and ``?``
    stay; an IPv6 literal is written in its compressed form)."""
    host, sep, rest = name.partition("/")
    host = host.lower()
    for port in _DEFAULT_PORTS:
        if host.endswith(port):
            host = host[: -len(port)]
            break
    if host.startswith("[") and "]" in host:
        literal, _, port = host[1:].partition("]")
        with contextlib.suppress(ValueError):  # a pattern with wildcards: kept as written
            host = f"[{ipaddress.IPv6Address(literal).compressed}]{port}"
    return f"{host}{sep}{rest}"


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
    try:
        parse_registry(host)
    except ArtifactInputError as e:
        raise ArtifactInputError(f"reference {text!r}: {e}") from None
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
