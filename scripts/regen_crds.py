"""Write (or check) aiplat's packaged CRDs from the upstream modules pinned in the repo.

    python scripts/regen_crds.py          # rewrite src/aiplat/kube/crd_data/*.json
    python scripts/regen_crds.py --check  # exit 1 if any bundle differs from upstream

Which CRDs: the ones ``aiplat lab cluster`` installs (``aiplat.cluster.assets.MANIFESTS``,
the entries whose destination is a CRD folder or file), each module at the version its tools
``go.mod`` pins. The module comes from the Go module cache (``go mod download -json
MODULE@VERSION``: checksum-verified against go.sum's database). Every CRD is cut to what
validation reads by ``aiplat.kube.crds.reduce_crd``. Needs Go (1.26, as the tools modules).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from aiplat.cluster.assets import MANIFESTS, crd_versions, versions
from aiplat.kube.crds import BUNDLE_DIR, reduce_crd

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "aiplat" / "kube" / BUNDLE_DIR
# bundle name for each module whose CRDs aiplat validates against
NAMES = {"sigs.k8s.io/kueue": "kueue", "sigs.k8s.io/jobset": "jobset",
         "sigs.k8s.io/gateway-api": "gateway-api",
         "sigs.k8s.io/gateway-api-inference-extension": "gateway-api-inference-extension",
         "github.com/kubernetes-csi/external-snapshotter/client/v8": "external-snapshotter",
         "github.com/prometheus-operator/prometheus-operator": "prometheus-operator",
         "sigs.k8s.io/node-feature-discovery": "node-feature-discovery",
         "github.com/k8snetworkplumbingwg/network-attachment-definition-client":
             "network-attachment-definition",
         "sigs.k8s.io/lws": "lws"}


def go() -> str:
    found = shutil.which("go") or ("/usr/local/go/bin/go" if os.access(
        "/usr/local/go/bin/go", os.X_OK) else None)
    if found is None:
        sys.exit("go is not on PATH (install Go >= 1.26)")
    return found


def module_dir(module: str, version: str) -> Path:
    done = subprocess.run([go(), "mod", "download", "-json", f"{module}@{version}"],
                          capture_output=True, text=True, check=False, timeout=900)
    if done.returncode != 0:
        sys.exit(f"go mod download {module}@{version} failed: {done.stderr[-2000:]}")
    return Path(json.loads(done.stdout)["Dir"])


def crd_sources() -> dict[str, list[str]]:
    """module -> the paths inside it that hold its CRDs (from MANIFESTS)."""
    out: dict[str, list[str]] = {}
    for module, src, dst in MANIFESTS:
        if module in NAMES and "crds" in dst.split("/")[0:2]:
            out.setdefault(module, []).append(src)
    return out


def _crds_in(path: Path) -> list[dict[str, Any]]:
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    docs = [d for f in files for d in yaml.safe_load_all(f.read_text()) if isinstance(d, dict)]
    return [d for d in docs if d.get("kind") == "CustomResourceDefinition"]


def build() -> dict[str, dict[str, Any]]:
    pinned = versions() | crd_versions()
    bundles = {}
    for module, paths in crd_sources().items():
        version = pinned[module]
        root = module_dir(module, version)
        crds = [reduce_crd(d) for p in paths for d in _crds_in(root / p)]
        crds.sort(key=lambda c: str(c["metadata"]["name"]))
        bundles[NAMES[module]] = {"name": NAMES[module], "module": module, "version": version,
                                  "paths": paths, "crds": crds}
    return bundles


def text(bundle: dict[str, Any]) -> str:
    # One CRD per line: small, and a diff names the CRD that changed.
    head = {k: v for k, v in bundle.items() if k != "crds"}
    lines = [json.dumps(c, sort_keys=True, separators=(",", ":")) for c in bundle["crds"]]
    return (json.dumps(head, sort_keys=True)[:-1] + ', "crds": [\n' + ",\n".join(lines)
            + "\n]}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare instead of writing; exit 1 on any difference")
    args = parser.parse_args()
    wanted = {f"{name}.json": text(b) for name, b in build().items()}
    # The Go modules' bundles (scripts/gitops_crds.py writes the others, from git tags).
    present = {p.name: t for p in OUT.glob("*.json")
               if '"module":' in (t := p.read_text())} if OUT.is_dir() else {}
    if args.check:
        stale = sorted(n for n in wanted.keys() | present.keys()
                       if wanted.get(n) != present.get(n))
        for name in stale:
            print(f"differs from upstream: {OUT / name}", file=sys.stderr)
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name in present.keys() - wanted.keys():
        (OUT / name).unlink()
    for name, content in wanted.items():
        (OUT / name).write_text(content)
        print(f"wrote {OUT / name} ({len(content) // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
