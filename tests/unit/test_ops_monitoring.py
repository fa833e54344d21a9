"""Monitoring rules as data: coverage of the issue's signals, thresholds from the spec, the
promtool test cases every alert carries, and the scrape configuration.

promtool itself runs in tests/integration/test_monitoring_promtool.py; these tests check what
promtool cannot: that thresholds follow the spec and that no alert ships without both cases.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.kube.facts import POOL_LABEL as KUBE_POOL_LABEL
from aiplat.node.checks import CONDITION_TYPE
from aiplat.ops.monitoring import (
    AGENT_CONDITION,
    AIPLAT_METRICS,
    JOBS,
    KUEUE_CA_FILE,
    KUEUE_METRICS_SERVER_NAME,
    POOL_LABEL,
    RULES_FILE,
    TESTS_FILE,
    AlertRule,
    Discovery,
    expand,
    monitoring_rules,
    render_monitoring,
    rule_tests_data,
    rules_data,
    scrape_config,
)
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform

JOIN = " * on (node) group_left (pool) aiplat:node_pool:info"


def example(edit: Callable[[dict[str, Any]], None] | None = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), EXAMPLE, load_catalog())


def alerts(platform: Platform) -> dict[str, AlertRule]:
    return {a.name: a for g in monitoring_rules(platform) for a in g.alerts}


def test_every_signal_of_the_issue_has_an_alert() -> None:
    names = set(alerts(example()))
    assert {
        "GpuCriticalXid", "GpuEccUncorrectable", "GpuRowRemapFailure", "GpuRowRemapPending",
        "GpuTemperatureHigh", "GpuThermalOrPowerSlowdown", "GpuFallenOffBus", "GpuMissing",
        "GpuAllocatedIdle", "NodeDiskSpaceLow", "NodeMemoryLow", "NodeNetworkErrors",
        "NodeNetworkDrops", "KueueWorkloadsPendingTooLong", "KueueQuotaNearlyExhausted",
        "KueuePreemptionsHigh", "ModelPullErrors", "ModelCacheHitRateLow",
        "ModelStoreServerErrors", "AiplatNodeCheckFailed", "AiplatNodeUnhealthy",
    } <= names


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    for a in alerts(example()).values():
        assert a.firing.series and a.firing.fires, a.name
        assert a.healthy.series and not a.healthy.fires, a.name
        # The annotations expand with the labels the alert fires with (no missing label).
        for labels in a.firing.fires:
            assert "{{" not in "".join(a.annotations({**labels, **a.labels}).values())


def test_alert_names_unique_and_severity_known() -> None:
    names = [a.name for g in monitoring_rules(example()) for a in g.alerts]
    assert len(names) == len(set(names))
    assert {a.severity for a in alerts(example()).values()} <= {"critical", "warning", "info"}


def test_expand_refuses_a_label_the_alert_lacks() -> None:
    assert expand("on {{ $labels.node }}", {"node": "n1"}) == "on n1"
    with pytest.raises(KeyError, match="gpu"):
        expand("GPU {{ $labels.gpu }}", {"node": "n1"})


def test_gpu_thresholds_follow_each_pools_checks() -> None:
    def hot(data: dict[str, Any]) -> None:
        data["pools"][0]["node"]["checks"] = {"maxGpuTempC": 70, "maxEccUncorrected": 2,
                                              "xidWindowHours": 6}

    a = alerts(example(hot))
    temp = a["GpuTemperatureHigh"].expr
    assert f'(DCGM_FI_DEV_GPU_TEMP{JOIN}{{pool=~"h100"}}) > 70' in temp
    assert f'(DCGM_FI_DEV_GPU_TEMP{JOIN}{{pool=~"l40s"}}) > 85' in temp
    assert (f'(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{JOIN}{{pool=~"h100"}}) > 2'
            in a["GpuEccUncorrectable"].expr)
    assert "[6h]" in a["GpuCriticalXid"].expr and "[24h]" in a["GpuCriticalXid"].expr
    # The firing case sits just above the spec's threshold, the healthy case just below.
    assert a["GpuTemperatureHigh"].firing.series[0].values.startswith("73x")
    assert a["GpuTemperatureHigh"].healthy.series[0].values.startswith("69x")
    # Defaults: one expression for both pools.
    same = alerts(example())["GpuTemperatureHigh"].expr
    assert same == f'(DCGM_FI_DEV_GPU_TEMP{JOIN}{{pool=~"h100|l40s"}}) > 85'


def test_gpu_count_per_pool_comes_from_the_spec() -> None:
    expr = alerts(example())["GpuMissing"].expr
    assert f'(DCGM_FI_DEV_GPU_TEMP{JOIN}{{pool=~"h100"}}) < 8' in expr
    assert f'(DCGM_FI_DEV_GPU_TEMP{JOIN}{{pool=~"l40s"}}) < 4' in expr
    a = alerts(example())["GpuMissing"]
    # Seven or eight GPUs of one node, and that node's labels from kube-state-metrics.
    assert len(a.firing.series) == 8 and len(a.healthy.series) == 9


def test_remapped_rows_alert_only_when_the_spec_sets_a_limit() -> None:
    assert "GpuUncorrectableRemappedRows" not in alerts(example())

    def limit(data: dict[str, Any]) -> None:
        data["pools"][1]["node"]["checks"] = {"maxRemappedRowsUncorrectable": 3}

    a = alerts(example(limit))["GpuUncorrectableRemappedRows"]
    assert a.expr == f'(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{JOIN}{{pool=~"l40s"}}) > 3'


def test_critical_xids_exclude_79_which_has_its_own_alert() -> None:
    a = alerts(example())
    assert "|79|" not in a["GpuCriticalXid"].expr and "|48|" not in a["GpuCriticalXid"].expr
    assert '"48|56|' in a["GpuCriticalXid"].expr
    assert 'xid="79"' in a["GpuFallenOffBus"].expr


def test_operations_monitoring_settings_reach_the_rules() -> None:
    def tune(data: dict[str, Any]) -> None:
        data["operations"]["monitoring"] = {"pendingMinutes": 15, "idleGpuUtilization": 0.1,
                                            "idleGpuMinutes": 20, "preemptionsPerHour": 3}

    a = alerts(example(tune))
    assert "[15m]" in a["KueueWorkloadsPendingTooLong"].expr
    assert a["KueueWorkloadsPendingTooLong"].for_ == "15m"
    assert a["GpuAllocatedIdle"].expr.endswith("< 0.1)") and a["GpuAllocatedIdle"].for_ == "20m"
    assert a["KueuePreemptionsHigh"].expr.endswith("> 3")


def test_platform_without_gpus_has_no_gpu_rules() -> None:
    def cpu_only(data: dict[str, Any]) -> None:
        for p in data["pools"]:
            del p["node"]["gpu"]
            p.pop("sharing", None)
        data["workloads"] = []

    groups = [g.name for g in monitoring_rules(example(cpu_only))]
    assert "aiplat-gpu" not in groups and "aiplat-node" in groups


def test_rule_file_and_test_file_shapes() -> None:
    groups = monitoring_rules(example())
    rules = rules_data(groups)
    n_alerts = sum(len(g.alerts) for g in groups)
    assert sum(1 for g in rules["groups"] for r in g["rules"] if "alert" in r) == n_alerts
    tests = rule_tests_data(groups)
    assert tests["rule_files"] == [RULES_FILE]
    assert len(tests["tests"]) == 2 * n_alerts
    silent = [t for t in tests["tests"] if t["name"].endswith("stays silent")]
    assert len(silent) == n_alerts
    assert all(t["alert_rule_test"][0]["exp_alerts"] == [] for t in silent)
    files = render_monitoring(example())
    assert set(files) == {RULES_FILE, TESTS_FILE, "prometheus.yaml", "checklist.md",
                          "kubernetes/prometheusrule.yaml",
                          "kubernetes/servicemonitor-kueue.yaml",
                          "kubernetes/grafana-dashboards.yaml",
                          "grafana/provisioning/dashboards/aiplat.yaml",
                          *(f"grafana/dashboards/aiplat-{d}.json"
                            for d in ("gpus", "kueue", "model-store"))}
    assert yaml.safe_load(files[RULES_FILE]) == rules
    # The PrometheusRule carries the very rules the rule file (and promtool's tests) hold.
    prom_rule = list(yaml.safe_load_all(files["kubernetes/prometheusrule.yaml"]))[-1]
    assert prom_rule["kind"] == "PrometheusRule" and prom_rule["spec"] == rules
    sm = yaml.safe_load(files["kubernetes/servicemonitor-kueue.yaml"])
    tls = sm["spec"]["endpoints"][0]["tlsConfig"]
    assert tls["insecureSkipVerify"] is False and tls["serverName"] == KUEUE_METRICS_SERVER_NAME
    assert yaml.safe_load(files[TESTS_FILE]) == tests


def test_scrape_config_labels_targets_with_node_and_pool() -> None:
    # One name per concept: the node label the Kubernetes renderer sets.
    assert POOL_LABEL == KUBE_POOL_LABEL
    cfg = scrape_config(example())
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    assert set(jobs) == {j[0] for j in JOBS} | {"model-store"}
    # The node condition is the one the node agent sets.
    assert AGENT_CONDITION == CONDITION_TYPE
    ksm = jobs["kube-state-metrics"]
    assert ksm["honor_labels"] is True and len(ksm["relabel_configs"]) == 1
    for name, *_ in JOBS:
        if name == "kube-state-metrics":
            continue
        relabel = jobs[name]["relabel_configs"]
        assert {"source_labels": ["__meta_kubernetes_node_label_aiplat_io_pool"],
                "target_label": "pool"} in relabel
        assert jobs[name]["kubernetes_sd_configs"][0]["attach_metadata"] == {"node": True}
    assert cfg["rule_files"] == [RULES_FILE]
    assert cfg["global"]["external_labels"] == {"platform": "example"}
    files = render_monitoring(example(), "file")
    assert {f"targets/{j[0]}.yaml" for j in JOBS} <= set(files)
    assert all(yaml.safe_load(files[f"targets/{j[0]}.yaml"]) == [] for j in JOBS)


def test_checklist_lists_every_alert_and_aiplat_metric() -> None:
    md = render_monitoring(example())["checklist.md"]
    for name in alerts(example()):
        assert name in md
    for metric, *_ in AIPLAT_METRICS:
        assert metric in md
    assert "| h100 | 85 °C |" in md


@pytest.mark.parametrize(("discovery", "ca"), [
    ("kubernetes", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"),
    ("file", KUEUE_CA_FILE),
])
def test_kueue_scrape_verifies_tls_before_sending_its_token(discovery: Discovery,
                                                            ca: str) -> None:
    """The job sends a ServiceAccount token: with insecure_skip_verify anyone answering on
    the target's address would receive it. It verifies with the ServiceAccount CA instead."""
    cfg = scrape_config(example(), discovery)
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    kueue = jobs["kueue"]
    assert kueue["scheme"] == "https" and "credentials_file" in kueue["authorization"]
    assert kueue["tls_config"] == {"ca_file": ca, "server_name": KUEUE_METRICS_SERVER_NAME}
    assert KUEUE_METRICS_SERVER_NAME.endswith(".kueue-system.svc")
    assert not any(j.get("tls_config", {}).get("insecure_skip_verify") for j in jobs.values())


def test_every_gpu_alert_links_its_runbook_and_routes_by_pool() -> None:
    """Each GPU alert has a runbook procedure, and its series carry the node's pool: joined in
    its own expression or in a recording rule it reads (the Prometheus Operator proof found
    seven without pool and GpuAllocatedIdle without a link)."""
    platform = parse_platform(example_text(), EXAMPLE, load_catalog())
    rules = [r for g in monitoring_rules(platform) for r in g.rules]
    joined = {r.record for r in rules if not isinstance(r, AlertRule)
              and "aiplat:node_pool:info" in r.expr}
    gpu = [r for r in rules if isinstance(r, AlertRule) and r.name.startswith("Gpu")]
    assert gpu and joined
    for r in gpu:
        assert r.procedure, r.name
        assert "aiplat:node_pool:info" in r.expr or any(j in r.expr for j in joined), r.name
