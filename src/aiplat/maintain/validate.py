"""The health gate's validation workload: a Job through Kueue on the changed node.

After the node agent's verdict (and ``--gate-with``), ``--validate-queue NAMESPACE/QUEUE``
submits one Job per node to that LocalQueue, as any tenant's work arrives: Kueue must admit
it against the ClusterQueue's quota and flavors, the scheduler must place it on the node
(pinned by ``kubernetes.io/hostname``, tolerating every taint, as a DaemonSet does), and its
container must exit 0. Kueue's topology-aware scheduling leaves cordoned nodes out of every
domain (the real Kueue said so: "Total nodes: 15" of 16), so for the validation the cordon
is traded for a NoSchedule taint, ``VALIDATING_TAINT``, that only the validation tolerates
among tenants' work (``taints``): still closed to new work, open to its check. A failed
validation cordons the node again; uncordon removes the taint. It asks for every GPU the node
published before the change (``NodeState.devices``, read at cordon): a driver or device
plugin that came back with fewer GPUs leaves the Job pending and the gate fails with Kueue's
or the scheduler's own words, where a check of the node alone would pass.

What the Job runs is the admin's (``--validate-image``); the default is the CUDA vectorAdd
sample NVIDIA's GPU Operator documentation verifies an installation with. On the lab's kwok
nodes no container runs: the lab completes pods labelled ``VALIDATION_LABEL`` (its kwok
stage), so a lab run shows admission, placement and the GPU count, never a CUDA kernel.

Pure builders here (``job``, ``gpu_devices``, ``verdict``); the executor (``run.py``) does
the calls.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from aiplat.kube.objects import restricted_security_context

Obj = dict[str, Any]

VALIDATION_LABEL = "maintain.aiplat.io/validation"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
DEFAULT_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
VALIDATING_TAINT = "maintain.aiplat.io/validating"


def gpu_devices(node: Obj) -> dict[str, str]:
    """The node's allocatable accelerators as extended resources (``*/gpu``, MIG slices
    ``*/mig-*``): what the validation Job asks for. Other extended resources (RDMA, hugepages)
    are left out: a ClusterQueue that does not cover them would refuse the Job for a reason
    that is not the node's."""
    alloc = (node.get("status") or {}).get("allocatable") or {}
    return {k: str(v) for k, v in sorted(alloc.items())
            if "/" in k and (k.endswith("/gpu") or "/mig-" in k) and str(v) not in ("0", "")}


def job_name(node: str, run_id: str) -> str:
    """A DNS-1123 label (63 characters) for any node name: a hash keeps long ones apart."""
    digest = hashlib.sha256(f"{run_id}/{node}".encode()).hexdigest()[:8]
    stem = re.sub(r"[^a-z0-9]+", "-", node.lower())[:38].strip("-")
    return f"aiplat-validate-{stem}-{digest}" if stem else f"aiplat-validate-{digest}"


def job(node: str, run_id: str, queue: str, namespace: str, devices: dict[str, str], *,
        image: str = DEFAULT_IMAGE, deadline_s: float = 600.0) -> Obj:
    """The Job, suspended for Kueue to start; it never retries (a failure is the verdict)."""
    labels = {VALIDATION_LABEL: "true", "maintain.aiplat.io/run": run_id}
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": job_name(node, run_id), "namespace": namespace,
                     "labels": {**labels, QUEUE_LABEL: queue}},
        "spec": {
            "suspend": True, "parallelism": 1, "completions": 1, "backoffLimit": 0,
            "activeDeadlineSeconds": max(1, int(deadline_s)),
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    # the node is cordoned and may carry the pool's own taints: it must
                    # land there anyway, as a DaemonSet's pod does
                    "tolerations": [{"operator": "Exists"}],
                    # admissible in a namespace that enforces the restricted Pod Security
                    # Standard, as tenants' namespaces do; a CUDA sample needs no root
                    "securityContext": {"runAsUser": 65534},
                    "containers": [{
                        "name": "validate", "image": image,
                        "resources": {"limits": dict(devices), "requests": dict(devices)},
                        "securityContext": restricted_security_context(),
                    }],
                },
            },
        },
    }


def taints(node: Obj, validating: bool) -> list[Obj]:
    """The node's taints with ``VALIDATING_TAINT`` added or removed (a merge patch replaces
    the whole list, so it is built from the node as read)."""
    kept = [t for t in (node.get("spec") or {}).get("taints") or []
            if t.get("key") != VALIDATING_TAINT]
    return kept + ([{"key": VALIDATING_TAINT, "value": "true", "effect": "NoSchedule"}]
                   if validating else [])


def _condition(obj: Obj | None, kind: str) -> Obj | None:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or []
                 if c.get("type") == kind), None)


def verdict(job_obj: Obj | None, workload: Obj | None, pods: list[Obj]) -> tuple[bool | None, str]:
    """(True: completed, False: failed, None: not yet; why, in Kueue's or the scheduler's
    words when the Job has not run)."""
    if job_obj is None:
        return False, "the validation Job is gone (deleted by someone else?)"
    for kind, ok in (("Complete", True), ("Failed", False)):
        c = _condition(job_obj, kind)
        if c is not None and c.get("status") == "True":
            return ok, f"validation Job {kind.lower()}" + (
                f": {c.get('reason', '')} {c.get('message', '')}".rstrip() if not ok else "")
    reserved = _condition(workload, "QuotaReserved")
    if workload is None or reserved is None or reserved.get("status") != "True":
        msg = (reserved or {}).get("message") or "no Workload yet"
        return None, f"validation Job not admitted by Kueue: {msg}"
    for p in pods:
        sched = _condition(p, "PodScheduled")
        if sched is not None and sched.get("status") == "False":
            return None, f"validation pod not scheduled: {sched.get('message', '')}"
    return None, "validation Job admitted, running"
