"""The built-in example proven on a real control plane: ``aiplat lab cluster up`` (upstream
etcd, kube-apiserver, kube-controller-manager, kube-scheduler, Kueue, JobSet, kwok nodes with
the NVIDIA DRA driver's ResourceSlices), ``aiplat kube apply`` of the tree ``aiplat plan``
writes, and the workloads' fate asserted on live objects: admitted by the real Kueue on the
flavor the plan intends, pods scheduled by the real scheduler onto the pool's nodes, DRA
claims allocated by the real CEL, the rest pending for the reason Kueue gives.

What kwok nodes cannot show: the kubelet side (the DRA driver's NodePrepareResources, CDI
injection, device plugin allocation), container start-up, real GPU health. Pods are marked
Running once bound.

Needs the components built (``aiplat lab cluster build``; scripts/test.sh does it). Fails,
not skips, in CI.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import need

from aiplat.cluster.assets import locate
from aiplat.errors import InputError
from aiplat.kube.apply import Api

pytestmark = pytest.mark.integration
NAME = "itest"
KUEUE = "kueue.x-k8s.io/v1beta2"
Obj = dict[str, Any]



def _need_components() -> None:
    """Skip without the built components locally; fail in CI, where they must run."""
    try:
        locate()
    except InputError as e:
        need(str(e))


@dataclass
class Cluster:
    env: dict[str, str]
    kubeconfig: str
    api: Api
    tree: Path
    up_seconds: float

    def aiplat(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        return _aiplat(self.env, *args, check=check)


def _aiplat(env: dict[str, str], *args: str, check: bool = False
            ) -> subprocess.CompletedProcess[str]:
    cp = subprocess.run([sys.executable, "-m", "aiplat.cli.main", *args], env=env,
                        capture_output=True, text=True, timeout=600, check=False)
    if check and cp.returncode != 0:
        raise AssertionError(f"aiplat {' '.join(args)} exit {cp.returncode}:\n"
                             f"{cp.stdout}\n{cp.stderr}")
    return cp


def _eventually(what: str, probe: Callable[[], Any], timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"{what}: not true within {timeout:.0f} s (last: {last!r})")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    _need_components()
    tmp = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "AIPLAT_CLUSTER_DIR": str(tmp / "runs"), "NO_COLOR": "1"}
    _aiplat(env, "plan", "-d", str(tmp / "plan"), check=True)
    t0 = time.monotonic()
    up = _aiplat(env, "lab", "cluster", "up", "--name", NAME, check=True)
    up_seconds = time.monotonic() - t0
    kubeconfig = up.stdout.strip().removeprefix("export KUBECONFIG=")
    c = Cluster({**env, "KUBECONFIG": kubeconfig}, kubeconfig,
                Api.from_kubeconfig(kubeconfig), tmp / "plan" / "kube", up_seconds)
    print(f"\nlab cluster up in {up_seconds:.1f} s", file=sys.stderr)
    try:
        yield c
    finally:
        c.api.close()
        state = json.loads((tmp / "runs" / NAME / "state.json").read_text())
        down = _aiplat(env, "lab", "cluster", "down", "--name", NAME)
        assert down.returncode == 0, down.stderr
        for p in state["procs"]:  # down stopped every process up started
            assert not Path(f"/proc/{p['pid']}").exists() or _zombie(p["pid"]), p
        assert not (tmp / "runs" / NAME).exists()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def _workloads(api: Api) -> dict[str, Obj]:
    """Kueue Workloads by the name of the Job/JobSet/Deployment that owns them."""
    out = {}
    for w in api.objects(KUEUE, "Workload"):
        if not w["metadata"].get("ownerReferences"):
            continue  # its job was deleted; the garbage collector has not caught up
        owner = w["metadata"]["ownerReferences"][0]
        name = owner["name"]
        if owner["kind"] == "Pod":  # a Deployment's pod: <deployment>-<hash>-<id>
            name = name.rsplit("-", 2)[0]
        out[name] = w
    return out


def _cond(o: Obj, kind: str) -> Obj | None:
    return next((c for c in (o.get("status") or {}).get("conditions") or []
                 if c["type"] == kind), None)


def _admitted(w: Obj) -> bool:
    c = _cond(w, "Admitted")
    return c is not None and c["status"] == "True"


@pytest.fixture(scope="module")
def applied(cluster: Cluster) -> list[Obj]:
    cp = cluster.aiplat("kube", "apply", str(cluster.tree), str(cluster.tree / "workloads"),
                        "-o", "json")  # the examples are opt-in
    outcomes = json.loads(cp.stdout)
    assert cp.returncode == 0, [o for o in outcomes if o["action"].endswith("refused")]
    return list(outcomes)


EXPECT_ADMITTED = {  # workload -> pool (the plan's flavor)
    "domain-pretrain": "h100", "assistant-finetune": "h100", "assistant": "h100",
    "docs-search": "l40s", "docs-search-embed": "l40s"}
DOCS_SEARCH_PODS = 12  # 11 one-GPU replicas and the query encoder (the plan's replica groups)
L40S_GPUS = 8  # the autoscaled pool's 2 nodes at its minimum


def test_cluster_is_up_with_the_pools_nodes(cluster: Cluster) -> None:
    st = cluster.aiplat("lab", "cluster", "status", "--name", NAME, "-o", "json", check=True)
    status = json.loads(st.stdout)
    assert {c["name"] for c in status["components"]} == {
        "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kueue",
        "jobset", "kwok"}
    assert all(c["alive"] for c in status["components"])
    assert status["kueue"]["webhook"] is True
    nodes = {n["metadata"]["name"]: n for n in cluster.api.objects("v1", "Node")}
    # 6 fixed h100 nodes, the autoscaled l40s pool at its minimum of 2, 2 system nodes.
    assert sorted(nodes) == [*(f"h100-{i}" for i in range(6)), "l40s-0", "l40s-1",
                             "system-0", "system-1"]
    h = nodes["h100-3"]
    assert h["metadata"]["labels"]["aiplat.io/pool"] == "h100"
    assert h["metadata"]["labels"]["topology.aiplat.io/rack"] == "h100-rack-1"
    assert h["metadata"]["labels"]["topology.aiplat.io/block"] == "h100-block-0"
    assert h["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert h["spec"]["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    # The local static provisioner's PVs for the example's local-nvme class, one per NVMe disk
    # (8 on an HGX H100 node, 2 on an L40S node).
    pvs = {p["metadata"]["name"]: p for p in cluster.api.objects("v1", "PersistentVolume")}
    assert {f"fast-scratch-{n}-{d}" for n in nodes if not n.startswith("system-")
            for d in range(8 if n.startswith("h100") else 2)} <= set(pvs)
    assert pvs["fast-scratch-h100-0-0"]["spec"]["nodeAffinity"]["required"][
        "nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == ["h100-0"]
    lab = nodes["l40s-0"]["metadata"]["labels"]
    assert "nvidia.com/gpu" not in nodes["l40s-0"]["status"]["allocatable"]  # DRA pool
    assert lab["nvidia.com/gpu.deploy.device-plugin"] == "false"
    assert cluster.api.version().startswith("v1.36.")


def test_resource_slices_are_what_the_dra_driver_publishes(cluster: Cluster) -> None:
    slices = {s["spec"]["nodeName"]: s for s in cluster.api.objects("resource.k8s.io/v1",
                                                                  "ResourceSlice")}
    assert sorted(slices) == ["l40s-0", "l40s-1"]
    s = slices["l40s-0"]["spec"]
    assert s["driver"] == "gpu.nvidia.com"
    assert s["pool"] == {"name": "l40s-0", "generation": 1, "resourceSliceCount": 1}
    dev = {d["name"]: d for d in s["devices"]}
    assert sorted(dev) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    a = {k: next(iter(v.values())) for k, v in dev["gpu-0"]["attributes"].items()}
    assert a["type"] == "gpu" and a["productName"] == "NVIDIA L40S"
    assert a["architecture"] == "Ada Lovelace" and a["cudaComputeCapability"] == "8.9.0"
    assert a["driverVersion"] == "580.95.5" and a["cudaDriverVersion"] == "13.0.0"
    assert a["resource.kubernetes.io/pciBusID"].startswith("0000:")
    assert a["uuid"].startswith("GPU-")
    assert dev["gpu-0"]["capacity"]["memory"]["value"] == "46068Mi"


def _pod_with_claim(name: str, ns: str, device_class: str) -> list[Obj]:
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": name, "namespace": ns},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": device_class, "count": 1}}]}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
           "spec": {"containers": [{"name": "c", "image": "busybox",
                                    "resources": {"claims": [{"name": "gpu"}]}}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}}
    return [claim, pod]


def test_deviceclass_selectors_against_the_real_scheduler(cluster: Cluster) -> None:
    """The rendered L40S class gets a device; the original one (memory >= 45Gi, while the
    driver publishes NVML's 46068Mi) matches no real L40S. Runs before the tree is applied,
    while the devices are free."""
    api = cluster.api
    rendered = next(d for d in yaml.safe_load_all((cluster.tree / "cluster" /
                                                   "deviceclasses.yaml").read_text()))
    expr = rendered["spec"]["selectors"][0]["cel"]["expression"]
    original = copy.deepcopy(rendered)
    original["metadata"] = {"name": "l40s-45gi"}
    original["spec"]["selectors"][0]["cel"]["expression"] = expr.replace(
        "quantity('46068Mi')", "quantity('45Gi')")
    assert original["spec"]["selectors"][0]["cel"]["expression"] != expr
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "dra-check"}}
    api.apply_all([ns, rendered, original])
    _eventually("default ServiceAccount", lambda: api.exists("v1", "ServiceAccount",
                                                             "default", "dra-check"))
    objs = _pod_with_claim("good", "dra-check", "gpu-l40s-48gb") + _pod_with_claim(
        "bad", "dra-check", "l40s-45gi")
    for o in objs:
        api.create(o)
    good = _eventually("the rendered class's pod is scheduled", lambda: (p := api.get(
        objs[1])) and p["spec"].get("nodeName") and p)
    assert good["spec"]["nodeName"].startswith("l40s-")
    bad = _eventually("the original class's pod is unschedulable", lambda: (c := _cond(
        api.get(objs[3]) or {}, "PodScheduled")) and c["status"] == "False" and c)
    assert "cannot allocate all claims" in bad["message"], bad
    api.delete(ns)
    api.delete(original)
    _eventually("the check's claims are gone", lambda: not api.objects(
        "resource.k8s.io/v1", "ResourceClaim", "dra-check"))


def test_example_tree_applies_cleanly_and_again_changes_nothing(
        cluster: Cluster, applied: list[Obj]) -> None:
    kinds = {o["object"].split()[0] for o in applied}
    assert {"ClusterQueue", "LimitRange", "ResourceQuota", "DeviceClass",
            "ResourceClaimTemplate", "JobSet", "Job", "Deployment", "ConfigMap",
            "Gateway", "InferencePool", "VolumeSnapshotClass"} <= kinds
    assert not [o for o in applied if o["action"] not in (
        "created", "configured", "unchanged", "pods admitted")]
    again = cluster.aiplat("kube", "apply", str(cluster.tree), str(cluster.tree / "workloads"),
                           "--diff", "-o", "json")
    assert again.returncode == 0
    # ("pods admitted": a probe's note, e.g. a pod that fits the quota others now use)
    changed = [o for o in json.loads(again.stdout)
               if o["action"] not in ("unchanged", "pods admitted")]
    assert changed == [], "\n".join(o.get("diff", "") for o in changed)


def test_workloads_admitted_on_the_planned_flavor(cluster: Cluster, applied: list[Obj]
                                                  ) -> None:
    wls = _eventually("every workload has a Kueue Workload, the fitting ones admitted",
                      lambda: (w := _workloads(cluster.api)) and len(w) == 6 and all(
                          _admitted(w[n]) for n in EXPECT_ADMITTED) and w)
    for name, pool in EXPECT_ADMITTED.items():
        for ps in wls[name]["status"]["admission"]["podSetAssignments"]:
            assert set(ps["flavors"].values()) == {pool}, (name, ps)
    # docs-search's pods are charged for their DRA GPU under the mapped DeviceClass name.
    docs = wls["docs-search"]["status"]["admission"]["podSetAssignments"][0]
    assert docs["resourceUsage"]["gpu-l40s-48gb"] == "1"


def _parallelism(tree: Path, name: str) -> int:
    """Pods of one workload as the tree renders it (the plan sizes it)."""
    for d in yaml.safe_load_all((tree / "workloads" / "examples.yaml").read_text()):
        if d and d["metadata"]["name"] == name:
            spec = d["spec"]
            if d["kind"] == "JobSet":
                spec = spec["replicatedJobs"][0]["template"]["spec"]
            return int(spec.get("parallelism") or spec.get("replicas") or 1)
    raise AssertionError(f"{name} not in the tree")


def test_pods_scheduled_onto_the_pools_nodes(cluster: Cluster, applied: list[Obj]) -> None:
    pretrain = _parallelism(cluster.tree, "domain-pretrain")
    want = pretrain + _parallelism(cluster.tree, "assistant-finetune") + _parallelism(
        cluster.tree, "assistant") + L40S_GPUS  # docs-search's one-GPU pods fill the l40s

    def running() -> list[Obj]:
        pods = [p for p in cluster.api.objects("v1", "Pod")
                if p["metadata"]["namespace"] in ("research", "serving")]
        ok = [p for p in pods if p["status"].get("phase") == "Running"
              and p["metadata"]["labels"]["app.kubernetes.io/name"] in EXPECT_ADMITTED]
        return ok if len(ok) >= want else []
    pods = _eventually("the admitted workloads' pods run", running)
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"]
             for n in cluster.api.objects("v1", "Node")}
    by_app: dict[str, list[str]] = {}
    for p in pods:
        app = p["metadata"]["labels"]["app.kubernetes.io/name"]
        by_app.setdefault(app, []).append(p["spec"]["nodeName"])
    for app, placed in by_app.items():
        assert {nodes[n]["aiplat.io/pool"] for n in placed} == {EXPECT_ADMITTED[app]}
    # domain-pretrain requires one block (TAS): its whole-node pods share it.
    assert len(by_app["domain-pretrain"]) == pretrain > 1
    assert len({nodes[n]["topology.aiplat.io/block"] for n in by_app["domain-pretrain"]}) == 1
    assert len(set(by_app["domain-pretrain"])) == pretrain


def test_the_endpoint_picker_runs_beside_its_pool(cluster: Cluster, applied: list[Obj]) -> None:
    """The InferencePool's endpoint picker: its Deployment's pod runs (on a system node: it
    asks for no GPU and tolerates no GPU taint), its Service selects it."""
    def epp() -> Obj | None:
        return next((p for p in cluster.api.objects("v1", "Pod", "serving")
                     if p["metadata"]["labels"].get("app.kubernetes.io/name") == "assistant-epp"
                     and p["status"].get("phase") == "Running"), None)
    pod = _eventually("the endpoint picker runs", epp)
    assert pod["spec"]["nodeName"].startswith("system-")
    pool = cluster.api.get({"apiVersion": "inference.networking.k8s.io/v1",
                            "kind": "InferencePool",
                            "metadata": {"name": "assistant", "namespace": "serving"}})
    assert pool is not None
    svc = cluster.api.get({"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": pool["spec"]["endpointPickerRef"]["name"], "namespace": "serving"}})
    assert svc is not None and all(pod["metadata"]["labels"].get(k) == v
                                   for k, v in svc["spec"]["selector"].items())


def test_dra_claims_allocated_to_devices_the_deviceclass_selects(
        cluster: Cluster, applied: list[Obj]) -> None:
    def allocated() -> list[Obj]:
        claims = [c for c in cluster.api.objects("resource.k8s.io/v1", "ResourceClaim")
                  if (c.get("status") or {}).get("allocation")]
        return claims if len(claims) >= L40S_GPUS else []
    claims = _eventually("a docs-search claim allocated per L40S", allocated)
    pods = {p["metadata"]["name"]: p for p in cluster.api.objects("v1", "Pod", "serving")}
    used = 0
    for c in claims:
        results = c["status"]["allocation"]["devices"]["results"]
        owner = c["metadata"]["ownerReferences"][0]["name"]
        node = pods[owner]["spec"]["nodeName"]
        assert {(r["driver"], r["pool"]) for r in results} == {("gpu.nvidia.com", node)}
        assert len(results) == 1 and all(r["request"] == "gpu" for r in results)
        used += len(results)
    # The pods beyond the 8 L40S wait for a node the autoscaler would add: admitted (each
    # pod a Workload of its own), unschedulable.
    waiting = [p for p in pods.values() if p["metadata"]["name"].startswith("docs-search")
               and "-epp-" not in p["metadata"]["name"] and not p["spec"].get("nodeName")]
    assert len(waiting) == DOCS_SEARCH_PODS - L40S_GPUS
    # DRA GPUs are capped by the tenant's ResourceQuota, not uncapped.
    quota = cluster.api.get({"apiVersion": "v1", "kind": "ResourceQuota",
                             "metadata": {"name": "aiplat-quota", "namespace": "serving"}})
    assert quota is not None
    key = "gpu-l40s-48gb.deviceclass.resource.k8s.io/devices"
    assert quota["status"]["hard"][key] == "24" and int(quota["status"]["used"][key]) >= used


def requeue_after_admissions(api: Api, tree: Path, job: str, namespace: str,
                              settled: Callable[[], bool]) -> None:
    """Have Kueue judge ``job`` against the quota in use now. Kueue writes a pending
    workload's message when it tries it and then parks it as inadmissible, not trying it again
    when others are admitted (only when quota is released or a queue changes): with a
    Deployment's pods admitted one per cycle after it, its message tells of fewer of them than
    run. So, once ``settled``, the Job is deleted with its Workload and applied again."""
    _eventually("the other workloads settled", settled)
    doc = next(d for d in yaml.safe_load_all((tree / "workloads" / "examples.yaml").read_text())
               if d and d["kind"] == "Job" and d["metadata"]["name"] == job)
    api.delete(doc, propagation="Background")
    _eventually(f"{job}'s Workload gone", lambda: not any(
        o["name"] == job for w in api.objects(KUEUE, "Workload", namespace)
        for o in w["metadata"].get("ownerReferences") or []))
    api.apply(doc)


def _docs_search_admitted(api: Api) -> bool:
    wls = [w for w in api.objects(KUEUE, "Workload", "serving")
           if w["metadata"]["name"].startswith("pod-docs-search-")]
    return len(wls) == DOCS_SEARCH_PODS and all(_admitted(w) for w in wls)


def test_pending_workload_and_why_pending_agree_with_kueue(cluster: Cluster,
                                                           applied: list[Obj]) -> None:
    requeue_after_admissions(cluster.api, cluster.tree, "nightly-eval", "batch",
                             lambda: _docs_search_admitted(cluster.api))
    wl = _eventually("nightly-eval pending on quota", lambda: (
        w := _workloads(cluster.api).get("nightly-eval")) and (c := _cond(w, "QuotaReserved"))
        and c["status"] == "False" and c)
    assert "insufficient unused quota" in wl["message"] and "flavor l40s" in wl["message"]
    cp = cluster.aiplat("kube", "why-pending", "nightly-eval", "-n", "batch", "--kubeconfig",
                        cluster.kubeconfig, "-o", "json", check=True)
    why = json.loads(cp.stdout)
    assert why["code"] == "QuotaExhausted" and "flavor l40s" in why["reason"]
    # The same shortfall as Kueue's, for the resource why-pending names first.
    res = why["reason"].split(" in flavor")[0]
    ours = re.search(r"(\S+) more needed", why["reason"])
    theirs = re.search(rf"insufficient unused quota for {re.escape(res)} in flavor l40s, "
                       r"(\S+) more needed", wl["message"])
    assert ours and theirs and ours.group(1) == theirs.group(1), (why["reason"], wl["message"])
    assert any(wl["message"] in e for e in why["evidence"])
    # The Deployment's pods without a node: the scheduler could not allocate their claims.
    cp = cluster.aiplat("kube", "why-pending", "docs-search", "-n", "serving", "--kubeconfig",
                        cluster.kubeconfig, "-o", "json", check=True)
    # Its class's devices exist (the selector matches the kwok nodes' slices); what blocks it
    # is that they are held, or too few are free on any one node.
    why = json.loads(cp.stdout)
    assert why["code"] in ("DevicesAllocated", "DevicesSpread"), cp.stdout
    assert why["evidence"][0].startswith("Deployment/serving/docs-search: "), why


def _edit_tree(src: Path, dst: Path, edit: Callable[[Path, list[Obj]], list[Obj]]) -> Path:
    """A copy of the tree with ``edit`` applied to each manifest file, its root kustomization
    listing the opt-in examples (``workloads/``) as ``kube render --with-examples`` does."""
    shutil.copytree(src, dst)
    root = yaml.safe_load((dst / "kustomization.yaml").read_text())
    root["resources"].append("workloads")
    (dst / "kustomization.yaml").write_text(yaml.safe_dump(root))
    for f in dst.rglob("*.yaml"):
        if f.name == "kustomization.yaml" or "nodes" in f.parts:
            continue
        docs = [d for d in yaml.safe_load_all(f.read_text()) if d]
        f.write_text(yaml.safe_dump_all(edit(f, docs), sort_keys=False))
    return dst


def _examples(f: Path) -> bool:
    """The opt-in example workloads (not flux/examples.yaml, Flux's Kustomization of them)."""
    return f.name == "examples.yaml" and f.parent.name == "workloads"


def _user_jobs(docs: list[Obj]) -> list[Obj]:
    """Add Jobs the way users write them: requests, no limits; one small, one big."""
    out = list(docs)
    for name, mem in (("small-job", "2Gi"), ("big-job", "64Gi")):
        job = copy.deepcopy(next(d for d in docs if d.get("kind") == "Job"))
        job["metadata"]["name"] = name
        job["metadata"]["namespace"] = "research"
        c = job["spec"]["template"]["spec"]["containers"][0]
        c["resources"] = {"requests": {"cpu": "8", "memory": mem, "nvidia.com/gpu": "1"},
                          "limits": {"nvidia.com/gpu": "1"}}
        out.append(job)
    return out


def test_dry_run_refuses_the_original_limitrange_with_the_servers_message(
        cluster: Cluster, applied: list[Obj], tmp_path: Path) -> None:
    def original(f: Path, docs: list[Obj]) -> list[Obj]:
        for d in docs:
            if d.get("kind") == "LimitRange":  # the defect: max.cpu without a default cpu limit
                d["spec"]["limits"][0]["default"] = {"memory": "4Gi"}
        return _user_jobs(docs) if _examples(f) else docs

    bad = _edit_tree(cluster.tree, tmp_path / "bad", original)
    cp = cluster.aiplat("kube", "apply", "--dry-run=server", str(bad), "-o", "json")
    assert cp.returncode == 1, cp.stdout
    refused = {o["object"]: o["message"] for o in json.loads(cp.stdout)
               if o["action"] == "pods refused"}
    # In the API server's words: the default memory limit (4Gi) becomes the limit of a
    # container that requests more, and such a pod is invalid.
    assert sorted(refused) == ["Job research/big-job"], refused
    assert "must be less than or equal to memory limit of 4Gi" in \
        refused["Job research/big-job"], refused
    # max.cpu without default.cpu is not refused on 1.36: the API server defaults a missing
    # default limit to the max (SetDefaults_LimitRangeItem), which a dry run shows.
    lr = next(d for d in yaml.safe_load_all((bad / "tenants" / "research" / "quota.yaml")
                                            .read_text()) if d["kind"] == "LimitRange")
    stored = cluster.api.apply(lr, dry_run=True)
    assert stored["spec"]["limits"][0]["default"] == {"cpu": "112", "memory": "4Gi"}
    # The rendered LimitRange admits the same user job (its default limit is the max).
    good = _edit_tree(cluster.tree, tmp_path / "good",
                      lambda f, d: _user_jobs(d) if _examples(f) else d)
    ok = cluster.aiplat("kube", "apply", "--dry-run=server", str(good), "-o", "json")
    assert ok.returncode == 0, [o for o in json.loads(ok.stdout) if "refused" in o["action"]]
    # A dry run leaves nothing behind: no user job, no scratch namespace (being deleted).
    assert cluster.api.get({"apiVersion": "batch/v1", "kind": "Job", "metadata": {
        "name": "small-job", "namespace": "research"}}) is None
    scratch = [n for n in cluster.api.objects("v1", "Namespace")
               if n["metadata"]["name"].startswith("aiplat-dryrun-")]
    assert all(n["status"]["phase"] == "Terminating" for n in scratch)


def test_kueue_refuses_claims_on_an_unmapped_deviceclass(cluster: Cluster,
                                                         applied: list[Obj]) -> None:
    """Why the rendered Configuration maps every DeviceClass: Kueue's own verdict."""
    api = cluster.api
    api.apply({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
               "metadata": {"name": "unmapped-gpu"},
               "spec": {"selectors": [{"cel": {
                   "expression": "device.driver == 'gpu.nvidia.com'"}}]}})
    api.apply({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
               "metadata": {"name": "unmapped", "namespace": "batch"},
               "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                   "deviceClassName": "unmapped-gpu", "count": 1}}]}}}})
    job = next(d for d in yaml.safe_load_all((cluster.tree / "workloads" / "examples.yaml")
                                             .read_text()) if d["metadata"]["name"]
               == "nightly-eval")
    job = copy.deepcopy(job)
    job["metadata"]["name"] = "unmapped-claim"
    job["spec"]["parallelism"] = job["spec"]["completions"] = 1
    job["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = \
        "unmapped"
    api.apply(job)
    wl = _eventually("the unmapped claim's workload is inadmissible", lambda: (
        w := _workloads(api).get("unmapped-claim")) and (c := _cond(w, "QuotaReserved"))
        and c["status"] == "False" and c)
    assert "is not mapped" in wl["message"], wl
    api.delete(job)


def test_lint_rules_agree_with_the_servers_verdict(cluster: Cluster, applied: list[Obj],
                                                   tmp_path: Path) -> None:
    """Each defect the cluster revealed, seeded into a copy of the tree: the live verdict
    (API server or Kueue) and `aiplat kube lint` name the same object."""
    def seed(f: Path, docs: list[Obj]) -> list[Obj]:
        if not _examples(f):
            return docs
        base = next(d for d in docs if d["metadata"]["name"] == "assistant-finetune")
        no_restart = copy.deepcopy(base)
        no_restart["metadata"]["name"] = "no-restart-policy"
        del no_restart["spec"]["template"]["spec"]["restartPolicy"]
        # In serving, whose ClusterQueue mixes h100 (a Topology) and l40s (none), Kueue
        # implies no topology request; in research (h100 only) it would.
        no_topology = copy.deepcopy(base)
        no_topology["metadata"] |= {"name": "no-topology", "namespace": "serving"}
        no_topology["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "serving"
        no_topology["spec"]["template"]["metadata"].pop("annotations")
        implied = copy.deepcopy(base)
        implied["metadata"]["name"] = "implied-topology"
        implied["spec"]["template"]["metadata"].pop("annotations")
        return [no_restart, no_topology, implied]

    tree = _edit_tree(cluster.tree, tmp_path / "seeded", seed)
    # The example fills the h100 pool; the pre-training gang (its placement proven above)
    # makes room for the seeded whole-node jobs.
    cluster.api.delete({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                        "metadata": {"name": "domain-pretrain", "namespace": "research"}})
    lint = cluster.aiplat("kube", "lint", str(tree), "-o", "json")
    flagged = {(f["source"], f["subject"]) for f in json.loads(lint.stdout)}
    assert ("workload-shape", "Job/research/no-restart-policy") in flagged
    assert ("workload-shape", "Job/serving/no-topology") in flagged
    assert not [f for f in flagged if f[1] == "Job/research/implied-topology"]
    cp = cluster.aiplat("kube", "apply", str(tree / "workloads"), "-o", "json")
    refused = {o["object"]: o["message"] for o in json.loads(cp.stdout)
               if o["action"] == "refused"}
    assert "restartPolicy: Required value" in refused["Job research/no-restart-policy"]
    wl = _eventually("Kueue refuses the podset without a topology request", lambda: (
        w := _workloads(cluster.api).get("no-topology")) and (c := _cond(w, "QuotaReserved"))
        and c["status"] == "False" and c)
    assert "supports only TopologyAwareScheduling" in wl["message"], wl
    implied = _eventually("research's TAS-only queue implies a topology", lambda: (
        w := _workloads(cluster.api).get("implied-topology")) and w.get("status", {}).get(
        "admission") and w)
    assert implied["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    for name_, ns in (("no-topology", "serving"), ("implied-topology", "research")):
        cluster.api.delete({"apiVersion": "batch/v1", "kind": "Job",
                            "metadata": {"name": name_, "namespace": ns}})


def test_reapplying_a_suspended_job_conflicts_with_kueue(cluster: Cluster,
                                                         applied: list[Obj]) -> None:
    """Why the tree renders no suspend: true. Kueue owns spec.suspend once it admits a job;
    applying suspend: true again is a conflict the server reports (and with
    --force-conflicts it would stop the running job)."""
    job = next(d for d in yaml.safe_load_all((cluster.tree / "workloads" / "examples.yaml")
                                             .read_text())
               if d["metadata"]["name"] == "assistant-finetune")
    _eventually("assistant-finetune running", lambda: (j := cluster.api.get(job)) and
                (j["spec"].get("suspend") is False) and j)
    job = copy.deepcopy(job)
    job["spec"]["suspend"] = True
    with pytest.raises(Exception, match="conflict"):
        cluster.api.apply(job, force=False)
    assert cluster.api.get(job)["spec"]["suspend"] is False  # type: ignore[index]


def test_down_after_a_killed_up_stops_everything_it_started(tmp_path: Path) -> None:
    """``up`` killed half-way (kill -9): the state file lists what it had started, and
    ``down`` stops all of it and removes the folder."""
    _need_components()
    env = {**os.environ, "AIPLAT_CLUSTER_DIR": str(tmp_path / "runs")}
    state_file = tmp_path / "runs" / "crash" / "state.json"
    up = subprocess.Popen([sys.executable, "-m", "aiplat.cli.main", "lab", "cluster", "up",
                           "--name", "crash"], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        state = _eventually("up has started the API server", lambda: state_file.exists() and (
            s := json.loads(state_file.read_text())) and any(
            p["name"] == "kube-apiserver" for p in s["procs"]) and s, timeout=60)
    finally:
        up.kill()
        up.wait()
    state = json.loads(state_file.read_text())
    pids = [p["pid"] for p in state["procs"]]
    assert pids and all(Path(f"/proc/{pid}").exists() for pid in pids)  # orphans, running
    down = _aiplat(env, "lab", "cluster", "down", "--name", "crash", check=True)
    assert "etcd" in down.stderr and "kube-apiserver" in down.stderr
    assert all(not Path(f"/proc/{pid}").exists() or _zombie(pid) for pid in pids)
    assert not (tmp_path / "runs" / "crash").exists()


DRA_SPEC = """\
apiVersion: aiplat/v1alpha1
kind: Platform
metadata: {name: dra-h100}
kubernetes: {version: "1.34", kueueVersion: 0.19.2, gpuResources: dra}
site: {powerBudgetKW: 60, rackPowerLimitKW: 40}
pools:
  - name: whole
    node: {nodeType: hgx-h100-8, gpu: {model: H100-SXM-80GB, count: 8}, cpuCores: 112,
           memoryGiB: 2048}
    count: 1
  - name: mig
    node: {nodeType: hgx-h100-8, gpu: {model: H100-SXM-80GB, count: 8}, cpuCores: 112,
           memoryGiB: 2048}
    count: 1
    sharing: {strategy: mig, migLayout: [3g.40gb, 2g.20gb, 2g.20gb]}
tenants:
  - {name: team, quota: {whole: {gpus: 8}, mig: {gpus: 24}}}
versions:
  approved:
    - {name: r580, driver: 580.95.05, cuda: "13.0", kubernetes: "1.34", kueue: 0.19.2}
"""


def _restricted_pod(name: str, template: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team"},
            "spec": {"containers": [{
                "name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]},
                "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                    "runAsUser": 1000, "capabilities": {"drop": ["ALL"]},
                                    "seccompProfile": {"type": "RuntimeDefault"}}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}}


def test_h100_whole_and_mig_devices_are_allocated_by_their_classes(tmp_path: Path) -> None:
    """A DRA H100 pool publishes 81559Mi GPUs; a MIG pool only its MIG devices, named as the
    driver names them; each rendered class gets its kind of device from the real scheduler."""
    _need_components()
    env = {**os.environ, "AIPLAT_CLUSTER_DIR": str(tmp_path / "runs")}
    (tmp_path / "spec.yaml").write_text(DRA_SPEC)
    _aiplat(env, "kube", "render", str(tmp_path / "spec.yaml"), "-d", str(tmp_path / "kube"),
            check=True)
    up = _aiplat(env, "lab", "cluster", "up", str(tmp_path / "spec.yaml"), "--name", "dra",
                 check=True)
    kubeconfig = up.stdout.strip().removeprefix("export KUBECONFIG=")
    try:
        with Api.from_kubeconfig(kubeconfig) as api:
            slices = {s["spec"]["nodeName"]: s["spec"]["devices"]
                      for s in api.objects("resource.k8s.io/v1", "ResourceSlice")}
            whole = {d["name"]: d for d in slices["whole-0"]}
            assert whole["gpu-0"]["capacity"]["memory"]["value"] == "81559Mi"
            assert whole["gpu-0"]["attributes"]["architecture"]["string"] == "Hopper"
            mig = [d["name"] for d in slices["mig-0"]]
            assert len(mig) == 24 and not [n for n in mig if "-mig-" not in n]
            assert mig[:3] == ["gpu-0-mig-2g20gb-14-0", "gpu-0-mig-2g20gb-14-2",
                               "gpu-0-mig-3g40gb-9-4"]
            applied = _aiplat({**env, "KUBECONFIG": kubeconfig}, "kube", "apply",
                              str(tmp_path / "kube"))
            assert applied.returncode == 0, applied.stdout
            pods = {"w": "whole-gpu-1", "m3": "mig-mig-3g.40gb", "m2": "mig-mig-2g.20gb"}
            for name, template in pods.items():
                api.create(_restricted_pod(name, template))

            def allocated() -> dict[str, list[str]]:
                out: dict[str, list[str]] = {}
                for c in api.objects("resource.k8s.io/v1", "ResourceClaim", "team"):
                    results = (((c.get("status") or {}).get("allocation") or {}).get(
                        "devices") or {}).get("results") or []
                    owner = c["metadata"]["ownerReferences"][0]["name"]
                    out[owner] = [f"{r['pool']}/{r['device']}" for r in results]
                return out if all(out.get(p) for p in pods) else {}
            got = _eventually("each claim allocated", allocated)
            assert got["w"][0].startswith("whole-0/gpu-")
            assert "-mig-3g40gb-9-" in got["m3"][0] and got["m3"][0].startswith("mig-0/")
            assert "-mig-2g20gb-14-" in got["m2"][0]
    finally:
        _aiplat(env, "lab", "cluster", "down", "--name", "dra")


def test_image_volume_of_the_model_is_accepted_by_the_api_server(
        cluster: Cluster, applied: list[Obj]) -> None:
    """On a 1.36 target with CRI-O the serving pods mount the ModelPack artifact as an image
    volume; the live API server (ImageVolume GA) and the serving namespace's Pod Security
    'restricted' accept it. kwok does not mount it: no kubelet pulls the artifact here."""
    from aiplat.catalog import load_catalog
    from aiplat.kube.render import render
    from aiplat.spec.load import example_text, parse_platform

    data = yaml.safe_load(example_text())
    data["kubernetes"]["version"] = "1.36"
    for e in data["versions"]["approved"]:
        e |= {"kubernetes": "1.36", "containerRuntime": "cri-o 1.36"}
    platform = parse_platform(yaml.safe_dump(data), "variant.yaml", load_catalog())
    dep = next(o for o in render(platform, load_catalog()).manifests["workloads/examples.yaml"]
               if o["metadata"]["name"] == "assistant")
    vol = next(v for v in dep["spec"]["template"]["spec"]["volumes"] if v["name"] == "model")
    assert "image" in vol
    stored = cluster.api.apply(dep, dry_run=True)
    got = next(v for v in stored["spec"]["template"]["spec"]["volumes"] if v["name"] == "model")
    assert got["image"]["reference"] == vol["image"]["reference"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "image-volume-probe", "namespace": "serving"},
           "spec": dep["spec"]["template"]["spec"]}
    # Admission: Pod Security, LimitRange, then ResourceQuota last (kube-apiserver's plugin
    # order), so a refusal only for the quota the running pods use means the rest accepted it.
    from aiplat.kube.apply import ApiError, fits_quota_when_free
    try:
        created = cluster.api.create(pod, dry_run=True)
    except ApiError as e:
        assert fits_quota_when_free(str(e)), str(e)
    else:
        assert any("image" in v for v in created["spec"]["volumes"])


def test_monitoring_objects_apply_beside_the_tree(cluster: Cluster, applied: list[Obj],
                                                  tmp_path: Path) -> None:
    """`aiplat monitoring render` writes the alert rules as a PrometheusRule and Kueue's
    ServiceMonitor; the API server, with prometheus-operator's CRDs, accepts both as they
    are, and the PrometheusRule holds exactly the rules of the rule file promtool tests."""
    out = tmp_path / "monitoring"
    cluster.aiplat("monitoring", "render", "-d", str(out), check=True)
    cp = cluster.aiplat("kube", "apply", str(out / "kubernetes"), "-o", "json")
    outcomes = json.loads(cp.stdout)
    assert cp.returncode == 0, outcomes
    assert {o["object"].split()[0] for o in outcomes} >= {"PrometheusRule", "ServiceMonitor"}
    stored = cluster.api.get({"apiVersion": "monitoring.coreos.com/v1",
                              "kind": "PrometheusRule",
                              "metadata": {"name": "aiplat", "namespace": "monitoring"}})
    rules = yaml.safe_load((out / "aiplat-rules.yaml").read_text())
    assert stored is not None and stored["spec"]["groups"] == rules["groups"]
    sm = cluster.api.get({"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
                          "metadata": {"name": "kueue-controller-manager",
                                       "namespace": "kueue-system"}})
    assert sm is not None
    assert sm["spec"]["endpoints"][0]["tlsConfig"]["insecureSkipVerify"] is False
