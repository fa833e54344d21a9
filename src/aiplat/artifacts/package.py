"""Package a model directory as ModelPack layers (reads files; writes nothing).

Weight files (``*.safetensors``, ``*.gguf``, …) become one raw layer each, hashed by
streaming; everything else goes into one reproducible tar (sorted names, mtime 0, uid/gid 0,
mode 0644/0755) so packaging the same directory twice gives the same digests and a push of
an unchanged model uploads nothing. Symlinks and special files are refused: a model
directory should hold plain files.
"""

from __future__ import annotations

import io
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

from aiplat.artifacts.cache import hash_file
from aiplat.artifacts.errors import ArtifactInputError
from aiplat.artifacts.modelpack import (
    FILEPATH,
    TITLE,
    WEIGHT_CONFIG_TAR,
    WEIGHT_RAW,
    Descriptor,
    Manifest,
    ModelInfo,
    is_weight_file,
    model_config,
    model_manifest,
)
from aiplat.artifacts.reference import sha256_digest

SMALL_FILES_LIMIT = 256 * 1024 * 1024
CONFIG_LAYER_PATH = "config-files.tar"


@dataclass(frozen=True)
class Layer:
    """A layer to push: its descriptor and where its bytes are (a file or memory)."""

    descriptor: Descriptor
    path: Path | None = None
    data: bytes | None = None

    def open(self) -> io.BufferedIOBase:
        if self.data is not None:
            return io.BytesIO(self.data)
        assert self.path is not None
        return open(self.path, "rb")


@dataclass(frozen=True)
class Package:
    manifest: Manifest
    config: bytes
    layers: list[Layer]

    @property
    def manifest_bytes(self) -> bytes:
        return self.manifest.to_bytes()


def _files(root: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".git"))
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink() or not full.is_file():
                raise ArtifactInputError(
                    f"{full}: not a regular file (symlink or special file); copy the target"
                    " into the model directory or remove it")
            if not rel.isprintable():  # what pull refuses (modelpack.safe_relpath)
                raise ArtifactInputError(
                    f"{root}: the file {rel!r} has a name that is not printable (a control or"
                    " format character, or bytes that are not UTF-8), which aiplat model pull"
                    " refuses; rename it")
            out.append(rel)
    return sorted(out)


def _tar(root: Path, names: list[str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            full = root / name
            info = tarfile.TarInfo(name)
            info.size = full.stat().st_size
            info.mtime = 0
            info.mode = 0o755 if os.access(full, os.X_OK) else 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with open(full, "rb") as f:
                tar.addfile(info, f)
    # End at the two zero blocks that close the archive, as Go's archive/tar writes it,
    # without tarfile's padding to a 10 KiB record: modctl (and other Go readers that hash
    # what their tar reader consumed) refuse a blob whose digest covers bytes past the end.
    return buf.getvalue()[:tar.offset]


def package_dir(path: str | Path, info: ModelInfo) -> Package:
    root = Path(path)
    if not root.is_dir():
        raise ArtifactInputError(f"{root}: not a directory (fix: pass the model directory to push)")
    names = _files(root)
    weights = [n for n in names if is_weight_file(n)]
    small = [n for n in names if not is_weight_file(n)]
    if not weights:
        raise ArtifactInputError(
            f"{root}: no weight files (*.safetensors, *.gguf, *.bin, …); is this the model"
            " directory?")
    small_size = sum((root / n).stat().st_size for n in small)
    if small_size > SMALL_FILES_LIMIT:
        raise ArtifactInputError(
            f"{root}: {small_size / 2**20:.0f} MiB of non-weight files; at most "
            f"{SMALL_FILES_LIMIT // 2**20} MiB travel in the config tar. Move large data out"
            " or give weights a weight suffix")
    layers: list[Layer] = []
    for name in weights:
        full = root / name
        # The title too, so generic OCI tools (oras) name the file the same way.
        desc = Descriptor(WEIGHT_RAW, hash_file(full), full.stat().st_size,
                          {FILEPATH: name, TITLE: name})
        layers.append(Layer(desc, path=full))
    if small:
        data = _tar(root, small)
        desc = Descriptor(WEIGHT_CONFIG_TAR, sha256_digest(data), len(data),
                          {TITLE: CONFIG_LAYER_PATH})
        layers.append(Layer(desc, data=data))
    config = model_config(info, [layer.descriptor.digest for layer in layers])
    manifest = model_manifest(sha256_digest(config), len(config),
                              [layer.descriptor for layer in layers])
    return Package(manifest, config, layers)
