"""Kueue's TAS test data (``tests/data/kueue_tas``: its table, dumped by its own harness,
and recorded random scenarios) as ``aiplat.kueue.tas`` inputs: the JSON uses Kueue's field
names (v1beta2 ``PodSetTopologyRequest``, core/v1 tolerations, taints, node affinity)."""

from __future__ import annotations

from typing import Any

from aiplat.kueue import tas


def tolerations(items: list[dict[str, Any]] | None) -> tuple[tas.Toleration, ...]:
    return tuple(tas.Toleration(t.get("key", ""), t.get("operator", ""), t.get("value", ""),
                                t.get("effect", "")) for t in items or [])


def affinity(aff: dict[str, Any] | None) -> tuple[tuple[tas.Requirement, ...], ...] | None:
    required = (aff or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    terms = []
    for term in required.get("nodeSelectorTerms") or []:
        reqs = [tas.Requirement(e["key"], e["operator"], tuple(e.get("values") or []))
                for e in term.get("matchExpressions") or []]
        reqs += [tas.Requirement(e["key"], e["operator"], tuple(e.get("values") or []), True)
                 for e in term.get("matchFields") or []]
        terms.append(tuple(reqs))
    return tuple(terms)


def topology(tr: dict[str, Any] | None, group: str | None) -> tas.TopologyRequest | None:
    """The request; the harness groups by its own ``podSetGroupName`` field."""
    if tr is None:
        return None if group is None else tas.TopologyRequest(group=group)
    layers = [tas.SliceLayer(c.get("topology", ""), c.get("size", 0))
              for c in tr.get("podsetSliceRequiredTopologyConstraints") or []]
    if not layers and tr.get("podSetSliceRequiredTopology") is not None:
        layers = [tas.SliceLayer(tr["podSetSliceRequiredTopology"],
                                 tr.get("podSetSliceSize") or 0)]
    return tas.TopologyRequest(tr.get("required"), tr.get("preferred"),
                               bool(tr.get("unconstrained")), tuple(layers), group)


def podset(ps: dict[str, Any]) -> tas.PodSetRequest:
    request = topology(ps.get("topologyRequest"), ps.get("podSetGroupName"))
    return tas.PodSetRequest(
        ps["name"], ps["count"], ps.get("requests") or {}, request,
        implied=ps.get("topologyRequest") is None,  # the harness: no request is implied TAS
        node_selector=ps.get("nodeSelector") or {},
        tolerations=tolerations(ps.get("tolerations")),
        affinity=affinity(ps.get("nodeAffinity")))


def tas_input(case: dict[str, Any]) -> tas.TasInput:
    levels = tuple(case["levels"] or ())
    flavor = tas.TasFlavor("tas-flavor", "default", levels, case.get("nodeLabels") or {},
                           tolerations(case.get("flavorTolerations")))
    nodes = tuple(tas.Node(n["name"], n["labels"] or {}, n["allocatable"],
                           tuple(tas.Taint(t["key"], t.get("effect", ""), t.get("value", ""))
                                 for t in n.get("taints") or []),
                           n["ready"], n.get("unschedulable", False))
                  for n in case["nodes"] or [])
    pods = tuple(tas.PlacedPod(p["nodeName"], p["requests"], p["phase"],
                               p.get("annotations") or {}) for p in case.get("pods") or [])
    # the harness: a sibling flavor's usage by hostname, and this flavor's own usage
    admitted = tuple(tas.AdmittedDomain("sibling", (tas.HOSTNAME,), tuple(u["values"]),
                                        u["count"], u["requests"])
                     for u in case.get("priorFlavorUsage") or [])
    admitted += tuple(tas.AdmittedDomain("tas-flavor", levels, tuple(u["values"]), u["count"],
                                         u["requests"])
                      for u in case.get("priorOwnUsage") or [])
    return tas.TasInput(flavor, nodes, pods, admitted)
