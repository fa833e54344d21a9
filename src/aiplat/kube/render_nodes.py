"""``cluster/nodes/``: which pool, rack and block each node is in, and the pool's taints (pure).

Pool, rack and block come from the floor plan, not from anything a node reports, so no
feature NFD discovers can derive them. With the floor plan in the spec (``pools[].nodeNames``:
the pool's node names in physical order, rack by rack) they become declarative after all: NFD's
worker publishes every node's own name (the ``system.name`` feature, attribute ``nodename``:
source/system/system.go of node-feature-discovery v0.19, read from the NODE_NAME its DaemonSet
sets from ``spec.nodeName``), so one NodeFeatureRule per pool (``aiplat-pool-<pool>``, one rule
per rack matching that rack's names) has nfd-master put on each node the pool's labels, its
rack and block and the pool's taints. The cluster applies them, re-applies them to a
re-imaged node, and a GitOps tool keeps them; there is no script to run per node.

Why NFD and not a node-labeller of our own: NFD is already deployed (the GPU Operator's
subchart) and already owns the hardware labels (``render_cluster.node_feature_rules``); a
second controller would be one more thing to run and secure. What it needs: taints in a rule
take effect only with nfd-master's ``-enable-taints`` (off by default), and labels in a
``*.kubernetes.io`` namespace other than NFD's own (``topology.kubernetes.io/zone``) only with
``-extra-label-ns`` (pkg/apis/nfd/validate Label). :func:`nfd_master_values` turns both on in
the GPU Operator's values for its ``node-feature-discovery`` subchart (``master.enableTaints``
and ``master.extraLabelNs``, which the chart turns into those flags; the flag replaces the
operator's ``master.config.extraLabelNs: [nvidia.com]``, a namespace NFD allows anyway since
it is not ``*.kubernetes.io``). NFD refuses unprefixed
keys and taint keys in ``*.kubernetes.io``: a pool with one of those keeps the script.

Without ``nodeNames`` (or with a key NFD refuses) the pool keeps the reviewed script
``label-and-taint.sh``, which takes the names on its command line, and ``cluster/nodes/
README.md`` says which pools use which and why. Both number racks and blocks the same way
(``PoolFacts.rack_labels``), and per pool a strategic-merge Node patch shows the labels and
taints for other tools.
"""

from __future__ import annotations

from typing import Any

from aiplat.kube.facts import MANAGED_BY, PoolFacts
from aiplat.kube.objects import Obj, obj
from aiplat.shell import sh
from aiplat.spec.models import Taint

NFD_API = "nfd.k8s-sigs.io/v1alpha1"
SCRIPT = "cluster/nodes/label-and-taint.sh"
README = "cluster/nodes/README.md"


def _ns(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def _kube_ns(ns: str) -> bool:
    return ns == "kubernetes.io" or ns.endswith(".kubernetes.io")


def nfd_refuses(pool: PoolFacts) -> str | None:
    """Why nfd-master would drop one of the pool's labels or taints (its validate.Label and
    validate.Taint), or None. Labels in other ``*.kubernetes.io`` namespaces are allowed
    through ``extraLabelNs`` (:func:`nfd_master_values`); these cannot be."""
    for key in [*pool.node_labels, pool.spec.topology.rack_label, pool.spec.topology.block_label]:
        if not _ns(key):
            return f"label '{key}' has no prefix, which NFD refuses"
    for t in pool.taints:
        ns = _ns(t.key)
        if not ns:
            return f"taint '{t.key}' has no prefix, which NFD refuses"
        if _kube_ns(ns) and not (ns == "feature.node.kubernetes.io"
                                 or ns.endswith(".feature.node.kubernetes.io")):
            return f"taint '{t.key}' is in a kubernetes.io namespace, which NFD refuses"
    return None


def declarative(pools: list[PoolFacts]) -> list[PoolFacts]:
    """The pools whose nodes NodeFeatureRules label and taint."""
    return [p for p in pools if p.spec.node_names and nfd_refuses(p) is None]


def _taint(t: Taint) -> dict[str, str]:
    return {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect.value}


def inventory_rules(pools: list[PoolFacts]) -> list[Obj]:
    """Per inventoried pool a NodeFeatureRule: one rule per rack, matching the rack's node
    names, setting the pool's labels, the rack and block labels and the pool's taints."""
    out: list[Obj] = []
    for p in declarative(pools):
        names = p.spec.node_names or []
        racks: dict[tuple[tuple[str, str], ...], list[str]] = {}
        for i, name in enumerate(names):
            racks.setdefault(tuple(p.rack_labels(i).items()), []).append(name)
        rules: list[Obj] = [{
            "name": f"aiplat pool {p.name} {dict(rack)[p.spec.topology.rack_label]}",
            "labels": {**p.node_labels, **dict(rack)},
            **({"taints": [_taint(t) for t in p.taints]} if p.taints else {}),
            "matchFeatures": [{"feature": "system.name", "matchExpressions": {
                "nodename": {"op": "In", "value": members}}}],
        } for rack, members in racks.items()]
        out.append(obj(NFD_API, "NodeFeatureRule", f"aiplat-pool-{p.name}",
                       labels=dict(MANAGED_BY), spec={"rules": rules}))
    return out


def nfd_master_values(pools: list[PoolFacts]) -> dict[str, Any]:
    """The NFD chart's ``master`` values the inventory rules need (empty when none)."""
    chosen = declarative(pools)
    if not chosen:
        return {}
    extra = sorted({_ns(k) for p in chosen for k in p.node_labels if _kube_ns(_ns(k))
                    and _ns(k) not in ("feature.node.kubernetes.io",
                                       "profile.node.kubernetes.io")})
    return {**({"enableTaints": True} if any(p.taints for p in chosen) else {}),
            **({"extraLabelNs": extra} if extra else {})}


def node_patch(pool: PoolFacts) -> Obj:
    return {
        "metadata": {"labels": pool.node_labels},
        "spec": {"taints": [_taint(t) for t in pool.taints]},
    }


def label_script(pools: list[PoolFacts]) -> str:
    """The reviewed script that labels and taints the named nodes of one of ``pools``."""
    lines = [
        "#!/usr/bin/env bash",
        "# Label and taint the nodes of each pool. Review, then run with the pool name and its",
        "# node names in physical order (rack by rack): ./label-and-taint.sh h100 node-a node-b",
        "# Rack and block labels follow the spec's nodesPerRack and racksPerBlock. A node that",
        "# replaces one: --at POSITION, its place in the pool's order (0-based, rack by rack),",
        "# gets the rack and block of the node it replaces: ./label-and-taint.sh --at 9 h100 n",
        "# Add --dry-run=server to each kubectl call to preview.",
        "set -euo pipefail",
        'usage="usage: $0 [--at POSITION] POOL NODE..."',
        'i=0',
        'if [ "${1:-}" = "--at" ]; then i="${2:?$usage}"; shift 2; fi',
        'case "$i" in',
        '  ""|*[!0-9]*) echo "--at takes a position: 0, 1, 2 ... ($usage)" >&2; exit 2 ;;',
        "esac",
        'i=$((10#$i)); pool="${1:?$usage}"; shift',
        'case "$pool" in',
    ]
    for p in pools:
        t = p.spec.topology
        labels = [f"{k}={v}" for k, v in p.node_labels.items()]
        taints = [f"{x.key}{'=' + x.value if x.value else ''}:{x.effect.value}" for x in p.taints]
        lines += [
            sh("  {pool})", pool=p.name),
            f"    per_rack={p.nodes_per_rack}; racks_per_block={t.racks_per_block}",
            sh("    labels=({labels})", labels=labels),
            sh("    taints=({taints})", taints=taints),
            sh("    rack_label={rack}; block_label={block}", rack=t.rack_label,
               block=t.block_label),
            "    ;;",
        ]
    lines += [
        '  *) echo "unknown pool $pool" >&2; exit 2 ;;',
        "esac",
        'for node in "$@"; do',
        "  rack=$(( i / per_rack )); block=$(( rack / racks_per_block ))",
        '  kubectl label node "$node" --overwrite "${labels[@]}" \\',
        '    "$rack_label=$pool-rack-$rack" "$block_label=$pool-block-$block"',
        '  if [ ${#taints[@]} -gt 0 ]; then',
        '    kubectl taint node "$node" --overwrite "${taints[@]}"',
        "  fi",
        "  i=$(( i + 1 ))",
        "done",
        "",
    ]
    return "\n".join(lines)


def _readme(pools: list[PoolFacts], scripted: list[PoolFacts]) -> str:
    chosen = declarative(pools)
    out = ["# Node labels and taints", ""]
    if chosen:
        out += ["Labelled and tainted by NodeFeatureRules (`cluster/nodefeaturerules.yaml`, "
                "`aiplat-pool-<pool>`) from `pools[].nodeNames`: "
                + ", ".join(f"`{p.name}`" for p in chosen) + ".", "",
                "nfd-master applies them: the GPU Operator's values turn on its "
                "`-enable-taints` (NFD ignores a rule's taints without it) and, for labels "
                "in a `*.kubernetes.io` namespace, `-extra-label-ns` "
                "(`node-feature-discovery.master` in `cluster/gpu-operator/values.yaml`). "
                "An NFD deployed otherwise needs the same flags. A new or replaced node: add "
                "its name to the pool's `nodeNames` in physical order and render again.", ""]
    if scripted:
        out += ["Labelled and tainted by `label-and-taint.sh` (run it with the pool and its "
                "node names in physical order): the floor plan is not in the spec for these "
                "pools, and no feature a node reports says which pool, rack or block it is in. "
                "List a pool's nodes in `pools[].nodeNames`, rack by rack, and a "
                "NodeFeatureRule labels them instead.", ""]
        out += [f"- `{p.name}`: " + (nfd_refuses(p) or "no `nodeNames`") for p in scripted]
        out += [""]
    return "\n".join(out)


def node_files(pools: list[PoolFacts]) -> dict[str, str]:
    """The README, the script (for the pools rules do not cover) and each pool's patch."""
    covered = {p.name for p in declarative(pools)}
    scripted = [p for p in pools if p.name not in covered]
    files = {README: _readme(pools, scripted)}
    if scripted:
        files[SCRIPT] = label_script(scripted)
    return files
