"""Minimum monitoring: Prometheus recording and alerting rules, their unit tests, the scrape
configuration and the checklist of what "minimum monitoring" covers — all from the spec.

Design:
- Every rule is plain data (:class:`AlertRule`, :class:`RecordingRule` in a
  :class:`RuleGroup`), built by pure functions from the :class:`~aiplat.spec.models.Platform`;
  YAML is produced only at the end (:func:`render_monitoring`). Tests assert on the data and
  run the real ``promtool`` on the YAML.
- Each alert carries two cases: series on which it must fire (with the exact labels and
  annotations of the alert) and healthy series on which it must stay silent. They become the
  ``promtool test rules`` file shipped next to the rules, so an administrator who edits a
  threshold can re-run the same tests; a rule without both cases cannot be built.
- Thresholds come from the spec where it has them: each pool's ``node.checks`` (GPU
  temperature, uncorrectable ECC, remapped rows, XID window, free disk) and
  ``operations.monitoring`` (idle GPUs, pending age, quota usage, preemptions, model pulls,
  cache hits). Per-pool thresholds are one expression per distinct value, joined with ``or``,
  selected by the ``pool`` label: the node label ``aiplat.io/pool`` (the same name as the
  pool in the spec, the flavor and the simulator). GPU series get it by a join on ``node``
  with :data:`POOL_INFO` (kube-state-metrics' node labels, or the targets that the plain
  scrape configuration labels itself): the GPU operator's ServiceMonitor cannot attach node
  labels (``kube/render_dcgm.py``). A DCGM field outside the exporter's counters CSV
  (``DCGM_COUNTERS`` there) is a build error: it would never be exported.
- Metric names are the exporters' own: dcgm-exporter (``DCGM_FI_*``), node-exporter
  (``node_*``), Kueue (``kueue_*``), the registry (distribution's ``registry_http_*``). The
  aiplat node agent and the model cache export the ``aiplat_*`` names in
  :data:`AIPLAT_METRICS`: that table is the contract those exporters implement.
- Annotations use only ``{{ $labels.NAME }}`` (no ``$value``): the expected annotations in
  the tests are then exact, and a label that an alert does not carry is a build error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import yaml

from aiplat.kube.facts import GPU_OPERATOR_NS
from aiplat.kube.render_dcgm import DCGM_FIELDS
from aiplat.kube.render_dcgm import SCRAPE_JOB as DCGM_JOB
from aiplat.ops.monitoring_model import (
    RUNBOOK_PAGE,
    AlertRule,
    Case,
    RecordingRule,
    RuleGroup,
    Series,
    Severity,
    expand,
    runbook_url,
)
from aiplat.ops.monitoring_platform import platform_rules
from aiplat.report.document import Document, Section, Table
from aiplat.spec.models import Platform, PoolSpec

__all__ = ["RUNBOOK_PAGE", "AlertRule", "Case", "RecordingRule", "RuleGroup", "Series",
           "Severity", "expand", "runbook_url"]

POOL_LABEL = "aiplat.io/pool"
RULES_FILE = "aiplat-rules.yaml"
TESTS_FILE = "aiplat-rules.test.yaml"
SCRAPE_FILE = "prometheus.yaml"
CHECKLIST_FILE = "checklist.md"
PROMETHEUS_RULE_FILE = "kubernetes/prometheusrule.yaml"
SERVICE_MONITOR_FILE = "kubernetes/servicemonitor-kueue.yaml"
MONITORING_NS = "monitoring"

# Critical XIDs watched by the AzureHPC node health checks (see FACTS.md).
CRITICAL_XIDS: tuple[int, ...] = (
    48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120)
XID_FALLEN_OFF_BUS = 79

# nvmlClocksEventReasons bits that mean the GPU is slowed by heat or a power emergency:
# HW slowdown 0x8 (bit 3), SW thermal 0x20, HW thermal 0x40, HW power brake 0x80 (bits 5-7).
# SW power cap (0x4) and sync boost (0x10) are normal under load and are not alerted.

AIPLAT_METRICS: tuple[tuple[str, str, str], ...] = (
    ("aiplat_node_check_failed", "gauge",
     "1 while the node check named by label 'check' fails, else 0 (aiplat node agent)"),
    ("aiplat_node_agent_last_run_timestamp_seconds", "gauge",
     "Unix time of the agent's last completed check run"),
    ("aiplat_model_pulls_total", "counter", "model pulls started on this node"),
    ("aiplat_model_pull_errors_total", "counter", "model pulls that failed on this node"),
    ("aiplat_model_cache_hits_total", "counter", "blobs served from the node-local cache"),
    ("aiplat_model_cache_misses_total", "counter", "blobs fetched from the model store"),
)

# Scrape jobs: (job name, what it is, Kubernetes namespace, pod label selector, port name).
JOBS: tuple[tuple[str, str, str, str, str], ...] = (
    (DCGM_JOB, "GPU metrics (NVIDIA dcgm-exporter from the GPU operator)",
     GPU_OPERATOR_NS, "app=nvidia-dcgm-exporter", "gpu-metrics"),
    ("node-exporter", "node metrics (prometheus-node-exporter)",
     "monitoring", "app.kubernetes.io/name=node-exporter", "metrics"),
    ("aiplat-node-agent", "aiplat node agent: check results",
     "aiplat-system", "app.kubernetes.io/name=aiplat-node-agent", "metrics"),
    ("kueue", "Kueue controller manager",
     "kueue-system", "control-plane=controller-manager", "https"),
    ("kube-state-metrics", "Kubernetes object state: node conditions (the agent's among them)",
     "monitoring", "app.kubernetes.io/name=kube-state-metrics", "http"),
)
# Node condition the aiplat node agent sets (False while a check fails); kube-state-metrics
# exports it as kube_node_status_condition.
AGENT_CONDITION = "AiplatNodeHealthy"
MODEL_STORE_JOB = "model-store"
KUEUE_TOKEN_FILE = "kueue-metrics.token"
# Kueue's metrics are verified before the token goes out: the ServiceAccount CA in a pod, a
# CA file next to this configuration outside; the name its serving certificate carries is
# the metrics Service's (targets are pod IPs, which the certificate does not name).
KUEUE_CA_FILE = "kueue-metrics-ca.crt"
SERVICE_ACCOUNT_CA = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
KUEUE_METRICS_SERVER_NAME = "kueue-controller-manager-metrics-service.kueue-system.svc"


# ---------------------------------------------------------------------------- helpers


def _gpu_pools(platform: Platform) -> list[PoolSpec]:
    return [p for p in platform.pools if p.node.gpu is not None]


def _per_pool(template: str, thresholds: Mapping[str, float]) -> str:
    """One copy of ``template`` per distinct threshold, joined with ``or``.

    ``template`` holds ``{pools}`` (a ``pool=~"a|b"`` matcher) and ``{t}`` (the threshold).
    """
    by_value: dict[float, list[str]] = {}
    for pool, value in thresholds.items():
        by_value.setdefault(value, []).append(pool)
    parts = [template.format(pools=f'pool=~"{"|".join(pools)}"', t=_num(value))
             for value, pools in sorted(by_value.items())]
    return parts[0] if len(parts) == 1 else " or ".join(f"({p})" for p in parts)


def _num(value: float) -> str:
    return f"{value:g}"


def _gpu_labels(pool: str, **extra: str) -> dict[str, str]:
    """A GPU series as it arrives through the GPU operator's ServiceMonitor: ``node`` from
    the exporter pod's node, no ``pool`` (the rules join it, :data:`POOL_INFO`)."""
    return {"gpu": "0", "UUID": "GPU-1b2c3d4e", "Hostname": f"{pool}-node-1",
            "node": f"{pool}-node-1", "job": DCGM_JOB, "instance": "10.0.0.11:9400",
            **extra}


def _node_labels(pool: str, **extra: str) -> dict[str, str]:
    return {"node": f"{pool}-node-1", "pool": pool, "job": "node-exporter",
            "instance": "10.0.0.11:9100", **extra}


def _case(eval_time: str, *series: Series, fires: Iterable[Mapping[str, str]] = ()) -> Case:
    return Case(tuple(series), eval_time, tuple(fires))


POOL_INFO = "aiplat:node_pool:info"
KSM_POOL_LABEL = "label_" + re.sub(r"[^A-Za-z0-9_]", "_", POOL_LABEL)


def _pool_info_rule() -> RecordingRule:
    """1 per (node, pool): from kube-state-metrics' ``kube_node_labels`` (it must export the
    node label, ``--metric-labels-allowlist=nodes=[aiplat.io/pool]``), or else from targets
    that carry both labels themselves (aiplat's own scrape configuration, file discovery)."""
    return RecordingRule(POOL_INFO, (
        f'group by (node, pool) (label_replace(kube_node_labels{{{KSM_POOL_LABEL}!=""}}, '
        f'"pool", "$1", "{KSM_POOL_LABEL}", "(.+)")) '
        'or group by (node, pool) (up{node!="", pool!=""})'))


def _pooled(selector: str) -> str:
    """``selector`` with the node's ``pool`` joined on, as a :func:`_per_pool` template."""
    return f"({selector} * on (node) group_left (pool) {POOL_INFO}{{{{{{pools}}}}}})"


def _with_pool(expr: str) -> str:
    """``expr``'s series with the node's ``pool`` where it is known, and as they are where it is
    not: alerts that need no per-pool threshold still fire without kube-state-metrics' node
    labels, and carry ``pool`` for routing when they are there (as under aiplat's own scrape
    configuration, whose targets carry it)."""
    return (f"(({expr}) * on (node) group_left (pool) {POOL_INFO}) "
            f"or on (node, gpu) ({expr})")


def _ksm_pool(node: str, pool: str) -> dict[str, str]:
    return {"node": node, KSM_POOL_LABEL: pool, "job": "kube-state-metrics",
            "instance": "10.0.0.7:8080"}


def _gpu_case(eval_time: str, *series: Series,
              fires: Iterable[Mapping[str, str]] = ()) -> Case:
    """A case on GPU series plus kube-state-metrics' node labels of each node they name (the
    pool a node is in; its name is ``<pool>-node-N``)."""
    span = f"1x{int(eval_time.removesuffix('m')) + 5}"
    nodes = sorted({s.labels["node"] for s in series if "node" in s.labels})
    info = [Series("kube_node_labels", _ksm_pool(n, n.rsplit("-node-", 1)[0]), span)
            for n in nodes]
    return Case((*series, *info), eval_time, tuple(fires))


_DCGM_NAME = re.compile(r"\bDCGM_FI_[A-Z0-9_]+")


def dcgm_fields_read(groups: Iterable[RuleGroup]) -> set[str]:
    """The DCGM fields the rules' expressions read."""
    return {m for g in groups for r in g.rules for m in _DCGM_NAME.findall(r.expr)}


# ---------------------------------------------------------------------------- GPU


def gpu_rules(platform: Platform) -> RuleGroup:
    pools = _gpu_pools(platform)
    if not pools:
        return RuleGroup("aiplat-gpu", ())
    rules: list[RecordingRule | AlertRule] = [
        _pool_info_rule(),
        RecordingRule("aiplat:gpu_xid:last",
                      'count_values without () ("xid", DCGM_FI_DEV_XID_ERRORS > 0)'
                      f" * on (node) group_left (pool) {POOL_INFO}"),
        RecordingRule("aiplat:gpu_busy:ratio",
                      "(DCGM_FI_PROF_GR_ENGINE_ACTIVE * 1) or (DCGM_FI_DEV_GPU_UTIL / 100)"),
        *_xid_rules(pools),
        _gpu_missing_rule(pools),
        *_memory_rules(pools),
        *_heat_and_power_rules(pools),
        *_link_rules(pools[0].name),
        _idle_rule(platform, pools[0].name),
    ]
    unknown = dcgm_fields_read([RuleGroup("aiplat-gpu", tuple(rules))]) - DCGM_FIELDS
    if unknown:
        raise ValueError(f"GPU rules read DCGM fields the exporter's counters CSV lacks: "
                         f"{sorted(unknown)} (add them to kube/render_dcgm.py DCGM_COUNTERS)")
    return RuleGroup("aiplat-gpu", tuple(rules))


def _pool_fires(labels: Mapping[str, str], pool: str) -> dict[str, str]:
    return {**labels, "pool": pool}


def _xid_rules(pools: list[PoolSpec]) -> list[AlertRule]:
    name0 = pools[0].name
    gl = _gpu_labels(name0)
    xid_window = {p.name: p.node.checks.xid_window_hours for p in pools}
    # XID 79 has its own alert (GpuFallenOffBus); the rest are "critical XID".
    critical = "|".join(str(x) for x in CRITICAL_XIDS if x != XID_FALLEN_OFF_BUS)
    xid_template = ("max_over_time(aiplat:gpu_xid:last{{{pools}, xid=~\"" + critical
                    + "\"}}[{t}h])")
    return [AlertRule(
        "GpuCriticalXid",
        _per_pool(xid_template, xid_window),
        "critical", "gpu",
        "Critical XID {{ $labels.xid }} on GPU {{ $labels.gpu }} of {{ $labels.node }}",
        "The driver reported XID {{ $labels.xid }} on {{ $labels.node }} (pool "
        "{{ $labels.pool }}) within the pool's XID window. Drain the node and follow the "
        "replacement procedure if a GPU reset does not clear it.",
        "replace-node",
        firing=_gpu_case("10m", Series("DCGM_FI_DEV_XID_ERRORS", gl, "0 0 48x10"),
                         fires=[{**_pool_fires(gl, name0), "xid": "48"}]),
        healthy=_gpu_case("10m", Series("DCGM_FI_DEV_XID_ERRORS", gl, "0 0 13x10")),
    ), AlertRule(
        "GpuFallenOffBus",
        f'max_over_time(aiplat:gpu_xid:last{{xid="{XID_FALLEN_OFF_BUS}"}}[1h])',
        "critical", "gpu",
        "GPU {{ $labels.gpu }} of {{ $labels.node }} has fallen off the bus (XID 79)",
        "XID 79: the GPU no longer answers on PCIe. Workloads on it are lost; cordon and "
        "drain {{ $labels.node }}, then reset or replace the GPU.",
        "replace-node",
        firing=_gpu_case("5m", Series("DCGM_FI_DEV_XID_ERRORS", gl, "0 79x5"),
                         fires=[{**_pool_fires(gl, name0), "xid": "79"}]),
        healthy=_gpu_case("5m", Series("DCGM_FI_DEV_XID_ERRORS", gl, "0x5")),
    )]


def _gpu_missing_rule(pools: list[PoolSpec]) -> AlertRule:
    name0 = pools[0].name
    counts = {p.name: float(p.node.gpu.count) for p in pools if p.node.gpu}
    n0 = int(counts[name0])
    missing_series = tuple(
        Series("DCGM_FI_DEV_GPU_TEMP", _gpu_labels(name0, gpu=str(i), UUID=f"GPU-{i}"), "40x20")
        for i in range(n0 - 1))
    full_series = (*missing_series, Series(
        "DCGM_FI_DEV_GPU_TEMP", _gpu_labels(name0, gpu=str(n0 - 1), UUID=f"GPU-{n0 - 1}"),
        "40x20"))
    return AlertRule(
        "GpuMissing",
        _per_pool("count by (node, pool) " + _pooled("DCGM_FI_DEV_GPU_TEMP") + " < {t}",
                  counts),
        "critical", "gpu",
        "{{ $labels.node }} reports fewer GPUs than pool {{ $labels.pool }} has",
        "dcgm-exporter on {{ $labels.node }} reports fewer GPUs than the spec gives pool "
        "{{ $labels.pool }}: a GPU fell off the bus or the driver lost it. Run aiplat node "
        "check on the node.",
        "replace-node", for_="5m",
        firing=_gpu_case("10m", *missing_series,
                         fires=[{"node": f"{name0}-node-1", "pool": name0}]),
        healthy=_gpu_case("10m", *full_series),
    )


def _memory_rules(pools: list[PoolSpec]) -> list[AlertRule]:
    name0 = pools[0].name
    c0 = pools[0].node.checks
    gl = _gpu_labels(name0)
    ecc = {p.name: float(p.node.checks.max_ecc_uncorrected) for p in pools}
    rules = [AlertRule(
        "GpuEccUncorrectable",
        _per_pool(_pooled("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") + " > {t}", ecc),
        "critical", "gpu",
        "Uncorrectable ECC errors on GPU {{ $labels.gpu }} of {{ $labels.node }}",
        "Volatile double-bit ECC errors exceed the pool's node.checks.maxEccUncorrected. "
        "Drain {{ $labels.node }} and reset the GPU; replace it if errors return.",
        "replace-node",
        firing=_gpu_case("3m", Series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", gl,
                                      f"0 {c0.max_ecc_uncorrected + 1}x3"),
                         fires=[_pool_fires(gl, name0)]),
        healthy=_gpu_case("3m", Series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", gl,
                                       f"{c0.max_ecc_uncorrected}x3")),
    ), AlertRule(
        "GpuRowRemapFailure", _with_pool("DCGM_FI_DEV_ROW_REMAP_FAILURE > 0"), "critical",
        "gpu",
        "Row remapping failed on GPU {{ $labels.gpu }} of {{ $labels.node }}",
        "The GPU has no spare rows left for memory errors: it must be replaced (RMA).",
        "replace-node",
        firing=_gpu_case("3m", Series("DCGM_FI_DEV_ROW_REMAP_FAILURE", gl, "0 1x3"),
                         fires=[_pool_fires(gl, name0)]),
        healthy=_gpu_case("3m", Series("DCGM_FI_DEV_ROW_REMAP_FAILURE", gl, "0x3")),
    ), AlertRule(
        "GpuRowRemapPending", _with_pool("DCGM_FI_DEV_ROW_REMAP_PENDING > 0"), "warning",
        "gpu",
        "Row remap pending on GPU {{ $labels.gpu }} of {{ $labels.node }}",
        "A memory row remap is recorded but takes effect only after a GPU reset: drain "
        "{{ $labels.node }} and reset the GPU in the next maintenance window.",
        "node-patch", for_="5m",
        firing=_gpu_case("10m", Series("DCGM_FI_DEV_ROW_REMAP_PENDING", gl, "1x10"),
                         fires=[_pool_fires(gl, name0)]),
        healthy=_gpu_case("10m", Series("DCGM_FI_DEV_ROW_REMAP_PENDING", gl, "0x10")),
    )]
    remap = {p.name: float(p.node.checks.max_remapped_rows_uncorrectable) for p in pools
             if p.node.checks.max_remapped_rows_uncorrectable is not None}
    if remap:
        rp = next(iter(remap))
        rl = _gpu_labels(rp)
        limit = int(remap[rp])
        rules.append(AlertRule(
            "GpuUncorrectableRemappedRows",
            _per_pool(_pooled("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS") + " > {t}", remap),
            "warning", "gpu",
            "GPU {{ $labels.gpu }} of {{ $labels.node }} has many rows remapped",
            "Rows remapped for uncorrectable errors exceed the pool's "
            "node.checks.maxRemappedRowsUncorrectable: plan the GPU's replacement.",
            "replace-node",
            firing=_gpu_case("3m", Series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", rl,
                                          f"{limit + 1}x3"), fires=[_pool_fires(rl, rp)]),
            healthy=_gpu_case("3m", Series("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", rl,
                                           f"{limit}x3")),
        ))
    return rules


def _heat_and_power_rules(pools: list[PoolSpec]) -> list[AlertRule]:
    name0 = pools[0].name
    c0 = pools[0].node.checks
    gl = _gpu_labels(name0)
    temps = {p.name: p.node.checks.max_gpu_temp_c for p in pools}
    return [AlertRule(
        "GpuTemperatureHigh",
        _per_pool(_pooled("DCGM_FI_DEV_GPU_TEMP") + " > {t}", temps),
        "warning", "gpu",
        "GPU {{ $labels.gpu }} of {{ $labels.node }} is too hot",
        "The GPU is above the pool's node.checks.maxGpuTempC for 5 minutes: check the "
        "node's fans and the rack's cooling; sustained heat throttles and ages the GPU.",
        "node-patch", for_="5m",
        firing=_gpu_case("10m", Series("DCGM_FI_DEV_GPU_TEMP", gl,
                                       f"{_num(c0.max_gpu_temp_c + 3)}x10"),
                         fires=[_pool_fires(gl, name0)]),
        healthy=_gpu_case("10m", Series("DCGM_FI_DEV_GPU_TEMP", gl,
                                        f"{_num(c0.max_gpu_temp_c - 1)}x10")),
    ), AlertRule(
        "GpuThermalOrPowerSlowdown",
        _with_pool("(floor(DCGM_FI_DEV_CLOCKS_EVENT_REASONS / 8) % 2 == 1)"
                   " or (floor(DCGM_FI_DEV_CLOCKS_EVENT_REASONS / 32) % 8 > 0)"),
        "warning", "gpu",
        "GPU {{ $labels.gpu }} of {{ $labels.node }} is slowed down by heat or power",
        "Clock event reasons show HW slowdown, thermal slowdown or power brake for 15 "
        "minutes: jobs on {{ $labels.node }} run slower than the baseline.",
        "node-patch", for_="15m",
        firing=_gpu_case("20m", Series("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", gl, "64x20"),
                         fires=[_pool_fires(gl, name0)]),
        # 0x4 (software power cap) is normal under full load and must not alert.
        healthy=_gpu_case("20m", Series("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", gl, "4x20")),
    ), AlertRule(
        "GpuPowerOverLimit",
        _with_pool("DCGM_FI_DEV_POWER_USAGE > DCGM_FI_DEV_ENFORCED_POWER_LIMIT"),
        "warning", "gpu",
        "GPU {{ $labels.gpu }} of {{ $labels.node }} draws more than its power limit",
        "The GPU's power draw has stayed above its enforced power limit for 10 minutes: "
        "power capping is not holding (firmware, a failing sensor or the PSU). Check "
        "nvidia-smi -q -d POWER on {{ $labels.node }} and the rack's power budget.",
        "node-patch", for_="10m",
        firing=_gpu_case("15m", Series("DCGM_FI_DEV_POWER_USAGE", gl, "730x15"),
                         Series("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", gl, "700x15"),
                         fires=[_pool_fires(gl, name0)]),
        healthy=_gpu_case("15m", Series("DCGM_FI_DEV_POWER_USAGE", gl, "690x15"),
                          Series("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", gl, "700x15")),
    )]


# DCGM's health watch warns above 8 PCIe replays a minute (DCGM_LIMIT_MAX_PCIREPLAY_RATE);
# NVLink CRC errors are retried by the link, so only a sustained rate is alerted.
PCIE_REPLAYS_PER_MINUTE = 8
NVLINK_CRC_ERRORS_PER_HOUR = 100


def _link_rules(pool: str) -> list[AlertRule]:
    gl = _gpu_labels(pool)
    n = NVLINK_CRC_ERRORS_PER_HOUR
    return [AlertRule(
        "GpuNvlinkCrcErrors",
        _with_pool(f"increase(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL[1h]) > {n}"
                   f" or increase(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL[1h]) > {n}"),
        "warning", "gpu",
        "NVLink CRC errors on GPU {{ $labels.gpu }} of {{ $labels.node }}",
        f"More than {n} NVLink flow-control or data CRC errors in an hour: a degrading "
        "NVLink or NVSwitch connection slows collectives. Run the DCGM diagnostics "
        "(dcgmi diag -r 2) on {{ $labels.node }}; replace the board if errors continue.",
        "replace-node",
        firing=_gpu_case("70m", Series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", gl,
                                       f"0+{_num(2 * n / 60)}x70"),
                         Series("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", gl, "0x70"),
                         fires=[_pool_fires(gl, pool)]),
        healthy=_gpu_case("70m", Series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", gl,
                                        f"0+{_num(n / 120)}x70"),
                          Series("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", gl, "0x70")),
    ), AlertRule(
        "GpuPcieReplays",
        _with_pool(f"rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER[10m]) * 60 > "
                   f"{PCIE_REPLAYS_PER_MINUTE}"),
        "warning", "gpu",
        "PCIe replays on GPU {{ $labels.gpu }} of {{ $labels.node }}",
        f"More than {PCIE_REPLAYS_PER_MINUTE} PCIe replays a minute for 10 minutes (DCGM's "
        "own health limit): a marginal PCIe link (riser, slot, retimer) that may drop the GPU "
        "off the bus. Drain {{ $labels.node }} and reseat or replace the part.",
        "replace-node", for_="10m",
        firing=_gpu_case("30m", Series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", gl, "0+20x30"),
                         fires=[_pool_fires(gl, pool)]),
        healthy=_gpu_case("30m", Series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", gl, "0+2x30")),
    )]


def _idle_rule(platform: Platform, pool: str) -> AlertRule:
    mon = platform.operations.monitoring
    gl = _gpu_labels(pool)
    busy = {**gl, "namespace": "research", "pod": "train-0", "container": "main"}
    free = _gpu_labels(pool, gpu="1", UUID="GPU-2")
    minutes = mon.idle_gpu_minutes
    return AlertRule(
        "GpuAllocatedIdle",
        _with_pool(f'aiplat:gpu_busy:ratio{{pod!=""}} < {_num(mon.idle_gpu_utilization)}'),
        "warning", "gpu",
        "GPU {{ $labels.gpu }} of {{ $labels.node }} is allocated to "
        "{{ $labels.namespace }}/{{ $labels.pod }} but idle",
        f"The GPU has been below {mon.idle_gpu_utilization:.0%} busy for {minutes} minutes "
        "while allocated to a pod: the quota is held but unused. Ask the tenant to release "
        "it, or move quota to where it is used.",
        "add-tenant", for_=f"{minutes}m",
        firing=_gpu_case(f"{minutes + 10}m",
                         Series("DCGM_FI_DEV_GPU_UTIL", busy, f"0x{minutes + 10}"),
                         fires=[_pool_fires(busy, pool)]),
        healthy=_gpu_case(f"{minutes + 10}m",
                          Series("DCGM_FI_DEV_GPU_UTIL", busy, f"80x{minutes + 10}"),
                          Series("DCGM_FI_DEV_GPU_UTIL", free, f"0x{minutes + 10}")),
    )


# ---------------------------------------------------------------------------- nodes


def node_rules(platform: Platform) -> RuleGroup:
    p0 = platform.pools[0]
    nl = _node_labels(p0.name)
    fs = {**nl, "device": "/dev/nvme0n1p1", "fstype": "ext4", "mountpoint": "/"}
    free = {p.name: p.node.checks.min_free_disk_percent for p in platform.pools}
    pct = p0.node.checks.min_free_disk_percent
    nic = {**nl, "device": "ens1f0"}
    fs_sel = 'fstype!~"tmpfs|overlay|squashfs|nsfs|ramfs", {pools}'
    rules: list[RecordingRule | AlertRule] = [
        AlertRule(
            "NodeDiskSpaceLow",
            _per_pool("100 * node_filesystem_avail_bytes{{" + fs_sel + "}} "
                      "/ node_filesystem_size_bytes{{" + fs_sel + "}} < {t}", free),
            "warning", "node",
            "{{ $labels.mountpoint }} on {{ $labels.node }} is nearly full",
            "Free space is below the pool's node.checks.minFreeDiskPercent: image pulls, "
            "model caches and checkpoints will fail. Run aiplat model gc or free space.",
            "node-patch", for_="10m",
            firing=_case("15m", Series("node_filesystem_avail_bytes", fs,
                                       f"{_num(max(pct - 5, 0))}x15"),
                         Series("node_filesystem_size_bytes", fs, "100x15"), fires=[fs]),
            healthy=_case("15m", Series("node_filesystem_avail_bytes", fs,
                                        f"{_num(min(pct + 20, 100))}x15"),
                          Series("node_filesystem_size_bytes", fs, "100x15")),
        ),
        AlertRule(
            "NodeMemoryLow",
            "node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes < 0.05",
            "warning", "node",
            "{{ $labels.node }} is running out of memory",
            "Less than 5% of memory is available for 10 minutes: the kernel's OOM killer "
            "will end processes; check pods without memory limits.",
            "", for_="10m",
            firing=_case("15m", Series("node_memory_MemAvailable_bytes", nl, "2x15"),
                         Series("node_memory_MemTotal_bytes", nl, "100x15"), fires=[nl]),
            healthy=_case("15m", Series("node_memory_MemAvailable_bytes", nl, "40x15"),
                          Series("node_memory_MemTotal_bytes", nl, "100x15")),
        ),
        AlertRule(
            "NodeNetworkErrors",
            'increase(node_network_receive_errs_total{device!="lo"}[10m])'
            ' + increase(node_network_transmit_errs_total{device!="lo"}[10m]) > 10',
            "warning", "network",
            "{{ $labels.device }} on {{ $labels.node }} has network errors",
            "More than 10 receive/transmit errors in 10 minutes: check the cable, optics and "
            "switch port; run aiplat node check (MTU, link rate) on the node.",
            "", for_="5m",
            firing=_case("20m", Series("node_network_receive_errs_total", nic, "0+5x20"),
                         Series("node_network_transmit_errs_total", nic, "0x20"), fires=[nic]),
            healthy=_case("20m", Series("node_network_receive_errs_total", nic, "3x20"),
                          Series("node_network_transmit_errs_total", nic, "0x20")),
        ),
        AlertRule(
            "NodeNetworkDrops",
            'increase(node_network_receive_drop_total{device!="lo"}[10m])'
            ' + increase(node_network_transmit_drop_total{device!="lo"}[10m]) > 1000',
            "warning", "network",
            "{{ $labels.device }} on {{ $labels.node }} drops packets",
            "More than 1000 packets dropped in 10 minutes: ring buffers too small, a "
            "congested link or an MTU mismatch; aiplat diagnose correlates the causes.",
            "", for_="5m",
            firing=_case("20m", Series("node_network_receive_drop_total", nic, "0+500x20"),
                         Series("node_network_transmit_drop_total", nic, "0x20"), fires=[nic]),
            healthy=_case("20m", Series("node_network_receive_drop_total", nic, "0+10x20"),
                          Series("node_network_transmit_drop_total", nic, "0x20")),
        ),
    ]
    jobs = "|".join([*(j[0] for j in JOBS), MODEL_STORE_JOB])
    down = {"job": "dcgm-exporter", "instance": "10.0.0.11:9400", "node": nl["node"],
            "pool": p0.name}
    rules.append(AlertRule(
        "ScrapeTargetDown", f'up{{job=~"{jobs}"}} == 0', "critical", "monitoring",
        "{{ $labels.job }} target {{ $labels.instance }} is down",
        "Prometheus cannot scrape {{ $labels.job }} at {{ $labels.instance }} for 5 "
        "minutes: every alert that depends on it is blind.",
        "", for_="5m",
        firing=_case("10m", Series("up", down, "0x10"), fires=[down]),
        healthy=_case("10m", Series("up", down, "1x10")),
    ))
    return RuleGroup("aiplat-node", tuple(rules))


# ---------------------------------------------------------------------------- Kueue


def kueue_rules(platform: Platform) -> RuleGroup:
    mon = platform.operations.monitoring
    cq = platform.tenants[0].name
    kl = {"job": "kueue", "instance": "10.0.0.5:8443"}
    m = mon.pending_minutes
    span = 2 * m + 10
    pend = {**kl, "cluster_queue": cq, "status": "active"}
    res = {**kl, "cohort": "platform", "cluster_queue": cq, "flavor": platform.pools[0].name,
           "resource": "nvidia.com/gpu"}
    q = mon.quota_usage_warning
    n = mon.preemptions_per_hour
    pre = {**kl, "preempting_cluster_queue": cq, "reason": "InCohortReclamation"}
    rules: list[RecordingRule | AlertRule] = [
        AlertRule(
            "KueueWorkloadsPendingTooLong",
            f"sum by (cluster_queue) (kueue_pending_workloads) > 0 unless on (cluster_queue) "
            f"sum by (cluster_queue) (increase(kueue_admitted_workloads_total[{m}m])) > 0",
            "warning", "queues",
            "ClusterQueue {{ $labels.cluster_queue }} admitted nothing for a long time",
            f"Workloads have been pending in {{{{ $labels.cluster_queue }}}} for {m} minutes "
            "and none was admitted: quota used up, a flavor that matches no node, or a "
            "stopped queue. Run aiplat kube why-pending on one of them.",
            "add-tenant", for_=f"{m}m",
            firing=_case(f"{span}m", Series("kueue_pending_workloads", pend, f"3x{span}"),
                         Series("kueue_admitted_workloads_total", {**kl, "cluster_queue": cq},
                                f"5x{span}"),
                         fires=[{"cluster_queue": cq}]),
            healthy=_case(f"{span}m", Series("kueue_pending_workloads", pend, f"3x{span}"),
                          Series("kueue_admitted_workloads_total", {**kl, "cluster_queue": cq},
                                 f"5+1x{span}")),
        ),
        AlertRule(
            "KueueInadmissibleWorkloads",
            'sum by (cluster_queue) (kueue_pending_workloads{status="inadmissible"}) > 0',
            "warning", "queues",
            "ClusterQueue {{ $labels.cluster_queue }} holds inadmissible workloads",
            "Kueue tried and failed to admit these workloads and will not retry until the "
            "cluster changes: requests larger than any flavor or quota. Run aiplat kube "
            "why-pending and aiplat kube lint.",
            "add-tenant", for_="30m",
            firing=_case("40m", Series("kueue_pending_workloads",
                                       {**pend, "status": "inadmissible"}, "2x40"),
                         fires=[{"cluster_queue": cq}]),
            healthy=_case("40m", Series("kueue_pending_workloads",
                                        {**pend, "status": "inadmissible"}, "0x40"),
                          Series("kueue_pending_workloads", pend, "4x40")),
        ),
        AlertRule(
            "KueueQuotaNearlyExhausted",
            "kueue_cluster_queue_resource_usage / (kueue_cluster_queue_nominal_quota > 0)"
            f" >= {_num(q)}",
            "info", "queues",
            "{{ $labels.cluster_queue }} uses its {{ $labels.resource }} quota on "
            "{{ $labels.flavor }}",
            f"Usage is at least {q:.0%} of the nominal quota for an hour: new workloads "
            "borrow from the cohort or wait. Review the tenant's quota in the spec.",
            "add-tenant", for_="1h",
            firing=_case("70m", Series("kueue_cluster_queue_resource_usage", res, "40x70"),
                         Series("kueue_cluster_queue_nominal_quota", res, "40x70"),
                         fires=[res]),
            healthy=_case("70m", Series("kueue_cluster_queue_resource_usage", res, "10x70"),
                          Series("kueue_cluster_queue_nominal_quota", res, "40x70")),
        ),
        AlertRule(
            "KueuePreemptionsHigh",
            "sum by (preempting_cluster_queue, reason) "
            f"(increase(kueue_preempted_workloads_total[1h])) > {n}",
            "warning", "queues",
            "{{ $labels.preempting_cluster_queue }} preempts many workloads "
            "({{ $labels.reason }})",
            f"More than {n} workloads were preempted in an hour: quotas or priorities make "
            "tenants evict each other; lost work if jobs do not checkpoint.",
            "add-tenant",
            firing=_case("70m", Series("kueue_preempted_workloads_total", pre,
                                       f"0+{_num(2 * n / 60)}x70"),
                         fires=[{"preempting_cluster_queue": cq,
                                 "reason": "InCohortReclamation"}]),
            healthy=_case("70m", Series("kueue_preempted_workloads_total", pre,
                                        f"0+{_num(n / 120)}x70")),
        ),
    ]
    return RuleGroup("aiplat-kueue", tuple(rules))


# ---------------------------------------------------------------------------- model store


def model_store_rules(platform: Platform) -> RuleGroup:
    mon = platform.operations.monitoring
    rl = {"job": MODEL_STORE_JOB, "instance": "model-store:5001"}
    nl = {"node": f"{platform.pools[0].name}-node-1", "pool": platform.pools[0].name}
    al = {**nl, "job": "aiplat-node-agent", "instance": "10.0.0.11:9479"}
    r = mon.model_pull_error_ratio
    hit = mon.min_cache_hit_ratio
    rules: list[RecordingRule | AlertRule] = [
        RecordingRule(
            "aiplat:model_cache_hit:ratio_rate1h",
            "sum by (node, pool) (rate(aiplat_model_cache_hits_total[1h])) / "
            "(sum by (node, pool) (rate(aiplat_model_cache_hits_total[1h])) + "
            "sum by (node, pool) (rate(aiplat_model_cache_misses_total[1h])))"),
        AlertRule(
            "ModelStoreServerErrors",
            'sum by (job, instance) (rate(registry_http_requests_total{code=~"5.."}[5m])) / '
            "sum by (job, instance) (rate(registry_http_requests_total[5m])) > 0.05",
            "critical", "model-store",
            "The model store {{ $labels.instance }} answers with server errors",
            "More than 5% of registry requests fail with 5xx for 10 minutes: pulls fail or "
            "retry; check the registry's storage backend and logs.",
            "", for_="10m",
            firing=_case("20m", Series("registry_http_requests_total",
                                       {**rl, "code": "500", "handler": "blob", "method": "get"},
                                       "0+5x20"),
                         Series("registry_http_requests_total",
                                {**rl, "code": "200", "handler": "blob", "method": "get"},
                                "0+10x20"), fires=[rl]),
            healthy=_case("20m", Series("registry_http_requests_total",
                                        {**rl, "code": "500", "handler": "blob",
                                         "method": "get"}, "1x20"),
                          Series("registry_http_requests_total",
                                 {**rl, "code": "200", "handler": "blob", "method": "get"},
                                 "0+10x20")),
        ),
        AlertRule(
            "ModelPullErrors",
            "sum by (node, pool) (increase(aiplat_model_pull_errors_total[30m])) / "
            f"sum by (node, pool) (increase(aiplat_model_pulls_total[30m])) > {_num(r)}",
            "warning", "model-store",
            "Model pulls fail on {{ $labels.node }}",
            f"More than {r:.0%} of model pulls failed on {{{{ $labels.node }}}} in 30 minutes "
            "(digest mismatch, signature policy, registry or network errors): run aiplat "
            "model verify on the node and aiplat diagnose.",
            "",
            firing=_case("35m", Series("aiplat_model_pull_errors_total", al, "0+1x35"),
                         Series("aiplat_model_pulls_total", al, "0+2x35"), fires=[nl]),
            healthy=_case("35m", Series("aiplat_model_pull_errors_total", al, "0x35"),
                          Series("aiplat_model_pulls_total", al, "0+2x35")),
        ),
        AlertRule(
            "ModelCacheHitRateLow",
            f"aiplat:model_cache_hit:ratio_rate1h < {_num(hit)}",
            "info", "model-store",
            "The model cache on {{ $labels.node }} misses often",
            f"Fewer than {hit:.0%} of blob reads were cache hits over an hour: the cache is "
            "too small (evictions) or not shared across pods; size it from aiplat plan.",
            "", for_="30m",
            firing=_case("100m", Series("aiplat_model_cache_hits_total", al, "0+1x100"),
                         Series("aiplat_model_cache_misses_total", al, "0+3x100"), fires=[nl]),
            healthy=_case("100m", Series("aiplat_model_cache_hits_total", al, "0+9x100"),
                          Series("aiplat_model_cache_misses_total", al, "0+1x100")),
        ),
    ]
    return RuleGroup("aiplat-model-store", tuple(rules))


# ---------------------------------------------------------------------------- node agent


def agent_rules(platform: Platform) -> RuleGroup:
    p0 = platform.pools[0].name
    al = {"node": f"{p0}-node-1", "pool": p0, "job": "aiplat-node-agent",
          "instance": "10.0.0.11:9479"}
    chk = {"node": al["node"], "pool": p0, "check": "gpu-count"}
    ksm_false = {"node": al["node"], "condition": AGENT_CONDITION, "status": "false",
                 "job": "kube-state-metrics", "instance": "10.0.0.7:8080"}
    rules: list[RecordingRule | AlertRule] = [
        AlertRule(
            "AiplatNodeCheckFailed",
            "max by (node, pool, check) (aiplat_node_check_failed) > 0",
            "warning", "node-agent",
            "Node check {{ $labels.check }} fails on {{ $labels.node }}",
            "The aiplat node agent reports a failing check and has tainted the node "
            "NoSchedule. Run aiplat node check on {{ $labels.node }} for the details and "
            "the remediation.",
            "node-patch", for_="10m",
            firing=_case("15m", Series("aiplat_node_check_failed", {**al, "check": "gpu-count"},
                                       "1x15"), fires=[chk]),
            healthy=_case("15m", Series("aiplat_node_check_failed",
                                        {**al, "check": "gpu-count"}, "0x15")),
        ),
        AlertRule(
            "AiplatNodeUnhealthy",
            f'kube_node_status_condition{{condition="{AGENT_CONDITION}", status="false"}} == 1',
            "warning", "node-agent",
            "The aiplat node agent marks {{ $labels.node }} unhealthy",
            f"Node condition {AGENT_CONDITION} is False (a node check fails; the agent has "
            "tainted the node NoSchedule). Read the condition's message with kubectl "
            "describe node {{ $labels.node }}, then run aiplat node check on it.",
            "node-patch", for_="10m",
            firing=_case("15m", Series("kube_node_status_condition", ksm_false, "1x15"),
                         fires=[ksm_false]),
            healthy=_case("15m", Series("kube_node_status_condition", ksm_false, "0x15"),
                          Series("kube_node_status_condition",
                                 {**ksm_false, "status": "true"}, "1x15")),
        ),
        AlertRule(
            "AiplatNodeAgentStale",
            "time() - aiplat_node_agent_last_run_timestamp_seconds > 900",
            "warning", "node-agent",
            "The aiplat node agent on {{ $labels.node }} has not run checks for 15 minutes",
            "No completed check run for 15 minutes: the agent is stuck or crashing, so "
            "failing hardware on {{ $labels.node }} goes unnoticed.",
            "", for_="5m",
            firing=_case("30m", Series("aiplat_node_agent_last_run_timestamp_seconds", al,
                                       "0x30"), fires=[al]),
            healthy=_case("30m", Series("aiplat_node_agent_last_run_timestamp_seconds", al,
                                        "0+60x30")),
        ),
    ]
    return RuleGroup("aiplat-node-agent", tuple(rules))


def monitoring_rules(platform: Platform) -> list[RuleGroup]:
    """Every rule group for ``platform``, in a stable order (empty groups left out)."""
    groups = [gpu_rules(platform), node_rules(platform), kueue_rules(platform),
              model_store_rules(platform), agent_rules(platform), platform_rules(platform)]
    return [g for g in groups if g.rules]


# ---------------------------------------------------------------------------- rendering


def rules_data(groups: Iterable[RuleGroup], runbook_base: str = "") -> dict[str, Any]:
    """The Prometheus rule file as data (``runbook_base``: :func:`runbook_url`'s)."""
    out = []
    for g in groups:
        rules: list[dict[str, Any]] = []
        for r in g.rules:
            if isinstance(r, RecordingRule):
                rules.append({"record": r.record, "expr": r.expr})
                continue
            rule: dict[str, Any] = {"alert": r.name, "expr": r.expr}
            if r.for_ != "0m":
                rule["for"] = r.for_
            rule["labels"] = r.labels
            rule["annotations"] = r.annotations({}, runbook_base)
            rules.append(rule)
        out.append({"name": g.name, "interval": g.interval, "rules": rules})
    return {"groups": out}


def rule_tests_data(groups: Iterable[RuleGroup], rules_file: str = RULES_FILE,
                    runbook_base: str = "") -> dict[str, Any]:
    """The ``promtool test rules`` file: per alert one firing and one silent test."""
    tests: list[dict[str, Any]] = []
    for g in groups:
        for a in g.alerts:
            for case in (a.firing, a.healthy):
                exp = [{"exp_labels": {**labels, **a.labels},
                        "exp_annotations": a.annotations({**labels, **a.labels},
                                                         runbook_base)}
                       for labels in case.fires]
                tests.append({
                    "name": f"{a.name} {'fires' if case.fires else 'stays silent'}",
                    "interval": "1m",
                    "input_series": [{"series": s.selector, "values": s.values}
                                     for s in case.series],
                    "alert_rule_test": [{"eval_time": case.eval_time, "alertname": a.name,
                                         "exp_alerts": exp}],
                })
    return {"rule_files": [rules_file], "evaluation_interval": "1m", "tests": tests}


Discovery = Literal["kubernetes", "file"]


def scrape_config(platform: Platform, discovery: Discovery = "kubernetes",
                  rules_file: str = RULES_FILE) -> dict[str, Any]:
    """Prometheus configuration: rule file, global settings and one job per exporter.

    ``kubernetes``: pod discovery with the node's metadata attached (Prometheus >= 2.35), so
    every target gets ``node`` (the Kubernetes node name) and ``pool`` (the node label
    ``aiplat.io/pool``). ``file``: for nodes outside Kubernetes (or a Prometheus built
    without Kubernetes discovery, as Debian's is), one ``targets/<job>.yaml`` per job whose
    entries carry the ``node`` and ``pool`` labels themselves.
    """
    pool_meta = "__meta_kubernetes_node_label_" + re.sub(r"[^A-Za-z0-9_]", "_", POOL_LABEL)
    jobs: list[dict[str, Any]] = []
    for name, _what, namespace, selector, port in JOBS:
        job: dict[str, Any] = {"job_name": name}
        if discovery == "kubernetes":
            job["kubernetes_sd_configs"] = [{
                "role": "pod",
                "namespaces": {"names": [namespace]},
                "selectors": [{"role": "pod", "label": selector}],
                "attach_metadata": {"node": True},
            }]
            job["relabel_configs"] = [
                {"source_labels": ["__meta_kubernetes_pod_container_port_name"],
                 "regex": port, "action": "keep"},
            ]
            if name != "kube-state-metrics":
                # Its series describe other nodes (label node): the pod's own is irrelevant.
                job["relabel_configs"] += [
                    {"source_labels": ["__meta_kubernetes_pod_node_name"],
                     "target_label": "node"},
                    {"source_labels": [pool_meta], "target_label": "pool"},
                ]
        else:
            job["file_sd_configs"] = [{"files": [f"targets/{name}.yaml"]}]
        if name in ("dcgm-exporter", "kube-state-metrics"):
            # dcgm-exporter labels GPUs with the pod that holds them (namespace, pod);
            # kube-state-metrics labels each series with the object it describes.
            job["honor_labels"] = True
        if name == "kueue":
            job["scheme"] = "https"
            # Kueue serves metrics behind authentication: a ServiceAccount token that may
            # GET /metrics (in a pod: Prometheus's own; outside: a file next to this one).
            job["authorization"] = {"credentials_file": (
                "/var/run/secrets/kubernetes.io/serviceaccount/token"
                if discovery == "kubernetes" else KUEUE_TOKEN_FILE)}
            # Verify the server before the token goes out (insecure_skip_verify would hand it
            # to anyone answering on the target's address). Kueue's metrics certificate must
            # be issued by this CA for the name below (e.g. by cert-manager from the cluster
            # CA); otherwise point ca_file at the CA that issued it.
            job["tls_config"] = {
                "ca_file": SERVICE_ACCOUNT_CA if discovery == "kubernetes" else KUEUE_CA_FILE,
                "server_name": KUEUE_METRICS_SERVER_NAME,
            }
        jobs.append(job)
    jobs.append({
        "job_name": MODEL_STORE_JOB,
        "metrics_path": "/metrics",
        "static_configs": [{"targets": ["model-store.aiplat-system.svc:5001"]}],
    })
    return {
        "global": {"scrape_interval": "30s", "evaluation_interval": "1m",
                   "external_labels": {"platform": platform.metadata.name}},
        "rule_files": [rules_file],
        "scrape_configs": jobs,
    }


def target_files(platform: Platform) -> dict[str, str]:
    """``targets/<job>.yaml`` for file discovery: empty lists with the format as a comment."""
    pool = platform.pools[0].name
    out = {}
    for name, what, *_ in JOBS:
        port = {"dcgm-exporter": 9400, "node-exporter": 9100, "kueue": 8443}.get(name, 9479)
        out[f"targets/{name}.yaml"] = (
            f"# {what}: one entry per node, with the node's pool from the spec, e.g.\n"
            f"# - targets: ['{pool}-node-1:{port}']\n"
            f"#   labels: {{node: {pool}-node-1, pool: {pool}}}\n[]\n")
    return out


def verify_commands(discovery: Discovery = "kubernetes") -> list[tuple[str, str]]:
    """(what it shows, the command) to check the rendered files, run in their directory.

    ``promtool check config`` also checks that the files the configuration names exist
    (rule files, the Kueue token; cmd/promtool/main.go checkConfig), so until the token is
    in place only ``--syntax-only`` passes."""
    return [("rules valid", f"promtool check rules {RULES_FILE}"),
            ("alerts fire and stay silent as tested", f"promtool test rules {TESTS_FILE}"),
            ("configuration valid", f"promtool check config --syntax-only {SCRAPE_FILE}")]


def verify_notes(discovery: Discovery = "kubernetes") -> list[str]:
    """What the checks of :func:`verify_commands` need beyond the rendered files."""
    if discovery == "file":
        return [f"Once {KUEUE_TOKEN_FILE} (a token that may GET Kueue's /metrics) is next to "
                f"{SCRAPE_FILE}, `promtool check config {SCRAPE_FILE}` checks the files it "
                "names too."]
    return ["Kubernetes discovery needs a promtool built with it (Prometheus's release or "
            "container image): Debian's prometheus package has none and refuses "
            "kubernetes_sd_configs; for it, render with --discovery file."]


def checklist_document(platform: Platform, groups: list[RuleGroup],
                       discovery: Discovery = "kubernetes") -> Document:
    """What "minimum monitoring" covers, where each signal comes from and its alerts."""
    by_component: dict[str, list[str]] = {}
    for g in groups:
        for a in g.alerts:
            by_component.setdefault(a.component, []).append(a.name)
    items = [
        ("GPUs: XID errors, ECC and remapped rows, temperature, throttling, power, NVLink CRC,"
         " PCIe replays, fallen off the bus, allocated but idle", "dcgm-exporter",
         "the counters CSV aiplat kube render writes (ConfigMap aiplat-dcgm-metrics in "
         f"{GPU_OPERATOR_NS}; DCGM's default list leaves ECC, NVLink CRC and others off) "
         "and its ServiceMonitor's relabelings (node, job); pool joined from "
         f"kube-state-metrics: --metric-labels-allowlist=nodes=[{POOL_LABEL}"
         ",nvidia.com/gpu-driver-upgrade-state]", "gpu"),
        ("Nodes: disk, memory, network errors and drops", "prometheus-node-exporter",
         "filesystem, meminfo and netdev collectors (on by default)", "node"),
        ("Network links, InfiniBand ports", "prometheus-node-exporter",
         "netdev and infiniband collectors (on by default)", "network"),
        ("RoCE ports: PFC pause storms", "prometheus-node-exporter",
         "ethtool collector, OFF by default: --collector.ethtool (with "
         "--collector.ethtool.metrics-include='.*pause.*' to keep the series few)", "roce"),
        ("GPU Operator driver upgrades; the DRA driver's kubelet plugin", "kube-state-metrics",
         "node label nvidia.com/gpu-driver-upgrade-state in the allowlist above",
         "gpu-operator|dra"),
        ("Queues: pending age, inadmissible workloads, usage against quota, preemptions",
         "Kueue controller manager", "metrics endpoint enabled; "
         "metrics.enableClusterQueueResources: true for usage and quota", "queues"),
        ("Model store: server errors, node pull errors, cache hit rate",
         "registry (debug server /metrics) and the aiplat model cache",
         "registry http.debug.prometheus.enabled: true; aiplat_* metrics below", "model-store"),
        ("aiplat node agent: failed checks, agent alive", "aiplat node agent, "
         "kube-state-metrics", f"kube-state-metrics exports node condition {AGENT_CONDITION}"
         "; the agent's aiplat_* metrics need a port named 'metrics' on its DaemonSet",
         "node-agent"),
        ("Monitoring itself: every scrape target up", "Prometheus", "the up series",
         "monitoring"),
    ]
    rows = [[what, source, setup, ", ".join(sorted({a for c in comp.split("|")
                                                     for a in by_component.get(c, [])})) or "—"]
            for what, source, setup, comp in items]
    thresholds = []
    for p in _gpu_pools(platform):
        c = p.node.checks
        thresholds.append([p.name, f"{c.max_gpu_temp_c:g} °C", str(c.max_ecc_uncorrected),
                           "—" if c.max_remapped_rows_uncorrectable is None
                           else str(c.max_remapped_rows_uncorrectable),
                           f"{c.xid_window_hours:g} h", f"{c.min_free_disk_percent:g} %",
                           str(p.node.gpu.count if p.node.gpu else 0)])
    m = platform.operations.monitoring
    alerts = [[a.name, a.severity, a.component, a.for_, a.summary]
              for g in groups for a in g.alerts]
    return Document(
        title=f"Minimum monitoring — {platform.metadata.name}",
        subtitle="Generated by aiplat monitoring render; every alert has a promtool unit test "
                 f"in {TESTS_FILE}.",
        sections=[
            Section(id="coverage", title="What minimum monitoring covers",
                    paragraphs=["Each line must be true before handover: the exporter runs on "
                                "every node of every pool, Prometheus scrapes it (the "
                                "ScrapeTargetDown alert is silent) and the alerts are loaded.",
                                _selection_note(m.selector_labels, m.runbook_base_url)],
                    tables=[Table(columns=["Signal", "Source", "Set-up", "Alerts"],
                                  rows=rows)]),
            Section(id="thresholds", title="Thresholds from the spec",
                    paragraphs=["Per pool from node.checks; the rest from "
                                "operations.monitoring."],
                    tables=[Table(columns=["pool", "max GPU temp", "max ECC uncorrected",
                                           "max remapped rows", "XID window", "min free disk",
                                           "GPUs per node"], rows=thresholds),
                            Table(columns=["setting", "value"], rows=[
                                ["idle GPU below", f"{m.idle_gpu_utilization:.0%} for "
                                                   f"{m.idle_gpu_minutes} min"],
                                ["pending without admission", f"{m.pending_minutes} min"],
                                ["quota usage warning", f"{m.quota_usage_warning:.0%}"],
                                ["preemptions per hour", str(m.preemptions_per_hour)],
                                ["model pull error ratio", f"{m.model_pull_error_ratio:.0%}"],
                                ["min cache hit ratio", f"{m.min_cache_hit_ratio:.0%}"],
                            ])]),
            Section(id="alerts", title="Alerts",
                    tables=[Table(columns=["alert", "severity", "component", "for",
                                           "summary"], rows=alerts)]),
            Section(id="aiplat-metrics", title="Metrics aiplat exports",
                    paragraphs=["The aiplat node agent and the node model cache export these; "
                                "the rules above rely on the names."],
                    tables=[Table(columns=["metric", "type", "meaning"],
                                  rows=[list(x) for x in AIPLAT_METRICS])]),
            Section(id="verify", title="Verify",
                    paragraphs=["In the directory of these files:", *verify_notes(discovery)],
                    tables=[Table(columns=["step", "command"], rows=[
                        *([what, cmd] for what, cmd in verify_commands(discovery)),
                        ["targets up", "curl -s http://PROMETHEUS:9090/api/v1/query "
                                       "--data-urlencode 'query=up == 0'"],
                    ])]),
        ],
    )


def _monitor_labels(selector_labels: Mapping[str, str]) -> dict[str, str]:
    """aiplat's own label and the ones the Prometheus selects on
    (``operations.monitoring.selectorLabels``; kube-prometheus-stack's ruleSelector and
    serviceMonitorSelector match ``release: <its release>`` unless told otherwise)."""
    return {"app.kubernetes.io/part-of": "aiplat", **selector_labels}


def _selection_note(selector_labels: Mapping[str, str], runbook_base: str | None) -> str:
    labels = ", ".join(f"{k}={v}" for k, v in selector_labels.items()) or "none"
    link = (f"Runbook links point to {runbook_base}." if runbook_base else
            "Runbook links are relative (runbook.html#...): Alertmanager's receivers cannot "
            "open them; set operations.monitoring.runbookBaseUrl to where runbook.html is "
            "published.")
    return (f"The ServiceMonitors and the PrometheusRule carry the labels {labels} "
            "(operations.monitoring.selectorLabels): the Prometheus's serviceMonitorSelector "
            f"and ruleSelector must match them. {link}")


def prometheus_rule(groups: Iterable[RuleGroup], selector_labels: Mapping[str, str],
                    runbook_base: str = "") -> dict[str, Any]:
    """The same rules as a prometheus-operator PrometheusRule, labelled for the
    Prometheus's ``ruleSelector``."""
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "aiplat", "namespace": MONITORING_NS,
                         "labels": _monitor_labels(selector_labels)},
            "spec": rules_data(groups, runbook_base)}


def kueue_service_monitor(selector_labels: Mapping[str, str]) -> dict[str, Any]:
    """Kueue's metrics endpoint for prometheus-operator, as Kueue's own
    config/components/prometheus (monitor.yaml with monitor_tls_patch.yaml) has it: the
    Prometheus ServiceAccount token goes only to a server whose certificate the metrics CA
    signed for the Service's name, never with insecureSkipVerify."""
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
            "metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system",
                         "labels": _monitor_labels(selector_labels)},
            "spec": {
                "selector": {"matchLabels": {"control-plane": "controller-manager",
                                             "app.kubernetes.io/name": "kueue"}},
                "endpoints": [{
                    "port": "https", "scheme": "https", "path": "/metrics",
                    "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                    "tlsConfig": {"serverName": KUEUE_METRICS_SERVER_NAME,
                                  "insecureSkipVerify": False,
                                  "ca": {"secret": {"name": "metrics-server-cert",
                                                    "key": "ca.crt"}}}}]}}


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=4096,
                          allow_unicode=True)


def render_monitoring(platform: Platform,
                      discovery: Discovery = "kubernetes") -> dict[str, str]:
    """Every monitoring file by relative path, rendered in memory (nothing written)."""
    from aiplat.ops.dashboards import dashboard_files
    from aiplat.report.markdown import render_markdown

    groups = monitoring_rules(platform)
    mon = platform.operations.monitoring
    base = mon.runbook_base_url or ""
    extra = target_files(platform) if discovery == "file" else {}
    return {**extra, **dashboard_files(platform),
        RULES_FILE: "# Generated by aiplat monitoring render. Do not edit by hand: change the "
                    "spec and render again.\n" + _dump(rules_data(groups, base)),
        TESTS_FILE: "# promtool test rules " + TESTS_FILE + "\n"
                    + _dump(rule_tests_data(groups, RULES_FILE, base)),
        SCRAPE_FILE: _dump(scrape_config(platform, discovery)),
        CHECKLIST_FILE: render_markdown(checklist_document(platform, groups, discovery)),
        PROMETHEUS_RULE_FILE: yaml.safe_dump_all(
            [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MONITORING_NS}},
             prometheus_rule(groups, mon.selector_labels, base)], sort_keys=False, width=4096,
            allow_unicode=True),
        SERVICE_MONITOR_FILE: _dump(kueue_service_monitor(mon.selector_labels)),
    }
