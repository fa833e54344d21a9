"""The upstream Helm charts as the oracle for aiplat's operator values (issue #41, item 3).

Helm (helm.sh/helm/v4, built with the lab cluster) renders the charts that come with each
project's Go module (:mod:`helmcharts`): the GPU Operator's with NFD's as its subchart, NFD's
own, and Kueue's, with the values aiplat renders for the built-in example and for a variant
where the GPU Operator owns the driver and the toolkit and the h100 pool is MIG-partitioned,
as the operator releases ``kube render`` writes carry them (``operators/helmfile.yaml``:
the GPU Operator's names the tree's values file, Kueue's holds the Configuration; issue #45).

What each test proves:
- every key of aiplat's values means something to the chart (the chart's values.yaml has it,
  or a template reads it, or hands it on whole to an object whose CRD judges it): Helm
  itself ignores an unknown key without a word, and none of these charts has a schema;
- the chart renders (``helm lint --strict``, ``helm template``), the output passes
  ``aiplat kube validate`` with the chart's own CRDs, and the rendered ClusterPolicy carries
  what aiplat asked for (driver and toolkit owners, upgrade policy, CDI, MIG Manager's
  config, the DCGM exporter's counters and ServiceMonitor);
- on the lab cluster's API server: the chart's CRDs apply for real, everything it renders
  passes a server-side dry run, and the ClusterPolicy applied for real reads back with every
  field aiplat set (nothing pruned by the CRD's schema);
- NFD's chart in NFD's module is the subchart the operator deploys, and the tree's
  NodeFeatureRules validate against the NFD CRDs that chart installs;
- Kueue's chart fed aiplat's Configuration renders a kueue-manager-config holding that same
  Configuration, and the lab's Kueue runs it (what the lab adds is only what a process on
  127.0.0.1 needs).

What this cannot show: no operator controller, NFD worker or Kueue from the chart runs
here (the chart's Deployments and DaemonSets are only dry-run: kwok nodes have no kubelet,
no images are pulled); a key the CRD keeps but the controller ignores is not caught.

Needs Go, the Go module proxy (or a module cache holding the pins) and ``aiplat lab cluster
build``; skipped with the reason locally, a failure in CI.
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helmcharts
import pytest
import yaml
from conftest import need
from examplelab import ExampleLab, example_lab
from helmcharts import GPU_OPERATOR, KUEUE, NFD, Charts
from test_cluster_live import _aiplat

from aiplat.cluster.assets import versions
from aiplat.errors import InputError
from aiplat.kube.apply import apply_tree
from aiplat.spec import example_text

pytestmark = pytest.mark.integration
Obj = dict[str, Any]
NAME = "charts"
KUBE_VERSION = versions()["k8s.io/kubernetes"]
VARIANTS = ("example", "mig")
# What the lab sets on top of the rendered Configuration for a process on 127.0.0.1
# (aiplat.cluster.config.kueue_configuration); every other key must be the chart's.
LAB_ONLY = {"namespace", "webhook", "health", "metrics", "leaderElection",
            "internalCertManagement", "featureGates"}



@pytest.fixture(scope="module")
def charts() -> Charts:
    try:
        return helmcharts.find()
    except InputError as e:
        need(str(e))
        raise


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("helm-home")
    return {**os.environ, "NO_COLOR": "1", "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data")}


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> dict[str, Path]:
    """``aiplat kube render`` of the example and of the MIG/operator-owned-driver variant
    (with the h100 pool's nodeNames)."""
    tmp = tmp_path_factory.mktemp("trees")
    data = yaml.safe_load(example_text())
    data["kubernetes"]["components"] = {"driver": "operator", "toolkit": "operator"}
    data["pools"][0]["sharing"] = {"strategy": "mig",
                                   "migLayout": ["3g.40gb", "2g.20gb", "2g.20gb"]}
    # The floor plan: the pool's NodeFeatureRule needs the NFD subchart's enableTaints and
    # extraLabelNs (render_nodes), which the chart must turn into nfd-master's flags.
    data["pools"][0]["nodeNames"] = [f"h100-r{i // 2}-n{i % 2}" for i in range(6)]
    (tmp / "mig.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    out = {}
    for name, spec in (("example", []), ("mig", [str(tmp / "mig.yaml")])):
        _aiplat(env, "kube", "render", *spec, "-d", str(tmp / name), check=True)
        out[name] = tmp / name
    return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, charts: Charts) -> Iterator[ExampleLab]:
    with example_lab(tmp_path_factory.mktemp("lab"), NAME) as lab:
        yield lab


def _values(tree: Path, component: str) -> Obj:
    data = yaml.safe_load((tree / "cluster" / component / "values.yaml").read_text())
    assert isinstance(data, dict)
    return data


def _release(tree: Path, name: str) -> Obj:
    """The release ``kube render`` writes for an operator (its default, helmfile)."""
    hf = yaml.safe_load((tree / "operators" / "helmfile.yaml").read_text())
    return dict(next(r for r in hf["releases"] if r["name"] == name))


def _operator(charts: Charts, tree: Path, env: dict[str, str]) -> list[Obj]:
    # the values file the GPU Operator's release names (relative to helmfile.yaml)
    [values] = _release(tree, "gpu-operator")["values"]
    assert (tree / "operators" / values).resolve() == \
        (tree / "cluster/gpu-operator/values.yaml").resolve()
    return helmcharts.template(charts, charts.chart(GPU_OPERATOR), "gpu-operator",
                               "gpu-operator", values=[tree / "operators" / values],
                               env=env, kube_version=KUBE_VERSION)


def _one(objs: list[Obj], kind: str, name: str | None = None) -> Obj:
    found = [o for o in objs if o.get("kind") == kind
             and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, (kind, name, [o["metadata"]["name"] for o in found])
    return found[0]


def _validate(objs: list[Obj], folder: Path, env: dict[str, str],
              refused: tuple[str, ...] = (), warned: tuple[str, ...] = ()) -> None:
    """``aiplat kube validate`` on the objects (their CRDs among them), as a folder: no
    error but those at ``refused`` ("Kind/name at path", what the API server refuses too),
    and a warning at each of ``warned``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rendered.yaml").write_text(yaml.safe_dump_all(objs, sort_keys=False))
    cp = _aiplat(env, "kube", "validate", str(folder), "--k8s-version",
                 ".".join(KUBE_VERSION.lstrip("v").split(".")[:2]))
    said = {level: [line.removeprefix(f"{level}: rendered.yaml: ").split(": ", 1)[0]
                    for line in cp.stdout.splitlines() if line.startswith(f"{level}: ")]
            for level in ("error", "warning")}
    assert sorted(said["error"]) == sorted(refused), cp.stdout + cp.stderr
    assert set(warned) <= set(said["warning"]), cp.stdout + cp.stderr
    assert cp.returncode == (1 if refused else 0), cp.stdout + cp.stderr


def _missing(asked: Any, got: Any, at: str = "") -> list[str]:
    """Paths of ``asked`` that ``got`` lacks or holds otherwise (lists compared whole)."""
    if isinstance(asked, dict):
        if not isinstance(got, dict):
            return [at or "."]
        return [m for k, v in asked.items() for m in _missing(v, got.get(k), f"{at}.{k}")]
    return [] if asked == got else [f"{at}: asked {asked!r}, got {got!r}"]


def test_unknown_keys_names_what_the_chart_would_ignore() -> None:
    """The comparison itself, on a chart made up here: a misspelt key, one below a key the
    chart reads only as a scalar, and one nowhere in the chart are reported; keys the chart
    has, reads although values.yaml omits them, or hands on whole are not."""
    chart = {"driver": {"enabled": True, "upgradePolicy": {"maxUnavailable": "25%"}},
             "dcgm": {"serviceMonitor": {"enabled": False}, "config": ""}}
    templates = ("{{ .Values.driver.enabled }} {{ toYaml .Values.driver.upgradePolicy }}"
                 " {{ .Values.dcgm.config.name }} {{ toYaml .Values.dcgm.serviceMonitor }}")
    ours = {"driver": {"enabled": False, "upgradePolicy": {"drain": {"enable": True}},
                       "upgradPolicy": {"maxUnavailable": 1}},
            "dcgm": {"config": {"name": "x", "create": True},
                     "serviceMonitor": {"additionalLabels": {"release": "x"}}},
            "toolkit": {"enabled": False}}
    assert helmcharts.unknown_keys(ours, chart, templates) == [
        "driver.upgradPolicy.maxUnavailable", "dcgm.config.create", "toolkit.enabled"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_gpu_operator_value_means_something_to_the_chart(
        charts: Charts, trees: dict[str, Path], env: dict[str, str], variant: str) -> None:
    chart = charts.chart(GPU_OPERATOR)
    values = _values(trees[variant], "gpu-operator")
    # The NFD subchart's values are its own chart's to judge (another .Values scope).
    nfd = {k: v for k, v in values.items() if k == "node-feature-discovery"}
    own = {k: v for k, v in values.items() if k not in nfd}
    assert helmcharts.unknown_keys(own, helmcharts.load_values(chart),
                                   helmcharts.templates_text(chart)) == []
    sub = chart / "charts/node-feature-discovery"
    assert helmcharts.unknown_keys(nfd.get("node-feature-discovery", {}),
                                   helmcharts.load_values(sub),
                                   helmcharts.templates_text(sub)) == []
    values_file = trees[variant] / "cluster/gpu-operator/values.yaml"
    with_ours, rc = _lint(charts, chart, env, values_file)
    alone, _ = _lint(charts, chart, env)
    # The chart from main says version v1.0.0-devel, which --strict calls no SemVer 2: a
    # finding about the chart itself, there without aiplat's values too. Ours add none.
    assert with_ours <= alone, with_ours - alone
    assert rc == 0 or with_ours, "helm lint failed without a finding"


def _lint(charts: Charts, chart: Path, env: dict[str, str], *values: Path
          ) -> tuple[set[str], int]:
    """``helm lint --strict``: its findings ([INFO] and up) and exit status."""
    cp = subprocess.run([charts.helm, "lint", "--strict", str(chart), "--kube-version",
                         KUBE_VERSION, *(a for v in values for a in ("-f", str(v)))],
                        env=env, capture_output=True, text=True, check=False, timeout=300)
    found = {line.strip() for line in (cp.stdout + cp.stderr).splitlines()
             if line.strip().startswith("[")}
    return found, cp.returncode


@pytest.mark.parametrize("variant", VARIANTS)
def test_gpu_operator_chart_renders_what_aiplat_asked(
        charts: Charts, trees: dict[str, Path], env: dict[str, str], variant: str,
        tmp_path: Path) -> None:
    tree = trees[variant]
    values = _values(tree, "gpu-operator")
    objs = _operator(charts, tree, env)
    spec = _one(objs, "ClusterPolicy")["spec"]
    operator = variant == "mig"
    # The NFD subchart's master runs with the flags the pool NodeFeatureRules need.
    master = values.get("node-feature-discovery", {}).get("master", {})
    assert bool(master) is operator  # only the variant lists nodeNames
    args = [a for o in objs if o["kind"] == "Deployment"
            and o["metadata"]["name"].endswith("node-feature-discovery-master")
            for c in o["spec"]["template"]["spec"]["containers"] for a in c.get("args", [])]
    assert args, "no nfd-master Deployment"
    assert ("-enable-taints" in args) is bool(master.get("enableTaints")), args
    assert ("-extra-label-ns=topology.kubernetes.io" in args) is bool(
        master.get("extraLabelNs")), args
    assert spec["driver"]["enabled"] is operator and spec["toolkit"]["enabled"] is operator
    assert spec["cdi"]["enabled"] is True
    assert spec["devicePlugin"]["enabled"] is True  # the h100 pool keeps the device plugin
    assert spec["mig"]["strategy"] == ("mixed" if operator else "none")
    assert spec["migManager"]["enabled"] is operator
    if operator:
        assert spec["migManager"]["config"] == {"name": "aiplat-mig-config",
                                                "default": "all-disabled"}
        assert spec["driver"]["version"] == values["driver"]["version"]
    if "upgradePolicy" in values["driver"]:
        # The chart names the values' gpuPodDeletion podDeletion in the ClusterPolicy.
        asked = dict(values["driver"]["upgradePolicy"])
        if "gpuPodDeletion" in asked:
            asked["podDeletion"] = asked.pop("gpuPodDeletion")
        assert _missing(asked, spec["driver"]["upgradePolicy"]) == []
    dcgm = spec["dcgmExporter"]
    assert dcgm["config"] == {"name": "aiplat-dcgm-metrics"}
    # Helm merges the chart's defaults in (interval: 15s); ours are all there.
    assert _missing(values["dcgmExporter"]["serviceMonitor"], dcgm["serviceMonitor"]) == []
    assert dcgm["serviceMonitor"]["additionalLabels"] == {"release": "kube-prometheus-stack"}
    # The ConfigMaps the ClusterPolicy names are the tree's (the chart creates none of them).
    tree_cms = {d["metadata"]["name"] for d in yaml.safe_load_all(
        (tree / "cluster/gpu-operator-config.yaml").read_text()) if d["kind"] == "ConfigMap"}
    named = {dcgm["config"]["name"]} | ({"aiplat-mig-config"} if operator else set())
    assert named <= tree_cms
    assert not named & {o["metadata"]["name"] for o in objs if o["kind"] == "ConfigMap"}
    # The chart's own null (validator.plugin): a warning, as server-side apply refuses it
    # and a create (kubectl apply of a new object) deletes it (issue #40;
    # test_charts_apply_to_the_lab_cluster drops it before its server-side apply).
    _validate(objs, tmp_path / "rendered", env,
              warned=("ClusterPolicy/cluster-policy at spec.validator.plugin",))


def test_nfd_chart_is_the_subchart_the_operator_deploys(
        charts: Charts, trees: dict[str, Path], env: dict[str, str], tmp_path: Path) -> None:
    """NFD's own chart (its module, the version the operator's Chart.lock names) is the one
    vendored in the GPU Operator's chart, file for file but Chart.yaml's release stamping;
    rendered with the values the operator's chart gives it, it validates, and the tree's
    NodeFeatureRules validate against the CRDs it installs."""
    own, sub = charts.chart(NFD), charts.chart(GPU_OPERATOR) / "charts/node-feature-discovery"
    lock = yaml.safe_load((charts.chart(GPU_OPERATOR) / "Chart.lock").read_text())
    assert [d["version"] for d in lock["dependencies"]
            if d["name"] == "node-feature-discovery"] == [charts.versions[NFD].lstrip("v")]
    files = sorted(p.relative_to(own) for p in own.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(sub) for p in sub.rglob("*") if p.is_file())
    differ = [str(f) for f in files if (own / f).read_bytes() != (sub / f).read_bytes()]
    assert differ == ["Chart.yaml"]
    a, b = (yaml.safe_load((d / "Chart.yaml").read_text()) for d in (own, sub))
    for k in ("version", "appVersion", "description", "sources", "keywords"):
        a.pop(k, None)
        b.pop(k, None)
    assert a == b
    operator_values = helmcharts.load_values(charts.chart(GPU_OPERATOR))
    (tmp_path / "nfd-values.yaml").write_text(yaml.safe_dump(
        operator_values["node-feature-discovery"]))
    objs = helmcharts.template(charts, own, "nfd", "gpu-operator",
                               values=[tmp_path / "nfd-values.yaml"], env=env,
                               kube_version=KUBE_VERSION)
    workloads = {(o["kind"], o["metadata"]["name"]) for o in objs
                 if o["kind"] in ("Deployment", "DaemonSet")}
    assert {("Deployment", "nfd-node-feature-discovery-master"),
            ("DaemonSet", "nfd-node-feature-discovery-worker")} <= workloads, workloads
    _validate(objs, tmp_path / "nfd", env)
    crds = [o for o in objs if o["kind"] == "CustomResourceDefinition"]
    rules = list(yaml.safe_load_all((trees["example"] / "cluster/nodefeaturerules.yaml")
                                    .read_text()))
    _validate([*crds, *rules], tmp_path / "rules", env)


def _kueue_values(tree: Path, folder: Path) -> tuple[Obj, Path]:
    """The values of the Kueue release ``kube render`` writes (operators/helmfile.yaml),
    which carry aiplat's Configuration (the tree's ConfigMap's), in a file for helm."""
    cm = _one(list(yaml.safe_load_all((tree / "kueue/kueue-manager-config.yaml").read_text())),
              "ConfigMap", "kueue-manager-config")
    text = cm["data"]["controller_manager_config.yaml"]
    [values] = _release(tree, "kueue")["values"]
    assert values == {"managerConfig": {"controllerManagerConfigYaml": text}}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "kueue-values.yaml"
    path.write_text(yaml.safe_dump(values))
    return yaml.safe_load(text), path


def _chart_kueue(charts: Charts, values: Path, env: dict[str, str]) -> tuple[list[Obj], Obj]:
    objs = helmcharts.template(charts, charts.chart(KUEUE), "kueue", "kueue-system",
                               values=[values], env=env, kube_version=KUBE_VERSION)
    cm = _one(objs, "ConfigMap", "kueue-manager-config")
    assert cm["metadata"]["namespace"] == "kueue-system"
    return objs, yaml.safe_load(cm["data"]["controller_manager_config.yaml"])


def test_kueue_chart_renders_aiplat_configuration(
        charts: Charts, trees: dict[str, Path], env: dict[str, str], tmp_path: Path) -> None:
    """The chart's kueue-manager-config holds aiplat's Configuration, the same object after
    YAML load, plus only what the chart fills in when it is absent (its own certificate
    management)."""
    chart = charts.chart(KUEUE)
    for variant in VARIANTS:
        ours, values = _kueue_values(trees[variant], tmp_path / variant)
        assert helmcharts.unknown_keys(yaml.safe_load(values.read_text()),
                                       helmcharts.load_values(chart),
                                       helmcharts.templates_text(chart)) == []
        objs, theirs = _chart_kueue(charts, values, env)
        added = {k: v for k, v in theirs.items() if k not in ours}
        assert {k: v for k, v in theirs.items() if k in ours} == ours
        assert list(added) == ["internalCertManagement"], added
        assert added["internalCertManagement"]["enable"] is True
        _validate(objs, tmp_path / variant / "rendered", env)


def _nulls(o: Any, at: str = "") -> list[str]:
    """Paths holding null: a field the chart leaves empty (``plugin:`` with nothing under
    it), which the API server refuses where the schema wants an object."""
    if isinstance(o, dict):
        return [p for k, v in o.items() for p in ([f"{at}.{k}"] if v is None
                                                   else _nulls(v, f"{at}.{k}"))]
    if isinstance(o, list):
        return [p for i, v in enumerate(o) for p in _nulls(v, f"{at}[{i}]")]
    return []


def _drop_nulls(o: Any) -> Any:
    if isinstance(o, dict):
        return {k: _drop_nulls(v) for k, v in o.items() if v is not None}
    if isinstance(o, list):
        return [_drop_nulls(v) for v in o]
    return o


def _in_release_namespace(lab: ExampleLab, objs: list[Obj], namespace: str) -> list[Obj]:
    """What ``helm install -n`` does for a namespaced object the chart names no namespace
    for (``helm template`` leaves it out; applied as it is, it would land in default)."""
    scope = {(c["spec"]["group"], c["spec"]["names"]["kind"]): c["spec"]["scope"]
             for c in objs if c["kind"] == "CustomResourceDefinition"}
    out = []
    for rendered in objs:
        o = copy.deepcopy(rendered)
        group = o["apiVersion"].rpartition("/")[0]
        namespaced = (scope[group, o["kind"]] == "Namespaced" if (group, o["kind"]) in scope
                      else lab.api.resource(o["apiVersion"], o["kind"]).namespaced)
        if namespaced:
            o["metadata"].setdefault("namespace", namespace)
        out.append(o)
    return out


def _dry_run(lab: ExampleLab, objs: list[Obj]) -> list[tuple[str, str]]:
    """Server-side dry run of ``objs``: what is refused. Without aiplat's pod probe: it
    makes each workload's pod in a scratch namespace, where the service accounts the chart
    brings along do not exist, so every chart pod would be refused for that alone."""
    outcome = apply_tree(lab.api, [("chart", o) for o in objs], dry_run=True, force=True,
                         probe_pods=False)
    return [(o.object, o.message) for o in outcome if "refused" in o.action]


def test_charts_apply_to_the_lab_cluster(
        charts: Charts, trees: dict[str, Path], env: dict[str, str], lab: ExampleLab
) -> None:
    """The GPU Operator chart's CRDs apply for real, everything it renders passes the API
    server's dry run, and the ClusterPolicy applied for real keeps every field aiplat set;
    Kueue's chart, fed aiplat's Configuration, passes the dry run on the lab whose Kueue
    runs that Configuration."""
    t0 = time.monotonic()
    # The chart (main, 2025-09-17) renders nulls with its own defaults (ClusterPolicy
    # spec.validator.plugin, which the API server refuses; the NFD Deployment's and
    # DaemonSet's revisionHistoryLimit); aiplat's values may add no other null.
    defaults = helmcharts.template(charts, charts.chart(GPU_OPERATOR), "gpu-operator",
                                   "gpu-operator", values=[], env=env,
                                   kube_version=KUBE_VERSION)
    chart_nulls = {(o["kind"], p) for o in defaults for p in _nulls(o)}
    assert ("ClusterPolicy", ".spec.validator.plugin") in chart_nulls, chart_nulls
    for variant in VARIANTS:
        rendered = _operator(charts, trees[variant], env)
        assert {(o["kind"], p) for o in rendered for p in _nulls(o)} <= chart_nulls
        # The tree first (the operator's namespace and the ConfigMaps its values name), as
        # the handover applies it before the operator's install.
        config = [("cluster/gpu-operator-config.yaml", o) for o in yaml.safe_load_all(
            (trees[variant] / "cluster/gpu-operator-config.yaml").read_text())]
        outcome = apply_tree(lab.api, config, force=True)
        assert not [o for o in outcome if "refused" in o.action], outcome
        objs = _in_release_namespace(lab, [_drop_nulls(o) for o in rendered], "gpu-operator")
        mine = [o for o in objs if o["kind"] == "CustomResourceDefinition"
                and o["spec"]["group"] == "nvidia.com"]
        # NFD's CRDs are the lab's already (v0.19, the tree's pin); the subchart's (v0.17)
        # go through the dry run with the rest.
        first = mine
        outcome = apply_tree(lab.api, [("chart", o) for o in first], force=True)
        assert not [o for o in outcome if "refused" in o.action], outcome
        lab.api.wait_established([o["metadata"]["name"] for o in mine])
        rest = [o for o in objs if o not in first]
        refused = _dry_run(lab, rest)
        assert not refused, refused
        policy = _one(objs, "ClusterPolicy")
        lab.api.apply(policy)
        live = lab.api.get(policy)
        assert live is not None
        assert _missing(policy["spec"], live["spec"]) == [], variant
    # Kueue: the chart's objects against the lab's API server (its CRDs are the lab's).
    ours, values = _kueue_values(lab.plan / "kube", lab.plan / "kueue-chart")
    objs, theirs = _chart_kueue(charts, values, env)
    refused = _dry_run(lab, objs)
    assert not refused, refused
    # The Configuration the lab's Kueue was started with is the chart's, but for what a
    # process on 127.0.0.1 needs.
    running = yaml.safe_load((Path(lab.env["AIPLAT_CLUSTER_DIR"]) / NAME
                              / "kueue-config.yaml").read_text())
    assert {k: v for k, v in running.items() if k not in LAB_ONLY} \
        == {k: v for k, v in theirs.items() if k not in LAB_ONLY}
    assert {k: v for k, v in ours.items() if k in LAB_ONLY} == {"namespace": "kueue-system"}
    print(f"\ncharts applied in {time.monotonic() - t0:.1f} s", flush=True)


def test_helm_is_the_pinned_version(charts: Charts) -> None:
    cp = subprocess.run([charts.helm, "version", "--template", "{{ .Version }}"],
                        capture_output=True, text=True, check=True, timeout=60)
    assert cp.stdout.strip() == versions()["helm.sh/helm/v4"]
    assert shutil.which(charts.helm) is not None
