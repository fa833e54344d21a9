"""ModelPack (CNCF model-spec) manifests and configs as plain data (pure).

A model is an OCI image manifest whose ``artifactType`` is the ModelPack manifest type. Each
weight file is one *uncompressed* ``weight.v1.raw`` layer annotated with its path, so a pull
can hard-link the blob into place (no unpacking, no copy) and a registry deduplicates shards
shared between versions. The small files (config.json, tokenizer, generation config) travel
together as one reproducible ``weight.config.v1.tar`` layer. The config blob carries the
descriptor, the format and ``modelfs.diffIds`` (for uncompressed layers the diffID is the
layer digest).

Everything here maps between bytes and dataclasses; hashing files, tarring and HTTP live in
:mod:`aiplat.artifacts.package` and :mod:`aiplat.artifacts.client`. Manifest JSON is
serialised compactly with sorted keys so the same inputs give the same digest.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from typing import Any

from aiplat.artifacts import limits
from aiplat.artifacts.errors import ArtifactError, ArtifactInputError, ManifestError
from aiplat.artifacts.reference import check_digest

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_EMPTY = "application/vnd.oci.empty.v1+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
ARTIFACT_TYPE = "application/vnd.cncf.model.manifest.v1+json"
CONFIG_TYPE = "application/vnd.cncf.model.config.v1+json"
WEIGHT_RAW = "application/vnd.cncf.model.weight.v1.raw"
WEIGHT_CONFIG_TAR = "application/vnd.cncf.model.weight.config.v1.tar"
FILEPATH = "org.cncf.model.filepath"
# What modctl v0.2 (model-spec v0.0.x, before the move to CNCF) writes: the same layout
# under the "cnai" names. Read, never written.
LEGACY_ARTIFACT_TYPE = "application/vnd.cnai.model.manifest.v1+json"
LEGACY_CONFIG_TYPE = "application/vnd.cnai.model.config.v1+json"
LEGACY_FILEPATH = "org.cnai.model.filepath"
TITLE = "org.opencontainers.image.title"
MANIFEST_ACCEPT = ", ".join([OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST])

EMPTY_JSON = b"{}"
EMPTY_DIGEST = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"

MAX_LAYERS = 10_000
"""Layers of one manifest. A model is a layer per weight file (and one for the small files):
the largest published checkpoints have a few hundred (Llama 3.1 405B: 191 safetensors
shards; DeepSeek-V3: 163), and a checkpoint saved a file per tensor a few thousand. A 4 MiB
manifest (MAX_MANIFEST_BYTES) could list some 30,000 layers of a few bytes, each a request,
a file and an fsync (the red team's 15,003 took 170 s to pull); no registry or client sets
a count, so this one is aiplat's, far above any real model."""

WEIGHT_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt", ".pth", ".onnx", ".h5", ".msgpack")


def is_weight_file(path: str) -> bool:
    return path.lower().endswith(WEIGHT_SUFFIXES)


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str
    size: int
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def filepath(self) -> str | None:
        return self.annotations.get(FILEPATH) or self.annotations.get(LEGACY_FILEPATH)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"mediaType": self.media_type, "digest": self.digest,
                             "size": self.size}
        if self.annotations:
            d["annotations"] = dict(sorted(self.annotations.items()))
        return d

    @classmethod
    def from_json(cls, d: Any, where: str) -> Descriptor:
        if not isinstance(d, dict):
            raise ArtifactError(f"{where}: descriptor is not an object")
        try:
            media, digest, size = d["mediaType"], d["digest"], d["size"]
        except KeyError as e:
            raise ArtifactError(f"{where}: descriptor lacks {e.args[0]!r}") from None
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ArtifactError(f"{where}: descriptor size {str(size)[:40]!r} is not a byte"
                                " count")
        try:
            check_digest(str(digest))
        except ArtifactInputError as e:  # the registry's content, not the user's input: exit 1
            raise ManifestError(f"{where}: {e}; refusing the manifest") from None
        return cls(str(media), str(digest), size, _strings(d.get("annotations"), where))


@dataclass(frozen=True)
class Manifest:
    config: Descriptor
    layers: tuple[Descriptor, ...]
    artifact_type: str | None = None
    subject: Descriptor | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    media_type: str = OCI_MANIFEST

    @property
    def is_model(self) -> bool:
        return (self.artifact_type in (ARTIFACT_TYPE, LEGACY_ARTIFACT_TYPE)
                or self.config.media_type in (CONFIG_TYPE, LEGACY_CONFIG_TYPE))

    @property
    def total_size(self) -> int:
        return self.config.size + sum(layer.size for layer in self.layers)

    def to_bytes(self) -> bytes:
        d: dict[str, Any] = {"schemaVersion": 2, "mediaType": self.media_type}
        if self.artifact_type:
            d["artifactType"] = self.artifact_type
        d["config"] = self.config.to_json()
        d["layers"] = [layer.to_json() for layer in self.layers]
        if self.subject is not None:
            d["subject"] = self.subject.to_json()
        if self.annotations:
            d["annotations"] = dict(sorted(self.annotations.items()))
        return json.dumps(d, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes, where: str = "manifest") -> Manifest:
        try:
            d = limits.peer_json(data)
        except ValueError as e:
            raise ArtifactError(f"{where}: not JSON ({str(e)[:200]})") from None
        if not isinstance(d, dict) or d.get("schemaVersion") != 2:
            raise ArtifactError(f"{where}: not an OCI image manifest (schemaVersion 2)")
        media = d.get("mediaType", OCI_MANIFEST)
        if media == OCI_INDEX or "manifests" in d:
            raise ArtifactError(f"{where}: is an image index, not a model manifest")
        if "config" not in d:
            raise ArtifactError(f"{where}: has no config descriptor")
        raw_layers = d.get("layers") or []
        if not isinstance(raw_layers, list):
            raise ArtifactError(f"{where}: 'layers' is not a list")
        if len(raw_layers) > MAX_LAYERS:
            raise ManifestError(f"{where}: has {len(raw_layers):,} layers, more than"
                                f" {MAX_LAYERS:,} (MAX_LAYERS; a model has one per weight"
                                " file, a few hundred at most); refusing the manifest")
        layers = tuple(
            Descriptor.from_json(x, f"{where}: layers[{i}]") for i, x in enumerate(raw_layers)
        )
        subject = d.get("subject")
        return cls(
            config=Descriptor.from_json(d["config"], f"{where}: config"),
            layers=layers,
            artifact_type=str(d["artifactType"]) if d.get("artifactType") else None,
            subject=Descriptor.from_json(subject, f"{where}: subject") if subject else None,
            annotations=_strings(d.get("annotations"), where),
            media_type=str(media),
        )


def _strings(annotations: Any, where: str) -> dict[str, str]:
    """Annotations: a JSON object of strings (the OCI image spec's string-string map); any
    other value is refused, not turned into its Python spelling (``['../../x']`` was a
    file path)."""
    if not annotations:
        return {}
    if not isinstance(annotations, dict):
        raise ArtifactError(f"{where}: 'annotations' is not an object")
    for key, value in annotations.items():
        if not isinstance(value, str):
            raise ManifestError(
                f"{where}: annotation {key[:80]!r} is a {type(value).__name__}, not a"
                " string (OCI annotations are strings); refusing the manifest")
    return dict(annotations)


@dataclass(frozen=True)
class ModelInfo:
    """What the config blob's ``descriptor`` and ``config`` say about the model."""

    name: str
    version: str = ""
    format: str = "safetensors"
    architecture: str = ""
    param_size: str = ""
    precision: str = ""
    quantization: str = ""
    created: str = ""


def model_config(info: ModelInfo, diff_ids: list[str]) -> bytes:
    descriptor: dict[str, Any] = {"name": info.name}
    if info.version:
        descriptor["version"] = info.version
    if info.created:
        descriptor["createdAt"] = info.created
    cfg = {k: v for k, v in {
        "architecture": info.architecture, "format": info.format, "paramSize": info.param_size,
        "precision": info.precision, "quantization": info.quantization}.items() if v}
    doc = {"descriptor": descriptor, "config": cfg,
           "modelfs": {"type": "layers", "diffIds": list(diff_ids)}}
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


def model_manifest(config_digest: str, config_size: int, layers: list[Descriptor],
                   annotations: dict[str, str] | None = None) -> Manifest:
    """The ModelPack manifest for ``layers`` (already hashed) and the config blob."""
    return Manifest(
        config=Descriptor(CONFIG_TYPE, config_digest, config_size),
        layers=tuple(layers),
        artifact_type=ARTIFACT_TYPE,
        annotations=dict(annotations or {}),
    )


NAME_MAX = 255
"""Bytes in one path component (Linux file systems refuse longer names)."""
PATH_MAX = 1024
"""Bytes in a path inside the model directory: far above any real model, far below the
kernel's 4096 once the cache's own prefix is added."""


def safe_relpath(path: str, where: str) -> str:
    """``path`` if it is a relative path that stays inside the snapshot, else raise.

    A manifest from a registry is untrusted input: ``../../etc/cron.d/x`` or an absolute path
    in ``org.cncf.model.filepath`` must never escape the snapshot directory, and a name no
    file system accepts (a 5,000-character component) is refused here, with the layer named,
    rather than failing half-way through laying out the model. So is a name that is not
    printable (``str.isprintable``: C0 and C1 controls, a line break, a bidi override, an
    unpaired surrogate from JSON's ``\\ud800`` or a tar name that is not UTF-8): a file
    named with a terminal's escape sequences, or one no file system call can encode.
    """
    if not path.isprintable():
        raise ManifestError(f"{where}: file path {_short(path)} has a character that is not"
                            " printable (a control or format character, or an unpaired"
                            " surrogate: JSON's \\udXXX, or a name that is not UTF-8);"
                            " refusing the model")
    norm = posixpath.normpath(path)
    if (not path or path.startswith("/") or norm == ".." or norm.startswith("../")
            or norm == "." or "\\" in path or "\x00" in path):
        raise ManifestError(f"{where}: unsafe file path {_short(path)} in the manifest;"
                            " refusing the model")
    longest = max(len(part.encode()) for part in norm.split("/"))
    if longest > NAME_MAX or len(norm.encode()) > PATH_MAX:
        raise ManifestError(
            f"{where}: file path {_short(path)} is too long ({len(norm.encode())} bytes, a"
            f" name of {longest}; at most {PATH_MAX} and {NAME_MAX}); refusing the model")
    return norm


def _short(path: str, keep: int = 60) -> str:
    return repr(path) if len(path) <= keep else repr(path[:keep]) + f"... ({len(path)} chars)"


def layout(manifest: Manifest, where: str) -> list[tuple[Descriptor, str]]:
    """Where each raw layer goes in the model directory, checked before any byte moves.

    Every path must be safe (:func:`safe_relpath`), no two layers may write the same path,
    and no path may be the parent directory of another (``a`` and ``a/b``): a manifest that
    cannot be laid out is refused whole. Tar layers are checked member by member when they
    are unpacked; unnamed layers have no place in the directory and are skipped. Blobs are
    sha256 (the OCI default, and the only digest the cache stores): a sha512 blob is
    refused here, before any byte moves, rather than by the cache half-way.
    """
    for slot, d in (("config", manifest.config),
                    *((f"layers[{i}]", x) for i, x in enumerate(manifest.layers))):
        if not d.digest.startswith("sha256:"):
            raise ManifestError(f"{where} {slot}: blob {d.digest[:19]}... is not a sha256"
                                " digest; aiplat's cache stores sha256 blobs only, refusing"
                                " the model (fix: push it with sha256 digests (the OCI"
                                " default))")
    out: list[tuple[Descriptor, str]] = []
    owner: dict[str, int] = {}
    for i, layer in enumerate(manifest.layers):
        if layer.media_type.endswith(".tar"):
            continue
        name = layer.filepath or layer.annotations.get(TITLE)
        if not name:
            continue
        rel = safe_relpath(name, f"{where} layers[{i}]")
        if rel in owner:
            raise ManifestError(f"{where}: layers[{owner[rel]}] and layers[{i}] both write"
                                f" {_short(rel)}; refusing the model")
        owner[rel] = i
        out.append((layer, rel))
    for rel, i in owner.items():
        parts = rel.split("/")
        for n in range(1, len(parts)):
            parent = "/".join(parts[:n])
            if parent in owner:
                raise ManifestError(
                    f"{where}: layers[{owner[parent]}] writes the file {_short(parent)} and"
                    f" layers[{i}] a file under it ({_short(rel)}); refusing the model")
    return out
