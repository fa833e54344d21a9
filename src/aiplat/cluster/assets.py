"""The lab cluster's programs: pinned in one place, built the ordinary Go way, found again.

The versions live in ``tools/go.mod`` next to this file (shipped with the package), a Go
module whose ``tool`` lines name the main packages: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kubectl, Kueue, JobSet, kwok and Helm. One module for
all of them, so the Kubernetes libraries they share are compiled once. ``build`` runs
``go build`` on it (``-mod=readonly``: nothing is written next to the package) into
``$XDG_CACHE_HOME/aiplat/cluster/<versions>/bin`` (default ``~/.cache``), and copies from the
Go module cache what the programs need besides themselves: Kueue's and JobSet's CRDs and
webhook configurations, and kwok's node and pod stages. Nothing of theirs is in this repo.

``locate`` finds each binary in ``--assets DIR`` first (binaries a user already has: an
envtest folder, a release download), then in the cache, and says how to build what is
missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from aiplat.errors import InputError
from aiplat.gobuild import Component, Progress, go_build
from aiplat.gobuild import go as _go

__all__ = ["Component", "Progress", "go_build"]

TOOLS = Path(str(resources.files("aiplat.cluster") / "tools"))


COMPONENTS = (
    Component("etcd", "go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/server/v3"),
    Component("kube-apiserver", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-apiserver"),
    Component("kube-controller-manager", "k8s.io/kubernetes",
              "k8s.io/kubernetes/cmd/kube-controller-manager"),
    Component("kube-scheduler", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kube-scheduler"),
    # the client: snapshots taken as an admin takes them (`kubectl get -o yaml`)
    Component("kubectl", "k8s.io/kubernetes", "k8s.io/kubernetes/cmd/kubectl"),
    Component("kueue", "sigs.k8s.io/kueue", "sigs.k8s.io/kueue/cmd/kueue"),
    Component("jobset", "sigs.k8s.io/jobset", "sigs.k8s.io/jobset"),
    Component("kwok", "sigs.k8s.io/kwok", "sigs.k8s.io/kwok/cmd/kwok"),
    # renders the upstream charts (Kueue's, NFD's, the GPU Operator's) with aiplat's values
    Component("helm", "helm.sh/helm/v4", "helm.sh/helm/v4/cmd/helm"),
)
CLIENTS = {"kubectl", "helm"}  # built, but the cluster runs without them
SHORT = {"k8s.io/kubernetes": "k8s", "sigs.k8s.io/kueue": "kueue",
         "sigs.k8s.io/jobset": "jobset", "sigs.k8s.io/kwok": "kwok",
         "go.etcd.io/etcd/server/v3": "etcd", "helm.sh/helm/v4": "helm"}
# What the programs read besides their flags, copied out of each module at build time:
# (module, path inside it, destination under manifests/).
MANIFESTS = (
    ("sigs.k8s.io/kueue", "config/components/crd/bases", "kueue/crds"),
    ("sigs.k8s.io/kueue", "config/components/webhook/manifests.yaml", "kueue/webhooks.yaml"),
    ("sigs.k8s.io/jobset", "config/components/crd/bases", "jobset/crds"),
    ("sigs.k8s.io/jobset", "config/components/webhook/manifests.yaml", "jobset/webhooks.yaml"),
    ("sigs.k8s.io/kwok", "kustomize/stage/node/fast/node-initialize.yaml",
     "kwok/node-initialize.yaml"),
    ("sigs.k8s.io/kwok", "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
     "kwok/node-heartbeat-with-lease.yaml"),
    ("sigs.k8s.io/kwok", "kustomize/stage/pod/fast/pod-ready.yaml", "kwok/pod-ready.yaml"),
    ("sigs.k8s.io/kwok", "kustomize/stage/pod/fast/pod-delete.yaml", "kwok/pod-delete.yaml"),
    # not loaded as is (it would complete every Job's pods): cluster.config.kwok_stages
    # narrows it to maintain's validation Jobs
    ("sigs.k8s.io/kwok", "kustomize/stage/pod/general/pod-complete.yaml",
     "kwok-general/pod-complete.yaml"),
    # CRD-only modules pinned in tools/crds/go.mod: what the rendered tree uses besides Kueue.
    ("sigs.k8s.io/gateway-api", "config/crd/standard", "crds/gateway-api"),
    ("sigs.k8s.io/gateway-api-inference-extension", "config/crd/bases", "crds/inference"),
    ("github.com/kubernetes-csi/external-snapshotter/client/v8", "config/crd",
     "crds/snapshotter"),
    # NodeFeatureRule (and NFD's NodeFeature/NodeFeatureGroup): the tree's hardware labels.
    ("sigs.k8s.io/node-feature-discovery", "deployment/base/nfd-crds/nfd-api-crds.yaml",
     "crds/nfd/nfd-api-crds.yaml"),
    # ServiceMonitor and PrometheusRule: the tree's monitoring objects for prometheus-operator.
    *(("github.com/prometheus-operator/prometheus-operator",
       f"example/prometheus-operator-crd/monitoring.coreos.com_{kind}.yaml",
       f"crds/prometheus/{kind}.yaml") for kind in ("servicemonitors", "prometheusrules")),
    # NetworkAttachmentDefinition (Multus): the secondary RDMA network per rail.
    ("github.com/k8snetworkplumbingwg/network-attachment-definition-client",
     "artifacts/networks-crd.yaml", "crds/multus/networks-crd.yaml"),
    # LeaderWorkerSet: a serving replica that spans nodes (its CRD only; no controller).
    ("sigs.k8s.io/lws", "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
     "crds/lws/leaderworkersets.yaml"),
)
CRD_MODULES = ("sigs.k8s.io/gateway-api", "sigs.k8s.io/gateway-api-inference-extension",
               "github.com/kubernetes-csi/external-snapshotter/client/v8",
               "github.com/prometheus-operator/prometheus-operator",
               "sigs.k8s.io/node-feature-discovery",
               "github.com/k8snetworkplumbingwg/network-attachment-definition-client",
               "sigs.k8s.io/lws")



def versions(go_mod: Path = TOOLS / "go.mod", modules: tuple[str, ...] = tuple(SHORT)
             ) -> dict[str, str]:
    """The pinned version of each component's module, read from the tools module."""
    text = go_mod.read_text()
    out = {}
    for module in modules:
        m = re.search(rf"^\s*{re.escape(module)} (v\S+)", text, re.M)
        if not m:
            raise InputError(f"{go_mod}: no version pinned for {module}")
        out[module] = m.group(1)
    return out


def version_key(pinned: dict[str, str]) -> str:
    """``k8s-v1.36.3_kueue-v0.19.2_...``: the cache folder of one set of versions."""
    return "_".join(f"{SHORT[m]}-{v}" for m, v in pinned.items())


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aiplat" / "cluster"


def default_cache() -> Path:
    return cache_root() / version_key(versions())


@dataclass(frozen=True)
class Assets:
    bins: dict[str, Path]
    manifests: Path

    def bin(self, name: str) -> str:
        if name not in self.bins:
            raise InputError(f"{name} was not found with the lab's programs (fix: run 'aiplat "
                             "lab cluster build', or put it in the --assets folder)")
        return str(self.bins[name])


def locate(assets: Path | None = None, cache: Path | None = None) -> Assets:
    """Each component's binary from ``assets`` or the cache; InputError naming what is
    missing and the command that builds it."""
    cache = cache or default_cache()
    bins: dict[str, Path] = {}
    missing = []
    for c in COMPONENTS:
        for d in ([assets] if assets else []) + [cache / "bin"]:
            p = d / c.name
            if p.is_file() and os.access(p, os.X_OK):
                bins[c.name] = p
                break
        else:
            if c.name not in CLIENTS:
                missing.append(c.name)
    manifests = cache / "manifests"
    if not (manifests / "crds").is_dir():
        missing.append("manifests (Kueue/JobSet CRDs and webhooks, kwok stages)")
    if missing:
        where = f"{assets} or {cache}" if assets else str(cache)
        raise InputError(f"not found in {where}: {', '.join(missing)} (fix: run 'aiplat lab "
                         "cluster build' (needs Go >= 1.26), or pass --assets DIR with the "
                         "binaries)")
    return Assets(bins=bins, manifests=manifests)


def crd_versions() -> dict[str, str]:
    return versions(TOOLS / "crds" / "go.mod", CRD_MODULES)


def _module_dirs(go: str, modules: set[str], cwd: Path) -> dict[str, Path]:
    cp = subprocess.run([go, "mod", "download", "-json", *sorted(modules)], cwd=cwd,
                        capture_output=True, text=True, check=False)
    if cp.returncode != 0:
        raise InputError(f"go mod download failed: {cp.stderr.strip()[-2000:]}")
    dec = json.JSONDecoder()
    out, text, i = {}, cp.stdout, 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        info, i = dec.raw_decode(text, i)
        out[info["Path"]] = Path(info["Dir"])
    return out


def build(cache: Path | None = None, progress: Progress = lambda _m: None,
          force: bool = False, packages: Progress | None = None) -> dict[str, object]:
    """Build what the cache lacks (everything with ``force``) and copy the manifests;
    idempotent: a second run finds every binary and builds nothing. ``progress`` hears what
    is built and copied; ``packages`` each Go package as it compiles."""
    pinned = versions()
    cache = cache or cache_root() / version_key(pinned)
    t0 = time.monotonic()
    built = go_build(TOOLS, list(COMPONENTS), cache, ldflags(pinned), progress=progress,
                     force=force, stamp_extra={"versions": pinned}, packages=packages)
    if built or any(not (cache / "manifests" / dst).exists() for _m, _s, dst in MANIFESTS):
        progress("copying the CRDs, webhooks and kwok stages from the Go module cache")
        _copy_manifests(_go(), cache / "manifests")
    return {"cache": str(cache), "versions": pinned, "built": built,
            "seconds": round(time.monotonic() - t0, 1)}


def ldflags(pinned: dict[str, str]) -> str:
    """No symbol tables or DWARF (binaries a third the size, links faster), and the version
    stamps each project's release build sets (``hack/lib/version.sh`` for Kubernetes): built
    from a module they are left at ``v0.0.0-master``, which Kueue refuses to parse."""
    k8s = pinned["k8s.io/kubernetes"]
    major, minor = k8s.lstrip("v").split(".")[:2]
    stamps: dict[str, str] = {}
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        stamps |= {f"{pkg}.gitVersion": k8s, f"{pkg}.gitMajor": major,
                   f"{pkg}.gitMinor": minor, f"{pkg}.gitTreeState": "clean"}
    stamps["sigs.k8s.io/kueue/pkg/version.GitVersion"] = pinned["sigs.k8s.io/kueue"]
    if "helm.sh/helm/v4" in pinned:  # as helm's Makefile does; unstamped it says "v4.2"
        stamps["helm.sh/helm/v4/internal/version.version"] = pinned["helm.sh/helm/v4"]
    return " ".join(["-s", "-w", *(f"-X={k}={v}" for k, v in stamps.items())])


def _copy_manifests(go: str, dest: Path) -> None:
    wanted = {m for m, _s, _d in MANIFESTS}
    dirs = _module_dirs(go, wanted - set(CRD_MODULES), TOOLS)
    dirs |= _module_dirs(go, wanted & set(CRD_MODULES), TOOLS / "crds")
    tmp = dest.with_name("manifests.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for module, src, dst in MANIFESTS:
        s, d = dirs[module] / src, tmp / dst
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_dir():
            shutil.copytree(s, d)
        else:
            shutil.copyfile(s, d)
    for p in tmp.rglob("*"):  # the module cache is read-only; our copy need not be
        p.chmod(0o755 if p.is_dir() else 0o644)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
