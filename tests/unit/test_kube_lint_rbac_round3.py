"""The red team's third round on kube lint's RBAC rules (issue #38), as a user meets them:
``aiplat kube lint DIR`` and ``aiplat kube validate DIR`` on hand-written trees.

R1: rules a tree aggregates into Kubernetes' own aggregated ClusterRoles (view, edit, admin,
by their ``aggregate-to-*`` labels) were not counted where view was bound; R2: Kubernetes'
own powerful ClusterRoles (the controllers', system:node, ...) bound to a tenant were not
judged at all (lint knew cluster-admin, admin and edit only). Kubernetes' own RBAC stays
clean. R3 (an object defined twice): ``test_kube_duplicates.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_kube_lint import clean
from test_kube_lint_rbac_round2 import lint_dir
from test_lint_system import (
    binding,
    group,
    role,
    rule,
    sa,
    system_findings,
    tenant_tree,
    upstream,
)

from aiplat.kube import lint
from aiplat.kube.bootstrap_rbac import LABELS, ROLES
from aiplat.kube.inventory import Inventory

Obj = dict[str, Any]
NO_POOLS = Inventory(pools=[])
AGG = "rbac.authorization.k8s.io/aggregate-to-"


def labelled(obj: Obj, **labels: str) -> Obj:
    obj["metadata"]["labels"] = labels
    return obj


def debug_helpers(target: str = "view") -> Obj:
    """The red team's role: pods/exec, pods/attach and pods create, aggregated into ``target``."""
    return labelled(role("ClusterRole", None,
                         rule("", ["pods/exec", "pods/attach"], ["create", "get"]),
                         rule("", ["pods"], ["create"]), name="debug-helpers"),
                    **{f"{AGG}{target}": "true"})


def messages(found: list[Any], source: str) -> list[str]:
    return [f.message for f in found if f.source == source]


# --- R1: rules aggregated into Kubernetes' view, edit and admin ---------------------------

def test_a_role_aggregated_into_view_counts_where_view_is_bound_cluster_wide(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """lint/t_agg_view: view bound cluster-wide to a tenant's group; in a cluster the
    aggregation controller copies debug-helpers' rules into view."""
    objs = [*tenant_tree(), debug_helpers(),
            binding("ClusterRoleBinding", None, ("ClusterRole", "view"), group("ml-team"),
                    name="team-a-view-all")]
    code, out, _err = lint_dir(tmp_path, objs, capsys)
    assert code == 1
    line = next(ln for ln in out.splitlines() if "[rbac-cluster-grant]" in ln)
    assert line.startswith("error: [rbac-cluster-grant] ClusterRoleBinding/team-a-view-all: ")
    assert "ClusterRole view" in line and "execs into running pods" in line
    assert "creates pods or workloads" in line


def test_a_role_aggregated_into_view_counts_where_view_is_bound_in_kube_system() -> None:
    """lint/t_agg_view_ks: a RoleBinding of view in kube-system."""
    objs = [*tenant_tree(), debug_helpers(),
            binding("RoleBinding", "kube-system", ("ClusterRole", "view"), group("ml-team"))]
    found = system_findings(objs)
    assert [(f.severity, f.source) for f in found] == [("error", "rbac-system-namespace")]
    assert "execs into running pods" in found[0].message


@pytest.mark.parametrize(("label", "bound", "reaches"), [
    ("view", "view", True), ("view", "edit", True), ("view", "admin", True),
    ("edit", "view", False), ("edit", "edit", True), ("edit", "admin", True),
    ("admin", "view", False), ("admin", "edit", False), ("admin", "admin", True),
])
def test_the_aggregation_chain_is_kubernetes(label: str, bound: str, reaches: bool) -> None:
    """Kubernetes' view carries aggregate-to-edit and edit aggregate-to-admin: a role
    aggregated into view reaches edit and admin too, one aggregated into admin only admin.
    nodes/proxy is a power none of the three has (cluster-wide only)."""
    part = labelled(role("ClusterRole", None, rule("", ["nodes/proxy"], ["get"]), name="np"),
                    **{f"{AGG}{label}": "true"})
    objs = [*tenant_tree(), part,
            binding("ClusterRoleBinding", None, ("ClusterRole", bound), group("ml-team"))]
    grants = messages(system_findings(objs), "rbac-cluster-grant")
    assert any("reaches the kubelet" in m for m in grants) == reaches, grants


def test_a_tree_role_aggregating_kubernetes_roles_gets_their_rules() -> None:
    """An aggregated role of the tree picks up Kubernetes' own ClusterRoles too:
    system:aggregate-to-edit creates pods (and the bootstrapping label selects every one of
    Kubernetes', cluster-admin included)."""
    for labels, power in (({f"{AGG}edit": "true"}, "creates pods or workloads"),
                          ({"kubernetes.io/bootstrapping": "rbac-defaults"},
                           "allows every verb on every resource")):
        agg = role("ClusterRole", None, name="team-editor")
        agg["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": labels}]}
        objs = [*tenant_tree(), agg,
                binding("RoleBinding", "kube-system", ("ClusterRole", "team-editor"),
                        group("ml-team"))]
        found = system_findings(objs)
        assert [f.source for f in found] == ["rbac-system-namespace"], labels
        assert power in found[0].message


def test_a_harmless_role_aggregated_into_view_stays_clean() -> None:
    """What operators ship for their CRDs: get/list/watch aggregated into view."""
    part = labelled(role("ClusterRole", None, rule("kueue.x-k8s.io", ["workloads"],
                                                   ["get", "list", "watch"]), name="wl-view"),
                    **{f"{AGG}view": "true"})
    objs = [*tenant_tree(), part,
            binding("ClusterRoleBinding", None, ("ClusterRole", "view"), group("ml-team"))]
    assert system_findings(objs) == []


def test_the_red_team_aggregation_on_the_rendered_example() -> None:
    objs, inv = clean()
    objs += [debug_helpers(), binding("ClusterRoleBinding", None, ("ClusterRole", "view"),
                                      group("research"), name="team-a-view-all")]
    found = [f for f in lint(objs, inv) if f.source.startswith("rbac-")]
    assert [(f.severity, f.source, f.subject) for f in found] == [
        ("error", "rbac-cluster-grant", "ClusterRoleBinding/team-a-view-all")]


# --- R2: Kubernetes' own powerful ClusterRoles bound to a tenant --------------------------

@pytest.mark.parametrize(("name", "power"), [
    ("system:controller:job-controller", "creates pods or workloads"),
    ("system:controller:clusterrole-aggregation-controller", "may escalate"),
    ("system:kube-controller-manager", "reads Secrets"),
    ("system:node", "writes Nodes"),
    ("system:controller:persistent-volume-binder", "creates PersistentVolumes"),
    ("system:controller:daemon-set-controller", "creates pods or workloads"),
    ("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
     "node client certificates"),
])
def test_kubernetes_powerful_roles_bound_to_a_tenant_are_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, power: str) -> None:
    """lint/t_br_*: one ClusterRoleBinding each, subject a tenant's group."""
    assert ("ClusterRole", "", name) in ROLES
    objs = [*tenant_tree(), binding("ClusterRoleBinding", None, ("ClusterRole", name),
                                    group("ml-team"), name="x")]
    code, out, _err = lint_dir(tmp_path, objs, capsys)
    assert code == 1
    line = next(ln for ln in out.splitlines() if "[rbac-cluster-grant]" in ln)
    assert line.startswith("error: [rbac-cluster-grant] ClusterRoleBinding/x: ")
    assert f"ClusterRole {name}" in line and power in line


def test_a_kubernetes_controller_role_in_kube_system_is_an_error() -> None:
    """lint/t_br2_ks: a RoleBinding in kube-system of the DaemonSet controller's role."""
    objs = [*tenant_tree(), binding("RoleBinding", "kube-system", (
        "ClusterRole", "system:controller:daemon-set-controller"), group("ml-team"))]
    found = system_findings(objs)
    assert [(f.severity, f.source) for f in found] == [("error", "rbac-system-namespace")]
    assert "creates pods or workloads" in found[0].message


def test_a_kubernetes_controller_role_for_everyone_is_an_error() -> None:
    """lint/t_br2_all: job-controller to system:authenticated was a warning."""
    objs = [binding("ClusterRoleBinding", None, ("ClusterRole", "system:controller:job-controller"),
                    group("system:authenticated"), name="everyone-jobs")]
    found = system_findings(objs)
    assert [(f.severity, f.source) for f in found] == [("error", "rbac-everyone")]
    assert "creates pods or workloads" in found[0].message


def test_a_kubernetes_role_in_kube_system_is_judged() -> None:
    """Kubernetes' own Roles in kube-system (the bootstrap signer reads Secrets there)."""
    key = ("Role", "kube-system", "system:controller:bootstrap-signer")
    assert key in ROLES
    objs = [*tenant_tree(), binding("RoleBinding", "kube-system", ("Role", key[2]),
                                    group("ml-team"))]
    found = system_findings(objs)
    assert [(f.severity, f.source) for f in found] == [("error", "rbac-system-namespace")]
    assert "reads Secrets" in found[0].message


def test_selfnodeclient_is_no_power_for_a_tenant() -> None:
    """The CSR approver signs a selfnodeclient request only when the requester's own name is
    the certificate's (system:node:NAME): a node renewing its own. A tenant gains nothing."""
    objs = [*tenant_tree(), binding("ClusterRoleBinding", None, (
        "ClusterRole", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"),
        group("ml-team"))]
    assert system_findings(objs) == []


@pytest.mark.parametrize(("kind", "ns", "role_kind"), [
    ("ClusterRoleBinding", None, "ClusterRole"), ("RoleBinding", "kube-system", "ClusterRole"),
    ("RoleBinding", "kube-system", "Role")])
def test_a_role_neither_the_tree_nor_kubernetes_defines_is_said_to_be_unknown(
        kind: str, ns: str | None, role_kind: str) -> None:
    """An operator's role the tree does not hold (or one named like Kubernetes' that
    Kubernetes does not define: token-cleaner is a Role in kube-system, not a ClusterRole):
    its powers cannot be judged, and lint says so rather than passing it (a warning: a
    binding to a role nobody defines grants nothing until someone does)."""
    for name in ("some-operator-manager", "system:controller:token-cleaner"):
        if role_kind == "Role" and name.startswith("system:"):
            continue  # Kubernetes' own Role there: judged
        objs = [*tenant_tree(), binding(kind, ns, (role_kind, name), group("ml-team"))]
        found = system_findings(objs)
        assert [f.severity for f in found] == ["warning"], name
        assert "not judged" in found[0].message and name in found[0].message


def test_an_unknown_role_for_a_component_or_in_a_tenant_namespace_is_not_flagged() -> None:
    objs = [*tenant_tree(),
            binding("ClusterRoleBinding", None, ("ClusterRole", "operator-manager"),
                    sa("operator", "kube-system"), name="op"),
            binding("RoleBinding", "research", ("ClusterRole", "operator-view"),
                    group("ml-team"), name="op-view")]
    assert system_findings(objs) == []


def test_kubernetes_bootstrap_bindings_stay_clean_with_their_roles_not_in_the_tree() -> None:
    """The recorded bootstrap bindings alone (their roles left out, as in a tree that binds
    Kubernetes' roles without copying them): components and everyone-defaults only."""
    objs = [o for o in upstream() if o["kind"] in ("ClusterRoleBinding", "RoleBinding")
            and "kubernetes" in o["metadata"]["labels"]["aiplat.test/source"]]
    assert objs
    assert system_findings(objs) == []


def test_labels_are_recorded_for_every_bootstrap_cluster_role() -> None:
    assert {n for k, _ns, n in ROLES if k == "ClusterRole"} == set(LABELS)
    assert LABELS["view"][f"{AGG}edit"] == "true"
    assert LABELS["edit"][f"{AGG}admin"] == "true"
