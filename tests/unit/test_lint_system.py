"""The system-namespace lint rules (issue 38): RBAC that hands a tenant or everyone a path to
cluster-admin, and tenant fences put on system namespaces, found on any tree (the issue's
hostile trees, hand-written bindings in every subject spelling), and silent on the real RBAC
upstream components ship (``tests/fixtures/upstream-rbac.yaml``: Kubernetes' bootstrap policy,
Kueue, JobSet, LeaderWorkerSet and kwok, recorded from their pinned Go modules)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_kube_lint import clean, find

from aiplat.kube import lint
from aiplat.kube.inventory import Inventory
from aiplat.kube.lint import Finding

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"
UPSTREAM = Path(__file__).parents[1] / "fixtures" / "upstream-rbac.yaml"
SYSTEM_RULES = {"rbac-system-namespace", "rbac-cluster-grant", "rbac-everyone",
                "system-namespace-policy"}
NO_POOLS = Inventory(pools=[])


def upstream() -> list[Obj]:
    return [d for d in yaml.safe_load_all(UPSTREAM.read_text()) if d]


def binding(kind: str, ns: str | None, role: tuple[str, str], *subjects: Obj,
            name: str = "grant") -> Obj:
    meta: Obj = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": RBAC, "kind": role[0], "name": role[1]},
            "subjects": list(subjects)}


def role(kind: str, ns: str | None, *rules: Obj, name: str = "r") -> Obj:
    meta: Obj = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": meta, "rules": list(rules)}


def rule(group: str, resources: list[str], verbs: list[str]) -> Obj:
    return {"apiGroups": [group], "resources": resources, "verbs": verbs}


def group(name: str) -> Obj:
    return {"apiGroup": RBAC, "kind": "Group", "name": name}


def user(name: str) -> Obj:
    return {"apiGroup": RBAC, "kind": "User", "name": name}


def sa(name: str, ns: str | None = None) -> Obj:
    return {"kind": "ServiceAccount", "name": name, **({"namespace": ns} if ns else {})}


def system_findings(objs: list[Obj], inv: Inventory = NO_POOLS) -> list[Finding]:
    return [f for f in lint(objs, inv) if f.source in SYSTEM_RULES]


def tenant_tree() -> list[Obj]:
    """A tenant namespace (research, with its groups bound there), as any tool makes it."""
    return [{"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "research", "labels": {"team": "research"}}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
             "metadata": {"name": "q", "namespace": "research"},
             "spec": {"clusterQueue": "research"}},
            binding("RoleBinding", "research", ("ClusterRole", "edit"), group("ml-team"),
                    user("alice"), name="team")]


def test_the_namespaces_the_tree_renders_into_are_system_namespaces() -> None:
    from aiplat.kube import render_cluster, render_kueue, render_tenants
    from aiplat.kube.lint.rules import system as lint_system

    rendered = {render_cluster.SYSTEM_NS, render_cluster.GPU_OPERATOR_NS,
                render_kueue.KUEUE_NS, render_tenants.GATEWAY_NS, render_tenants.MONITORING_NS,
                lint_system.DRA_DRIVER_NS}
    assert all(lint_system.is_system_namespace(ns) for ns in rendered)
    assert lint_system.PRIVILEGED_NAMESPACES <= lint_system.SYSTEM_NAMESPACES


# --- what upstream ships is not flagged ----------------------------------------------------

def test_the_upstream_fixture_holds_the_cases_that_matter() -> None:
    """The recorded RBAC has what a rule could mistake for an attack: a RoleBinding in
    kube-system to another system namespace's ServiceAccount (Kueue's visibility server),
    roles that create pods and read Secrets in kube-system (Kubernetes' controllers),
    bindings to everyone (Kubernetes' discovery roles), cluster-admin to system:masters."""
    objs = upstream()
    sources = {o["metadata"]["labels"]["aiplat.test/source"] for o in objs}
    assert sources == {"kubernetes-v1.36.3-bootstrap-policy", "kueue-v0.19.2",
                       "jobset-v0.12.0", "lws-v0.9.0", "kwok-v0.8.0"}
    cross = [b for b in objs if b["kind"] == "RoleBinding"
             and b["metadata"]["namespace"] == "kube-system"
             and any(s.get("namespace") == "kueue-system" for s in b["subjects"])]
    assert cross
    assert any(s["name"] == "system:authenticated" for b in objs
               if b["kind"] == "ClusterRoleBinding" for s in b.get("subjects") or [])
    assert any(r["kind"] == "Role" and r["metadata"]["namespace"] == "kube-system"
               and "secrets" in str(r["rules"]) for r in objs)


def test_upstream_rbac_raises_nothing() -> None:
    assert lint(upstream(), NO_POOLS) == []


def test_upstream_rbac_beside_the_rendered_tree_raises_nothing() -> None:
    """With tenants in the tree, upstream's accounts still are not tenants' subjects."""
    objs, inv = clean()
    objs += [o for o in upstream() if o["kind"] != "Namespace"]
    assert [f for f in lint(objs, inv) if f.source in SYSTEM_RULES | {"rbac-escalation"}] == []


def test_the_rendered_example_stays_clean() -> None:
    objs, inv = clean()
    assert lint(objs, inv) == []


# --- the issue's hostile trees ------------------------------------------------------------

def _rename_tenant(objs: list[Obj], old: str, new: str) -> list[Obj]:
    """The tree a tenant named ``new`` gets: what the renderer makes for tenant ``old``, in
    namespace ``new`` (the spec now refuses such names; a tree from elsewhere may not)."""
    text = yaml.safe_dump_all(objs)
    out = list(yaml.safe_load_all(text.replace(f"namespace: {old}\n", f"namespace: {new}\n")))
    ns = find(out, "Namespace", old)
    ns["metadata"]["name"] = new
    ns["metadata"]["labels"]["aiplat.io/tenant"] = new
    return out


def test_a_tenant_named_kube_system_is_flagged() -> None:
    objs, inv = clean()
    objs = _rename_tenant(objs, "batch", "kube-system")
    found = {(f.severity, f.source, f.subject) for f in system_findings(objs, inv)}
    assert {("error", "rbac-system-namespace", "RoleBinding/kube-system/aiplat-admin"),
            ("error", "rbac-system-namespace", "RoleBinding/kube-system/aiplat-user"),
            ("error", "system-namespace-policy", "Namespace/kube-system"),
            ("error", "system-namespace-policy", "NetworkPolicy/kube-system/default-deny"),
            } <= found
    why = next(f.message for f in system_findings(objs, inv)
               if f.subject == "RoleBinding/kube-system/aiplat-user")
    assert "Group batch" in why and "creates pods" in why and "cluster-admin" in why


def test_a_tenant_named_aiplat_system_is_flagged() -> None:
    """Two Namespaces of that name, and pod create in the node agent's privileged one."""
    objs, inv = clean()
    objs = _rename_tenant(objs, "research", "aiplat-system")
    found = {(f.source, f.subject) for f in system_findings(objs, inv)}
    assert ("rbac-system-namespace", "RoleBinding/aiplat-system/aiplat-admin") in found
    assert ("system-namespace-policy", "Namespace/aiplat-system") in found


@pytest.mark.parametrize("who", ["system:authenticated", "system:unauthenticated",
                                 "system:serviceaccounts"])
def test_everyone_as_tenant_users_is_an_error(who: str) -> None:
    objs, inv = clean()
    find(objs, "RoleBinding", "aiplat-user", "research")["subjects"].append(group(who))
    hits = [f for f in system_findings(objs, inv) if f.source == "rbac-everyone"]
    assert [(h.severity, h.subject) for h in hits] == [("error", "RoleBinding/research/"
                                                                 "aiplat-user")]
    assert who in hits[0].message and who in hits[0].fix


# --- hand-written bindings in system namespaces -------------------------------------------

POWERFUL = {
    "pod create": rule("", ["pods"], ["create"]),
    "deployment create": rule("apps", ["deployments"], ["create"]),
    "cronjob create": rule("batch", ["cronjobs"], ["create", "update"]),
    "exec": rule("", ["pods/exec"], ["create"]),
    "attach by get": rule("", ["pods/attach"], ["get"]),
    "ephemeral containers": rule("", ["pods/ephemeralcontainers"], ["patch"]),
    "secrets read": rule("", ["secrets"], ["list"]),
    "token minting": rule("", ["serviceaccounts/token"], ["create"]),
    "rolebinding create": rule(RBAC, ["rolebindings"], ["create"]),
    "escalate": rule(RBAC, ["roles"], ["escalate"]),
    "bind": rule(RBAC, ["clusterroles"], ["bind"]),
    "impersonate": rule("", ["users", "groups"], ["impersonate"]),
    "wildcard verbs": rule("", ["configmaps"], ["*"]),
    "wildcard resources": rule("", ["*"], ["get"]),
    "wildcard group": {"apiGroups": ["*"], "resources": ["pods"], "verbs": ["create"]},
    # a running pod's or controller's image swapped: its code runs as the workload's account
    "pod patch": rule("", ["pods"], ["patch"]),
    "daemonset patch": rule("apps", ["daemonsets"], ["patch"]),
    "deployment update": rule("apps", ["deployments"], ["update"]),
    "statefulset and replicaset patch": rule("apps", ["statefulsets", "replicasets"],
                                             ["patch"]),
    "job and cronjob update": rule("batch", ["jobs", "cronjobs"], ["update"]),
    "replicationcontroller patch": rule("", ["replicationcontrollers"], ["patch"]),
    "jobset create": rule("jobset.x-k8s.io", ["jobsets"], ["create"]),
    "leaderworkerset update": rule("leaderworkerset.x-k8s.io", ["leaderworkersets"],
                                   ["update"]),
    # Kubernetes matches */subresource against any resource's subresource
    "exec by */exec": rule("", ["*/exec"], ["create"]),
    "attach by */attach": rule("", ["*/attach"], ["get"]),
    "ephemeral containers by */ephemeralcontainers": rule("", ["*/ephemeralcontainers"],
                                                          ["update"]),
    "token minting by */token": rule("", ["*/token"], ["create"]),
    "exec on named pods": {**rule("", ["pods/exec"], ["create"]), "resourceNames": ["coredns"]},
    # the namespace's own objects
    "namespace patch": rule("", ["namespaces"], ["patch"]),
    "configmap update": rule("", ["configmaps"], ["update"]),
    "configmap patch on one name": {**rule("", ["configmaps"], ["patch"]),
                                    "resourceNames": ["coredns"]},
    "endpoints create": rule("", ["endpoints"], ["create"]),
    "endpointslice update": rule("discovery.k8s.io", ["endpointslices"], ["create", "update"]),
    "secret create": rule("", ["secrets"], ["create"]),
}
TENANT_SUBJECTS = {
    "group": group("ml-team"),
    "user": user("alice"),
    "tenant service account": sa("default", "research"),
    "service account as user": user("system:serviceaccount:research:default"),
    "service accounts of a tenant namespace": group("system:serviceaccounts:research"),
    "unknown user": user("mallory"),
}


@pytest.mark.parametrize("power", POWERFUL, ids=list(POWERFUL))
@pytest.mark.parametrize("ns", ["kube-system", "gpu-operator", "kueue-system", "default",
                                "nvidia-dra-driver-gpu", "aiplat-system", "kube-flannel"])
def test_a_powerful_role_for_a_tenant_in_a_system_namespace_is_an_error(
        power: str, ns: str) -> None:
    objs = [*tenant_tree(), role("Role", ns, POWERFUL[power]),
            binding("RoleBinding", ns, ("Role", "r"), group("ml-team"))]
    found = system_findings(objs)
    assert [(f.severity, f.source, f.subject) for f in found] == [
        ("error", "rbac-system-namespace", f"RoleBinding/{ns}/grant")], power
    assert "Group ml-team" in found[0].message and "remove Group ml-team" in found[0].fix


@pytest.mark.parametrize("subject", TENANT_SUBJECTS, ids=list(TENANT_SUBJECTS))
def test_every_spelling_of_a_tenant_subject_is_caught(subject: str) -> None:
    objs = [*tenant_tree(), binding("RoleBinding", "kube-system", ("ClusterRole", "admin"),
                                    TENANT_SUBJECTS[subject])]
    assert [f.source for f in system_findings(objs)] == ["rbac-system-namespace"]


def test_an_aggregated_cluster_role_is_judged_by_what_it_picks_up() -> None:
    agg = role("ClusterRole", None, name="debugger")
    agg["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"x/debug": "true"}}]}
    part = role("ClusterRole", None, rule("", ["pods/exec"], ["create"]), name="exec")
    part["metadata"]["labels"] = {"x/debug": "true"}
    objs = [*tenant_tree(), agg, part,
            binding("RoleBinding", "kube-system", ("ClusterRole", "debugger"), user("alice"))]
    found = system_findings(objs)
    assert [f.source for f in found] == ["rbac-system-namespace"]
    assert "execs into running pods" in found[0].message


def test_a_service_account_subject_without_namespace_is_the_bindings() -> None:
    """The RBAC authorizer reads it in the RoleBinding's namespace: kube-system's own."""
    objs = [binding("RoleBinding", "kube-system", ("ClusterRole", "cluster-admin"), sa("x"))]
    assert system_findings(objs) == []
    objs = [binding("RoleBinding", "research", ("ClusterRole", "cluster-admin"), sa("x"))]
    assert system_findings(objs) == []  # a tenant's power in its own namespace


@pytest.mark.parametrize(("case", "objs"), [
    ("the namespace's own account", [binding(
        "RoleBinding", "kube-system", ("ClusterRole", "cluster-admin"),
        sa("coredns", "kube-system"))]),
    ("another system namespace's account (Kueue's visibility server)", [binding(
        "RoleBinding", "kube-system", ("ClusterRole", "edit"), sa("kueue", "kueue-system"))]),
    ("a control-plane user", [binding(
        "RoleBinding", "kube-system", ("ClusterRole", "edit"), user("system:kube-scheduler"))]),
    ("the node group", [binding(
        "RoleBinding", "kube-system", ("ClusterRole", "edit"), group("system:nodes"))]),
    ("kube-system's service accounts", [binding(
        "RoleBinding", "kube-system", ("ClusterRole", "edit"),
        group("system:serviceaccounts:kube-system"))]),
    ("read-only for a tenant", [*tenant_tree(), binding(
        "RoleBinding", "kube-system", ("ClusterRole", "view"), group("ml-team"))]),
    ("a narrow role for a tenant", [*tenant_tree(), role(
        "Role", "monitoring", rule("monitoring.coreos.com", ["prometheusrules"],
                                   ["create", "update"])),
        binding("RoleBinding", "monitoring", ("Role", "r"), group("ml-team"))]),
    ("an operator's account in its own namespace", [*tenant_tree(), binding(
        "ClusterRoleBinding", None, ("ClusterRole", "cluster-admin"), sa("argocd", "argocd"))]),
    ("view for a tenant cluster-wide", [*tenant_tree(), binding(
        "ClusterRoleBinding", None, ("ClusterRole", "view"), group("ml-team"))]),
    ("Kubernetes' discovery for everyone", [binding(
        "ClusterRoleBinding", None, ("ClusterRole", "system:discovery"),
        group("system:authenticated"))]),
    ("kube-public, readable by design", [binding(
        "RoleBinding", "kube-public", ("Role", "cluster-info"), user("system:anonymous"))]),
    ("a resource Kubernetes does not serve (names match case and all)", [
        *tenant_tree(), role("Role", "kube-system", rule("", ["Pods"], ["create"])),
        binding("RoleBinding", "kube-system", ("Role", "r"), group("ml-team"))]),
    ("no resource/* form: pods/* matches nothing", [
        *tenant_tree(), role("Role", "kube-system", rule("", ["pods/*"], ["create"])),
        binding("RoleBinding", "kube-system", ("Role", "r"), group("ml-team"))]),
    ("create with resourceNames allows no create", [
        *tenant_tree(), role("Role", "kube-system", {**rule("", ["pods"], ["create"]),
                                                     "resourceNames": ["x"]}),
        binding("RoleBinding", "kube-system", ("Role", "r"), group("ml-team"))]),
    ("a pod's status is not its spec", [
        *tenant_tree(), role("Role", "kube-system", rule("", ["pods/status"], ["patch"])),
        binding("RoleBinding", "kube-system", ("Role", "r"), group("ml-team"))]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_near_misses_are_clean(case: str, objs: list[Obj]) -> None:
    assert system_findings(objs) == [], case


# --- cluster-wide grants --------------------------------------------------------------------

# A user no tenant namespace binds may be an administrator: a warning (test_kube_lint_rbac_round2).
BOUND_TENANT_SUBJECTS = [s for s in TENANT_SUBJECTS if s != "unknown user"]


@pytest.mark.parametrize("subject", BOUND_TENANT_SUBJECTS)
@pytest.mark.parametrize("cluster_role", ["cluster-admin", "admin", "edit", "own-wildcard"])
def test_a_cluster_wide_grant_to_a_tenant_is_an_error(subject: str, cluster_role: str) -> None:
    own = role("ClusterRole", None, rule("", ["*"], ["*"]), name="own-wildcard")
    objs = [*tenant_tree(), own, binding("ClusterRoleBinding", None,
                                         ("ClusterRole", cluster_role),
                                         TENANT_SUBJECTS[subject])]
    found = system_findings(objs)
    assert [(f.severity, f.source) for f in found] == [("error", "rbac-cluster-grant")]


CERTS = "certificates.k8s.io"
ADMISSION = "admissionregistration.k8s.io"
# Powers over cluster-scoped objects: only a ClusterRoleBinding grants them.
CLUSTER_POWERS = {
    "nodes/proxy": rule("", ["nodes/proxy"], ["get"]),
    "*/proxy": rule("", ["*/proxy"], ["get"]),
    "persistentvolume create (hostPath)": rule("", ["persistentvolumes"], ["create"]),
    "mutating webhook create": rule(ADMISSION, ["mutatingwebhookconfigurations"],
                                    ["create"]),
    "validating webhook update": rule(ADMISSION, ["validatingwebhookconfigurations"],
                                      ["update"]),
    "mutating admission policy create": rule(ADMISSION, ["mutatingadmissionpolicies"],
                                             ["create"]),
    "crd create": rule("apiextensions.k8s.io", ["customresourcedefinitions"], ["create"]),
    "crd patch": rule("apiextensions.k8s.io", ["customresourcedefinitions"], ["patch"]),
    "apiservice create": rule("apiregistration.k8s.io", ["apiservices"], ["create"]),
    "node patch": rule("", ["nodes"], ["patch"]),
    "node status update": rule("", ["nodes/status"], ["update"]),
    "csr approval": [rule(CERTS, ["certificatesigningrequests"], ["create"]),
                     rule(CERTS, ["certificatesigningrequests/approval"], ["update"]),
                     {**rule(CERTS, ["signers"], ["approve"]),
                      "resourceNames": ["kubernetes.io/kube-apiserver-client"]}],
    "csr approval for every kubernetes.io signer": [
        rule(CERTS, ["certificatesigningrequests/approval"], ["patch"]),
        {**rule(CERTS, ["signers"], ["approve"]), "resourceNames": ["kubernetes.io/*"]}],
}


def _cluster_role(rules: Obj | list[Obj]) -> Obj:
    return role("ClusterRole", None, *(rules if isinstance(rules, list) else [rules]),
                name="c")


@pytest.mark.parametrize("power", CLUSTER_POWERS, ids=list(CLUSTER_POWERS))
def test_a_cluster_scoped_power_for_a_tenant_is_an_error(power: str) -> None:
    objs = [*tenant_tree(), _cluster_role(CLUSTER_POWERS[power]),
            binding("ClusterRoleBinding", None, ("ClusterRole", "c"), group("ml-team"))]
    found = system_findings(objs)
    assert [(f.severity, f.source) for f in found] == [("error", "rbac-cluster-grant")], power
    assert "Group ml-team" in found[0].message


@pytest.mark.parametrize("power", CLUSTER_POWERS, ids=list(CLUSTER_POWERS))
def test_a_cluster_scoped_power_in_a_rolebinding_grants_nothing(power: str) -> None:
    """The RBAC authorizer reads a RoleBinding only for requests in its namespace: Nodes,
    PersistentVolumes, webhooks, CRDs and CSRs are in none."""
    objs = [*tenant_tree(), _cluster_role(CLUSTER_POWERS[power]),
            binding("RoleBinding", "kube-system", ("ClusterRole", "c"), group("ml-team"))]
    assert system_findings(objs) == []


@pytest.mark.parametrize(("case", "rules"), [
    ("approval without a signer", [rule(CERTS, ["certificatesigningrequests/approval"],
                                        ["update"])]),
    ("a signer without approval", [rule(CERTS, ["signers"], ["approve"])]),
    ("kubelet serving certificates only", [
        rule(CERTS, ["certificatesigningrequests/approval"], ["update"]),
        {**rule(CERTS, ["signers"], ["approve"]),
         "resourceNames": ["kubernetes.io/kubelet-serving"]}]),
    ("reading webhooks, CRDs, nodes", [
        rule(ADMISSION, ["mutatingwebhookconfigurations"], ["get", "list", "watch"]),
        rule("apiextensions.k8s.io", ["customresourcedefinitions"], ["get", "list"]),
        rule("", ["nodes", "nodes/status", "persistentvolumes"], ["get", "list", "watch"])]),
])
def test_cluster_scoped_near_misses_are_clean(case: str, rules: list[Obj]) -> None:
    objs = [*tenant_tree(), _cluster_role(rules),
            binding("ClusterRoleBinding", None, ("ClusterRole", "c"), group("ml-team"))]
    assert system_findings(objs) == [], case


@pytest.mark.parametrize("power", ["configmap update", "endpoints create",
                                   "endpointslice update", "secret create"])
def test_a_system_namespaces_objects_count_where_the_binding_reaches_one(power: str) -> None:
    """Writing ConfigMaps, Endpoints or Secrets is a tenant's business in its own namespace;
    in kube-system, or everywhere, it is the components' configuration and traffic."""
    cm = role("ClusterRole", None, POWERFUL[power], name="c")
    everyone = group("system:authenticated")
    tenant = system_findings([cm, binding("RoleBinding", "research", ("ClusterRole", "c"),
                                          everyone)])
    assert [(f.severity, f.source) for f in tenant] == [("warning", "rbac-everyone")]
    for b in (binding("RoleBinding", "kube-system", ("ClusterRole", "c"), everyone),
              binding("ClusterRoleBinding", None, ("ClusterRole", "c"), everyone)):
        found = system_findings([cm, b])
        assert [(f.severity, f.source) for f in found] == [("error", "rbac-everyone")], b
    found = system_findings([*tenant_tree(), cm, binding(
        "ClusterRoleBinding", None, ("ClusterRole", "c"), group("ml-team"))])
    assert [f.source for f in found] == ["rbac-cluster-grant"]


def test_relabelling_a_namespace_counts_wherever_it_is_bound() -> None:
    """patch on namespaces through a RoleBinding reaches that Namespace itself: its Pod
    Security label set to privileged admits privileged pods (RBAC good practices, Namespace
    modification); cluster-wide it reaches every tenant's and kube-system's."""
    ns_patch = role("ClusterRole", None, rule("", ["namespaces"], ["patch"]), name="c")
    found = system_findings([*tenant_tree(), ns_patch, binding(
        "ClusterRoleBinding", None, ("ClusterRole", "c"), group("ml-team"))])
    assert [f.source for f in found] == ["rbac-cluster-grant"]
    assert "relabels Namespaces" in found[0].message
    found = system_findings([ns_patch, binding("RoleBinding", "research", ("ClusterRole", "c"),
                                               group("system:authenticated"))])
    assert [(f.severity, f.source) for f in found] == [("error", "rbac-everyone")]


MATCHES = [
    ("pods", "create", rule("", ["*"], ["*"]), True),
    ("pods/exec", "create", rule("", ["*"], ["create"]), True),
    ("pods", "create", rule("*", ["pods"], ["create"]), True),
    ("pods/exec", "create", rule("", ["*/exec"], ["create"]), True),
    ("serviceaccounts/token", "create", rule("", ["*/token"], ["create"]), True),
    ("nodes/proxy", "get", rule("", ["*/proxy"], ["get"]), True),
    ("pods", "create", rule("", ["*/exec"], ["create"]), False),
    ("pods/exec", "create", rule("", ["*/xec"], ["create"]), False),
    ("pods/exec", "create", rule("", ["pods/*"], ["create"]), False),
    ("pods/exec", "create", rule("", ["pods"], ["create"]), False),
    ("pods", "create", rule("", ["Pods"], ["create"]), False),
    ("pods", "create", rule("", ["pods"], ["Create"]), False),
    ("pods", "create", rule("apps", ["pods"], ["create"]), False),
    ("pods", "patch", {**rule("", ["pods"], ["patch"]), "resourceNames": ["a"]}, True),
    ("pods", "create", {**rule("", ["pods"], ["create"]), "resourceNames": ["a"]}, False),
    ("pods/exec", "create", {**rule("", ["pods/exec"], ["*"]), "resourceNames": ["a"]}, True),
]


@pytest.mark.parametrize(("resource", "verb", "rule_", "allowed"), MATCHES, ids=[
    f"{v} {r} by {x['apiGroups'][0] or 'core'} {x['resources'][0]} {x['verbs'][0]}"
    f"{' named' if 'resourceNames' in x else ''}" for r, v, x, _ in MATCHES])
def test_rules_match_as_kubernetes_rbac_matches_them(
        resource: str, verb: str, rule_: Obj, allowed: bool) -> None:
    """Kubernetes' RuleAllows (``pkg/apis/rbac/v1/evaluation_helpers.go``): ``*``, the exact
    string, or ``*/subresource``; no ``resource/*``; a create names no object."""
    from aiplat.kube.lint.rules.system import allows

    assert allows(rule_, "", resource, verb) is allowed


@pytest.mark.parametrize("who", [group("system:authenticated"),
                                 group("system:unauthenticated"),
                                 group("system:serviceaccounts"), user("system:anonymous")],
                         ids=lambda s: s["name"])
def test_a_powerful_grant_to_everyone_is_an_error_anywhere(who: Obj) -> None:
    for b in (binding("ClusterRoleBinding", None, ("ClusterRole", "edit"), who),
              binding("RoleBinding", "kube-system", ("ClusterRole", "edit"), who),
              binding("RoleBinding", "research", ("ClusterRole", "edit"), who)):
        found = system_findings([b])
        assert [(f.severity, f.source) for f in found] == [("error", "rbac-everyone")], b


def test_a_harmless_grant_to_everyone_is_a_warning() -> None:
    objs = [role("ClusterRole", None, rule("", ["configmaps"], ["get"]), name="cm"),
            binding("ClusterRoleBinding", None, ("ClusterRole", "cm"),
                    group("system:authenticated"))]
    assert [(f.severity, f.source) for f in system_findings(objs)] == [
        ("warning", "rbac-everyone")]


# --- fences on system namespaces ------------------------------------------------------------

def _policy(ns: str, spec: Obj) -> Obj:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "p", "namespace": ns}, "spec": spec}


@pytest.mark.parametrize(("spec", "isolated"), [
    ({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}, "Ingress/Egress"),
    ({"podSelector": {}}, "Ingress"),
    ({"podSelector": {}, "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]},
     "Ingress/Egress"),
    ({"podSelector": {}, "ingress": [{}], "egress": [], "policyTypes": ["Ingress", "Egress"]},
     "Egress"),
])
def test_a_policy_isolating_a_system_namespace_is_an_error(spec: Obj, isolated: str) -> None:
    found = system_findings([_policy("kube-system", spec)])
    assert [(f.severity, f.source) for f in found] == [("error", "system-namespace-policy")]
    assert f"({isolated})" in found[0].message


@pytest.mark.parametrize(("ns", "spec"), [
    ("kube-system", {"podSelector": {"matchLabels": {"app": "mine"}}}),  # its own pods
    ("kube-system", {"podSelector": {}, "ingress": [{}]}),  # allows everything
    ("default", {"podSelector": {}}),  # nothing system runs there
    ("research", {"podSelector": {}}),
])
def test_policies_that_break_no_component_are_clean(ns: str, spec: Obj) -> None:
    assert system_findings([_policy(ns, spec)]) == []


@pytest.mark.parametrize(("ns", "level", "flagged"), [
    ("kube-system", "restricted", True), ("kube-system", "baseline", True),
    ("gpu-operator", "restricted", True), ("monitoring", "baseline", True),
    ("kube-flannel", "baseline", True), ("kube-system", "privileged", False),
    ("kueue-system", "restricted", False), ("default", "restricted", False),
    ("research", "restricted", False),
])
def test_pod_security_on_namespaces_with_host_level_components(
        ns: str, level: str, flagged: bool) -> None:
    objs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": ns, "labels": {"pod-security.kubernetes.io/enforce": level}}}]
    assert bool(system_findings(objs)) is flagged


def test_findings_say_what_to_change() -> None:
    objs, inv = clean()
    objs = _rename_tenant(copy.deepcopy(objs), "serving", "gpu-operator")
    found = system_findings(objs, inv)
    assert found and all(f.severity == "error" and f.fix for f in found)
