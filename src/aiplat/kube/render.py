"""Render the whole tree from the spec: pure, in memory, deterministic.

``render_plan(resolved, plan)`` returns a ``Rendered``: manifests by file (what kustomize
applies), other files by path (node scripts and patches, kubelet drop-ins, Helm values,
Kueue configuration fragments), and ``files()`` — everything as text, with a
``kustomization.yaml`` in each directory that holds manifests and one at the top listing
them. The CLI writes that mapping atomically with ``fsutil.write_tree``.

**GitOps parts.** The tree is applied in parts, in this order (``PARTS``): ``crds`` (a
CustomResourceDefinition anywhere in the tree), ``operators`` (the operators' releases that
``gitops.py`` writes under ``operators/``, which bring their own CRDs), ``cluster`` (the
operators' configuration, node agents, device classes, NFD rules: ``cluster/``), ``platform``
(``tenants/``, ``kueue/``, ``storage/``, ``serving/``: what uses those CRDs) and ``examples``
(``workloads/``: a 32-GPU JobSet, vLLM Deployments). Every object carries its part's Argo CD
sync wave (``argocd.argoproj.io/sync-wave``: -3 to 1), and ``flux/`` holds one Flux
``Kustomization`` per folder whose ``dependsOn`` follow the same order. The examples are
opt-in: ``workloads/`` is written with its own kustomization but the root one lists it only
when asked (``files(examples=True)``, ``kube render --with-examples``), so neither
``kubectl apply -k``, Argo CD nor Flux starts 32 GPUs of someone's example by default.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from aiplat.catalog.models import Catalog
from aiplat.kube.facts import PoolFacts, pool_facts
from aiplat.kube.inventory import Inventory, from_facts
from aiplat.kube.objects import Obj
from aiplat.kube.render_apps import render_serving, render_storage, render_workloads
from aiplat.kube.render_cluster import render_cluster
from aiplat.kube.render_kueue import render_kueue
from aiplat.kube.render_models import trust_configmaps
from aiplat.kube.render_network import render_network
from aiplat.kube.render_releases import FOLDER, render_releases
from aiplat.kube.render_tenants import render_tenants
from aiplat.kube.yamlout import dump_docs
from aiplat.plan.build import plan_resolved
from aiplat.plan.models import Plan
from aiplat.plan.pods import pod_groups
from aiplat.plan.resolve import Resolved, resolve
from aiplat.spec.models import Platform


def _pod_gpus(plan: Plan, pools: list[PoolFacts]) -> dict[tuple[str, str], set[int]]:
    """(tenant, pool) -> the GPUs of each pod its workloads run there."""
    by_name = {p.name: p for p in pools}
    out: dict[tuple[str, str], set[int]] = {}
    for w in plan.workloads:
        p = by_name[w.pool]
        for g in pod_groups(w, p.gpus_per_node, mig=bool(p.spec.sharing.mig_layout)):
            out.setdefault((w.tenant, w.pool), set()).add(g.gpus)
    return out


LAYERS = ("cluster", "kueue", "tenants", "storage", "serving", "workloads")
EXAMPLES = "workloads"  # the example workloads' folder: opt-in
# Part -> Argo CD sync wave: lower syncs first, and Argo CD waits for a wave to be healthy.
PARTS = {"crds": -3, "operators": -2, "cluster": -1, "platform": 0, "examples": 1}
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
_PART_OF_LAYER = {"cluster": "cluster", "kueue": "platform", "tenants": "platform",
                  "storage": "platform", "serving": "platform", "workloads": "examples"}
# Flux: one Kustomization per folder; what each waits for (namespaces live in tenants/,
# LocalQueues in kueue/ need them; PVCs and the gateway go in tenant namespaces).
_FLUX_DEPENDS = {"operators": (), "cluster": ("operators",), "tenants": ("cluster",),
                 "kueue": ("tenants",), "storage": ("tenants",), "serving": ("tenants",),
                 "workloads": ("kueue", "storage", "serving")}
FLUX_SOURCE = "aiplat"  # the GitRepository the Kustomizations read (the user's)


def part_of(path: str, o: Obj) -> str:
    """The GitOps part of an object rendered into ``path`` (its top folder)."""
    if o.get("kind") == "CustomResourceDefinition":
        return "crds"
    return _PART_OF_LAYER.get(path.split("/", 1)[0], "platform")


def _with_wave(path: str, o: Obj) -> Obj:
    meta = o.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}),
                           SYNC_WAVE: str(PARTS[part_of(path, o)])}
    return o


@dataclass(frozen=True)
class Rendered:
    manifests: dict[str, list[Obj]]
    inventory: Inventory
    other: dict[str, str] = field(default_factory=dict)
    spec: Platform | None = None  # for the operator releases (render_releases)

    def objects(self) -> list[Obj]:
        return [o for objs in self.manifests.values() for o in objs]

    def files(self, examples: bool = False, gitops: str | None = None) -> dict[str, str]:
        """Every file of the tree; the root kustomization lists ``workloads/`` only with
        ``examples``; ``operators/`` holds the releases for ``gitops`` (``render_releases``;
        default helmfile)."""
        out: dict[str, str] = {}
        dirs: dict[str, list[str]] = {}
        for path, objs in sorted(self.manifests.items()):
            out[path] = dump_docs(objs)
            d, base = posixpath.split(path)
            dirs.setdefault(d, []).append(base)
        # Each directory lists its files and its child directories that have manifests.
        for leaf in sorted(dirs):
            child, parent = leaf, posixpath.dirname(leaf)
            while parent:
                dirs.setdefault(parent, [])
                entry = posixpath.basename(child)
                if entry not in dirs[parent]:
                    dirs[parent].append(entry)
                child, parent = parent, posixpath.dirname(parent)
        for d, entries in sorted(dirs.items()):
            out[f"{d}/kustomization.yaml"] = _kustomization(sorted(entries, key=_order))
        out.update(self.other)
        operators = render_releases(self.spec, out, gitops) if self.spec else {}
        out.update(operators)
        listed = f"{FOLDER}/kustomization.yaml" in operators  # Argo CD's or Flux's objects
        top = ([FOLDER] if listed and gitops == "argocd" else []) + [
            layer for layer in LAYERS if layer in dirs and (examples or layer != EXAMPLES)]
        out["kustomization.yaml"] = _kustomization(top)
        out.update(_flux(sorted(layer for layer in LAYERS if layer in dirs),
                         operators=listed and gitops == "flux"))
        return dict(sorted(out.items()))


def _order(entry: str) -> tuple[int, str]:
    # Namespaces before what lives in them; directories after files.
    first = ("namespace.yaml", "priorityclasses.yaml", "node-agent.yaml")
    return (0 if entry in first else 1 if entry.endswith(".yaml") else 2, entry)


def _kustomization(resources: list[str]) -> str:
    return dump_docs([{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                       "resources": resources}])


def _flux(layers: list[str], operators: bool = False) -> dict[str, str]:
    """``flux/``: a Flux Kustomization per folder, ordered by ``dependsOn``; the examples'
    in a file of their own that ``flux/kustomization.yaml`` does not list. With
    ``operators`` (``--gitops flux``), ``operators/`` first, and cluster/ waits for it."""
    if operators:
        layers = [FOLDER, *layers]

    def one(layer: str) -> Obj:
        deps = [d for d in _FLUX_DEPENDS.get(layer, ("cluster",)) if d in layers]
        return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                "metadata": {"name": f"aiplat-{layer}", "namespace": "flux-system"},
                "spec": {"interval": "10m", "path": f"./{layer}", "prune": True,
                         "wait": True, "sourceRef": {"kind": "GitRepository",
                                                     "name": FLUX_SOURCE},
                         **({"dependsOn": [{"name": f"aiplat-{d}"} for d in deps]}
                            if deps else {})}}
    platform = [one(layer) for layer in layers if layer != EXAMPLES]
    head = ("# Flux Kustomizations, one per folder of the tree, in dependsOn order. Their paths "
            "are\n# relative to the root of the GitRepository named aiplat (yours): prefix the "
            "tree's\n# folder in it, e.g. ./clusters/prod/kube/cluster.\n")
    out = {"flux/kustomizations.yaml": head + dump_docs(platform),
           "flux/kustomization.yaml": _kustomization(["kustomizations.yaml"])}
    if EXAMPLES in layers:
        out["flux/examples.yaml"] = head + dump_docs([one(EXAMPLES)])
    return out


# What routes to one served workload goes where the workload is: applied without its
# Deployment an InferencePool has no endpoint (the gateway answers 503).
_ROUTES = {"serving/gateway.yaml": ("workloads/routes.yaml", {"InferencePool", "HTTPRoute"}),
           "serving/endpoint-pickers.yaml": ("workloads/endpoint-pickers.yaml", None)}


def _with_their_workloads(serving: dict[str, list[Obj]]) -> dict[str, list[Obj]]:
    """``serving/`` keeps the gateway (class, namespace, Gateway); each model's
    InferencePool, HTTPRoute and endpoint picker join the examples' ``workloads/``."""
    out: dict[str, list[Obj]] = {}
    for path, objs in serving.items():
        to, kinds = _ROUTES.get(path, (None, set()))
        for o in objs:
            moved = to is not None and (kinds is None or o.get("kind") in kinds)
            out.setdefault(to if moved and to else path, []).append(o)
    return out


def render_plan(resolved: Resolved, plan: Plan) -> Rendered:
    """The tree for a resolved and sized platform: pools, racks, GPUs per workload and model
    sizes all come from ``plan/``, never from the raw spec again."""
    platform = resolved.spec
    pools = pool_facts(resolved)
    sized = {w.name: w for w in plan.workloads}
    params = {name: w.params for name, w in sized.items()}
    manifests: dict[str, list[Obj]] = {}
    other: dict[str, Any] = {}
    m, f = render_cluster(platform, pools)
    manifests.update(m)
    other.update(f)
    m2, f2 = render_kueue(platform, pools)
    manifests.update(m2)
    other.update(f2)
    manifests.update(render_tenants(platform, pools, _pod_gpus(plan, pools)))
    manifests.update(render_storage(platform, params))
    manifests.update(_with_their_workloads(render_serving(platform)))
    manifests.update(render_workloads(platform, pools, sized))
    for cm in trust_configmaps(platform):
        manifests[f"tenants/{cm['metadata']['namespace']}/model-trust.yaml"] = [cm]
    for path, objs in manifests.items():
        for o in objs:
            _with_wave(path, o)
    m_net, f_net = render_network(platform, plan)
    manifests.update(m_net)
    other.update(f_net)
    inventory = from_facts(platform, pools)
    other["cluster/nodes/inventory.yaml"] = (
        "# The pools as lint sees them; replace with what the nodes report if they differ.\n"
        + dump_docs([inventory.to_dict()]))
    return Rendered(manifests=manifests, inventory=inventory, other=other, spec=platform)


def render(platform: Platform, catalog: Catalog) -> Rendered:
    """Resolve, size and render a spec in one call (commands and tests that start from a
    spec); a caller that already has the plan calls ``render_plan`` with it."""
    resolved = resolve(platform, catalog)
    return render_plan(resolved, plan_resolved(resolved))
