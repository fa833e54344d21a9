"""Write the packaged CRDs of the GitOps tools whose objects ``kube render --gitops`` writes
(Argo CD's Application; Flux's Kustomization, HelmRepository and HelmRelease) into
``src/aiplat/kube/crd_data/``, cut like the Go-module bundles (``kube.crds.reduce_crd``).

These tools are not Go modules the lab builds, so they are read from their repositories at a
release tag: ``REPO`` is a bare git directory of each (the session's ``fetch`` of
github.com/argoproj/argo-cd and github.com/fluxcd/*-controller, or a ``git clone --bare``).
A bundle records the repository, the tag, the commit and the paths; ``--check`` compares.

    python scripts/gitops_crds.py /work/.mirror [--check]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from regen_crds import OUT, text  # noqa: E402

from aiplat.kube.crds import reduce_crd  # noqa: E402

# bundle -> [(repository, mirror folder, tag, path)]
SOURCES = {
    "argo-cd": [("github.com/argoproj/argo-cd", "argoproj+argo-cd", "v3.5.1",
                 "manifests/crds/application-crd.yaml")],
    "flux": [
        ("github.com/fluxcd/kustomize-controller", "fluxcd+kustomize-controller", "v1.9.4",
         "config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml"),
        ("github.com/fluxcd/source-controller", "fluxcd+source-controller", "v1.9.1",
         "config/crd/bases/source.toolkit.fluxcd.io_helmrepositories.yaml"),
        ("github.com/fluxcd/helm-controller", "fluxcd+helm-controller", "v1.6.3",
         "config/crd/bases/helm.toolkit.fluxcd.io_helmreleases.yaml"),
    ],
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout


def build(mirrors: Path) -> dict[str, str]:
    out = {}
    for name, sources in SOURCES.items():
        crds, origin = [], []
        for repository, folder, tag, path in sources:
            repo = mirrors / folder / "repo"
            commit = _git(repo, "rev-list", "-n", "1", tag).strip()
            docs = yaml.safe_load_all(_git(repo, "show", f"{commit}:{path}"))
            crds += [reduce_crd(d) for d in docs
                     if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]
            origin.append({"repository": repository, "tag": tag, "commit": commit,
                           "path": path})
        crds.sort(key=lambda c: str(c["metadata"]["name"]))
        version = ", ".join(f"{o['repository'].rsplit('/', 1)[1]} {o['tag']}" for o in origin)
        out[f"{name}.json"] = text({"name": name, "version": version, "sources": origin,
                                    "crds": crds})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mirrors", type=Path)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    wanted = build(args.mirrors)
    if args.check:
        bad = [n for n, t in wanted.items() if not (OUT / n).is_file()
               or (OUT / n).read_text() != t]
        print("differ: " + ", ".join(bad) if bad else "unchanged")
        return 1 if bad else 0
    for n, t in wanted.items():
        (OUT / n).write_text(t)
        print(f"wrote {OUT / n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
