"""Kustomize fields ``aiplat kube lint`` did not model only logged a line (issue #38, the red
team's fifth round, N1): a ``patches:`` entry made RoleBinding team-a-edit cluster-admin in
kube-system (kp1), and ``commonLabels:`` / ``labels:`` gave a powerful ClusterRole the
aggregate-to-view label while view was bound cluster-wide (kc1, kc2); each ended in "0 errors",
exit 0. Labels are now applied as kustomize's label transformer applies them to metadata, and
every field still not modelled is an error finding (the verdict is unknown)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_kube_lint_trees import RBAC, kustomization, lint, write

from aiplat.kube.tree import read_tree

AGG_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"
POD_RUNNER = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
              "metadata": {"name": "pod-runner"},
              "rules": [{"apiGroups": [""], "resources": ["pods", "pods/exec"],
                         "verbs": ["create", "get", "list"]}]}
VIEW_BINDING = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "team-a-view"},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"},
                "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "team-a-users"}]}
EDIT_BINDING = {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
                "metadata": {"name": "team-a-edit", "namespace": "team-a"},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "edit"},
                "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "team-a-users"}]}
TENANT = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": "team-a", "labels": {"aiplat.io/tenant": "team-a"}}}
NOT_MODELLED = "error: [kustomize-not-modelled] "


def labelled_tree(tmp_path: Path, **fields: Any) -> Path:
    """kc0-kc2: view bound cluster-wide; cr/ holds pod-runner, labelled by ``fields`` of its
    kustomization (or in the file, without ``fields``)."""
    role = POD_RUNNER if fields else {
        **POD_RUNNER, "metadata": {"name": "pod-runner", "labels": {AGG_VIEW: "true"}}}
    return write(tmp_path / "t", {
        "kustomization.yaml": kustomization(resources=["base.yaml", "cr"]),
        "base.yaml": [TENANT, EDIT_BINDING],
        "cr/kustomization.yaml": kustomization(resources=["rbac.yaml"], **fields),
        "cr/rbac.yaml": [role, VIEW_BINDING]})


@pytest.mark.parametrize("fields", [
    {},  # kc0: the label written in the file
    {"commonLabels": {AGG_VIEW: "true"}},  # kc1
    {"labels": [{"pairs": {AGG_VIEW: "true"}}]},  # kc2
    {"labels": [{"pairs": {AGG_VIEW: "true"}, "includeSelectors": True}]},
])
def test_labels_from_a_kustomization_aggregate_as_written_ones(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: dict[str, Any]) -> None:
    code, out, err = lint(labelled_tree(tmp_path, **fields), capsys)
    assert code == 1, out + err
    assert "error: [rbac-cluster-grant] ClusterRoleBinding/team-a-view: " in out
    assert "execs into running pods" in out
    assert "kustomize-not-modelled" not in out


def test_labels_reach_metadata_of_every_object(tmp_path: Path) -> None:
    tree = labelled_tree(tmp_path, commonLabels={"a": "1"}, labels=[{"pairs": {"b": "2"}}])
    got = {o["metadata"]["name"]: o["metadata"].get("labels") for _f, o in read_tree(tree)[0]}
    assert got["pod-runner"] == got["team-a-view"] == {"a": "1", "b": "2"}
    assert got["team-a"] == {"aiplat.io/tenant": "team-a"}  # outside cr/: untouched


def test_patches_are_an_error_finding(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """kp1: a JSON6902 patch makes team-a-edit cluster-admin in kube-system."""
    patch = ("- op: replace\n  path: /roleRef/name\n  value: cluster-admin\n"
             "- op: replace\n  path: /metadata/namespace\n  value: kube-system\n")
    tree = write(tmp_path / "t", {
        "kustomization.yaml": kustomization(resources=["base.yaml"], patches=[
            {"target": {"kind": "RoleBinding", "name": "team-a-edit"}, "patch": patch}]),
        "base.yaml": [TENANT, EDIT_BINDING]})
    code, out, _err = lint(tree, capsys)
    assert code == 1
    assert f"{NOT_MODELLED}{tree.resolve()}/kustomization.yaml: 'patches' not modelled" in out
    assert f"kubectl kustomize {tree.resolve()}" in out
    assert "0 errors" not in out


@pytest.mark.parametrize("fields", [
    {"patchesStrategicMerge": ["p.yaml"]},
    {"patchesJson6902": [{"target": {"kind": "Role", "name": "x"}, "path": "p.yaml"}]},
    {"components": ["c"]},
    {"namePrefix": "p-"},
    {"nameSuffix": "-s"},
    {"configMapGenerator": [{"name": "c"}]},
    {"replacements": []},
    {"helmCharts": [{"name": "x"}]},
    {"commonAnnotations": {"a": "b"}},
    {"labels": [{"pairs": {"a": "b"}, "fields": [{"path": "spec/x"}]}]},
])
def test_each_field_not_modelled_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: dict[str, Any]) -> None:
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=["cr/rbac.yaml"], **fields), "cr/rbac.yaml": [POD_RUNNER]})
    code, out, _err = lint(tree, capsys)
    assert code == 1
    assert f"'{next(iter(fields))}' not modelled" in out and NOT_MODELLED in out


def test_common_labels_on_a_workload_are_not_modelled(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """commonLabels also labels selectors and pod templates, which aiplat does not model: a
    NetworkPolicy or Deployment under it makes the verdict unknown."""
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "p", "namespace": "team-a"},
              "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=["p.yaml"], commonLabels={"a": "b"}), "p.yaml": [policy]})
    code, out, _err = lint(tree, capsys)
    assert code == 1 and "'commonLabels' not modelled" in out
    assert "NetworkPolicy" in out


@pytest.mark.parametrize("labels", [{"a": 1}, ["a"], [{"pairs": {"a": True}}], [3]])
def test_bad_labels_are_input_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     labels: Any) -> None:
    field = "commonLabels" if isinstance(labels, dict) else "labels"
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=["r.yaml"], **{field: labels}), "r.yaml": [POD_RUNNER]})
    code, out, err = lint(tree, capsys)
    assert code == 2 and out == ""
    assert f"'{field}'" in err and "fix:" in err
