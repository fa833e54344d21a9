"""The version matrix's Kueue facts against Kueue's own releases: the CRDs of v0.14.0 and
v0.15.0 (fetched from the Go module proxy with `go mod download`, as the lab cluster's build
does) say which release first serves ``kueue.x-k8s.io/v1beta2``. Fails, not skips, in CI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from aiplat.ops.matrix import KUEUE_API_FROM

pytestmark = pytest.mark.integration


def _served(version: str) -> set[str]:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").exists()
                                else None)
    if go is None:
        if os.environ.get("CI", "").lower() in {"true", "1", "yes"}:
            pytest.fail("go not found (CI=true: integration tests must run)", pytrace=False)
        pytest.skip("go not found")
    cp = subprocess.run([go, "mod", "download", "-json", f"sigs.k8s.io/kueue@{version}"],
                        capture_output=True, text=True, check=True, timeout=600)
    crd = Path(json.loads(cp.stdout)["Dir"]) / (
        "config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml")
    doc = yaml.load(crd.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return {v["name"] for v in doc["spec"]["versions"] if v.get("served")}


def test_v1beta2_is_first_served_by_the_release_the_matrix_names() -> None:
    major, minor = KUEUE_API_FROM["v1beta2"]
    assert (major, minor) == (0, 15)
    assert "v1beta2" not in _served("v0.14.0")
    assert {"v1beta1", "v1beta2"} <= _served("v0.15.0")
