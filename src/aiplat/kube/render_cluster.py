"""``cluster/``: what the cluster needs before any tenant arrives.

- ``nodes/``: per pool a strategic-merge Node patch (labels, taints) and a KubeletConfiguration
  drop-in (Topology/CPU/Memory Manager, reserved CPUs); node-side files, not kustomize
  resources. Pools with ``nodeNames`` are labelled and tainted by NodeFeatureRules, the others
  by one reviewed script (``kube/render_nodes.py`` says why).
- DeviceClasses (``resource.k8s.io/v1``) per GPU model and MIG profile, selecting on the NVIDIA
  DRA driver's attributes (productName, type, profile), its memory capacity
  (``quantity()``/``compareTo``) and the approved driver version (``semver()``).
- PriorityClasses; the GPU operator's Helm values and its sharing/MIG ConfigMaps; the aiplat
  node agent DaemonSet with read-only, least-privilege RBAC.

The kubelet drop-in's settings come from ``kube/render_kubelet.py``.
"""

from __future__ import annotations

from typing import Any

from aiplat import __version__
from aiplat.kube.facts import (
    GPU_MODE_LABEL,
    GPU_RESOURCE,
    MANAGED_BY,
    NVIDIA_DRIVER,
    POOL_LABEL,
    PoolFacts,
    gpu_device_class,
    mig_device_class,
    semver_of,
)
from aiplat.kube.objects import (
    Obj,
    obj,
    pool_tolerations,
    restricted_security_context,
    toleration,
)
from aiplat.kube.render_dcgm import dcgm_exporter
from aiplat.kube.render_kubelet import kubelet_policy
from aiplat.kube.render_nodes import (
    inventory_rules,
    nfd_master_values,
    node_files,
    node_patch,
)
from aiplat.kube.render_rdma import rdma_device_plugin
from aiplat.kube.yamlout import dump_docs
from aiplat.spec.models import Platform, SharingStrategy

SYSTEM_NS = "aiplat-system"
GPU_OPERATOR_NS = "gpu-operator"
AGENT_IMAGE = f"ghcr.io/aiplat/node-agent:{__version__}"
"""What ``aiplat lab cluster image`` tags the image it builds (its default --tag)."""
AGENT_TAINT_KEY = "node.aiplat.io/unhealthy"
"""The taint the agent sets while a check fails (node/checks.py TAINT_KEY)."""

PRIORITY_CLASSES = (
    ("aiplat-serving", 100000, "online inference: scheduled first (Kueue preempts)"),
    ("aiplat-training", 10000, "training and fine-tuning"),
    ("aiplat-batch", 1000, "batch inference and evaluation: first to be preempted"),
)


def _gpu_selector(pool: PoolFacts, kind: str) -> str:
    assert pool.gpu is not None
    a = f"device.attributes['{NVIDIA_DRIVER}']"
    terms = [f"device.driver == '{NVIDIA_DRIVER}'", f"{a}.type == '{kind}'"]
    if pool.gpu.product_name:
        terms.append(f"{a}.productName == '{pool.gpu.product_name}'")
    else:
        terms.append(f"{a}.architecture == '{pool.gpu.architecture_name}'")
    return " && ".join(terms)


def device_classes(pools: list[PoolFacts]) -> list[Obj]:
    """One DeviceClass per GPU model (and MIG profile) of the DRA pools. Memory is compared
    with what the driver publishes (NVML's total, e.g. 46068Mi for an L40S, which is under
    45Gi): never with the marketed size."""
    out: dict[str, Obj] = {}
    for p in pools:
        if p.gpu is None or p.gpu.vendor != "nvidia" or p.gpu_mode != "dra":
            continue
        cap = f"device.capacity['{NVIDIA_DRIVER}'].memory"
        driver = (f" && device.attributes['{NVIDIA_DRIVER}'].driverVersion"
                  f".compareTo(semver('{semver_of(p.driver_version)}')) >= 0"
                  if p.driver_version else "")
        name = gpu_device_class(p.gpu)
        # A MIG pool publishes only MIG devices: a whole-GPU class would match nothing there.
        if name not in out and not p.spec.sharing.mig_layout:
            expr = (f"{_gpu_selector(p, 'gpu')} && "
                    f"{cap}.compareTo(quantity('{p.gpu.reported_memory_mib}Mi')) >= 0{driver}")
            spec: Obj = {"selectors": [{"cel": {"expression": expr}}]}
            if p.spec.sharing.strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS):
                strategy = ("TimeSlicing" if p.spec.sharing.strategy is SharingStrategy.TIME_SLICING
                            else "MPS")
                spec["config"] = [{"opaque": {"driver": NVIDIA_DRIVER, "parameters": {
                    "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
                    "sharing": {"strategy": strategy}}}}]
            out[name] = obj("resource.k8s.io/v1", "DeviceClass", name,
                            annotations={"aiplat.io/gpu-model": p.gpu.name}, spec=spec)
        for profile in p.spec.sharing.mig_layout or []:
            mname = mig_device_class(p.gpu, profile)
            if mname in out:
                continue
            prof = next(x for x in p.gpu.mig_profiles if x.name == profile)
            mig_mib = p.gpu.reported_memory_mib * prof.memory_slices // 8
            expr = (f"{_gpu_selector(p, 'mig')} && "
                    f"device.attributes['{NVIDIA_DRIVER}'].profile == '{profile}' && "
                    f"{cap}.compareTo(quantity('{mig_mib}Mi')) >= 0{driver}")
            out[mname] = obj("resource.k8s.io/v1", "DeviceClass", mname,
                             annotations={"aiplat.io/gpu-model": p.gpu.name,
                                          "aiplat.io/mig-profile": profile},
                             spec={"selectors": [{"cel": {"expression": expr}}]})
    return list(out.values())


def priority_classes() -> list[Obj]:
    """Pod priorities for the scheduler's queue order. preemptionPolicy Never: Kueue decides
    preemption (by WorkloadPriorityClass, within quota); the default scheduler preempting
    pods Kueue admitted would bypass it."""
    return [obj("scheduling.k8s.io/v1", "PriorityClass", name, value=value,
                preemptionPolicy="Never", globalDefault=False, description=desc)
            for name, value, desc in PRIORITY_CLASSES]


KUEUE_PODS = "kueue.x-k8s.io/podset"
"""The label Kueue puts on every pod of a workload it admitted (its PodSet's name)."""
SERVING_LABEL = "aiplat.io/serving"


def upgrade_policy(platform: Platform, pools: list[PoolFacts]) -> dict[str, Any]:
    """The GPU Operator upgrade controller's policy (``driver.upgradePolicy``), on by default
    in the operator: without one it would take 25 % of the GPU nodes at once.

    - One node at a time, never more than the smallest GPU pool's spare nodes (at least one):
      the pool keeps its planned capacity while a node is out.
    - Batch and training pods that Kueue admitted get their checkpoint interval to finish or
      reach a checkpoint (``waitForCompletion``); serving pods are not waited for (they never
      complete) and move under their PodDisruptionBudget.
    - Every GPU pod of aiplat's tree has an emptyDir (/dev/shm): ``deleteEmptyDir: false``
      would leave the controller stuck at pod-deletion-required on every node.
    """
    gpu_pools = [p for p in pools if p.gpu is not None]
    spare = min((p.resolved.spares.spare_nodes for p in gpu_pools), default=1)
    checkpoint = max((w.checkpoint.interval_minutes for w in platform.workloads
                      if w.kind.trains), default=60.0)
    return {
        "autoUpgrade": True,
        "maxParallelUpgrades": 1,
        "maxUnavailable": max(1, spare),
        "waitForCompletion": {"timeoutSeconds": round(checkpoint * 60),
                              "podSelector": f"{KUEUE_PODS},!{SERVING_LABEL}"},
        "gpuPodDeletion": {"force": False, "timeoutSeconds": 600, "deleteEmptyDir": True},
        "drain": {"enable": False, "force": False, "timeoutSeconds": 600,
                  "deleteEmptyDir": True},
    }


def mig_configs(pools: list[PoolFacts]) -> dict[str, Any]:
    """MIG Manager's ``mig-configs``: ``all-disabled`` (its default for every node) and one
    per MIG pool, named as the pool, which its nodes select with ``nvidia.com/mig.config``
    (``PoolFacts.node_labels``)."""
    cfg: dict[str, Any] = {"all-disabled": [{"devices": "all", "mig-enabled": False}]}
    for p in pools:
        if p.spec.sharing.strategy is SharingStrategy.MIG:
            counts: dict[str, int] = {}
            for prof in p.spec.sharing.mig_layout or []:
                counts[prof] = counts.get(prof, 0) + 1
            cfg[p.name] = [{"devices": "all", "mig-enabled": True, "mig-devices": counts}]
    return cfg


def _sharing_configs(pools: list[PoolFacts]) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in pools:
        s = p.spec.sharing
        if s.strategy in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS) \
                and p.gpu_mode == "device-plugin":
            key = "timeSlicing" if s.strategy is SharingStrategy.TIME_SLICING else "mps"
            out[p.name] = dump_docs([{"version": "v1", "sharing": {key: {
                "renameByDefault": False, "failRequestsGreaterThanOne": True,
                "resources": [{"name": GPU_RESOURCE, "replicas": s.replicas}]}}}])
    return out


def gpu_operator(platform: Platform, pools: list[PoolFacts]) -> tuple[dict[str, Any], list[Obj]]:
    """Helm values for the NVIDIA GPU operator plus the ConfigMaps they reference.

    The driver and the toolkit are the operator's only where ``kubernetes.components`` says
    so (otherwise node prepare installed them on the host and the operator uses them as they
    are); the upgrade policy comes with an operator-owned driver. The device plugin runs
    where some pool uses it; DRA pools' nodes carry ``nvidia.com/gpu.deploy.device-plugin=
    false`` (the operator's per-node switch), so the DRA driver's kubelet plugin never runs
    beside it."""
    owners = platform.kubernetes.components
    plugin = any(p.gpu is not None and p.gpu_mode == "device-plugin" for p in pools)
    dcgm_values, dcgm_cms = dcgm_exporter(platform, pools)
    any_mig = any(p.spec.sharing.strategy is SharingStrategy.MIG for p in pools)
    # The chart's default autoUpgrade: true would reach the ClusterPolicy even with the driver
    # off, and the controller would mark every GPU node for upgrades of a driver it does not
    # own (applyDriverAutoUpgradeAnnotation, controllers/state_manager.go).
    driver: dict[str, Any] = {"enabled": owners.driver == "operator",
                              "upgradePolicy": {"autoUpgrade": False}}
    if owners.driver == "operator":
        version = next((p.driver_version for p in pools if p.driver_version), None)
        driver.update({**({"version": version} if version else {}),
                       "upgradePolicy": upgrade_policy(platform, pools)})
    values: dict[str, Any] = {
        "driver": driver,
        "toolkit": {"enabled": owners.toolkit == "operator"},
        "cdi": {"enabled": True},
        "devicePlugin": {"enabled": plugin},
        "mig": {"strategy": "mixed" if any_mig else "none"},
        "migManager": {"enabled": any_mig},
        "dcgmExporter": dcgm_values,
        "nfd": {"enabled": True},
        "gfd": {"enabled": True},
    }
    master = nfd_master_values(pools)
    if master:  # the pools' NodeFeatureRules set taints and zone labels (render_nodes)
        values["node-feature-discovery"] = {"master": master}
    cms: list[Obj] = list(dcgm_cms)
    sharing_cfg = _sharing_configs(pools)
    if sharing_cfg:
        values["devicePlugin"]["config"] = {"name": "aiplat-device-plugin-config", "default": ""}
        cms.append(obj("v1", "ConfigMap", "aiplat-device-plugin-config", GPU_OPERATOR_NS,
                       data=sharing_cfg))
    if any_mig:
        values["migManager"]["config"] = {"name": "aiplat-mig-config", "default": "all-disabled"}
        cms.append(obj("v1", "ConfigMap", "aiplat-mig-config", GPU_OPERATOR_NS,
                       data={"config.yaml": dump_docs([{"version": "v1",
                                                        "mig-configs": mig_configs(pools)}])}))
    return values, cms


def dra_driver(platform: Platform, pools: list[PoolFacts]) -> dict[str, Any] | None:
    """Helm values for the NVIDIA DRA driver (chart nvidia-dra-driver-gpu) when a pool uses
    DRA: its kubelet plugin only on the DRA pools' nodes, the driver's root (the host's /
    where node prepare installed it, /run/nvidia/driver where the operator's driver container
    did), and ``gpuResourcesEnabledOverride`` — the chart refuses to install while
    the device plugin may run, and it does run, on the other pools' nodes only."""
    dra = [p for p in pools if p.gpu is not None and p.gpu_mode == "dra"]
    if not dra:
        return None
    tolerations = pool_tolerations(dra)
    return {
        "nvidiaDriverRoot": ("/run/nvidia/driver"
                             if platform.kubernetes.components.driver == "operator" else "/"),
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        "kubeletPlugin": {"nodeSelector": {GPU_MODE_LABEL: "dra"}, "tolerations": tolerations},
    }


# The agent reads the host's sys, proc and dev under one root (``aiplat node agent --root``).
AGENT_HOST_PATHS = ("sys", "proc", "dev")


NVIDIA_RUNTIME_CLASS = "nvidia"
"""The RuntimeClass whose handler is the NVIDIA Container Runtime: ``nvidia-ctk runtime
configure`` (node prepare) names the handler so, and the GPU Operator's toolkit creates the
RuntimeClass of that name when it owns the toolkit."""


def _agent_daemonset(name: str, pools: list[PoolFacts], *, gpu: bool) -> Obj:
    """The agent on ``pools``' nodes (every pool node when none are named).

    On NVIDIA pools it sees the GPUs as the DCGM exporter does: the NVIDIA runtime gives the
    container every GPU's device nodes, NVML and nvidia-smi (``NVIDIA_VISIBLE_DEVICES=all``,
    the ``utility`` capability only, no GPU requested so none is taken from the pods), and
    ``--live-gpu`` reads them there while /sys and /proc are the host's under /host. It runs
    as root with every capability dropped: the device nodes and kern.log are root's
    (node prepare may make the GPUs root:<group> 0660, a group whose number only the node
    knows), and it needs no capability to read them. XIDs come from the host's kern.log
    (/dev/kmsg would need a device rule only a privileged container gets)."""
    labels = {"app.kubernetes.io/name": name}  # its own selector: the two never overlap
    paths = (*AGENT_HOST_PATHS, *(("var/log",) if gpu else ()))
    security = {**restricted_security_context(), "readOnlyRootFilesystem": True,
                "runAsUser": 0 if gpu else 65534}
    if gpu:
        security["runAsNonRoot"] = False
    container: Obj = {
        "name": "agent",
        "image": AGENT_IMAGE,
        "args": ["--node-name=$(NODE_NAME)", "--root=/host", *(["--live-gpu"] if gpu else [])],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                *([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                   {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"}] if gpu else [])],
        "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                      "limits": {"memory": "128Mi"}},
        "securityContext": security,
        "volumeMounts": [{"name": f"host-{d.replace('/', '-')}", "mountPath": f"/host/{d}",
                          "readOnly": True} for d in paths],
    }
    match = ({"key": POOL_LABEL, "operator": "In", "values": [p.name for p in pools]}
             if pools else {"key": POOL_LABEL, "operator": "Exists"})
    pod: Obj = {
        "serviceAccountName": "aiplat-node-agent",
        "priorityClassName": "system-node-critical",
        **({"runtimeClassName": NVIDIA_RUNTIME_CLASS} if gpu else {}),
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [match]}]}}},
        # It must also run on the nodes its own checks tainted, or nothing lifts the taint.
        "tolerations": pool_tolerations(
            pools, [toleration(AGENT_TAINT_KEY, "", "NoSchedule")]),
        "containers": [container],
        "volumes": [{"name": f"host-{d.replace('/', '-')}",
                     "hostPath": {"path": f"/{d}", "type": "Directory"}} for d in paths],
    }
    return obj("apps/v1", "DaemonSet", name, SYSTEM_NS, labels=labels, spec={
        "selector": {"matchLabels": labels},
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
        "template": {"metadata": {"labels": labels}, "spec": pod},
    })


def node_agent(pools: list[PoolFacts], *, host_toolkit: bool = True) -> list[Obj]:
    """The aiplat node agent: reads the host's /sys, /proc and /dev read-only under /host,
    patches its Node's labels, taint and condition. One DaemonSet for the NVIDIA pools (with
    the GPUs, see ``_agent_daemonset``), one for the other pools' nodes; the RuntimeClass it
    names when the host owns the toolkit (the operator creates it otherwise)."""
    nvidia = [p for p in pools if p.gpu is not None and p.gpu.vendor == "nvidia"]
    others = [p for p in pools if p not in nvidia]
    objs = [
        # The agent reads the host through read-only hostPath volumes, which only the
        # 'privileged' Pod Security level admits; nothing else runs in this namespace.
        obj("v1", "Namespace", SYSTEM_NS, labels={
            "pod-security.kubernetes.io/enforce": "privileged",
            "pod-security.kubernetes.io/warn": "baseline"}),
        obj("v1", "ServiceAccount", "aiplat-node-agent", SYSTEM_NS,
            automountServiceAccountToken=True),
        obj("rbac.authorization.k8s.io/v1", "ClusterRole", "aiplat-node-agent",
            rules=[{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
                   # Its labels, taint (nodes) and condition (nodes/status).
                   {"apiGroups": [""], "resources": ["nodes", "nodes/status"],
                    "verbs": ["patch"]},
                   {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
                    "verbs": ["get", "list", "watch"]},
                   {"apiGroups": ["events.k8s.io"], "resources": ["events"],
                    "verbs": ["create", "patch"]}]),
        obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "aiplat-node-agent",
            roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "aiplat-node-agent"},
            subjects=[{"kind": "ServiceAccount", "name": "aiplat-node-agent",
                       "namespace": SYSTEM_NS}]),
    ]
    if nvidia:
        if host_toolkit:
            objs.append(obj("node.k8s.io/v1", "RuntimeClass", NVIDIA_RUNTIME_CLASS,
                            handler=NVIDIA_RUNTIME_CLASS))
        objs.append(_agent_daemonset("aiplat-node-agent", nvidia, gpu=True))
    if others or not nvidia:
        objs.append(_agent_daemonset("aiplat-node-agent-host" if nvidia else "aiplat-node-agent",
                                     others, gpu=False))
    return objs


# PCI vendor ids by the catalog's GPU vendor, and the name the node agent labels them with
# (node/pciaddr.py VENDORS, lower-cased).
PCI_VENDORS = {"nvidia": "10de", "amd": "1002", "intel": "8086"}
# The classes node/pciaddr.py counts as GPUs: VGA, 3D controller (SXM), processing accelerator.
# NFD keeps the first four hex digits of sysfs 'class' (source/pci/utils.go).
GPU_PCI_CLASSES = ["0300", "0302", "1200"]


def node_feature_rules(pools: list[PoolFacts]) -> list[Obj]:
    """NFD NodeFeatureRules that put on every node, from the PCI devices and NUMA nodes NFD's
    worker sees, the same hardware labels the node agent sets (same keys, same values), so a
    node carries them from the moment it joins, before the agent's first run. What only the
    agent can judge (GPU-NIC paths, NUMA alignment, degraded links, health) stays its own;
    pool, rack and zone are inventory facts (``render_nodes``: rules from ``nodeNames`` or
    the script)."""
    vendors = sorted({p.gpu.vendor for p in pools if p.gpu is not None
                      and p.gpu.vendor in PCI_VENDORS})
    if not vendors:
        return []
    rules: list[Obj] = [{
        "name": f"aiplat {vendor} GPUs",
        "labels": {"node.aiplat.io/gpu-vendor": vendor},
        "labelsTemplate": "node.aiplat.io/gpu-count={{ .pci.device | len }}",
        "matchFeatures": [{"feature": "pci.device", "matchExpressions": {
            "vendor": {"op": "In", "value": [PCI_VENDORS[vendor]]},
            "class": {"op": "In", "value": GPU_PCI_CLASSES}}}],
    } for vendor in vendors]
    rules.append({
        "name": "aiplat NUMA nodes",
        "labelsTemplate": "{{ range .memory.numa }}{{ if eq .Name \"node_count\" }}"
                          "node.aiplat.io/numa-nodes={{ .Value }}{{ end }}{{ end }}",
        "matchFeatures": [{"feature": "memory.numa",
                           "matchExpressions": {"node_count": {"op": "Exists"}}}],
    })
    return [obj("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule", "aiplat-node-hardware",
                labels=dict(MANAGED_BY), spec={"rules": rules})]


def render_cluster(platform: Platform, pools: list[PoolFacts]) -> tuple[dict[str, list[Obj]],
                                                                          dict[str, Any]]:
    """(manifests by file, other files by path) under ``cluster/``."""
    values, cms = gpu_operator(platform, pools)
    manifests: dict[str, list[Obj]] = {
        "cluster/priorityclasses.yaml": priority_classes(),
        "cluster/node-agent.yaml": node_agent(
            pools, host_toolkit=platform.kubernetes.components.toolkit == "host"),
    }
    dcs = device_classes(pools)
    if dcs:
        manifests["cluster/deviceclasses.yaml"] = dcs
    nfr = node_feature_rules(pools) + inventory_rules(pools)
    if nfr:
        manifests["cluster/nodefeaturerules.yaml"] = nfr
    rdma = rdma_device_plugin(pools)
    if rdma:
        manifests["cluster/rdma-device-plugin.yaml"] = rdma
    if cms:
        # The operator's own namespace, so the tree applies before the operator's Helm
        # install; it runs privileged pods (driver, toolkit, device plugin), as NVIDIA
        # documents for the namespace's Pod Security level.
        ns = obj("v1", "Namespace", GPU_OPERATOR_NS,
                 labels={"pod-security.kubernetes.io/enforce": "privileged"})
        manifests["cluster/gpu-operator-config.yaml"] = [ns, *cms]
    dra_values = dra_driver(platform, pools)
    files: dict[str, Any] = {
        "cluster/gpu-operator/values.yaml": dump_docs([values]),
        **({"cluster/dra-driver/values.yaml": (
            "# helm install nvidia-dra-driver-gpu nvidia/nvidia-dra-driver-gpu "
            "-n nvidia-dra-driver-gpu --create-namespace -f values.yaml\n"
            + dump_docs([dra_values]))} if dra_values else {}),
        **node_files(pools),
    }
    for p in pools:
        files[f"cluster/nodes/{p.name}/node-patch.yaml"] = dump_docs([node_patch(p)])
        files[f"cluster/nodes/{p.name}/kubelet-config.yaml"] = dump_docs([kubelet_policy(p)])
        if p.rdma:
            files[f"cluster/nodes/{p.name}/runtime-memlock.conf"] = RUNTIME_MEMLOCK
    return manifests, files


# Pods in namespaces whose Pod Security level refuses IPC_LOCK still register RDMA buffers:
# containers inherit RLIMIT_MEMLOCK from the runtime's service (systemd default 8 MiB).
RUNTIME_MEMLOCK = """\
# systemd drop-in for the container runtime on RDMA nodes: containers inherit its
# RLIMIT_MEMLOCK, and NCCL/verbs pin every buffer they send from. Without it, pods that
# cannot have IPC_LOCK (Pod Security baseline/restricted) fall back to TCP or fail.
# Install as /etc/systemd/system/containerd.service.d/50-memlock.conf
#         (or /etc/systemd/system/crio.service.d/50-memlock.conf), then
#   systemctl daemon-reload && systemctl restart containerd   # or crio
# Check: cat /proc/$(pgrep -o containerd)/limits | grep 'locked memory'  -> unlimited
[Service]
LimitMEMLOCK=infinity
"""
