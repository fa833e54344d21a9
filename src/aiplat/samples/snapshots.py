"""The why-pending snapshot scenarios: realistic ``kubectl get -o json`` lists with the status
fields Kueue, the scheduler and the DRA driver write (``aiplat samples get snapshot-<name>``).

``python tests/data/snapshots/build.py`` regenerates the test copies from this module;
``tests/unit/test_kube_pending.py`` checks they equal what this builds, then explains each
scenario. Each folder has ``expected.json``: the object to ask about and the
reason code and words the answer must contain.

Base cluster: pool h100 (4 nodes × 8 H100, two racks of two, tainted nvidia.com/gpu) and pool
l40s (2 nodes × 4 L40S); ClusterQueues research and serving in cohort ``example``; DRA
ResourceSlices for the h100 nodes.
"""

from __future__ import annotations

import copy
import json
from typing import Any

Obj = dict[str, Any]
TS = "2026-11-29T08:00:00Z"
H100_EXPR = ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
             "'gpu' && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"
             " && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('76Gi')) >= 0")


def _list(items: list[Obj], api: str = "v1") -> Obj:
    return {"apiVersion": api, "kind": "List", "metadata": {"resourceVersion": ""},
            "items": items}


def _uid(name: str) -> str:
    h = sum(ord(c) * (i + 1) for i, c in enumerate(name))
    return f"{h:08x}-0000-4000-8000-{h * 7919 % 10**12:012d}"


def node(name: str, pool: str, rack: str, *, gpus: int, cpu: str, mem: str,
         tainted: bool = True) -> Obj:
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
              "aiplat.io/pool": pool, "topology.aiplat.io/block": f"{pool}-block-0",
              "topology.aiplat.io/rack": rack, "nvidia.com/gpu.count": str(gpus)}
    cap = {"cpu": cpu, "memory": mem, "nvidia.com/gpu": str(gpus), "pods": "110",
           "ephemeral-storage": "3500Gi"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": _uid(name), "labels": labels,
                     "creationTimestamp": TS},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}] if tainted
                 else []},
        "status": {"capacity": cap, "allocatable": cap,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "lastTransitionTime": TS}],
                   "nodeInfo": {"kubeletVersion": "v1.34.2", "containerRuntimeVersion":
                                "containerd://2.1.4", "kernelVersion": "6.8.0-60-generic"}},
    }


def slice_for(node_name: str, gpus: int) -> Obj:
    devices = [{"name": f"gpu-{i}", "attributes": {
        "type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100 80GB HBM3"},
        "architecture": {"string": "Hopper"}, "brand": {"string": "Nvidia"},
        "uuid": {"string": f"GPU-{_uid(node_name + str(i))}"},
        "driverVersion": {"version": "580.95.5"}, "cudaComputeCapability": {"version": "9.0.0"},
        "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{i // 2:02x}"},
        "resource.kubernetes.io/pciBusID": {"string": f"0000:{0x18 + i:02x}:00.0"}},
        "capacity": {"memory": {"value": "81559Mi"}}} for i in range(gpus)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-gpu.nvidia.com-x7k2p", "uid": _uid(node_name)},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def flavor(name: str, tolerate: bool = True) -> Obj:
    spec: Obj = {"nodeLabels": {"aiplat.io/pool": name}, "topologyName": name}
    if tolerate:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                                "effect": "NoSchedule"}]
    else:
        spec["nodeTaints"] = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": name, "uid": _uid(name)}, "spec": spec}


def _res(name: str, nominal: str, borrow: str | None = None, lend: str | None = None) -> Obj:
    r: Obj = {"name": name, "nominalQuota": nominal}
    if borrow is not None:
        r["borrowingLimit"] = borrow
    if lend is not None:
        r["lendingLimit"] = lend
    return r


def cluster_queue(name: str, gpu_resource: str, h100: tuple[str, str | None, str | None],
                  active: bool = True, within: str = "LowerPriority") -> Obj:
    nominal, borrow, lend = h100
    cond = ({"type": "Active", "status": "True", "reason": "Ready",
             "message": "Can admit new workloads", "lastTransitionTime": TS} if active else
            {"type": "Active", "status": "False", "reason": "AdmissionCheckNotFound",
             "message": "Can't admit new workloads: references missing AdmissionCheck(s): "
                        "provisioning.", "lastTransitionTime": TS})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": name, "uid": _uid(name), "labels": {"aiplat.io/tenant": name}},
        "spec": {
            "cohortName": "example",
            "namespaceSelector": {"matchLabels": {"aiplat.io/tenant": name}},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [{"coveredResources": ["cpu", "memory", gpu_resource],
                                "flavors": [{"name": "h100", "resources": [
                                    _res("cpu", "1000"), _res("memory", "20000Gi"),
                                    _res(gpu_resource, nominal, borrow, lend)]}]}],
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": within,
                           "borrowWithinCohort": {"policy": "Never"}},
        },
        "status": {"conditions": [cond], "pendingWorkloads": 1, "reservingWorkloads": 0,
                   "admittedWorkloads": 0},
    }


def local_queue(ns: str, cq: str) -> Obj:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
            "metadata": {"name": ns, "namespace": ns, "uid": _uid("lq" + ns)},
            "spec": {"clusterQueue": cq},
            "status": {"conditions": [{"type": "Active", "status": "True", "reason": "Ready",
                                       "message": "Can submit new workloads",
                                       "lastTransitionTime": TS}]}}


def pod_spec(gpus: int, gpu_resource: str = "nvidia.com/gpu", tolerate: bool = True,
             claim_template: str | None = None) -> Obj:
    resources: Obj = {"requests": {"cpu": "16", "memory": "256Gi"}}
    spec: Obj = {"restartPolicy": "Never", "containers": [{
        "name": "main", "image": "nvcr.io/nvidia/pytorch:25.08-py3", "resources": resources}]}
    if claim_template:
        spec["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": claim_template}]
        resources["claims"] = [{"name": "gpus"}]
    else:
        resources["requests"][gpu_resource] = str(gpus)
        resources["limits"] = {gpu_resource: str(gpus)}
    spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "aiplat.io/pool", "operator": "In", "values": ["h100"]}]}]}}}
    if tolerate:
        spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists",
                                "effect": "NoSchedule"}]
    return spec


def workload(job: str, ns: str, queue: str, *, priority: int, count: int, gpus: int,  # noqa: PLR0913 (one option per status field a scenario sets)
             admitted: bool = False, gpu_resource: str = "nvidia.com/gpu",
             message: str = "", tolerate: bool = True, rack_required: bool = False,
             evicted: bool = False, claim_template: str | None = None,
             reason: str = "Pending") -> Obj:
    name = f"job-{job}-{_uid(job)[-5:]}"
    ps: Obj = {"name": "main", "count": count, "template": {
        "metadata": {"labels": {"batch.kubernetes.io/job-name": job}},
        "spec": pod_spec(gpus, gpu_resource, tolerate, claim_template)}}
    if rack_required:
        ps["topologyRequest"] = {"required": "topology.aiplat.io/rack",
                                 "podIndexLabel": "batch.kubernetes.io/job-completion-index"}
        ps["template"]["metadata"]["annotations"] = {
            "kueue.x-k8s.io/podset-required-topology": "topology.aiplat.io/rack"}
    status: Obj = {"conditions": []}
    if admitted:
        usage = {"cpu": str(16 * count), "memory": f"{256 * count}Gi"}
        flavors = {"cpu": "h100", "memory": "h100"}
        if not claim_template:
            usage[gpu_resource] = str(gpus * count)
            flavors[gpu_resource] = "h100"
        status["admission"] = {"clusterQueue": queue, "podSetAssignments": [
            {"name": "main", "flavors": flavors, "resourceUsage": usage, "count": count}]}
        status["conditions"] += [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
             "message": f"Quota reserved in ClusterQueue {queue}", "lastTransitionTime": TS},
            {"type": "Admitted", "status": "True", "reason": "Admitted",
             "message": "The workload is admitted", "lastTransitionTime": TS}]
        if evicted:
            status["conditions"] += [
                {"type": "Evicted", "status": "True", "reason": "Preempted",
                 "message": "Preempted to accommodate a workload (UID: 5d1e) due to "
                            "prioritization in the ClusterQueue", "lastTransitionTime": TS},
                {"type": "Preempted", "status": "True", "reason": "InClusterQueue",
                 "message": "Preempted to accommodate a higher priority workload",
                 "lastTransitionTime": TS}]
    else:
        status["conditions"].append(
            {"type": "QuotaReserved", "status": "False", "reason": reason,
             "message": message or "couldn't assign flavors to pod set main",
             "lastTransitionTime": TS})
        status["resourceRequests"] = [{"name": "main", "resources": {
            "cpu": "16", "memory": "256Gi", **({gpu_resource: str(gpus)}
                                               if not claim_template else {})}}]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": name, "namespace": ns, "uid": _uid(name), "creationTimestamp": TS,
                     "labels": {"kueue.x-k8s.io/job-uid": _uid(job)},
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                          "uid": _uid(job), "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": {"queueName": queue, "priority": priority, "active": True,
                 "priorityClassRef": {"group": "kueue.x-k8s.io",
                                      "kind": "WorkloadPriorityClass",
                                      "name": "serving" if priority >= 1000 else "training"},
                 "podSets": [ps]},
        "status": status,
    }


def pod(name: str, ns: str, *, job: str, wl: str, spec: Obj, node_name: str | None,
        claim: str | None = None) -> Obj:
    spec = copy.deepcopy(spec)
    status: Obj = {"phase": "Running" if node_name else "Pending", "qosClass": "Burstable"}
    if node_name:
        spec["nodeName"] = node_name
        status["conditions"] = [{"type": "PodScheduled", "status": "True",
                                 "lastTransitionTime": TS}]
    else:
        status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                 "reason": "Unschedulable", "lastTransitionTime": TS,
                                 "message": "0/6 nodes are available: "
                                            "cannot allocate all claims."}]
    if claim:
        status["resourceClaimStatuses"] = [{"name": "gpus", "resourceClaimName": claim}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": _uid(name),
                         "labels": {"batch.kubernetes.io/job-name": job,
                                    "kueue.x-k8s.io/workload": wl, "job-name": job},
                         "creationTimestamp": TS},
            "spec": spec, "status": status}


def claim(name: str, ns: str, count: int, devices: list[tuple[str, str]]) -> Obj:
    c: Obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": name, "namespace": ns, "uid": _uid(name)},
              "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                  "deviceClassName": "gpu-h100-sxm-80gb", "allocationMode": "ExactCount",
                  "count": count}}]}},
              "status": {}}
    if devices:
        c["status"] = {"allocation": {"devices": {"results": [
            {"request": "gpus", "driver": "gpu.nvidia.com", "pool": n, "device": d}
            for n, d in devices]}, "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [devices[0][0]]}]}]}},
            "reservedFor": [{"resource": "pods", "name": f"holder-{name}",
                             "uid": _uid(name)}]}
    return c


def base() -> dict[str, list[Obj]]:
    nodes = [node(f"h100-{i}", "h100", f"h100-rack-{i // 2}", gpus=8, cpu="108", mem="2000Gi")
             for i in range(4)]
    nodes += [node(f"l40s-{i}", "l40s", "l40s-rack-0", gpus=4, cpu="60", mem="500Gi")
              for i in range(2)]
    return {
        "nodes": nodes,
        # their labels: each ClusterQueue's namespaceSelector picks its tenant's namespace
        "namespaces": [{"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": t, "labels": {"kubernetes.io/metadata.name": t,
                                                           "aiplat.io/tenant": t}}}
                       for t in ("research", "serving")],
        "pods": [],
        "workloads": [],
        "clusterqueues": [cluster_queue("research", "nvidia.com/gpu", ("16", "8", None)),
                          cluster_queue("serving", "nvidia.com/gpu", ("16", None, None))],
        "localqueues": [local_queue("research", "research"), local_queue("serving", "serving")],
        "resourceflavors": [flavor("h100"), flavor("l40s")],
        "topologies": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
                        "metadata": {"name": p}, "spec": {"levels": [
                            {"nodeLabel": "topology.aiplat.io/block"},
                            {"nodeLabel": "topology.aiplat.io/rack"},
                            {"nodeLabel": "kubernetes.io/hostname"}]}} for p in ("h100", "l40s")],
        "resourceslices": [],
        "resourceclaims": [],
        "deviceclasses": [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                           "metadata": {"name": "gpu-h100-sxm-80gb"},
                           "spec": {"selectors": [{"cel": {"expression": H100_EXPR}}]}}],
    }


def _running(s: dict[str, list[Obj]], job: str, ns: str, queue: str, *, priority: int,
             count: int, gpus: int, first_node: int, evicted: bool = False) -> None:
    wl = workload(job, ns, queue, priority=priority, count=count, gpus=gpus, admitted=True,
                  evicted=evicted)
    s["workloads"].append(wl)
    for i in range(count):
        s["pods"].append(pod(f"{job}-{i}-abcde", ns, job=job, wl=wl["metadata"]["name"],
                             spec=wl["spec"]["podSets"][0]["template"]["spec"],
                             node_name=f"h100-{(first_node + i) % 4}"))


def scenarios() -> dict[str, tuple[dict[str, list[Obj]], Obj]]:
    out: dict[str, tuple[dict[str, list[Obj]], Obj]] = {}

    s = base()  # research uses its 16, serving uses its 16: nothing to borrow
    _running(s, "pretrain-a", "research", "research", priority=500, count=1, gpus=8, first_node=0)
    _running(s, "pretrain-b", "research", "research", priority=500, count=1, gpus=8, first_node=1)
    _running(s, "chat", "serving", "serving", priority=500, count=2, gpus=8, first_node=2)
    s["workloads"].append(workload("finetune", "research", "research", priority=500, count=1,
                                   gpus=8, message=(
        "couldn't assign flavors to pod set main: insufficient unused quota for "
        "nvidia.com/gpu in flavor h100, 8 more needed")))
    out["quota-exhausted"] = (s, {"name": "finetune", "namespace": "research",
                                  "code": "QuotaExhausted", "contains": "nvidia.com/gpu"})

    s = base()  # research already borrows 8 (its limit); serving is idle
    _running(s, "pretrain-a", "research", "research", priority=500, count=3, gpus=8, first_node=0)
    s["workloads"].append(workload("eval", "research", "research", priority=500, count=1, gpus=8,
                                   message="couldn't assign flavors to pod set main: "
                                   "insufficient unused quota for nvidia.com/gpu in flavor "
                                   "h100, 8 more needed"))
    out["cohort-borrowing-limit"] = (s, {"name": "eval", "namespace": "research",
                                         "code": "BorrowingLimit", "contains": "borrowingLimit"})

    s = base()  # the flavor declares the pool's taint; the job does not tolerate it
    s["resourceflavors"] = [flavor("h100", tolerate=False), flavor("l40s")]
    s["workloads"].append(workload("notebook", "research", "research", priority=500, count=1,
                                   gpus=1,
                                   tolerate=False, message=(
                                       "couldn't assign flavors to pod set main: untolerated "
                                       "taint {nvidia.com/gpu NoSchedule} in flavor h100")))
    out["flavor-taint-mismatch"] = (s, {"name": "notebook", "namespace": "research",
                                        "code": "FlavorMismatch", "contains": "untolerated taint"})

    s = base()  # DRA: every node has at most one free H100; the claim wants 2 on one node
    s["resourceslices"] = [slice_for(f"h100-{i}", 8) for i in range(4)]
    for i in range(4):
        s["resourceclaims"].append(claim(f"busy-{i}", "serving", 7,
                                         [(f"h100-{i}", f"gpu-{d}") for d in range(7)]))
    wl = workload("tp-pair", "research", "research", priority=500, count=1, gpus=2, admitted=True,
                  claim_template="h100-gpu-pair")
    s["workloads"].append(wl)
    s["resourceclaims"].append(claim("tp-pair-0-gpus-x2b9q", "research", 2, []))
    s["pods"].append(pod("tp-pair-0-qwert", "research", job="tp-pair",
                         wl=wl["metadata"]["name"],
                         spec=wl["spec"]["podSets"][0]["template"]["spec"], node_name=None,
                         claim="tp-pair-0-gpus-x2b9q"))
    out["dra-no-free-device"] = (s, {"name": "tp-pair", "namespace": "research",
                                     "code": "DevicesSpread",
                                     "contains": "at most 1 free on one node (need 2"})

    s = copy.deepcopy(s)  # the same claim when every H100 is held: allocated, not spread
    s["resourceclaims"] = [c for c in s["resourceclaims"] if not c["metadata"]["name"]
                           .startswith("busy-")]
    for i in range(4):
        s["resourceclaims"].append(claim(f"busy-{i}", "serving", 8,
                                         [(f"h100-{i}", f"gpu-{d}") for d in range(8)]))
    out["dra-all-allocated"] = (s, {"name": "tp-pair", "namespace": "research",
                                    "code": "DevicesAllocated",
                                    "contains": "all 32 matching device(s) are allocated"})

    s = copy.deepcopy(s)  # the nodes publish H200s: the class's H100 selector matches none
    s["resourceclaims"] = [c for c in s["resourceclaims"] if not c["metadata"]["name"]
                           .startswith("busy-")]
    for sl in s["resourceslices"]:
        for d in sl["spec"]["devices"]:
            d["attributes"]["productName"] = {"string": "NVIDIA H200"}
    out["dra-no-device-matches"] = (s, {"name": "tp-pair", "namespace": "research",
                                        "code": "NoDeviceMatches",
                                        "contains": "no published device matches selector"})

    s = base()  # 3 whole-node pods must share a rack; racks have 2 nodes
    s["workloads"].append(workload("pretrain-big", "research", "research", priority=500,
                                   count=3, gpus=8, rack_required=True, message=(
                                       "couldn't assign flavors to pod set main: topology "
                                       "\"h100\" allows to fit only 2 out of 3 pod(s)")))
    out["tas-rack-too-small"] = (s, {"name": "pretrain-big", "namespace": "research",
                                     "code": "TopologyDomainTooSmall",
                                     "contains": "topology.aiplat.io/rack"})

    s = base()
    s["clusterqueues"][0] = cluster_queue("research", "nvidia.com/gpu", ("16", "8", None),
                                          active=False)
    # it names an admission check nobody created: Kueue keeps it inactive
    s["clusterqueues"][0]["spec"]["admissionChecksStrategy"] = {
        "admissionChecks": [{"name": "provisioning"}]}
    s["admissionchecks"] = []
    s["workloads"].append(workload("sweep", "research", "research", priority=500, count=1, gpus=1,
                                   reason="Inadmissible",
                                   message="ClusterQueue research is inactive"))
    out["inactive-clusterqueue"] = (s, {"name": "sweep", "namespace": "research",
                                        "code": "ClusterQueueInactive",
                                        "contains": "AdmissionCheck provisioning does not exist"})

    s = base()  # the queue names a flavor nobody created: Kueue keeps it inactive
    s["resourceflavors"] = [flavor("l40s")]
    s["workloads"].append(workload("sweep", "research", "research", priority=500, count=1, gpus=1,
                                   reason="Inadmissible",
                                   message="ClusterQueue research is inactive"))
    out["clusterqueue-flavor-missing"] = (s, {"name": "sweep", "namespace": "research",
                                              "code": "ClusterQueueInactive",
                                              "contains": "ResourceFlavor h100 does not exist"})

    s = base()  # the tenant's LocalQueue is held (an admin paused the team's queue)
    s["localqueues"][0]["spec"]["stopPolicy"] = "Hold"
    s["localqueues"][0]["status"]["conditions"][0] |= {
        "status": "False", "reason": "Stopped", "message": "LocalQueue is stopped"}
    s["workloads"].append(workload("sweep", "research", "research", priority=500, count=1, gpus=1,
                                   reason="Inadmissible",
                                   message="LocalQueue research is inactive"))
    out["localqueue-held"] = (s, {"name": "sweep", "namespace": "research",
                                  "code": "LocalQueueStopped", "contains": "stopPolicy Hold"})

    s = base()
    s["workloads"].append(workload("typo", "research", "reserch", priority=500, count=1, gpus=1,
                                   reason="Inadmissible",
                                   message="LocalQueue reserch doesn't exist"))
    out["missing-localqueue"] = (s, {"name": "typo", "namespace": "research",
                                     "code": "LocalQueueMissing", "contains": "reserch"})

    s = base()  # serving reclaims: a research job borrowing serving's GPUs was preempted
    _running(s, "pretrain-a", "research", "research", priority=500, count=2, gpus=8, first_node=0)
    _running(s, "pretrain-b", "research", "research", priority=100, count=1, gpus=8,
             first_node=2, evicted=True)
    _running(s, "chat", "serving", "serving", priority=1000, count=1, gpus=8, first_node=3)
    s["workloads"].append(workload("chat-scale", "serving", "serving", priority=1000, count=1,
                                   gpus=8, message=(
        "couldn't assign flavors to pod set main: insufficient unused quota for "
        "nvidia.com/gpu in flavor h100, 8 more needed. Pending the preemption of 1 "
        "workload(s)")))
    out["waiting-for-preemption"] = (s, {"name": "chat-scale", "namespace": "serving",
                                         "code": "WaitingForPreemption",
                                         "contains": "pretrain-b"})

    s = base()  # a bare pod without the GPU toleration, outside Kueue
    s["pods"].append(pod("debug-shell", "research", job="", wl="",
                         spec=pod_spec(1, tolerate=False), node_name=None))
    s["pods"][-1]["metadata"]["labels"] = {"app": "debug"}
    out["pod-untolerated-taint"] = (s, {"name": "debug-shell", "namespace": "research",
                                        "code": "Unschedulable", "contains": "untolerated taint"})
    return out


def files() -> dict[str, str]:
    """Relative path -> content of every scenario file."""
    out: dict[str, str] = {}
    for name, (state, expected) in scenarios().items():
        for resource, items in state.items():
            api = "v1"
            out[f"{name}/{resource}.json"] = json.dumps(_list(items, api), indent=2) + "\n"
        out[f"{name}/expected.json"] = json.dumps(expected, indent=2) + "\n"
    return out


def scenario_files(name: str) -> dict[str, str]:
    """File name -> content of one scenario's folder."""
    prefix = f"{name}/"
    return {k.removeprefix(prefix): v for k, v in files().items() if k.startswith(prefix)}
