"""Every Grafana panel query of ``aiplat.ops.dashboards`` run on a real Prometheus (Debian's).

The data: three hours of series with the names and labels the exporters publish, backfilled
with ``promtool tsdb create-blocks-from openmetrics``:

- dcgm-exporter's GPU fields (two pools of the example spec, two nodes each, two GPUs each,
  the labels dcgm-exporter sets plus ``node``/``pool`` that the scrape configuration adds);
- Kueue's metrics with the label names v0.19 registers (``replica_role`` included): the
  table is cross-checked against sigs.k8s.io/kueue@v0.19.2 pkg/metrics/metrics.go itself,
  read from the Go module cache (``go mod download``), names and label names;
- the registry's: the metric families and label sets a real Debian ``docker-registry``
  (distribution 2.8) exposes on its debug port after a few requests, scraped in the test;
- the ``aiplat_*`` series of ``AIPLAT_METRICS`` (the contract the agent and cache export).

Prometheus then starts on 127.0.0.1 with that TSDB and the rules ``aiplat monitoring
render`` writes, so the recording series the panels read (``aiplat:*``) are the rules' own
output. Each panel expression, with the dashboard's variables at "All" and
``$__rate_interval`` at 5m, must parse and return at least one finite sample; each variable's
``label_values`` must list values; a pool picked in ``$pool`` must filter. Negative controls:
a panel naming a series nobody exports, and one that does not parse, are both reported.

Without prometheus/promtool, docker-registry or Go the tests skip locally; in CI they fail.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import need

from aiplat.catalog import load_catalog
from aiplat.fsutil import write_tree
from aiplat.gobuild import go
from aiplat.ops import dashboards as dash
from aiplat.ops.monitoring import AIPLAT_METRICS, RULES_FILE, render_monitoring
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform

sys.path.insert(0, str(Path(__file__).resolve().parent))
import registry as registry_mod

pytestmark = pytest.mark.integration

KUEUE_VERSION = "v0.19.2"
STEP_S = 30
SPAN_S = 3 * 3600
Labels = dict[str, str]




def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def example() -> Platform:
    return parse_platform(example_text(), EXAMPLE, load_catalog())


# ---------------------------------------------------------------------------- what is exported


@dataclass(frozen=True)
class Family:
    """Series of one metric: ``kind`` gauge (values wander) or counter (values grow)."""

    name: str
    kind: str
    series: tuple[Labels, ...]


DCGM_GAUGES = {  # field -> (low, high) of the synthetic values
    "DCGM_FI_DEV_GPU_UTIL": (0, 100), "DCGM_FI_PROF_GR_ENGINE_ACTIVE": (0, 1),
    "DCGM_FI_DEV_FB_USED": (1000, 70000), "DCGM_FI_DEV_FB_FREE": (1000, 70000),
    "DCGM_FI_DEV_GPU_TEMP": (30, 80), "DCGM_FI_DEV_POWER_USAGE": (60, 700),
    "DCGM_FI_DEV_SM_CLOCK": (210, 1980), "DCGM_FI_DEV_XID_ERRORS": (0, 0),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": (0, 0), "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": (0, 0),
    "DCGM_FI_DEV_ROW_REMAP_PENDING": (0, 0), "DCGM_FI_DEV_ROW_REMAP_FAILURE": (0, 0),
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": (0, 0),
}


def dcgm_families(platform: Platform) -> list[Family]:
    gpus = []
    for p in platform.pools:
        if p.node.gpu is None:
            continue
        for n in range(2):
            node = f"{p.name}-{n}"
            for g in range(2):
                gpus.append({"gpu": str(g), "UUID": f"GPU-{p.name}-{n}-{g}",
                             "device": f"nvidia{g}", "modelName": "NVIDIA GPU",
                             "Hostname": node, "node": node, "pool": p.name,
                             "job": "dcgm-exporter", "instance": f"{node}:9400"})
    return [Family(name, "gauge", tuple(gpus)) for name in DCGM_GAUGES]


# Kueue v0.19 (pkg/metrics/metrics.go): metric -> label names (cross-checked below).
KUEUE_LABELS = {
    "pending_workloads": ("cluster_queue", "status", "replica_role"),
    "admitted_active_workloads": ("cluster_queue", "replica_role"),
    "reserving_active_workloads": ("cluster_queue", "replica_role"),
    "admitted_workloads_total": ("cluster_queue", "priority_class", "replica_role"),
    "admission_wait_time_seconds": ("cluster_queue", "priority_class", "replica_role"),
    "preempted_workloads_total": ("preempting_cluster_queue", "reason", "replica_role"),
    "evicted_workloads_total": ("cluster_queue", "reason", "underlying_cause",
                                "priority_class", "replica_role"),
    "cluster_queue_resource_usage": ("cohort", "cluster_queue", "flavor", "resource",
                                     "replica_role"),
    "cluster_queue_resource_reservation": ("cohort", "cluster_queue", "flavor", "resource",
                                           "replica_role"),
    "cluster_queue_nominal_quota": ("cohort", "cluster_queue", "flavor", "resource",
                                    "replica_role"),
}
KUEUE_COUNTERS = {"admitted_workloads_total", "preempted_workloads_total",
                  "evicted_workloads_total"}
WAIT_BUCKETS = ("1", "2.5", "5", "10", "30", "60", "300", "1800", "+Inf")


def _kueue_values(platform: Platform) -> dict[str, list[str]]:
    return {"cluster_queue": [t.name for t in platform.tenants], "status": ["active",
            "inadmissible"], "replica_role": ["leader"], "priority_class": ["aiplat-training"],
            "preempting_cluster_queue": [t.name for t in platform.tenants][:1],
            "reason": ["InCohortReclamation"], "underlying_cause": [""],
            "cohort": ["platform"], "flavor": [p.name for p in platform.pools],
            "resource": ["nvidia.com/gpu"]}


def kueue_families(platform: Platform) -> list[Family]:
    values = _kueue_values(platform)
    base = {"job": "kueue", "instance": "10.0.0.5:8443"}
    out = []
    for metric, names in KUEUE_LABELS.items():
        combos: list[Labels] = [dict(base)]
        for label in names:
            combos = [{**c, label: v} for c in combos for v in values[label]]
        name = f"kueue_{metric}"
        if metric == "admission_wait_time_seconds":
            out.append(Family(f"{name}_bucket", "counter",
                              tuple({**c, "le": le} for c in combos for le in WAIT_BUCKETS)))
            out += [Family(f"{name}_{s}", "counter", tuple(combos)) for s in ("sum", "count")]
        else:
            out.append(Family(name, "counter" if metric in KUEUE_COUNTERS else "gauge",
                              tuple(combos)))
    return out


def aiplat_families(platform: Platform) -> list[Family]:
    nodes = [{"node": f"{p.name}-{n}", "pool": p.name, "job": "aiplat-node-agent",
              "instance": f"{p.name}-{n}:9479"} for p in platform.pools for n in range(2)]
    out = []
    for name, kind, _help in AIPLAT_METRICS:
        series = tuple({**n, "check": "gpu-count"} for n in nodes) \
            if name == "aiplat_node_check_failed" else tuple(nodes)
        out.append(Family(name, kind, series))
    return out


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def registry_families(exposition: str) -> list[Family]:
    """The registry's own series (those named registry_*), as its /metrics listed them."""
    by_name: dict[str, list[Labels]] = {}
    for line in exposition.splitlines():
        m = SAMPLE.match(line)
        if m and m.group(1).startswith("registry_"):
            labels = dict(LABEL.findall(m.group(2) or ""))
            by_name.setdefault(m.group(1), []).append(
                {**labels, "job": "model-store", "instance": "model-store:5001"})
    return [Family(n, "gauge" if n.endswith("in_flight_requests") else "counter", tuple(s))
            for n, s in by_name.items()]


def openmetrics(families: list[Family], end: int) -> str:
    """Samples every STEP_S over SPAN_S up to ``end``: gauges wander within their range,
    counters grow (histogram buckets by a factor that keeps them cumulative)."""
    lines = []
    steps = range(SPAN_S // STEP_S + 1)
    for f in families:
        low, high = DCGM_GAUGES.get(f.name, (0, 10))
        for k, labels in enumerate(f.series):
            text = ",".join(f'{a}="{v}"' for a, v in sorted(labels.items()))
            le = labels.get("le")
            scale = 1.0 if le is None else (1.0 if le == "+Inf" else
                                            min(1.0, 0.2 + math.log10(1 + float(le)) / 4))
            for i in steps:
                t = end - SPAN_S + i * STEP_S
                if f.kind == "counter":
                    v = round((1 + k % 3) * i * scale, 3)
                else:
                    v = low + (high - low) * (0.5 + 0.5 * math.sin(i / 17 + k))
                lines.append(f"{f.name}{{{text}}} {v:g} {t}")
    return "\n".join([*lines, "# EOF", ""])


# ---------------------------------------------------------------------------- the real things


def _registry_exposition(tmp: Path) -> str:
    """Start a real docker-registry with its Prometheus endpoint, make it serve a hit and a
    miss, and return its /metrics text."""
    port, debug = _free_port(), _free_port()
    cfg = tmp / "registry.yml"
    cfg.write_text(f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
                   f"    rootdirectory: {tmp / 'data'}\nhttp:\n  addr: 127.0.0.1:{port}\n"
                   f"  debug:\n    addr: 127.0.0.1:{debug}\n    prometheus:\n"
                   "      enabled: true\n      path: /metrics\n")
    proc = subprocess.Popen([registry_mod.BINARY, "serve", str(cfg)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/v2/"
        _wait(lambda: urllib.request.urlopen(base, timeout=2).status == 200, "registry")
        try:
            urllib.request.urlopen(base + "m/blobs/sha256:" + "0" * 64, timeout=5)
        except urllib.error.HTTPError as e:
            assert e.code == 404
        with urllib.request.urlopen(f"http://127.0.0.1:{debug}/metrics", timeout=5) as r:
            return str(r.read().decode())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _wait(probe: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
            if last:
                return last
        except OSError as e:
            last = e
        time.sleep(0.5)
    raise AssertionError(f"{what} not ready in {timeout:.0f} s (last: {last!r})")


@dataclass
class Prom:
    url: str

    def get(self, path: str, **params: str | list[str]) -> Any:
        q = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}{path}?{q}", timeout=60) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:  # 400 on a bad expression: the body says why
            return json.loads(e.read())


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prom]:
    tools = [t for t in ("prometheus", "promtool") if shutil.which(t) is None]
    need(f"{', '.join(tools)} not installed (fix: apt-get install prometheus)" if tools
          else registry_mod.missing())
    tmp = tmp_path_factory.mktemp("prom")
    platform = example()
    write_tree(tmp / "rules", render_monitoring(platform))
    end = int(time.time()) - 5
    families = (dcgm_families(platform) + kueue_families(platform) + aiplat_families(platform)
                + registry_families(_registry_exposition(tmp)))
    (tmp / "data.om").write_text(openmetrics(families, end))
    done = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics",
                           str(tmp / "data.om"), str(tmp / "tsdb")],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (tmp / "prometheus.yml").write_text(
        f"global:\n  evaluation_interval: 15s\nrule_files:\n  - {tmp / 'rules' / RULES_FILE}\n")
    port = _free_port()
    with (tmp / "prometheus.log").open("w") as log:
        proc = subprocess.Popen(
            ["prometheus", f"--config.file={tmp / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}",
             "--storage.tsdb.retention.time=30d", "--query.lookback-delta=15m"],
            stdout=subprocess.DEVNULL, stderr=log)
        p = Prom(f"http://127.0.0.1:{port}")
        try:
            _wait(lambda: urllib.request.urlopen(p.url + "/-/ready", timeout=2).status == 200,
                  f"prometheus (log: {tmp / 'prometheus.log'})", 120)
            _wait(lambda: _rules_evaluated(p), "the first evaluation of every rule group", 150)
            yield p
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _rules_evaluated(p: Prom) -> bool:
    groups = p.get("/api/v1/rules")["data"]["groups"]
    return bool(groups) and all(not g["lastEvaluation"].startswith("0001") for g in groups)


# ---------------------------------------------------------------------------- the checks


def _concrete(expr: str, picks: dict[str, str] | None = None) -> str:
    """A panel expression as Grafana sends it: variables at "All" (.*) unless picked."""
    picks = picks or {}
    expr = expr.replace("$__rate_interval", "5m")
    return re.sub(r"\$(\w+)", lambda m: picks.get(m.group(1), ".*"), expr)


def problems(p: Prom, board: dash.Dashboard, picks: dict[str, str] | None = None) -> list[str]:
    out = []
    for title, expr in dash.panel_queries(board):
        r = p.get("/api/v1/query", query=_concrete(expr, picks))
        if r["status"] != "success":
            out.append(f"{board.uid} / {title}: {r.get('error')}")
            continue
        values = [float(s["value"][1]) for s in r["data"]["result"]]
        if not any(math.isfinite(v) for v in values):
            out.append(f"{board.uid} / {title}: no data ({expr})")
    return out


def test_every_panel_query_parses_and_returns_data(prom: Prom) -> None:
    boards = dash.dashboards(example())
    assert [b.uid for b in boards] == ["aiplat-gpus", "aiplat-kueue", "aiplat-model-store"]
    assert sum(len(dash.panel_queries(b)) for b in boards) >= 30
    assert [x for b in boards for x in problems(prom, b)] == []


def test_every_variable_lists_values(prom: Prom) -> None:
    for board in dash.dashboards(example()):
        for v in board.variables:
            if v.kind == "datasource":
                continue
            m = re.fullmatch(r"label_values\((.+), (\w+)\)", v.query)
            assert m, v.query
            r = prom.get(f"/api/v1/label/{m.group(2)}/values",
                         **{"match[]": _concrete(m.group(1))})
            assert r["status"] == "success" and r["data"], (board.uid, v.name, r)


def test_a_picked_pool_filters_the_gpu_panels(prom: Prom) -> None:
    board = dash.gpu_dashboard(example())
    assert problems(prom, board, {"pool": "l40s"}) == []
    util = next(e for t, e in dash.panel_queries(board) if t == "GPU utilisation")
    r = prom.get("/api/v1/query", query=_concrete(util, {"pool": "l40s"}))
    pools = {s["metric"].get("pool") for s in r["data"]["result"]}
    assert pools == {"l40s"}
    assert problems(prom, board, {"pool": "no-such-pool"})  # nothing left to show


def test_a_series_nobody_exports_and_a_broken_expression_are_reported(prom: Prom) -> None:
    bogus = dash.Dashboard("t", "t", "", (("r", (
        dash.Panel("typo", (dash.Target('DCGM_FI_DEV_GPU_UTILIZATION{pool=~"$pool"}'),)),
        dash.Panel("old kueue name", (dash.Target("kueue_admitted_workloads"),)),
        dash.Panel("broken", (dash.Target("sum by (node (DCGM_FI_DEV_GPU_UTIL)"),)),
        dash.Panel("fine", (dash.Target("DCGM_FI_DEV_GPU_UTIL"),)),
    )),))
    found = problems(prom, bogus)
    assert [f.split(":")[0] for f in found] == ["t / typo", "t / old kueue name", "t / broken"]
    assert "no data" in found[0] and "parse error" in found[2]


def _kueue_source() -> Path:
    done = subprocess.run([go(), "mod", "download", "-json", f"sigs.k8s.io/kueue@{KUEUE_VERSION}"],
                          capture_output=True, text=True, timeout=600, check=False,
                          cwd=Path(__file__).parent)
    info = json.loads(done.stdout or "{}")
    need(None if done.returncode == 0 and info.get("Dir") else
          f"go mod download sigs.k8s.io/kueue@{KUEUE_VERSION}: {done.stderr or done.stdout}")
    return Path(info["Dir"])


def test_the_kueue_series_are_those_kueue_registers() -> None:
    """Names and label names of KUEUE_LABELS against Kueue's own metric definitions."""
    need(None if shutil.which("go") else "go is not on PATH (fix: install Go >= 1.26)")
    text = (_kueue_source() / "pkg/metrics/metrics.go").read_text()
    defined: dict[str, tuple[str, ...]] = {}
    for m in re.finditer(r'Subsystem:\s*constants\.KueueName,\s*Name:\s*"(\w+)"', text):
        rest = text[m.end():]
        labels = re.search(r"\[\]string\{([^}]*)\}", rest)
        assert labels, m.group(1)
        defined[m.group(1)] = tuple(re.findall(r'"(\w+)"', labels.group(1)))
    assert len(defined) > 30
    for metric, labels in KUEUE_LABELS.items():
        assert defined.get(metric) == labels, (metric, defined.get(metric))
