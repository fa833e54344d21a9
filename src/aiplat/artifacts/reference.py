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
# Each pattern is used with fullmatch: "$" alone also matches before a final newline.
# A registry host is "localhost" or has a dot or a port (as Docker decides), or is [IPv6];
# DNS labels are ASCII letters, digits and inner hyphens (Docker's domain grammar), so
# nothing reaches the HTTP client that it cannot make a URL of. Digits are ASCII: ``\d``
# would take any script's digits, and int() reads them (a port of Arabic-Indic digits).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_RE = re.compile(
    rf"^(?:(?P<name>localhost|{_LABEL}(?:\.{_LABEL})+|{_LABEL}(?=:))|\[(?P<v6>[0-9a-fA-F:.]+)\])"
    r"(?::(?P<port>[0-9]{1,5}))?$"
)
_DEFAULT_PORTS = ("443", "80")
# A name the resolver reads as an IPv4 address (inet_aton: one to four parts, each decimal,
# octal with a leading 0 or hexadecimal with 0x): 127.1, 2130706433 and 0x7f.0.0.1 are all
# 127.0.0.1. A name any of whose labels could be such a part is refused unless it is the
# address's one dotted-quad spelling.
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")
_AT_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")


def check_digest(digest: str) -> str:
    """Return ``digest`` if it is a valid sha256/sha512 digest, else raise ArtifactInputError."""
    if not _DIGEST_RE.fullmatch(digest):
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
    with a port, an IP literal, ``[IPv6]``; a port 1-65535), else ArtifactInputError.

    Each registry has one spelling here, the one a trust policy compares (:func:`canonical_name`
    only changes case, default ports and IPv6 zeros): a port with a leading zero, an IPv4
    address in any form but the dotted quad (``127.1``, ``2130706433``, ``0x7f.0.0.1``) and an
    IPv4-mapped IPv6 address (``[::ffff:127.0.0.1]``) are refused with the spelling to use, so
    no other spelling of a signed registry's address falls through to another rule; so is the
    unspecified address (``0.0.0.0``, ``[::]``), which is this machine by another name."""
    fix = ("(fix: write HOST[:PORT], e.g. 127.0.0.1:5000 or registry.example.com (a DNS"
           " name, an IP address or [IPv6], and a port from 1 to 65535))")
    m = _HOST_RE.fullmatch(text)
    if m is None or len(m.group("name") or "") > 253:
        raise ArtifactInputError(f"{text!r} is not a registry host {fix}")
    if m.group("v6") is not None:
        try:
            ipaddress.IPv6Address(m.group("v6"))
        except ValueError:
            raise ArtifactInputError(f"{text!r}: {m.group('v6')!r} is not an IPv6 address"
                                     f" {fix}") from None
    port = m.group("port")
    if port is not None and not 0 < int(port) < 65536:
        raise ArtifactInputError(f"{text!r}: port {port} is out of range {fix}")
    host = m.group("name") or f"[{m.group('v6')}]"
    try:
        address = _address(host)
    except ValueError:
        raise ArtifactInputError(f"{text!r} is numbers but no IPv4 address (a resolver may"
                                 " read them as one, or not); write HOST[:PORT] with an IPv4"
                                 " address as four numbers from 0 to 255 (e.g. 127.0.0.1:5000)"
                                 " or a DNS name") from None
    if address is not None and address.is_unspecified:
        raise ArtifactInputError(f"{text!r} is no registry's address: a connection to"
                                 f" {address} reaches this machine under another name; write"
                                 " the address the registry listens on (e.g. 127.0.0.1:5000)")
    one = _one_spelling(host, address, port)
    if one != text:
        raise ArtifactInputError(
            f"{text!r} is {one} written another way; write {one} (a trust policy compares"
            " registries as written, so aiplat takes one spelling of each)")
    return text


def _one_spelling(host: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address | None,
                  port: str | None) -> str:
    """``host[:port]`` as it must be written: an IPv4 address (``address``) dotted, whether
    written as ``127.1`` or as an IPv4-mapped IPv6 address; a port without leading zeros."""
    spelled = str(address) if isinstance(address, ipaddress.IPv4Address) else host
    return spelled if port is None else f"{spelled}:{int(port)}"


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address ``host`` (a name or a valid ``[v6]``) is to the resolver, an
    IPv4-mapped IPv6 address as IPv4; None for a DNS name; ValueError for numbers that are
    no address (``127.0.0.08``, ``1.2.3.4.5``), which a resolver may read either way."""
    if host.startswith("["):
        v6 = ipaddress.IPv6Address(host[1:-1])
        return v6.ipv4_mapped or v6
    labels = host.split(".")
    if not all(_NUMERIC_LABEL.fullmatch(label) for label in labels):
        return None
    v4 = _inet_aton(labels)
    if v4 is None:
        raise ValueError(host)
    return v4


def _inet_aton(parts: list[str]) -> ipaddress.IPv4Address | None:
    """The address glibc's inet_aton reads from ``parts`` (the labels), else None."""
    if not 1 <= len(parts) <= 4 or not all(_AT_PART.fullmatch(p) for p in parts):
        return None
    values = [int(p[2:] or "0", 16) if p[:2].lower() == "0x" else int(p, 8) if p[0] == "0"
              else int(p) for p in parts]
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(parts)):
        return None
    return ipaddress.IPv4Address(sum(v << 8 * (3 - i) for i, v in enumerate(head)) + last)


def canonical_host(host: str) -> str:
    """``HOST[:PORT]`` as a trust policy compares it: lower-case, an IP address in its one
    spelling (an IPv4 address dotted, an IPv6 one compressed, an IPv4-mapped one as IPv4), a
    port as its number and a default port (443, 80) dropped, a DNS name's final dot dropped.
    Wildcards (``*``, ``?``) stay as written."""
    name, port = host_and_port(host.lower())
    if name.startswith("[") and name.endswith("]"):
        with contextlib.suppress(ValueError):  # a pattern with wildcards: kept as written
            v6 = ipaddress.IPv6Address(name[1:-1])
            name = str(v6.ipv4_mapped) if v6.ipv4_mapped else f"[{v6.compressed}]"
    elif len(name) > 1:
        name = name.removesuffix(".")
        v4 = _inet_aton(name.split("."))
        name = str(v4) if v4 is not None else name
    if port is not None and port.isascii() and port.isdigit():
        port = str(int(port))
    return name if port is None or port in _DEFAULT_PORTS else f"{name}:{port}"


def host_and_port(host: str) -> tuple[str, str | None]:
    """``HOST[:PORT]`` (or ``[v6][:PORT]``) as (host, port or None), as written."""
    if host.startswith("[") and "]" in host:
        end = host.index("]") + 1
        rest = host[end:]
        return host[:end], rest[1:] if rest.startswith(":") else None
    if host.count(":") == 1:
        name, port = host.split(":")
        return name, port
    return host, None


def canonical_name(name: str) -> str:
    """``HOST[:PORT]/REPO`` as a trust policy compares it: the host canonical
    (:func:`canonical_host`), so ``LOCALHOST:5000/m`` is ``localhost:5000/m``,
    ``reg.example:443/m`` is ``reg.example/m`` and ``127.1:5000/m`` is ``127.0.0.1:5000/m``.
    Works on patterns too (``*`` and ``?`` stay)."""
    host, sep, rest = name.partition("/")
    return f"{canonical_host(host)}{sep}{rest}"


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
    fix = ("(fix: write it as HOST[:PORT]/REPO[:TAG][@sha256:HEX], e.g."
           " 127.0.0.1:5000/models/llama:v1)")
    raw = text.strip()
    digest = None
    if "@" in raw:
        raw, digest = raw.split("@", 1)
        check_digest(digest)
    if "/" not in raw:
        raise ArtifactInputError(f"reference {text!r} has no registry host {fix}")
    host, rest = raw.split("/", 1)
    try:
        parse_registry(host)
    except ArtifactInputError as e:
        raise ArtifactInputError(f"reference {text!r}: {e}") from None
    tag = None
    if ":" in rest:
        rest, tag = rest.rsplit(":", 1)
        if not _TAG_RE.fullmatch(tag):
            raise ArtifactInputError(
                f"reference {text!r}: tag {tag!r} is invalid (letters, digits, '._-', at most"
                f" 128, not starting with '.' or '-') {fix}"
            )
    if not _REPO_RE.fullmatch(rest):
        raise ArtifactInputError(
            f"reference {text!r}: repository {rest!r} is invalid (lower-case path components"
            f" separated by '/') {fix}"
        )
    if tag is None and digest is None:
        tag = "latest"
    return Reference(registry=host, repository=rest, tag=tag, digest=digest)
