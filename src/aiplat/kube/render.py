"""Render the whole tree from the spec: pure, in memory, deterministic.

``render(platform, catalog)`` returns a ``Rendered``: manifests by file (what kustomize
applies), other files by path (node scripts and patches, kubelet drop-ins, Helm values,
Kueue configuration fragments), and ``files()`` — everything as text, with a
``kustomization.yaml`` in each directory that holds manifests and one at the top listing
them. The CLI writes that mapping atomically with ``fsutil.write_tree``.
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
from aiplat.kube.render_tenants import render_tenants
from aiplat.kube.yamlout import dump_docs
from aiplat.spec.models import Platform

LAYERS = ("cluster", "kueue", "tenants", "storage", "serving", "workloads")


@dataclass(frozen=True)
class Rendered:
    manifests: dict[str, list[Obj]]
    inventory: Inventory
    other: dict[str, str] = field(default_factory=dict)

    def objects(self) -> list[Obj]:
        return [o for objs in self.manifests.values() for o in objs]

    def files(self) -> dict[str, str]:
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
        top = [layer for layer in LAYERS if layer in dirs]
        out["kustomization.yaml"] = _kustomization(top)
        out.update(self.other)
        return dict(sorted(out.items()))


def _order(entry: str) -> tuple[int, str]:
    # Namespaces before what lives in them; directories after files.
    first = ("namespace.yaml", "priorityclasses.yaml", "node-agent.yaml")
    return (0 if entry in first else 1 if entry.endswith(".yaml") else 2, entry)


def _kustomization(resources: list[str]) -> str:
    return dump_docs([{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                       "resources": resources}])


def workload_gpus(platform: Platform, catalog: Catalog) -> dict[str, int]:
    """GPUs per workload from the plan's sizing."""
    from aiplat.plan import build_plan

    return {w.name: w.gpus for w in build_plan(platform, catalog).workloads}


def render(platform: Platform, catalog: Catalog, gpus: dict[str, int] | None = None,
           pools: list[PoolFacts] | None = None) -> Rendered:
    pools = pools if pools is not None else pool_facts(platform, catalog)
    gpus = gpus if gpus is not None else workload_gpus(platform, catalog)
    params = _params(platform, catalog)
    manifests: dict[str, list[Obj]] = {}
    other: dict[str, Any] = {}
    m, f = render_cluster(platform, pools)
    manifests.update(m)
    other.update(f)
    m2, f2 = render_kueue(platform, pools)
    manifests.update(m2)
    other.update(f2)
    manifests.update(render_tenants(platform, pools))
    manifests.update(render_storage(platform, params))
    manifests.update(render_serving(platform))
    manifests.update(render_workloads(platform, pools, gpus, params))
    for cm in trust_configmaps(platform):
        manifests[f"tenants/{cm['metadata']['namespace']}/model-trust.yaml"] = [cm]
    inventory = from_facts(platform, pools)
    other["cluster/nodes/inventory.yaml"] = (
        "# The pools as lint sees them; replace with what the nodes report if they differ.\n"
        + dump_docs([inventory.to_dict()]))
    return Rendered(manifests=manifests, inventory=inventory, other=other)


def _params(platform: Platform, catalog: Catalog) -> dict[str, float]:
    out = {}
    for w in platform.workloads:
        if w.model.params:
            out[w.name] = w.model.params
        else:
            arch = catalog.model(w.model.name or "")
            out[w.name] = arch.params if arch else 0.0
    return out
