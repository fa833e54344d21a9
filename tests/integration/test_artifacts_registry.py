"""Model artifacts against a real Debian docker-registry (distribution 2.8) on 127.0.0.1.

Each test pushes its own repository to one registry started for the module. Faults are
real: a blob file changed in the registry's storage, a ``kill -9`` of a pulling process, a
TCP proxy that answers 500 or cuts the connection mid-blob.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from registry import FaultProxy, Registry
from safetensors.numpy import save_file

from aiplat.artifacts.cache import Cache
from aiplat.cli.model import model
from aiplat.errors import AiplatError

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-c", "import sys; from aiplat.cli.model import model; model()"]
# Imports first, then wait for the start file: the pulls start together, not staggered by
# interpreter start-up.
BARRIER = ("import os, sys, time\nfrom aiplat.cli.model import model\ngo = sys.argv.pop(1)\n"
           "while not os.path.exists(go):\n    time.sleep(0.005)\nmodel()\n")


def run(*args: str) -> tuple[int, str, str]:
    """Invoke ``aiplat model`` in-process with main()'s error handling (exit 2/1 on errors)."""
    r = CliRunner().invoke(model, list(args))
    code = r.exit_code
    if isinstance(r.exception, AiplatError):
        code = r.exception.exit_code
        return code, r.stdout, r.stderr + str(r.exception)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return code, r.stdout, r.stderr


def make_model(root: Path, shards: int = 2, mib: int = 4, seed: int = 0) -> Path:
    root.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    per = mib * 2**20 // 4 // 8
    for i in range(shards):
        tensors = {f"layers.{j}.weight": rng.standard_normal(per, dtype=np.float32)
                   for j in range(8)}
        save_file(tensors, str(root / f"model-{i + 1:05d}-of-{shards:05d}.safetensors"))
    (root / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 64}))
    (root / "tokenizer.json").write_text(json.dumps({"version": "1.0"}))
    return root


def push(registry: Registry, src: Path, repo: str, *extra: str) -> dict[str, object]:
    code, out, err = run("push", str(src), f"{registry.host}/{repo}:v1", "-o", "json", *extra)
    assert code == 0, err
    return dict(json.loads(out))


def test_round_trip_is_byte_identical_and_warm_pull_copies_nothing(
        registry: Registry, tmp_path: Path) -> None:
    src = make_model(tmp_path / "src")
    pushed = push(registry, src, "rt/llama", "--chunk-size", "1MiB")
    assert len(pushed["uploaded"]) == 4  # type: ignore[arg-type]
    again = push(registry, src, "rt/llama")
    assert again["uploaded"] == [] and again["digest"] == pushed["digest"]
    mounted = push(registry, src, "rt/copy", "--mount-from", "rt/llama", "--name", "llama")
    assert len(mounted["mounted"]) == 4 and mounted["uploaded"] == []  # type: ignore[arg-type]

    cache = tmp_path / "cache"
    ref = f"{registry.host}/rt/llama:v1"
    code, out, err = run("pull", ref, "--cache", str(cache), "-o", "json")
    assert code == 0, err
    cold = json.loads(out)
    snap = Path(cold["path"])
    for f in src.iterdir():
        assert (snap / f.name).read_bytes() == f.read_bytes()
    code, out, _ = run("pull", ref, "--cache", str(cache), "-o", "json")
    warm = json.loads(out)
    assert warm["warm"] and warm["bytesDownloaded"] == 0 and warm["path"] == cold["path"]
    blob = Cache(cache).blob_path(json.loads(run("inspect", ref, "-o", "json")[1])
                                  ["layers"][0]["digest"])
    assert (snap / "model-00001-of-00002.safetensors").stat().st_ino == blob.stat().st_ino

    code, out, _ = run("tags", f"{registry.host}/rt/llama", "-o", "json")
    assert json.loads(out)["tags"] == ["v1"]
    code, out, _ = run("ls", registry.host, "-o", "json")
    assert {"rt/llama", "rt/copy"} <= set(json.loads(out)["repositories"])
    code, out, _ = run("ls", "--cache", str(cache))
    assert "rt/llama:v1" in out
    code, out, _ = run("verify", "--cache", str(cache))
    assert code == 0 and "clean" in out


def test_tampered_blob_in_registry_storage_fails_and_caches_nothing(
        registry: Registry, tmp_path: Path) -> None:
    src = make_model(tmp_path / "src", seed=1)
    push(registry, src, "tamper/m")
    ref = f"{registry.host}/tamper/m:v1"
    layers = json.loads(run("inspect", ref, "-o", "json")[1])["layers"]
    victim = layers[0]["digest"]
    path = registry.blob_path(victim)
    with open(path, "r+b") as f:
        f.seek(2_000_000)
        f.write(b"\x00\x01\x02\x03")
    cache = tmp_path / "cache"
    code, _, err = run("pull", ref, "--cache", str(cache), "--concurrency", "1")
    assert code == 1 and "digest" in err and victim in err
    c = Cache(cache)
    assert victim not in c.blob_digests() and c.snapshot_digests() == []
    assert list((cache / "tmp").iterdir()) == []


def test_kill_9_during_pull_then_pull_resumes_and_verify_is_clean(
        registry: Registry, tmp_path: Path) -> None:
    src = make_model(tmp_path / "src", shards=1, mib=24, seed=2)
    push(registry, src, "kill/m")
    ref, cache = f"{registry.host}/kill/m:v1", tmp_path / "cache"
    proc = subprocess.Popen([*CLI, "pull", ref, "--cache", str(cache), "--max-rate", "8M"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    partial = 0
    while time.monotonic() < deadline and partial < 4 * 2**20:
        time.sleep(0.05)
        parts = list((cache / "tmp").glob("*.partial")) if (cache / "tmp").exists() else []
        partial = max((p.stat().st_size for p in parts), default=0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert partial >= 4 * 2**20, "the pull never got going"
    code, out, err = run("pull", ref, "--cache", str(cache), "-o", "json")
    assert code == 0, err
    res = json.loads(out)
    assert res["bytesResumed"] >= 4 * 2**20
    assert res["bytesDownloaded"] + res["bytesResumed"] >= 24 * 2**20
    code, out, _ = run("verify", "--cache", str(cache))
    assert code == 0 and "clean" in out
    snap = Path(res["path"])
    assert (snap / "model-00001-of-00001.safetensors").read_bytes() == (
        src / "model-00001-of-00001.safetensors").read_bytes()


def test_eight_concurrent_pulls_download_each_blob_once(
        registry: Registry, tmp_path: Path) -> None:
    src = make_model(tmp_path / "src", shards=3, mib=8, seed=3)
    push(registry, src, "conc/m")
    ref, cache = f"{registry.host}/conc/m:v1", tmp_path / "cache"
    layers = json.loads(run("inspect", ref, "-o", "json")[1])["layers"]
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", BARRIER, str(go), "pull", ref, "--cache",
                               str(cache), "--max-rate", "12M", "-o", "json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(8)]
    time.sleep(1.0)
    go.touch()
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
        results.append(json.loads(out))
    assert len({r["path"] for r in results}) == 1
    # The pulls really overlapped: each found the snapshot missing and went for the blobs.
    assert sum(1 for r in results if not r["warm"]) >= 4
    for layer in layers:
        assert registry.blob_gets(layer["digest"], "conc/m") == 1, layer["path"]
    assert sum(r["bytesDownloaded"] for r in results) == sum(x["size"] for x in layers) + (
        json.loads(run("inspect", ref, "-o", "json")[1])["totalBytes"]
        - sum(x["size"] for x in layers))


def test_policy_refuses_unsigned_and_wrongly_signed_models(
        registry: Registry, tmp_path: Path) -> None:
    src = make_model(tmp_path / "src", shards=1, mib=1, seed=4)
    push(registry, src, "prod/m")
    ref = f"{registry.host}/prod/m:v1"
    good, bad = tmp_path / "good.key", tmp_path / "bad.key"
    assert run("sign", "--generate-key", str(good))[0] == 0
    assert run("sign", "--generate-key", str(bad))[0] == 0
    pem = Path(f"{good}.pub").read_text().replace("\n", "\\n")
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: aiplat/v1alpha1\nkind: TrustPolicy\n"
        f'keys:\n  release: {{publicKey: "{pem}"}}\n'
        f'rules:\n  - {{repositories: ["{registry.host}/prod/*"], require: signed,'
        " keys: [release]}\n")
    cache = str(tmp_path / "cache")
    code, _, err = run("pull", ref, "--cache", cache, "--policy", str(policy))
    assert code == 1 and "is not signed" in err
    assert run("sign", ref, "--key", str(bad))[0] == 0
    code, _, err = run("pull", ref, "--cache", cache, "--policy", str(policy))
    assert code == 1 and "no valid signature" in err
    assert Cache(cache).blob_digests() == []  # refused before a byte of the model moved
    assert run("sign", ref, "--key", str(good))[0] == 0
    code, out, err = run("pull", ref, "--cache", cache, "--policy", str(policy), "-o", "json")
    assert code == 0, err
    assert json.loads(out)["trust"].startswith("signed by ecdsa-p256:")
    code, out, _ = run("inspect", ref, "-o", "json")
    assert json.loads(out)["signatures"] == 2
    code, out, _ = run("tags", f"{registry.host}/prod/m")
    assert out.split() == ["v1"]  # the .sig tag is not a version
    code, _, err = run("pull", f"{registry.host}/other/m:v1", "--cache", cache,
                       "--policy", str(policy))
    assert code == 1 and "no rule matches" in err


def test_500_and_dropped_connections_are_retried_then_fail_clearly(
        registry: Registry, tmp_path: Path) -> None:
    src = make_model(tmp_path / "src", shards=1, mib=6, seed=5)
    push(registry, src, "faults/m")
    with FaultProxy(registry.port) as proxy:
        ref = f"{proxy.host}/faults/m:v1"
        proxy.fail_blob_gets = [500, 503]
        proxy.drop_blob_gets = [None, None, 2 * 2**20, 1 * 2**20]  # type: ignore[list-item]
        code, out, err = run("pull", ref, "--cache", str(tmp_path / "c1"), "--concurrency", "1",
                             "-o", "json")
        assert code == 0, err
        res = json.loads(out)
        assert res["bytesResumed"] == 0 and res["bytesDownloaded"] >= 6 * 2**20
        snap = Path(res["path"])
        assert (snap / "model-00001-of-00001.safetensors").read_bytes() == (
            src / "model-00001-of-00001.safetensors").read_bytes()
        big = [r for r in proxy.blob_requests if "bytes=" in r]
        # After each cut the pull resumed where it was, with a Range request.
        assert len(big) == 2, proxy.blob_requests
        proxy.fail_blob_gets = [500] * 20
        t0 = time.monotonic()
        code, _, err = run("pull", ref, "--cache", str(tmp_path / "c2"), "--concurrency", "1")
        assert code == 1
        assert "failed after 5 attempts" in err and "HTTP 500" in err and "resume" in err
        assert time.monotonic() - t0 >= 0.2 + 0.4 + 0.8 + 1.6  # exponential backoff


def test_bench_reports_every_figure_and_verdict(registry: Registry, tmp_path: Path) -> None:
    src = make_model(tmp_path / "src", shards=2, mib=4, seed=6)
    push(registry, src, "bench/m")
    code, out, err = run("bench", f"{registry.host}/bench/m:v1", "--workdir", str(tmp_path / "w"),
                         "--rounds", "1", "-o", "json")
    assert code == 0, err
    data = json.loads(out)
    assert {"sha256", "raw", "raw_disk", "cold", "oras", "warm", "page_cache", "load",
            "load_lib", "read"} <= set(data["figures"])
    assert all(f["GBps"] > 0 for k, f in data["figures"].items() if k != "warm")
    assert data["figures"]["load"]["bytes"] == 8 * 2**20  # every tensor was read
    assert data["figures"]["load_lib"]["bytes"] == 8 * 2**20
    assert len(data["verdicts"]) == 4
    assert not (tmp_path / "w" / "run").exists()


def test_blobs_stream_in_reads_larger_than_httpcores_64_kib(
        registry: Registry, tmp_path: Path) -> None:
    from aiplat.artifacts.client import READ_BYTES, RegistryClient
    from aiplat.artifacts.modelpack import Manifest
    from aiplat.artifacts.pull import resolve
    from aiplat.artifacts.reference import parse_reference

    push(registry, make_model(tmp_path / "m", shards=1, mib=16), "chunks/m")
    ref = parse_reference(f"{registry.host}/chunks/m:v1")
    with RegistryClient(registry.host) as client:
        body, _, _ = client.get_manifest(ref.repository, resolve(client, ref))
        layer = max(Manifest.from_bytes(body, str(ref)).layers, key=lambda d: d.size)
        with client.stream_blob(ref.repository, layer.digest) as r:
            sizes = [len(c) for c in r.iter_raw()]
    assert sum(sizes) == layer.size
    assert 64 * 1024 < max(sizes) <= READ_BYTES
