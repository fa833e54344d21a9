"""The wheel, installed into a fresh virtual environment and run from an empty folder: what
issue #23 adds works without the source checkout (package data: the tools go.mod files, the
CRDs, the catalog; the commit recorded at build).

The wheel is built from a copy of the tracked and untracked-but-not-ignored files (what a
release builds; no stale build/ folder), with the commit passed as $AIPLAT_COMMIT since the
copy has no .git. The fresh venv gets aiplat's dependencies from this one through a .pth
line (no network for them), aiplat itself only from the wheel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], cwd=ROOT, check=True, capture_output=True,
                           text=True).stdout.split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_bytes(src.read_bytes())


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    base = tmp_path_factory.mktemp("wheel")
    src, dist, venv = base / "src", base / "dist", base / "venv"
    _copy_tree(src)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()
    env = dict(os.environ, AIPLAT_COMMIT=head)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                            str(dist), str(src)], env=env, capture_output=True, text=True,
                           check=False, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "aiplat-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next(dist.glob("aiplat-*.whl"))
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--no-deps", "--no-index", str(wheel)], capture_output=True,
                          text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return venv / "bin" / "aiplat", head


def _run(exe: Path, cwd: Path, *args: str, code: int = 0) -> str:
    done = subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True,
                          check=False, timeout=600, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == code, (args, done.stderr[-3000:])
    return done.stdout


def test_the_installed_aiplat_is_the_wheel(installed: tuple[Path, str], tmp_path: Path) -> None:
    exe, _ = installed
    where = _run(exe.parent / "python", tmp_path, "-c", "import aiplat; print(aiplat.__file__)")
    assert str(exe.parents[1]) in where and str(ROOT) not in where


def test_version_names_the_commit_and_the_pins(installed: tuple[Path, str],
                                               tmp_path: Path) -> None:
    exe, head = installed
    info = json.loads(_run(exe, tmp_path, "version", "-o", "json"))
    assert info["commit"] == head
    assert {t["name"]: t["version"] for t in info["targets"]}["kueue"].startswith("v0.")
    assert all(t["version"] != "unknown" for t in info["targets"])
    assert f"(commit {head[:12]}, Python " in _run(exe, tmp_path, "--version")


def test_kube_validate_checks_every_custom_resource_without_crd_dir(
        installed: tuple[Path, str], tmp_path: Path) -> None:
    exe, _ = installed
    _run(exe, tmp_path, "kube", "render", "-d", "kube")
    data = json.loads(_run(exe, tmp_path, "kube", "validate", "kube", "-o", "json"))
    assert data[0]["objects"] > 50
    assert data[0]["issues"] == [], data[0]["issues"][:5]


def test_catalog_completion_and_help(installed: tuple[Path, str], tmp_path: Path) -> None:
    exe, _ = installed
    assert "hgx-h100-8" in _run(exe, tmp_path, "catalog", "node-types")
    assert "_aiplat_completion" in _run(exe, tmp_path, "completion", "bash")
    assert "Exit codes:" in _run(exe, tmp_path, "--help")
    assert list(tmp_path.iterdir()) == []  # nothing written where it ran
