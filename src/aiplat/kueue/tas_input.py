"""A cluster's objects, as ``kubectl get -o yaml|json`` prints them (plain dicts) -> the
inputs of Kueue's topology-aware scheduling (:mod:`aiplat.kueue.tas`).

Read, as Kueue v0.19.2's TAS cache and flavor assigner read them:

- ``Topology`` (``kueue.x-k8s.io/v1beta2`` or ``v1beta1``; v0.19 serves no other):
  ``spec.levels[].nodeLabel``, top to bottom, as its CRD admits them (1 to 16, unique, the
  hostname only last);
- ``ResourceFlavor`` with ``spec.topologyName``: a TAS flavor (``nodeLabels``,
  ``tolerations``); one whose Topology is missing keeps its ClusterQueues inactive
  (``TasCluster.missing``, Kueue's message);
- ``Node``: labels, ``status.allocatable``, ``spec.taints``, the ``Ready`` condition,
  ``spec.unschedulable``; ``Pod``: ``spec.nodeName``, its requests
  (:func:`aiplat.kueue.podrequests.pod_requests`), ``status.phase``, annotations;
- ``Workload``: ``spec.podSets[].topologyRequest`` (v1beta2's
  ``podsetSliceRequiredTopologyConstraints`` or the one-layer ``podSetSliceRequiredTopology``
  and ``podSetSliceSize``, as ``PodSetSliceRequiredTopologyConstraints`` unifies them), the
  template's requests, ``nodeSelector``, tolerations and required node affinity; an
  admitted one's (``QuotaReserved`` True, not ``Finished``) ``podSetAssignments[]
  .topologyAssignment`` is TAS usage (:func:`aiplat.kueue.tas.admitted_domains`);
- ``ClusterQueue``: whether every flavor is a TAS flavor (``isTASOnly``: its pod sets use TAS
  without asking); ``LocalQueue``: a Workload's ClusterQueue. Other kinds are not TAS input.

Users ask with pod-template annotations (``kueue.x-k8s.io/podset-required-topology`` ...);
Kueue's job integrations turn them into the Workload's ``topologyRequest``
(``pkg/controller/jobframework/tas.go``, ``NewPodSetTopologyRequest(...).Build()``), and the
Workload is what is read here. Amounts are Kueue's integers (:func:`snapshot.amount`).

What is not modelled is named in ``not_modelled`` (for the caller's "unknown (feature)"):
failed-node replacement (``status.unhealthyNodes``), delayed topology requests
(``delayedTopologyRequest``; a ClusterQueue with admission checks: MultiKueue and
ProvisioningRequest delay TAS, a Ready check's ``podSetUpdates`` change the pod set), elastic
workload slices, a feature gate that changes placement set off its v0.19 default
(``TAS_GATES``; a ``kind: Configuration`` object's ``featureGates`` or the caller's).
Malformed objects raise :class:`~aiplat.errors.InputError` naming the object and the
field. Pure: no I/O.

Use: ``cluster = read(objects)`` once; for a workload whose quota fits, ``asks =
requests_for(cluster, key, assigned, counts)``: ``asks.not_modelled`` makes the answer
unknown, ``asks.errors`` are Kueue's messages, else ``tas.find_for_workload(asks.by_flavor)``
decides; ``with_admitted`` charges what the cycle admits to the workloads after it, ``without``
gives back what an evicted one held.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiplat.errors import InputError
from aiplat.kueue.podrequests import pod_requests
from aiplat.kueue.snapshot import amount, unpack
from aiplat.kueue.tas_admitted import admitted_domains
from aiplat.kueue.tas_model import (
    HOSTNAME,
    AdmittedDomain,
    Node,
    PlacedPod,
    PodSetRequest,
    PodSetResult,
    Requirement,
    SliceLayer,
    Taint,
    TasFlavor,
    TasInput,
    Toleration,
    TopologyRequest,
)

Obj = dict[str, Any]
KUEUE_VERSIONS = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")
CONFIG_VERSIONS = ("config.kueue.x-k8s.io/v1beta2", "config.kueue.x-k8s.io/v1beta1")
# The gates that change where TAS places pods, at their v0.19.2 defaults
# (pkg/features/kube_features.go): the module models these values only.
TAS_GATES = {"TopologyAwareScheduling": True, "TASProfileMixed": True,
             "TASBalancedPlacement": False, "TASRespectNodeAffinityPreferred": False,
             "TASMultiLayerTopology": True, "TASHandleOverlappingFlavors": True,
             "SchedulerLibraryIntegration": False, "ElasticJobsViaWorkloadSlicesWithTAS": False,
             "TASFailedNodeReplacement": True}
ELASTIC = "kueue.x-k8s.io/elastic-job"  # workloadslicing.EnabledAnnotationKey


@dataclass(frozen=True)
class TasPodSet:
    """A Workload's pod set as TAS reads it (``count`` is the spec's)."""
    request: PodSetRequest
    explicit: bool  # IsExplicitlyRequestingTAS


@dataclass(frozen=True)
class TasWorkload:
    key: str  # namespace/name
    cluster_queue: str  # its LocalQueue's ("" if that is not in the objects)
    podsets: tuple[TasPodSet, ...]
    not_modelled: tuple[str, ...] = ()


@dataclass(frozen=True)
class TasCluster:
    flavors: Mapping[str, TasFlavor]  # the TAS flavors whose Topology exists
    missing: Mapping[str, str]  # TAS flavor -> ClusterQueue inactive message (no Topology)
    nodes: tuple[Node, ...]
    pods: tuple[PlacedPod, ...]
    admitted: tuple[AdmittedDomain, ...]
    workloads: Mapping[str, TasWorkload]
    tas_only: Mapping[str, bool]  # ClusterQueue -> every flavor is a TAS flavor
    not_modelled: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # by CQ
    everywhere: tuple[str, ...] = ()  # not modelled for every workload (feature gates)

    def input(self, flavor: str) -> TasInput:
        """What Kueue's TAS cache holds for ``flavor``."""
        return TasInput(self.flavors[flavor], self.nodes, self.pods, self.admitted)


@dataclass(frozen=True)
class WorkloadRequests:
    """One workload's ask, ready for :func:`aiplat.kueue.tas.find_for_workload`
    (``by_flavor``); ``errors``: pod set -> Kueue's message where it cannot ask (no TAS
    flavor, several); ``not_modelled``: reasons the answer would be unknown."""
    by_flavor: dict[str, tuple[TasInput, tuple[PodSetRequest, ...]]]
    errors: dict[str, str]
    not_modelled: tuple[str, ...]


# ---------------------------------------------------------------------------- the cluster


_KINDS = ("Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue", "Workload", "Node", "Pod",
          "Configuration")
_KUEUE_KINDS = _KINDS[:5]


def read(objects: Iterable[Any], source: str = "<objects>",
         feature_gates: Mapping[str, bool] | None = None) -> TasCluster:
    """The objects (``kind: List`` unpacked; kinds TAS does not read are skipped) -> what
    Kueue's TAS cache and flavor assigner hold. ``feature_gates``: Kueue's (its
    Configuration's ``featureGates``, also read from a ``kind: Configuration`` object);
    one that changes placement and is off its default is named in ``everywhere``."""
    by_kind: dict[str, list[tuple[Obj, str]]] = {k: [] for k in _KINDS}
    seen: set[str] = set()
    for obj in unpack(objects, source):
        if obj.get("kind") not in _KINDS:
            continue
        where = _where(source, obj)
        if obj["kind"] != "Configuration" and (not isinstance(obj.get("metadata"), dict)
                                               or not obj["metadata"].get("name")):
            raise InputError(f"{where}: metadata.name is missing")
        if obj["kind"] == "Configuration":
            feature_gates = {**_gates(obj, where), **(feature_gates or {})}
            continue
        if obj["kind"] in _KUEUE_KINDS and obj.get("apiVersion") not in KUEUE_VERSIONS:
            raise InputError(f"{where}: apiVersion {obj.get('apiVersion')!r}: Kueue v0.19 "
                             f"serves {' or '.join(KUEUE_VERSIONS)}")
        if where in seen:
            raise InputError(f"{where}: given twice (fix: keep one copy of each object)")
        seen.add(where)
        by_kind[obj["kind"]].append((obj, where))
    levels = {o["metadata"]["name"]: _levels(o, w) for o, w in by_kind["Topology"]}
    flavors, missing = _flavors(by_kind["ResourceFlavor"], levels)
    queues = {o["metadata"]["name"]: _queue_flavors(o, w) for o, w in by_kind["ClusterQueue"]}
    tas = set(flavors) | set(missing)
    lq = {f"{_ns(o)}/{o['metadata']['name']}": _str(_spec(o, w).get("clusterQueue"),
                                                    f"{w}: spec.clusterQueue")
          for o, w in by_kind["LocalQueue"]}
    workloads = [_workload(o, w, lq) for o, w in by_kind["Workload"]]
    return TasCluster(
        flavors=flavors, missing=missing,
        nodes=tuple(_node(o, w) for o, w in by_kind["Node"]),
        pods=tuple(_pod(o, w) for o, w in by_kind["Pod"]),
        admitted=tuple(d for (o, w), wl in zip(by_kind["Workload"], workloads, strict=True)
                       for d in _admitted(o, w, wl)),
        workloads={wl.key: wl for wl in workloads},
        tas_only={q: all(f in tas for f in fs) for q, (fs, _) in queues.items()},
        not_modelled={q: checks for q, (_, checks) in queues.items() if checks},
        everywhere=tuple(f"feature gate {g}={str(v).lower()} (Kueue v0.19's default is "
                         f"{str(TAS_GATES[g]).lower()})"
                         for g, v in sorted((feature_gates or {}).items())
                         if g in TAS_GATES and v != TAS_GATES[g]))


def _gates(obj: Obj, where: str) -> dict[str, bool]:
    if obj.get("apiVersion") not in CONFIG_VERSIONS:
        raise InputError(f"{where}: apiVersion {obj.get('apiVersion')!r}: Kueue v0.19 reads "
                         f"{' or '.join(CONFIG_VERSIONS)}")
    gates = _mapping(obj.get("featureGates"), f"{where}: featureGates")
    for name, value in gates.items():
        _bool(value, f"{where}: featureGates.{name}")
    return {str(k): bool(v) for k, v in gates.items()}


def _levels(obj: Obj, where: str) -> tuple[str, ...]:
    """``spec.levels[].nodeLabel`` as the Topology CRD admits them."""
    items = _spec(obj, where).get("levels")
    if not isinstance(items, list) or not 1 <= len(items) <= 16:
        raise InputError(f"{where}: spec.levels: a list of 1 to 16 levels is required (fix: "
                         "e.g. [{nodeLabel: kubernetes.io/hostname}])")
    out = tuple(_str((lv if isinstance(lv, dict) else {}).get("nodeLabel"),
                     f"{where}: spec.levels[{i}].nodeLabel") for i, lv in enumerate(items))
    twice = sorted({x for x in out if out.count(x) > 1})
    if twice:
        raise InputError(f"{where}: spec.levels: {', '.join(twice)} given twice (fix: each "
                         "node label once)")
    if HOSTNAME in out[:-1]:
        raise InputError(f"{where}: spec.levels: {HOSTNAME} can only be the lowest level")
    return out


def _flavors(items: list[tuple[Obj, str]], levels: Mapping[str, tuple[str, ...]]
             ) -> tuple[dict[str, TasFlavor], dict[str, str]]:
    flavors: dict[str, TasFlavor] = {}
    missing: dict[str, str] = {}
    for obj, where in items:
        spec = _spec(obj, where)
        if spec.get("topologyName") is None:
            continue
        name = obj["metadata"]["name"]
        topology = _str(spec["topologyName"], f"{where}: spec.topologyName")
        if topology not in levels:  # Kueue: the ClusterQueue is inactive (TopologyNotFound)
            missing[name] = f"there is no Topology {topology!r} for TAS flavor {name!r}"
            continue
        flavors[name] = TasFlavor(
            name, topology, levels[topology],
            _labels(spec.get("nodeLabels"), f"{where}: spec.nodeLabels"),
            _tolerations(spec.get("tolerations"), f"{where}: spec.tolerations"))
    return flavors, missing


def _queue_flavors(obj: Obj, where: str) -> tuple[list[str], tuple[str, ...]]:
    """A ClusterQueue's flavor names, and what of it TAS does not model."""
    spec = _spec(obj, where)
    names = []
    for gi, group in enumerate(_list(spec.get("resourceGroups"), f"{where}: "
                                     "spec.resourceGroups")):
        at = f"{where}: spec.resourceGroups[{gi}].flavors"
        for fi, f in enumerate(_list((group or {}).get("flavors"), at)):
            names.append(_str((f if isinstance(f, dict) else {}).get("name"), f"{at}[{fi}].name"))
    checks = spec.get("admissionChecks") or (spec.get("admissionChecksStrategy") or {}).get(
        "admissionChecks")
    note = ((f"{where}: admission checks (MultiKueue and ProvisioningRequest delay "
             "topology assignment, a Ready check's podSetUpdates change the pod set)",)
            if checks else ())
    return names, note


def _node(obj: Obj, where: str) -> Node:
    spec = _mapping(obj.get("spec"), f"{where}: spec")
    status = _mapping(obj.get("status"), f"{where}: status")
    alloc = _mapping(status.get("allocatable"), f"{where}: status.allocatable")
    taints = []
    for i, item in enumerate(_list(spec.get("taints"), f"{where}: spec.taints")):
        at = f"{where}: spec.taints[{i}]"
        t = _mapping(item, at)
        taints.append(Taint(_str(t.get("key"), f"{at}.key"),
                            _choice(t.get("effect"), _EFFECTS[1:], f"{at}.effect"),
                            _opt_str(t.get("value"), f"{at}.value")))
    conditions = _list(status.get("conditions"), f"{where}: status.conditions")
    ready = any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
                for c in conditions)
    return Node(obj["metadata"]["name"],
                _labels(obj["metadata"].get("labels"), f"{where}: metadata.labels"),
                {str(r): _amount(r, v, f"{where}: status.allocatable.{r}")
                 for r, v in alloc.items()},
                tuple(taints), ready, _bool(spec.get("unschedulable"), f"{where}: "
                                            "spec.unschedulable"))


def _pod(obj: Obj, where: str) -> PlacedPod:
    spec = _mapping(obj.get("spec"), f"{where}: spec")
    status = _mapping(obj.get("status"), f"{where}: status")
    return PlacedPod(_opt_str(spec.get("nodeName"), f"{where}: spec.nodeName"),
                     pod_requests(spec, _amount, f"{where}: spec"),
                     _opt_str(status.get("phase"), f"{where}: status.phase") or "Pending",
                     _labels(obj["metadata"].get("annotations"), f"{where}: "
                             "metadata.annotations"))


# ---------------------------------------------------------------------------- workloads


def _workload(obj: Obj, where: str, lq: Mapping[str, str]) -> TasWorkload:
    spec = _spec(obj, where)
    status = _mapping(obj.get("status"), f"{where}: status")
    podsets = _list(spec.get("podSets"), f"{where}: spec.podSets")
    if not podsets:
        raise InputError(f"{where}: spec.podSets is empty (fix: a Workload needs a pod set)")
    notes = []
    if status.get("unhealthyNodes"):
        notes.append(f"{where}: status.unhealthyNodes (failed-node replacement)")
    for i, psa in enumerate(((status.get("admission") or {}).get("podSetAssignments")) or []):
        if isinstance(psa, dict) and psa.get("delayedTopologyRequest"):
            notes.append(f"{where}: status.admission.podSetAssignments[{i}]."
                         "delayedTopologyRequest (delayed topology request)")
    if ELASTIC in (obj["metadata"].get("annotations") or {}):
        notes.append(f"{where}: metadata.annotations.{ELASTIC} (elastic workload slices)")
    key = f"{_ns(obj)}/{obj['metadata']['name']}"
    queue = f"{_ns(obj)}/{spec.get('queueName')}"
    return TasWorkload(key, lq.get(queue, ""),
                       tuple(_podset(ps, f"{where}: spec.podSets[{i}]")
                             for i, ps in enumerate(podsets)), tuple(notes))


def _podset(ps: Any, at: str) -> TasPodSet:
    ps = _mapping(ps, at)
    name = _str(ps.get("name", "main"), f"{at}.name")
    count = ps.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise InputError(f"{at}.count: {count!r} is not a pod count (fix: a whole number, "
                         "0 or more)")
    template = _mapping(ps.get("template"), f"{at}.template")
    pspec = _mapping(template.get("spec"), f"{at}.template.spec")
    tr = ps.get("topologyRequest")
    request = None if tr is None else _topology(_mapping(tr, f"{at}.topologyRequest"),
                                                f"{at}.topologyRequest")
    explicit = request is not None and _explicit(tr)
    return TasPodSet(PodSetRequest(
        name, count, pod_requests(pspec, _amount, f"{at}.template.spec"), request,
        node_selector=_labels(pspec.get("nodeSelector"), f"{at}.template.spec.nodeSelector"),
        tolerations=_tolerations(pspec.get("tolerations"), f"{at}.template.spec.tolerations"),
        affinity=_affinity(pspec, f"{at}.template.spec.affinity")), explicit)


def _explicit(tr: Obj) -> bool:
    """``IsExplicitlyRequestingTAS``: a level, unconstrained (true or false), or a slice."""
    return any(tr.get(k) is not None for k in (
        "required", "preferred", "unconstrained", "podSetSliceRequiredTopology",
        "podSetSliceSize")) or bool(tr.get("podsetSliceRequiredTopologyConstraints"))


def _topology(tr: Obj, at: str) -> TopologyRequest:
    """A ``topologyRequest``; the slice layers as ``PodSetSliceRequiredTopologyConstraints``
    unifies the multi-layer list and the one-layer fields (size 0: not given)."""
    layers = []
    for i, item in enumerate(_list(tr.get("podsetSliceRequiredTopologyConstraints"),
                                   f"{at}.podsetSliceRequiredTopologyConstraints")):
        cat = f"{at}.podsetSliceRequiredTopologyConstraints[{i}]"
        c = _mapping(item, cat)
        layers.append(SliceLayer(_str(c.get("topology"), f"{cat}.topology"),
                                 _size(c.get("size"), f"{cat}.size", required=True)))
    if len(layers) > 3:
        raise InputError(f"{at}.podsetSliceRequiredTopologyConstraints: {len(layers)} "
                         "layers (fix: at most 3)")
    one = tr.get("podSetSliceRequiredTopology")
    if layers and (one is not None or tr.get("podSetSliceSize") is not None):
        raise InputError(f"{at}: podsetSliceRequiredTopologyConstraints and "
                         "podSetSliceRequiredTopology/podSetSliceSize are mutually exclusive")
    if one is not None:
        layers = [SliceLayer(_str(one, f"{at}.podSetSliceRequiredTopology"),
                             _size(tr.get("podSetSliceSize"), f"{at}.podSetSliceSize"))]
    return TopologyRequest(
        required=_level(tr.get("required"), f"{at}.required"),
        preferred=_level(tr.get("preferred"), f"{at}.preferred"),
        unconstrained=_bool(tr.get("unconstrained"), f"{at}.unconstrained"),
        slices=tuple(layers),
        group=_level(tr.get("podSetGroupName"), f"{at}.podSetGroupName"))


def _admitted(obj: Obj, where: str, wl: TasWorkload) -> tuple[AdmittedDomain, ...]:
    """The TAS usage of a Workload holding quota (``QuotaReserved`` True, not ``Finished``):
    each pod set assignment's ``topologyAssignment``, one pod as the template asks."""
    status = obj.get("status") or {}
    conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []
             if isinstance(c, dict)}
    if conds.get("QuotaReserved") != "True" or conds.get("Finished") == "True":
        return ()
    requests = {ps.request.name: ps.request.requests for ps in wl.podsets}
    out: list[AdmittedDomain] = []
    psas = _list(_mapping(status.get("admission"), f"{where}: status.admission")
                 .get("podSetAssignments"), f"{where}: status.admission.podSetAssignments")
    for i, item in enumerate(psas):
        at = f"{where}: status.admission.podSetAssignments[{i}]"
        psa = _mapping(item, at)
        if psa.get("topologyAssignment") is None:
            continue
        name = psa.get("name", "main")
        if name not in requests:
            raise InputError(f"{at}.name: pod set {name!r} is not in spec.podSets (fix: take "
                             "the Workload from the cluster as it is)")
        flavors = _labels(psa.get("flavors"), f"{at}.flavors").values()
        try:
            out += [dataclasses.replace(d, workload=wl.key) for d in admitted_domains(
                flavors, _mapping(psa["topologyAssignment"], f"{at}.topologyAssignment"),
                requests[name], f"{at}.topologyAssignment")]
        except ValueError as e:
            raise InputError(str(e)) from None
    return tuple(out)


# ---------------------------------------------------------------------------- the ask


def requests_for(cluster: TasCluster, workload: str, assigned: Mapping[str, Mapping[str, str]],
                 counts: Mapping[str, int] | None = None) -> WorkloadRequests:
    """``WorkloadsTopologyRequests``: the workload's pod sets that use TAS (they ask, or
    their ClusterQueue is TAS-only), each in the one TAS flavor of its quota assignment
    (``assigned``: pod set -> resource -> flavor; a pod set not there got no quota), with
    the assigned count (``counts``, smaller under partial admission; 0 skips it)."""
    wl = cluster.workloads[workload]
    implied_queue = cluster.tas_only.get(wl.cluster_queue, False)
    by_flavor: dict[str, tuple[TasInput, tuple[PodSetRequest, ...]]] = {}
    errors: dict[str, str] = {}
    for ps in wl.podsets:
        name = ps.request.name
        count = (counts or {}).get(name, ps.request.count)
        implied = implied_queue and not ps.explicit
        if not (ps.explicit or implied) or name not in assigned or count == 0:
            continue
        tas = sorted({f for f in assigned[name].values()
                      if f in cluster.flavors or f in cluster.missing})
        if len(tas) != 1:
            errors[name] = (f"more than one TAS flavor assigned: {', '.join(tas)}" if tas
                            else "no TAS flavor assigned")
            continue
        if tas[0] in cluster.missing:
            errors[name] = cluster.missing[tas[0]]
            continue
        inp, asks = by_flavor.get(tas[0]) or (cluster.input(tas[0]), ())
        by_flavor[tas[0]] = (inp, (*asks, dataclasses.replace(ps.request, count=count,
                                                               implied=implied)))
    return WorkloadRequests(by_flavor, errors, cluster.everywhere + wl.not_modelled
                            + tuple(cluster.not_modelled.get(wl.cluster_queue, ())))


def with_admitted(cluster: TasCluster, workload: str,
                  results: Mapping[str, tuple[str, PodSetResult]]) -> TasCluster:
    """The cluster once ``workload`` holds what :func:`aiplat.kueue.tas.find_for_workload`
    gave it (pod set -> (flavor, PodSetResult)): the cycle's next workloads see it taken."""
    requests = {ps.request.name: ps.request.requests
                for ps in cluster.workloads[workload].podsets}
    more = tuple(AdmittedDomain(flavor, r.assignment.levels, d.values, d.count, requests[name],
                                workload)
                 for name, (flavor, r) in results.items() if r.assignment is not None
                 for d in r.assignment.domains)
    return dataclasses.replace(cluster, admitted=cluster.admitted + more)


def without(cluster: TasCluster, workload: str) -> TasCluster:
    """The cluster once ``workload`` no longer holds its topology domains (its eviction
    completed: Kueue's cache drops the usage with the quota)."""
    return dataclasses.replace(cluster, admitted=tuple(d for d in cluster.admitted
                                                       if d.workload != workload))


# ---------------------------------------------------------------------------- fields


_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
_OPERATORS = ("", "Equal", "Exists", "Lt", "Gt")


def _where(source: str, obj: Obj) -> str:
    given = obj.get("metadata")
    meta: Obj = given if isinstance(given, dict) else {}
    ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{source}: {obj.get('kind')} {ns}{meta.get('name', '?')}"


def _ns(obj: Obj) -> str:
    return str(obj["metadata"].get("namespace") or "default")


def _amount(resource: str, value: Any, where: str) -> int:
    """A quantity in Kueue's unit; the API server refuses a negative one."""
    out = amount(value, resource, where)
    if out < 0:
        raise InputError(f"{where}: {value!r} is negative (fix: zero or more)")
    return out


def _spec(obj: Obj, where: str) -> Obj:
    return _mapping(obj.get("spec"), f"{where}: spec")


def _mapping(value: Any, where: str) -> Obj:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{where}: {type(value).__name__} {value!r} is not a mapping")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: {type(value).__name__} {value!r} is not a list")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}: {value!r} is not a non-empty string")
    return value


def _opt_str(value: Any, where: str) -> str:
    return "" if value is None or value == "" else _str(value, where)


def _level(value: Any, where: str) -> str | None:
    return None if value is None else _str(value, where)


def _bool(value: Any, where: str) -> bool:
    if value is not None and not isinstance(value, bool):
        raise InputError(f"{where}: {value!r} is not true or false")
    return bool(value)


def _size(value: Any, where: str, required: bool = False) -> int:
    if value is None and not required:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{where}: {value!r} is not a pod count of 1 or more")
    return value


def _choice(value: Any, allowed: tuple[str, ...], where: str) -> str:
    if (value or "") not in allowed:
        raise InputError(f"{where}: {value!r} is not one of {', '.join(a for a in allowed if a)}")
    return str(value or "")


def _labels(value: Any, where: str) -> dict[str, str]:
    out = _mapping(value, where)
    bad = [k for k, v in out.items() if not isinstance(v, str)]
    if bad:
        raise InputError(f"{where}.{bad[0]}: {out[bad[0]]!r} is not a string (fix: quote it)")
    return {str(k): v for k, v in out.items()}


def _tolerations(value: Any, where: str) -> tuple[Toleration, ...]:
    out = []
    for i, item in enumerate(_list(value, where)):
        t = _mapping(item, f"{where}[{i}]")
        out.append(Toleration(_opt_str(t.get("key"), f"{where}[{i}].key"),
                              _choice(t.get("operator"), _OPERATORS, f"{where}[{i}].operator"),
                              _opt_str(t.get("value"), f"{where}[{i}].value"),
                              _choice(t.get("effect"), _EFFECTS, f"{where}[{i}].effect")))
    return tuple(out)


def _affinity(pspec: Obj, where: str) -> tuple[tuple[Requirement, ...], ...] | None:
    """Required node affinity: its terms (ORed) of requirements (ANDed); None if none."""
    node = _mapping(_mapping(pspec.get("affinity"), where).get("nodeAffinity"),
                    f"{where}.nodeAffinity")
    at = f"{where}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    terms = []
    for ti, item in enumerate(_list(_mapping(required, at).get("nodeSelectorTerms"),
                                    f"{at}.nodeSelectorTerms")):
        tat = f"{at}.nodeSelectorTerms[{ti}]"
        term = _mapping(item, tat)
        reqs = [_requirement(e, f"{tat}.{key}[{i}]", key == "matchFields")
                for key in ("matchExpressions", "matchFields")
                for i, e in enumerate(_list(term.get(key), f"{tat}.{key}"))]
        terms.append(tuple(reqs))
    return tuple(terms)


def _requirement(e: Any, where: str, on_field: bool) -> Requirement:
    e = _mapping(e, where)
    values = _list(e.get("values"), f"{where}.values")
    if not all(isinstance(v, str) for v in values):
        raise InputError(f"{where}.values: {values!r}: each value is a string (fix: quote it)")
    return Requirement(_str(e.get("key"), f"{where}.key"),
                       _choice(e.get("operator"), ("In", "NotIn", "Exists", "DoesNotExist",
                                                   "Gt", "Lt"), f"{where}.operator"),
                       tuple(values), on_field)
