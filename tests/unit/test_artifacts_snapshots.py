"""A snapshot is checked file by file: every weight file, every member of its config-tar
layers, nothing else (issue #38); and pins and claims are checked, not trusted.

Each test failed before its fix: ``model verify`` skipped the config-tar files and a warm
pull checked only their size, so a same-size edit of a model's Python file (or a file
planted beside the model's) passed as clean; a ``sha512:`` pin never pulled; a manifest
with sha512 layers failed half-way in the cache with an input error; a HEAD answering a
digest that is not one ended the pull with an input error.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from artifacts_fakes import FakeRegistry

from aiplat.artifacts.cache import Cache
from aiplat.artifacts.client import RegistryClient, RetryPolicy
from aiplat.artifacts.errors import ManifestError
from aiplat.artifacts.modelpack import FILEPATH, WEIGHT_RAW, Descriptor, ModelInfo, model_manifest
from aiplat.artifacts.package import package_dir
from aiplat.artifacts.pull import pull
from aiplat.artifacts.push import push_package
from aiplat.artifacts.reference import Reference, parse_reference, sha256_digest

HOST = "reg.test:5000"
CODE = b"def forward(x):\n    return x\n"
EVIL = b"import os;os.system('x')\n"[:len(CODE)].ljust(len(CODE), b"#")


def _model(tmp_path: Path) -> tuple[FakeRegistry, RegistryClient, Cache, Reference, Path]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "w.safetensors").write_bytes(os.urandom(4096))
    (src / "config.json").write_bytes(b'{"auto_map": {"AutoModel": "modeling.M"}}')
    (src / "sub").mkdir()
    (src / "sub" / "modeling.py").write_bytes(CODE)
    fake = FakeRegistry()
    c = RegistryClient(HOST, transport=fake.transport, retry=RetryPolicy(attempts=1))
    ref = parse_reference(f"{HOST}/m/a:v1")
    push_package(c, ref, package_dir(src, ModelInfo(name="a")))
    cache = Cache(tmp_path / "cache")
    snap = pull(c, cache, ref).path
    return fake, c, cache, ref, snap


def _edit(path: Path, data: bytes) -> None:
    os.chmod(path, 0o644)
    path.write_bytes(data)


@pytest.mark.parametrize("attack", ["same-size-edit", "planted-file", "planted-folder",
                                    "folder-replaced-by-a-link"])
def test_verify_and_a_warm_pull_check_every_file_of_the_model(
        tmp_path: Path, attack: str) -> None:
    _, c, cache, ref, snap = _model(tmp_path)
    assert cache.verify(quarantine=False).clean
    if attack == "same-size-edit":
        _edit(snap / "sub/modeling.py", EVIL)
        assert (snap / "sub/modeling.py").stat().st_size == len(CODE)
    elif attack == "planted-file":
        (snap / "tokenizer.json").write_text("{}")
    elif attack == "planted-folder":
        (snap / "extra").mkdir()
    else:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "modeling.py").write_bytes(CODE)
        os.chmod(snap / "sub", 0o755)
        (snap / "sub/modeling.py").unlink()
        (snap / "sub").rmdir()
        (snap / "sub").symlink_to(elsewhere)
    digest = cache.snapshot_digests()[0]
    res = cache.verify(quarantine=False)
    assert not res.clean and res.modified_snapshots == [digest]
    again = pull(c, cache, ref)
    assert not again.warm and any("modified" in n for n in again.notes), again.notes
    assert (again.path / "sub/modeling.py").read_bytes() == CODE
    assert sorted(p.relative_to(again.path).as_posix() for p in again.path.rglob("*")) == \
        ["config.json", "sub", "sub/modeling.py", "w.safetensors"]
    assert cache.verify(quarantine=False).clean and pull(c, cache, ref).warm


def test_verify_removes_a_modified_snapshot_when_it_quarantines(tmp_path: Path) -> None:
    _, c, cache, ref, snap = _model(tmp_path)
    _edit(snap / "config.json", b'{"auto_map": {"AutoModel": "modeling.X"}}')
    res = cache.verify()
    assert res.removed_snapshots == res.modified_snapshots and not snap.exists()
    assert pull(c, cache, ref).path == snap and cache.verify().clean


# ---------------------------------------------------------------------------- digests


def test_a_sha512_pin_pulls_the_model_it_names(tmp_path: Path) -> None:
    fake, c, cache, _, snap = _model(tmp_path)
    body = fake.manifests["m/a"]["v1"]
    sha512 = "sha512:" + hashlib.sha512(body).hexdigest()
    fake.manifests["m/a"][sha512] = body
    res = pull(c, cache, parse_reference(f"{HOST}/m/a@{sha512}"))
    assert res.digest == sha256_digest(body) and res.path == snap and res.warm


def test_a_manifest_with_sha512_blobs_is_refused_before_any_download(tmp_path: Path) -> None:
    fake = FakeRegistry()
    data = b"weights"
    layer = Descriptor(WEIGHT_RAW, "sha512:" + hashlib.sha512(data).hexdigest(), len(data),
                       {FILEPATH: "w.safetensors"})
    body = model_manifest(sha256_digest(b"{}"), 2, [layer]).to_bytes()
    fake.manifests["m"] = {"v1": body, sha256_digest(body): body}
    c = RegistryClient(HOST, transport=fake.transport, retry=RetryPolicy(attempts=1))
    with pytest.raises(ManifestError, match="not a sha256 digest") as info:
        pull(c, Cache(tmp_path / "cache"), parse_reference(f"{HOST}/m:v1"))
    assert info.value.exit_code == 1 and "layers[0]" in str(info.value)
    assert not [p for m, p, _ in fake.log if "/blobs/" in p]


@pytest.mark.parametrize("claim", ["not-a-digest", "sha512:" + "a" * 128, "sha256:XYZ"])
def test_a_head_claiming_no_sha256_digest_is_resolved_by_the_bytes(
        tmp_path: Path, claim: str) -> None:
    fake, c, cache, ref, snap = _model(tmp_path)
    fake.head_digest["v1"] = claim
    assert pull(c, cache, ref).path == snap
