"""Lint rules for what selects pods: tenant isolation and selectors that match nothing.
Each class, with its page at night and the rule's source:

  netpol-default-deny  a tenant namespace (one with a LocalQueue or an aiplat.io/tenant
                       label) where no NetworkPolicy selects every pod for Ingress: any pod
                       in the cluster reaches its model servers and training ranks (a
                       warning when only egress is open). Source: Kubernetes NetworkPolicy
                       semantics (pods are non-isolated until a policy selects them,
                       networking/v1 NetworkPolicySpec.policyTypes).
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
                       is) are not flagged: their labels exist in the tree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiplat.kube.lint import Context, Finding, name, namespace, selector_matches
from aiplat.kube.lint.rules.admission import _templates
from aiplat.kube.validate import ref

Obj = dict[str, Any]
TENANT_LABEL = "aiplat.io/tenant"


def _tenants(ctx: Context) -> set[str]:
    labelled = {name(n) for n in ctx.kind("Namespace")
                if TENANT_LABEL in ((n.get("metadata") or {}).get("labels") or {})}
    return labelled | {namespace(lq) for lq in ctx.kind("LocalQueue")}


def _isolates(ctx: Context, ns: str, direction: str) -> bool:
    return any(namespace(p) == ns and (p.get("spec") or {}).get("podSelector") == {}
               and direction in ((p.get("spec") or {}).get("policyTypes") or ["Ingress"])
               for p in ctx.kind("NetworkPolicy"))


def netpol_default_deny(ctx: Context) -> list[Finding]:
    out = []
    for ns in sorted(_tenants(ctx)):
        if not _isolates(ctx, ns, "Ingress"):
            out.append(Finding(
                "error", "netpol-default-deny", f"Namespace/{ns}",
                "no NetworkPolicy selects all its pods for Ingress: every pod of every tenant "
                "can reach its servers, ranks and metrics",
                "add a default-deny NetworkPolicy (podSelector: {}, policyTypes: [Ingress, "
                "Egress]) and allow what is needed"))
        elif not _isolates(ctx, ns, "Egress"):
            out.append(Finding(
                "warning", "netpol-default-deny", f"Namespace/{ns}",
                "ingress is fenced but egress is open: its pods can reach any address "
                "(other tenants, the internet)", "add Egress to the default-deny policy's "
                "policyTypes and allow DNS and the model store"))
    return out


def _pod_labels(ctx: Context) -> list[tuple[str, dict[str, str]]]:
    out = []
    for o in ctx.objects:
        if o.get("kind") == "Pod":
            out.append((namespace(o), dict((o.get("metadata") or {}).get("labels") or {})))
        for t in _templates(o):
            out.append((namespace(o), dict((t.get("metadata") or {}).get("labels") or {})))
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


def selector_matches_pods(ctx: Context) -> list[Finding]:
    pods = _pod_labels(ctx)
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
            why = {"Service": "it gets no endpoints: connections to it are refused",
                   "InferencePool": "the gateway has no endpoint to route to (503)",
                   "PodDisruptionBudget": "it protects nothing: a drain evicts every replica "
                                          "at once",
                   "NetworkPolicy": "no pod carries these labels: the pods it should open "
                                    "stay fenced"}[kind]
            # A NetworkPolicy that opens nothing breaks nothing now; a typo in it would, later.
            severity = "warning" if kind == "NetworkPolicy" else "error"
            out.append(Finding(severity, "selector-matches", ref(o),
                               f"its selector {sel} matches no pod in namespace {ns}: {why}",
                               "make the selector match the workload's pod template labels "
                               "(app.kubernetes.io/name)"))
    return out


SELECTOR_RULES: tuple[Callable[[Context], list[Finding]], ...] = (
    netpol_default_deny, selector_matches_pods,
)
