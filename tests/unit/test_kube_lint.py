"""``aiplat kube lint``: nothing on the clean example, and each seeded misconfiguration found
by the rule that owns it (the test ids name the misconfigurations)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.kube import lint, render
from aiplat.kube.inventory import Inventory
from aiplat.spec import example_text, parse_platform
from aiplat.spec.models import Platform

Obj = dict[str, Any]


def platform_from(edit: Callable[[Obj], None] | None = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), "test.yaml", load_catalog())


def _dead_borrowing(data: Obj) -> None:
    # research may borrow 8 H100s, but serving (the only other member) lends none of its
    # h100 quota: the limit promises capacity that does not exist.
    data["tenants"][0]["quota"]["h100"]["borrowingLimit"] = 8
    data["tenants"][1]["quota"]["h100"]["lendingLimit"] = 0


def clean() -> tuple[list[Obj], Inventory]:
    r = render(platform_from(), load_catalog())
    return r.objects(), r.inventory


def find(objs: list[Obj], kind: str, name: str, ns: str | None = None) -> Obj:
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name
                and (ns is None or o["metadata"].get("namespace") == ns))


def test_clean_example_has_no_findings() -> None:
    objs, inv = clean()
    assert lint(objs, inv) == []


def test_dead_borrowing_limit_is_the_only_finding() -> None:
    r = render(platform_from(_dead_borrowing), load_catalog())
    findings = lint(r.objects(), r.inventory)
    assert [(f.severity, f.source, f.subject) for f in findings] == [
        ("warning", "borrowing-cohort", "ClusterQueue/research")]
    assert "exceeds what cohort example can lend (0)" in findings[0].message


def _cq_gpu(objs: list[Obj], cq: str, flavor: str = "h100",
            resource: str = "nvidia.com/gpu") -> Obj:
    spec = find(objs, "ClusterQueue", cq)["spec"]
    fl = next(f for f in spec["resourceGroups"][0]["flavors"] if f["name"] == flavor)
    return next(r for r in fl["resources"] if r["name"] == resource)


def localqueue_names_missing_clusterqueue(o: list[Obj], inv: Inventory) -> None:
    find(o, "LocalQueue", "batch", "batch")["spec"]["clusterQueue"] = "batchh"


def clusterqueue_uses_missing_flavor(o: list[Obj], inv: Inventory) -> None:
    find(o, "ClusterQueue", "batch")["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "l4"


def namespace_selector_misses_tenant_namespace(o: list[Obj], inv: Inventory) -> None:
    find(o, "ClusterQueue", "serving")["spec"]["namespaceSelector"] = {
        "matchLabels": {"aiplat.io/tenant": "servin"}}


def flavor_labels_select_no_pool(o: list[Obj], inv: Inventory) -> None:
    find(o, "ResourceFlavor", "l40s")["spec"]["nodeLabels"] = {"aiplat.io/pool": "l40"}


def flavor_labels_select_two_pools(o: list[Obj], inv: Inventory) -> None:
    find(o, "ResourceFlavor", "l40s")["spec"]["nodeLabels"] = {
        "topology.kubernetes.io/zone": "zone-a"}


def flavor_missing_pool_toleration(o: list[Obj], inv: Inventory) -> None:
    del find(o, "ResourceFlavor", "h100")["spec"]["tolerations"]


def nominal_quota_exceeds_pool_gpus(o: list[Obj], inv: Inventory) -> None:
    _cq_gpu(o, "research")["nominalQuota"] = 44  # 44 + 8 > 6 nodes × 8 GPUs


def borrowing_limit_beyond_cohort(o: list[Obj], inv: Inventory) -> None:
    _cq_gpu(o, "batch", "l40s", "gpu-l40s-48gb")["borrowingLimit"] = "24"  # serving lends 16


def resourcequota_below_clusterqueue(o: list[Obj], inv: Inventory) -> None:
    find(o, "ResourceQuota", "aiplat-quota", "serving")["spec"]["hard"][
        "requests.nvidia.com/gpu"] = 4  # the ClusterQueue admits 8 on h100


def deviceclass_selector_matches_no_device(o: list[Obj], inv: Inventory) -> None:
    dc = find(o, "DeviceClass", "gpu-l40s-48gb")
    dc["spec"]["selectors"][0]["cel"]["expression"] = dc["spec"]["selectors"][0]["cel"][
        "expression"].replace("quantity('46068Mi')", "quantity('80Gi')")


def deviceclass_selector_needs_newer_driver(o: list[Obj], inv: Inventory) -> None:
    dc = find(o, "DeviceClass", "gpu-l40s-48gb")
    dc["spec"]["selectors"][0]["cel"]["expression"] = dc["spec"]["selectors"][0]["cel"][
        "expression"].replace("semver('580.95.5')", "semver('590.0.0')")


def deviceclass_selector_reads_missing_attribute(o: list[Obj], inv: Inventory) -> None:
    find(o, "DeviceClass", "gpu-l40s-48gb")["spec"]["selectors"][0]["cel"]["expression"] = (
        "device.attributes['gpu.nvidia.com'].cliqueID == 'nvl72-0'")


def claim_template_names_missing_deviceclass(o: list[Obj], inv: Inventory) -> None:
    find(o, "ResourceClaimTemplate", "l40s-gpu-1", "serving")["spec"]["spec"]["devices"][
        "requests"][0]["exactly"]["deviceClassName"] = "gpu.nvidia.com"


def claim_constraint_on_unpublished_attribute(o: list[Obj], inv: Inventory) -> None:
    find(o, "ResourceClaimTemplate", "l40s-gpu-pair", "serving")["spec"]["spec"]["devices"][
        "constraints"][0]["matchAttribute"] = "gpu.nvidia.com/nvlinkDomain"


def topology_level_not_a_node_label(o: list[Obj], inv: Inventory) -> None:
    find(o, "Topology", "h100")["spec"]["levels"][1]["nodeLabel"] = "cloud.example.com/rack"


def flavor_names_missing_topology(o: list[Obj], inv: Inventory) -> None:
    find(o, "ResourceFlavor", "h100")["spec"]["topologyName"] = "default"


def networkpolicy_blocks_dns(o: list[Obj], inv: Inventory) -> None:
    o.remove(find(o, "NetworkPolicy", "allow-dns", "batch"))


def networkpolicy_blocks_model_store(o: list[Obj], inv: Inventory) -> None:
    np = find(o, "NetworkPolicy", "allow-model-store", "research")
    np["spec"]["egress"][0]["to"] = [t for t in np["spec"]["egress"][0]["to"]
                                     if "ipBlock" not in t]


def role_with_wildcard_verbs(o: list[Obj], inv: Inventory) -> None:
    find(o, "Role", "aiplat-user", "batch")["rules"][0]["verbs"] = ["*"]


def role_grants_bind_and_escalate(o: list[Obj], inv: Inventory) -> None:
    find(o, "Role", "aiplat-admin", "research")["rules"].append(
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
         "verbs": ["bind", "escalate"]})


def role_writes_rolebindings(o: list[Obj], inv: Inventory) -> None:
    find(o, "Role", "aiplat-admin", "serving")["rules"].append(
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"],
         "verbs": ["create"]})


def role_reads_secrets_without_grant(o: list[Obj], inv: Inventory) -> None:
    find(o, "Role", "aiplat-user", "serving")["rules"].append(
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]})


def job_names_missing_localqueue(o: list[Obj], inv: Inventory) -> None:
    find(o, "Job", "nightly-eval", "batch")["metadata"]["labels"][
        "kueue.x-k8s.io/queue-name"] = "default"


def job_names_missing_priority_class(o: list[Obj], inv: Inventory) -> None:
    find(o, "Job", "nightly-eval", "batch")["metadata"]["labels"][
        "kueue.x-k8s.io/priority-class"] = "low"


def job_not_restricted_compliant(o: list[Obj], inv: Inventory) -> None:
    job = find(o, "Job", "nightly-eval", "batch")
    del job["spec"]["template"]["spec"]["containers"][0]["securityContext"]["runAsNonRoot"]


def agent_namespace_too_strict_for_hostpath(o: list[Obj], inv: Inventory) -> None:
    find(o, "Namespace", "aiplat-system")["metadata"]["labels"][
        "pod-security.kubernetes.io/enforce"] = "baseline"


# --- what the live cluster refused (aiplat.kube.lint.rules.admission) --------------------

def limitrange_default_below_request(o: list[Obj], inv: Inventory) -> None:
    # The original LimitRange: default memory 4Gi under a 2048Gi max; a user Job that
    # requests more and sets no limit is refused by the API server.
    find(o, "LimitRange", "aiplat-defaults", "research")["spec"]["limits"][0]["default"] = {
        "memory": "4Gi"}
    job = yaml.safe_load(yaml.safe_dump(find(o, "Job", "assistant-finetune", "research")))
    job["metadata"]["name"] = "user-job"
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "8", "memory": "64Gi"}}
    o.append(job)


def deviceclass_memory_marketed_size(o: list[Obj], inv: Inventory) -> None:
    # The original selector: 45Gi, above the 46068Mi an L40S reports.
    dc = find(o, "DeviceClass", "gpu-l40s-48gb")
    dc["spec"]["selectors"][0]["cel"]["expression"] = dc["spec"]["selectors"][0]["cel"][
        "expression"].replace("quantity('46068Mi')", "quantity('45Gi')")


def kueue_config_without_mappings(o: list[Obj], inv: Inventory) -> None:
    cm = find(o, "ConfigMap", "kueue-manager-config", "kueue-system")
    cfg = yaml.safe_load(cm["data"]["controller_manager_config.yaml"])
    del cfg["resources"]
    cm["data"]["controller_manager_config.yaml"] = yaml.safe_dump(cfg)


def claim_template_first_available(o: list[Obj], inv: Inventory) -> None:
    t = find(o, "ResourceClaimTemplate", "l40s-gpu-1", "serving")
    req = t["spec"]["spec"]["devices"]["requests"][0]
    t["spec"]["spec"]["devices"]["requests"][0] = {"name": req["name"], "firstAvailable": [
        {"name": "l40s", **req["exactly"]}]}


def resourcequota_without_deviceclass(o: list[Obj], inv: Inventory) -> None:
    del find(o, "ResourceQuota", "aiplat-quota", "batch")["spec"]["hard"][
        "gpu-l40s-48gb.deviceclass.resource.k8s.io/devices"]


def dra_pool_runs_device_plugin(o: list[Obj], inv: Inventory) -> None:
    pool = next(p for p in inv.pools if p.name == "l40s")
    del pool.labels["nvidia.com/gpu.deploy.device-plugin"]


def tas_on_autoscaled_pool(o: list[Obj], inv: Inventory) -> None:
    find(o, "ResourceFlavor", "l40s")["spec"]["topologyName"] = "h100"
    # as the renderer would annotate it
    find(o, "Job", "nightly-eval")["spec"]["template"]["metadata"]["annotations"] = {
        "kueue.x-k8s.io/podset-preferred-topology": "topology.aiplat.io/block"}


def job_without_restart_policy(o: list[Obj], inv: Inventory) -> None:
    del find(o, "Job", "nightly-eval", "batch")["spec"]["template"]["spec"]["restartPolicy"]


def queued_job_rendered_suspended(o: list[Obj], inv: Inventory) -> None:
    find(o, "Job", "nightly-eval", "batch")["spec"]["suspend"] = True


def single_pod_on_tas_flavor_without_topology(o: list[Obj], inv: Inventory) -> None:
    # serving's ClusterQueue mixes h100 (a Topology) and l40s (none): no implied TAS there.
    del find(o, "Deployment", "assistant", "serving")["spec"]["template"]["metadata"][
        "annotations"]


SEEDED: list[tuple[Callable[[list[Obj], Inventory], None], str, str]] = [
    (limitrange_default_below_request, "limitrange-admits", "Job/research/user-job"),
    (limitrange_default_below_request, "limitrange-admits",
     "LimitRange/research/aiplat-defaults"),
    (deviceclass_memory_marketed_size, "deviceclass-matches", "DeviceClass/gpu-l40s-48gb"),
    (kueue_config_without_mappings, "kueue-dra-mapping", "Deployment/serving/docs-search"),
    (kueue_config_without_mappings, "kueue-dra-mapping", "Job/batch/nightly-eval"),
    (claim_template_first_available, "kueue-dra-mapping", "Deployment/serving/docs-search"),
    (resourcequota_without_deviceclass, "resourcequota-dra", "ResourceQuota/batch"),
    (dra_pool_runs_device_plugin, "dra-device-plugin", "Pool/l40s"),
    (tas_on_autoscaled_pool, "tas-autoscaled", "ResourceFlavor/l40s"),
    (job_without_restart_policy, "workload-shape", "Job/batch/nightly-eval"),
    (queued_job_rendered_suspended, "workload-shape", "Job/batch/nightly-eval"),
    (single_pod_on_tas_flavor_without_topology, "workload-shape",
     "Deployment/serving/assistant"),
    (localqueue_names_missing_clusterqueue, "localqueue-clusterqueue", "LocalQueue/batch/batch"),
    (clusterqueue_uses_missing_flavor, "clusterqueue-flavor", "ClusterQueue/batch"),
    (namespace_selector_misses_tenant_namespace, "namespace-selector", "ClusterQueue/serving"),
    (flavor_labels_select_no_pool, "flavor-pool", "ResourceFlavor/l40s"),
    (flavor_labels_select_two_pools, "flavor-pool", "ResourceFlavor/l40s"),
    (flavor_missing_pool_toleration, "flavor-taints", "ResourceFlavor/h100"),
    (nominal_quota_exceeds_pool_gpus, "quota-capacity", "ResourceFlavor/h100"),
    (borrowing_limit_beyond_cohort, "borrowing-cohort", "ClusterQueue/batch"),
    (resourcequota_below_clusterqueue, "resourcequota-admits", "ResourceQuota/serving"),
    (deviceclass_selector_matches_no_device, "deviceclass-matches", "DeviceClass/gpu-l40s-48gb"),
    (deviceclass_selector_needs_newer_driver, "deviceclass-matches",
     "DeviceClass/gpu-l40s-48gb"),
    (deviceclass_selector_reads_missing_attribute, "deviceclass-matches",
     "DeviceClass/gpu-l40s-48gb"),
    (claim_template_names_missing_deviceclass, "claim-deviceclass",
     "ResourceClaimTemplate/serving/l40s-gpu-1"),
    (claim_constraint_on_unpublished_attribute, "claim-constraint",
     "ResourceClaimTemplate/serving/l40s-gpu-pair"),
    (topology_level_not_a_node_label, "topology-levels", "Topology/h100"),
    (flavor_names_missing_topology, "topology-levels", "ResourceFlavor/h100"),
    (networkpolicy_blocks_dns, "netpol-dns", "Namespace/batch"),
    (networkpolicy_blocks_model_store, "netpol-model-store", "Namespace/research"),
    (role_with_wildcard_verbs, "rbac-escalation", "Role/batch/aiplat-user"),
    (role_grants_bind_and_escalate, "rbac-escalation", "Role/research/aiplat-admin"),
    (role_writes_rolebindings, "rbac-escalation", "Role/serving/aiplat-admin"),
    (role_reads_secrets_without_grant, "rbac-escalation", "Role/serving/aiplat-user"),
    (job_names_missing_localqueue, "workload-queue", "Job/batch/nightly-eval"),
    (job_names_missing_priority_class, "workload-queue", "Job/batch/nightly-eval"),
    (job_not_restricted_compliant, "pod-security", "Job/batch/nightly-eval"),
    (agent_namespace_too_strict_for_hostpath, "pod-security",
     "DaemonSet/aiplat-system/aiplat-node-agent"),
]


@pytest.mark.parametrize(("seed", "rule", "obj"), SEEDED, ids=[s[0].__name__ for s in SEEDED])
def test_seeded_misconfiguration_is_found(
        seed: Callable[[list[Obj], Inventory], None], rule: str, obj: str) -> None:
    objs, inv = clean()
    seed(objs, inv)
    findings = lint(objs, inv)
    assert findings, "nothing found"
    hits = [f for f in findings if f.source == rule and f.subject == obj]
    assert hits, [(f.source, f.subject, f.message) for f in findings]
    assert all(h.message and h.fix for h in hits)
    # A seed breaks one thing: every finding belongs to the seeded rule (or its direct
    # consequence on the same object, or the same defect seen from another object).
    assert {f.source for f in findings} <= {rule, "quota-capacity", "resourcequota-admits",
                                          "borrowing-cohort", "resourcequota-dra"} | {rule} \
        | ALSO.get(seed.__name__, set())


# The agent's namespace is a system namespace: too strict a level breaks its components.
ALSO = {"agent_namespace_too_strict_for_hostpath": {"system-namespace-policy"},
        # the pods that name the template now ask for a class Kueue has no mapping for
        "claim_template_names_missing_deviceclass": {"kueue-dra-mapping"}}


def test_a_topology_only_queue_needs_no_topology_request() -> None:
    """research's ClusterQueue has only the h100 flavor: Kueue implies TAS there."""
    objs, inv = clean()
    del find(objs, "Job", "assistant-finetune", "research")["spec"]["template"]["metadata"][
        "annotations"]
    assert lint(objs, inv) == []


def test_secrets_granted_by_spec_are_not_flagged() -> None:
    def grant(data: Obj) -> None:
        data["tenants"][1]["secretsAccess"] = True
    r = render(platform_from(grant), load_catalog())
    assert any("secrets" in rule["resources"] for o in r.objects() if o["kind"] == "Role"
               and o["metadata"]["namespace"] == "serving" for rule in o["rules"])
    assert lint(r.objects(), r.inventory) == []


def test_mig_pool_capacity_counts_instances() -> None:
    def mig(data: Obj) -> None:
        data["pools"][0]["sharing"] = {"strategy": "mig", "migLayout": ["3g.40gb", "3g.40gb"]}
    r = render(platform_from(mig), load_catalog())
    # 48 GPUs × 2 instances = 96 MIG slices; the 48 units of quota fit. What does not fit
    # is a render defect workload-quota shows: the pre-training JobSet's 32 slices × 12 CPU
    # (384) exceed research's h100 CPU quota (272 + 27 borrowing), so Kueue never admits it.
    findings = lint(r.objects(), r.inventory)
    assert {(f.source, f.subject) for f in findings} == {
        ("workload-quota", "JobSet/research/domain-pretrain")}
    assert {f.message.split(" in all")[0] for f in findings} == {
        "its pods ask for 384 cpu", "its pods ask for 7200Gi memory"}

    def too_much(data: Obj) -> None:
        mig(data)
        data["tenants"][0]["quota"]["h100"]["gpus"] = 100
    r = render(platform_from(too_much), load_catalog())
    assert "quota-capacity" in {f.source for f in lint(r.objects(), r.inventory)}


def test_time_slicing_capacity_counts_replicas() -> None:
    def ts(data: Obj) -> None:
        data["pools"][1]["sharing"] = {"strategy": "time-slicing", "replicas": 2}
        data["pools"][1]["gpuResources"] = "device-plugin"  # replicas are device-plugin units
        data["tenants"][2]["quota"]["l40s"]["gpus"] = 32  # 24 GPUs × 2 replicas = 48 ≥ 16+32
    r = render(platform_from(ts), load_catalog())
    assert [f.source for f in lint(r.objects(), r.inventory)] == []
