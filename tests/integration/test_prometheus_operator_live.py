"""aiplat's monitoring objects through the real Prometheus Operator into a real Prometheus.

On the lab cluster's API server the Prometheus Operator (``cmd/operator`` of
github.com/prometheus-operator/prometheus-operator, built from its pinned module by
``promop.py``, with the module's CRDs) reconciles a Prometheus whose selectors are
kube-prometheus-stack's defaults (``release: kube-prometheus-stack`` on ServiceMonitors and
PrometheusRules, every namespace), given:

- the PrometheusRule and the Kueue ServiceMonitor that ``aiplat monitoring render`` writes;
- the DCGM exporter's ServiceMonitor as the GPU Operator makes it from aiplat's
  ``dcgmExporter.serviceMonitor`` values: the ServiceMonitor of its state manifests
  (``assets/state-dcgm-exporter/`` of the GPU Operator's module pinned in
  ``gpu-operator/go.mod``) with the edits its ``ServiceMonitor`` state function makes
  (``controllers/object_controls.go``: additionalLabels merged into the labels; interval,
  honorLabels and relabelings on the first endpoint; namespace filled);
- the Services they select and a ServiceMonitor without the release label (must be left out).

Selection: the operator's generated configuration (Secret ``prometheus-<name>``,
``prometheus.yaml.gz``) has a scrape job for each rendered ServiceMonitor and none for the
unlabelled one; its rule-file ConfigMaps hold every group of the rendered PrometheusRule,
rule for rule.

Loading: that configuration is loaded into Debian's Prometheus (2.42, built without
Kubernetes discovery) with only the discovery rewritten: each job's
``kubernetes_sd_configs`` becomes a ``file_sd_configs`` target on 127.0.0.1 carrying the
``__meta_kubernetes_*`` labels that Kubernetes discovery gives the Service's endpoint and
the exporter's pod (for the role the configuration names), and only in the namespaces the
job's discovery watches; every ``relabel_configs``/``metric_relabel_configs``,
``honor_labels`` and the rest stay as the operator wrote them. Paths inside the Prometheus
pod (rule files, the TLS assets the operator copied into ``prometheus-<name>-tls-assets-0``,
the service-account token) point into a temporary folder, and ``$(POD_NAME)`` and
``$(SHARD)`` are expanded as the config reloader does. The Kueue job is loaded with no
target (its selection is checked, and that its TLS files load). A fake DCGM exporter on
127.0.0.1 serves DCGM series with dcgm-exporter's label set (``gpu``, ``UUID``,
``pci_bus_id``, ``device``, ``modelName``, ``Hostname``, ``DCGM_FI_DRIVER_VERSION`` and, on
a GPU held by a pod, the workload's ``pod``/``namespace``/``container``), only fields of
aiplat's counters CSV (DCGM's default list leaves ECC, row remapping, clock event reasons,
NVLink CRC and the power limit off); a fake kube-state-metrics serves ``kube_node_labels``
with the pool label for the pool join (a job added to the configuration, ``honor_labels:
true`` as kube-prometheus-stack scrapes it). The rule files are the operator's, with two
time changes only: each group's ``interval`` becomes 2 s and each ``for`` 6 s (a test cannot
wait an hour); expressions, labels and annotations are the operator's verbatim. A control
job (the DCGM job less aiplat's ``labeldrop``, its series renamed ``control_*`` so no rule
reads them) shows what ``honorLabels: false`` does without it: the workload's pod arrives as
``exported_pod`` and ``pod`` is the exporter's own.

Proven: every GPU alert of the rendered rules fires on its series with ``node`` from the
exporter pod's node, ``pool`` joined from kube-state-metrics (where the rule joins it; the
others carry no ``pool`` on this path), ``job="dcgm-exporter"``, the
workload's ``pod``/``namespace`` (not ``exported_pod``: the exporter pod's own target labels
are dropped) and its ``runbook_url``; when the exporter serves healthy values, every alert
without a look-back window resolves; the four with one (critical XID and fallen off the bus
over the XID window, NVLink CRC over 1 h, PCIe replays over 10 m) stay firing, as they must
until their window has passed (their silence on healthy series is ``promtool test rules``'s).

What the emulated discovery cannot show: that Kubernetes discovery finds the exporter at
all (the endpoints of a real DaemonSet's pods, RBAC of the Prometheus ServiceAccount to list
them, the pod IPs and the port the Service maps), the ``__meta_*`` values a real kubelet and
EndpointSlice controller publish (they are written here from the Service and the operator's
DaemonSet manifest), the Prometheus StatefulSet the operator creates (its mounts, the config
reloader), a scrape of Kueue's metrics endpoint over TLS with the real certificate,
Alertmanager, and ``for`` and group intervals at their real lengths.

Runs in CI: scripts/test.sh builds the operator right after the lab (``promop.py``); its
module pins the lab's library versions, so that build compiles only the operator's own ~310
packages (Prometheus, Alertmanager, the AWS SDK ...) on top of the lab's. It needs the lab
cluster's components, that build, the GPU Operator's module in the Go module cache (``go mod
download`` in ``gpu-operator/``) and Debian's prometheus/promtool; a missing one skips locally
and fails in CI (``CI=true``). About 105 s on 2 cores (measured at load ~18): a lab cluster of
its own and the operator's first reconcile (~70 s; the session's shared lab would save the
cluster's start, as it would the GPU Operator test's), then ~20 s of Prometheus evaluating the
rules until each alert fires and resolves.
"""

from __future__ import annotations

import base64
import copy
import gzip
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import need
from gooracle import go_on_path
from promop import locate as locate_operator
from test_cluster_live import _aiplat, _eventually, _need_components

from aiplat.catalog import load_catalog
from aiplat.errors import InputError
from aiplat.gobuild import go
from aiplat.kube.apply import Api
from aiplat.kube.facts import GPU_OPERATOR_NS, pool_facts
from aiplat.kube.render_cluster import render_cluster
from aiplat.kube.render_dcgm import DCGM_FIELDS, SCRAPE_JOB
from aiplat.ops.monitoring import (
    MONITORING_NS,
    PROMETHEUS_RULE_FILE,
    SERVICE_MONITOR_FILE,
    monitoring_rules,
    render_monitoring,
    runbook_url,
)
from aiplat.plan.resolve import resolve
from aiplat.spec import EXAMPLE, Platform, example_text, parse_platform

pytestmark = pytest.mark.integration
NAME = "promop"
PROMETHEUS = "kube-prometheus-stack-prometheus"  # the chart's Prometheus for release k-p-s
RELEASE = {"release": "kube-prometheus-stack"}
BASE = "https://runbooks.example.org/aiplat"
GPU_OPERATOR_MODULE = "github.com/NVIDIA/gpu-operator"
TOOLS_GPU_OPERATOR = Path(__file__).parent / "gpu-operator"
WORKLOAD = {"pod": "train-0", "namespace": "research", "container": "main"}
EXPORTER_POD = "nvidia-dcgm-exporter-x7k2p"
# The CRDs the operator's Prometheus controller reads (it skips the other controllers when
# their CRDs are absent; the module's CRDs are megabytes of schema).
CRDS = ("prometheuses", "servicemonitors", "podmonitors", "probes", "prometheusrules")
# Alerts whose expression looks back over a window: they stay firing after healthy values
# until the window has passed.
WINDOWED = {"GpuCriticalXid", "GpuFallenOffBus", "GpuNvlinkCrcErrors", "GpuPcieReplays"}
Obj = dict[str, Any]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _platform() -> Platform:
    doc = yaml.safe_load(example_text())
    doc["operations"].setdefault("monitoring", {})["runbookBaseUrl"] = BASE
    gpu = next(p for p in doc["pools"] if p["node"].get("gpu"))
    gpu["node"].setdefault("checks", {})["maxRemappedRowsUncorrectable"] = 5
    return parse_platform(yaml.safe_dump(doc, sort_keys=False), EXAMPLE, load_catalog())


def _gpu_operator_state(kind: str) -> Obj:
    """The object of ``kind`` in the GPU Operator's dcgm-exporter state manifests, from its
    pinned module (the file names change between versions)."""
    pin = next(line.split()[1] for line in (TOOLS_GPU_OPERATOR / "go.mod").read_text()
               .splitlines() if line.strip().startswith(GPU_OPERATOR_MODULE + " "))
    cp = subprocess.run([go(), "mod", "download", "-json", f"{GPU_OPERATOR_MODULE}@{pin}"],
                        cwd=TOOLS_GPU_OPERATOR, capture_output=True, text=True, check=False,
                        timeout=300)
    if cp.returncode != 0:
        raise InputError(f"go mod download {GPU_OPERATOR_MODULE}@{pin}: {cp.stderr[-1000:]}")
    state = Path(json.loads(cp.stdout)["Dir"]) / "assets" / "state-dcgm-exporter"
    [found] = [d for f in sorted(state.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text())
               if d and d.get("kind") == kind]
    return dict(found)


def dcgm_service_monitor(values: Obj) -> Obj:
    """The ServiceMonitor the GPU Operator creates from ``dcgmExporter.serviceMonitor``
    (controllers/object_controls.go: ServiceMonitor, applyServiceMonitorCustomEdits)."""
    sm = _gpu_operator_state("ServiceMonitor")
    want = values["dcgmExporter"]["serviceMonitor"]
    assert want["enabled"] is True
    sm["metadata"]["namespace"] = GPU_OPERATOR_NS
    sm["spec"]["namespaceSelector"]["matchNames"] = [GPU_OPERATOR_NS]
    sm["metadata"].setdefault("labels", {}).update(want.get("additionalLabels") or {})
    ep = sm["spec"]["endpoints"][0]
    if want.get("interval"):
        ep["interval"] = want["interval"]
    if "honorLabels" in want:
        ep["honorLabels"] = want["honorLabels"]
    if want.get("relabelings") is not None:
        ep["relabelings"] = copy.deepcopy(want["relabelings"])
    return sm


# ------------------------------------------------------------------------ fake exporters


@dataclass
class FakeExporter:
    """An HTTP server on 127.0.0.1 whose ``/metrics`` is ``body()`` at each scrape."""
    body: Callable[[], str]
    port: int = 0
    scrapes: int = 0
    _server: http.server.ThreadingHTTPServer | None = None

    def __enter__(self) -> FakeExporter:
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                data = outer.body().encode()
                outer.scrapes += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_a: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


@dataclass
class Dcgm:
    """What dcgm-exporter on one node of ``pool`` publishes: ``gpus`` GPUs, ``faulty``
    selecting the values that make every GPU alert fire (else healthy ones)."""
    node: str
    gpus: int
    checks: Any
    faulty: bool = True
    t0: float = field(default_factory=time.monotonic)
    frozen: dict[str, float] = field(default_factory=dict)

    def labels(self, i: int) -> dict[str, str]:
        out = {"gpu": str(i), "UUID": f"GPU-5f1c0e2a-{i:04d}-4b3d-9e0a-{self.node[:6]}",
               "pci_bus_id": f"00000000:{0x18 + 0x10 * i:02X}:00.0", "device": f"nvidia{i}",
               "modelName": "NVIDIA H100 80GB HBM3", "Hostname": self.node,
               "DCGM_FI_DRIVER_VERSION": "570.172.08"}
        return {**out, **WORKLOAD} if i == 2 else out

    def counter(self, name: str) -> float:
        """A counter growing 20/s while faulty, frozen at its last value once healthy."""
        if self.faulty:
            self.frozen[name] = 20.0 * (time.monotonic() - self.t0)
        return self.frozen.get(name, 0.0)

    def values(self, i: int) -> dict[str, float]:
        c = self.checks
        bad = self.faulty
        v = {"DCGM_FI_DEV_GPU_TEMP": 40.0, "DCGM_FI_DEV_XID_ERRORS": 0.0,
             "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": 0.0, "DCGM_FI_DEV_ROW_REMAP_FAILURE": 0.0,
             "DCGM_FI_DEV_ROW_REMAP_PENDING": 0.0,
             "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 0.0,
             "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 4.0,  # software power cap: normal
             "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.9, "DCGM_FI_DEV_GPU_UTIL": 90.0,
             "DCGM_FI_DEV_POWER_USAGE": 650.0, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": 700.0,
             "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0.0,
             "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": 0.0,
             "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": 0.0,
             "DCGM_FI_DEV_FB_USED": 1000.0, "DCGM_FI_DEV_FB_FREE": 80000.0,
             "DCGM_FI_DEV_SM_CLOCK": 1980.0}
        if i == 0:
            v["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"] = self.counter("pcie")
            v["DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"] = self.counter("nvlink")
        if bad and i == 0:
            v.update({"DCGM_FI_DEV_XID_ERRORS": 48.0,
                      "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": c.max_ecc_uncorrected + 1.0,
                      "DCGM_FI_DEV_ROW_REMAP_FAILURE": 1.0,
                      "DCGM_FI_DEV_ROW_REMAP_PENDING": 1.0,
                      "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS":
                          c.max_remapped_rows_uncorrectable + 1.0,
                      "DCGM_FI_DEV_GPU_TEMP": c.max_gpu_temp_c + 3.0,
                      "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 64.0,  # hardware thermal slowdown
                      "DCGM_FI_DEV_POWER_USAGE": 730.0})
        if bad and i == 1:
            v["DCGM_FI_DEV_XID_ERRORS"] = 79.0
        if bad and i == 2:  # held by the workload, idle
            v.update({"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.0, "DCGM_FI_DEV_GPU_UTIL": 0.0})
        return v

    def exposition(self) -> str:
        shown = range(self.gpus - 1) if self.faulty else range(self.gpus)  # one GPU lost
        series: dict[str, list[str]] = {}
        for i in shown:
            lab = ",".join(f'{k}="{v}"' for k, v in self.labels(i).items())
            for name, value in self.values(i).items():
                series.setdefault(name, []).append(f"{name}{{{lab}}} {value:g}")
        assert set(series) <= DCGM_FIELDS, "served a field aiplat's counters CSV lacks"
        return "".join(f"# TYPE {name} gauge\n" + "\n".join(lines) + "\n"
                       for name, lines in series.items())


# ---------------------------------------------------------------------------- the lab


@dataclass
class Lab:
    api: Api
    tmp: Path
    log: Path
    platform: Platform
    rendered: list[Obj]  # the PrometheusRule, the Kueue and the DCGM ServiceMonitors
    dcgm_service: Obj  # the GPU Operator's Service and DaemonSet of the exporter
    dcgm_daemonset: Obj

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def secret(self, name: str) -> dict[str, bytes] | None:
        s = self.api.get({"apiVersion": "v1", "kind": "Secret",
                          "metadata": {"name": name, "namespace": MONITORING_NS}})
        return None if s is None else {k: base64.b64decode(v)
                                       for k, v in (s.get("data") or {}).items()}

    def generated_config(self) -> Obj | None:
        data = self.secret(f"prometheus-{PROMETHEUS}")
        if not data or "prometheus.yaml.gz" not in data:
            return None
        return dict(yaml.safe_load(gzip.decompress(data["prometheus.yaml.gz"])))

    def rule_files(self) -> dict[str, str]:
        """Each rule file as ``<ConfigMap>/<key>`` (the folder the pod mounts it at)."""
        return {f"{cm['metadata']['name']}/{k}": v
                for cm in self.api.objects("v1", "ConfigMap", MONITORING_NS)
                if cm["metadata"]["name"].startswith(f"prometheus-{PROMETHEUS}-rulefiles-")
                for k, v in (cm.get("data") or {}).items()}


def _prometheus_cr() -> Obj:
    """The Prometheus kube-prometheus-stack's chart makes for release kube-prometheus-stack
    (its selectors; every namespace), at the version it is loaded into below."""
    sel = {"matchLabels": dict(RELEASE)}
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
            "metadata": {"name": PROMETHEUS, "namespace": MONITORING_NS},
            "spec": {"version": "v2.42.0", "replicas": 1,
                     "serviceMonitorSelector": sel, "serviceMonitorNamespaceSelector": {},
                     "ruleSelector": sel, "ruleNamespaceSelector": {},
                     "podMonitorSelector": sel, "podMonitorNamespaceSelector": {},
                     "probeSelector": sel, "probeNamespaceSelector": {},
                     "scrapeInterval": "2s", "evaluationInterval": "2s"}}


def _services(dcgm_service: Obj) -> list[Obj]:
    kueue = {"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": "kueue-controller-manager-metrics-service",
                          "namespace": "kueue-system",
                          "labels": {"control-plane": "controller-manager",
                                     "app.kubernetes.io/name": "kueue"}},
             "spec": {"selector": {"control-plane": "controller-manager"},
                      "ports": [{"name": "https", "port": 8443, "targetPort": 8443}]}}
    svc = copy.deepcopy(dcgm_service)
    svc["metadata"]["namespace"] = GPU_OPERATOR_NS
    return [kueue, svc]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    go_on_path()
    tools = [t for t in ("prometheus", "promtool") if shutil.which(t) is None]
    need(f"{', '.join(tools)} not installed (fix: apt-get install prometheus)" if tools
          else None)
    _need_components()
    try:
        cache = locate_operator()
        dcgm_service = _gpu_operator_state("Service")
        dcgm_daemonset = _gpu_operator_state("DaemonSet")
    except InputError as e:
        need(str(e))
        raise
    platform = _platform()
    catalog = load_catalog()
    files = render_monitoring(platform)
    _manifests, cluster_files = render_cluster(platform, pool_facts(resolve(platform,
                                                                            catalog)))
    values = yaml.safe_load(cluster_files["cluster/gpu-operator/values.yaml"])
    rule = next(d for d in yaml.safe_load_all(files[PROMETHEUS_RULE_FILE])
                if d["kind"] == "PrometheusRule")
    rendered = [rule, yaml.safe_load(files[SERVICE_MONITOR_FILE]), dcgm_service_monitor(values)]

    tmp = tmp_path_factory.mktemp("promop")
    env = {**os.environ, "AIPLAT_CLUSTER_DIR": str(tmp / "runs"), "NO_COLOR": "1"}
    t0 = time.monotonic()
    up = _aiplat(env, "lab", "cluster", "up", "--name", NAME, check=True)
    kubeconfig = up.stdout.strip().removeprefix("export KUBECONFIG=")
    print(f"\nlab cluster up in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    api = Api.from_kubeconfig(kubeconfig)
    proc = None
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        crds = [yaml.load((cache / "crds" / f"monitoring.coreos.com_{c}.yaml").read_text(),
                          Loader=loader) for c in CRDS]
        for crd in crds:
            api.apply(crd)
        api.wait_established([c["metadata"]["name"] for c in crds])
        for ns in (MONITORING_NS, GPU_OPERATOR_NS, "kueue-system"):
            api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        cluster = yaml.safe_load(Path(kubeconfig).read_text())["clusters"][0]["cluster"]
        ca = cluster.get("certificate-authority-data") or base64.b64encode(
            Path(cluster["certificate-authority"]).read_bytes()).decode()
        # The CA the Kueue ServiceMonitor names (cert-manager or Kueue's internal certs
        # write it in a real cluster): the operator copies it into its TLS assets.
        api.apply({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "metrics-server-cert", "namespace": "kueue-system"},
                   "data": {"ca.crt": ca}})
        for o in _services(dcgm_service):
            api.apply(o)
        unselected = copy.deepcopy(rendered[1])
        unselected["metadata"]["name"] = "unselected"
        unselected["metadata"]["labels"] = {"release": "another-prometheus"}
        for o in [*rendered, unselected, _prometheus_cr()]:
            api.apply(o)
        log = tmp / "prometheus-operator.log"
        with log.open("w") as out:
            proc = subprocess.Popen(
                [str(cache / "bin" / "prometheus-operator"),
                 f"--web.listen-address=127.0.0.1:{_free_port()}", "--log-level=debug"],
                env={**env, "KUBECONFIG": kubeconfig}, stdout=out, stderr=subprocess.STDOUT)
        yield Lab(api, tmp, log, platform, rendered, dcgm_service, dcgm_daemonset)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        api.close()
        down = _aiplat(env, "lab", "cluster", "down", "--name", NAME)
        assert down.returncode == 0, down.stderr


def _job(sm: Obj, index: int = 0) -> str:
    return f"serviceMonitor/{sm['metadata']['namespace']}/{sm['metadata']['name']}/{index}"


@pytest.fixture(scope="module")
def generated(lab: Lab) -> tuple[Obj, dict[str, str]]:
    """The operator's configuration and rule files, once both hold what it selected."""
    jobs = {_job(sm) for sm in lab.rendered if sm["kind"] == "ServiceMonitor"}

    def ready() -> tuple[Obj, dict[str, str]] | None:
        cfg = lab.generated_config()
        rules = lab.rule_files()
        if cfg is None or not rules:
            return None
        have = {j["job_name"] for j in cfg.get("scrape_configs") or []}
        return (cfg, rules) if jobs <= have else None

    try:
        found: tuple[Obj, dict[str, str]] = _eventually("the operator's configuration",
                                                        ready, 120)
        return found
    except AssertionError as e:
        raise AssertionError(f"{e}\noperator log:\n{lab.tail()}") from None


def test_the_operator_selects_every_rendered_servicemonitor_and_rule_group(
        lab: Lab, generated: tuple[Obj, dict[str, str]]) -> None:
    cfg, rule_files = generated
    jobs = {j["job_name"]: j for j in cfg["scrape_configs"]}
    for sm in lab.rendered:
        if sm["kind"] == "ServiceMonitor":
            assert _job(sm) in jobs, (sm["metadata"], sorted(jobs))
    assert not [j for j in jobs if "/unselected/" in j], "selected without the release label"
    dcgm = jobs[_job(lab.rendered[2])]
    assert dcgm["honor_labels"] is False
    rule = lab.rendered[0]
    [text] = [v for k, v in rule_files.items()
              if k.split("/")[1].startswith(f"{MONITORING_NS}-{rule['metadata']['name']}-")]
    got = yaml.safe_load(text)["groups"]
    assert [g["name"] for g in got] == [g["name"] for g in rule["spec"]["groups"]]
    for g, want in zip(got, rule["spec"]["groups"], strict=True):
        assert g["rules"] == want["rules"], g["name"]
        assert g.get("interval") == want.get("interval")


# ------------------------------------------------------------------- load and alert


def _meta(role: str, svc: Obj, port_name: str, pod: Obj | None) -> dict[str, str]:
    """The ``__meta_kubernetes_*`` labels Kubernetes discovery (role endpoints or
    endpointslice) gives one endpoint of ``svc`` backed by ``pod``."""
    ns = svc["metadata"]["namespace"]
    m = {"__meta_kubernetes_namespace": ns,
         "__meta_kubernetes_service_name": svc["metadata"]["name"]}
    for k, v in (svc["metadata"].get("labels") or {}).items():
        key = "".join(c if c.isalnum() else "_" for c in k)
        m[f"__meta_kubernetes_service_label_{key}"] = v
        m[f"__meta_kubernetes_service_labelpresent_{key}"] = "true"
    port = next(p for p in svc["spec"]["ports"] if p["name"] == port_name)
    if role == "endpointslice":
        m.update({"__meta_kubernetes_endpointslice_name": f"{svc['metadata']['name']}-abcde",
                  "__meta_kubernetes_endpointslice_address_type": "IPv4",
                  "__meta_kubernetes_endpointslice_port_name": port_name,
                  "__meta_kubernetes_endpointslice_port_protocol": "TCP",
                  "__meta_kubernetes_endpointslice_endpoint_conditions_ready": "true"})
    else:
        m.update({"__meta_kubernetes_endpoints_name": svc["metadata"]["name"],
                  "__meta_kubernetes_endpoint_port_name": port_name,
                  "__meta_kubernetes_endpoint_port_protocol": "TCP",
                  "__meta_kubernetes_endpoint_ready": "true"})
    if pod is not None:
        kind = "endpointslice" if role == "endpointslice" else "endpoint"
        m[f"__meta_kubernetes_{kind}_address_target_kind"] = "Pod"
        m[f"__meta_kubernetes_{kind}_address_target_name"] = pod["name"]
        m[f"__meta_kubernetes_{kind}_node_name"] = pod["node"]
        m.update({"__meta_kubernetes_pod_name": pod["name"],
                  "__meta_kubernetes_pod_node_name": pod["node"],
                  "__meta_kubernetes_pod_ip": "10.244.1.17",
                  "__meta_kubernetes_pod_host_ip": "10.0.0.11",
                  "__meta_kubernetes_pod_ready": "true",
                  "__meta_kubernetes_pod_phase": "Running",
                  "__meta_kubernetes_pod_uid": "0b7e4a52-8f0c-4d55-9f1e-3c9a1d2e4f60",
                  "__meta_kubernetes_pod_container_name": pod["container"],
                  "__meta_kubernetes_pod_container_port_name": pod["port_name"],
                  "__meta_kubernetes_pod_container_port_number": str(port["targetPort"]),
                  "__meta_kubernetes_pod_container_port_protocol": "TCP",
                  "__meta_kubernetes_pod_controller_kind": "DaemonSet",
                  "__meta_kubernetes_pod_controller_name": pod["controller"]})
        for k, v in pod["labels"].items():
            key = "".join(c if c.isalnum() else "_" for c in k)
            m[f"__meta_kubernetes_pod_label_{key}"] = v
            m[f"__meta_kubernetes_pod_labelpresent_{key}"] = "true"
    return m


def _repath(data: Any, paths: dict[str, Path]) -> Any:
    """``data`` with each string starting with a pod path moved under its local folder."""
    if isinstance(data, dict):
        return {k: _repath(v, paths) for k, v in data.items()}
    if isinstance(data, list):
        return [_repath(v, paths) for v in data]
    if isinstance(data, str):
        for pod_path, local in paths.items():
            if data.startswith(pod_path):
                return str(local) + data[len(pod_path):]
    return data


def _retimed(text: str) -> tuple[str, Obj]:
    """A rule file with every group's interval at 2 s and each ``for`` at 6 s; the rest
    untouched (checked)."""
    doc = yaml.safe_load(text)
    out = copy.deepcopy(doc)
    for g in out["groups"]:
        g["interval"] = "2s"
        for r in g["rules"]:
            if "for" in r:
                r["for"] = "6s"

    def strip(d: Obj) -> Obj:
        return {"groups": [{**{k: v for k, v in g.items() if k != "interval"},
                            "rules": [{k: v for k, v in r.items() if k != "for"}
                                      for r in g["rules"]]} for g in d["groups"]]}

    assert strip(out) == strip(doc)
    return yaml.safe_dump(out, sort_keys=False), out


def _without_labeldrop(job: Obj) -> Obj:
    """The control: the DCGM job without aiplat's ``labeldrop`` of the exporter pod's own
    labels, its series renamed ``control_*`` so that no rule reads them."""
    out = copy.deepcopy(job)
    out["job_name"] = "control"
    out["relabel_configs"] = [r for r in out["relabel_configs"]
                              if r.get("action") != "labeldrop"]
    assert len(out["relabel_configs"]) == len(job["relabel_configs"]) - 1
    out["metric_relabel_configs"] = [*out.get("metric_relabel_configs", []), {
        "source_labels": ["__name__"], "regex": "(.+)", "target_label": "__name__",
        "replacement": "control_$1"}]
    return out


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def test_the_generated_configuration_fires_and_resolves_each_gpu_alert(
        lab: Lab, generated: tuple[Obj, dict[str, str]]) -> None:
    cfg, rule_files = copy.deepcopy(generated[0]), generated[1]
    tmp = lab.tmp / "prometheus"
    (tmp / "rules").mkdir(parents=True)
    (tmp / "certs").mkdir()
    (tmp / "sd").mkdir()
    (tmp / "sa").mkdir()
    (tmp / "sa" / "token").write_text("token\n")
    tls = lab.secret(f"prometheus-{PROMETHEUS}-tls-assets-0") or {}
    for k, v in tls.items():
        (tmp / "certs" / k).write_bytes(v)
    loaded: dict[str, Obj] = {}
    rules_dirs = {Path(p).parent.parent for p in cfg.get("rule_files") or []}
    assert len(rules_dirs) == 1, cfg.get("rule_files")
    for name, text in rule_files.items():
        retimed, doc = _retimed(text)
        (tmp / "rules" / name).parent.mkdir(exist_ok=True)
        (tmp / "rules" / name).write_text(retimed)
        loaded[name] = doc
    pod_paths = {str(next(iter(rules_dirs))): tmp / "rules",
                 "/etc/prometheus/certs": tmp / "certs",
                 "/var/run/secrets/kubernetes.io/serviceaccount": tmp / "sa"}
    # The config reloader expands $(VAR) from the pod's environment (shard 0 of one).
    text = yaml.safe_dump(_repath(cfg, pod_paths), sort_keys=False)
    for var, value in (("POD_NAME", f"prometheus-{PROMETHEUS}-0"), ("SHARD", "0")):
        text = text.replace(f"$({var})", value)
    cfg = yaml.safe_load(text)
    assert "$(" not in text.replace("$(labels", ""), "a variable the reloader would expand"

    facts = pool_facts(resolve(lab.platform, load_catalog()))
    pool = next(p for p in facts if p.gpu is not None)
    spec_pool = next(p for p in lab.platform.pools if p.name == pool.name)
    node = pool.node_name(0)
    assert spec_pool.node.gpu is not None
    dcgm = Dcgm(node, spec_pool.node.gpu.count, spec_pool.node.checks)
    ksm_body = ("# TYPE kube_node_labels gauge\n" + "".join(
        f'kube_node_labels{{node="{p.node_name(i)}",label_aiplat_io_pool="{p.name}"}} 1\n'
        for p in facts for i in range(2)))
    dcgm_sm = lab.rendered[2]
    svc_dcgm = _services(lab.dcgm_service)[1]
    ds = lab.dcgm_daemonset
    container = ds["spec"]["template"]["spec"]["containers"][0]
    exporter_pod = {"name": EXPORTER_POD, "node": node, "container": container["name"],
                    "port_name": container["ports"][0]["name"],
                    "controller": ds["metadata"]["name"],
                    "labels": ds["spec"]["template"]["metadata"]["labels"]}

    with FakeExporter(dcgm.exposition) as exporter, \
            FakeExporter(lambda: ksm_body) as ksm:
        for i, job in enumerate(cfg["scrape_configs"]):
            sds = job.pop("kubernetes_sd_configs", None)
            if not sds:
                continue
            [sd] = sds
            watched = (sd.get("namespaces") or {}).get("names")
            targets = []
            if job["job_name"] == _job(dcgm_sm):
                assert watched in (None, [GPU_OPERATOR_NS])
                targets = [{"targets": [f"127.0.0.1:{exporter.port}"],
                            "labels": _meta(sd["role"], svc_dcgm,
                                            dcgm_sm["spec"]["endpoints"][0]["port"],
                                            exporter_pod)}]
            (tmp / "sd" / f"{i}.json").write_text(json.dumps(targets))
            job["file_sd_configs"] = [{"files": [str(tmp / "sd" / f"{i}.json")]}]
        cfg["scrape_configs"].append({
            "job_name": "kube-state-metrics", "honor_labels": True,
            "static_configs": [{"targets": [f"127.0.0.1:{ksm.port}"]}]})
        cfg["scrape_configs"].append(_without_labeldrop(
            next(j for j in cfg["scrape_configs"] if j["job_name"] == _job(dcgm_sm))))
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        check = subprocess.run(["promtool", "check", "config", str(tmp / "prometheus.yml")],
                               capture_output=True, text=True, timeout=120, check=False)
        assert check.returncode == 0, check.stdout + check.stderr

        port = _free_port()
        api = f"http://127.0.0.1:{port}/api/v1"
        with (tmp / "prometheus.log").open("w") as log:
            prom = subprocess.Popen(
                ["prometheus", f"--config.file={tmp / 'prometheus.yml'}",
                 f"--storage.tsdb.path={tmp / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{port}"],
                stdout=log, stderr=subprocess.STDOUT)
        try:
            _run_alerts(api, tmp, loaded, dcgm=dcgm, node=node, pool=pool.name,
                        platform=lab.platform)
        finally:
            prom.terminate()
            try:
                prom.wait(timeout=20)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()


def _query(api: str, expr: str) -> list[dict[str, str]]:
    q = urllib.parse.urlencode({"query": expr})
    return [r["metric"] for r in _get(f"{api}/query?{q}")["data"]["result"]]


def _alerts(api: str) -> list[Obj]:
    try:
        return list(_get(f"{api}/alerts")["data"]["alerts"])
    except OSError:
        return []


def _run_alerts(api: str, tmp: Path, loaded: dict[str, Obj], *, dcgm: Dcgm, node: str,
                pool: str, platform: Platform) -> None:
    gpu_rules = {r["alert"]: r for doc in loaded.values() for g in doc["groups"]
                 if g["name"] == "aiplat-gpu" for r in g["rules"] if "alert" in r}
    want = {a.name for g in monitoring_rules(platform) for a in g.alerts
            if g.name == "aiplat-gpu"}
    assert set(gpu_rules) == want, "the loaded rule files lack a GPU alert"

    def firing() -> set[str] | None:
        names = {a["labels"]["alertname"] for a in _alerts(api) if a["state"] == "firing"}
        return names if want <= names else None

    try:
        _eventually("every GPU alert firing", firing, 120)
    except AssertionError as e:
        targets = _get(f"{api}/targets")
        raise AssertionError(f"{e}\ntargets: {json.dumps(targets)[:3000]}\nlog:\n"
                             + (tmp / "prometheus.log").read_text()[-3000:]) from None
    alerts = [a for a in _alerts(api) if a["labels"]["alertname"] in want
              and a["state"] == "firing"]
    for a in alerts:
        name, labels = a["labels"]["alertname"], a["labels"]
        rule = gpu_rules[name]
        assert not [k for k in labels if k.startswith("exported_")], a
        assert labels.get("pod") in (None, WORKLOAD["pod"]), a  # never the exporter's pod
        assert labels.get("node") == node, a
        if "job" in labels:
            assert labels["job"] == SCRAPE_JOB, a
        want_url = rule["annotations"].get("runbook_url")
        assert a["annotations"].get("runbook_url") == want_url, a
        if want_url:
            assert want_url.startswith(BASE + "/") and want_url == runbook_url(
                want_url.split("#", 1)[1], BASE), a
        if "pool" in rule["expr"] or name == "GpuMissing":
            assert labels.get("pool") == pool, a
    idle = next(a for a in alerts if a["labels"]["alertname"] == "GpuAllocatedIdle")
    assert {k: idle["labels"].get(k) for k in WORKLOAD} == WORKLOAD, idle
    # honor_labels: false renames a scraped label that a target label already has: without
    # the labeldrop the workload's pod arrives as exported_pod and pod is the exporter's.
    [control] = _query(api, 'control_DCGM_FI_DEV_GPU_UTIL{gpu="2"}')
    assert control["exported_pod"] == WORKLOAD["pod"], control
    assert control["pod"] == EXPORTER_POD, control
    [kept] = _query(api, 'DCGM_FI_DEV_GPU_UTIL{gpu="2"}')
    assert kept["pod"] == WORKLOAD["pod"] and "exported_pod" not in kept, kept
    (tmp / "alerts-firing.json").write_text(json.dumps(alerts, indent=1))
    assert any(a["annotations"].get("runbook_url") for a in alerts)

    dcgm.faulty = False  # healthy values from the next scrape on

    def resolved() -> set[str] | None:
        names = {a["labels"]["alertname"] for a in _alerts(api)} & want
        return names if names <= WINDOWED else None

    still = _eventually("every GPU alert without a window resolved", resolved, 90)
    assert still == WINDOWED, still
