"""Lint rules for what reaches the system namespaces: RBAC that hands a tenant (or everyone)
a path to cluster-admin, and tenant policies that land on system components. They read any
tree, whoever rendered it, and judge a binding by its subjects and its role's rules, not by
who made it. Rules, by name:

  rbac-system-namespace  a RoleBinding in a system namespace giving a subject that is no
                         system component a role with a power below: such a subject runs
                         as any ServiceAccount there (kube-system holds the controllers'
                         own), a path to cluster-admin; a warning for an unknown role
  rbac-cluster-grant     a ClusterRoleBinding giving a tenant's subject (a group or user a
                         tenant namespace binds, a ServiceAccount of a tenant namespace) such
                         a ClusterRole (cluster-admin, admin, edit, the controllers' among
                         Kubernetes' own); a warning for any other subject but a system
                         component (the tree cannot tell an administrators' group from a
                         tenant's), and for an unknown role
  rbac-everyone          a binding whose subject is everyone: system:authenticated,
                         system:unauthenticated, system:serviceaccounts or system:anonymous
                         (error with any of those powers, else a warning; Kubernetes' own
                         discovery grants and kube-public, readable by design, are not
                         flagged)
  system-namespace-policy  a tenant's fence put on a system namespace: a NetworkPolicy that
                         isolates all its pods, a Pod Security level above privileged on a
                         namespace whose components need host access, the tenant label
  rbac-namespace-unset   a Role or RoleBinding without a namespace: ``kubectl apply`` puts it
                         in the context's namespace, unknown here; judged as if kube-system
                         (an error with a power below for a non-component, else a warning)
  rbac-escalation        a role, wherever it is bound, with a wildcard, escalate/bind/
                         impersonate, RBAC writes, node proxy, token minting or CSRs, or
                         Secrets where the spec does not grant them; a role only system
                         components hold (``component_roles``) is theirs to have

The powers (``POWERS``), each counted where the binding reaches it:
  anywhere     wildcards; escalate, bind, impersonate; creating pods or workloads, or
               rewriting running ones (update/patch on pods and workload controllers: an
               image swapped in place); exec, attach, ephemeral containers; reading Secrets;
               minting tokens; writing RBAC; relabelling a Namespace (its Pod Security level)
  a system namespace, or all of them: writing its ConfigMaps (CoreDNS, kube-proxy, the
               operators' configuration), Endpoints or EndpointSlices (traffic hijack),
               rewriting or deleting its Services (kube-dns's cluster IP freed and taken),
               Secrets (a bootstrap token)
  cluster-wide only (cluster-scoped objects, which a RoleBinding never grants): nodes/proxy;
               creating PersistentVolumes (hostPath); admission webhooks and mutating
               admission policies; CRDs; APIServices; Nodes and their status; approving
               client certificates; node client certificates the controller manager
               approves by itself (``pkg/controller/certificates/approver``: nodeclient)

A rule is matched as Kubernetes' RBAC authorizer matches it (``allows``): ``*`` or the exact
string, ``*/subresource`` for any resource's, no create by a rule with resourceNames.

A role's rules (``powers``) are those of every definition in the tree (applied last, any one
may be what the cluster keeps) and, under one of Kubernetes' own names, those of its bootstrap
policy (``aiplat.kube.bootstrap_rbac``: the API server creates and reconciles them, so a tree
binds system:controller:job-controller or view without copying it). An aggregated
ClusterRole also has the rules of every ClusterRole, the tree's or Kubernetes', whose labels
(Kubernetes' merged in, as the reconcile does) its selectors or Kubernetes' own match, to a
fixed point, as the aggregation controller (``pkg/controller/clusterroleaggregation``)
leaves it: Kubernetes' view carries aggregate-to-edit and edit aggregate-to-admin, so a
tree's role labelled aggregate-to-view is in all three. A role neither the tree nor
Kubernetes defines (an operator's, applied from elsewhere) is unknown: a warning where a
known power would be an error, never a silent pass.

A subject is a system component when it is a ``system:`` user or group other than the
everyone groups (the control plane, nodes, masters) or a ServiceAccount of a system
namespace (in any form: the subject kind, ``system:serviceaccount:NS:NAME``,
``system:serviceaccounts:NS``): only those who may already run pods there can act as one.
Kueue's own release binds its kueue-system ServiceAccount in kube-system, so a
ServiceAccount of another system namespace is a component too.

Sources: Kubernetes' "RBAC good practices" (privilege escalation risks, every one: listing
Secrets, workload creation, PersistentVolume creation, nodes/proxy, escalate, bind,
impersonate, CSRs and certificate issuing, token request, admission webhooks, Namespace
modification), the RBAC authorizer (``plugin/pkg/auth/authorizer/rbac``: RuleAllows; a
RoleBinding's ServiceAccount subject without a namespace is in the binding's), the CSR
approval check (``pkg/certauthorization``: approve on the signer's name or ``<domain>/*``),
the bootstrap policy (``plugin/pkg/auth/authorizer/rbac/bootstrappolicy``: what Kubernetes
grants everyone), Pod Security Standards (host namespaces and hostPath need privileged).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from aiplat.findings import Finding
from aiplat.kube.bootstrap_rbac import AGGREGATION, LABELS, ROLES
from aiplat.kube.facts import TENANT_LABEL
from aiplat.kube.lint.base import Context, Obj, finding, name, namespace
from aiplat.kube.lint.base import rule as lint_rule  # RBAC rules are `rule` here
from aiplat.kube.lint.objects import selector_matches, tenants
from aiplat.kube.render_cluster import GPU_OPERATOR_NS, SYSTEM_NS
from aiplat.kube.render_tenants import MONITORING_NS
from aiplat.kube.validate import ref
from aiplat.spec.models import RESERVED_NAMESPACES, reserved_namespace

RBAC_GROUP = "rbac.authorization.k8s.io"
DRA_DRIVER_NS = "nvidia-dra-driver-gpu"  # the NVIDIA DRA driver's Helm release namespace
# Kubernetes' own (it reserves kube-*), aiplat's (aiplat-*), those of what the tree renders
# and of the operators it installs: the names the spec refuses as tenants, one list.
SYSTEM_NAMESPACES = RESERVED_NAMESPACES
# Namespaces where no component runs: a fence there breaks nothing.
PODLESS = frozenset({"default", "kube-public", "kube-node-lease"})
# Components that need host namespaces, hostPath or privileged containers.
PRIVILEGED_NAMESPACES = frozenset({"kube-system", SYSTEM_NS, GPU_OPERATOR_NS, DRA_DRIVER_NS,
                                   MONITORING_NS, "node-feature-discovery",
                                   "nvidia-network-operator"})
EVERYONE_GROUPS = frozenset({"system:authenticated", "system:unauthenticated",
                             "system:serviceaccounts"})
ANONYMOUS = "system:anonymous"
# How a ServiceAccount (User) or all of a namespace's (Group) are named as other subjects.
SA_NAME_PREFIX = {"User": "system:serviceaccount:", "Group": "system:serviceaccounts:"}
# What Kubernetes itself grants everyone (bootstrappolicy: cluster-role-bindings).
EVERYONE_DEFAULTS = frozenset({"system:basic-user", "system:discovery",
                               "system:public-info-viewer",
                               "system:service-account-issuer-discovery"})
# What runs pods: Kubernetes' workload controllers, and the JobSet and LeaderWorkerSet the
# tree installs (their controllers make pods from the template, in its namespace).
WORKLOADS = {"": {"pods", "replicationcontrollers"},
             "apps": {"deployments", "daemonsets", "statefulsets", "replicasets"},
             "batch": {"jobs", "cronjobs"},
             "jobset.x-k8s.io": {"jobsets"},
             "leaderworkerset.x-k8s.io": {"leaderworkersets"}}


def is_system_namespace(ns: str) -> bool:
    return reserved_namespace(ns)


@dataclass(frozen=True)
class Subject:
    kind: str
    name: str
    sa_namespace: str | None  # the namespace of a ServiceAccount (any spelling)

    @classmethod
    def of(cls, s: Obj, binding_ns: str) -> Subject:
        kind, nm = str(s.get("kind", "")), str(s.get("name", ""))
        sa_ns: str | None = None
        if kind == "ServiceAccount":
            sa_ns = str(s.get("namespace") or binding_ns)  # the RBAC authorizer's default
        elif nm.startswith(SA_NAME_PREFIX.get(kind, "\0")):
            sa_ns = nm.split(":")[2]  # system:serviceaccount(s):NS[:NAME]
        return cls(kind, nm, sa_ns)

    @property
    def everyone(self) -> bool:
        return (self.kind == "Group" and self.name in EVERYONE_GROUPS) or (
            self.kind == "User" and self.name == ANONYMOUS)

    @property
    def system(self) -> bool:
        if self.sa_namespace is not None:
            return is_system_namespace(self.sa_namespace)
        return self.name.startswith("system:") and not self.everyone

    def __str__(self) -> str:
        if self.kind == "ServiceAccount":
            return f"ServiceAccount {self.sa_namespace}/{self.name}"
        return f"{self.kind} {self.name}"


def allows(rule: Obj, group: str, resource: str, verb: str,
           names: Iterable[str] | None = None) -> bool:
    """Whether ``rule`` lets through a request with ``verb`` on ``group``'s ``resource``
    (``pods``, or ``pods/exec`` for a subresource), matched as Kubernetes' RBAC authorizer
    matches (RuleAllows, ``plugin/pkg/auth/authorizer/rbac``; VerbMatches, APIGroupMatches,
    ResourceMatches, ResourceNameMatches, ``pkg/apis/rbac/v1/evaluation_helpers.go``): ``*``
    or the exact string, case and all; a subresource also by ``*/subresource`` (any
    resource's; there is no ``resource/*``). ``names``: the objects the request names (None:
    any the caller picks). A create of a whole object names none, so a rule that lists
    resourceNames never allows it."""
    sub = resource.partition("/")[2]
    listed = set(rule.get("resourceNames") or [])
    if names is None and verb == "create" and not sub:
        names = [""]
    return bool(
        ({"*", verb} & set(rule.get("verbs") or []))
        and ({"*", group} & set(rule.get("apiGroups") or []))
        and any(r in ("*", resource) or (sub and r == f"*/{sub}")
                for r in rule.get("resources") or [])
        and (not listed or names is None or listed & set(names)))


def _grants(group: str, resources: Iterable[str], verbs: Iterable[str],
            names: Iterable[str] | None = None) -> Callable[[list[Obj]], bool]:
    """Whether some rule allows some of these verbs on some of these resources."""
    pairs = [(r, v) for r in resources for v in verbs]
    return lambda rules: any(allows(rule, group, r, v, names) for rule in rules
                             for r, v in pairs)


def _any_of(*tests: Callable[[list[Obj]], bool]) -> Callable[[list[Obj]], bool]:
    return lambda rules: any(t(rules) for t in tests)


def _all_of(*tests: Callable[[list[Obj]], bool]) -> Callable[[list[Obj]], bool]:
    return lambda rules: all(t(rules) for t in tests)


# Where a binding reaches, and so which powers count: NAMESPACE, anywhere it is bound (its
# own namespace included); SYSTEM, bound in a system namespace or cluster-wide (the
# components' own objects); CLUSTER, cluster-scoped objects, which only a ClusterRoleBinding
# grants (a RoleBinding's rules apply to its namespace's objects alone).
NAMESPACE, SYSTEM, CLUSTER = "namespace", "system", "cluster"


@dataclass(frozen=True)
class Power:
    what: str  # what the role allows, as a finding says it
    scope: str
    held: Callable[[list[Obj]], bool]  # by a role's rules (all of them: some need two)


CERTS = "certificates.k8s.io"
ADMISSION = "admissionregistration.k8s.io"
# The signers whose certificates the API server takes as a client's identity (any name,
# system:masters too), and the name that stands for all of kubernetes.io's (the CSR
# approval check asks for approve on the signer's name, then on "<domain>/*").
CLIENT_SIGNERS = ("kubernetes.io/kube-apiserver-client",
                  "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/*")
# Kubernetes' "RBAC good practices", privilege escalation risks, each one (escalate, bind and
# impersonate, and wildcards, are read before this table), and what a system namespace's
# objects add.
POWERS = (
    Power("creates pods or workloads (run as any ServiceAccount there)", NAMESPACE,
          _any_of(*(_grants(g, r, ["create"]) for g, r in WORKLOADS.items()))),
    Power("rewrites running pods or workload controllers (update/patch: its own image in "
          "place of theirs, run as their ServiceAccount)", NAMESPACE,
          _any_of(*(_grants(g, r, ["update", "patch"]) for g, r in WORKLOADS.items()))),
    Power("execs into running pods", NAMESPACE,
          _any_of(_grants("", ["pods/exec", "pods/attach"], ["create", "get"]),
                  _grants("", ["pods/ephemeralcontainers"], ["update", "patch"]))),
    Power("reads Secrets", NAMESPACE, _grants("", ["secrets"], ["get", "list", "watch"])),
    Power("mints ServiceAccount tokens", NAMESPACE,
          _grants("", ["serviceaccounts/token"], ["create"])),
    Power("writes RBAC objects", NAMESPACE,
          _grants(RBAC_GROUP, ["roles", "rolebindings", "clusterroles",
                               "clusterrolebindings"], ["create", "update", "patch"])),
    Power("relabels Namespaces, a RoleBinding's own too (a Pod Security level that admits "
          "privileged pods, labels other namespaces' NetworkPolicies let in)", NAMESPACE,
          _grants("", ["namespaces"], ["update", "patch"])),
    Power("writes the components' ConfigMaps (CoreDNS's Corefile, kube-proxy's and the "
          "operators' configuration)", SYSTEM,
          _grants("", ["configmaps"], ["create", "update", "patch"])),
    Power("writes Endpoints or EndpointSlices (a system Service's traffic, DNS's or the API "
          "server's, sent to its own address)", SYSTEM,
          _any_of(_grants("", ["endpoints"], ["create", "update", "patch"]),
                  _grants("discovery.k8s.io", ["endpointslices"],
                          ["create", "update", "patch"]))),
    Power("rewrites or deletes Services (kube-dns's made an ExternalName or deleted: its "
          "cluster IP, every pod's DNS server, free for a Service of its own; a webhook's or "
          "an aggregated API's sent elsewhere)", SYSTEM,
          _grants("", ["services"], ["update", "patch", "delete"])),
    Power("writes Secrets (a bootstrap token in kube-system signs in as a joining node; the "
          "components' credentials and certificates)", SYSTEM,
          _grants("", ["secrets"], ["create", "update", "patch"])),
    Power("reaches the kubelet (nodes/proxy)", CLUSTER,
          _grants("", ["nodes/proxy"], ["get", "create"])),
    Power("creates PersistentVolumes (hostPath: a node's filesystem in its pods)", CLUSTER,
          _grants("", ["persistentvolumes"], ["create"])),
    Power("controls admission (webhook configurations or mutating admission policies: "
          "sees every object admitted, Secrets too, and rewrites them)", CLUSTER,
          _grants(ADMISSION, ["mutatingwebhookconfigurations",
                              "validatingwebhookconfigurations", "mutatingadmissionpolicies",
                              "mutatingadmissionpolicybindings"],
                  ["create", "update", "patch"])),
    Power("defines CustomResourceDefinitions (a conversion webhook sees and rewrites every "
          "object of the kind; an operator's schema dropped)", CLUSTER,
          _grants("apiextensions.k8s.io", ["customresourcedefinitions"],
                  ["create", "update", "patch"])),
    Power("registers aggregated APIs (the API server forwards requests, and who sent them, "
          "to its service)", CLUSTER,
          _grants("apiregistration.k8s.io", ["apiservices"], ["create", "update", "patch"])),
    Power("rewrites Nodes (labels and taints that draw system pods to a node it holds, "
          "the addresses the API server reaches the kubelet at)", CLUSTER,
          _any_of(_grants("", ["nodes"], ["create", "update", "patch"]),
                  _grants("", ["nodes/status"], ["update", "patch"]))),
    Power("approves client certificates (a CSR for any name, a system component's or "
          "system:masters', signed)", CLUSTER,
          _all_of(_grants(CERTS, ["certificatesigningrequests/approval"],
                          ["update", "patch"]),
                  _grants(CERTS, ["signers"], ["approve"], CLIENT_SIGNERS))),
    # The controller manager's CSR approver signs a node client certificate for whoever may
    # create certificatesigningrequests/nodeclient (a joining node's bootstrap token); the
    # selfnodeclient one only when the requester already is that node.
    Power("has node client certificates approved automatically (a CSR naming any node, "
          "system:node:NAME, signed: that node's identity, its pods' Secrets and tokens)",
          CLUSTER, _grants(CERTS, ["certificatesigningrequests/nodeclient"], ["create"])),
)


def _rule_powers(rules: list[Obj], scopes: set[str]) -> list[str]:
    """What these rules (one role's) allow that leads to cluster-admin, where a binding
    reaching ``scopes`` grants it."""
    out = []
    for rule in rules:
        verbs = set(rule.get("verbs") or [])
        if all("*" in (rule.get(f) or []) for f in ("verbs", "resources", "apiGroups")):
            return ["allows every verb on every resource"]  # cluster-admin's: every power below
        if "*" in verbs or "*" in set(rule.get("resources") or []):
            out.append("uses a wildcard verb or resource")
        if verbs & {"escalate", "bind", "impersonate"}:
            out.append(f"may {'/'.join(sorted(verbs & {'escalate', 'bind', 'impersonate'}))}")
    out += [p.what for p in POWERS if p.scope in scopes and p.held(rules)]
    return list(dict.fromkeys(out))


def _scopes(binding: Obj) -> set[str]:
    if binding.get("kind") != "RoleBinding":
        return {NAMESPACE, SYSTEM, CLUSTER}
    return {NAMESPACE, SYSTEM} if is_system_namespace(namespace(binding)) else {NAMESPACE}


_FIELDS = ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs")


def _bootstrap_rules(key: tuple[str, str, str]) -> list[Obj]:
    return [{f: list(v) for f, v in zip(_FIELDS, r, strict=True)} for r in ROLES.get(key, ())]


@dataclass
class _ClusterRole:
    """What a cluster holds under one ClusterRole name: Kubernetes' own (its start-up
    reconcile adds back what a copy lacks, labels and selectors too) and every definition the
    tree has (one applied last wins, so each is judged)."""

    rules: list[Obj]
    labels: list[dict[str, str]]  # one set per definition: a selector matching any picks it
    selectors: list[Obj]


def _cluster_roles(ctx: Context) -> dict[str, _ClusterRole]:
    if "system.cluster-roles" not in ctx.cache:
        out = {n: _ClusterRole(_bootstrap_rules(("ClusterRole", "", n)), [dict(labels)],
                               [{"matchLabels": dict(s)} for s in AGGREGATION.get(n, ())])
               for n, labels in LABELS.items()}
        for r in ctx.kind("ClusterRole"):
            own = out.setdefault(name(r), _ClusterRole([], [], []))
            own.rules += r.get("rules") or []
            own.labels.append({**LABELS.get(name(r), {}),
                               **((r.get("metadata") or {}).get("labels") or {})})
            own.selectors += (r.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
        ctx.cache["system.cluster-roles"] = out
    roles: dict[str, _ClusterRole] = ctx.cache["system.cluster-roles"]
    return roles


def _cluster_role_rules(ctx: Context, rname: str) -> list[Obj] | None:
    """A ClusterRole's rules as the aggregation controller leaves them: its own and those of
    every ClusterRole its selectors pick, the tree's and Kubernetes' (view's label puts what
    is aggregated into view into edit, and so into admin), to a fixed point; None for one
    neither the tree nor Kubernetes defines."""
    roles = _cluster_roles(ctx)
    if rname not in roles:
        return None
    seen, todo, rules = {rname}, [rname], []
    while todo:
        role = roles[todo.pop()]
        rules += role.rules
        for other, picked in roles.items():
            if other not in seen and any(selector_matches(s, labels) for s in role.selectors
                                         for labels in picked.labels):
                seen.add(other)
                todo.append(other)
    return rules


def _role_rules(ctx: Context, kind: str, ns: str, rname: str) -> list[Obj] | None:
    """The rules of the role a binding names (every definition of the tree's, Kubernetes'
    own under that name); None when neither the tree nor Kubernetes defines it."""
    if kind == "ClusterRole":
        return _cluster_role_rules(ctx, rname)
    defined = [r for r in ctx.kind(kind) if name(r) == rname and namespace(r) == ns]
    if not defined and (kind, ns, rname) not in ROLES:
        return None
    return [*_bootstrap_rules((kind, ns, rname)), *(x for r in defined
                                                    for x in r.get("rules") or [])]


def powers(ctx: Context, binding: Obj, scopes: set[str] | None = None
           ) -> tuple[str, list[str] | None]:
    """(the role's name, what it allows that leads to cluster-admin where the binding reaches
    ``scopes``, by default where it is); None for a role neither in the tree nor one of
    Kubernetes' own (an operator's the tree does not hold): its powers are unknown."""
    role_ref = binding.get("roleRef") or {}
    kind, rname = str(role_ref.get("kind", "")), str(role_ref.get("name", ""))
    ns = namespace(binding) if kind == "Role" else ""
    rules = _role_rules(ctx, kind, ns, rname)
    label = f"{kind} {rname}"
    return label, None if rules is None else _rule_powers(rules, scopes or _scopes(binding))


UNKNOWN = "a role neither the tree nor Kubernetes defines: its powers are not judged"
UNKNOWN_FIX = ("lint the tree with the manifests that define {role}; keep the binding only if "
               "that role gives no path to cluster-admin")


def _bindings(ctx: Context) -> Iterable[tuple[Obj, Subject]]:
    for b in ctx.kind("RoleBinding") + ctx.kind("ClusterRoleBinding"):
        ns = namespace(b) if b.get("kind") == "RoleBinding" else ""
        for s in b.get("subjects") or []:
            yield b, Subject.of(s, ns)


def component_roles(ctx: Context) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of the roles only system components hold: bound to nobody
    else, and bound to one or named ``system:`` (the prefix Kubernetes reserves for its
    own, like system:node, which the Node authorizer serves). Their powers are the
    platform's, not a tenant's."""
    bound: set[tuple[str, str, str]] = set()
    others: set[tuple[str, str, str]] = set()
    for b, s in _bindings(ctx):
        key = _role_key(b)
        (bound if s.system else others).add(key)
    reserved = {(str(r.get("kind")), namespace(r), name(r))
                for r in ctx.kind("Role") + ctx.kind("ClusterRole")
                if name(r).startswith("system:")}
    return (bound | reserved) - others


def _role_key(binding: Obj) -> tuple[str, str, str]:
    role_ref = binding.get("roleRef") or {}
    kind = str(role_ref.get("kind", ""))
    return kind, namespace(binding) if kind == "Role" else "", str(role_ref.get("name", ""))


@lint_rule("rbac-system-namespace", "no RoleBinding in a system namespace gives a "
           "non-component a path to cluster-admin (a warning for a role whose rules the tree "
           "does not hold)", severities=("error", "warning"))
def rbac_system_namespace(ctx: Context) -> list[Finding]:
    out = []
    for b, s in _bindings(ctx):
        ns = namespace(b)
        # One that names no namespace is judged where the worst context puts it, once, by
        # rbac-namespace-unset; not again in the namespace the reader guessed.
        if b.get("kind") != "RoleBinding" or not is_system_namespace(ns) or s.system \
                or s.everyone or ctx.namespace_unset(b):
            continue
        role, allowed = powers(ctx, b)
        if allowed is None:
            out.append(finding(
                "warning", "rbac-system-namespace", ref(b),
                f"gives {s}, which is no system component, {role} in system namespace {ns}, "
                f"{UNKNOWN}", UNKNOWN_FIX.format(role=role)))
        elif allowed:
            out.append(finding(
                "error", "rbac-system-namespace", ref(b),
                f"gives {s}, which is no system component, {role} in system namespace {ns}, "
                f"which {'; '.join(allowed)}: a path to cluster-admin (it can act as any "
                f"ServiceAccount of {ns})",
                f"remove {s} from the binding; grant tenants roles in their own namespace, "
                "and cluster administrators cluster-admin by a ClusterRoleBinding that says "
                "so"))
    return out


NO_NAMESPACE = ("namespace not set: `kubectl apply` puts it in the kubectl context's "
                "namespace, whichever that is when it is applied")


@lint_rule("rbac-namespace-unset", "a Role or RoleBinding says its namespace (else it lands in "
           "the kubectl context's, kube-system perhaps; an error when there it would give a "
           "non-component a path to cluster-admin)", severities=("error", "warning"))
def rbac_namespace_unset(ctx: Context) -> list[Finding]:
    out = []
    fix = "set metadata.namespace (or the kustomization's namespace)"
    for b in ctx.kind("RoleBinding"):
        if not ctx.namespace_unset(b):
            continue
        # Judged as if in kube-system: a subject without a namespace is the binding's own
        # ServiceAccount (a component there, the namespace's own elsewhere).
        subjects = [Subject.of(s, "") for s in b.get("subjects") or []]
        risky = [s for s in subjects if not s.system and not s.everyone and s.sa_namespace != ""]
        role, allowed = powers(ctx, b, {NAMESPACE, SYSTEM})
        if risky and allowed:
            who = ", ".join(str(s) for s in risky)
            out.append(finding(
                "error", "rbac-namespace-unset", _unplaced(b),
                f"{NO_NAMESPACE}; in kube-system it gives {who} {role}, which "
                f"{'; '.join(allowed)}: a path to cluster-admin", fix))
        else:
            out.append(finding("warning", "rbac-namespace-unset", _unplaced(b), NO_NAMESPACE,
                               fix))
    out += [finding("warning", "rbac-namespace-unset", _unplaced(r), NO_NAMESPACE, fix)
            for r in ctx.kind("Role") if ctx.namespace_unset(r)]
    return out


def _unplaced(o: Obj) -> str:
    """``Kind/name``: the object as written, not the namespace the reader guessed for it."""
    return ref({**o, "metadata": {k: v for k, v in (o.get("metadata") or {}).items()
                                  if k != "namespace"}})


def _tenant_subjects(ctx: Context, tenants: set[str]) -> set[tuple[str, str]]:
    """(kind, name) of the users and groups bound in a tenant namespace."""
    return {(s.kind, s.name) for b, s in _bindings(ctx)
            if b.get("kind") == "RoleBinding" and namespace(b) in tenants
            and s.sa_namespace is None and not s.system and not s.everyone}


@lint_rule("rbac-cluster-grant", "no ClusterRoleBinding gives a tenant's subject a path "
           "to cluster-admin (a warning for a subject the tree cannot place)",
           severities=("error", "warning"))
def rbac_cluster_grant(ctx: Context) -> list[Finding]:
    tenant_ns = tenants(ctx)  # a tenant label or a LocalQueue, whoever made the tree
    people = _tenant_subjects(ctx, tenant_ns)
    out = []
    for b, s in _bindings(ctx):
        if b.get("kind") != "ClusterRoleBinding" or s.everyone or s.system:
            continue
        role, allowed = powers(ctx, b)
        if allowed is None:
            out.append(finding(
                "warning", "rbac-cluster-grant", ref(b),
                f"gives {s} {role} in every namespace, {UNKNOWN}",
                UNKNOWN_FIX.format(role=role)))
            continue
        if not allowed:
            continue
        if (s.kind, s.name) in people or s.sa_namespace in tenant_ns:
            out.append(finding(
                "error", "rbac-cluster-grant", ref(b),
                f"gives tenant subject {s} {role} in every namespace, which "
                f"{'; '.join(allowed)}: kube-system included, a path to cluster-admin",
                f"remove {s} from the ClusterRoleBinding; bind the role in the tenant's own "
                "namespace with a RoleBinding"))
        else:
            # No tenant namespace binds it: an administrators' group, an operator's account,
            # or a tenant's group the tree does not show; the tree cannot tell which.
            out.append(finding(
                "warning", "rbac-cluster-grant", ref(b),
                f"gives {s} {role} in every namespace, which {'; '.join(allowed)}: "
                "cluster-admin or a path to it; the tree cannot tell whether it is the "
                "platform administrators' or a tenant's",
                f"keep it only if {s} is the administrators' (or a system component's); "
                "otherwise remove it and bind a narrower role in a namespace"))
    return out


def _everyone_text(s: Subject) -> str:
    if s.name == "system:serviceaccounts":
        return "every ServiceAccount of every namespace"
    if s.name in ("system:unauthenticated", ANONYMOUS):
        return "anonymous requests"
    return "every authenticated identity (each tenant's ServiceAccounts included)"


@lint_rule("rbac-everyone", "no binding gives everyone a role (an error with a path to "
           "cluster-admin)", severities=("error", "warning"))
def rbac_everyone(ctx: Context) -> list[Finding]:
    out = []
    for b, s in _bindings(ctx):
        if not s.everyone:
            continue
        role, allowed = powers(ctx, b)
        where = f"in namespace {namespace(b)}" if b.get("kind") == "RoleBinding" \
            else "in every namespace"
        fix = f"bind named groups instead of {s.name}"
        if allowed:
            out.append(finding(
                "error", "rbac-everyone", ref(b),
                f"gives {_everyone_text(s)} ({s.name}) {role} {where}, which "
                f"{'; '.join(allowed)}: anyone who reaches the API server gets it", fix))
        elif namespace(b) != "kube-public" and \
                str((b.get("roleRef") or {}).get("name")) not in EVERYONE_DEFAULTS:
            out.append(finding(
                "warning", "rbac-everyone", ref(b),
                f"gives {_everyone_text(s)} ({s.name}) {role} {where}: every tenant sees "
                "what it allows", fix))
    return out


def _isolated(spec: Obj) -> list[str]:
    """The directions a NetworkPolicy isolates its pods in without allowing all traffic."""
    types = spec.get("policyTypes") or (["Ingress", "Egress"] if "egress" in spec
                                        else ["Ingress"])
    out = []
    for t in types:
        rules = spec.get(t.lower()) or []
        if not any(r == {} for r in rules):
            out.append(t)
    return out


@lint_rule("system-namespace-policy", "no tenant fence (NetworkPolicy, Pod Security "
           "level, tenant label) on a system namespace")
def system_namespace_policy(ctx: Context) -> list[Finding]:
    out = []
    for np in ctx.kind("NetworkPolicy"):
        ns = namespace(np)
        spec = np.get("spec") or {}
        if not is_system_namespace(ns) or ns in PODLESS or spec.get("podSelector"):
            continue
        isolated = _isolated(spec)
        if isolated:
            out.append(finding(
                "error", "system-namespace-policy", ref(np),
                f"isolates every pod of system namespace {ns} ({'/'.join(isolated)}): its "
                "components (DNS, webhooks, controllers, device plugins) lose the traffic "
                "the policy does not list",
                f"delete it: a tenant's fence belongs in the tenant's namespace, not {ns}"))
    for n in ctx.kind("Namespace"):
        ns = name(n)
        labels = (n.get("metadata") or {}).get("labels") or {}
        level = labels.get("pod-security.kubernetes.io/enforce", "privileged")
        if level in ("baseline", "restricted") and (
                ns in PRIVILEGED_NAMESPACES or (ns.startswith("kube-") and ns not in PODLESS)):
            out.append(finding(
                "error", "system-namespace-policy", ref(n),
                f"enforces Pod Security {level!r} on system namespace {ns}: its components "
                "(kube-proxy, CNI, device plugins, node agents) need host namespaces or "
                "hostPath and are refused when they restart",
                "drop the pod-security.kubernetes.io/enforce label (or set it to "
                "privileged)"))
        if TENANT_LABEL in labels and is_system_namespace(ns):
            out.append(finding(
                "error", "system-namespace-policy", ref(n),
                f"makes system namespace {ns} a tenant's ({TENANT_LABEL}={labels[TENANT_LABEL]}):"
                " the tenant's roles, quota and policies land on system components",
                "rename the tenant (a tenant's name is its namespace's)"))
    return out


_DANGEROUS_VERBS = {"escalate", "bind", "impersonate"}


_SENSITIVE = {"nodes/proxy", "serviceaccounts/token", "certificatesigningrequests"}


@lint_rule("rbac-escalation",
           "tenant roles hold no wildcard, escalate/bind/impersonate, RBAC write, node proxy or "
           "token minting; Secrets only where the spec grants them")
def rbac_escalation(ctx: Context) -> list[Finding]:
    out = []
    allowed = set(ctx.inventory.secrets_allowed)
    components = component_roles(ctx)
    for role in ctx.kind("Role") + ctx.kind("ClusterRole"):
        ns = namespace(role)
        if (str(role.get("kind")), ns, name(role)) in components:
            continue  # only Kubernetes' or an operator's own accounts hold it
        for rule in role.get("rules") or []:
            verbs = set(rule.get("verbs") or [])
            resources = set(rule.get("resources") or [])
            groups = set(rule.get("apiGroups") or [])
            problems = []
            if "*" in verbs | resources | groups:
                problems.append("uses a wildcard")
            if verbs & _DANGEROUS_VERBS:
                problems.append(f"grants {sorted(verbs & _DANGEROUS_VERBS)}")
            write = verbs - {"get", "list", "watch"}
            rbac = {"roles", "rolebindings", "clusterroles", "clusterrolebindings"}
            if write and resources & rbac:
                problems.append("may write RBAC objects")
            sensitive = resources & _SENSITIVE
            if sensitive:
                problems.append(f"reaches {sorted(sensitive)}")
            if "secrets" in resources and ns not in allowed:
                problems.append("reads Secrets though the spec does not grant it")
            for p in problems:
                out.append(finding("error", "rbac-escalation", ref(role), p,
                                   "list explicit verbs and resources; grant Secrets with "
                                   "secretsAccess: true in the spec"))
    return out
