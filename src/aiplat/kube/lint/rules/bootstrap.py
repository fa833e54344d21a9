"""Lint rule for Kubernetes' own RBAC redefined by a tree. Rule, by name:

  rbac-bootstrap  a Role, ClusterRole, RoleBinding or ClusterRoleBinding named as one of
                  Kubernetes' bootstrap policy (``aiplat.kube.bootstrap_rbac``:
                  system:basic-user, system:discovery, view, cluster-admin, the
                  controllers' ...) that allows more than Kubernetes' (a rule it does not
                  cover, an aggregation selector it does not have) or binds more subjects
                  or another role

Why an error: the API server reconciles its bootstrap policy at every start by adding what is
missing and keeping what is extra (``pkg/registry/rbac/rest/storage_rbac.go``,
RemoveExtraPermissions and RemoveExtraSubjects unset), so a tree's wider system:basic-user
stays, and everyone Kubernetes binds to it (system:authenticated) holds it. A copy, or an
older version's subset, changes nothing and is clean; a ``system:`` name Kubernetes does not
define (CoreDNS's system:coredns, metrics-server's system:aggregated-metrics-reader) is a
role like any other, judged by the system rules.

A rule is covered as Kubernetes' RBAC escalation check covers one (``ruleCovers``,
``pkg/registry/rbac/validation/policy_comparator.go``): every (group, resource, verb, name)
it allows is allowed by some bootstrap rule, ``*`` only by ``*``; a non-resource URL by the
same URL or a ``prefix*``.
"""

from __future__ import annotations

from aiplat.findings import Finding
from aiplat.kube.bootstrap_rbac import AGGREGATION, BINDINGS, ROLES
from aiplat.kube.lint.base import Context, Obj, finding, name, namespace
from aiplat.kube.lint.base import rule as lint_rule
from aiplat.kube.validate import ref

FIELDS = ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs")
FIX = ("remove it from the tree: the API server creates and reconciles Kubernetes' own RBAC; "
       "grant more with a role and binding of your own")
SHOWN = 4  # uncovered permissions named in a finding


def _parsed(rule: tuple[tuple[str, ...], ...]) -> dict[str, list[str]]:
    return {f: list(values) for f, values in zip(FIELDS, rule, strict=True)}


def _has(values: list[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def _resource(values: list[str], wanted: str) -> bool:
    sub = wanted.partition("/")[2]
    return _has(values, wanted) or bool(sub and f"*/{sub}" in values)


def _url(values: list[str], wanted: str) -> bool:
    return any(v == wanted or (v.endswith("*") and wanted.startswith(v[:-1])) for v in values)


def _covered(owner: list[dict[str, list[str]]], rule: Obj) -> list[str]:
    """The permissions ``rule`` allows that no ``owner`` rule does, as a finding names them."""
    missing = []
    verbs = [str(v) for v in rule.get("verbs") or []]
    for url in rule.get("nonResourceURLs") or []:
        for v in verbs:
            if not any(_has(o["verbs"], v) and _url(o["nonResourceURLs"], str(url))
                       for o in owner):
                missing.append(f"{v!r} on URL {url!r}")
    names: list[str | None] = [str(n) for n in rule.get("resourceNames") or []] or [None]
    for g in rule.get("apiGroups") or []:
        for r in rule.get("resources") or []:
            for v in verbs:
                for n in names:
                    if not any(_has(o["verbs"], v) and _has(o["apiGroups"], str(g))
                               and _resource(o["resources"], str(r))
                               and (not o["resourceNames"] or n in o["resourceNames"])
                               for o in owner):
                        on = f" named {n!r}" if n is not None else ""
                        missing.append(f"{v!r} on {r!r}{on} in group {g!r}")
    return missing


def _role_findings(o: Obj, key: tuple[str, str, str]) -> list[Finding]:
    owner = [_parsed(t) for t in ROLES[key]]
    extra = [m for r in o.get("rules") or [] if isinstance(r, dict) for m in _covered(owner, r)]
    known = AGGREGATION.get(key[2], ()) if key[0] == "ClusterRole" else ()
    selectors = (o.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
    extra += [f"aggregates ClusterRoles selected by {s!r}" for s in selectors
              if not (isinstance(s, dict) and set(s) <= {"matchLabels"}
                      and s.get("matchLabels") in known)]
    if not extra:
        return []
    more = f" and {len(extra) - SHOWN} more" if len(extra) > SHOWN else ""
    return [finding(
        "error", "rbac-bootstrap", ref(o),
        f"redefines Kubernetes' bootstrap {key[0]} {key[2]} with more than Kubernetes gives "
        f"it ({', '.join(extra[:SHOWN])}{more}): the API server's start-up reconcile adds "
        "what is missing and keeps the rest, so everyone Kubernetes binds to it gets it",
        FIX)]


def _binding_findings(o: Obj, key: tuple[str, str, str]) -> list[Finding]:
    kind, role, listed = BINDINGS[key]
    # A ServiceAccount subject without a namespace is the RoleBinding's (the authorizer's).
    subjects = {(k, n, ns or (key[1] if k == "ServiceAccount" else "")) for k, n, ns in listed}
    role_ref = o.get("roleRef") or {}
    extra = []
    if (role_ref.get("kind"), role_ref.get("name")) != (kind, role):
        extra.append(f"binds {role_ref.get('kind')} {role_ref.get('name')}, not {kind} "
                     f"{role}")
    for s in o.get("subjects") or []:
        if not isinstance(s, dict):
            continue
        sa_ns = str(s.get("namespace") or (key[1] if s.get("kind") == "ServiceAccount" else ""))
        if (str(s.get("kind")), str(s.get("name")), sa_ns) not in subjects:
            extra.append(f"adds {s.get('kind')} {s.get('name')}")
    if not extra:
        return []
    return [finding(
        "error", "rbac-bootstrap", ref(o),
        f"redefines Kubernetes' bootstrap {key[0]} {key[2]} ({'; '.join(extra)}): the API "
        "server's start-up reconcile keeps extra subjects, so they hold the role for good",
        FIX)]


@lint_rule("rbac-bootstrap", "no tree redefines Kubernetes' bootstrap RBAC (system:basic-user, "
           "view, ...) with more rules or subjects than Kubernetes' own")
def rbac_bootstrap(ctx: Context) -> list[Finding]:
    out = []
    for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"):
        for o in ctx.kind(kind):
            key = (kind, namespace(o) if kind in ("Role", "RoleBinding") else "", name(o))
            if key in ROLES:
                out += _role_findings(o, key)
            elif key in BINDINGS:
                out += _binding_findings(o, key)
    return out
