"""Grafana dashboards for the platform: GPUs, Kueue and the model store, ready to provision.

Design:
- A dashboard is data: :class:`Panel` (title, kind, unit, thresholds, its PromQL targets)
  in rows; :func:`dashboard_json` lays the panels out on Grafana's 24-column grid and gives
  ids, and :func:`dashboard_files` writes JSON only at the end. Pure: nothing is read or
  written here; ``render_monitoring`` can put the files next to the rules.
- Every query names series that exist: the exporters' own metrics that the monitoring rules
  already use (``aiplat.ops.monitoring``: dcgm-exporter ``DCGM_FI_*``, distribution's
  ``registry_http_*``, the ``aiplat_*`` contract in ``AIPLAT_METRICS``), the rules' own
  recording series (``aiplat:*``), and Kueue's metrics as v0.19 registers them
  (sigs.k8s.io/kueue pkg/metrics/metrics.go). tests/integration/test_dashboards_prometheus.py
  runs every expression on a real Prometheus with those series and the rules loaded, and an
  expression that parses but finds no series fails it.
- Thresholds drawn on panels come from the spec, the same numbers the alerts use: the
  lowest ``node.checks.maxGpuTempC`` of the GPU pools, ``operations.monitoring``'s
  quotaUsageWarning, modelPullErrorRatio and minCacheHitRatio.
- Template variables: ``datasource`` (any Prometheus, so no data source uid is baked in),
  ``pool`` and ``node`` (the labels the scrape configuration copies from the node label
  ``aiplat.io/pool``), ``cluster_queue`` on the Kueue board. "All" is the regex ``.*``.
- Files: ``grafana/dashboards/<uid>.json``, the file provider
  ``grafana/provisioning/dashboards/aiplat.yaml`` (copy it to
  /etc/grafana/provisioning/dashboards/, the JSON files to :data:`DASHBOARD_DIR`), and for
  Grafana in Kubernetes (the kube-prometheus-stack sidecar) one ConfigMap per dashboard
  labelled ``grafana_dashboard: "1"`` in ``kubernetes/grafana-dashboards.yaml``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from aiplat.spec.models import Platform

Kind = Literal["timeseries", "stat", "table"]

DASHBOARD_DIR = "/var/lib/grafana/dashboards/aiplat"
PROVIDER_FILE = "grafana/provisioning/dashboards/aiplat.yaml"
DASHBOARDS_DIR = "grafana/dashboards"
CONFIGMAP_FILE = "kubernetes/grafana-dashboards.yaml"
FOLDER = "aiplat"
SCHEMA_VERSION = 39  # Grafana 10.4/11
DS = {"type": "prometheus", "uid": "${datasource}"}
GPU_SEL = 'pool=~"$pool", node=~"$node"'
CQ_SEL = 'cluster_queue=~"$cluster_queue"'


@dataclass(frozen=True)
class Target:
    expr: str
    legend: str = ""
    instant: bool = False


@dataclass(frozen=True)
class Panel:
    title: str
    targets: tuple[Target, ...]
    kind: Kind = "timeseries"
    unit: str = "short"
    description: str = ""
    min: float | None = None
    max: float | None = None
    # Grafana threshold steps above the base colour: (value, colour), ascending.
    thresholds: tuple[tuple[float, str], ...] = ()
    width: int = 12
    height: int = 8


@dataclass(frozen=True)
class Variable:
    name: str
    label: str
    query: str  # label_values(...) for a query variable; "prometheus" for the data source

    @property
    def kind(self) -> str:
        return "datasource" if self.name == "datasource" else "query"


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    description: str
    rows: tuple[tuple[str, tuple[Panel, ...]], ...]
    variables: tuple[Variable, ...] = ()
    tags: tuple[str, ...] = field(default=("aiplat",))

    def panels(self) -> list[Panel]:
        return [p for _title, panels in self.rows for p in panels]


DATASOURCE = Variable("datasource", "Data source", "prometheus")
POOL = Variable("pool", "Pool", "label_values(DCGM_FI_DEV_GPU_TEMP, pool)")
NODE = Variable("node", "Node", 'label_values(DCGM_FI_DEV_GPU_TEMP{pool=~"$pool"}, node)')


def _t(expr: str, legend: str = "", instant: bool = False) -> Target:
    return Target(expr, legend, instant)


# ---------------------------------------------------------------------------- GPUs


def gpu_dashboard(platform: Platform) -> Dashboard:
    gpu_pools = [p for p in platform.pools if p.node.gpu is not None]
    temp = min((p.node.checks.max_gpu_temp_c for p in gpu_pools), default=85.0)
    s = GPU_SEL
    legend = "{{node}} GPU {{gpu}}"
    overview = (
        Panel("GPUs reporting", (_t(f"count(DCGM_FI_DEV_GPU_TEMP{{{s}}})", instant=True),),
              "stat", width=6, height=4,
              description="GPUs dcgm-exporter reports; fewer than installed means a GPU or "
                          "the exporter is gone (GpuMissing)"),
        Panel("Busy", (_t(f"avg(aiplat:gpu_busy:ratio{{{s}}})", instant=True),),
              "stat", "percentunit", min=0, max=1, width=6, height=4,
              description="graphics engine active (or GPU utilisation where profiling "
                          "metrics are off), averaged over the selected GPUs"),
        Panel("Hottest GPU", (_t(f"max(DCGM_FI_DEV_GPU_TEMP{{{s}}})", instant=True),),
              "stat", "celsius", thresholds=((temp - 5, "orange"), (temp, "red")),
              width=6, height=4),
        Panel("Power draw", (_t(f"sum(DCGM_FI_DEV_POWER_USAGE{{{s}}})", instant=True),),
              "stat", "watt", width=6, height=4),
    )
    usage = (
        Panel("GPU utilisation", (_t(f"DCGM_FI_DEV_GPU_UTIL{{{s}}}", legend),),
              unit="percent", min=0, max=100),
        Panel("Busy (engine active)", (_t(f"aiplat:gpu_busy:ratio{{{s}}}", legend),),
              unit="percentunit", min=0, max=1,
              description="the recording rule the idle-GPU alert reads"),
        Panel("Framebuffer used",
              (_t(f"DCGM_FI_DEV_FB_USED{{{s}}} / (DCGM_FI_DEV_FB_USED{{{s}}} + "
                  f"DCGM_FI_DEV_FB_FREE{{{s}}})", legend),),
              unit="percentunit", min=0, max=1),
        Panel("Framebuffer used (MiB)", (_t(f"DCGM_FI_DEV_FB_USED{{{s}}}", legend),),
              unit="decmbytes", min=0),
    )
    health = (
        Panel("Temperature", (_t(f"DCGM_FI_DEV_GPU_TEMP{{{s}}}", legend),), unit="celsius",
              thresholds=((temp, "red"),),
              description=f"red from {temp:g} °C, the lowest maxGpuTempC of the GPU pools"),
        Panel("Power", (_t(f"DCGM_FI_DEV_POWER_USAGE{{{s}}}", legend),), unit="watt", min=0),
        Panel("SM clock", (_t(f"DCGM_FI_DEV_SM_CLOCK{{{s}}}", legend),), unit="rotmhz", min=0),
        Panel("Last XID",
              (_t(f"max by (node, gpu) (DCGM_FI_DEV_XID_ERRORS{{{s}}})", legend,
                  instant=True),),
              "table", description="the last XID each GPU reported (0: none); XID 79 is a "
                                   "GPU fallen off the bus"),
        Panel("Uncorrectable ECC (volatile)",
              (_t(f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{s}}}", legend),), min=0),
        Panel("Row remapping",
              (_t(f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{s}}}", legend + " remapped"),
               _t(f"DCGM_FI_DEV_ROW_REMAP_PENDING{{{s}}}", legend + " pending"),
               _t(f"DCGM_FI_DEV_ROW_REMAP_FAILURE{{{s}}}", legend + " failed")), min=0),
        Panel("Node checks (aiplat node agent)",
              (_t(f"max by (node, check) (aiplat_node_check_failed{{{s}}})", "{{node}} {{check}}",
                  instant=True),),
              "table", thresholds=((1, "red"),),
              description="1 while the check fails; the agent then taints the node"),
    )
    return Dashboard(
        "aiplat-gpus", "aiplat / GPUs",
        "GPU use and health from dcgm-exporter, per pool and node",
        (("Overview", overview), ("Use", usage), ("Health", health)),
        (DATASOURCE, POOL, NODE))


# ---------------------------------------------------------------------------- Kueue


def kueue_dashboard(platform: Platform) -> Dashboard:
    mon = platform.operations.monitoring
    c = CQ_SEL
    cq = Variable("cluster_queue", "ClusterQueue", "label_values(kueue_pending_workloads, "
                                                   "cluster_queue)")
    overview = (
        Panel("Pending workloads", (_t(f"sum(kueue_pending_workloads{{{c}}})", instant=True),),
              "stat", width=6, height=4),
        Panel("Admitted, running",
              (_t(f"sum(kueue_admitted_active_workloads{{{c}}})", instant=True),),
              "stat", width=6, height=4),
        Panel("Admissions (1h)",
              (_t(f"sum(increase(kueue_admitted_workloads_total{{{c}}}[1h]))", instant=True),),
              "stat", width=6, height=4),
        Panel("Preemptions (1h)",
              (_t("sum(increase(kueue_preempted_workloads_total"
                  "{preempting_cluster_queue=~\"$cluster_queue\"}[1h]))", instant=True),),
              "stat", thresholds=((float(mon.preemptions_per_hour), "orange"),),
              width=6, height=4),
    )
    queues = (
        Panel("Pending by ClusterQueue",
              (_t(f"sum by (cluster_queue, status) (kueue_pending_workloads{{{c}}})",
                  "{{cluster_queue}} {{status}}"),),
              description="active: waiting for quota; inadmissible: cannot be admitted as "
                          "the queue is (missing flavor, stopped queue, too big)"),
        Panel("Admissions per minute",
              (_t(f"60 * sum by (cluster_queue) "
                  f"(rate(kueue_admitted_workloads_total{{{c}}}[$__rate_interval]))",
                  "{{cluster_queue}}"),), min=0),
        Panel("Admission wait time",
              tuple(_t(f"histogram_quantile({q}, sum by (cluster_queue, le) "
                       f"(rate(kueue_admission_wait_time_seconds_bucket{{{c}}}"
                       f"[$__rate_interval])))", f"{{{{cluster_queue}}}} p{int(q * 100)}")
                    for q in (0.5, 0.9)), unit="s", min=0,
              description="from creation (or requeue) to admission"),
        Panel("Reserving and admitted workloads",
              (_t(f"sum by (cluster_queue) (kueue_reserving_active_workloads{{{c}}})",
                  "{{cluster_queue}} reserving"),
               _t(f"sum by (cluster_queue) (kueue_admitted_active_workloads{{{c}}})",
                  "{{cluster_queue}} admitted")), min=0),
    )
    quota = (
        Panel("Quota usage",
              (_t(f"sum by (cluster_queue, flavor, resource) "
                  f"(kueue_cluster_queue_resource_usage{{{c}}}) / sum by "
                  f"(cluster_queue, flavor, resource) "
                  f"(kueue_cluster_queue_nominal_quota{{{c}}} > 0)",
                  "{{cluster_queue}} {{flavor}} {{resource}}"),),
              unit="percentunit", min=0,
              thresholds=((mon.quota_usage_warning, "orange"), (1.0, "red")),
              description="above 100 %: borrowing from the cohort"),
        Panel("Reserved vs nominal quota",
              (_t(f"sum by (cluster_queue, flavor, resource) "
                  f"(kueue_cluster_queue_resource_reservation{{{c}}})",
                  "{{cluster_queue}} {{flavor}} {{resource}} reserved"),
               _t(f"sum by (cluster_queue, flavor, resource) "
                  f"(kueue_cluster_queue_nominal_quota{{{c}}})",
                  "{{cluster_queue}} {{flavor}} {{resource}} nominal")), min=0),
        Panel("Preemptions per hour",
              (_t("sum by (preempting_cluster_queue, reason) "
                  "(increase(kueue_preempted_workloads_total"
                  "{preempting_cluster_queue=~\"$cluster_queue\"}[1h]))",
                  "{{preempting_cluster_queue}} {{reason}}"),), min=0,
              thresholds=((float(mon.preemptions_per_hour), "orange"),)),
        Panel("Evictions per hour",
              (_t(f"sum by (cluster_queue, reason) "
                  f"(increase(kueue_evicted_workloads_total{{{c}}}[1h]))",
                  "{{cluster_queue}} {{reason}}"),), min=0),
    )
    return Dashboard(
        "aiplat-kueue", "aiplat / Kueue",
        "Queues, admissions, wait times and quota from Kueue's metrics",
        (("Overview", overview), ("Queues", queues), ("Quota", quota)),
        (DATASOURCE, cq))


# ---------------------------------------------------------------------------- model store


def model_store_dashboard(platform: Platform) -> Dashboard:
    mon = platform.operations.monitoring
    s = 'pool=~"$pool", node=~"$node"'
    pool = Variable("pool", "Pool", "label_values(aiplat_model_pulls_total, pool)")
    node = Variable("node", "Node", 'label_values(aiplat_model_pulls_total{pool=~"$pool"}, '
                                    "node)")
    registry = (
        Panel("Registry requests by code",
              (_t("sum by (code) (rate(registry_http_requests_total[$__rate_interval]))",
                  "{{code}}"),), unit="reqps", min=0),
        Panel("Registry server errors",
              # "or ... * 0": 0 while no request failed (no 5xx series yet), not "No data".
              (_t('(sum by (instance) (rate(registry_http_requests_total{code=~"5.."}'
                  "[$__rate_interval])) or 0 * sum by (instance) "
                  "(rate(registry_http_requests_total[$__rate_interval]))) / sum by (instance) "
                  "(rate(registry_http_requests_total[$__rate_interval]))", "{{instance}}"),),
              unit="percentunit", min=0, thresholds=((0.05, "red"),),
              description="the ModelStoreServerErrors alert fires above 5 % for 10 minutes"),
        Panel("Registry latency p90",
              (_t("histogram_quantile(0.9, sum by (handler, le) "
                  "(rate(registry_http_request_duration_seconds_bucket[$__rate_interval])))",
                  "{{handler}}"),), unit="s", min=0),
        Panel("Registry bytes sent",
              (_t("sum by (handler) (rate(registry_http_response_size_bytes_sum"
                  "[$__rate_interval]))", "{{handler}}"),), unit="Bps", min=0),
    )
    nodes = (
        Panel("Model pulls per hour",
              (_t(f"sum by (node) (increase(aiplat_model_pulls_total{{{s}}}[1h]))", "{{node}}"),),
              min=0),
        Panel("Pull error ratio (30 min)",
              (_t(f"sum by (node) (increase(aiplat_model_pull_errors_total{{{s}}}[30m])) / "
                  f"sum by (node) (increase(aiplat_model_pulls_total{{{s}}}[30m]))",
                  "{{node}}"),), unit="percentunit", min=0,
              thresholds=((mon.model_pull_error_ratio, "red"),)),
        Panel("Cache hit ratio (1h)",
              (_t(f"aiplat:model_cache_hit:ratio_rate1h{{{s}}}", "{{node}}"),),
              unit="percentunit", min=0, max=1,
              thresholds=((mon.min_cache_hit_ratio, "green"),),
              description="the recording rule the ModelCacheHitRateLow alert reads; red "
                          f"below {mon.min_cache_hit_ratio:.0%}"),
        Panel("Cache hits and misses",
              (_t(f"sum by (node) (rate(aiplat_model_cache_hits_total{{{s}}}"
                  "[$__rate_interval]))", "{{node}} hits"),
               _t(f"sum by (node) (rate(aiplat_model_cache_misses_total{{{s}}}"
                  "[$__rate_interval]))", "{{node}} misses")), unit="ops", min=0),
    )
    return Dashboard(
        "aiplat-model-store", "aiplat / Model store",
        "The registry that serves model artifacts and the node-local model caches",
        (("Registry", registry), ("Nodes", nodes)), (DATASOURCE, pool, node))


def dashboards(platform: Platform) -> list[Dashboard]:
    boards = [kueue_dashboard(platform), model_store_dashboard(platform)]
    if any(p.node.gpu is not None for p in platform.pools):
        boards.insert(0, gpu_dashboard(platform))
    return boards


# ---------------------------------------------------------------------------- JSON


def _panel_json(p: Panel, pid: int, x: int, y: int) -> dict[str, Any]:
    # Higher is better when the first step is green (cache hits): red below it.
    base = "red" if p.thresholds and p.thresholds[0][1] == "green" else "green"
    steps: list[dict[str, Any]] = [{"color": base, "value": None}]
    steps += [{"color": colour, "value": value} for value, colour in p.thresholds]
    defaults: dict[str, Any] = {"unit": p.unit,
                                "thresholds": {"mode": "absolute", "steps": steps}}
    if p.min is not None:
        defaults["min"] = p.min
    if p.max is not None:
        defaults["max"] = p.max
    if p.kind == "timeseries" and p.thresholds:
        defaults["custom"] = {"thresholdsStyle": {"mode": "line"}}
    targets = [{"refId": chr(ord("A") + i), "datasource": DS, "expr": t.expr,
                "legendFormat": t.legend or "__auto", "range": not t.instant,
                "instant": t.instant}
               for i, t in enumerate(p.targets)]
    out: dict[str, Any] = {"id": pid, "type": p.kind, "title": p.title, "datasource": DS,
                           "gridPos": {"h": p.height, "w": p.width, "x": x, "y": y},
                           "targets": targets, "fieldConfig": {"defaults": defaults,
                                                               "overrides": []}}
    if p.description:
        out["description"] = p.description
    if p.kind == "table":
        out["transformations"] = [{"id": "labelsToFields", "options": {}}]
    return out


def _variable_json(v: Variable) -> dict[str, Any]:
    if v.kind == "datasource":
        return {"name": v.name, "label": v.label, "type": "datasource", "query": v.query,
                "current": {}, "hide": 0, "refresh": 1, "regex": ""}
    return {"name": v.name, "label": v.label, "type": "query", "datasource": DS,
            "definition": v.query,
            "query": {"query": v.query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
            "includeAll": True, "multi": True, "allValue": ".*",
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
            "refresh": 2, "sort": 1, "hide": 0, "regex": ""}


def dashboard_json(d: Dashboard) -> dict[str, Any]:
    """Grafana's dashboard model: rows as row panels, panels flowing left to right."""
    panels: list[dict[str, Any]] = []
    y = 0
    pid = 1
    for title, row in d.rows:
        panels.append({"id": pid, "type": "row", "title": title, "collapsed": False,
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        pid += 1
        y += 1
        x, line_h = 0, 0
        for p in row:
            if x + p.width > 24:
                x, y, line_h = 0, y + line_h, 0
            panels.append(_panel_json(p, pid, x, y))
            pid += 1
            x += p.width
            line_h = max(line_h, p.height)
        y += line_h
    return {
        "uid": d.uid, "title": d.title, "description": d.description, "tags": list(d.tags),
        "editable": True, "graphTooltip": 1, "schemaVersion": SCHEMA_VERSION, "version": 1,
        "time": {"from": "now-6h", "to": "now"}, "timezone": "browser", "refresh": "1m",
        "annotations": {"list": []}, "links": [],
        "templating": {"list": [_variable_json(v) for v in d.variables]},
        "panels": panels,
    }


def provider_yaml() -> str:
    data = {"apiVersion": 1, "providers": [{
        "name": "aiplat", "orgId": 1, "folder": FOLDER, "type": "file",
        "disableDeletion": False, "allowUiUpdates": False, "updateIntervalSeconds": 60,
        "options": {"path": DASHBOARD_DIR, "foldersFromFilesStructure": False}}]}
    return ("# Grafana dashboard provider: copy to /etc/grafana/provisioning/dashboards/ and "
            f"the JSON files of {DASHBOARDS_DIR}/ to {DASHBOARD_DIR}/.\n"
            + yaml.safe_dump(data, sort_keys=False))


def configmaps_yaml(boards: Iterable[Dashboard]) -> str:
    docs = [{"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": f"grafana-dashboard-{d.uid}", "namespace": "monitoring",
                          "labels": {"grafana_dashboard": "1"},
                          "annotations": {"grafana_folder": FOLDER}},
             "data": {f"{d.uid}.json": _json(dashboard_json(d))}} for d in boards]
    return yaml.safe_dump_all(docs, sort_keys=False, width=4096)


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def dashboard_files(platform: Platform) -> dict[str, str]:
    """Every dashboard file by relative path (next to the monitoring rules)."""
    boards = dashboards(platform)
    files = {f"{DASHBOARDS_DIR}/{d.uid}.json": _json(dashboard_json(d)) for d in boards}
    files[PROVIDER_FILE] = provider_yaml()
    files[CONFIGMAP_FILE] = configmaps_yaml(boards)
    return files


def panel_queries(d: Dashboard) -> list[tuple[str, str]]:
    """(panel title, expression) of every target, for checks against Prometheus."""
    return [(p.title, t.expr) for p in d.panels() for t in p.targets]
