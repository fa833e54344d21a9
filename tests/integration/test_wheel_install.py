"""The wheel, installed into a fresh virtual environment and run from an empty folder: what
issue #23 adds works without the source checkout (package data: the tools go.mod files, the
CRDs, the catalog; the commit recorded at build). How it is built and installed: wheelinstall.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from wheelinstall import ROOT, Installed

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def installed(installed_wheel: Installed) -> tuple[Path, str]:
    return installed_wheel.aiplat, installed_wheel.commit


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
