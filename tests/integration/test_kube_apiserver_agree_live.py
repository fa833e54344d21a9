"""``aiplat kube validate`` and ``aiplat kube apply --dry-run`` against the lab's API server
(issue #40: aiplat must agree with the API server on a real manifest), on a lab cluster of
its own (``aiplat lab cluster up``):

- nulls in a custom resource: a CRD written here (``tests/data/crd_nulls``), one object per
  place a null can sit (object field with and without a default, ``nullable: true``, a list
  item with and without the items' default, a string, an int-or-string, a map value, a
  free-form field, an undeclared field, the whole spec, status, metadata), each sent two
  ways: as ``aiplat kube apply`` and ``kubectl apply --server-side`` send it (server-side
  apply, ``dryRun=All``), and as ``kubectl apply`` and ``kubectl create`` send a new object
  (a POST with ``dryRun=All`` and ``fieldValidation=Strict``, kubectl's default): the server
  still answers what ``verdicts.yaml`` records (which tests/unit/test_kube_validate_nulls.py
  holds validate to without a cluster), and ``aiplat kube validate``'s verdict on each is
  the server's: an error where both refuse, a warning where server-side apply alone does,
  at the field the server names; a JobSet with a null spec, which the JobSet webhook fills,
  passes both.
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
import re
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


# --- nulls in a custom resource ----------------------------------------------------------

NULLS = Path(__file__).resolve().parents[1] / "data" / "crd_nulls"
# "... is invalid: spec.args[1]: Invalid value ..." or "[spec.choice: ..., spec.choice: ...]";
# server-side apply's own "...: .spec.nosuch: field not declared in schema".
_FIELD = re.compile(r"is invalid: \[?(?P<f>[^:\s]+): |: \.(?P<g>[^:\s]+): field not declared"
                    r'|unknown field \\?"(?P<u>[^"\\]+)\\?"')


def null_cases() -> tuple[Obj, dict[str, Obj]]:
    """The CRD and each case's custom resource."""
    crd = yaml.safe_load((NULLS / "nulltests.yaml").read_text())
    cases = yaml.safe_load((NULLS / "cases.yaml").read_text())
    out = {}
    for name, fields in cases.items():
        o: Obj = {"apiVersion": "nulls.aiplat.io/v1", "kind": "NullTest",
                  "metadata": {"name": name, "namespace": "default"}}
        for k, v in fields.items():
            if k == "metadata":
                o["metadata"].update(v)
            else:
                o[k] = v
        out[name] = o
    return crd, out


def server_verdicts(api: Api) -> dict[str, Obj]:
    """Each case sent as ``aiplat kube apply --dry-run server`` sends it (server-side
    apply): accepted, or refused with the field the server names; and under ``create`` as
    ``kubectl apply --dry-run=server`` sends a new object (a POST, strict field
    validation)."""
    crd, cases = null_cases()
    api.apply(crd)
    api.wait_established([crd["metadata"]["name"]])
    out: dict[str, Obj] = {}
    for name, o in cases.items():
        try:
            api.apply(o, dry_run=True)
        except ApiError as e:
            out[name] = _refused(str(e))
        else:
            out[name] = {"verdict": "accepted"}
        r = api._request("POST", api.path(o, named=False), json=o,
                         params={"dryRun": "All", "fieldValidation": "Strict"})
        out[name]["create"] = {"verdict": "accepted"} if r.status_code < 400 \
            else _refused(r.text)
    return out


def _refused(message: str) -> Obj:
    m = _FIELD.search(message)
    return {"verdict": "refused", "field": m and (m["f"] or m["g"] or m["u"]),
            "message": message}


def _validate_verdicts(tmp: Path, kubeconfig: str) -> dict[str, Obj]:
    """``aiplat kube validate`` on the CRD and every case, one file each: the fields its
    errors and its warnings name."""
    crd, cases = null_cases()
    folder = tmp / "nulls"
    folder.mkdir()
    (folder / "crd.yaml").write_text(yaml.safe_dump(crd))
    for name, o in cases.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(o))
    cp = _aiplat(_env(kubeconfig), "kube", "validate", str(folder), "--k8s-version", "1.36",
                 "-o", "json")
    found = json.loads(cp.stdout)
    out: dict[str, Obj] = {name: {"error": [], "warning": []} for name in cases}
    (result,) = found
    for issue in result["issues"]:
        name = Path(issue["file"]).name.removesuffix(".yaml")
        if name in cases and issue["severity"] in ("error", "warning"):
            out[name][issue["severity"]].append(issue["path"])
    return out


def _recorded(server: Obj) -> Obj:
    """A verdict as ``verdicts.yaml`` records it (no message)."""
    out = {"verdict": server["verdict"]}
    if "field" in server:
        out["field"] = server["field"]
    if "create" in server:
        out["create"] = _recorded(server["create"])
    return out


def test_validate_judges_nulls_as_the_api_server_does(lab: tuple[Api, str],
                                                      tmp_path: Path) -> None:
    api, kubeconfig = lab
    server = server_verdicts(api)
    recorded = yaml.safe_load((NULLS / "verdicts.yaml").read_text())
    assert {k: _recorded(v) for k, v in server.items()} == recorded, \
        "the server changed: verdicts.yaml"
    ours = _validate_verdicts(tmp_path, kubeconfig)
    differ = {}
    for name, v in server.items():
        said = ours[name]["error"] + ours[name]["warning"]
        agrees = (v["verdict"] == "accepted") == (not said) \
            and (v["verdict"] == "accepted" or v["field"] in said) \
            and (v["create"]["verdict"] == "accepted") == (not ours[name]["error"])
        if not agrees:
            differ[name] = {"server": v, "validate": ours[name]}
    assert not differ, differ
    # A mutating webhook decodes the object into Go types: the JobSet webhook fills a null
    # spec (as the corpus's JobSet sample has it) instead of leaving it to be refused.
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "null-spec", "namespace": "default"}, "spec": None}
    assert api.apply(jobset, dry_run=True)["spec"]["successPolicy"] == {"operator": "All"}
    (tmp_path / "jobset").mkdir()
    (tmp_path / "jobset" / "js.yaml").write_text(yaml.safe_dump(jobset))
    cp = _aiplat(_env(kubeconfig), "kube", "validate", str(tmp_path / "jobset"),
                 "--k8s-version", "1.36")
    assert cp.returncode == 0, cp.stdout + cp.stderr
