"""The lint classes of issue #18 against the real system: each mistake, seeded as new
objects beside the example tree on a lab cluster of its own (``aiplat lab cluster up
--name lintlive``), is named by ``aiplat kube lint`` and shown by the API server, Kueue or
the scheduler; where a fix is one field, the fixed object is admitted, so the mistake and
not the setup is the cause.

Shown live: quota-without-cohort (API server CEL), cohort-cycle and queue-stopped (Kueue
admits nothing, then admits once fixed), workload-quota and flavor-affinity (Kueue: never
admitted), kueue-managed for kube-system and
workload-unqueued (jobs that run with no Workload), resource-unserved (Kueue: MIG resource
not in the ClusterQueue), gpu-per-node for GPUs and DRA claims (admitted, unschedulable),
limitrange-admits min and Pod max (the LimitRanger refuses the pods), pod-security's
IPC_LOCK in a restricted namespace (Pod Security admission), pvc-access-mode's
missing StorageClass (the PV controller). Queues and flavors: a LocalQueue naming a
missing ClusterQueue, a Job naming a missing LocalQueue, a ClusterQueue with a missing
flavor or a flavor with a missing Topology (Kueue: inactive, fixed by creating it), a
namespace the selector leaves out (fixed in one field), a flavor that selects no node or
lacks the pool's toleration (admitted, then unschedulable; a job on the fixed flavor binds),
a quota beyond the pool (admitted, "Insufficient cpu"), a namespace ResourceQuota below the
queue (the Job controller's "exceeded quota", fixed by raising it). DRA: a missing or
matching-no-device DeviceClass and a constraint on an unpublished attribute (the scheduler;
bound once fixed), an unmapped class (Kueue), a quota without the class (a claim on an alias
class passes a quota of 0 on the GPUs until the quota names it). Lint alone: NetworkPolicy
isolation and selectors (no CNI enforces policies here), access modes and static-only
drivers (no CSI driver runs here), topology-spread (a placement that runs, only slower),
Kueue Configurations other than the rendered one (the lab starts Kueue with that).

Needs the components built (``aiplat lab cluster build``); fails, not skips, in CI.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from examplelab import example_lab
from test_cluster_live import _aiplat, _cond, _eventually

from aiplat.kube.apply import Api, ApiError

pytestmark = pytest.mark.integration
NAME = "lintlive"
KUEUE = "kueue.x-k8s.io/v1beta2"
QUEUE = "kueue.x-k8s.io/queue-name"
Obj = dict[str, Any]


@dataclass
class Lab:
    env: dict[str, str]
    api: Api
    tree: Path
    objects: list[Obj]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with example_lab(tmp_path_factory.mktemp("lint"), NAME) as ex:
        # Everything but the example workloads: the seeds need the queues and GPUs free.
        ex.apply(lambda f: not f.startswith("workloads/"))
        yield Lab(ex.env, ex.api, ex.plan / "kube", [o for _f, o in ex.items])


# --- the seeds: new objects beside the tree, each one mistake ----------------------------

def _workload(objs: list[Obj], src: str, name: str, *, ns: str | None = None,
              queue: str | None = None, resources: Obj | None = None) -> Obj:
    """A one-pod Job copied from a rendered Job or Deployment (its Pod Security-clean
    template)."""
    job = copy.deepcopy(next(o for o in objs if o["kind"] in ("Job", "Deployment")
                             and o["metadata"]["name"] == src))
    if job["kind"] == "Deployment":
        template = job["spec"]["template"]
        template["spec"]["restartPolicy"] = "Never"
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": job["metadata"],
               "spec": {"template": template}}
    meta = job["metadata"]
    meta["name"] = name
    meta["namespace"] = ns or meta["namespace"]
    if queue is None:
        meta["labels"].pop(QUEUE)
    else:
        meta["labels"][QUEUE] = queue
    job["spec"]["parallelism"] = job["spec"]["completions"] = 1
    job["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] = name
    pod = job["spec"]["template"]["spec"]
    pod.pop("initContainers", None)  # the model pull: no model store in this lab
    pod["volumes"] = [v for v in pod.get("volumes") or [] if "ephemeral" not in v]
    kept = {v["name"] for v in pod["volumes"]}
    for c in pod["containers"]:
        c["volumeMounts"] = [m for m in c.get("volumeMounts") or [] if m["name"] in kept]
    if resources is not None:
        spec = job["spec"]["template"]["spec"]
        spec.pop("resourceClaims", None)
        spec["containers"][0]["resources"] = resources
    return job


def _res(extra: dict[str, str] | None = None) -> Obj:
    amounts = {"cpu": "1", "memory": "1Gi", **(extra or {})}
    return {"requests": dict(amounts), "limits": dict(amounts)}


def _pod(name: str, ns: str, containers: list[Obj]) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"restartPolicy": "Never", "containers": containers}}


def _ns(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def seeds(objs: list[Obj]) -> dict[str, list[Obj]]:
    small = _res()
    cq = {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": "lint-cyclic"},
          "spec": {"cohortName": "lint-a", "namespaceSelector": {"matchLabels": {
              "kubernetes.io/metadata.name": "lint-cycle"}},
              "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{
                  "name": "l40s", "resources": [{"name": "cpu", "nominalQuota": "2"},
                                                {"name": "memory", "nominalQuota": "2Gi"}]}]}]}}
    nocohort = copy.deepcopy(cq)
    nocohort["metadata"]["name"] = "lint-nocohort"
    del nocohort["spec"]["cohortName"]
    nocohort["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = "1"
    cycle_job = {"apiVersion": "batch/v1", "kind": "Job",
                 "metadata": {"name": "lint-cycle-job", "namespace": "lint-cycle",
                              "labels": {QUEUE: "lint-cycle"}},
                 "spec": {"template": {"spec": {**_pod("x", "x", [{
                     "name": "c", "image": "busybox", "resources": small}])["spec"],
                     "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}}}}
    held = {"apiVersion": KUEUE, "kind": "LocalQueue",
            "metadata": {"name": "lint-held", "namespace": "batch"},
            "spec": {"clusterQueue": "batch", "stopPolicy": "Hold"}}
    claim8 = copy.deepcopy(next(o for o in objs if o["kind"] == "ResourceClaimTemplate"
                                and o["metadata"]["name"] == "l40s-gpu-4"
                                and o["metadata"]["namespace"] == "serving"))
    claim8["metadata"]["name"] = "lint-l40s-8"
    claim8["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 8
    claim8["spec"]["spec"]["devices"].pop("constraints", None)
    dra8 = _workload(objs, "docs-search", "lint-dra-8", queue="serving")
    dra8["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = \
        "lint-l40s-8"
    lr = {"apiVersion": "v1", "kind": "LimitRange",
          "metadata": {"name": "lint-lr", "namespace": "lint-lr"},
          "spec": {"limits": [{"type": "Container", "min": {"cpu": "2"}},
                              {"type": "Pod", "max": {"memory": "2Gi"}}]}}
    two = _res({"cpu": "2", "memory": "1536Mi"})
    ipc = copy.deepcopy(next(o for o in objs if o["kind"] == "Job"
                             and o["metadata"]["name"] == "assistant-finetune"))
    spec = ipc["spec"]["template"]["spec"]
    ipc = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "lint-ipc-lock", "namespace": "research"}, "spec": {
        "restartPolicy": "Never", "securityContext": spec.get("securityContext") or {},
        "containers": [{**spec["containers"][0], "resources": small}]}}
    ipc["spec"]["containers"][0]["securityContext"]["capabilities"]["add"] = ["IPC_LOCK"]
    ipc["spec"]["containers"][0].pop("volumeMounts", None)
    too_big = _workload(objs, "nightly-eval", "lint-too-big", queue="batch")
    too_big["spec"]["parallelism"] = too_big["spec"]["completions"] = 31  # 372 CPU > 370
    pinned = _workload(objs, "nightly-eval", "lint-pinned", queue="batch", resources=small)
    pinned["spec"]["template"]["spec"]["nodeSelector"] = {"aiplat.io/pool": "h100"}
    return {
        "quota-without-cohort": [nocohort],
        "cohort-cycle": [
            _ns("lint-cycle"),
            {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "lint-a"},
             "spec": {"parentName": "lint-b"}},
            {"apiVersion": KUEUE, "kind": "Cohort", "metadata": {"name": "lint-b"},
             "spec": {"parentName": "lint-a"}},
            cq, {"apiVersion": KUEUE, "kind": "LocalQueue",
                 "metadata": {"name": "lint-cycle", "namespace": "lint-cycle"},
                 "spec": {"clusterQueue": "lint-cyclic"}}, cycle_job],
        "queue-stopped": [held, _workload(objs, "nightly-eval", "lint-held-job",
                                          queue="lint-held", resources=small)],
        "kueue-managed": [_workload(objs, "nightly-eval", "lint-system-job", ns="kube-system",
                                    queue="batch", resources=small)],
        "workload-unqueued": [_workload(objs, "nightly-eval", "lint-unqueued")],
        "pod-security": [ipc],
        "workload-quota": [too_big],
        "flavor-affinity": [pinned],
        "resource-unserved": [_workload(objs, "assistant-finetune", "lint-mig", queue="research",
                                        resources=_res({"nvidia.com/mig-3g.40gb": "1"}))],
        "gpu-per-node": [_workload(objs, "assistant-finetune", "lint-16-gpus",
                                   queue="research", resources=_res({"nvidia.com/gpu": "16"})),
                         claim8, dra8],
        "limitrange-admits": [_ns("lint-lr"), lr,
                              _pod("lint-below-min", "lint-lr", [{
                                  "name": "c", "image": "busybox", "resources": small}]),
                              _pod("lint-pod-max", "lint-lr", [
                                  {"name": "a", "image": "busybox", "resources": two},
                                  {"name": "b", "image": "busybox", "resources": two}])],
        "pvc-access-mode": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                             "metadata": {"name": "lint-no-class", "namespace": "lint-lr"},
                             "spec": {"accessModes": ["ReadWriteOnce"],
                                      "storageClassName": "shared",
                                      "resources": {"requests": {"storage": "1Gi"}}}}],
        **_queue_seeds(objs), **_dra_seeds(objs), **_capacity_seeds(objs),
    }


BATCH = {"matchLabels": {"aiplat.io/tenant": "batch"}}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def _cq(name: str, flavor: str, selector: Obj | None = None) -> Obj:
    """A small ClusterQueue (no cohort) of CPU and memory on one flavor."""
    return {"apiVersion": KUEUE, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"namespaceSelector": selector or BATCH, "resourceGroups": [{
                "coveredResources": ["cpu", "memory"], "flavors": [{"name": flavor, "resources": [
                    {"name": "cpu", "nominalQuota": "4"},
                    {"name": "memory", "nominalQuota": "4Gi"}]}]}]}}


def _lq(name: str, ns: str, cq: str) -> Obj:
    return {"apiVersion": KUEUE, "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": ns}, "spec": {"clusterQueue": cq}}


def _flavor(name: str, pool: str, *, tolerate: bool = True) -> Obj:
    return {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": name},
            "spec": {"nodeLabels": {"aiplat.io/pool": pool},
                     **({"tolerations": [GPU_TOLERATION]} if tolerate else {})}}


def _bare(objs: list[Obj], name: str, queue: str) -> Obj:
    """A small batch Job with no affinity or tolerations of its own: the flavor places it."""
    job = _workload(objs, "nightly-eval", name, queue=queue, resources=_res())
    for k in ("affinity", "tolerations"):
        job["spec"]["template"]["spec"].pop(k, None)
    return job


def _queue_seeds(objs: list[Obj]) -> dict[str, list[Obj]]:
    rq = {"apiVersion": "v1", "kind": "ResourceQuota",
          "metadata": {"name": "lint-rq", "namespace": "lint-rq"},
          "spec": {"hard": {"requests.cpu": "1"}}}
    rq_job = {"apiVersion": "batch/v1", "kind": "Job",
              "metadata": {"name": "lint-rq-job", "namespace": "lint-rq",
                           "labels": {QUEUE: "lint-rq"}},
              "spec": {"template": {"metadata": {"labels": {
                  "app.kubernetes.io/name": "lint-rq-job"}}, "spec": _pod("x", "x", [{
                      "name": "c", "image": "busybox",
                      "resources": _res({"cpu": "2"})}])["spec"]}}}
    return {
        "localqueue-clusterqueue": [_lq("lint-orphan", "batch", "lint-absent"),
                                    _bare(objs, "lint-orphan-job", "lint-orphan")],
        "clusterqueue-flavor": [_cq("lint-noflavor", "lint-missing"),
                                _lq("lint-noflavor", "batch", "lint-noflavor"),
                                _bare(objs, "lint-noflavor-job", "lint-noflavor")],
        "namespace-selector": [
            _cq("lint-narrow", "l40s", {"matchLabels": {"aiplat.io/tenant": "nobody"}}),
            _lq("lint-narrow", "batch", "lint-narrow"),
            _bare(objs, "lint-narrow-job", "lint-narrow")],
        "flavor-pool": [_flavor("lint-nopool", "a100"), _cq("lint-nopool", "lint-nopool"),
                        _lq("lint-nopool", "batch", "lint-nopool"),
                        _bare(objs, "lint-nopool-job", "lint-nopool")],
        "flavor-taints": [_flavor("lint-untolerated", "l40s", tolerate=False),
                          _cq("lint-untolerated", "lint-untolerated"),
                          _lq("lint-untolerated", "batch", "lint-untolerated"),
                          _bare(objs, "lint-untolerated-job", "lint-untolerated")],
        "resourcequota-admits": [
            _ns("lint-rq"), rq,
            _cq("lint-rq", "l40s", {"matchLabels": {"kubernetes.io/metadata.name": "lint-rq"}}),
            _lq("lint-rq", "lint-rq", "lint-rq"), rq_job],
    }


OVER = 13  # pods of 30 CPU: 390 CPU, more than the l40s pool's 372


def _capacity_seeds(objs: list[Obj]) -> dict[str, list[Obj]]:
    over = _cq("lint-over", "lint-over",
               {"matchLabels": {"kubernetes.io/metadata.name": "lint-over"}})
    over["spec"]["resourceGroups"][0]["flavors"][0]["resources"] = [
        {"name": "cpu", "nominalQuota": "1000"}, {"name": "memory", "nominalQuota": "100Gi"}]
    over_job = {"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "lint-over-job", "namespace": "lint-over",
                             "labels": {QUEUE: "lint-over"}},
                "spec": {"parallelism": OVER, "completions": OVER, "template": {
                    "metadata": {"labels": {"app.kubernetes.io/name": "lint-over-job"}},
                    "spec": _pod("x", "x", [{"name": "c", "image": "busybox",
                                             "resources": _res({"cpu": "30"})}])["spec"]}}}
    tas = _flavor("lint-tas", "l40s")
    tas["spec"]["topologyName"] = "lint-notopo"
    tas_job = _bare(objs, "lint-tas-job", "lint-tas")
    tas_job["spec"]["template"]["metadata"].setdefault("annotations", {})[
        "kueue.x-k8s.io/podset-preferred-topology"] = "kubernetes.io/hostname"
    nowpc = _bare(objs, "lint-nowpc-job", "batch")
    nowpc["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "lint-nowpc"
    levels = {"apiVersion": KUEUE, "kind": "Topology", "metadata": {"name": "lint-levels"},
              "spec": {"levels": [{"nodeLabel": "topology.aiplat.io/no-such-level"},
                                  {"nodeLabel": "kubernetes.io/hostname"}]}}
    level_flavor = _flavor("lint-levels", "l40s")
    level_flavor["spec"]["topologyName"] = "lint-levels"
    level_job = copy.deepcopy(tas_job)
    level_job["metadata"]["name"] = "lint-levels-job"
    level_job["metadata"]["labels"][QUEUE] = "lint-levels"
    level_job["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] = \
        "lint-levels-job"
    return {
        "quota-capacity": [_ns("lint-over"), _flavor("lint-over", "l40s"), over,
                           _lq("lint-over", "lint-over", "lint-over"), over_job],
        "workload-queue": [_bare(objs, "lint-noqueue-job", "lint-noqueue"), nowpc],
        "topology-levels": [tas, _cq("lint-tas", "lint-tas"),
                            _lq("lint-tas", "batch", "lint-tas"), tas_job,
                            levels, level_flavor, _cq("lint-levels", "lint-levels"),
                            _lq("lint-levels", "batch", "lint-levels"), level_job],
        "claim-constraint": [_pair("lint-nosuch-attr", "gpu.nvidia.com/noSuchAttribute"),
                             _claimed(objs, "lint-nosuch-attr-pod", "lint-nosuch-attr")],
    }


def _pair(name: str, attribute: str) -> Obj:
    t = _claim_template(name, "serving", "gpu-l40s-48gb")
    t["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    t["spec"]["spec"]["devices"]["constraints"] = [
        {"requests": ["gpu"], "matchAttribute": attribute}]
    return t


def _device_class(objs: list[Obj], name: str, expression: str | None = None) -> Obj:
    """A copy of the rendered L40S DeviceClass under another name (or with one selector)."""
    dc = copy.deepcopy(next(o for o in objs if o["kind"] == "DeviceClass"))
    dc["metadata"] = {"name": name}
    if expression is not None:
        dc["spec"]["selectors"] = [{"cel": {"expression": expression}}]
    return dc


def _claim_template(name: str, ns: str, device_class: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": device_class, "allocationMode": "ExactCount",
                "count": 1}}]}}}}


def _claimed(objs: list[Obj], name: str, template: str, queue: str | None = None) -> Obj:
    """A small serving Job (or, unqueued, a bare Pod: the scheduler alone) with one claim."""
    job = _workload(objs, "docs-search", name, queue=queue)
    spec = job["spec"]["template"]["spec"]
    spec["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": template}]
    spec["containers"][0]["resources"] = {**_res(), "claims": [{"name": "gpus"}]}
    if queue is not None:
        return job
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": "serving", "labels": {"app.kubernetes.io/name": name}},
        "spec": spec}


A100 = ("device.driver == 'gpu.nvidia.com' && "
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A100-SXM4-80GB'")


def _dra_seeds(objs: list[Obj]) -> dict[str, list[Obj]]:
    fence = {"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": "lint-fence", "namespace": "lint-fence"},
             "spec": {"hard": {"gpu-l40s-48gb.deviceclass.resource.k8s.io/devices": "0"}}}
    return {
        "claim-deviceclass": [_claim_template("lint-noclass", "serving", "lint-no-such-class"),
                              _claimed(objs, "lint-noclass-pod", "lint-noclass")],
        "deviceclass-matches": [_device_class(objs, "lint-nomatch", A100),
                                _claim_template("lint-nomatch", "serving", "lint-nomatch"),
                                _claimed(objs, "lint-nomatch-pod", "lint-nomatch")],
        "kueue-dra-mapping": [_device_class(objs, "lint-unmapped"),
                              _claim_template("lint-unmapped", "serving", "lint-unmapped"),
                              _claimed(objs, "lint-unmapped-job", "lint-unmapped", "serving")],
        "resourcequota-dra": [_ns("lint-fence"), fence, _device_class(objs, "lint-alias"),
                              _claim_template("lint-alias", "lint-fence", "lint-alias")],
    }


EXPECTED = {  # rule -> the objects lint must name
    "quota-without-cohort": {"ClusterQueue/lint-nocohort"},
    "cohort-cycle": {"Cohort/lint-a"},
    "queue-stopped": {"LocalQueue/batch/lint-held"},
    "kueue-managed": {"Job/kube-system/lint-system-job"},
    "workload-unqueued": {"Job/batch/lint-unqueued"},
    "resource-unserved": {"Job/research/lint-mig"},
    "workload-quota": {"Job/batch/lint-too-big"},
    "pod-security": {"Pod/research/lint-ipc-lock"},
    "flavor-affinity": {"Job/batch/lint-pinned"},
    "gpu-per-node": {"Job/research/lint-16-gpus", "Job/serving/lint-dra-8"},
    "limitrange-admits": {"Pod/lint-lr/lint-below-min", "Pod/lint-lr/lint-pod-max"},
    "pvc-access-mode": {"PersistentVolumeClaim/lint-lr/lint-no-class"},
    "localqueue-clusterqueue": {"LocalQueue/batch/lint-orphan"},
    "clusterqueue-flavor": {"ClusterQueue/lint-noflavor"},
    "namespace-selector": {"ClusterQueue/lint-narrow"},
    "flavor-pool": {"ResourceFlavor/lint-nopool"},
    "flavor-taints": {"ResourceFlavor/lint-untolerated"},
    "resourcequota-admits": {"ResourceQuota/lint-rq"},
    "claim-deviceclass": {"ResourceClaimTemplate/serving/lint-noclass"},
    "deviceclass-matches": {"DeviceClass/lint-nomatch"},
    "kueue-dra-mapping": {"Job/serving/lint-unmapped-job"},
    "resourcequota-dra": {"ResourceQuota/lint-fence"},
    "quota-capacity": {"ResourceFlavor/lint-over"},
    "workload-queue": {"Job/batch/lint-noqueue-job", "Job/batch/lint-nowpc-job"},
    "topology-levels": {"ResourceFlavor/lint-tas", "Topology/lint-levels"},
    "claim-constraint": {"ResourceClaimTemplate/serving/lint-nosuch-attr"},
}


def test_lint_names_every_seeded_mistake(lab: Lab, tmp_path: Path) -> None:
    """On the user's path: the seeds added to a copy of the tree, `aiplat kube lint DIR`."""
    tree = _with_examples(lab.tree, tmp_path / "seeded")
    f = tree / "workloads" / "examples.yaml"
    docs = [d for d in yaml.safe_load_all(f.read_text()) if d]
    docs += [o for objs in seeds(lab.objects).values() for o in objs]
    f.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    cp = _aiplat(lab.env, "kube", "lint", str(tree), "-o", "json")
    assert cp.returncode == 1, cp.stderr
    found = {(x["source"], x["subject"]) for x in json.loads(cp.stdout)}
    missing = {(r, o) for r, objs in EXPECTED.items() for o in objs} - found
    assert not missing, sorted(found)
    clean = _aiplat(lab.env, "kube", "lint", str(_with_examples(lab.tree, tmp_path / "clean")),
                    "-o", "json")
    assert clean.returncode == 0 and json.loads(clean.stdout) == [], clean.stdout


def _with_examples(src: Path, dst: Path) -> Path:
    """A copy of the tree whose root kustomization lists the opt-in examples too, as
    ``kube render --with-examples`` writes it."""
    shutil.copytree(src, dst)
    k = dst / "kustomization.yaml"
    doc = yaml.safe_load(k.read_text())
    doc["resources"].append("workloads")
    k.write_text(yaml.safe_dump(doc))
    return dst


def _seed(lab: Lab, rule: str) -> list[Obj]:
    return seeds(lab.objects)[rule]


def _wl(api: Api, job: str, ns: str) -> Obj | None:
    return next((w for w in api.objects(KUEUE, "Workload", ns)
                 if any(r["name"] == job for r in w["metadata"].get("ownerReferences") or [])),
                None)


def _pending(api: Api, job: str, ns: str) -> Obj:
    """Kueue's QuotaReserved=False condition of the job's Workload."""
    return dict(_eventually(f"{job}: Kueue holds it back", lambda: (
        w := _wl(api, job, ns)) and (c := _cond(w, "QuotaReserved")) and c["status"] == "False"
        and c.get("message") and c))


def _admitted(api: Api, job: str, ns: str) -> Obj:
    return dict(_eventually(f"{job}: admitted", lambda: (w := _wl(api, job, ns)) and (
        c := _cond(w, "Admitted")) and c["status"] == "True" and w))


def _unschedulable(api: Api, app: str, ns: str) -> str:
    def probe() -> str:
        for p in api.objects("v1", "Pod", ns):
            if p["metadata"].get("labels", {}).get("app.kubernetes.io/name") == app:
                c = _cond(p, "PodScheduled")
                if c and c["status"] == "False" and c.get("message"):
                    return str(c["message"])
        return ""
    return str(_eventually(f"{app}: the scheduler leaves it Pending", probe))


def test_borrowing_limit_without_cohort_is_refused(lab: Lab) -> None:
    with pytest.raises(ApiError, match="borrowingLimit must be nil when cohort is empty"):
        lab.api.apply(_seed(lab, "quota-without-cohort")[0])


def test_cohort_cycle_stops_admission_until_broken(lab: Lab) -> None:
    objs = _seed(lab, "cohort-cycle")
    lab.api.apply_all(objs[:-1])
    _eventually("lint-cycle ServiceAccount", lambda: lab.api.exists(
        "v1", "ServiceAccount", "default", "lint-cycle"))
    lab.api.create(objs[-1])
    cond = _pending(lab.api, "lint-cycle-job", "lint-cycle")
    assert cond["message"] == "ClusterQueue lint-cyclic is inactive", cond
    # lint-b no longer points back at lint-a (its parent: an implicit root cohort)
    lab.api.apply({**objs[2], "spec": {"parentName": "lint-root"}})
    _admitted(lab.api, "lint-cycle-job", "lint-cycle")


def test_stopped_local_queue_admits_nothing_until_released(lab: Lab) -> None:
    held, job = _seed(lab, "queue-stopped")
    lab.api.apply(held)
    lab.api.create(job)
    cond = _pending(lab.api, "lint-held-job", "batch")
    assert cond["message"] == "LocalQueue lint-held is inactive", cond
    # why-pending reads the live cluster and names the same cause Kueue reports.
    cp = _aiplat(lab.env, "kube", "why-pending", "lint-held-job", "-n", "batch",
                 "--kubeconfig", lab.env["KUBECONFIG"], "-o", "json", check=True)
    why = json.loads(cp.stdout)
    assert why["code"] == "LocalQueueStopped" and "stopPolicy Hold" in why["reason"], why
    lab.api.apply({**held, "spec": {**held["spec"], "stopPolicy": "None"}})
    _admitted(lab.api, "lint-held-job", "batch")


def _runs_without_kueue(api: Api, job: Obj) -> None:
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    api.create(job)
    pods = _eventually(f"{name}: the Job controller makes its pod", lambda: [
        p for p in api.objects("v1", "Pod", ns)
        if p["metadata"].get("labels", {}).get("job-name") == name])
    assert pods
    live = api.get(job)
    assert live is not None and not live["spec"].get("suspend"), live
    assert _wl(api, name, ns) is None  # no Workload: no quota was ever charged


def test_queued_job_in_kube_system_starts_outside_kueue(lab: Lab) -> None:
    _runs_without_kueue(lab.api, _seed(lab, "kueue-managed")[0])


def test_unqueued_job_in_a_tenant_namespace_runs_beside_the_quota(lab: Lab) -> None:
    _runs_without_kueue(lab.api, _seed(lab, "workload-unqueued")[0])


def test_mig_resource_where_mig_is_off_is_inadmissible(lab: Lab) -> None:
    lab.api.create(_seed(lab, "resource-unserved")[0])
    cond = _pending(lab.api, "lint-mig", "research")
    assert "nvidia.com/mig-3g.40gb" in cond["message"], cond


def test_workload_beyond_its_queue_is_never_admitted(lab: Lab) -> None:
    lab.api.create(_seed(lab, "workload-quota")[0])
    cond = _pending(lab.api, "lint-too-big", "batch")
    assert "insufficient quota" in cond["message"], cond
    assert "maximum capacity" in cond["message"], cond


def test_pod_pinned_to_a_pool_its_queue_lacks_is_never_admitted(lab: Lab) -> None:
    lab.api.create(_seed(lab, "flavor-affinity")[0])
    cond = _pending(lab.api, "lint-pinned", "batch")
    assert "doesn't match node affinity" in cond["message"], cond


def test_more_gpus_than_a_node_never_runs(lab: Lab) -> None:
    """On the h100 pool (a Topology) Kueue's TAS counts nodes and refuses; on the DRA pool
    (no Topology) quota admits it and the scheduler finds no node with 8 L40S."""
    job, claim, dra = _seed(lab, "gpu-per-node")
    lab.api.create(job)
    cond = _pending(lab.api, "lint-16-gpus", "research")
    assert 'topology "h100" doesn\'t allow to fit any of 1 pod(s)' in cond["message"], cond
    lab.api.apply(claim)
    lab.api.create(dra)
    _admitted(lab.api, "lint-dra-8", "serving")
    assert "cannot allocate all claims" in _unschedulable(lab.api, "lint-dra-8", "serving")


def test_limitrange_min_and_pod_max_refuse_the_pods(lab: Lab) -> None:
    ns, lr, below, pod_max = _seed(lab, "limitrange-admits")
    lab.api.apply_all([ns, lr])
    _eventually("lint-lr ServiceAccount", lambda: lab.api.exists(
        "v1", "ServiceAccount", "default", "lint-lr"))
    with pytest.raises(ApiError, match="minimum cpu usage per Container is 2"):
        lab.api.create(below, dry_run=True)
    with pytest.raises(ApiError, match="maximum memory usage per Pod is 2Gi"):
        lab.api.create(pod_max, dry_run=True)


def test_ipc_lock_is_refused_by_the_restricted_namespace(lab: Lab) -> None:
    with pytest.raises(ApiError, match="IPC_LOCK"):
        lab.api.create(_seed(lab, "pod-security")[0], dry_run=True)


def test_claim_on_a_missing_storage_class_stays_pending(lab: Lab) -> None:
    lab.api.apply_all([_ns("lint-lr")])
    pvc = _seed(lab, "pvc-access-mode")[0]
    lab.api.create(pvc)
    event = _eventually("the PV controller reports the missing class", lambda: next((
        e for e in lab.api.objects("v1", "Event", "lint-lr")
        if e["involvedObject"]["name"] == "lint-no-class"
        and "not found" in e.get("message", "")), None))
    assert '"shared" not found' in event["message"], event
    assert (lab.api.get(pvc) or {})["status"]["phase"] == "Pending"


# --- queues and flavors: Kueue holds the workload, or admits pods no node takes ----------

def _active(api: Api, kind: str, name: str, ns: str | None = None) -> Obj:
    """The Active=False condition Kueue sets on a queue it will not use."""
    ref = {"apiVersion": KUEUE, "kind": kind,
           "metadata": {"name": name, **({"namespace": ns} if ns else {})}}
    return dict(_eventually(f"{kind} {name}: inactive", lambda: (
        c := _cond(api.get(ref) or {}, "Active")) and c["status"] == "False" and c))


def _scheduled(api: Api, app: str, ns: str, timeout: float = 60.0) -> None:
    seen: list[Obj] = []

    def probe() -> bool:
        seen[:] = [_cond(p, "PodScheduled") or {} for p in api.objects("v1", "Pod", ns)
                   if p["metadata"].get("labels", {}).get("app.kubernetes.io/name") == app]
        return any(c.get("status") == "True" for c in seen)
    try:
        _eventually(f"{app}: bound to a node", probe, timeout)
    except AssertionError as e:
        raise AssertionError(f"{e}; PodScheduled: {seen}") from None


def test_local_queue_naming_a_missing_cluster_queue_admits_nothing(lab: Lab) -> None:
    lq, job = _seed(lab, "localqueue-clusterqueue")
    lab.api.apply(lq)
    lab.api.create(job)
    cond = _pending(lab.api, "lint-orphan-job", "batch")
    assert cond["message"] == "ClusterQueue lint-absent doesn't exist", cond
    assert _active(lab.api, "LocalQueue", "lint-orphan", "batch")["reason"] == \
        "ClusterQueueDoesNotExist"
    lab.api.apply(_cq("lint-absent", "l40s"))  # the fix: the queue it names
    _admitted(lab.api, "lint-orphan-job", "batch")


def test_cluster_queue_with_a_missing_flavor_is_inactive(lab: Lab) -> None:
    objs = _seed(lab, "clusterqueue-flavor")
    lab.api.apply_all(objs[:-1])
    lab.api.create(objs[-1])
    cond = _pending(lab.api, "lint-noflavor-job", "batch")
    assert cond["message"] == "ClusterQueue lint-noflavor is inactive", cond
    active = _active(lab.api, "ClusterQueue", "lint-noflavor")
    assert active["reason"] == "FlavorNotFound" and "lint-missing" in active["message"], active
    lab.api.apply(_flavor("lint-missing", "l40s"))
    _admitted(lab.api, "lint-noflavor-job", "batch")


def test_namespace_outside_the_selector_is_inadmissible(lab: Lab) -> None:
    cq, lq, job = _seed(lab, "namespace-selector")
    lab.api.apply_all([cq, lq])
    lab.api.create(job)
    cond = _pending(lab.api, "lint-narrow-job", "batch")
    # Kueue 0.19.2 writes it lower-case (pkg/scheduler/scheduler.go)
    assert cond["message"] == "workload namespace doesn't match ClusterQueue selector", cond
    lab.api.apply({**cq, "spec": {**cq["spec"], "namespaceSelector": BATCH}})
    _admitted(lab.api, "lint-narrow-job", "batch")


def _admitted_but_unplaced(lab: Lab, rule: str) -> str:
    """Kueue admits the job on the seeded flavor; the scheduler leaves its pod Pending."""
    flavor, cq, lq, job = _seed(lab, rule)
    lab.api.apply_all([flavor, cq, lq])
    lab.api.create(job)
    name = job["metadata"]["name"]
    _admitted(lab.api, name, "batch")
    return _unschedulable(lab.api, name, "batch")


def _refit(lab: Lab, flavor: Obj, rule: str) -> None:
    """With the flavor fixed, a new job on it (pod templates are fixed at admission) runs."""
    lab.api.apply(flavor)
    again = _seed(lab, rule)[-1]
    name = again["metadata"]["name"] = again["metadata"]["name"] + "-fixed"
    again["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] = name
    lab.api.create(again)
    _scheduled(lab.api, name, "batch")


def test_flavor_selecting_no_pool_leaves_admitted_pods_pending(lab: Lab) -> None:
    why = _admitted_but_unplaced(lab, "flavor-pool")
    assert "didn't match Pod's node affinity/selector" in why, why
    assert "untolerated" not in why, why
    _refit(lab, _flavor("lint-nopool", "l40s"), "flavor-pool")


def test_flavor_without_the_pool_toleration_leaves_admitted_pods_pending(lab: Lab) -> None:
    why = _admitted_but_unplaced(lab, "flavor-taints")
    assert "had untolerated taint" in why, why
    _refit(lab, _flavor("lint-untolerated", "l40s"), "flavor-taints")


def _quota_synced(api: Api, rq: Obj) -> None:
    """Quota admission checks status.hard, which the quota controller copies from spec."""
    _eventually(f"{rq['metadata']['name']}: quota status", lambda: (
        (api.get(rq) or {}).get("status") or {}).get("hard") == rq["spec"]["hard"])


def test_namespace_quota_below_the_queue_refuses_the_admitted_pods(lab: Lab) -> None:
    ns, rq, cq, lq, job = _seed(lab, "resourcequota-admits")
    lab.api.apply_all([ns, rq, cq, lq])
    _eventually("lint-rq ServiceAccount", lambda: lab.api.exists(
        "v1", "ServiceAccount", "default", "lint-rq"))
    _quota_synced(lab.api, rq)
    lab.api.create(job)
    _admitted(lab.api, "lint-rq-job", "lint-rq")
    event = _eventually("the Job controller cannot make the pod", lambda: next((
        e for e in lab.api.objects("v1", "Event", "lint-rq")
        if e["involvedObject"]["name"] == "lint-rq-job"
        and "exceeded quota" in e.get("message", "")), None))
    assert "requests.cpu=2" in event["message"], event
    fixed = {**rq, "spec": {"hard": {"requests.cpu": "2"}}}
    lab.api.apply(fixed)
    _quota_synced(lab.api, fixed)
    _scheduled(lab.api, "lint-rq-job", "lint-rq")


# --- DRA: the scheduler cannot allocate, Kueue refuses, or the quota does not fence ------

def test_claim_on_a_missing_device_class_stays_pending(lab: Lab) -> None:
    template, pod = _seed(lab, "claim-deviceclass")
    lab.api.apply(template)
    lab.api.create(pod)
    why = _unschedulable(lab.api, "lint-noclass-pod", "serving")
    # kube-scheduler pkg/scheduler/framework/plugins/dynamicresources (PreFilter)
    assert "device class lint-no-such-class does not exist" in why, why
    lab.api.apply(_device_class(lab.objects, "lint-no-such-class"))
    _scheduled(lab.api, "lint-noclass-pod", "serving")


def test_device_class_matching_no_device_is_never_allocated(lab: Lab) -> None:
    dc, template, pod = _seed(lab, "deviceclass-matches")
    lab.api.apply_all([dc, template])
    lab.api.create(pod)
    assert "cannot allocate all claims" in _unschedulable(lab.api, "lint-nomatch-pod", "serving")
    lab.api.apply(_device_class(lab.objects, "lint-nomatch"))  # the L40S selector
    _scheduled(lab.api, "lint-nomatch-pod", "serving")


def test_claim_on_an_unmapped_device_class_is_inadmissible(lab: Lab) -> None:
    dc, template, job = _seed(lab, "kueue-dra-mapping")
    lab.api.apply_all([dc, template])
    lab.api.create(job)
    cond = _pending(lab.api, "lint-unmapped-job", "serving")
    assert "DeviceClass lint-unmapped is not mapped in DRA configuration" in cond["message"], cond


def test_quota_without_the_class_lets_its_claims_past_the_fence(lab: Lab) -> None:
    """The namespace may hold no L40S; a claim on another class selecting the same GPUs is
    let through until the quota names that class too."""
    ns, fence, dc, template = _seed(lab, "resourcequota-dra")
    lab.api.apply_all([ns, fence, dc])
    _quota_synced(lab.api, fence)

    def claim(name: str, device_class: str) -> Obj:
        spec = copy.deepcopy(template["spec"]["spec"])
        spec["devices"]["requests"][0]["exactly"]["deviceClassName"] = device_class
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": "lint-fence"}, "spec": spec}
    with pytest.raises(ApiError, match="exceeded quota: lint-fence"):
        lab.api.create(claim("lint-fenced", "gpu-l40s-48gb"))
    lab.api.create(claim("lint-past-the-fence", "lint-alias"))
    hard = {**fence["spec"]["hard"], "lint-alias.deviceclass.resource.k8s.io/devices": "0"}
    fixed = {**fence, "spec": {"hard": hard}}
    lab.api.apply(fixed)
    _quota_synced(lab.api, fixed)
    # the API server's quota admission reads its own informer copy of the quota, which may
    # trail the object a GET returns by a moment (CI saw one claim pass): the claim is
    # refused once that copy has the new class
    _eventually("a lint-alias claim refused by quota lint-fence",
                lambda: _refused(lab.api, claim("lint-alias-fenced", "lint-alias")))


def _refused(api: Api, o: Obj) -> bool:
    try:
        api.create(o)
    except ApiError as e:
        assert "exceeded quota: lint-fence" in str(e), e
        return True
    api.delete(o)  # admitted by a stale quota copy: try again
    return False


# --- capacity, queue names, topology, constraints ---------------------------------------

def test_job_naming_a_missing_local_queue_is_never_admitted(lab: Lab) -> None:
    job = _seed(lab, "workload-queue")[0]
    lab.api.create(job)
    cond = _pending(lab.api, "lint-noqueue-job", "batch")
    assert cond["message"] == "LocalQueue lint-noqueue doesn't exist", cond
    lab.api.apply(_lq("lint-noqueue", "batch", "batch"))
    _admitted(lab.api, "lint-noqueue-job", "batch")


def test_job_naming_a_missing_priority_class_gets_no_workload(lab: Lab) -> None:
    """Kueue cannot compose the Workload (WorkloadPriorityClass not found, retried in its
    log only): beside a control job in the same queue that gets one, it has none, until the
    class exists."""
    job = _seed(lab, "workload-queue")[1]
    control = _bare(lab.objects, "lint-wpc-control", "batch")
    lab.api.create(job)
    lab.api.create(control)
    _admitted(lab.api, "lint-wpc-control", "batch")
    assert _wl(lab.api, "lint-nowpc-job", "batch") is None
    assert (lab.api.get(job) or {})["spec"]["suspend"] is True
    lab.api.apply({"apiVersion": KUEUE, "kind": "WorkloadPriorityClass",
                   "metadata": {"name": "lint-nowpc"}, "value": 100})
    _admitted(lab.api, "lint-nowpc-job", "batch")


def test_flavor_naming_a_missing_topology_keeps_its_queue_inactive(lab: Lab) -> None:
    flavor, cq, lq, job = _seed(lab, "topology-levels")[:4]
    lab.api.apply_all([flavor, cq, lq])
    lab.api.create(job)
    cond = _pending(lab.api, "lint-tas-job", "batch")
    assert cond["message"] == "ClusterQueue lint-tas is inactive", cond
    active = _active(lab.api, "ClusterQueue", "lint-tas")
    assert active["reason"] == "TopologyNotFound" and "lint-notopo" in active["message"], active
    lab.api.apply({"apiVersion": KUEUE, "kind": "Topology", "metadata": {"name": "lint-notopo"},
                   "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]}})
    _admitted(lab.api, "lint-tas-job", "batch")


def test_topology_level_no_node_carries_finds_no_domain(lab: Lab) -> None:
    topology, flavor, cq, lq, job = _seed(lab, "topology-levels")[4:]
    lab.api.apply_all([topology, flavor, cq, lq])
    lab.api.create(job)
    cond = _pending(lab.api, "lint-levels-job", "batch")
    # Kueue leaves out the nodes without every level label: no domain even at the hostname
    # level; the same job on a Topology of hostname alone is admitted (lint-tas above).
    assert cond["message"] == ("couldn't assign flavors to pod set main: no topology domains "
                               "at level: kubernetes.io/hostname"), cond


def test_constraint_on_an_unpublished_attribute_is_never_allocated(lab: Lab) -> None:
    template, pod = _seed(lab, "claim-constraint")
    lab.api.apply(template)
    lab.api.create(pod)
    why = _unschedulable(lab.api, "lint-nosuch-attr-pod", "serving")
    assert "cannot allocate all claims" in why, why
    # the same pair on an attribute the driver publishes (templates are immutable: a new one)
    fixed = _pair("lint-product-pair", "gpu.nvidia.com/productName")
    again = _claimed(lab.objects, "lint-product-pair-pod", "lint-product-pair")
    lab.api.apply(fixed)
    lab.api.create(again)
    _scheduled(lab.api, "lint-product-pair-pod", "serving")


def test_quota_beyond_the_pool_admits_pods_no_node_holds(lab: Lab) -> None:
    """Last in the file: it fills the l40s pool's CPU."""
    ns, flavor, cq, lq, job = _seed(lab, "quota-capacity")
    lab.api.apply_all([ns, flavor, cq, lq])
    _eventually("lint-over ServiceAccount", lambda: lab.api.exists(
        "v1", "ServiceAccount", "default", "lint-over"))
    lab.api.create(job)
    _admitted(lab.api, "lint-over-job", "lint-over")  # 390 CPU: within the queue's 1000
    assert "Insufficient cpu" in _unschedulable(lab.api, "lint-over-job", "lint-over")

    def placed() -> list[str]:
        pods = [p for p in lab.api.objects("v1", "Pod", "lint-over")
                if p["metadata"].get("labels", {}).get("job-name") == "lint-over-job"]
        states = [(_cond(p, "PodScheduled") or {}).get("status", "") for p in pods]
        return states if len(states) == OVER and all(states) else []
    bound = _eventually("every pod tried", placed).count("True")
    # the lab runs the autoscaled pool at its minimum; lint counts the whole pool (372 CPU)
    lab_cpu = sum(int(n["status"]["allocatable"]["cpu"]) for n in lab.api.objects("v1", "Node")
                  if n["metadata"].get("labels", {}).get("aiplat.io/pool") == "l40s")
    assert 0 < 30 * bound <= lab_cpu <= 372 < 30 * OVER, (bound, lab_cpu)
