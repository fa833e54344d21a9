"""Lint rules for what selects pods: tenant isolation, what a fence must still let through,
and selectors that match nothing. Each class, with its page at night and the rule's source:

  netpol-default-deny  a tenant namespace (one with a LocalQueue or an aiplat.io/tenant
                       label) where no NetworkPolicy selects every pod for Ingress (or one
                       that does lets everything in, ingress: [{}]): any pod in the cluster
                       reaches its model servers and training ranks. Site policy: an error
                       for an aiplat tenant (the spec asks for the fence), else a warning;
                       a warning when only egress is open. Source: Kubernetes NetworkPolicy
                       semantics (pods are non-isolated until a policy selects them,
                       networking/v1 NetworkPolicySpec.policyTypes).
  netpol-dns           a namespace whose policies deny egress and allow nothing on port 53
                       to another namespace or an address block: every name lookup fails.
  netpol-model-store   ... and allow no ipBlock holding the model store's segment (the
                       inventory's modelStoreCIDRs): model pulls time out.
  selector-matches     a Service, InferencePool or PodDisruptionBudget whose selector matches
                       no pod template of its namespace (no endpoints: requests fail with 503
                       / no healthy upstream; a PDB protecting nothing lets a drain take every
                       replica at once), or, a warning, a NetworkPolicy whose podSelector asks
                       for labels no pod of the tree carries (a typo: the pods it should open
                       stay fenced; with no such pods yet it opens nothing). Source:
                       EndpointSlice controller (pkg/controller/endpointslice), Gateway API
                       inference extension InferencePool spec.selector, policy/v1
                       PodDisruptionBudget. Templated allow-policies
                       for pods a tenant may not run yet (allow-gateway where no serving pod
                       is) are not flagged: their labels exist in the tree. A tree with
                       custom resources aiplat has no schema for (a RayCluster, KubeRay's
                       SandboxTemplate) may have pods their operators make: a selector that
                       matches no pod aiplat sees is then not judged, and one note says so.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from aiplat.findings import Finding, Severity
from aiplat.kube.lint.base import Context, Obj, finding, namespace, rule
from aiplat.kube.lint.objects import aiplat_tenants, pod_templates, selector_matches, tenants
from aiplat.kube.shape import schema_known
from aiplat.kube.validate import ref


def _allows_all(rule: Obj, peers: str) -> bool:
    """A rule with no peers and no ports (``{}``, as in ``egress: [{}]``) allows everything."""
    return not rule.get(peers) and not rule.get("ports")


def _isolates(ctx: Context, ns: str, direction: str) -> bool:
    """Some policy selects all the namespace's pods for ``direction`` and none of those lets
    everything in (``ingress: [{}]``) or out (``egress: [{}]``)."""
    key, peers = ("ingress", "from") if direction == "Ingress" else ("egress", "to")
    whole = [spec for p in ctx.kind("NetworkPolicy") if namespace(p) == ns
             for spec in [p.get("spec") or {}] if spec.get("podSelector") == {}
             and direction in (spec.get("policyTypes") or ["Ingress"])]
    return bool(whole) and not any(_allows_all(r, peers) for spec in whole
                                   for r in spec.get(key) or [])


@rule("netpol-default-deny", "a tenant namespace fences its pods (ingress, then egress)",
      severities=("error", "warning"))
def netpol_default_deny(ctx: Context) -> list[Finding]:
    out = []
    asked = aiplat_tenants(ctx)
    for ns in sorted(tenants(ctx)):
        # Site policy: an error only where the spec asked for the fence (an aiplat tenant).
        severity: Severity = "error" if ns in asked else "warning"
        if not _isolates(ctx, ns, "Ingress"):
            out.append(finding(
                severity, "netpol-default-deny", f"Namespace/{ns}",
                "no NetworkPolicy selects all its pods for Ingress (or one lets everything "
                "in): every pod of every tenant can reach its servers, ranks and metrics",
                "add a default-deny NetworkPolicy (podSelector: {}, policyTypes: [Ingress, "
                "Egress]) and allow what is needed"))
        elif not _isolates(ctx, ns, "Egress"):
            out.append(finding(
                "warning", "netpol-default-deny", f"Namespace/{ns}",
                "ingress is fenced but egress is open: its pods can reach any address "
                "(other tenants, the internet)", "add Egress to the default-deny policy's "
                "policyTypes and allow DNS and the model store"))
    return out


# What the LeaderWorkerSet controller labels every pod of a set with (lws v0.9.0,
# api/leaderworkerset/v1: SetNameLabelKey): Services select leaders by it.
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"


def _pod_labels(ctx: Context) -> list[tuple[str, dict[str, str]]]:
    """Each pod's labels as the cluster will have them: the template's, and for a
    LeaderWorkerSet's pods the set's name, which its controller adds."""
    out = []
    for o in ctx.objects:
        if o.get("kind") == "Pod":
            out.append((namespace(o), dict((o.get("metadata") or {}).get("labels") or {})))
        added = ({LWS_NAME_LABEL: str((o.get("metadata") or {}).get("name", ""))}
                 if o.get("kind") == "LeaderWorkerSet" else {})
        for t in pod_templates(o):
            out.append((namespace(o),
                        {**dict((t.get("metadata") or {}).get("labels") or {}), **added}))
    return out


def _selector(o: Obj) -> Obj | None:
    """The object's pod selector as a LabelSelector (Service and early InferencePools use a
    plain map)."""
    spec = o.get("spec") or {}
    kind = o.get("kind")
    if kind == "NetworkPolicy":
        return spec.get("podSelector")
    sel = spec.get("selector")
    if not isinstance(sel, dict):
        return None
    if kind == "Service" or not ({"matchLabels", "matchExpressions"} & set(sel)):
        return {"matchLabels": sel}
    return sel


@rule("selector-matches", "Services, InferencePools, PDBs and NetworkPolicies select "
      "pods of the tree", severities=("error", "warning", "info"))
def selector_matches_pods(ctx: Context) -> list[Finding]:
    pods = _pod_labels(ctx)
    opaque = sorted({f"{o.get('apiVersion')} {o.get('kind')}" for o in ctx.objects
                     if not schema_known(o)})
    unjudged = []
    out = []
    for kind in ("Service", "InferencePool", "PodDisruptionBudget", "NetworkPolicy"):
        for o in ctx.kind(kind):
            sel = _selector(o)
            if not sel:  # {} selects all pods; a Service without selector has manual endpoints
                continue
            ns = namespace(o)
            if kind != "NetworkPolicy" and not any(n == ns for n, _ in pods):
                continue  # no pods of this namespace in the tree: nothing to compare with
            if any(n == ns and selector_matches(sel, labels) for n, labels in pods):
                continue
            if kind == "NetworkPolicy" and any(selector_matches(sel, labels)
                                               for _, labels in pods):
                continue  # a policy ready for pods this tenant does not run yet
            if opaque:  # an operator may make the pods it selects: unknown
                unjudged.append(ref(o))
                continue
            why = {"Service": "it gets no endpoints: connections to it are refused",
                   "InferencePool": "the gateway has no endpoint to route to (503)",
                   "PodDisruptionBudget": "it protects nothing: a drain evicts every replica "
                                          "at once",
                   "NetworkPolicy": "no pod carries these labels: the pods it should open "
                                    "stay fenced"}[kind]
            # A NetworkPolicy that opens nothing breaks nothing now; a typo in it would, later.
            severity: Severity = "warning" if kind == "NetworkPolicy" else "error"
            out.append(finding(severity, "selector-matches", ref(o),
                               f"its selector {sel} matches no pod in namespace {ns}: {why}",
                               "make the selector match the workload's pod template labels "
                               "(app.kubernetes.io/name)"))
    if unjudged:
        out.append(finding("info", "selector-matches", ", ".join(unjudged[:3]) + (
            f" and {len(unjudged) - 3} more" if len(unjudged) > 3 else ""),
            "selectors not judged (unknown): they match no pod aiplat sees, and the tree has "
            f"custom resources whose operators may make pods ({', '.join(opaque[:4])}"
            f"{' ...' if len(opaque) > 4 else ''})", "compare with the running pods: "
            "`kubectl get pods -l KEY=VALUE`"))
    return out


def _egress_rules(ctx: Context, ns: str) -> tuple[bool, list[Obj]]:
    deny, rules = False, list[Obj]()
    for np in ctx.kind("NetworkPolicy"):
        if namespace(np) != ns:
            continue
        spec = np.get("spec") or {}
        if "Egress" in (spec.get("policyTypes") or []):
            deny = True
            rules += spec.get("egress") or []
    return deny, rules


def _rule_allows_port(rule: Obj, port: int) -> bool:
    ports = rule.get("ports")
    return not ports or any(p.get("port") in (port, None) for p in ports)


@rule("netpol-dns", "namespaces with default-deny egress can still reach DNS")
def netpol_dns(ctx: Context) -> list[Finding]:
    out = []
    for ns in sorted({namespace(n) for n in ctx.kind("NetworkPolicy")}):
        deny, rules = _egress_rules(ctx, ns)
        if deny and not any(_rule_allows_port(r, 53) and (not r.get("to") or any(
                "namespaceSelector" in t or "ipBlock" in t for t in r["to"]))
                for r in rules):
            out.append(finding("error", "netpol-dns", f"Namespace/{ns}",
                               "egress is denied and no policy allows DNS (port 53 to "
                               "kube-system): every name lookup fails",
                               "add an egress rule to kube-dns pods in kube-system on UDP/TCP "
                               "53"))
    return out


def _network(cidr: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """An ipBlock's network; None for one the API server refuses (it allows nothing)."""
    try:
        return ipaddress.ip_network(str(cidr), strict=False) if cidr else None
    except ValueError:
        return None


@rule("netpol-model-store",
      "namespaces with default-deny egress can still reach the model store")
def netpol_model_store(ctx: Context) -> list[Finding]:
    cidrs = [ipaddress.ip_network(c) for c in ctx.inventory.model_store_cidrs]
    if not cidrs:
        return []
    out = []
    for ns in sorted({namespace(n) for n in ctx.kind("NetworkPolicy")}):
        deny, rules = _egress_rules(ctx, ns)
        if not deny:
            continue
        reached = set()
        for r in rules:
            if not r.get("to"):
                reached |= set(cidrs)  # no peers: every destination
            for t in r.get("to") or []:
                net = _network((t.get("ipBlock") or {}).get("cidr"))
                if net is not None:
                    reached |= {c for c in cidrs if c.version == net.version
                                and c.subnet_of(net)}  # type: ignore[arg-type]
        missing = [str(c) for c in cidrs if c not in reached]
        if missing:
            out.append(finding("error", "netpol-model-store", f"Namespace/{ns}",
                               f"egress is denied and nothing allows the model store "
                               f"({', '.join(missing)}): model pulls time out",
                               "add an egress rule with ipBlock for the storage segment"))
    return out
