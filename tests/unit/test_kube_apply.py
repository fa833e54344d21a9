"""``aiplat kube apply`` without a cluster: the order objects apply in, the pods the probe
makes from workload templates, and kubeconfig handling like kubectl's (``--kubeconfig``,
``$KUBECONFIG``, ``--context``). The live behaviour is in tests/integration/test_cluster_live.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aiplat.errors import InputError
from aiplat.kube.apply import Api, ApiError, apply_order, apply_tree, pod_templates, probe_pod


def _o(kind: str, name: str, ns: str | None = None, api: str = "v1") -> dict[str, object]:
    meta: dict[str, object] = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": api, "kind": kind, "metadata": meta}


def test_dependencies_apply_first_and_workloads_last() -> None:
    objs = [_o("Job", "j", "t", "batch/v1"), _o("LocalQueue", "q", "t"),
            _o("ClusterQueue", "cq"), _o("Namespace", "t"), _o("ResourceFlavor", "f"),
            _o("ResourceClaimTemplate", "rct", "t"), _o("CustomResourceDefinition", "x"),
            _o("LimitRange", "lr", "t"), _o("Widget", "w"), _o("Gadget", "g", "t")]
    kinds = [o["kind"] for o in apply_order(objs)]
    assert kinds[:2] == ["CustomResourceDefinition", "Namespace"]
    assert kinds.index("ResourceFlavor") < kinds.index("ClusterQueue") < kinds.index(
        "LocalQueue") < kinds.index("LimitRange")
    assert kinds[-1] == "Job"
    # Unknown kinds go with their scope: cluster-scoped early, namespaced with configuration.
    assert kinds.index("Widget") < kinds.index("ClusterQueue")
    assert kinds.index("Gadget") < kinds.index("Job")


def test_probe_pods_come_from_every_podset() -> None:
    tpl = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c"}]}}
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "train", "namespace": "t"},
              "spec": {"replicatedJobs": [{"name": "leader", "template": {"spec": {
                  "template": tpl}}}, {"name": "workers", "template": {"spec": {
                      "template": tpl}}}]}}
    sets = pod_templates(jobset)
    assert [s for s, _ in sets] == ["leader", "workers"]
    pod = probe_pod(jobset, "workers", sets[1][1], "scratch")
    assert pod["metadata"] == {"name": "train-workers-probe", "namespace": "scratch",
                               "labels": {"app": "x"}, "annotations": {}}
    assert pod["spec"] == tpl["spec"]


def _kubeconfig(path: Path) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "a", "cluster": {"server": "https://127.0.0.1:1"}},
                     {"name": "b", "cluster": {"server": "https://127.0.0.1:2"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "a", "context": {"cluster": "a", "user": "u"}},
                     {"name": "b", "context": {"cluster": "b", "user": "u"}}]}))
    return path


def test_kubeconfig_contexts_and_the_environment(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    kc = _kubeconfig(tmp_path / "config")
    with Api.from_kubeconfig(str(kc)) as api:
        assert str(api.http.base_url).startswith("https://127.0.0.1:1")
    with Api.from_kubeconfig(str(kc), context="b") as api:
        assert str(api.http.base_url).startswith("https://127.0.0.1:2")
    monkeypatch.setenv("KUBECONFIG", f"{kc}{':'}{tmp_path / 'other'}")
    with Api.from_kubeconfig(context="b") as api:  # the first file of $KUBECONFIG
        assert str(api.http.base_url).startswith("https://127.0.0.1:2")
    with pytest.raises(InputError, match="--context"):
        Api.from_kubeconfig(str(kc), context="nope")
    (tmp_path / "empty").write_text("{}")
    with pytest.raises(InputError, match="kubeconfig"):
        Api.from_kubeconfig(str(tmp_path / "empty"))


def test_a_quota_refusal_only_from_present_use_is_not_a_refused_pod() -> None:
    """The API server's words when a namespace's quota is in use: a pod that fits the hard
    limit waits; one larger than the quota itself never runs."""
    from aiplat.kube.apply import fits_quota_when_free

    busy = ('pods "x" is forbidden: exceeded quota: aiplat-quota, requested: '
            'requests.nvidia.com/gpu=8, used: requests.nvidia.com/gpu=40, '
            'limited: requests.nvidia.com/gpu=44')
    assert fits_quota_when_free(busy)
    assert not fits_quota_when_free(busy.replace("gpu=8,", "gpu=48,"))
    two = ('exceeded quota: q, requested: limits.memory=64Gi,requests.cpu=8, used: '
           'limits.memory=0,requests.cpu=0, limited: limits.memory=32Gi,requests.cpu=16')
    assert not fits_quota_when_free(two)
    assert not fits_quota_when_free('pods "x" is forbidden: violates PodSecurity "restricted"')


class _ServiceAccountServer:
    """Just enough of an API server for a dry run's pod probe: namespaces, their
    ServiceAccounts (each new namespace gets ``default``), and the ServiceAccount
    admission plugin's answer to a Pod naming an account its namespace lacks."""

    def __init__(self, accounts: dict[str, set[str]]) -> None:
        self.accounts = {ns: {"default", *names} for ns, names in accounts.items()}

    def discover(self) -> None:
        pass

    def exists(self, api_version: str, kind: str, name: str,
               namespace: str | None = None) -> bool:
        if kind == "Namespace":
            return name in self.accounts
        return kind == "ServiceAccount" and name in self.accounts.get(namespace or "", ())

    def get(self, o: dict[str, object]) -> None:
        return None

    def objects(self, api_version: str, kind: str, namespace: str | None = None) -> list[object]:
        return []

    def create(self, o: dict[str, Any], dry_run: bool = False,
               namespace: str | None = None) -> dict[str, Any]:
        meta = o["metadata"]
        if o["kind"] == "Namespace":
            self.accounts[meta["name"]] = {"default"}
        elif o["kind"] == "ServiceAccount":
            self.accounts[meta["namespace"]].add(meta["name"])
        elif o["kind"] == "Pod":
            ns, sa = meta["namespace"], o["spec"].get("serviceAccountName", "default")
            if sa not in self.accounts.get(ns, ()):
                raise ApiError(f'pods "{meta["name"]}" is forbidden: error looking up service '
                               f'account {ns}/{sa}: serviceaccount "{sa}" not found')
        return o

    def apply(self, o: dict[str, Any], dry_run: bool = False,
              force: bool = True) -> dict[str, Any]:
        if not dry_run and o["kind"] == "ServiceAccount":
            self.accounts[o["metadata"]["namespace"]].add(o["metadata"]["name"])
        return o

    def delete(self, o: dict[str, Any]) -> None:
        self.accounts.pop(o["metadata"]["name"], None)


def _deployment(name: str, account: str, ns: str | None = None) -> dict[str, Any]:
    d = _o("Deployment", name, ns, "apps/v1")
    d["spec"] = {"template": {"spec": {"serviceAccountName": account,
                                       "containers": [{"name": "c", "image": "x"}]}}}
    return d


def test_a_dry_run_probes_pods_with_the_accounts_a_real_apply_gives_them() -> None:
    """The batch's ServiceAccounts (also those without a namespace, as ``helm template``
    renders them: they land in ``default`` with the workloads beside them) and the ones
    the namespace has live are in the probe's scratch namespace; an account that exists
    nowhere is still the API server's refusal."""
    server = _ServiceAccountServer({"default": {"live"}, "team": set()})
    items = [("chart.yaml", _o("ServiceAccount", "chart-sa")),
             ("chart.yaml", _deployment("chart", "chart-sa")),
             ("sa.yaml", _o("ServiceAccount", "team-sa", "team")),
             ("team.yaml", _deployment("team", "team-sa", "team")),
             ("live.yaml", _deployment("uses-live", "live", "default")),
             ("none.yaml", _deployment("none", "nowhere", "team"))]
    out = apply_tree(server, items, dry_run=True)  # type: ignore[arg-type]
    refused = [(o.object, o.message) for o in out if "refused" in o.action]
    assert refused == [("Deployment team/none", 'pod set main: pods "none-main-probe" is '
                        "forbidden: error looking up service account team/nowhere: "
                        'serviceaccount "nowhere" not found')]
    assert set(server.accounts) == {"default", "team"}  # the scratch namespaces are gone


class _RuntimeClassServer(_ServiceAccountServer):
    """Also the RuntimeClass admission plugin: a Pod naming a RuntimeClass that does not
    exist is refused."""

    runtime_classes: frozenset[str] = frozenset()

    def exists(self, api_version: str, kind: str, name: str,
               namespace: str | None = None) -> bool:
        if kind == "RuntimeClass":
            return name in self.runtime_classes
        return super().exists(api_version, kind, name, namespace)

    def create(self, o: dict[str, Any], dry_run: bool = False,
               namespace: str | None = None) -> dict[str, Any]:
        rc = (o.get("spec") or {}).get("runtimeClassName")
        if o["kind"] == "Pod" and rc and rc not in self.runtime_classes:
            raise ApiError(f'pods "{o["metadata"]["name"]}" is forbidden: pod rejected: '
                           f'RuntimeClass "{rc}" not found')
        return super().create(o, dry_run, namespace)


def test_a_dry_run_does_not_refuse_pods_for_the_runtime_class_the_tree_brings() -> None:
    """The node agent's DaemonSet names RuntimeClass nvidia, which the same tree creates: in a
    dry run it is not live yet, so the probe checks the pod without it and says so; a
    RuntimeClass that nothing brings is still the API server's refusal."""
    server = _RuntimeClassServer({"default": set()})
    ds = _deployment("agent", "default")
    ds["spec"]["template"]["spec"]["runtimeClassName"] = "nvidia"
    other = _deployment("other", "default")
    other["spec"]["template"]["spec"]["runtimeClassName"] = "kata"
    rc = _o("RuntimeClass", "nvidia", None, "node.k8s.io/v1")
    rc["handler"] = "nvidia"
    out = apply_tree(server, [("rc.yaml", rc), ("agent.yaml", ds), ("other.yaml", other)],  # type: ignore[arg-type]
                     dry_run=True)
    by = {o.object: (o.action, o.message) for o in out if o.action.startswith("pods")}
    assert by["Deployment agent"][0] == "pods admitted"
    assert "without RuntimeClass nvidia, which this tree creates" in by["Deployment agent"][1]
    assert by["Deployment other"][0] == "pods refused"
    assert 'RuntimeClass "kata" not found' in by["Deployment other"][1]
