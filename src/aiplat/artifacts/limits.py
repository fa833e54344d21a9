"""How much aiplat reads from a registry or token service, each bound with its source (pure).

A registry is a peer, not a friend: every answer it sends is read with a bound, counted on
the decoded bytes while they stream (a 306 KB gzip answer that would decode to 971 MiB
stops at the bound, without the rest ever being decompressed) and, for gzip or deflate, on
the encoded bytes too (:func:`max_encoded`: bytes that decode to nothing cannot stream
forever, and nothing may follow the end of the compressed stream), and an answer past its
bound is a :class:`~aiplat.artifacts.errors.RegistryError` that names the registry, the
thing and the limit. Error documents are cut at their bound instead (the status is what
matters). Listings are bounded in pages, bytes and time, and a ``Link`` that points back at
a page already read ends the listing with an error rather than a loop. Every request is
bounded in time, whatever comes before its answer (interim answers, redirects), and in
redirects. The numbers follow the clients that have had to choose them (containerd,
oras-go, cosign); where none has, the reason is given.

Model weights (blobs) are the one unbounded stream: their descriptor's size bounds them
(:mod:`aiplat.artifacts.pull` stops past it) and their digest proves them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aiplat import inputs
from aiplat.errors import InputError

MiB = 1024 * 1024

MAX_MANIFEST_BYTES = 4 * MiB
"""A manifest (or an image index). containerd refuses a manifest above ``MaxManifestSize``
(core/remotes/docker/resolver.go: ``4 * 1048 * 1048``, its "4M"); a ModelPack manifest is a
few KiB, so 4 MiB is far above any real one."""

MAX_METADATA_BYTES = 4 * MiB
"""One page of a tags list or catalog, a referrers index, and any other JSON answer: oras-go's
``defaultMaxMetadataBytes`` (registry/remote, 4 MiB) for the same metadata APIs."""

MAX_LISTING_BYTES = 64 * MiB
"""All pages of one tags list or catalog together: a million 64-byte names. Each page has
its own bound; this one keeps a listing of many full pages from filling memory (aiplat's)."""

MAX_PAGES = 1000
"""Pages of one tags list or catalog (aiplat asks for ``n=1000`` a page: a million names);
a listing that never ends, or pages of one name each, is refused here (aiplat's)."""

MAX_LISTING_SECONDS = 300.0
"""How long one tags list or catalog may take, all its pages together (checked before each
page is asked for, and a page may wait only what is left). Each answer has its own
deadline (the client's timeout, 60 s), but a registry that sends each page just inside it
(the red team's link_trickle: a page every 10 s, forever) would make MAX_PAGES of them 16
hours. A healthy registry serves a page of
1,000 names in well under 0.3 s, so even MAX_PAGES pages fit in 300 s; a real listing is a
page or a few (aiplat's)."""

MAX_EXCHANGE_SECONDS = 120.0
"""How long one request may keep aiplat waiting on the network, all its attempts together:
connecting (TLS handshake included), its answer's headers and any interim (1xx) answers
before them, every redirect and 401 on the way and their bodies, a token service's
answer, and the body of an answer read whole (a blob's body is bounded by its size and
each read by the timeout instead). Counted while aiplat waits on a socket, so sending a
large upload does not use it up.
httpx has no total timeout: its read timeout (the client's 60 s) starts again with every
read, so a registry sending ``100 Continue`` every 2 s, or redirects whose bodies each
trickle inside the answer deadline, held one request for ever or for 20 minutes (the red
team's info_flood and redirect_trickle). containerd gives the headers 30 s after the
request is sent, interim answers included (``ResponseHeaderTimeout``,
core/remotes/docker/registry.go); Go's net/http, which it and oras-go use, bounds interim
answers too (5 of them, ``max1xxResponses``; since golang/go#65035 their headers count
against the response header limit). 120 s leaves a slow registry the read timeout twice
over; a healthy one answers, redirects included, in well under a second (aiplat's)."""

MAX_REDIRECTS = 5
"""Redirects followed for one request. A registry redirects a blob once, to its storage
(S3, a CDN); a mirror or proxy in front may add one. containerd stops after 10 (its
resolver's ``CheckRedirect``, core/remotes/docker/resolver.go), as Go's ``http.Client``
does by default, which oras-go uses (``retry.DefaultClient``); httpx follows 20. 5 is
generous and keeps a chain short (aiplat's)."""

MAX_TOKEN_BYTES = 128 * 1024
"""A token service's answer: oras-go's ``maxResponseBytes`` (registry/remote/auth): a token
must fit in an HTTP header (16 KiB) and the answer may carry it twice (``token`` and
``access_token``), so 128 KiB is ample."""

MAX_ERROR_BYTES = 8 * 1024
"""An answer with a status outside 2xx (an error document, a redirect's or a 401's body),
cut here rather than refused: oras-go's ``maxErrorBytes`` (8 KiB; "a typical error
message is around 200 bytes")."""

MAX_SIGNATURE_PAYLOAD_BYTES = 1 * MiB
"""A signature's payload blob, checked while it streams: a simple-signing payload is about
250 bytes. cosign's own bound on any attached blob is 128 MB (``COSIGN_MAX_ATTACHMENT_SIZE``);
aiplat needs nothing near that (aiplat's)."""

MAX_SIGNATURES = 100
"""Signature manifests listed for one model, and signature layers read from them, after
removing duplicates: cosign's ``maxAllowedSigsOrAtts`` (pkg/cosign/fetch.go), which it
added after a registry listing thousands of signatures took verifiers down."""

MAX_SIGNATURE_MANIFEST_BYTES = 1 * MiB
"""One signature manifest (a referrer, or the ``.sig`` tag's), checked while it streams.
cosign's holds one layer per signature: about 300 bytes for a key pair's (the signature
annotation), about 6 KiB for a keyless one (with its Fulcio certificate, chain and Rekor
bundle), so even MAX_SIGNATURES keyless ones (cosign's 100) are about 600 KiB. A model's
manifest may be 4 MiB (MAX_MANIFEST_BYTES); a signature manifest that size is padding
(aiplat's)."""

MAX_SIGNATURES_BYTES = 4 * MiB
"""Everything read for one model's signatures together: its signature manifests and their
payloads. Each has its own bound, but MAX_SIGNATURES of them at that bound is 100 MiB held
at once (the red team's refs_big: 100 referrers of 4 MiB, 1.2 GB of memory). aiplat's own
referrers repeat the signatures made before them (a manifest holds every signature so far),
so 100 key-pair signings are 100 manifests of 1 to 100 layers, about 1.6 MB; 100 keyless
signatures and their ~250-byte payloads are under 1 MiB; 4 MiB holds either with room
(aiplat's)."""

MAX_SMALL_BLOB_BYTES = 16 * MiB
"""A config blob read into memory (``model inspect``): a ModelPack config is a few KiB
(aiplat's; the bound, not its size, is the point)."""

MAX_ENCODING_OVERHEAD = 128 * 1024
"""How many encoded bytes a gzip or deflate answer may hold beyond what they decode to (and
1 in 1024 of that, :func:`max_encoded`). A compressor at its worst adds 5 bytes per 65,535
(deflate's stored blocks; zlib's ``deflateBound`` is n + n/4096 + n/16384 + 13 and the gzip
wrapper), and a gzip header's optional extra field is at most 64 KiB. More is no
compressor's output but a peer streaming bytes that decode to nothing: a header whose file
name never ends, or empty blocks without end, which no decoded-bytes bound ever sees
(aiplat's)."""


def max_encoded(decoded: int) -> int:
    """The most encoded bytes a gzip or deflate answer may have sent for ``decoded`` bytes
    of output (MAX_ENCODING_OVERHEAD)."""
    return decoded + decoded // 1024 + MAX_ENCODING_OVERHEAD

MAX_JSON_DEPTH = inputs.MAX_DEPTH
"""How deep a peer's JSON document may nest: ``aiplat.inputs.MAX_DEPTH`` (64), the bound on
every document aiplat reads; a manifest nests 4 levels, a token answer 1. Python's parser
recurses, so a few thousand ``[`` in a 4 MiB answer would end in a RecursionError."""


def peer_json(data: bytes | str) -> Any:
    """The JSON document a peer sent (a registry, a token service, a signature's payload),
    parsed here and only here: a ValueError that says why when it is not JSON (``NaN``,
    ``Infinity`` and numbers past a float's range included), nests deeper than MAX_JSON_DEPTH
    or holds more than ``aiplat.inputs.MAX_VALUES`` values, never a RecursionError."""
    try:
        doc = json.loads(data, parse_constant=_not_json, parse_float=_finite)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None
    try:
        inputs.check_tree(doc, "", "a peer's JSON", max_depth=MAX_JSON_DEPTH)
    except InputError as e:
        raise ValueError(_TOO_DEEP if "nested" in str(e) else
                         f"more than {inputs.MAX_VALUES:,} values (aiplat.inputs.MAX_VALUES)"
                         ) from None
    return doc


_TOO_DEEP = f"nested more than {MAX_JSON_DEPTH} levels deep (MAX_JSON_DEPTH)"


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    """A JSON number that fits a float (``1e999`` would be infinity, which aiplat's own JSON
    output could not write back as JSON)."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:20]} is too large for a float")
    return value


BOUND = "aiplat.bound"
"""The httpx request extension that carries a request's :class:`Bound` to the client's
answer hook (httpx copies extensions onto redirects)."""


@dataclass(frozen=True)
class Bound:
    """What one answer may hold: ``limit`` decoded bytes (``None``: a blob, bounded by its
    descriptor), named ``what`` in errors, with the constant and its source in ``why``."""

    limit: int | None
    what: str
    why: str = ""

    def describe(self) -> str:
        """``4 MiB (MAX_MANIFEST_BYTES, containerd's limit)``."""
        size = f"{self.limit // MiB} MiB" if self.limit and self.limit % MiB == 0 \
            else f"{(self.limit or 0) // 1024} KiB"
        return f"{size} ({self.why})" if self.why else size


MANIFEST = Bound(MAX_MANIFEST_BYTES, "manifest", "MAX_MANIFEST_BYTES, containerd's limit")
METADATA = Bound(MAX_METADATA_BYTES, "answer", "MAX_METADATA_BYTES, oras-go's limit")
LISTING_PAGE = Bound(MAX_METADATA_BYTES, "tags or catalog page",
                     "MAX_METADATA_BYTES, oras-go's limit")
REFERRERS = Bound(MAX_METADATA_BYTES, "referrers index", "MAX_METADATA_BYTES, oras-go's limit")
TOKEN = Bound(MAX_TOKEN_BYTES, "token service's answer", "MAX_TOKEN_BYTES, oras-go's limit")
SIGNATURE_PAYLOAD = Bound(MAX_SIGNATURE_PAYLOAD_BYTES, "signature payload",
                          "MAX_SIGNATURE_PAYLOAD_BYTES")
SIGNATURE_MANIFEST = Bound(MAX_SIGNATURE_MANIFEST_BYTES, "signature manifest",
                           "MAX_SIGNATURE_MANIFEST_BYTES")
SMALL_BLOB = Bound(MAX_SMALL_BLOB_BYTES, "config blob", "MAX_SMALL_BLOB_BYTES")
BLOB = Bound(None, "blob")
