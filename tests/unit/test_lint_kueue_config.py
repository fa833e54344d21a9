"""Kueue's Configuration as lint reads it (issue #40): with none in the tree, lint assumed
Kueue's built-in ``['batch/job']`` and called every queued JobSet, Pod, Deployment or
LeaderWorkerSet of Kueue's own site examples unmanaged ("starts at once outside any quota"),
although Kueue's released manifests and Helm chart enable them; and it read only the ConfigMap
form. Now a tree without one is read as the target release's shipped configuration (said in an
info line), and a Configuration document, the ConfigMap and Helm values are all read.
Upstream files: tests/data/upstream/kueue/PROVENANCE.md."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_kube_lint_rbac_round2 import aiplat

from aiplat.kube.inventory import Inventory
from aiplat.kube.lint import lint

UP = Path(__file__).parent.parent / "data" / "upstream" / "kueue"
V19 = UP / "v0.19.2"
Obj = dict[str, Any]


def docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def findings(objs: list[Obj], version: str | None = None) -> list[tuple[str, str, str]]:
    return [(f.severity, f.source, f.message)
            for f in lint(objs, Inventory(pools=[]), kueue_version=version)]


def only_batch_job(cfg_text: str) -> str:
    """Upstream's configuration with integrations cut to batch/job."""
    cfg = yaml.safe_load(cfg_text)
    cfg["integrations"]["frameworks"] = ["batch/job"]
    return yaml.safe_dump(cfg)


JOBSET = docs(V19 / "sample-jobset.yaml")[0]
UPSTREAM_CFG = (V19 / "controller_manager_config.yaml").read_text()


def test_a_tree_without_configuration_is_read_as_the_release_ships_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Kueue's site example: a queued JobSet beside the quick-start queues."""
    tree = tmp_path / "t"
    tree.mkdir()
    for f in ("sample-jobset.yaml", "quick-start-setup.yaml"):
        (tree / f).write_text((V19 / f).read_text())
    inv = tmp_path / "inv.yaml"
    inv.write_text("pools: []\n")
    aiplat(["kube", "lint", str(tree), "--inventory", str(inv)])
    out = capsys.readouterr().out
    assert "[kueue-managed]" not in out, out
    assert "info: [kueue-config]" in out
    assert "Kueue v0.19.2's released configuration" in out
    assert "controller_manager_config.yaml" in out and "charts/kueue/values.yaml" in out


@pytest.mark.parametrize("form", ["Configuration", "ConfigMap", "Helm values"])
def test_each_form_of_the_configuration_is_read(form: str) -> None:
    """A Configuration that enables batch/job only: the JobSet is Kueue's to leave alone, in
    every form Kueue's configuration is written."""
    text = only_batch_job(UPSTREAM_CFG)
    if form == "Configuration":
        cfg: Obj = yaml.safe_load(text)
    elif form == "ConfigMap":
        cfg = {"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
               "data": {"controller_manager_config.yaml": text}}
    else:
        cfg = yaml.safe_load((V19 / "helm-values.yaml").read_text())
        cfg["managerConfig"]["controllerManagerConfigYaml"] = text
    got = findings([cfg, JOBSET])
    assert any(s == "error" and r == "kueue-managed" and "'jobset.x-k8s.io/jobset'" in m
               for s, r, m in got), got
    assert not any(r == "kueue-config" and s == "info" for s, r, _m in got)


@pytest.mark.parametrize("form", ["Configuration", "Helm values"])
def test_the_upstream_configuration_files_read_as_they_are(form: str) -> None:
    cfg = (yaml.safe_load(UPSTREAM_CFG) if form == "Configuration"
           else yaml.safe_load((V19 / "helm-values.yaml").read_text()))
    got = findings([cfg, JOBSET])
    assert not any(r in ("kueue-managed", "kueue-config") for _s, r, _m in got), got


def test_a_framework_the_release_leaves_out_is_a_warning_naming_it() -> None:
    """v0.19 comments out the Kubeflow v1 jobs; v0.17 enables them. Without a Configuration
    in the tree the cluster's may enable it: a warning, not an error."""
    v19 = findings(docs(V19 / "sample-pytorchjob.yaml"), "0.19.2")
    assert [(s, r) for s, r, _m in v19 if r == "kueue-managed"] == [("warning", "kueue-managed")]
    assert any("Kueue v0.19.2's released configuration" in m for _s, _r, m in v19)
    v17 = findings(docs(UP / "v0.17.8" / "sample-pytorchjob.yaml"), "0.17.8")
    assert not any(r == "kueue-managed" for _s, r, _m in v17), v17
    assert any("Kueue v0.17.8's released configuration" in m for _s, _r, m in v17)


def test_an_unknown_release_says_which_stands_in() -> None:
    got = findings([JOBSET], "0.9.1")
    assert any(s == "info" and "no packaged configuration for Kueue 0.9.1" in m
               for s, _r, m in got), got


def test_the_command_takes_the_release_and_counts_notes_apart(
        capsys: pytest.CaptureFixture[str]) -> None:
    """--kueue-version picks the release whose Configuration stands in; info lines are
    notes in the summary, not warnings; a version that is no release is refused (exit 2)."""
    job = str(V19 / "sample-jobset.yaml")
    assert aiplat(["kube", "lint", job, "--kueue-version", "0.17.8"]) == 0
    out = capsys.readouterr().out
    assert "Kueue v0.17.8's released configuration" in out
    assert out.splitlines()[-1] == "1 objects, 0 errors, 1 warnings, 2 notes"
    assert aiplat(["kube", "lint", job, "--kueue-version", "0.99.0"]) == 0  # a newer one
    assert ("read as Kueue v0.19.2's released configuration (config/components/manager/"
            "controller_manager_config.yaml, charts/kueue/values.yaml at commit 8eab68778fc1) "
            "(no packaged configuration for Kueue 0.99.0; v0.19.2's stands in)"
            ) in capsys.readouterr().out
    assert aiplat(["kube", "lint", job, "--kueue-version", "latest"]) == 2
    assert "--kueue-version 'latest': not a release" in capsys.readouterr().err



def _config_map(text: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
            "data": {"controller_manager_config.yaml": text}}


@pytest.mark.parametrize(("text", "why"), [
    ("a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)),
     "expands to more than"),
    ("[" * 3000 + "]" * 3000, "nested more than"),
])
def test_an_embedded_configuration_is_read_under_the_files_bounds(text: str, why: str) -> None:
    """The ConfigMap's text came with the file: an alias bomb or a deep nest in it is refused
    as the file's own would be (it took 46 s of CPU, or a RecursionError traceback)."""
    start = time.process_time()
    found = findings([_config_map(text)])
    assert time.process_time() - start < 10
    errors = [m for s, r, m in found if s == "error" and r == "kueue-config"]
    assert len(errors) == 1 and why in errors[0], found
