"""Lint rules for what the node-level operators must provide: the component that publishes
an RDMA resource a pod requests, and the MIG Manager label that gives a MIG pool its
devices. Their symptoms and sources: docs/lint-classes.md (operators).

What publishes ``rdma/<name>`` is read from the tree: the RDMA shared device plugin's
ConfigMap (``config.json``, ``configList`` entries with ``resourcePrefix`` (default ``rdma``)
and ``resourceName``) or the NVIDIA Network Operator's NicClusterPolicy
(``spec.rdmaSharedDevicePlugin.config``, the same JSON). A config that does not parse
publishes nothing the rule can see: the finding says so rather than guessing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import yaml

from aiplat.findings import Finding
from aiplat.kube.lint.base import Context, finding, rule
from aiplat.kube.lint.objects import pod_specs
from aiplat.kube.quantity import pod_requests
from aiplat.kube.validate import ref

RDMA_PREFIX = "rdma/"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"


def _rdma_configs(ctx: Context) -> Iterable[tuple[str, object]]:
    """(where, the parsed config or the parse error) of every RDMA plugin config in the tree."""
    for cm in ctx.kind("ConfigMap"):
        text = ((cm.get("data") or {}) or {}).get("config.json")
        if isinstance(text, str) and "configList" in text:
            yield ref(cm), _parse(text)
    for ncp in ctx.kind("NicClusterPolicy"):
        plugin = (ncp.get("spec") or {}).get("rdmaSharedDevicePlugin") or {}
        if isinstance(plugin, dict) and isinstance(plugin.get("config"), str):
            yield ref(ncp), _parse(plugin["config"])


def _parse(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError as e:
        return e


def _published(config: object) -> set[str]:
    if not isinstance(config, dict) or not isinstance(config.get("configList"), list):
        return set()
    return {f"{c.get('resourcePrefix') or 'rdma'}/{c.get('resourceName')}"
            for c in config["configList"] if isinstance(c, dict) and c.get("resourceName")}


@rule("rdma-publisher", "a pod's rdma/ resource is published by an RDMA device plugin the "
      "tree deploys", severities=("error", "warning"))
def rdma_publisher(ctx: Context) -> list[Finding]:
    configs = list(_rdma_configs(ctx))
    published = set().union(*(_published(c) for _w, c in configs)) if configs else set()
    broken = [w for w, c in configs if isinstance(c, ValueError)]
    out = []
    for o in ctx.objects:
        wanted = sorted({r for spec in pod_specs(o) for r in pod_requests(spec)
                         if r.startswith(RDMA_PREFIX)})
        for res in wanted:
            if res in published:
                continue
            if configs and not broken:
                # The tree runs the plugin, under other names: this one exists nowhere.
                out.append(finding(
                    "error", "rdma-publisher", ref(o),
                    f"asks for {res}, but the RDMA device plugin of this tree publishes only "
                    f"{sorted(published)}: no node offers it and the pods stay Pending "
                    "('Insufficient " + res + "')",
                    f"ask for one of {sorted(published)}, or add {res} to the plugin's "
                    "configList"))
            elif broken:
                out.append(finding(
                    "warning", "rdma-publisher", ref(o),
                    f"asks for {res}; the RDMA plugin config in {', '.join(broken)} is not "
                    "JSON, so what it publishes is unknown (the plugin exits on it)",
                    "fix the config.json of the plugin's ConfigMap"))
            else:
                out.append(finding(
                    "warning", "rdma-publisher", ref(o),
                    f"asks for {res}, which nothing in this tree publishes (no RDMA shared "
                    "device plugin ConfigMap, no NicClusterPolicy): unless the Network "
                    "Operator or the plugin runs outside the tree, the pods stay Pending",
                    "deploy the RDMA shared device plugin with this resource (aiplat kube "
                    "render does on RDMA pools: cluster/rdma-device-plugin.yaml)"))
    return out


def _mig_configs(ctx: Context) -> set[str] | None:
    """The config names of MIG Manager's ConfigMap in the tree (``mig-configs``), or None when
    the tree holds none."""
    names: set[str] | None = None
    for cm in ctx.kind("ConfigMap"):
        text = ((cm.get("data") or {}) or {}).get("config.yaml")
        if not isinstance(text, str) or "mig-configs" not in text:
            continue
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and isinstance(data.get("mig-configs"), dict):
            names = (names or set()) | {str(k) for k in data["mig-configs"]}
    return names


def _mig_pools(ctx: Context) -> Iterable[tuple[str, dict[str, str]]]:
    """(pool, labels) of the inventory's pools that offer MIG devices: a device plugin
    ``nvidia.com/mig-*`` resource or DRA devices of type mig."""
    for p in ctx.inventory.pools:
        dra_mig = any(((d.get("attributes") or {}).get("type") or {}).get("string") == "mig"
                      for d in p.devices)
        if dra_mig or any(r.startswith("nvidia.com/mig-") for r in p.capacity):
            yield p.name, p.labels


@rule("mig-config-label", "a MIG pool's nodes name a MIG Manager config the tree defines",
      severities=("error", "warning"))
def mig_config_label(ctx: Context) -> list[Finding]:
    out = []
    configs = _mig_configs(ctx)
    for pool, labels in _mig_pools(ctx):
        chosen = labels.get(MIG_CONFIG_LABEL)
        subject = f"pool/{pool}"
        if chosen is None:
            out.append(finding(
                "warning", "mig-config-label", subject,
                f"offers MIG devices but its nodes carry no {MIG_CONFIG_LABEL} label: the "
                "GPU Operator's MIG Manager applies its default (all-disabled) and the pool "
                "publishes whole GPUs, none of the MIG profiles its quotas count",
                f"label the pool's nodes {MIG_CONFIG_LABEL}=<config> (aiplat kube render "
                "puts it in cluster/nodes/<pool>/node-patch.yaml)"))
        elif configs is not None and chosen not in configs:
            out.append(finding(
                "error", "mig-config-label", subject,
                f"its nodes select MIG config {chosen!r}, which the MIG Manager ConfigMap "
                f"of this tree does not define ({sorted(configs)}): MIG Manager marks the "
                "node failed (nvidia.com/mig.config.state=failed) and changes nothing",
                f"name one of {sorted(configs)}, or add {chosen!r} to mig-configs"))
    return out
