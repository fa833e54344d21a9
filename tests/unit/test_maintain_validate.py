"""The maintenance gate's validation workload (``maintain/validate.py``, issue #42): the Job
it submits through Kueue, the GPUs it asks for, and how its state reads as a verdict. The
live proof (Kueue admitting it on a cordoned kwok node, a node that lost its GPUs failing
it) is in tests/integration/test_maintain_live.py."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from click.testing import CliRunner

from aiplat.cli.main import cli
from aiplat.cluster import config as lab_config
from aiplat.kube.crds import CrdIndex
from aiplat.kube.validate import validate_objects
from aiplat.maintain import validate

NODE = {"status": {"allocatable": {
    "cpu": "112", "memory": "2Ti", "hugepages-1Gi": "0", "nvidia.com/gpu": "8",
    "nvidia.com/mig-1g.10gb": "7", "rdma/rdma_shared_device_a": "63", "amd.com/gpu": "0"}}}


def test_it_asks_for_the_gpus_and_mig_slices_only() -> None:
    assert validate.gpu_devices(NODE) == {"nvidia.com/gpu": "8", "nvidia.com/mig-1g.10gb": "7"}
    assert validate.gpu_devices({"status": {}}) == {}
    assert validate.gpu_devices({}) == {}


def test_the_job_name_is_a_dns_label_for_any_node_name() -> None:
    names = {validate.job_name(n, "mnt-1234abcd") for n in (
        "gpu-0", "GPU_0.example.com", "x" * 250, "node.with.dots-and--dashes")}
    assert len(names) == 4
    for n in names:
        assert len(n) <= 63 and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", n), n
    assert validate.job_name("gpu-0", "a") != validate.job_name("gpu-0", "b")


def test_the_job_is_kueue_managed_pinned_and_never_retried() -> None:
    j = validate.job("gpu-3", "mnt-1", "validation", "ops", {"nvidia.com/gpu": "8"},
                     deadline_s=90)
    meta, spec = j["metadata"], j["spec"]
    assert meta["namespace"] == "ops"
    assert meta["labels"][validate.QUEUE_LABEL] == "validation"
    assert spec["suspend"] is True and spec["backoffLimit"] == 0
    assert spec["activeDeadlineSeconds"] == 90
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/hostname": "gpu-3"}
    assert {"operator": "Exists"} in pod["tolerations"]  # the cordon's taint included
    c = pod["containers"][0]
    assert c["resources"]["limits"] == c["resources"]["requests"] == {"nvidia.com/gpu": "8"}
    assert spec["template"]["metadata"]["labels"][validate.VALIDATION_LABEL] == "true"


def test_the_job_passes_the_api_schema_and_restricted_pod_security() -> None:
    j = validate.job("gpu-3", "mnt-1", "validation", "ops", {"nvidia.com/gpu": "8"})
    assert validate_objects([("validate.yaml", j)], "1.34", CrdIndex()).issues == []
    c = j["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    assert c["runAsNonRoot"] is True and c["seccompProfile"]["type"] == "RuntimeDefault"
    assert c["allowPrivilegeEscalation"] is False and c["capabilities"]["drop"] == ["ALL"]


def _cond(kind: str, status: str, **kw: str) -> dict[str, str]:
    return {"type": kind, "status": status, **kw}


def test_the_verdict_reads_the_job_then_kueue_then_the_scheduler() -> None:
    job: dict[str, object] = {"status": {}}
    assert validate.verdict(None, None, [])[0] is False
    ok, why = validate.verdict(job, None, [])
    assert ok is None and "not admitted by Kueue: no Workload yet" in why
    pending = {"status": {"conditions": [_cond(
        "QuotaReserved", "False", message="couldn't assign flavors to pod set main: "
        "insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed")]}}
    ok, why = validate.verdict(job, pending, [])
    assert ok is None and "insufficient unused quota for nvidia.com/gpu" in why
    admitted = {"status": {"conditions": [_cond("QuotaReserved", "True")]}}
    unplaced = {"status": {"conditions": [_cond(
        "PodScheduled", "False", message="0/16 nodes are available: 1 Insufficient "
        "nvidia.com/gpu")]}}
    ok, why = validate.verdict(job, admitted, [unplaced])
    assert ok is None and "not scheduled: 0/16 nodes are available" in why
    assert validate.verdict(job, admitted, [])[0] is None
    done = {"status": {"conditions": [_cond("Complete", "True")]}}
    assert validate.verdict(done, admitted, []) == (True, "validation Job complete")
    failed = {"status": {"conditions": [_cond("Failed", "True", reason="BackoffLimitExceeded",
                                              message="Job has reached the specified "
                                              "backoff limit")]}}
    ok, why = validate.verdict(failed, admitted, [])
    assert ok is False and "BackoffLimitExceeded" in why


def test_the_lab_completes_only_validation_pods(tmp_path: Path) -> None:
    """The lab's kwok stages: upstream's general pod-complete stage, narrowed to the label
    maintain's Jobs carry (the two constants are one label)."""
    assert lab_config.VALIDATION_LABEL == validate.VALIDATION_LABEL
    (tmp_path / "kwok").mkdir()
    (tmp_path / "kwok" / "pod-ready.yaml").write_text("kind: Stage\nmetadata: {name: r}\n")
    (tmp_path / "kwok-general").mkdir()
    (tmp_path / "kwok-general" / "pod-complete.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage",
        "metadata": {"name": "pod-complete"},
        "spec": {"selector": {"matchExpressions": [
            {"key": ".metadata.ownerReferences.[].kind", "operator": "In",
             "values": ["Job"]}]},
            "delay": {"durationMilliseconds": 1000, "jitterDurationMilliseconds": 5000},
            "next": {"statusTemplate": "phase: Succeeded"}}}))
    docs = list(yaml.safe_load_all(lab_config.kwok_stages(tmp_path)))
    assert [d["metadata"]["name"] for d in docs] == ["r", "aiplat-validation-complete"]
    keys = [e["key"] for e in docs[1]["spec"]["selector"]["matchExpressions"]]
    assert keys[-1] == f'.metadata.labels["{validate.VALIDATION_LABEL}"]'
    assert ".metadata.ownerReferences.[].kind" in keys  # upstream's own selectors kept
    # without the upstream file (an older lab build) the stages are upstream's alone
    (tmp_path / "kwok-general" / "pod-complete.yaml").unlink()
    assert len(list(yaml.safe_load_all(lab_config.kwok_stages(tmp_path)))) == 1


def test_a_malformed_queue_is_refused_with_the_fix() -> None:
    for bad in ("validation", "Ops/validation", "ops/", "/q", "ops/q/x"):
        r = CliRunner().invoke(cli, ["maintain", "run", "--pool", "gpu", "--change",
                                     "driver=580.95.05", "--validate-queue", bad, "--dry-run"])
        assert r.exit_code == 2, (bad, r.output)
        assert "NAMESPACE/LOCALQUEUE" in r.output and "Traceback" not in r.output


def test_the_validating_taint_is_added_once_and_removed_keeping_the_others() -> None:
    gpu = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    node = {"spec": {"taints": [gpu]}}
    on = validate.taints(node, True)
    assert on == [gpu, {"key": validate.VALIDATING_TAINT, "value": "true",
                        "effect": "NoSchedule"}]
    assert validate.taints({"spec": {"taints": on}}, True) == on  # a resumed run: once
    assert validate.taints({"spec": {"taints": on}}, False) == [gpu]
    assert validate.taints({}, False) == []
