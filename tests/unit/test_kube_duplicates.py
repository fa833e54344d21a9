"""A tree that defines one object twice (issue #38, the red team's third round, R3): a
harmless ClusterRole in a.yaml and a powerful one of the same name in z.yaml were judged by
the first, though ``kubectl apply -f DIR`` applies both in file order and the cluster keeps
the last; ``kube validate`` did not report the duplicate, which kustomize refuses ("may not
add resource with an already registered id"). Now both commands report it, and lint judges
every definition."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_kube_lint import clean
from test_kube_lint_rbac_round2 import aiplat
from test_lint_system import binding, group, role, rule, upstream

Obj = dict[str, Any]


# --- R3: a duplicated object --------------------------------------------------------------

def _dup_tree(tmp_path: Path, powerful_last: bool = True) -> Path:
    """lint/dup_plain: team-reader harmless in a.yaml, pods create+exec in z.yaml (or the
    other way round: dup_plain_ctl), bound cluster-wide to a tenant's group."""
    tree = tmp_path / "tree"
    tree.mkdir()
    harmless = role("ClusterRole", None, rule("", ["configmaps"], ["get", "list"]),
                    name="team-reader")
    powerful = role("ClusterRole", None, rule("", ["pods", "pods/exec"], ["create", "get"]),
                    name="team-reader")
    first, last = (harmless, powerful) if powerful_last else (powerful, harmless)
    (tree / "tenant.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": "team-a", "labels": {"aiplat.io/tenant": "team-a"}}},
        binding("RoleBinding", "team-a", ("ClusterRole", "edit"), group("team-a-users"),
                name="team-a-edit")]))
    (tree / "a.yaml").write_text(yaml.safe_dump_all([first, binding(
        "ClusterRoleBinding", None, ("ClusterRole", "team-reader"), group("team-a-users"),
        name="team-a-reader")]))
    (tree / "z.yaml").write_text(yaml.safe_dump(last))
    (tmp_path / "inventory.yaml").write_text("pools: []\n")
    return tree


@pytest.mark.parametrize("powerful_last", [True, False])
def test_a_duplicated_role_is_an_error_and_every_definition_is_judged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], powerful_last: bool) -> None:
    tree = _dup_tree(tmp_path, powerful_last)
    capsys.readouterr()
    code = aiplat(["kube", "lint", str(tree), "--inventory", str(tmp_path / "inventory.yaml")])
    out = capsys.readouterr().out
    assert code == 1
    dup = next(ln for ln in out.splitlines() if "[duplicate-object]" in ln)
    assert dup.startswith("error: [duplicate-object] ClusterRole/team-reader: ")
    assert "a.yaml" in dup and "z.yaml" in dup
    grant = next(ln for ln in out.splitlines() if "[rbac-cluster-grant]" in ln)
    assert grant.startswith("error: ") and "execs into running pods" in grant


def test_validate_reports_a_duplicated_object(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    tree = _dup_tree(tmp_path)
    capsys.readouterr()
    code = aiplat(["kube", "validate", str(tree)])
    out = capsys.readouterr().out
    assert code == 1
    line = next(ln for ln in out.splitlines() if "defined 2 times" in ln)
    assert line.startswith("error: z.yaml: ClusterRole/team-reader: ")
    assert "a.yaml (object 1)" in line and "keep one" in line


def test_what_is_the_same_object_in_a_cluster() -> None:
    """Group, kind, namespace and name: another version of the same group is the same object
    (the API server stores one), another group's kind of that name or another namespace is
    not; a cluster-scoped kind's namespace is dropped by the API server."""
    from aiplat.kube.validate import duplicates

    def hpa(api: str, ns: str | None = "a") -> Obj:
        meta = {"name": "x", **({"namespace": ns} if ns else {})}
        return {"apiVersion": api, "kind": "HorizontalPodAutoscaler", "metadata": meta}

    same = [hpa("autoscaling/v1"), hpa("autoscaling/v2")]
    assert [len(d) for d in duplicates(same)] == [2]
    assert duplicates([hpa("autoscaling/v2"), hpa("autoscaling/v2", "b")]) == []
    assert duplicates([hpa("autoscaling/v2"), hpa("other.example/v1")]) == []
    crs = [role("ClusterRole", None, name="c"), role("ClusterRole", "kube-system", name="c")]
    assert [len(d) for d in duplicates(crs)] == [2]
    roles = [role("Role", None, name="c"), role("Role", "kube-system", name="c")]
    assert duplicates(roles) == []


def test_the_rendered_example_and_upstream_have_no_duplicates() -> None:
    from aiplat.kube.validate import duplicates

    objs, _inv = clean()
    assert duplicates(objs) == []
    assert duplicates(upstream()) == []
