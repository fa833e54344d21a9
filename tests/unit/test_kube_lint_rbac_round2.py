"""The red team's second round on kube lint's RBAC rules (issue #38), as a user meets them:
``aiplat kube lint DIR`` on hand-written trees. A ClusterRoleBinding handing cluster-admin to a
group no tenant binds, Kubernetes' bootstrap roles redefined with more rules, RBAC without a
namespace and Services rewritten in kube-system all passed silently; Kubernetes' own RBAC
stays clean."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from test_lint_system import (
    UPSTREAM,
    binding,
    group,
    role,
    rule,
    sa,
    system_findings,
    tenant_tree,
    upstream,
)

from aiplat.cli.main import main
from aiplat.kube import lint
from aiplat.kube.inventory import Inventory

Obj = dict[str, Any]
NO_POOLS = Inventory(pools=[])


def aiplat(args: list[str]) -> int:
    """The exit status of ``aiplat ARGS`` (main, or the SystemExit a command ends with)."""
    try:
        return main(args)
    except SystemExit as e:
        return int(e.code or 0)


def lint_dir(tmp_path: Path, objs: list[Obj], capsys: pytest.CaptureFixture[str],
             *args: str) -> tuple[int, str, str]:
    """``aiplat kube lint`` on a directory holding ``objs``: exit code, stdout, stderr."""
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    (tree / "objects.yaml").write_text(yaml.safe_dump_all(objs))
    inv = tmp_path / "inventory.yaml"
    inv.write_text("pools: []\n")
    capsys.readouterr()
    code = aiplat(["kube", "lint", str(tree), "--inventory", str(inv), *args])
    out, err = capsys.readouterr()
    return code, out, err


# --- 2. cluster-wide powers for a subject the tree cannot place ---------------------------

@pytest.mark.parametrize(("cluster_role", "power"), [
    ("cluster-admin", "every verb on every resource"),
    ("pods", "creates pods or workloads"),
    ("escalating", "may escalate"),
])
def test_a_cluster_wide_power_for_an_unplaced_group_is_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cluster_role: str,
        power: str) -> None:
    objs = [role("ClusterRole", None, rule("", ["pods"], ["create"]), name="pods"),
            role("ClusterRole", None, rule(RBAC_GROUP, ["clusterroles"], ["escalate"]),
                 name="escalating"),
            binding("ClusterRoleBinding", None, ("ClusterRole", cluster_role),
                    group("oidc:ml-team"), name="x")]
    code, out, _err = lint_dir(tmp_path, objs, capsys)
    line = next(ln for ln in out.splitlines() if "[rbac-cluster-grant]" in ln)
    assert line.startswith("warning: [rbac-cluster-grant] ClusterRoleBinding/x: ")
    assert "Group oidc:ml-team" in line and power in line and f"ClusterRole {cluster_role}" \
        in line
    assert code in (0, 1)  # a warning alone does not fail the tree; rbac-escalation may


def test_the_platform_administrators_cluster_admin_is_a_warning_not_an_error() -> None:
    objs = [*tenant_tree(), binding("ClusterRoleBinding", None, ("ClusterRole", "cluster-admin"),
                                    group("platform-ops"))]
    found = system_findings(objs)
    assert [(f.severity, f.source) for f in found] == [("warning", "rbac-cluster-grant")]
    assert "cannot tell" in found[0].message


# --- 3. Kubernetes' bootstrap roles redefined --------------------------------------------

RBAC_GROUP = "rbac.authorization.k8s.io"


@pytest.mark.parametrize("name", ["system:basic-user", "system:discovery",
                                  "system:public-info-viewer", "view", "system:node"])
def test_a_bootstrap_cluster_role_redefined_with_more_rules_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    objs = [role("ClusterRole", None, rule("*", ["*"], ["*"]), name=name)]
    code, out, _err = lint_dir(tmp_path, objs, capsys)
    assert code == 1
    line = next(ln for ln in out.splitlines() if "[rbac-bootstrap]" in ln)
    assert line.startswith(f"error: [rbac-bootstrap] ClusterRole/{name}: ")
    assert "reconcile" in line and "'*'" in line


def test_a_bootstrap_binding_given_another_subject_is_an_error() -> None:
    crb = next(o for o in upstream() if o["kind"] == "ClusterRoleBinding"
               and o["metadata"]["name"] == "system:basic-user")
    crb["subjects"].append(group("oidc:ml-team"))
    found = [f for f in lint([crb], NO_POOLS) if f.source == "rbac-bootstrap"]
    assert [(f.severity, f.subject) for f in found] == [
        ("error", "ClusterRoleBinding/system:basic-user")]
    assert "Group oidc:ml-team" in found[0].message


def test_an_aggregated_bootstrap_role_may_not_select_more() -> None:
    view = role("ClusterRole", None, name="view")
    view["aggregationRule"] = {"clusterRoleSelectors": [{}]}
    found = [f for f in lint([view], NO_POOLS) if f.source == "rbac-bootstrap"]
    assert [f.subject for f in found] == ["ClusterRole/view"]


def test_copies_of_the_bootstrap_policy_and_other_system_names_are_clean() -> None:
    """Kubernetes' own objects (recorded: the fixture), an older subset of one, and names
    Kubernetes does not define (CoreDNS's system:coredns, metrics-server's
    system:aggregated-metrics-reader, which their manifests ship)."""
    basic = next(o for o in upstream() if o["kind"] == "ClusterRole"
                 and o["metadata"]["name"] == "system:basic-user")
    basic["rules"] = basic["rules"][:1]
    coredns = role("ClusterRole", None, rule("", ["endpoints", "services", "pods",
                                                  "namespaces"], ["list", "watch"]),
                   name="system:coredns")
    objs = [*upstream(), basic, coredns]
    assert [f for f in lint(objs, NO_POOLS) if f.source == "rbac-bootstrap"] == []
    assert UPSTREAM.exists()


# --- 4. namespaced RBAC without a namespace -----------------------------------------------

def test_a_rolebinding_without_namespace_is_judged_as_if_in_kube_system(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objs = [binding("RoleBinding", None, ("ClusterRole", "cluster-admin"),
                    group("oidc:ml-team"), name="x")]
    code, out, _err = lint_dir(tmp_path, objs, capsys)
    assert code == 1
    line = next(ln for ln in out.splitlines() if "[rbac-namespace-unset]" in ln)
    assert line.startswith("error: [rbac-namespace-unset] RoleBinding/x: ")
    assert "kubectl context's namespace" in line and "kube-system" in line
    assert "Group oidc:ml-team" in line
    # judged once, where the worst context puts it; not again in the 'default' guessed
    assert "[rbac-system-namespace]" not in out, out


def test_a_rolebinding_placed_by_an_explicit_namespace_is_judged_there(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-n says where kubectl puts it: no guess, so no 'namespace not set'; -n kube-system
    is judged as a binding in kube-system is."""
    objs = [binding("RoleBinding", None, ("ClusterRole", "cluster-admin"),
                    group("oidc:ml-team"), name="x")]
    _code, out, _err = lint_dir(tmp_path, objs, capsys, "-n", "ml-team")
    assert "[rbac-namespace-unset]" not in out
    code, out, _err = lint_dir(tmp_path, objs, capsys, "-n", "kube-system")
    assert code == 1 and "[rbac-namespace-unset]" not in out
    assert "error: [rbac-system-namespace] RoleBinding/kube-system/x: " in out


def test_rbac_without_namespace_and_no_power_is_a_warning() -> None:
    objs = [role("Role", None, rule("", ["configmaps"], ["get"])),
            binding("RoleBinding", None, ("Role", "r"), group("oidc:ml-team"))]
    found = [f for f in lint(objs, NO_POOLS) if f.source == "rbac-namespace-unset"]
    assert sorted((f.severity, f.subject) for f in found) == [
        ("warning", "Role/r"), ("warning", "RoleBinding/grant")]


def test_rbac_with_a_namespace_raises_no_namespace_finding() -> None:
    objs = [*tenant_tree(), role("Role", "research", rule("", ["pods"], ["create"])),
            binding("RoleBinding", "research", ("Role", "r"), sa("default"))]
    assert [f for f in lint(objs, NO_POOLS) if f.source == "rbac-namespace-unset"] == []


# --- 5. Services rewritten in a system namespace ------------------------------------------

@pytest.mark.parametrize("verb", ["update", "patch", "delete"])
def test_rewriting_services_in_kube_system_is_an_error(verb: str) -> None:
    objs = [*tenant_tree(), role("Role", "kube-system", rule("", ["services"], [verb])),
            binding("RoleBinding", "kube-system", ("Role", "r"), group("oidc:ml-team"))]
    found = system_findings(objs)
    assert [(f.severity, f.source) for f in found] == [("error", "rbac-system-namespace")]
    assert "Services" in found[0].message and "kube-dns" in found[0].message


def test_rewriting_services_in_a_tenant_namespace_is_clean() -> None:
    objs = [*tenant_tree(), role("Role", "research", rule("", ["services"], ["update"])),
            binding("RoleBinding", "research", ("Role", "r"), group("ml-team"))]
    assert system_findings(objs) == []
