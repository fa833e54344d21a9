"""Issue 41, "monitoring that cannot fire": what the rendered monitoring objects need so that
kube-prometheus-stack's Prometheus selects them, the DCGM exporter exports what the rules
read with the labels they read, and each alert links to a runbook an on-call can open.

The Prometheus side runs in tests/integration/test_monitoring_promtool.py (the series as
the GPU operator's ServiceMonitor labels them fire the alerts).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from aiplat.catalog import load_catalog
from aiplat.errors import SpecError
from aiplat.kube.facts import GPU_OPERATOR_NS, POOL_LABEL, pool_facts
from aiplat.kube.render_cluster import GPU_OPERATOR_NS as CLUSTER_GPU_OPERATOR_NS
from aiplat.kube.render_cluster import gpu_operator
from aiplat.kube.render_dcgm import DCGM_CONFIG, DCGM_FIELDS, METRICS_FILE, dcgm_exporter
from aiplat.ops import dashboards as dash
from aiplat.ops.monitoring import (
    CHECKLIST_FILE,
    PROMETHEUS_RULE_FILE,
    RULES_FILE,
    SERVICE_MONITOR_FILE,
    TESTS_FILE,
    AlertRule,
    dcgm_fields_read,
    monitoring_rules,
    render_monitoring,
)
from aiplat.plan.resolve import resolve
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform


def example(edit: Callable[[dict[str, Any]], None] | None = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), EXAMPLE, load_catalog())


def monitoring(**settings: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["operations"]["monitoring"] = settings
    return edit


def alerts(platform: Platform) -> dict[str, AlertRule]:
    return {a.name: a for g in monitoring_rules(platform) for a in g.alerts}


def dcgm_values(platform: Platform) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return gpu_operator(platform, pool_facts(resolve(platform, load_catalog())))


def monitor_objects(platform: Platform) -> list[dict[str, Any]]:
    files = render_monitoring(platform)
    docs = [*yaml.safe_load_all(files[PROMETHEUS_RULE_FILE]),
            yaml.safe_load(files[SERVICE_MONITOR_FILE])]
    return [d for d in docs if d["kind"] in ("PrometheusRule", "ServiceMonitor")]


# ---------------------------------------------------------------------------- 1. selection


def test_every_rendered_monitor_carries_the_label_kube_prometheus_stack_selects() -> None:
    objs = monitor_objects(example())
    assert {o["kind"] for o in objs} == {"PrometheusRule", "ServiceMonitor"}
    for o in objs:
        assert o["metadata"]["labels"]["release"] == "kube-prometheus-stack", o["kind"]
    values, _ = dcgm_values(example())
    sm = values["dcgmExporter"]["serviceMonitor"]
    assert sm["enabled"] is True
    assert sm["additionalLabels"] == {"release": "kube-prometheus-stack"}


def test_selector_labels_follow_the_spec() -> None:
    platform = example(monitoring(selectorLabels={"release": "monitoring", "team": "ml"}))
    for o in monitor_objects(platform):
        labels = o["metadata"]["labels"]
        assert labels["release"] == "monitoring" and labels["team"] == "ml"
    values, _ = dcgm_values(platform)
    assert values["dcgmExporter"]["serviceMonitor"]["additionalLabels"] == {
        "release": "monitoring", "team": "ml"}
    assert "release=monitoring, team=ml" in render_monitoring(platform)[CHECKLIST_FILE]


def test_a_selector_label_kubernetes_refuses_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match="selectorLabels"):
        example(monitoring(selectorLabels={"release": "kube prometheus"}))


# ---------------------------------------------------------------------------- 2. labels


def _arriving(service_monitor: dict[str, Any], target: dict[str, str],
              sample: dict[str, str]) -> dict[str, str]:
    """What a sample's labels are once Prometheus has scraped it through the ServiceMonitor:
    the target labels prometheus-operator sets, the ServiceMonitor's relabelings (the
    actions used here), then the sample's own labels merged per honorLabels (a clash keeps
    the target's and renames the sample's to exported_<name>)."""
    labels = dict(target)
    for r in service_monitor.get("relabelings", []):
        action = r.get("action", "replace")
        if action == "replace":
            value = ";".join(labels.get(s, "") for s in r.get("sourceLabels", []))
            labels[r["targetLabel"]] = r.get("replacement", value)
        elif action == "labeldrop":
            labels = {k: v for k, v in labels.items() if not re.fullmatch(r["regex"], k)}
        else:  # pragma: no cover - an action this simulation does not know
            raise AssertionError(action)
    out = {k: v for k, v in labels.items() if not k.startswith("__")}
    for k, v in sample.items():
        if k in out and not service_monitor.get("honorLabels", False):
            out[f"exported_{k}"] = v
        else:
            out[k] = v
    return out


# prometheus-operator's target labels for an endpoints target (namespace, service, pod,
# container, endpoint, job from jobLabel: app), with the discovery's meta labels.
OPERATOR_TARGET = {
    "__meta_kubernetes_pod_node_name": "h100-node-1", "namespace": GPU_OPERATOR_NS,
    "service": "nvidia-dcgm-exporter", "pod": "nvidia-dcgm-exporter-x7k2p",
    "container": "nvidia-dcgm-exporter", "endpoint": "gpu-metrics",
    "job": "nvidia-dcgm-exporter", "instance": "10.0.0.11:9400"}
# dcgm-exporter's labels of a GPU held by a workload (its pod mapping).
ALLOCATED_GPU = {"gpu": "0", "UUID": "GPU-1", "Hostname": "nvidia-dcgm-exporter-x7k2p",
                 "namespace": "research", "pod": "train-0", "container": "main"}


def test_gpu_series_arrive_with_the_labels_the_rules_read() -> None:
    values, _ = dcgm_values(example())
    got = _arriving(values["dcgmExporter"]["serviceMonitor"], OPERATOR_TARGET, ALLOCATED_GPU)
    assert got["node"] == "h100-node-1" and got["job"] == "dcgm-exporter"
    # The workload's pod, not the exporter's, and under the name the idle rule reads.
    assert (got["namespace"], got["pod"], got["container"]) == ("research", "train-0", "main")
    assert not any(k.startswith("exported_") for k in got)
    a = alerts(example())["GpuAllocatedIdle"]
    assert 'pod!=""' in a.expr and "exported_" not in a.expr
    # A free GPU has no pod label: the exporter pod's own must not stand in for it.
    free = _arriving(values["dcgmExporter"]["serviceMonitor"], OPERATOR_TARGET,
                     {"gpu": "1", "UUID": "GPU-2"})
    assert "pod" not in free and "namespace" not in free


def test_rules_join_the_pool_the_servicemonitor_cannot_attach() -> None:
    """The operator's ServiceMonitor has no attachMetadata: node labels never reach a GPU
    target, so every rule that selects a pool joins it on node."""
    rules = {r.record if hasattr(r, "record") else r.name: r.expr
             for g in monitoring_rules(example()) for r in g.rules}
    info = rules["aiplat:node_pool:info"]
    assert "kube_node_labels" in info and "label_aiplat_io_pool" in info
    assert POOL_LABEL == "aiplat.io/pool"
    for name, expr in rules.items():
        if "DCGM_FI_" in expr and "pool" in expr:
            assert "on (node) group_left (pool) aiplat:node_pool:info" in expr, name
    assert "label_aiplat_io_pool" not in "".join(
        expr for name, expr in rules.items() if name != "aiplat:node_pool:info")


# ---------------------------------------------------------------------------- 3. counters


def test_dcgm_counters_are_rendered_and_referenced() -> None:
    values, cms = dcgm_values(example())
    assert values["dcgmExporter"]["config"] == {"name": DCGM_CONFIG}
    cm = next(c for c in cms if c["metadata"]["name"] == DCGM_CONFIG)
    assert cm["metadata"]["namespace"] == GPU_OPERATOR_NS == CLUSTER_GPU_OPERATOR_NS
    rows = [line.split(",") for line in cm["data"][METRICS_FILE].splitlines()
            if line and not line.startswith("#")]
    fields = {r[0].strip() for r in rows}
    assert all(len(r) == 3 and r[1].strip() in ("gauge", "counter") for r in rows)
    # DCGM's default list leaves these off; the rules read them.
    assert {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ROW_REMAP_PENDING",
            "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"} <= fields
    assert fields == set(DCGM_FIELDS)


def test_the_counters_are_exactly_what_the_rules_and_dashboards_read() -> None:
    platform = example()
    read = dcgm_fields_read(monitoring_rules(platform))
    for d in dash.dashboards(platform):
        for _title, expr in dash.panel_queries(d):
            read |= set(re.findall(r"\bDCGM_FI_[A-Z0-9_]+", expr))
    assert read == set(DCGM_FIELDS)


def test_dcgm_exporter_values_alone() -> None:
    platform = example()
    values, cms = dcgm_exporter(platform, [])
    assert values["enabled"] is True and [c["kind"] for c in cms] == ["ConfigMap"]


# ---------------------------------------------------------------------------- 4. runbook


def test_runbook_links_are_absolute_when_the_spec_says_where_the_runbook_is() -> None:
    platform = example(monitoring(runbookBaseUrl="https://wiki.example.com/aiplat/"))
    files = render_monitoring(platform)
    links = [r["annotations"]["runbook_url"]
             for g in yaml.safe_load(files[RULES_FILE])["groups"] for r in g["rules"]
             if "runbook_url" in r.get("annotations", {})]
    assert links and all(u.startswith("https://wiki.example.com/aiplat/runbook.html#")
                         for u in links)
    tests = yaml.safe_load(files[TESTS_FILE])["tests"]
    expected = [a["exp_annotations"]["runbook_url"] for t in tests
                for a in t["alert_rule_test"][0]["exp_alerts"]
                if "runbook_url" in a["exp_annotations"]]
    assert expected and all(u.startswith("https://wiki.example.com/") for u in expected)
    prom_rule = list(yaml.safe_load_all(files[PROMETHEUS_RULE_FILE]))[-1]
    assert prom_rule["spec"] == yaml.safe_load(files[RULES_FILE])


def test_without_a_base_url_links_stay_relative_and_the_checklist_says_so() -> None:
    files = render_monitoring(example())
    rules = yaml.safe_load(files[RULES_FILE])["groups"]
    links = [r["annotations"]["runbook_url"] for g in rules for r in g["rules"]
             if "runbook_url" in r.get("annotations", {})]
    assert links and all(u.startswith("runbook.html#") for u in links)
    assert "runbookBaseUrl" in files[CHECKLIST_FILE]


@pytest.mark.parametrize("url", ["ftp://wiki/", "wiki.example.com", "https://x/{{ $x }}",
                                 "https://x/a?b=1", "https://x/#a", "javascript:alert(1)"])
def test_a_runbook_base_that_is_not_a_plain_http_url_is_a_spec_error(url: str) -> None:
    with pytest.raises(SpecError, match="runbookBaseUrl"):
        example(monitoring(runbookBaseUrl=url))


# ---------------------------------------------------------------------------- 5. new rules


def test_fabric_and_component_alerts_exist_with_runbook_links() -> None:
    def operator_driver(data: dict[str, Any]) -> None:
        data["kubernetes"].setdefault("components", {})["driver"] = "operator"

    a = alerts(example(operator_driver))
    new = {"InfinibandPortErrors", "InfinibandLinkDowned", "GpuNvlinkCrcErrors",
           "GpuPcieReplays", "GpuPowerOverLimit", "GpuDriverUpgradeFailed",
           "DraKubeletPluginNotReady"}
    assert new <= set(a)
    for name in new:
        assert a[name].procedure, name
        assert a[name].firing.fires and a[name].healthy.series and not a[name].healthy.fires
    assert "node_infiniband_port_errors_received_total" in a["InfinibandPortErrors"].expr
    assert "node_infiniband_link_downed_total" in a["InfinibandLinkDowned"].expr
    assert 'label_nvidia_com_gpu_driver_upgrade_state="upgrade-failed"' in \
        a["GpuDriverUpgradeFailed"].expr
    assert 'daemonset="nvidia-dra-driver-gpu-kubelet-plugin"' in \
        a["DraKubeletPluginNotReady"].expr


def test_component_alerts_only_where_the_component_runs() -> None:
    def device_plugin(data: dict[str, Any]) -> None:
        data["kubernetes"]["gpuResources"] = "device-plugin"
        for p in data["pools"]:
            p.pop("gpuResources", None)

    a = alerts(example())  # the host owns the driver: no operator upgrade to watch
    assert "GpuDriverUpgradeFailed" not in a and "DraKubeletPluginNotReady" in a
    assert "DraKubeletPluginNotReady" not in alerts(example(device_plugin))
