"""Sharing strategies, their configs and the recommendation; accounting sums."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from aiplat.catalog.load import load_catalog
from aiplat.devices import accounting as acct
from aiplat.devices import sharing
from aiplat.plan.resolve import resolve
from aiplat.spec import Platform
from aiplat.spec.load import load_platform

CATALOG = load_catalog()


def test_strategy_model_matches_documented_isolation() -> None:
    s = sharing.STRATEGIES
    assert (s["mig"].memory_protection, s["mig"].fault_isolation, s["mig"].bandwidth_qos) == (
        True, True, True)
    assert (s["mps"].memory_protection, s["mps"].fault_isolation, s["mps"].bandwidth_qos) == (
        True, False, False)
    assert not any((s["time-slicing"].memory_protection, s["time-slicing"].fault_isolation))
    assert "48" in s["mps"].max_partitions and "7" in s["mig"].max_partitions


def test_device_plugin_configs() -> None:
    cfg = sharing.device_plugin_config("time-slicing", 4)
    ts = cfg["sharing"]["timeSlicing"]
    assert ts == {"renameByDefault": False, "failRequestsGreaterThanOne": True,
                  "resources": [{"name": "nvidia.com/gpu", "replicas": 4}]}
    assert "mps" in sharing.device_plugin_config("mps", 8, rename_by_default=True)["sharing"]
    assert sharing.device_plugin_config("mig")["flags"]["migStrategy"] == "mixed"
    with pytest.raises(ValueError, match="between 2 and 48"):
        sharing.device_plugin_config("mps", 64)


def test_dra_gpu_config() -> None:
    cfg = sharing.dra_gpu_config("mps", replicas=4, memory_gb=80)
    assert cfg["kind"] == "GpuConfig" and cfg["apiVersion"] == "resource.nvidia.com/v1beta1"
    assert cfg["sharing"] == {"strategy": "MPS", "mpsConfig": {
        "defaultActiveThreadPercentage": 25, "defaultPinnedDeviceMemoryLimit": "20Gi"}}
    ts = sharing.dra_gpu_config("time-slicing", interval="Long")
    assert ts["sharing"]["timeSlicingConfig"] == {"interval": "Long"}
    with pytest.raises(ValueError):
        sharing.dra_gpu_config("mig")


def _example() -> Platform:
    from importlib import resources

    path = resources.files("aiplat") / "examples" / "platform.yaml"
    return load_platform(str(path))


def test_compare_recommends_with_reasons() -> None:
    resolved = resolve(_example(), CATALOG)
    for pool in resolved.pools:
        if pool.gpu is None:
            continue
        c = sharing.compare(resolved, pool)
        assert c.recommended in sharing.STRATEGIES and c.reasons
        assert {o.strategy for o in c.options} == {"exclusive", "mig", "mps", "time-slicing"}
        excl = next(o for o in c.options if o.strategy == "exclusive")
        assert excl.capacity == pool.gpus


def test_accounting_weights_slices_by_compute() -> None:
    t = "2026-01-01T{:02d}:00:00Z"
    rows = [{"tenant": "a", "start": t.format(0), "end": t.format(2), "count": 2},
            {"tenant": "a", "start": t.format(0), "end": t.format(7), "count": 1,
             "profile": "1g.10gb"},
            {"tenant": "b", "start": t.format(1), "end": t.format(4), "count": 2,
             "profile": "shared"}]
    usage = acct.summarize(acct.from_records(rows), replicas=4)
    assert usage[0] == acct.TenantUsage("a", 2, 4.0, 7.0, 5.0)
    assert usage[1] == acct.TenantUsage("b", 1, 0.0, 6.0, 1.5)
    window = acct.summarize(acct.from_records(rows),
                            since=datetime(2026, 1, 1, 1, tzinfo=UTC),
                            until=datetime(2026, 1, 1, 2, tzinfo=UTC))
    assert window[0].gpu_hours == 2.0
    assert acct.to_csv(usage).splitlines()[1] == "a,2,4.0,7.0,5.0"
    with pytest.raises(acct.AccountingError, match=r"records\[0\].end"):
        acct.from_records([{"tenant": "a", "start": t.format(0), "end": "later", "count": 1}])


def test_accounting_from_pod_and_claim_snapshots() -> None:
    until = datetime(2026, 1, 1, 10, tzinfo=UTC)
    pods = {"items": [
        {"metadata": {"namespace": "team-a"}, "spec": {"containers": [
            {"resources": {"limits": {"nvidia.com/mig-3g.40gb": "1", "cpu": "4"}}}]},
         "status": {"startTime": "2026-01-01T08:00:00Z", "containerStatuses": [
             {"state": {"terminated": {"finishedAt": "2026-01-01T09:00:00Z"}}}]}},
        {"metadata": {"namespace": "team-b"}, "spec": {"containers": [
            {"resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
         "status": {"startTime": "2026-01-01T09:30:00Z"}},
        {"metadata": {"namespace": "team-c"}, "spec": {"containers": [
            {"resources": {"limits": {"nvidia.com/gpu": "1"}}}]}, "status": {}},
    ]}
    usage = {u.tenant: u for u in acct.summarize(acct.from_pods(pods, until))}
    assert usage["team-a"].weighted_gpu_hours == round(3 / 7, 4)
    assert usage["team-b"].gpu_hours == 4.0 and "team-c" not in usage
    claims = {"items": [{"metadata": {"namespace": "team-a",
                                      "creationTimestamp": "2026-01-01T06:00:00Z"},
                         "status": {"allocation": {"devices": {"results": [
                             {"driver": "gpu.nvidia.com", "device": "gpu-0-mig-1g.10gb-19-0"},
                             {"driver": "gpu.nvidia.com", "device": "gpu-1"}]}}}}]}
    u = acct.summarize(acct.from_claims(claims, until))[0]
    assert (u.gpu_hours, u.slice_hours, u.weighted_gpu_hours) == (4.0, 4.0, round(4 + 4 / 7, 4))
