"""The Grafana dashboards' shape and their ties to the spec and the rules, without Grafana or
Prometheus (tests/integration/test_dashboards_prometheus.py runs every query on a real one):
files and provisioning, the grid, ids and variables, thresholds that follow the spec, and
every series a panel names being one aiplat knows an exporter or a rule produces."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import yaml

from aiplat.catalog import load_catalog
from aiplat.ops import dashboards as dash
from aiplat.ops.monitoring import AIPLAT_METRICS, RecordingRule, monitoring_rules
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform


def example(edit: Callable[[dict[str, Any]], None] | None = None) -> Platform:
    data = yaml.safe_load(example_text())
    if edit is not None:
        edit(data)
    return parse_platform(yaml.safe_dump(data, sort_keys=False), EXAMPLE, load_catalog())


def _boards(platform: Platform | None = None) -> dict[str, dict[str, Any]]:
    files = dash.dashboard_files(platform or example())
    return {k: json.loads(v) for k, v in files.items() if k.endswith(".json")}


def test_files_are_one_json_per_dashboard_a_provider_and_configmaps() -> None:
    files = dash.dashboard_files(example())
    assert sorted(files) == [
        "grafana/dashboards/aiplat-gpus.json", "grafana/dashboards/aiplat-kueue.json",
        "grafana/dashboards/aiplat-model-store.json",
        "grafana/provisioning/dashboards/aiplat.yaml", "kubernetes/grafana-dashboards.yaml"]
    provider = yaml.safe_load(files[dash.PROVIDER_FILE])
    (p,) = provider["providers"]
    assert provider["apiVersion"] == 1 and p["type"] == "file" and p["folder"] == "aiplat"
    assert p["options"]["path"] == dash.DASHBOARD_DIR
    maps = list(yaml.safe_load_all(files[dash.CONFIGMAP_FILE]))
    assert [m["metadata"]["labels"] for m in maps] == [{"grafana_dashboard": "1"}] * 3
    for m in maps:
        ((name, text),) = m["data"].items()
        assert text == files[f"{dash.DASHBOARDS_DIR}/{name}"]


def test_the_grid_ids_and_targets() -> None:
    for path, d in _boards().items():
        assert d["uid"] == path.rsplit("/", 1)[1].removesuffix(".json")
        assert d["schemaVersion"] == dash.SCHEMA_VERSION
        ids = [p["id"] for p in d["panels"]]
        assert len(ids) == len(set(ids)), path
        cells: set[tuple[int, int]] = set()
        for p in d["panels"]:
            g = p["gridPos"]
            assert g["x"] >= 0 and g["x"] + g["w"] <= 24, (path, p["title"])
            mine = {(g["x"] + i, g["y"] + j) for i in range(g["w"]) for j in range(g["h"])}
            assert not cells & mine, f"{path}: {p['title']} overlaps another panel"
            cells |= mine
            if p["type"] == "row":
                continue
            assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            refs = [t["refId"] for t in p["targets"]]
            assert refs and len(refs) == len(set(refs))
            assert all(t["expr"] and t["datasource"] == p["datasource"] for t in p["targets"])


def test_every_variable_a_query_uses_is_defined() -> None:
    for path, d in _boards().items():
        names = {v["name"] for v in d["templating"]["list"]}
        assert "datasource" in names
        for p in d["panels"]:
            for t in p.get("targets", []):
                used = set(re.findall(r"\$(\w+)", t["expr"])) - {"__rate_interval"}
                assert used <= names, (path, p["title"], used - names)
        for v in d["templating"]["list"]:
            if v["type"] == "query":
                assert v["allValue"] == ".*" and v["includeAll"]
                assert set(re.findall(r"\$(\w+)", v["definition"])) <= names


# dcgm-exporter's etc/default-counters.csv, plus the fields the monitoring checklist has the
# admin enable (aiplat.ops.monitoring.checklist_document): nothing else is exported.
DCGM_FIELDS = {
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_ROW_REMAP_PENDING", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE"}


def test_every_series_a_panel_names_is_exported_or_recorded() -> None:
    """Names only: the integration test proves them on Prometheus."""
    platform = example()
    recorded = {r.record for g in monitoring_rules(platform) for r in g.rules
                if isinstance(r, RecordingRule)}
    known = recorded | {name for name, _k, _h in AIPLAT_METRICS}
    functions = {"sum", "by", "rate", "increase", "count", "avg", "max", "histogram_quantile",
                 "or", "le", "instance", "node", "gpu", "check", "cluster_queue", "status",
                 "flavor", "resource", "preempting_cluster_queue", "reason", "code",
                 "handler"}
    for d in dash.dashboards(platform):
        for title, expr in dash.panel_queries(d):
            bare = re.sub(r'\{[^}]*\}|"[^"]*"|\[[^]]*\]', "", expr)
            for name in set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", bare)) - functions:
                if name.startswith("DCGM_FI_"):
                    assert name in DCGM_FIELDS, (d.uid, title, name)
                elif not name.startswith(("kueue_", "registry_http_")):
                    assert name in known, (d.uid, title, name)


def test_thresholds_follow_the_spec() -> None:
    def tuned(data: dict[str, Any]) -> None:
        data["pools"][0]["node"]["checks"] = {"maxGpuTempC": 70}
        data["operations"]["monitoring"] = {"quotaUsageWarning": 0.8, "minCacheHitRatio": 0.6}

    def steps(boards: dict[str, dict[str, Any]], uid: str, title: str) -> list[Any]:
        d = boards[f"grafana/dashboards/{uid}.json"]
        p = next(p for p in d["panels"] if p["title"] == title)
        return [s["value"] for s in p["fieldConfig"]["defaults"]["thresholds"]["steps"]]

    base, tuned_boards = _boards(), _boards(example(tuned))
    assert steps(base, "aiplat-gpus", "Temperature") == [None, 85]
    assert steps(tuned_boards, "aiplat-gpus", "Temperature") == [None, 70]
    assert steps(tuned_boards, "aiplat-kueue", "Quota usage") == [None, 0.8, 1.0]
    hit = next(p for p in tuned_boards["grafana/dashboards/aiplat-model-store.json"]["panels"]
               if p["title"] == "Cache hit ratio (1h)")
    assert hit["fieldConfig"]["defaults"]["thresholds"]["steps"] == [
        {"color": "red", "value": None}, {"color": "green", "value": 0.6}]


def test_a_platform_without_gpus_has_no_gpu_dashboard() -> None:
    # A spec without GPUs cannot place the example's workloads: drop them after parsing.
    p = example()
    cpu_only = p.model_copy(update={"pools": [
        pool.model_copy(update={"node": pool.node.model_copy(update={"gpu": None})})
        for pool in p.pools]})
    assert [d.uid for d in dash.dashboards(cpu_only)] == ["aiplat-kueue", "aiplat-model-store"]
    assert next(d.uid for d in dash.dashboards(p)) == "aiplat-gpus"
