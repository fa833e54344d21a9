"""Trees that hid objects from ``aiplat kube lint`` / ``kube validate`` (issue #38, the red
team's fourth round): a List inside a List (kustomize unpacks lists at any depth; the reader
unpacked one level), a file named ``kustomization.yaml`` below the root of a plain tree (skipped;
``kubectl apply -R -f`` applies what it holds), and documents after the inventory in
``cluster/nodes/inventory.yaml`` (ignored; ``kubectl apply -R -f`` applies them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_kube_lint_trees import BINDING, RBAC, kustomization, lint, write

from aiplat.kube.tree import read_tree

ADMIN = {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "team-a-admin"},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
         "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "team-a-users"}]}
# A warning in a tree without tenant namespaces (it cannot tell whose group it is), judged
# all the same.
CLUSTER_GRANT = "[rbac-cluster-grant] ClusterRoleBinding/team-a-admin: "
KS_BINDING = {**BINDING, "metadata": {"name": "x", "namespace": "kube-system"}}
IN_KUBE_SYSTEM = "[rbac-system-namespace] RoleBinding/kube-system/x: "


def listed(obj: Any, *kinds: str) -> Any:
    """``obj`` inside lists of ``kinds``, the outermost first."""
    for kind in reversed(kinds):
        obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "l"}, "items": [obj]}
    return obj


# --- G1: a List inside a List ---------------------------------------------------------------

@pytest.mark.parametrize("kustomized", [True, False])
@pytest.mark.parametrize(("name", "content", "finding"), [
    ("x.yaml", [listed(ADMIN, "List", "List")], CLUSTER_GRANT),  # the red team's kz_nested
    ("x.json", json.dumps(listed(KS_BINDING, "RoleBindingList", "List")), IN_KUBE_SYSTEM),
    ("x.yaml", [listed(ADMIN, "List", "List", "List", "List")], CLUSTER_GRANT),
])
def test_a_list_inside_a_list_is_unpacked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], *, kustomized: bool, name: str,
        content: Any, finding: str) -> None:
    files = {name: content}
    if kustomized:
        files["kustomization.yaml"] = kustomization(resources=[name])
    tree = write(tmp_path / "t", files)
    _code, out, _err = lint(tree, capsys)
    assert finding in out and "1 objects" in out
    _code, out, _err = lint(tree, capsys, "validate")
    assert "List" not in out  # no List is left as an object


def test_lists_nested_past_the_readers_bound_are_an_input_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = write(tmp_path / "t", {"x.json": json.dumps(listed(ADMIN, *["List"] * 40))})
    code, out, err = lint(tree, capsys)
    assert code == 2 and out == "" and "x.json" in err and "fix:" in err


def test_the_items_of_a_nested_list_must_be_objects(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = write(tmp_path / "t", {"x.yaml": [listed(["not", "an", "object"], "List", "List")]})
    code, _out, err = lint(tree, capsys)
    assert code == 2 and "x.yaml" in err and "'items'" in err


# --- G2: kustomization.yaml below the root of a plain tree -----------------------------------

@pytest.mark.parametrize("name", ["kustomization.yaml", "kustomization.yml"])
def test_a_kustomization_named_file_of_a_plain_tree_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """The red team's l_kz_name: `kubectl apply -R -f` applies the ClusterRoleBinding in
    extra/kustomization.yaml, so lint judges it."""
    tree = write(tmp_path / "t", {f"extra/{name}": [ADMIN]})
    _code, out, _err = lint(tree, capsys)
    assert CLUSTER_GRANT in out


@pytest.mark.parametrize("where", ["extra/kustomization.yaml", "extra/other.yaml"])
def test_a_kustomization_below_a_plain_trees_root_is_an_input_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    """`kubectl apply -R -f` cannot apply a Kustomization (no such kind in a cluster), and what
    it builds is not what the tree's files say: lint refuses rather than guess."""
    tree = write(tmp_path / "t", {where: kustomization(resources=["x.yaml"]),
                                  "extra/x.yaml": [ADMIN]})
    code, out, err = lint(tree, capsys)
    assert code == 2 and out == ""
    assert where in err and "Kustomization" in err and "fix:" in err


def test_a_kustomization_below_a_kustomized_trees_root_is_still_read_as_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = write(tmp_path / "t", {"kustomization.yaml": kustomization(resources=["extra"]),
                                  "extra/kustomization.yaml": kustomization(
                                      resources=["x.yaml"]),
                                  "extra/x.yaml": [ADMIN]})
    _code, out, _err = lint(tree, capsys)
    assert CLUSTER_GRANT in out and "1 objects" in out


# --- G3: more documents in the inventory file -------------------------------------------------

@pytest.mark.parametrize("kustomized", [True, False])
def test_an_inventory_file_of_more_documents_is_an_input_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kustomized: bool) -> None:
    """The red team's l_inv2: `kubectl apply -R -f` applies the ClusterRoleBinding after the
    inventory; lint read the inventory and dropped the rest."""
    files: dict[str, Any] = {"cluster/nodes/inventory.yaml": [{"pools": []}, ADMIN],
                             "base.yaml": [KS_BINDING]}
    if kustomized:
        files["kustomization.yaml"] = kustomization(resources=["base.yaml"])
    tree = write(tmp_path / "t", files)
    capsys.readouterr()
    from test_kube_lint_rbac_round2 import aiplat

    code = aiplat(["kube", "lint", str(tree)])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err
    assert "inventory.yaml" in err and "2 YAML documents" in err and "fix:" in err


def test_an_inventory_file_of_one_document_is_the_inventory(tmp_path: Path) -> None:
    tree = write(tmp_path / "t", {"cluster/nodes/inventory.yaml": yaml.safe_dump(
        {"pools": []}), "base.yaml": [KS_BINDING]})
    items, inv = read_tree(tree)
    assert inv is not None and [o["kind"] for _f, o in items] == ["RoleBinding"]
