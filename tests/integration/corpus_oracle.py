"""The real API server's verdict on every file of the corpus (``tests/data/corpus``).

Each object is sent as ``kubectl create --dry-run=server`` sends it (POST with
``dryRun=All``, so ``generateName`` works as it does for ``kubectl create``, and
``fieldValidation=Strict``, kubectl's default); an object that already exists is sent as
``kubectl apply --dry-run=server`` sends it (server-side apply with ``dryRun=All``). So
that the verdict is about the object and not about the lab's state:
- the namespaces a file's objects live in exist first (created for real, with their
  ``default`` ServiceAccount), and the file's own Namespace, ServiceAccount and PriorityClass
  objects are applied for real before its other objects are judged (a dry run creates
  nothing, and a Pod naming a missing ServiceAccount or PriorityClass is refused); the
  file's PriorityClasses are deleted after it (another file may give the same name another
  value);
- the corpus's own CRDs (the DRA driver's ComputeDomain) are installed first.

Verdicts: ``accepted``; ``refused`` with the server's message (a built-in group's version
that the server does not serve, or a version of a custom kind that it serves in other
versions only, is refused, as ``kubectl`` refuses it); ``cannot judge`` when the lab has no
CRD for the kind (LeaderWorkerSet, RayJob, MPIJob...; a controller's Configuration is no
API object at all). A file is
refused when one of its objects is, else cannot judge when one of them is, else accepted.

Regenerate ``verdicts.json`` (starts and stops a lab cluster of its own, ~1 min):

    .venv/bin/python tests/integration/corpus_oracle.py
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from aiplat.cluster.assets import versions
from aiplat.kube.apply import Api

Obj = dict[str, Any]
CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
VERDICTS = CORPUS / "verdicts.json"
REAL_KINDS = ("Namespace", "ServiceAccount", "PriorityClass")
# Groups the API server itself serves: a version of theirs that it does not serve is a
# refusal (removed or not enabled), not a missing CRD.
BUILT_IN = {"", "apps", "batch", "autoscaling", "policy", "extensions",
            "networking.k8s.io", "rbac.authorization.k8s.io", "storage.k8s.io",
            "scheduling.k8s.io", "resource.k8s.io", "node.k8s.io", "coordination.k8s.io",
            "discovery.k8s.io", "events.k8s.io", "certificates.k8s.io",
            "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io",
            "flowcontrol.apiserver.k8s.io", "storagemigration.k8s.io",
            "internal.apiserver.k8s.io"}
APPLY = "application/apply-patch+yaml"


def corpus_files() -> list[str]:
    """The corpus's files, relative to CORPUS, as ``sources.json`` lists them."""
    return [r["file"] for r in json.loads((CORPUS / "sources.json").read_text())]


def documents(rel: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all((CORPUS / rel).read_bytes()) if d is not None]


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def _label(o: Obj) -> str:
    meta = o.get("metadata") or {}
    name = meta.get("name") or f"{meta.get('generateName', '')}*"
    ns = meta.get("namespace")
    return f"{o.get('apiVersion')} {o.get('kind')} {ns + '/' if ns else ''}{name}"


def _message(r: Any) -> str:
    try:
        return str(r.json().get("message") or r.text)
    except ValueError:
        return f"HTTP {r.status_code}: {r.text[:300]}"


class Oracle:
    """One lab API server judging objects; ``kinds``: what its discovery serves."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.api.discover()
        self.kinds = dict(self.api._kinds)  # (groupVersion, kind) -> Resource
        self.namespaces: set[str] = set()

    def _path(self, o: Obj, named: bool) -> str:
        return self.api.path(o, named=named)

    def _send(self, method: str, o: Obj, *, dry_run: bool) -> tuple[int, str]:
        # kubectl validates fields strictly by default (--validate=strict): an unknown or
        # duplicate field is refused, not dropped with a warning (the server's default)
        params = {"fieldValidation": "Strict", **({"dryRun": "All"} if dry_run else {})}
        if method == "POST":
            r = self.api.http.request("POST", self._path(o, False), params=params, json=o)
        else:
            params |= {"fieldManager": "aiplat-corpus", "force": "true"}
            r = self.api.http.request("PATCH", self._path(o, True), params=params,
                                      content=json.dumps(o), headers={"Content-Type": APPLY})
        return r.status_code, ("" if r.status_code < 400 else _message(r))

    def ensure_namespace(self, ns: str) -> None:
        if ns in self.namespaces:
            return
        for o in ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                  {"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": "default", "namespace": ns}}):
            code, msg = self._send("POST", o, dry_run=False)
            assert code < 400 or code == 409, msg
        self.namespaces.add(ns)

    def unjudgeable(self, o: Obj) -> str | None:
        av, kind = o.get("apiVersion"), o.get("kind")
        if not isinstance(av, str) or not isinstance(kind, str):
            return "not an API object (no apiVersion or kind)"
        group = _group(av)
        if (av, kind) in self.kinds or group in BUILT_IN or any(
                _group(gv) == group and k == kind for gv, k in self.kinds):
            return None  # served, or a version of a kind the server knows: its verdict
        return f"the lab has no CRD for {kind} in {av}"

    def judge(self, o: Obj, *, real: bool = False) -> Obj:
        label = _label(o)
        why = self.unjudgeable(o)
        if why:
            return {"object": label, "verdict": "cannot judge", "message": why}
        av, kind = o["apiVersion"], o["kind"]
        if (av, kind) not in self.kinds:
            served = sorted(gv for gv, k in self.kinds if k == kind)
            return {"object": label, "verdict": "refused",
                    "message": f"the server does not serve {kind} in {av}"
                               + (f" (it serves {', '.join(served)})" if served else "")}
        code, msg = (self._send("PATCH", o, dry_run=False) if real
                     else self._send("POST", o, dry_run=True))
        if code == 409 and not real:  # exists: what ``kubectl apply`` would send
            code, msg = self._send("PATCH", o, dry_run=True)
        if code < 400:
            return {"object": label, "verdict": "accepted"}
        if "failed calling webhook" in msg:
            return {"object": label, "verdict": "cannot judge", "message": msg}
        return {"object": label, "verdict": "refused", "message": msg}

    def judge_file(self, rel: str) -> Obj:
        docs = documents(rel)
        own = {(d.get("metadata") or {}).get("name") for d in docs if d.get("kind") == "Namespace"}
        for o in docs:
            res = self.kinds.get((o.get("apiVersion"), o.get("kind")))  # type: ignore[arg-type]
            ns = (o.get("metadata") or {}).get("namespace") or "default"
            if res is not None and res.namespaced and ns not in own:
                self.ensure_namespace(ns)
        out: dict[int, Obj] = {}
        real = [i for i, o in enumerate(docs) if o.get("kind") in REAL_KINDS]
        for i in real:
            out[i] = self.judge(docs[i], real=True)
            if docs[i]["kind"] == "Namespace" and out[i]["verdict"] == "accepted":
                self.ensure_namespace(docs[i]["metadata"]["name"])  # its default SA
        for i, o in enumerate(docs):
            if i not in out:
                out[i] = self.judge(o)
        for i in real:
            if docs[i].get("kind") == "PriorityClass" and out[i]["verdict"] == "accepted":
                self.api.http.request("DELETE", self._path(docs[i], True))
        objects = [out[i] for i in range(len(docs))]
        verdicts = {v["verdict"] for v in objects}
        verdict = next(v for v in ("refused", "cannot judge", "accepted") if v in verdicts)
        return {"verdict": verdict, "objects": objects}

    def install_crds(self, files: list[str]) -> list[str]:
        crds = [o for rel in files for o in documents(rel)
                if o.get("kind") == "CustomResourceDefinition"]
        for o in crds:
            code, msg = self._send("PATCH", o, dry_run=False)
            assert code < 400, msg
        names = [o["metadata"]["name"] for o in crds]
        self.api.wait_established(names)
        self.kinds = dict(self.api._kinds)
        return sorted(names)


def judge_corpus(api: Api) -> Obj:
    """Every corpus file's verdict from the server behind ``api``."""
    files = corpus_files()
    oracle = Oracle(api)
    installed = oracle.install_crds(files)
    verdicts = {rel: oracle.judge_file(rel) for rel in files}
    lab = {k.rsplit("/", 1)[-1]: v for k, v in versions().items()}
    return {"kubernetes": api.version(), "lab": lab, "installed_crds": installed,
            "files": verdicts}


@contextlib.contextmanager
def lab_api(tmp: Path, name: str = "corpus") -> Iterator[Api]:
    """A lab cluster of its own (``aiplat lab cluster up``), stopped after."""
    env = {**os.environ, "AIPLAT_CLUSTER_DIR": str(tmp / "runs"), "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "aiplat.cli.main", "lab", "cluster"]
    up = subprocess.run([*cmd, "up", "--name", name], env=env, capture_output=True,
                        text=True, timeout=600, check=False)
    try:
        assert up.returncode == 0, up.stderr
        api = Api.from_kubeconfig(up.stdout.strip().removeprefix("export KUBECONFIG="))
        try:
            yield api
        finally:
            api.close()
    finally:
        down = subprocess.run([*cmd, "down", "--name", name], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert down.returncode == 0 and not (tmp / "runs" / name).exists(), down.stderr


def main() -> int:
    kubeconfig = sys.argv[1] if len(sys.argv) > 1 else None
    with contextlib.ExitStack() as stack:
        if kubeconfig:
            api = stack.enter_context(Api.from_kubeconfig(kubeconfig))
        else:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            api = stack.enter_context(lab_api(tmp))
        result = judge_corpus(api)
    VERDICTS.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    counts: dict[str, int] = {}
    for v in result["files"].values():
        counts[v["verdict"]] = counts.get(v["verdict"], 0) + 1
    print(f"{len(result['files'])} files on {result['kubernetes']}: {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
