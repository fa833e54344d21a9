"""Lint's severity matches consequence on upstream files (issue #40): an error only where the
API server, Kueue or the kubelet would refuse or never run the object. On Kueue's own site
examples, NVIDIA's DRA demos and the Kubernetes website's policies, lint raised errors for
site policy (no default-deny NetworkPolicy), for what an empty inventory cannot know (a
flavor "selects no pool", a Topology level "no node carries", a DeviceClass "matches no
device"), for what the cluster brings and the tree need not (the DRA driver's DeviceClass, a
LocalQueue applied from another file), for a JobSet's restartPolicy its webhook defaults, and
read allow-all policies (``egress: [{}]``, ``ingress: [{}]``) as a fence.
Upstream files and their provenance: tests/data/upstream/*/PROVENANCE.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from aiplat.kube.inventory import Inventory
from aiplat.kube.lint import lint

UP = Path(__file__).parent.parent / "data" / "upstream"
KUEUE = UP / "kueue" / "v0.19.2"
DRA = UP / "k8s-dra-driver-gpu" / "lint"
WEB = UP / "kubernetes-website"
Obj = dict[str, Any]


def docs(path: Path, ns: str | None = None) -> list[Obj]:
    """The file's objects; ``ns`` for those without one (as kubectl -n would place them)."""
    out = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for d in out:
        if ns and d["kind"] not in ("ClusterQueue", "ResourceFlavor", "Topology",
                                    "Namespace", "DeviceClass"):
            d["metadata"].setdefault("namespace", ns)
    return out


def run(objs: list[Obj], inventory: Obj | None = None) -> list[tuple[str, str, str, str]]:
    inv = Inventory.from_dict(inventory or {"pools": []})
    return [(f.severity, f.source, f.subject, f.message) for f in lint(objs, inv)]


def errors(got: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    return [g for g in got if g[0] == "error"]


def test_kueue_quick_start_lints_without_an_error() -> None:
    """Kueue's quick start (setup and job) on a cluster lint knows nothing of: it runs."""
    got = run(docs(KUEUE / "quick-start-setup.yaml") + docs(KUEUE / "sample-jobset.yaml",
                                                            "default"))
    assert errors(got) == [], got
    # The tenant fence is site policy here (no aiplat tenant asked for it): a warning.
    assert ("warning", "netpol-default-deny") in {(s, r) for s, r, *_ in got}


def test_topology_levels_are_unknown_without_pools() -> None:
    got = run(docs(KUEUE / "sample-queues.yaml"))
    assert not [g for g in got if g[1] in ("topology-levels", "flavor-pool")], got


def test_hostname_is_a_level_every_node_has() -> None:
    pools = {"pools": [{"name": "tas", "nodes": 2, "labels": {
        "cloud.provider.com/node-group": "tas-group"}, "topologyLabels": [
        "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"]}]}
    got = run(docs(KUEUE / "sample-queues.yaml"), pools)
    assert not [g for g in got if g[1] in ("topology-levels", "flavor-pool")], got


def test_a_flavor_over_several_pools_is_a_warning_and_no_pool_an_error() -> None:
    """Kueue's default-flavor (nodeLabels {}) covers every node: aiplat's one-pool-per-flavor
    layout is a choice, not a refusal. A flavor whose labels no node has is never placed."""
    pools = {"pools": [{"name": "a", "nodes": 1}, {"name": "b", "nodes": 1}]}
    got = run(docs(KUEUE / "quick-start-setup.yaml"), pools)
    assert [(s, r) for s, r, *_ in got if r == "flavor-pool"] == [("warning", "flavor-pool")]
    taints = run(docs(KUEUE / "resource-flavor-taints.yaml"), pools)
    assert [(s, r) for s, r, *_ in taints if r == "flavor-pool"] == [("error", "flavor-pool")]


def test_jobset_restart_policy_is_defaulted_by_its_webhook() -> None:
    """JobSet's webhook sets OnFailure on a template without one (pkg/webhooks/
    jobset_webhook.go Default); only an explicit Always is refused."""
    js = docs(KUEUE / "sample-jobset.yaml", "default")
    assert not [g for g in run(js) if g[1] == "workload-shape"]
    js[0]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "restartPolicy"] = "Always"
    assert [g[0] for g in run(js) if g[1] == "workload-shape"] == ["error"]


def test_a_deviceclass_the_driver_installs_is_not_an_error() -> None:
    """NVIDIA's DRA demo names gpu.nvidia.com, which the driver's Helm chart installs."""
    for f in ("gpu-test1-v1.yaml", "gpu-test1-v1beta1.yaml"):
        got = run(docs(DRA / f))
        assert errors(got) == [], (f, got)
        assert [s for s, r, *_ in got if r == "claim-deviceclass"] == ["warning", "warning"] \
            or [s for s, r, *_ in got if r == "claim-deviceclass"] == ["warning"], (f, got)


def test_a_missing_deviceclass_is_an_error_where_the_tree_brings_them() -> None:
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
           "metadata": {"name": "gpu.example.com"}, "spec": {}}
    got = run([*docs(DRA / "gpu-test1-v1beta1.yaml"), cls])
    assert ("error", "claim-deviceclass") in {(s, r) for s, r, *_ in got}, got


def test_a_queue_the_tree_does_not_define_is_a_warning() -> None:
    """Kueue's DRA job example, linted without its queues file: the LocalQueue may be the
    cluster's. With the queues file but another name it is an error."""
    job = docs(KUEUE / "sample-dra-rct-job.yaml", "default")
    alone = run(job)
    assert [s for s, r, *_ in alone if r == "workload-queue"] == ["warning"], alone
    queues = docs(KUEUE / "sample-dra-queues.yaml")
    for o in queues:
        if o["kind"] == "LocalQueue":
            o["metadata"]["name"] = "other-queue"
    assert [s for s, r, *_ in run(job + queues) if r == "workload-queue"] == ["error"]


def test_allow_all_egress_lets_dns_and_the_model_store_through() -> None:
    deny = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "default-deny", "namespace": "default"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}
    inv = {"pools": [], "modelStoreCIDRs": ["10.20.0.0/24"]}
    fenced = run([deny], inv)
    assert {r for _s, r, *_ in fenced} >= {"netpol-dns", "netpol-model-store"}
    opened = run([deny, *docs(WEB / "network-policy-allow-all-egress.yaml", "default")], inv)
    assert not [g for g in opened if g[1] in ("netpol-dns", "netpol-model-store")], opened


def test_allow_all_ingress_is_no_fence() -> None:
    setup = docs(KUEUE / "quick-start-setup.yaml")
    allow = docs(WEB / "network-policy-allow-all-ingress.yaml", "default")
    got = run(setup + allow)
    hits = [g for g in got if g[1] == "netpol-default-deny"]
    assert hits and "Ingress" in hits[0][3], got


def test_an_unqueued_gpu_job_beside_upstream_queues_is_a_warning() -> None:
    """A namespace is Kueue's tenant because the quick start put a LocalQueue there; a GPU
    Job without queue-name runs (beside the quota): site policy, not a refusal. In an aiplat
    tenant (the spec asks for the quota) it stays an error."""
    job = docs(KUEUE / "sample-job-partial-admission.yaml")[0]
    del job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {
        "nvidia.com/gpu": 1}
    got = run([*docs(KUEUE / "quick-start-setup.yaml"), job])
    assert [s for s, r, *_ in got if r == "workload-unqueued"] == ["warning"], got
    tenant = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "default", "labels": {"aiplat.io/tenant": "default"}}}
    got = run([*docs(KUEUE / "quick-start-setup.yaml"), job, tenant])
    assert [s for s, r, *_ in got if r == "workload-unqueued"] == ["error"], got
