"""The lint classes of issue #18 (lint_kueue, lint_fit, lint_selectors and the LimitRange
extensions): each seeded mistake into the rendered example is found by its rule, on the
object it names, and by nothing else; near misses that Kubernetes or Kueue accept are not."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from test_kube_lint import clean, find

from aiplat.kube import lint
from aiplat.kube.inventory import Inventory

Obj = dict[str, Any]
QUEUE = "kueue.x-k8s.io/queue-name"


def _job(o: list[Obj], name: str = "nightly-eval") -> Obj:
    return next(j for j in o if j["kind"] in ("Job", "JobSet", "Deployment")
                and j["metadata"]["name"] == name)


def _kueue_cfg(o: list[Obj], edit: Callable[[Obj], None]) -> None:
    cm = find(o, "ConfigMap", "kueue-manager-config", "kueue-system")
    cfg = yaml.safe_load(cm["data"]["controller_manager_config.yaml"])
    edit(cfg)
    cm["data"]["controller_manager_config.yaml"] = yaml.safe_dump(cfg)


def _container(o: Obj) -> Obj:
    spec = o["spec"]
    if o["kind"] == "JobSet":
        spec = spec["replicatedJobs"][0]["template"]["spec"]
    return dict(spec["template"]["spec"]["containers"][0])


def _copy_job(o: list[Obj], src: str, new: str, ns: str | None = None) -> Obj:
    job = copy.deepcopy(_job(o, src))
    job["metadata"]["name"] = new
    if ns:
        job["metadata"]["namespace"] = ns
    o.append(job)
    return job


# --- lint_kueue --------------------------------------------------------------------------

def cohort_cycle(o: list[Obj], inv: Inventory) -> None:
    find(o, "Cohort", "example")["spec"] = {"parentName": "org"}
    o.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
              "metadata": {"name": "org"}, "spec": {"parentName": "example"}})


def cohort_self_parent(o: list[Obj], inv: Inventory) -> None:
    find(o, "Cohort", "example")["spec"] = {"parentName": "example"}


def borrowing_without_cohort(o: list[Obj], inv: Inventory) -> None:
    del find(o, "ClusterQueue", "research")["spec"]["cohortName"]


def queued_jobset_framework_off(o: list[Obj], inv: Inventory) -> None:
    _kueue_cfg(o, lambda c: c["integrations"]["frameworks"].remove("jobset.x-k8s.io/jobset"))


def queued_job_in_kube_system(o: list[Obj], inv: Inventory) -> None:
    _copy_job(o, "nightly-eval", "sneaky", "kube-system")


def kueue_config_field_of_wrong_type(o: list[Obj], inv: Inventory) -> None:
    _kueue_cfg(o, lambda c: c["integrations"].update(frameworks="batch/job"))


def queued_job_outside_managed_namespaces(o: list[Obj], inv: Inventory) -> None:
    _kueue_cfg(o, lambda c: c.update(managedJobsNamespaceSelector={
        "matchLabels": {"aiplat.io/tenant": "research"}}))


def job_without_queue_name(o: list[Obj], inv: Inventory) -> None:
    del _job(o)["metadata"]["labels"][QUEUE]


def job_without_queue_name_managed(o: list[Obj], inv: Inventory) -> None:
    del _job(o)["metadata"]["labels"][QUEUE]
    _kueue_cfg(o, lambda c: c.update(manageJobsWithoutQueueName=True))


def localqueue_held(o: list[Obj], inv: Inventory) -> None:
    find(o, "LocalQueue", "batch", "batch")["spec"]["stopPolicy"] = "Hold"


def clusterqueue_held_and_drained(o: list[Obj], inv: Inventory) -> None:
    find(o, "ClusterQueue", "serving")["spec"]["stopPolicy"] = "HoldAndDrain"


def kueue_manages_kube_system(o: list[Obj], inv: Inventory) -> None:
    _kueue_cfg(o, lambda c: c.update(managedJobsNamespaceSelector={}))


# --- lint_quota --------------------------------------------------------------------------

def job_bigger_than_its_queue(o: list[Obj], inv: Inventory) -> None:
    # 31 pods x 12 CPU = 372 > batch's 123 nominal + 247 borrowing on flavor l40s
    _job(o)["spec"]["parallelism"] = _job(o)["spec"]["completions"] = 31


def job_pinned_to_a_pool_its_queue_lacks(o: list[Obj], inv: Inventory) -> None:
    _job(o)["spec"]["template"]["spec"]["nodeSelector"] = {"aiplat.io/pool": "h100"}


def gang_without_topology_level(o: list[Obj], inv: Inventory) -> None:
    js = _job(o, "domain-pretrain")
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"][
        "annotations"] = {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}


def container_adds_ipc_lock(o: list[Obj], inv: Inventory) -> None:
    c = _job(o, "assistant-finetune")["spec"]["template"]["spec"]["containers"][0]
    c["securityContext"]["capabilities"]["add"] = ["IPC_LOCK"]  # research is restricted


# --- lint_runtime ------------------------------------------------------------------------

def _runtime_keeps_memlock(inv: Inventory) -> None:
    inv.pools[:] = [dataclasses.replace(p, memlock_unlimited=False) for p in inv.pools]


def rdma_without_memlock(o: list[Obj], inv: Inventory) -> None:
    _runtime_keeps_memlock(inv)  # the drop-in kube render ships was not installed


def rdma_plugin_left_out(o: list[Obj], inv: Inventory) -> None:
    """The tree without the RDMA shared device plugin (the Network Operator not installed
    either): the gang's rdma/rdma_shared_device_a is published by nothing."""
    o[:] = [x for x in o if (x.get("metadata") or {}).get("namespace")
            != "nvidia-network-operator" and x["metadata"]["name"] != "nvidia-network-operator"]


def mig_pool_without_its_label(o: list[Obj], inv: Inventory) -> None:
    """An inventory whose h100 nodes publish MIG devices but name no MIG Manager config."""
    inv.pools[:] = [dataclasses.replace(p, capacity={**p.capacity,
                                                     "nvidia.com/mig-1g.10gb": 8 * p.nodes})
                    if p.name == "h100" else p for p in inv.pools]


# --- lint_fit ----------------------------------------------------------------------------

def pod_asks_more_gpus_than_a_node(o: list[Obj], inv: Inventory) -> None:
    c = _container(_job(o, "assistant-finetune"))
    for k in ("requests", "limits"):
        c["resources"][k]["nvidia.com/gpu"] = "16"  # an H100 node has 8
    _job(o, "assistant-finetune")["spec"]["template"]["spec"]["containers"][0] = c


def claim_asks_more_devices_than_a_node(o: list[Obj], inv: Inventory) -> None:
    t = find(o, "ResourceClaimTemplate", "l40s-gpu-1", "serving")
    t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 8  # 4 L40S a node


def mig_resource_without_mig(o: list[Obj], inv: Inventory) -> None:
    res = _job(o, "assistant-finetune")["spec"]["template"]["spec"]["containers"][0][
        "resources"]
    for k in ("requests", "limits"):
        res[k]["nvidia.com/mig-3g.40gb"] = res[k].pop("nvidia.com/gpu")


def pvc_access_mode_driver_cannot_serve(o: list[Obj], inv: Inventory) -> None:
    find(o, "StorageClass", "shared-fs")["provisioner"] = "rbd.csi.ceph.com"  # RWO only


def ephemeral_claim_rwx_on_local_disk(o: list[Obj], inv: Inventory) -> None:
    vol = next(v for v in _job(o, "assistant")["spec"]["template"]["spec"]["volumes"]
               if "ephemeral" in v)
    vol["ephemeral"]["volumeClaimTemplate"]["spec"]["accessModes"] = ["ReadWriteMany"]


def pvc_on_static_only_driver(o: list[Obj], inv: Inventory) -> None:
    pvc = copy.deepcopy(find(o, "PersistentVolumeClaim", "model-cache", "batch"))
    pvc["metadata"]["name"] = "weights"
    pvc["spec"]["storageClassName"] = "model-store"  # Mountpoint for S3: no CreateVolume
    o.append(pvc)


def pvc_names_missing_storageclass(o: list[Obj], inv: Inventory) -> None:
    find(o, "PersistentVolumeClaim", "checkpoints", "research")["spec"][
        "storageClassName"] = "shared"


# --- LimitRange --------------------------------------------------------------------------

def limitrange_max_below_request(o: list[Obj], inv: Inventory) -> None:
    lr = find(o, "LimitRange", "aiplat-defaults", "research")["spec"]["limits"][0]
    lr["max"]["memory"] = lr["default"]["memory"] = "1Ti"  # the finetune asks 1806Gi


def limitrange_min_above_request(o: list[Obj], inv: Inventory) -> None:
    find(o, "LimitRange", "aiplat-defaults", "batch")["spec"]["limits"][0]["min"] = {
        "cpu": "64"}  # nightly-eval asks 54


def limitrange_pod_max_below_pod(o: list[Obj], inv: Inventory) -> None:
    find(o, "LimitRange", "aiplat-defaults", "serving")["spec"]["limits"].append(
        {"type": "Pod", "max": {"cpu": "32"}})  # assistant asks 48


# --- lint_selectors ----------------------------------------------------------------------

def tenant_without_default_deny(o: list[Obj], inv: Inventory) -> None:
    # allow-monitoring alone (podSelector {}, Ingress) would already fence ingress.
    o[:] = [p for p in o if not (p["kind"] == "NetworkPolicy"
                                 and p["metadata"]["namespace"] == "batch")]


def tenant_with_open_egress(o: list[Obj], inv: Inventory) -> None:
    for p in ("default-deny", "allow-same-namespace"):
        find(o, "NetworkPolicy", p, "research")["spec"]["policyTypes"] = ["Ingress"]
    for p in ("allow-dns", "allow-model-store"):
        o.remove(find(o, "NetworkPolicy", p, "research"))


def inferencepool_selects_no_pod(o: list[Obj], inv: Inventory) -> None:
    find(o, "InferencePool", "assistant", "serving")["spec"]["selector"]["matchLabels"] = {
        "app.kubernetes.io/name": "assistent"}


def service_selects_no_pod(o: list[Obj], inv: Inventory) -> None:
    o.append({"apiVersion": "v1", "kind": "Service",
              "metadata": {"name": "assistant", "namespace": "serving"},
              "spec": {"selector": {"app": "assistant"}, "ports": [{"port": 8000}]}})


def pdb_selects_no_pod(o: list[Obj], inv: Inventory) -> None:
    o.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
              "metadata": {"name": "assistant", "namespace": "serving"},
              "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {
                  "app.kubernetes.io/name": "assistant-v2"}}}})


def networkpolicy_label_typo(o: list[Obj], inv: Inventory) -> None:
    find(o, "NetworkPolicy", "allow-gateway", "serving")["spec"]["podSelector"] = {
        "matchLabels": {"aiplat.io/serve": "true"}}


# --- lint_system -------------------------------------------------------------------------

RBAC = "rbac.authorization.k8s.io"


def _binding(kind: str, name: str, ns: str | None, role: tuple[str, str],
             *subjects: Obj) -> Obj:
    meta: Obj = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": RBAC, "kind": role[0], "name": role[1]},
            "subjects": list(subjects)}


def _group(name: str) -> Obj:
    return {"apiGroup": RBAC, "kind": "Group", "name": name}


def tenant_group_edits_kube_system(o: list[Obj], inv: Inventory) -> None:
    o.append(_binding("RoleBinding", "research-debug", "kube-system", ("ClusterRole", "edit"),
                      _group("research-leads")))


def tenant_group_is_cluster_admin(o: list[Obj], inv: Inventory) -> None:
    o.append(_binding("ClusterRoleBinding", "research-admins", None,
                      ("ClusterRole", "cluster-admin"), _group("research-leads")))


def everyone_is_a_tenant_user(o: list[Obj], inv: Inventory) -> None:
    find(o, "RoleBinding", "aiplat-user", "batch")["subjects"] = [
        _group("system:authenticated")]


def anonymous_reads_endpoint_picker_pods(o: list[Obj], inv: Inventory) -> None:
    o.append(_binding("RoleBinding", "anyone", "serving", ("Role", "assistant-epp"),
                      _group("system:unauthenticated")))


def default_deny_in_kube_system(o: list[Obj], inv: Inventory) -> None:
    np = copy.deepcopy(find(o, "NetworkPolicy", "default-deny", "batch"))
    np["metadata"]["namespace"] = "kube-system"
    np["spec"]["policyTypes"] = ["Ingress"]
    o.append(np)


def kube_system_restricted(o: list[Obj], inv: Inventory) -> None:
    o.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "kube-system", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}})


def kueue_namespace_made_a_tenant(o: list[Obj], inv: Inventory) -> None:
    find(o, "Namespace", "kueue-system")["metadata"]["labels"]["aiplat.io/tenant"] = "kueue"


SEEDED: list[tuple[Callable[[list[Obj], Inventory], None], str, str, str]] = [
    (cohort_cycle, "cohort-cycle", "Cohort/example", "example -> org -> example"),
    (cohort_self_parent, "cohort-cycle", "Cohort/example",
     "so batch, research, serving admit nothing"),
    (borrowing_without_cohort, "quota-without-cohort", "ClusterQueue/research",
     "borrowingLimit must be nil"),
    (queued_jobset_framework_off, "kueue-managed", "JobSet/research/domain-pretrain",
     "outside any quota"),
    (queued_job_in_kube_system, "kueue-managed", "Job/kube-system/sneaky",
     "webhooks skip namespace kube-system"),
    (queued_job_outside_managed_namespaces, "kueue-managed", "Job/batch/nightly-eval",
     "stays suspended forever"),
    (job_without_queue_name, "workload-unqueued", "Job/batch/nightly-eval",
     "runs beside the quota"),
    (job_without_queue_name_managed, "workload-unqueued", "Job/batch/nightly-eval",
     "it never runs"),
    (localqueue_held, "queue-stopped", "LocalQueue/batch/batch", "Hold"),
    (clusterqueue_held_and_drained, "queue-stopped", "ClusterQueue/serving", "HoldAndDrain"),
    (kueue_manages_kube_system, "kueue-config", "ConfigMap/kueue-system/kueue-manager-config",
     "matches namespace kube-system"),
    (kueue_config_field_of_wrong_type, "kueue-config",
     "ConfigMap/kueue-system/kueue-manager-config",
     "integrations.frameworks must be a list, not the string 'batch/job'"),
    (job_bigger_than_its_queue, "workload-quota", "Job/batch/nightly-eval",
     "ask for 372 cpu in all but ClusterQueue batch can give at most 370"),
    (job_pinned_to_a_pool_its_queue_lacks, "flavor-affinity", "Job/batch/nightly-eval",
     "pinned to pool h100"),
    (gang_without_topology_level, "topology-spread", "JobSet/research/domain-pretrain",
     "every collective crossing the spine"),
    (container_adds_ipc_lock, "pod-security", "Job/research/assistant-finetune",
     "adds capabilities ['IPC_LOCK']"),
    (rdma_without_memlock, "rdma-memlock", "JobSet/research/domain-pretrain",
     "falls back to TCP sockets"),
    (rdma_plugin_left_out, "rdma-publisher", "JobSet/research/domain-pretrain",
     "nothing in this tree publishes"),
    (mig_pool_without_its_label, "mig-config-label", "pool/h100", "all-disabled"),
    (pod_asks_more_gpus_than_a_node, "gpu-per-node", "Job/research/assistant-finetune",
     "asks for 16 nvidia.com/gpu but the largest node (pool h100) has 8"),
    (claim_asks_more_devices_than_a_node, "gpu-per-node", "Deployment/serving/docs-search",
     "asks for 8 devices of gpu-l40s-48gb but one node has at most 4"),
    (mig_resource_without_mig, "resource-unserved", "Job/research/assistant-finetune",
     "MIG is off"),
    (pvc_access_mode_driver_cannot_serve, "pvc-access-mode",
     "PersistentVolumeClaim/research/checkpoints", "ReadWriteMany"),
    (ephemeral_claim_rwx_on_local_disk, "pvc-access-mode", "Deployment/serving/assistant",
     "ephemeral volume 'model'"),
    (pvc_on_static_only_driver, "pvc-access-mode", "PersistentVolumeClaim/batch/weights",
     "provisions nothing (static only)"),
    (pvc_names_missing_storageclass, "pvc-access-mode",
     "PersistentVolumeClaim/research/checkpoints", "not a StorageClass of this tree"),
    (limitrange_max_below_request, "limitrange-admits", "Job/research/assistant-finetune",
     "above the LimitRange max 1Ti"),
    (limitrange_min_above_request, "limitrange-admits", "Job/batch/nightly-eval",
     "below the LimitRange min 64"),
    (limitrange_pod_max_below_pod, "limitrange-admits", "Deployment/serving/assistant",
     "Pod max 32"),
    (tenant_without_default_deny, "netpol-default-deny", "Namespace/batch", "Ingress"),
    (tenant_with_open_egress, "netpol-default-deny", "Namespace/research", "egress is open"),
    (inferencepool_selects_no_pod, "selector-matches", "InferencePool/serving/assistant",
     "503"),
    (service_selects_no_pod, "selector-matches", "Service/serving/assistant", "no endpoints"),
    (pdb_selects_no_pod, "selector-matches", "PodDisruptionBudget/serving/assistant",
     "protects nothing"),
    (networkpolicy_label_typo, "selector-matches", "NetworkPolicy/serving/allow-gateway",
     "stay fenced"),
    (tenant_group_edits_kube_system, "rbac-system-namespace",
     "RoleBinding/kube-system/research-debug",
     "gives Group research-leads, which is no system component, ClusterRole edit in system "
     "namespace kube-system"),
    (tenant_group_is_cluster_admin, "rbac-cluster-grant", "ClusterRoleBinding/research-admins",
     "gives tenant subject Group research-leads ClusterRole cluster-admin in every namespace"),
    (everyone_is_a_tenant_user, "rbac-everyone", "RoleBinding/batch/aiplat-user",
     "every authenticated identity"),
    (anonymous_reads_endpoint_picker_pods, "rbac-everyone", "RoleBinding/serving/anyone",
     "gives anonymous requests (system:unauthenticated) Role assistant-epp"),
    (default_deny_in_kube_system, "system-namespace-policy",
     "NetworkPolicy/kube-system/default-deny", "isolates every pod of system namespace"),
    (kube_system_restricted, "system-namespace-policy", "Namespace/kube-system",
     "enforces Pod Security 'restricted' on system namespace kube-system"),
    (kueue_namespace_made_a_tenant, "system-namespace-policy", "Namespace/kueue-system",
     "makes system namespace kueue-system a tenant's"),
]
# Other rules a seed sets off by design (the same defect seen from another object).
ALSO = {"pvc_access_mode_driver_cannot_serve": {"pvc-access-mode"},
        "queued_job_in_kube_system": {"workload-queue"},
        "kueue_namespace_made_a_tenant": {"netpol-default-deny"},
        # Kueue does not start; the rules that read its Configuration read the defaults.
        "kueue_config_field_of_wrong_type": {"kueue-dra-mapping", "kueue-managed"}}


@pytest.mark.parametrize(("seed", "rule", "obj", "words"), SEEDED,
                         ids=[s[0].__name__ for s in SEEDED])
def test_seeded_class_is_found(seed: Callable[[list[Obj], Inventory], None], rule: str,
                               obj: str, words: str) -> None:
    objs, inv = clean()
    seed(objs, inv)
    findings = lint(objs, inv)
    hits = [f for f in findings if f.source == rule and f.subject == obj]
    assert hits, [(f.source, f.subject, f.message) for f in findings]
    assert any(words in h.message for h in hits), [h.message for h in hits]
    assert all(h.fix for h in hits)
    assert {f.source for f in findings} <= {rule} | ALSO.get(seed.__name__, set()), \
        [(f.source, f.subject) for f in findings]


def test_near_misses_are_clean() -> None:
    """What Kubernetes and Kueue accept: a cohort tree without a cycle, a job with its
    queue in a managed namespace, a Service selecting the assistant's pods, a GPU request
    of exactly one node, a policy for pods a tenant does not run yet (allow-gateway in
    research), unqueued jobs landing in a 'default' LocalQueue."""
    objs, inv = clean()
    find(objs, "Cohort", "example")["spec"] = {"parentName": "org"}
    objs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
                 "metadata": {"name": "org"}, "spec": {}})
    objs.append({"apiVersion": "v1", "kind": "Service",
                 "metadata": {"name": "assistant", "namespace": "serving"},
                 "spec": {"selector": {"app.kubernetes.io/name": "assistant"},
                          "ports": [{"port": 8000}]}})
    assert lint(objs, inv) == []

    objs, inv = clean()  # a claim on S3 with the static PV made for it
    pvc_on_static_only_driver(objs, inv)
    objs.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "w"},
                 "spec": {"storageClassName": "model-store", "accessModes": ["ReadOnlyMany"],
                          "capacity": {"storage": "18Gi"}, "csi": {
                              "driver": "s3.csi.aws.com", "volumeHandle": "w"},
                          "claimRef": {"name": "weights", "namespace": "batch"}}})
    assert lint(objs, inv) == []

    objs, inv = clean()
    del _job(objs)["metadata"]["labels"][QUEUE]
    _kueue_cfg(objs, lambda c: c.update(manageJobsWithoutQueueName=True))
    for tenant in ("batch", "serving"):  # serving: its endpoint picker is unqueued too
        default = copy.deepcopy(find(objs, "LocalQueue", tenant, tenant))
        default["metadata"]["name"] = "default"
        objs.append(default)
    assert lint(objs, inv) == []


def test_rdma_with_ipc_lock_in_a_privileged_namespace_needs_no_runtime_limit() -> None:
    objs, inv = clean()
    _runtime_keeps_memlock(inv)
    find(objs, "Namespace", "research")["metadata"]["labels"][
        "pod-security.kubernetes.io/enforce"] = "privileged"
    js = _job(objs, "domain-pretrain")
    c = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["containers"][0]
    c["securityContext"]["capabilities"] = {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    assert [f for f in lint(objs, inv) if f.source in ("rdma-memlock", "pod-security")] == []


def test_rdma_pools_ship_the_runtime_memlock_drop_in() -> None:
    from aiplat.catalog import load_catalog
    from aiplat.kube.render import render
    from aiplat.spec import EXAMPLE, example_text, parse_platform

    catalog = load_catalog()
    r = render(parse_platform(example_text(), EXAMPLE, catalog), catalog)
    rdma = {p.name for p in r.inventory.pools if any(k.startswith("rdma/") for k in p.capacity)}
    shipped = {k.split("/")[2] for k in r.other if k.endswith("/runtime-memlock.conf")}
    assert rdma and shipped == rdma
    assert {p.name for p in r.inventory.pools if p.memlock_unlimited} == rdma
    conf = r.other[f"cluster/nodes/{sorted(rdma)[0]}/runtime-memlock.conf"]
    assert "[Service]\nLimitMEMLOCK=infinity\n" in conf


def test_queued_kinds_map_to_kueue_frameworks() -> None:
    """The rendered Configuration integrates every kind the tree queues."""
    from aiplat.kube.lint.rules.kueue import FRAMEWORKS
    objs, _ = clean()
    queued = {o["kind"] for o in objs if QUEUE in (o["metadata"].get("labels") or {})}
    assert queued and queued <= set(FRAMEWORKS)
