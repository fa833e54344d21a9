"""Attacks and faults against a real Debian docker-registry on 127.0.0.1, through the CLI.

Issue 38 against the real registry: a same-size edit of a model's Python file in the
snapshot passed ``verify`` and warm pulls as clean, and ``sign`` did not say which digest it
signed (both failed before their fix; the hostile-registry cases, which a real registry
cannot play, are unit tests with fakes and a loopback server).

Cache poisoning as issue 15 reproduced it: an unsigned model allowed under ``scratch/*``
lists a signed model's blob as a weight file and ships a tar layer with a file at the same
path; before the fix the unpack wrote through the snapshot's hard link into the signed
model's cached blob. Disk-full faults use a real tiny tmpfs (needs root to mount): a
download, an unpack, a warm pull's ref write and ``sign --generate-key`` on a full disk each
end in one clean error line, never a traceback.
"""

from __future__ import annotations

import errno
import io
import os
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import need
from registry import Registry
from registry import model_cli as run

from aiplat.artifacts.client import RegistryClient
from aiplat.artifacts.modelpack import (
    FILEPATH,
    TITLE,
    WEIGHT_CONFIG_TAR,
    WEIGHT_RAW,
    Descriptor,
    ModelInfo,
    model_config,
    model_manifest,
)
from aiplat.artifacts.reference import sha256_digest

pytestmark = pytest.mark.integration


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """``make("2m")``: a fresh tmpfs of that size (real ENOSPC); needs root."""
    mounts: list[Path] = []

    def make(size: str) -> Path:
        d = tmp_path / f"fs{len(mounts)}"
        d.mkdir()
        why = "not root" if os.geteuid() != 0 else ""
        if not why:
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                                str(d)], capture_output=True, text=True, check=False)
            why = r.stderr.strip() if r.returncode else ""
        if why:
            need(f"cannot mount a tmpfs: {why}")
        mounts.append(d)
        return d

    yield make
    for d in mounts:
        subprocess.run(["umount", "-l", str(d)], check=False)


def fill(fs: Path) -> None:
    """Write until the file system is full, to the last page."""
    fd = os.open(fs / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 1 << 16, 1 << 12, 1):
            try:
                while os.write(fd, b"\0" * size):
                    pass
            except OSError as e:
                assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)


def make_model(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir(parents=True)
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def one_line_error(code: int, err: str, *words: str) -> None:
    assert code == 1, err
    last = err.strip().splitlines()[-1]
    for w in words:
        assert w in last, last


# ---------------------------------------------------------------------------- cache poisoning


def test_unsigned_scratch_model_cannot_poison_a_signed_models_cache(
        registry: Registry, tmp_path: Path) -> None:
    good = os.urandom(1 << 20)
    key = tmp_path / "release.key"
    assert run("sign", "--generate-key", str(key))[0] == 0
    src = make_model(tmp_path / "src", {"model.safetensors": good, "config.json": b"{}"})
    prod = f"{registry.host}/prod/llama:v1"
    code, _, err = run("push", str(src), prod, "--sign-key", str(key))
    assert code == 0, err
    pem = Path(f"{key}.pub").read_text().replace("\n", "\\n")
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\n"
        f'keys:\n  release: {{publicKey: "{pem}"}}\n'
        f'rules:\n  - {{repositories: ["{registry.host}/prod/*"], require: signed,'
        " keys: [release]}\n"
        f'  - {{repositories: ["{registry.host}/scratch/*"], require: none}}\n')
    cache = str(tmp_path / "cache")
    code, out, err = run("pull", prod, "--cache", cache, "--policy", str(policy))
    assert code == 0 and "signed by" in err, err
    snap = Path(out.strip())

    # The attacker's manifest: the signed blob as a weight file, plus a tar layer that holds
    # a file at the same path.
    evil = b"attacker".ljust(len(good), b"!")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("model.safetensors")
        info.size = len(evil)
        tar.addfile(info, io.BytesIO(evil))
    tar_bytes = buf.getvalue()
    with RegistryClient(registry.host) as c:
        assert c.mount_blob("scratch/evil", sha256_digest(good), "prod/llama")
        tar_digest = c.push_bytes("scratch/evil", tar_bytes)
        layers = [Descriptor(WEIGHT_RAW, sha256_digest(good), len(good),
                             {FILEPATH: "model.safetensors", TITLE: "model.safetensors"}),
                  Descriptor(WEIGHT_CONFIG_TAR, tar_digest, len(tar_bytes),
                             {TITLE: "config-files.tar"})]
        config = model_config(ModelInfo(name="evil"), [x.digest for x in layers])
        manifest = model_manifest(c.push_bytes("scratch/evil", config), len(config), layers)
        c.put_manifest("scratch/evil", "v1", manifest.to_bytes())

    code, _, err = run("pull", f"{registry.host}/scratch/evil:v1", "--cache", cache,
                       "--policy", str(policy))
    one_line_error(code, err, "model.safetensors", "refus")
    code, out, err = run("pull", prod, "--cache", cache, "--policy", str(policy))
    assert code == 0 and "warm pull" in err and "signed by" in err, err
    assert Path(out.strip()) == snap
    assert (snap / "model.safetensors").read_bytes() == good
    code, out, _ = run("verify", "--cache", cache)
    assert code == 0 and "clean" in out


# ---------------------------------------------------------------------------- every file


def test_verify_and_a_warm_pull_find_a_same_size_edit_of_a_models_python_file(
        registry: Registry, tmp_path: Path) -> None:
    """Issue 38: a config-tar file edited in the snapshot, its size kept, passed as clean."""
    code = b"def forward(x):\n    return x\n"
    ref = _push(registry, tmp_path, "every/file", {"w.safetensors": os.urandom(4096),
                                                   "modeling.py": code})
    cache = str(tmp_path / "cache")
    rc, out, err = run("pull", ref, "--cache", cache)
    assert rc == 0, err
    snap = Path(out.strip())
    (snap / "modeling.py").chmod(0o644)
    (snap / "modeling.py").write_bytes(code.replace(b"return x", b"return 0"))
    rc, out, _ = run("verify", "--cache", cache, "--no-quarantine")
    assert rc == 1 and "modified snapshot" in out
    rc, out, err = run("pull", ref, "--cache", cache)
    assert rc == 0 and "incomplete or modified" in err and "modeling.py" in err, err
    assert (snap / "modeling.py").read_bytes() == code
    rc, out, _ = run("verify", "--cache", cache)
    assert rc == 0 and "clean" in out


def test_sign_prints_the_digest_of_the_manifest_it_signed(
        registry: Registry, tmp_path: Path) -> None:
    ref = _push(registry, tmp_path, "sign/digest", {"w.safetensors": os.urandom(1024)})
    key = tmp_path / "k.key"
    assert run("sign", "--generate-key", str(key))[0] == 0
    with RegistryClient(registry.host) as c:
        _, digest, _ = c.get_manifest("sign/digest", "v1")
    rc, out, err = run("sign", ref, "--key", str(key))
    assert rc == 0 and out.startswith(f"signed {registry.host}/sign/digest@{digest} "), err


# ---------------------------------------------------------------------------- disk full


def _push(registry: Registry, tmp_path: Path, repo: str, files: dict[str, bytes]) -> str:
    ref = f"{registry.host}/{repo}:v1"
    code, _, err = run("push", str(make_model(tmp_path / repo.replace("/", "-"), files)), ref)
    assert code == 0, err
    return ref


def test_disk_full_during_download_is_one_clean_error(
        registry: Registry, tmp_path: Path, tiny_fs: Callable[[str], Path]) -> None:
    ref = _push(registry, tmp_path, "full/download", {"w.safetensors": os.urandom(3 << 20)})
    fs = tiny_fs("1m")
    code, _, err = run("pull", ref, "--cache", str(fs / "cache"))
    one_line_error(code, err, "No space left on device", "(fix: ", "gc")


def test_disk_full_during_unpack_is_one_clean_error_and_leaves_no_snapshot(
        registry: Registry, tmp_path: Path, tiny_fs: Callable[[str], Path]) -> None:
    ref = _push(registry, tmp_path, "full/unpack", {"w.safetensors": os.urandom(16 << 10),
                                                    "tokenizer.json": os.urandom(1200 << 10)})
    fs = tiny_fs("2m")
    code, _, err = run("pull", ref, "--cache", str(fs / "cache"))
    one_line_error(code, err, "No space left on device", "model directory", "(fix: ")
    assert list((fs / "cache/snapshots").iterdir()) == []


def test_disk_full_at_a_warm_pulls_ref_write_still_serves_the_model(
        registry: Registry, tmp_path: Path, tiny_fs: Callable[[str], Path]) -> None:
    good = os.urandom(64 << 10)
    ref = _push(registry, tmp_path, "full/warm", {"w.safetensors": good})
    fs = tiny_fs("1m")
    cache = str(fs / "cache")
    code, out, err = run("pull", ref, "--cache", cache)
    assert code == 0, err
    fill(fs)
    code, out2, err = run("pull", ref, "--cache", cache)
    assert code == 0 and out2 == out, err
    assert "warning:" in err and "No space left on device" in err
    assert (Path(out.strip()) / "w.safetensors").read_bytes() == good


def test_generate_key_on_a_full_disk_is_one_clean_error_and_writes_nothing(
        tmp_path: Path, tiny_fs: Callable[[str], Path]) -> None:
    fs = tiny_fs("256k")
    fill(fs)
    code, _, err = run("sign", "--generate-key", str(fs / "release.key"))
    one_line_error(code, err, "No space left on device", "(fix: ")
    assert sorted(p.name for p in fs.iterdir()) == ["filler"]
