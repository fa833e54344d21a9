"""Refresh the corpus of upstream manifests under ``tests/data/corpus`` from bare git mirrors
of the upstream repositories (``git clone --mirror`` or the session's ``fetch``).

Each file is copied byte for byte to ``<project>/<ref>/<path>`` and listed in
``sources.json`` (repository, ref, commit, path, sha256). A file is kept when it is YAML
whose every document is a Kubernetes-style object (``apiVersion`` and ``kind``), under
50 KB, and not a tool's own config (kind, kustomize): Helm templates and Go templates do
not parse and are left out by that rule.

    .venv/bin/python bench/corpus_fetch.py --mirror /work/.mirror [--out tests/data/corpus]

A mirror is looked up as ``<mirror>/<owner>+<name>/repo`` (the layout ``fetch`` writes).
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

MAX_BYTES = 50_000
NOT_MANIFESTS = ("kind.x-k8s.io/", "kustomize.config.k8s.io/")


@dataclass(frozen=True)
class Source:
    project: str  # the folder under the corpus
    repo: str  # owner/name on GitHub
    ref: str  # a tag, or a commit for a repository without releases
    globs: tuple[str, ...]

    @property
    def folder(self) -> str:
        return self.ref[:12] if re.fullmatch("[0-9a-f]{40}", self.ref) else self.ref


_KUEUE = ("site/static/examples/*", "config/samples/*",
          "config/components/manager/controller_manager_config.yaml")
SOURCES = (
    Source("kueue", "kubernetes-sigs/kueue", "v0.17.8", _KUEUE),
    Source("kueue", "kubernetes-sigs/kueue", "v0.18.6", _KUEUE),
    Source("kueue", "kubernetes-sigs/kueue", "v0.19.2", _KUEUE),
    Source("jobset", "kubernetes-sigs/jobset", "v0.12.0",
           ("site/static/examples/*", "config/samples/*")),
    Source("k8s-dra-driver-gpu", "NVIDIA/k8s-dra-driver-gpu", "v25.12.0",
           ("demo/specs/*", "tests/bats/specs/*",
            "deployments/helm/nvidia-dra-driver-gpu/crds/*")),
    Source("k8s-dra-driver-gpu", "NVIDIA/k8s-dra-driver-gpu", "v25.8.1", ("demo/specs/*",)),
    Source("k8s-device-plugin", "NVIDIA/k8s-device-plugin", "v0.20.0",
           ("deployments/static/*", "testdata/*")),
    Source("lws", "kubernetes-sigs/lws", "v0.8.0", ("docs/examples/*", "config/samples/*")),
    Source("hami", "Project-HAMi/HAMi", "v2.10.0", ("examples/*",)),
    Source("kubernetes-examples", "kubernetes/examples",
           "279e8e4fe314f6cb7bc55fa3fbc21bbeaa48c0ea",
           ("AI/*", "web/*", "databases/*")),
)


def _git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True,
                          check=True).stdout


def is_manifest(data: bytes) -> bool:
    """YAML whose every document is an object with apiVersion and kind (not a tool's config)."""
    try:
        docs = [d for d in yaml.safe_load_all(data) if d is not None]
    except yaml.YAMLError:
        return False
    return bool(docs) and all(
        isinstance(d, dict) and isinstance(d.get("apiVersion"), str) and "kind" in d
        and not d["apiVersion"].startswith(NOT_MANIFESTS) for d in docs)


def gather(src: Source, mirror: Path, out: Path) -> list[dict[str, object]]:
    git_dir = mirror / src.repo.replace("/", "+") / "repo"
    commit = _git(git_dir, "rev-parse", f"{src.ref}^{{commit}}").decode().strip()
    listing = _git(git_dir, "ls-tree", "-r", "-l", commit).decode().splitlines()
    rows: list[dict[str, object]] = []
    for line in listing:
        meta, path = line.split("\t", 1)
        mode, kind, _, size = meta.split()
        # a mirror may lack its largest objects: ls-tree then prints "BAD" for the size
        if (kind != "blob" or mode == "120000" or not path.endswith((".yaml", ".yml"))
                or not size.isdigit() or int(size) > MAX_BYTES
                or path.rsplit("/", 1)[-1] == "kustomization.yaml"
                or not any(fnmatch.fnmatch(path, g) for g in src.globs)):
            continue
        data = _git(git_dir, "show", f"{commit}:{path}")
        if not is_manifest(data):
            continue
        rel = Path(src.project) / src.folder / path
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
        rows.append({"file": rel.as_posix(), "project": src.project, "repo": src.repo,
                     "ref": src.ref, "commit": commit, "path": path,
                     "sha256": hashlib.sha256(data).hexdigest()})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=Path("tests/data/corpus"))
    a = ap.parse_args()
    rows = [r for s in SOURCES for r in gather(s, a.mirror, a.out)]
    rows.sort(key=lambda r: str(r["file"]))
    lines = ",\n".join(json.dumps(r, sort_keys=True) for r in rows)
    (a.out / "sources.json").write_text(f"[\n{lines}\n]\n")
    print(f"{len(rows)} files from {len({r['repo'] for r in rows})} repositories")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
