"""The serving autoscaler as rendered (issue #43 item 2): an HPA per serving group from the
planned floor to the pool's ceiling on vLLM's own metrics, prometheus-adapter's rules for
them, and Kueue's ProvisioningRequest check for an autoscaled pool. Checked against the plan's
figures, worked out here from the sizing results, not from the renderer's helpers. What this
cannot show: that a running prometheus-adapter serves these names (no adapter runs here)."""

from __future__ import annotations

import math
from typing import Any

import yaml

from aiplat.catalog import load_catalog
from aiplat.kube import render
from aiplat.plan import build_plan
from aiplat.spec import EXAMPLE, example_text, parse_platform
from aiplat.spec.models import Platform

VLLM = ("vllm:num_requests_waiting", "vllm:time_to_first_token_seconds",
        "vllm:kv_cache_usage_perc")


def _platform(edit: Any = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), EXAMPLE, load_catalog())


def _objs(platform: Platform) -> list[dict[str, Any]]:
    return [o for objs in render(platform, load_catalog()).manifests.values() for o in objs]


def _kind(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


def test_hpa_floor_is_the_planned_replicas_and_ceiling_the_pool() -> None:
    platform = _platform()
    plan = build_plan(platform, load_catalog())
    objs = _objs(platform)
    hpas, deps = _kind(objs, "HorizontalPodAutoscaler"), _kind(objs, "Deployment")
    assert sorted(hpas) == ["assistant", "docs-search"]  # not the RAG query encoder
    pools = {p.name: p for p in plan.pools}
    for name, hpa in hpas.items():
        w = next(x for x in plan.workloads if x.name == name)
        serve = next(g for g in w.replica_groups if g.role == "serve")
        spec = hpa["spec"]
        assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                          "name": name}
        assert spec["minReplicas"] == serve.replicas == deps[name]["spec"]["replicas"]
        pool, pspec = pools[w.pool], platform.pool(w.pool)
        assert pspec is not None
        nodes = pspec.autoscaling.max if pspec.autoscaling else pool.nodes
        others = sum(g.gpus * g.replicas for x in plan.workloads if x.pool == w.pool
                     and x.run_hours is None for g in x.replica_groups if g is not serve)
        assert spec["maxReplicas"] == (nodes * pool.gpus_per_node - others) // serve.gpus
    # the example's figures: docs-search 11 TP-1 replicas on l40s (max 6 nodes x 4 GPUs,
    # less its one-GPU encoder), assistant one TP-4 replica on 6 x 8 H100
    assert (hpas["docs-search"]["spec"]["minReplicas"],
            hpas["docs-search"]["spec"]["maxReplicas"]) == (11, 23)
    assert (hpas["assistant"]["spec"]["minReplicas"],
            hpas["assistant"]["spec"]["maxReplicas"]) == (1, 12)


def test_hpa_targets_come_from_the_slo() -> None:
    platform = _platform()
    plan = build_plan(platform, load_catalog())
    hpa = _kind(_objs(platform), "HorizontalPodAutoscaler")["assistant"]
    slo = next(w for w in plan.workloads if w.name == "assistant").results["slo"]
    target, prefill = slo["inputs"]["target_ttft_seconds"], slo["prefill_seconds"]
    got = {m["pods"]["metric"]["name"]: m["pods"]["target"]["averageValue"]
           for m in hpa["spec"]["metrics"]}
    assert got == {"vllm_num_requests_waiting": str(math.floor((target - prefill) / prefill)),
                   "vllm_time_to_first_token_p90_seconds": "1000m",
                   "vllm_kv_cache_usage_perc": "900m"}
    assert hpa["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"] == 0


def test_adapter_rules_serve_vllms_series_under_the_hpas_names() -> None:
    objs = _objs(_platform())
    cm = _kind(objs, "ConfigMap")["prometheus-adapter-vllm"]
    rules = yaml.safe_load(cm["data"]["config.yaml"])["rules"]
    served = {r["name"]["as"] for r in rules}
    used = {m["pods"]["metric"]["name"] for h in _kind(objs, "HorizontalPodAutoscaler").values()
            for m in h["spec"]["metrics"]}
    assert used <= served
    queried = " ".join(r["seriesQuery"] for r in rules)
    for series in VLLM:
        assert series in queried
    assert "vllm:gpu_cache_usage_perc" not in queried  # deprecated in vLLM v0.11
    ttft = next(r for r in rules if "time_to_first_token" in r["seriesQuery"])
    assert ttft["seriesQuery"].startswith("vllm:time_to_first_token_seconds_bucket")
    assert "histogram_quantile(0.9" in ttft["metricsQuery"]


def test_provisioning_check_only_for_autoscaled_pools() -> None:
    objs = _objs(_platform())  # l40s autoscales, h100 is fixed
    prc, checks = _kind(objs, "ProvisioningRequestConfig"), _kind(objs, "AdmissionCheck")
    assert sorted(prc) == sorted(checks) == ["l40s-provisioning"]
    assert checks["l40s-provisioning"]["spec"]["parameters"]["name"] == "l40s-provisioning"
    assert checks["l40s-provisioning"]["spec"]["controllerName"] == \
        "kueue.x-k8s.io/provisioning-request"

    def fixed(data: dict[str, Any]) -> None:
        for p in data["pools"]:
            if "autoscaling" in p:
                p["count"] = p.pop("autoscaling")["max"]

    objs = _objs(_platform(fixed))
    assert not _kind(objs, "ProvisioningRequestConfig")
    assert not _kind(objs, "AdmissionCheck")
    # a fixed pool: the ceiling is its planned nodes' GPUs
    assert _kind(objs, "HorizontalPodAutoscaler")["docs-search"]["spec"]["maxReplicas"] >= 11


def test_each_scaled_group_is_scraped_for_the_adapter() -> None:
    platform = _platform()
    objs = _objs(platform)
    deps, svcs = _kind(objs, "Deployment"), _kind(objs, "Service")
    monitors = _kind(objs, "ServiceMonitor")
    for name in _kind(objs, "HorizontalPodAutoscaler"):
        svc, mon = svcs[f"{name}-metrics"], monitors[f"{name}-metrics"]
        pod_labels = deps[name]["spec"]["template"]["metadata"]["labels"]
        assert svc["spec"]["selector"].items() <= pod_labels.items()
        assert svc["spec"]["clusterIP"] == "None"
        assert mon["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
        assert mon["metadata"]["namespace"] == svc["metadata"]["namespace"]
        assert mon["spec"]["endpoints"][0]["port"] == svc["spec"]["ports"][0]["name"]
        # the Prometheus's serviceMonitorSelector (spec operations.monitoring.selectorLabels)
        sel = platform.operations.monitoring.selector_labels
        assert sel and sel.items() <= mon["metadata"]["labels"].items()
    assert "docs-search-embed-metrics" not in svcs  # the encoder is not autoscaled


def test_a_replica_across_nodes_is_a_leader_worker_set() -> None:
    """TP 8 x PP 2 on 8-GPU H100 nodes: each replica spans two nodes, so it is one LWS group
    of a leader (Ray head, vLLM serving) and a worker (joins the leader's Ray cluster); the
    HPA scales the LWS, kube.agree reads it as the plan's pods, and the packaged LWS CRD
    (kubernetes-sigs/lws v0.9.0) validates it."""
    import sys
    from pathlib import Path

    from aiplat.kube.agree import disagreements
    from aiplat.kube.crds import packaged_crds
    from aiplat.kube.pipeline import rendered_items
    from aiplat.kube.validate import validate_objects

    sys.path.insert(0, str(Path(__file__).parent))
    from test_plan_tree_agree import _both, _build, _set

    platform, plan, rendered = _build(_both(_set("serving.tensorParallel", 8),
                                            _set("serving.pipelineParallel", 2)))
    w = next(x for x in plan.workloads if x.name == "assistant")
    g = w.replica_groups[0]
    assert g.gpus == 16
    objs = rendered.objects()
    lws = _kind(objs, "LeaderWorkerSet")["assistant"]
    assert "assistant" not in _kind(objs, "Deployment")
    assert lws["spec"]["replicas"] == g.replicas
    lwt = lws["spec"]["leaderWorkerTemplate"]
    assert lwt["size"] == 2
    assert lws["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == w.tenant
    leader = lwt["leaderTemplate"]["spec"]["containers"][0]
    worker = lwt["workerTemplate"]["spec"]["containers"][0]
    assert "ray start --head" in leader["command"][2] and '"$@"' in leader["command"][2]
    assert leader["args"][leader["args"].index("--pipeline-parallel-size") + 1] == "2"
    assert "$LWS_LEADER_ADDRESS" in worker["command"][2] and "args" not in worker
    assert "readinessProbe" in leader and "readinessProbe" not in worker
    hpa = _kind(objs, "HorizontalPodAutoscaler")["assistant"]
    assert hpa["spec"]["scaleTargetRef"]["kind"] == "LeaderWorkerSet"
    assert hpa["spec"]["maxReplicas"] == 48 // 16
    assert disagreements(plan, platform, objs) == []
    # no error and no unchecked object: the LWS is checked against its packaged CRD
    assert validate_objects(rendered_items(rendered), "1.34", packaged_crds()).issues == []
