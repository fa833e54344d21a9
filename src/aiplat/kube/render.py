"""Render the whole tree from the spec: pure, in memory, deterministic.

``render_plan(resolved, plan)`` returns a ``Rendered``: manifests by file (what kustomize
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
from aiplat.kube.render_network import render_network
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
    manifests.update(render_serving(platform))
    manifests.update(render_workloads(platform, pools, sized))
    for cm in trust_configmaps(platform):
        manifests[f"tenants/{cm['metadata']['namespace']}/model-trust.yaml"] = [cm]
    m_net, f_net = render_network(platform, plan)
    manifests.update(m_net)
    other.update(f_net)
    inventory = from_facts(platform, pools)
    other["cluster/nodes/inventory.yaml"] = (
        "# The pools as lint sees them; replace with what the nodes report if they differ.\n"
        + dump_docs([inventory.to_dict()]))
    return Rendered(manifests=manifests, inventory=inventory, other=other)


def render(platform: Platform, catalog: Catalog) -> Rendered:
    """Resolve, size and render a spec in one call (commands and tests that start from a
    spec); a caller that already has the plan calls ``render_plan`` with it."""
    resolved = resolve(platform, catalog)
    return render_plan(resolved, plan_resolved(resolved))
