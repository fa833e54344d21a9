"""``operators/``: the operators the tree needs, as releases a GitOps tool installs (pure).

``kube render --gitops helmfile|argocd|flux`` (default ``helmfile``: it needs no controller in
the cluster, ``helmfile apply`` from the folder) writes one release per operator, pinned to
the spec's approved versions and carrying aiplat's values:

- NVIDIA GPU Operator: ``versions.approved[].gpuOperator``, values
  ``cluster/gpu-operator/values.yaml``. Node Feature Discovery comes with it (the values keep
  its ``nfd`` subchart on), so the tree's NodeFeatureRules find their CRD;
- NVIDIA DRA Driver for GPUs, where a pool takes GPUs through DRA: ``draDriver``, values
  ``cluster/dra-driver/values.yaml``;
- Kueue: ``kubernetes.kueueVersion`` (the release the tree is rendered for; ``aiplat matrix
  check`` holds it to the approved entry), values: the Configuration the tree renders, as the
  chart's ``managerConfig.controllerManagerConfigYaml``, so the chart's ConfigMap and the
  tree's ``kueue/kueue-manager-config.yaml`` say the same.

The approved entry is the one whose ``kubernetes`` is the spec's ``kubernetes.version`` (the
only entry if there is one). A pin must be one version: an operator without an exact approved
version is an input error naming the field, never an unpinned release. What the tree uses
and the version matrix has no row for (JobSet for the examples, the Gateway API and its
inference extension with a gateway controller, the Prometheus stack for monitoring) is named
in the folder's README, installed by hand.

Chart coordinates as their projects publish them: NVIDIA's Helm repository
https://helm.ngc.nvidia.com/nvidia (GPU Operator chart versions keep the ``v``: ``--version
v25.10.0``, https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/
getting-started.html; the DRA driver's do not, https://docs.nvidia.com/datacenter/
cloud-native/gpu-operator/latest/dra-intro-install.html), Kueue's OCI chart
``oci://registry.k8s.io/kueue/charts/kueue`` (https://kueue.sigs.k8s.io/docs/installation/).

Argo CD: one ``Application`` per release (``argoproj.io/v1alpha1``, values inline as
``helm.valuesObject``, sync wave -2), listed in the root kustomization so the Application
that syncs the tree installs the operators first (Argo CD waits for a wave only where
Applications have a health check: ``resource.customizations.health.argoproj.io_Application``).
Flux: a ``HelmRepository`` per repository and a ``HelmRelease`` per release, applied by the
``aiplat-operators`` Kustomization that ``aiplat-cluster`` depends on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from aiplat.errors import InputError
from aiplat.kube.yamlout import dump_docs
from aiplat.spec.models import Platform, VersionEntry

Obj = dict[str, Any]
MODES = ("helmfile", "argocd", "flux")
DEFAULT = "helmfile"
FOLDER = "operators"
NVIDIA = ("nvidia", "https://helm.ngc.nvidia.com/nvidia", False)
KUEUE = ("kueue", "registry.k8s.io/kueue/charts", True)  # (name, url, OCI)
_EXACT = re.compile(r"^v?\d+\.\d+\.\d+$")
# What the tree needs that no approved version pins.
BY_HAND = ("JobSet (the examples' JobSet)", "Gateway API, its inference extension and a "
           "gateway controller (serving/)", "the Prometheus stack (aiplat monitoring render)")


@dataclass(frozen=True)
class Release:
    name: str
    namespace: str
    repo: tuple[str, str, bool]
    chart: str
    version: str
    values: Obj
    values_file: str | None = None  # the tree's values file, where aiplat writes one


def _entry(platform: Platform) -> tuple[int, VersionEntry]:
    approved = platform.versions.approved
    want = platform.kubernetes.version
    hits = [(i, e) for i, e in enumerate(approved)
            if e.kubernetes and (e.kubernetes == want or e.kubernetes.startswith(want + "."))]
    if hits:
        return hits[0]
    if len(approved) == 1:
        return 0, approved[0]
    raise InputError(f"versions.approved: no entry approves Kubernetes {want}, so no "
                     "operator version to pin (fix: add an entry with kubernetes: "
                     f"\"{want}\" and gpuOperator, draDriver, kueue)")


def _pin(platform: Platform, key: str, spelled: str) -> str:
    i, e = _entry(platform)
    value = getattr(e, key)
    if value is None or not _EXACT.match(value):
        raise InputError(f"versions.approved[{i}].{spelled}: "
                         + ("missing" if value is None else f"{value!r} is not one version")
                         + f": a release is pinned to one (fix: approve it, e.g. {spelled}: "
                         + ("v25.10.0" if key == "gpu_operator" else "v25.12.0") + ")")
    return str(value)


def releases(platform: Platform, files: dict[str, str]) -> list[Release]:
    """The operator releases for the tree's ``files`` (its values files decide which)."""
    def values(path: str) -> Obj:
        return dict(yaml.safe_load(files[path]) or {})

    out = [Release("gpu-operator", "gpu-operator", NVIDIA, "gpu-operator",
                   _pin(platform, "gpu_operator", "gpuOperator"),
                   values("cluster/gpu-operator/values.yaml"),
                   "cluster/gpu-operator/values.yaml")]
    if "cluster/dra-driver/values.yaml" in files:
        out.append(Release("nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu", NVIDIA,
                           "nvidia-dra-driver-gpu",
                           _pin(platform, "dra_driver", "draDriver").removeprefix("v"),
                           values("cluster/dra-driver/values.yaml"),
                           "cluster/dra-driver/values.yaml"))
    config = next((d for d in yaml.safe_load_all(files.get("kueue/kueue-manager-config.yaml", ""))
                   if d and d.get("kind") == "ConfigMap"), None)
    kueue_values = {"managerConfig": {"controllerManagerConfigYaml": config["data"][
        "controller_manager_config.yaml"]}} if config else {}
    out.append(Release("kueue", "kueue-system", KUEUE, "kueue",
                       platform.kubernetes.kueue_version, kueue_values))
    return out


def _readme(mode: str, rels: list[Release]) -> str:
    pinned = "\n".join(f"- {r.name} {r.version} ({r.repo[1]}, chart {r.chart}) in {r.namespace}"
                       for r in rels)
    hand = "\n".join(f"- {x}" for x in BY_HAND)
    how = {"helmfile": "Install them before applying the tree: `helmfile -f helmfile.yaml "
                       "apply` in this folder.",
           "argocd": "The root kustomization lists this folder: the Application that syncs "
                     "the tree creates these Applications in wave -2, before cluster/ (-1) "
                     "and the platform (0).",
           "flux": "flux/kustomizations.yaml applies this folder (aiplat-operators) before "
                   "aiplat-cluster, which depends on it."}[mode]
    return (f"# Operators ({mode})\n\nPinned to the spec's approved versions, with aiplat's "
            f"values:\n\n{pinned}\n\n{how}\n\nNot pinned (the version matrix has no row for "
            f"them): install by hand, at the versions the cluster needs:\n\n{hand}\n")


def render_releases(platform: Platform, files: dict[str, str], mode: str | None
                    ) -> dict[str, str]:
    """``operators/`` for ``mode`` (one of ``MODES``). Without one (the default, helmfile),
    a spec that pins no operator gets a README saying why no release is written; asked for
    a mode, that is an input error."""
    if mode is not None and mode not in MODES:
        raise InputError(f"--gitops {mode}: not one of {', '.join(MODES)}")
    try:
        rels = releases(platform, files)
    except InputError as e:
        if mode is not None:
            raise
        return {f"{FOLDER}/README.md": f"# Operators\n\nNo release written: {e}\n"}
    mode = mode or DEFAULT
    out = {f"{FOLDER}/README.md": _readme(mode, rels)}
    if mode == "helmfile":
        out[f"{FOLDER}/helmfile.yaml"] = dump_docs([_helmfile(rels)])
    elif mode == "argocd":
        out[f"{FOLDER}/applications.yaml"] = dump_docs([_application(r) for r in rels])
        out[f"{FOLDER}/kustomization.yaml"] = dump_docs([{
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": ["applications.yaml"]}])
    else:
        repos = {r.repo for r in rels}
        out[f"{FOLDER}/releases.yaml"] = dump_docs(
            [_helm_repository(r) for r in sorted(repos)] + [_helm_release(r) for r in rels])
        out[f"{FOLDER}/kustomization.yaml"] = dump_docs([{
            "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": ["releases.yaml"]}])
    return out


def _helmfile(rels: list[Release]) -> Obj:
    repos = sorted({r.repo for r in rels})
    return {"repositories": [{"name": n, "url": u, **({"oci": True} if oci else {})}
                             for n, u, oci in repos],
            "releases": [{"name": r.name, "namespace": r.namespace, "createNamespace": True,
                          "chart": f"{r.repo[0]}/{r.chart}", "version": r.version,
                          # the tree's values file itself (relative to helmfile.yaml)
                          "values": [f"../{r.values_file}" if r.values_file else r.values]}
                         for r in rels]}


def _application(r: Release) -> Obj:
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": r.name, "namespace": "argocd",
                         "annotations": {"argocd.argoproj.io/sync-wave": "-2"}},
            "spec": {"project": "default",
                     "source": {"repoURL": r.repo[1], "chart": r.chart,
                                "targetRevision": r.version,
                                "helm": {"releaseName": r.name, "valuesObject": r.values}},
                     "destination": {"server": "https://kubernetes.default.svc",
                                     "namespace": r.namespace},
                     "syncPolicy": {"automated": {"prune": True, "selfHeal": True},
                                    "syncOptions": ["CreateNamespace=true",
                                                    "ServerSideApply=true"]}}}


def _helm_repository(repo: tuple[str, str, bool]) -> Obj:
    name, url, oci = repo
    return {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": {"interval": "1h", "url": f"oci://{url}" if oci else url,
                     **({"type": "oci"} if oci else {})}}


def _helm_release(r: Release) -> Obj:
    return {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": r.name, "namespace": "flux-system"},
            "spec": {"interval": "10m", "releaseName": r.name, "targetNamespace": r.namespace,
                     "install": {"createNamespace": True, "crds": "CreateReplace"},
                     "upgrade": {"crds": "CreateReplace"},
                     "chart": {"spec": {"chart": r.chart, "version": r.version,
                                        "sourceRef": {"kind": "HelmRepository",
                                                      "name": r.repo[0],
                                                      "namespace": "flux-system"}}},
                     "values": r.values}}
