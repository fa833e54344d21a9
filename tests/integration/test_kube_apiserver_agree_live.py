"""``aiplat kube validate`` and ``aiplat kube apply --dry-run`` against the lab's API server
(issue #40: aiplat must agree with the API server on a real manifest), on a lab cluster of
its own (``aiplat lab cluster up``):

- the pod probe of ``kube apply --dry-run server``: a Deployment with the ServiceAccount it
  runs as in the same batch (as ``helm template`` renders them, without a namespace, and in
  a namespace the batch creates), or one the namespace has live, is not refused; a real
  apply of the batch agrees; a Deployment naming a ServiceAccount that exists nowhere gets
  the API server's refusal.

Needs the lab components (``aiplat lab cluster build``); skips without them locally, fails
in CI.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from corpus_oracle import lab_api
from test_cluster_live import _aiplat, _need_components

from aiplat.kube.apply import Api, ApiError, probe_pod

pytestmark = pytest.mark.integration
Obj = dict[str, Any]
NAME = "agree-live"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Api, str]]:
    _need_components()
    tmp = tmp_path_factory.mktemp("agree")
    with lab_api(tmp, NAME) as api:
        yield api, str(tmp / "runs" / NAME / "kubeconfig")


def _env(kubeconfig: str) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": kubeconfig, "NO_COLOR": "1"}


# --- the pod probe's ServiceAccounts -----------------------------------------------------

def _deployment(name: str, account: str, ns: str | None) -> Obj:
    labels = {"app": name}
    meta: Obj = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"serviceAccountName": account,
                         "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}


def _account(name: str, ns: str | None) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, **({"namespace": ns} if ns else {})}}


def _write(folder: Path, objs: list[Obj]) -> Path:
    folder.mkdir(parents=True)
    (folder / "objects.yaml").write_text(yaml.safe_dump_all(objs, sort_keys=False))
    return folder


def _apply(kubeconfig: str, folder: Path, *extra: str) -> tuple[int, list[Obj]]:
    cp = _aiplat(_env(kubeconfig), "kube", "apply", str(folder), "--kubeconfig", kubeconfig,
                 "-o", "json", *extra)
    assert cp.stdout, cp.stderr
    return cp.returncode, json.loads(cp.stdout)


def test_dry_run_pods_find_the_service_accounts_of_their_batch(
        lab: tuple[Api, str], tmp_path: Path) -> None:
    api, kubeconfig = lab
    api.apply(_account("lives-here", "default"))  # a namespace's own, not in the batch
    batch = [_account("chart-sa", None), _deployment("chart", "chart-sa", None),
             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "sa-batch"}},
             _account("team-sa", "sa-batch"), _deployment("team", "team-sa", "sa-batch"),
             _deployment("uses-live", "lives-here", "default")]
    code, out = _apply(kubeconfig, _write(tmp_path / "batch", batch), "--dry-run", "server")
    assert code == 0, out
    assert {o["action"] for o in out} == {"valid (dry run)"}, out
    # A real apply of the batch: the pods its Deployments make are the server's to admit.
    code, out = _apply(kubeconfig, tmp_path / "batch")
    assert code == 0, out
    for d in (o for o in batch if o["kind"] == "Deployment"):
        ns = d["metadata"].get("namespace", "default")
        api.create(probe_pod(d, "main", d["spec"]["template"], ns), dry_run=True)

    nowhere = [_deployment("lost", "exists-nowhere", "default")]
    code, out = _apply(kubeconfig, _write(tmp_path / "nowhere", nowhere), "--dry-run",
                       "server")
    assert code == 1
    refused = [o for o in out if o["action"] == "pods refused"]
    assert len(refused) == 1 and refused[0]["object"] == "Deployment default/lost", out
    pod = probe_pod(nowhere[0], "main", nowhere[0]["spec"]["template"], "default")
    with pytest.raises(ApiError) as server:
        api.create(pod, dry_run=True)
    assert str(server.value) in refused[0]["message"]
    assert 'serviceaccount "exists-nowhere" not found' in refused[0]["message"]
