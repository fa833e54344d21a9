"""``aiplat sim replay`` on what ``kubectl get clusterqueues,localqueues,resourceflavors,
workloads,namespaces -A -o yaml`` prints: one List, server fields on every item (uid,
resourceVersion, managedFields, finalizers, status), and pending Workloads Kueue has already
tried (``QuotaReserved`` False, reason Pending)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from aiplat.cli.main import cli

API = "kueue.x-k8s.io/v1beta2"
Obj = dict[str, Any]
T0 = "2026-11-29T08:00:00Z"


def _meta(name: str, namespace: str | None = None, **extra: Any) -> Obj:
    m: Obj = {"name": name, "uid": f"uid-{name}", "resourceVersion": "1234",
              "generation": 1, "creationTimestamp": T0,
              "managedFields": [{"manager": "kubectl", "operation": "Apply",
                                 "apiVersion": API, "time": T0, "fieldsType": "FieldsV1",
                                 "fieldsV1": {"f:spec": {}}}], **extra}
    if namespace:
        m["namespace"] = namespace
    return m


def _tried(name: str, queue: str, cpu: str, created: str) -> Obj:
    """A Workload Kueue's scheduler evaluated and requeued (as on a cluster)."""
    return {"apiVersion": API, "kind": "Workload",
            "metadata": _meta(name, "team", creationTimestamp=created,
                              labels={"kueue.x-k8s.io/job-uid": f"j-{name}"}),
            "spec": {"queueName": queue, "active": True, "priority": 0, "podSets": [
                {"name": "main", "count": 1, "template": {"spec": {
                    "restartPolicy": "Never", "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]}}}]},
            "status": {"conditions": [
                {"type": "QuotaReserved", "status": "False", "reason": "Pending",
                 "message": "couldn't assign flavors to pod set main: insufficient unused "
                            "quota for cpu in flavor default, 1 more needed",
                 "lastTransitionTime": created, "observedGeneration": 1}],
                "resourceRequests": [{"name": "main", "resources": {"cpu": cpu}}]}}


def kubectl_list() -> Obj:
    items = [
        {"apiVersion": API, "kind": "ClusterQueue",
         "metadata": _meta("team", finalizers=["kueue.x-k8s.io/resource-in-use"]),
         "spec": {"namespaceSelector": {}, "queueingStrategy": "BestEffortFIFO",
                  "flavorFungibility": {"whenCanBorrow": "MayStopSearch",
                                        "whenCanPreempt": "TryNextFlavor"},
                  "preemption": {"withinClusterQueue": "Never",
                                 "reclaimWithinCohort": "Never",
                                 "borrowWithinCohort": {"policy": "Never"}},
                  "stopPolicy": "None",
                  "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                      {"name": "default", "resources": [{"name": "cpu",
                                                         "nominalQuota": "4"}]}]}]},
         "status": {"admittedWorkloads": 0, "pendingWorkloads": 2, "reservingWorkloads": 0,
                    "conditions": [{"type": "Active", "status": "True", "reason": "Ready",
                                    "message": "Can admit new workloads",
                                    "lastTransitionTime": T0}],
                    "flavorsReservation": [{"name": "default", "resources": [
                        {"name": "cpu", "total": "0", "borrowed": "0"}]}]}},
        {"apiVersion": API, "kind": "LocalQueue", "metadata": _meta("team", "team"),
         "spec": {"clusterQueue": "team", "stopPolicy": "None"},
         "status": {"admittedWorkloads": 0, "pendingWorkloads": 2, "reservingWorkloads": 0,
                    "conditions": [{"type": "Active", "status": "True", "reason": "Ready",
                                    "message": "Can submit new workloads to localQueue",
                                    "lastTransitionTime": T0}]}},
        {"apiVersion": API, "kind": "ResourceFlavor",
         "metadata": _meta("default", finalizers=["kueue.x-k8s.io/resource-in-use"]),
         "spec": {}},
        _tried("a", "team", "3", "2026-11-29T08:01:00Z"),
        _tried("b", "team", "2", "2026-11-29T08:02:00Z"),
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": _meta("team", labels={"kubernetes.io/metadata.name": "team"}),
         "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}},
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items,
            "metadata": {"resourceVersion": ""}}


def _replay(tmp_path: Path, *args: str) -> list[Obj]:
    f = tmp_path / "snap.yaml"
    f.write_text(yaml.safe_dump(kubectl_list()))
    r = CliRunner().invoke(cli, ["sim", "replay", str(f), "-o", "json", *args])
    assert r.exit_code == 0, r.output
    return list(json.loads(r.stdout))


def test_one_cycle_on_kubectl_output_admits_what_fits(tmp_path: Path) -> None:
    """The tried workloads wait among the inadmissible until the queues start; that
    delivery is not a scheduling cycle, so ``--cycles 1`` runs Kueue's first one."""
    rows = {r["workload"]: r for r in _replay(tmp_path, "--cycles", "1")}
    assert rows["team/a"]["decision"] == "admitted"
    assert rows["team/a"]["cycle"] == 1
    assert rows["team/b"]["decision"] == "pending"


def test_until_quiet_on_kubectl_output(tmp_path: Path) -> None:
    rows = {r["workload"]: r for r in _replay(tmp_path)}
    assert rows["team/a"]["decision"] == "admitted"
    assert rows["team/b"]["decision"] == "pending"
    assert rows["team/b"]["pending"] == "inadmissible"
