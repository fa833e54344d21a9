"""Kustomize fields ``aiplat kube lint`` did not model only logged a line (issue #38, the red
team's fifth round, N1): a ``patches:`` entry made RoleBinding team-a-edit cluster-admin in
kube-system (kp1), and ``commonLabels:`` / ``labels:`` gave a powerful ClusterRole the
aggregate-to-view label while view was bound cluster-wide (kc1, kc2); each ended in "0 errors",
exit 0. Labels are now applied as kustomize's label transformer applies them to metadata, and
(issue #45) a tree with any field not read here is built by the real kustomize, or refused
when there is none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_kube_lint_trees import RBAC, kustomization, lint, need_kustomize, write

from aiplat.cluster.assets import default_cache
from aiplat.errors import InputError
from aiplat.kube.kustomize import find as find_kustomize
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


def test_patches_are_applied(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """kp1: a JSON6902 patch makes team-a-edit cluster-admin in kube-system: kustomize builds
    it, and lint judges the binding where the patch puts it."""
    need_kustomize()
    patch = ("- op: replace\n  path: /roleRef/name\n  value: cluster-admin\n"
             "- op: replace\n  path: /metadata/namespace\n  value: kube-system\n")
    tree = write(tmp_path / "t", {
        "kustomization.yaml": kustomization(resources=["base.yaml"], patches=[
            {"target": {"kind": "RoleBinding", "name": "team-a-edit"}, "patch": patch}]),
        "base.yaml": [TENANT, EDIT_BINDING]})
    code, out, _err = lint(tree, capsys)
    assert code == 1
    assert f"info: [kustomize] {tree}/kustomization.yaml: built by kustomize, since " \
        "'patches'" in out
    assert "RoleBinding/kube-system/team-a-edit" in out and "cluster-admin" in out
    assert "0 errors" not in out


FIELDS = [
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
]


@pytest.mark.parametrize("fields", FIELDS)
def test_each_field_not_read_here_needs_kustomize(tmp_path: Path, fields: dict[str, Any]
                                                  ) -> None:
    """Without a kustomize program, never the base: an InputError naming the field."""
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=["cr/rbac.yaml"], **fields), "cr/rbac.yaml": [POD_RUNNER]})
    with pytest.raises(InputError, match=f"only kustomize builds this kustomization "
                       f"\\('{next(iter(fields))}' "):
        read_tree(tree)


@pytest.mark.parametrize("fields", FIELDS)
def test_each_field_not_read_here_is_built_or_refused_by_kustomize(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: dict[str, Any]) -> None:
    """With kustomize: built and judged (an info finding says so), or kustomize's own error
    (exit 2: a missing patch file or component, Helm not enabled), never the base."""
    need_kustomize()
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=["cr/rbac.yaml"], **fields), "cr/rbac.yaml": [POD_RUNNER]})
    code, out, err = lint(tree, capsys)
    if code == 2:
        assert out == "" and "kustomize could not build it: " in err and "fix:" in err
    else:
        assert f"info: [kustomize] {tree}/kustomization.yaml: built by kustomize, since " \
            f"'{next(iter(fields))}'" in out


def test_common_labels_on_a_workload_are_built_by_kustomize(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """commonLabels also labels selectors and pod templates, which aiplat does not read
    itself: a Service under it is built by kustomize, its selector labelled."""
    need_kustomize()
    policy = {"apiVersion": "v1", "kind": "Service",
              "metadata": {"name": "p", "namespace": "team-a"},
              "spec": {"selector": {"app": "p"}, "ports": [{"port": 80}]}}
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=["p.yaml"], commonLabels={"a": "b"}), "p.yaml": [policy]})
    code, out, _err = lint(tree, capsys)
    assert code == 0 and "info: [kustomize]" in out and "1 objects, 0 errors" in out
    items, _inv = read_tree(tree, build=find_kustomize([default_cache() / "bin" / "kubectl"]))
    assert items[0][1]["spec"]["selector"] == {"app": "p", "a": "b"}
    assert items[0][0] == "p.yaml (kustomize build)"


@pytest.mark.parametrize("labels", [{"a": 1}, ["a"], [{"pairs": {"a": True}}], [3]])
def test_bad_labels_are_input_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     labels: Any) -> None:
    field = "commonLabels" if isinstance(labels, dict) else "labels"
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(
        resources=["r.yaml"], **{field: labels}), "r.yaml": [POD_RUNNER]})
    code, out, err = lint(tree, capsys)
    assert code == 2 and out == ""
    assert f"'{field}'" in err and "fix:" in err
