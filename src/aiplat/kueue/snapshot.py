"""A cluster's Kueue objects, as ``kubectl get -o yaml|json`` returns them -> a :class:`Snapshot`.

The snapshot is what Kueue's scheduler works from (``pkg/cache/scheduler/snapshot.go``):
ResourceFlavors, Cohorts, ClusterQueues with their resource groups, LocalQueues,
WorkloadPriorityClasses, Workloads (admitted ones with ``status.admission``), Topologies,
Nodes, and Kueue's Configuration (its ConfigMap or the file). ``kind: List`` documents are
unpacked. Pure: it reads plain dicts (parsed YAML/JSON); no I/O.

DRA: ResourceClaimTemplates (``resource.k8s.io/v1``) and the Configuration's
``resources.deviceClassMappings`` turn a pod set's claim templates into requests of the mapped
quota resource, as Kueue's workload controller does before queueing (see :func:`_devices`); a
workload Kueue refuses there (a claim by name, an unmapped DeviceClass, allocationMode All,
firstAvailable, adminAccess) is kept pending as inadmissible with Kueue's message.

Amounts are integers in Kueue's own units (``pkg/resources``): ``cpu`` in milli-cores,
every other resource (``memory`` in bytes, ``nvidia.com/gpu``, ``pods``, extended
resources) as its value rounded up — so quota arithmetic is exact.

Bad input raises :class:`~aiplat.errors.InputError` naming the object and the field
(unknown kinds, other Kueue API versions, a WorkloadPriorityClass that is missing). A
Workload whose LocalQueue or ClusterQueue is missing is a cluster state, not bad input: it
stays pending with Kueue's message (``Workload.refused``). Fields Kueue has but the replay
does not model are collected in ``Snapshot.unsupported`` by name, never dropped silently.

This is the one reader of Kueue objects: the replay works on the ``Snapshot`` as parsed,
and the simulator's queues (:mod:`aiplat.sched.kueue_objects`) are this snapshot too, so both
read a field the same way or not at all.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from functools import cached_property
from typing import Any, Literal

from aiplat.errors import InputError
from aiplat.kueue.labels import selects
from aiplat.kueue.podrequests import pod_requests

Obj = dict[str, Any]
KUEUE_VERSIONS = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")
CONFIG_VERSIONS = ("config.kueue.x-k8s.io/v1beta2", "config.kueue.x-k8s.io/v1beta1")
KUEUE_KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "Topology",
               "WorkloadPriorityClass", "Workload", "AdmissionCheck")
PARAMETER_KINDS = ("ProvisioningRequestConfig", "MultiKueueConfig", "MultiKueueCluster")
"""Kueue kinds that parameterise an AdmissionCheck's controller: no replay input."""
DRA_VERSION = "resource.k8s.io/v1"  # ResourceClaimTemplate, as Kueue v0.19 reads it
FR = tuple[str, str]  # (flavor, resource)

_SUFFIX = {"": Fraction(1), "m": Fraction(1, 1000), "k": Fraction(10**3), "M": Fraction(10**6),
           "G": Fraction(10**9), "T": Fraction(10**12), "P": Fraction(10**15),
           "E": Fraction(10**18), "Ki": Fraction(2**10), "Mi": Fraction(2**20),
           "Gi": Fraction(2**30), "Ti": Fraction(2**40), "Pi": Fraction(2**50),
           "Ei": Fraction(2**60)}


def amount(value: object, resource: str, where: str) -> int:
    """A Kubernetes quantity in Kueue's unit for ``resource`` (cpu: milli; else: value)."""
    text = str(value).strip()
    m = re.fullmatch(r"([+-]?[0-9]*\.?[0-9]+)(?:[eE]([+-]?[0-9]+))?([a-zA-Z]*)", text)
    if not m or m.group(3) not in _SUFFIX:
        raise InputError(f"{where}: {text!r} is not a quantity (fix: e.g. 8, 500m, 64Gi)")
    # Kueue holds amounts in int64: an exponent past a few dozen is no amount it can hold,
    # and 10**huge would take minutes and memory to compute.
    if abs(int(m.group(2) or 0)) > _MAX_EXPONENT:
        raise InputError(f"{where}: {text!r} is out of range (Kubernetes holds quantities "
                         "in 64 bits) (fix: give the amount with a suffix, e.g. 64Gi)")
    q = Fraction(m.group(1)) * _SUFFIX[m.group(3)] * Fraction(10) ** int(m.group(2) or 0)
    return in_units(resource, q)


_MAX_EXPONENT = 40


def in_units(resource: str, value: Fraction | Decimal) -> int:
    """An exact quantity (cores for cpu, else its base unit) in Kueue's unit, rounded up."""
    return math.ceil(value * 1000) if resource == "cpu" else math.ceil(value)


def from_units(resource: str, value: int) -> Decimal:
    """Kueue's amount back in the quantity's base unit (the inverse of :func:`in_units`)."""
    return Decimal(value) / 1000 if resource == "cpu" else Decimal(value)


def show(resource: str, value: int) -> str:
    """An amount as Kueue prints it in messages (cpu ``500m`` / ``2``, memory ``4Gi``)."""
    if resource == "cpu":
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    if resource == "memory" or resource.endswith("storage"):
        for suffix, scale in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value and value % scale == 0:
                return f"{value // scale}{suffix}"
    return str(value)


_DURATION = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def duration(value: object, where: str) -> float:
    """A Go duration (``1h30m``, ``10m0s``, ``300ms``) in seconds."""
    text = str(value).strip()
    parts = re.findall(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|h|m|s)", text)
    if not parts or "".join(a + b for a, b in parts) != text:
        raise InputError(f"{where}: {text!r} is not a duration (fix: e.g. 30m, 1h, 90s)")
    return sum(float(a) * _DURATION[b] for a, b in parts)


# Notes the simulator replaces by its own (it models these, or says it differently): it
# tells them apart by these ends (kueue_objects).
NOT_REPLAYED_TAS = "(topology-aware scheduling is not replayed)"
NOT_REPLAYED_AFS = "admissionFairSharing"
NOT_REPLAYED_NS = "spec.namespaceSelector (every namespace is admitted)"  # the simulator's


# ---------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class Quota:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(frozen=True)
class FlavorQuota:
    flavor: str
    resources: dict[str, Quota]


@dataclass(frozen=True)
class ResourceGroup:
    covered: tuple[str, ...]
    flavors: tuple[FlavorQuota, ...]


@dataclass(frozen=True)
class Preemption:
    within_cluster_queue: str = "Never"  # Never | LowerPriority | LowerOrNewerEqualPriority
    reclaim_within_cohort: str = "Never"  # Never | LowerPriority | Any
    borrow_within_cohort: str = "Never"  # Never | LowerPriority
    max_priority_threshold: int | None = None

    @property
    def never(self) -> bool:
        return (self.within_cluster_queue == "Never" and self.reclaim_within_cohort == "Never"
                and self.borrow_within_cohort == "Never")


@dataclass(frozen=True)
class AdmissionFairSharing:
    """Order inside a ClusterQueue by the LocalQueues' decayed usage (GPU-seconds)."""

    half_life_s: float = 3600.0
    entry_penalty: float = 0.0


@dataclass(frozen=True)
class WaitForPodsReady:
    timeout_s: float = 1800.0
    backoff_base_s: float = 60.0
    backoff_max_s: float = 3600.0
    backoff_limit: int | None = None


@dataclass(frozen=True)
class Fungibility:
    when_can_borrow: str = "MayStopSearch"  # v1beta1 "Borrow" reads as MayStopSearch
    when_can_preempt: str = "TryNextFlavor"  # v1beta1 "Preempt" reads as MayStopSearch
    preference: str | None = None  # BorrowingOverPreemption | PreemptionOverBorrowing


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    groups: tuple[ResourceGroup, ...]
    cohort: str | None = None
    queueing_strategy: str = "BestEffortFIFO"
    preemption: Preemption = Preemption()
    fungibility: Fungibility = Fungibility()
    weight: float = 1.0
    stop_policy: str = "None"
    namespace_selector: Obj | None = None
    checks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # AdmissionCheck, onFlavors

    def tas_only(self, flavors: dict[str, Flavor]) -> bool:
        """``IsTASOnly``: every flavor it lists is topology-aware."""
        names = [f.flavor for g in self.groups for f in g.flavors]
        return bool(names) and all(n in flavors and flavors[n].topology for n in names)

    def checks_on(self, flavors: dict[str, dict[str, str]]) -> list[str]:
        """The AdmissionChecks a workload admitted on ``flavors`` waits for (a check with
        ``onFlavors`` runs only where one of them is assigned)."""
        used = {f for fl in flavors.values() for f in fl.values()}
        return [name for name, on in self.checks if not on or used & set(on)]

    def group_of(self, resource: str) -> ResourceGroup | None:
        return self._group_by_resource.get(resource)

    @cached_property  # asked on every flavor assignment
    def _group_by_resource(self) -> dict[str, ResourceGroup]:
        out: dict[str, ResourceGroup] = {}
        for g in self.groups:
            for r in g.covered:
                out.setdefault(r, g)
        return out


@dataclass(frozen=True)
class Cohort:
    name: str
    parent: str | None = None
    groups: tuple[ResourceGroup, ...] = ()
    weight: float = 1.0


@dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: dict[str, str] = field(default_factory=dict)
    node_taints: tuple[Obj, ...] = ()
    tolerations: tuple[Obj, ...] = ()
    topology: str | None = None


@dataclass(frozen=True)
class PodSet:
    name: str
    count: int
    requests: dict[str, int]  # per pod, in Kueue's units
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[Obj, ...] = ()
    min_count: int | None = None  # partial admission: the fewest pods Kueue may admit
    affinity: tuple[Obj, ...] = ()  # required node affinity's nodeSelectorTerms
    tas: bool | None = None  # asks for a topology explicitly (None: not known, the simulator)

    def total(self) -> dict[str, int]:
        return dict(self.totals)

    @cached_property
    def totals(self) -> dict[str, int]:
        """What all its pods ask for (read-only: :meth:`total` gives a copy)."""
        return {r: v * self.count for r, v in self.requests.items()}

    def scaled(self, count: int) -> dict[str, int]:
        """What ``count`` of its pods ask for (a partial admission's count)."""
        return {r: v * count for r, v in self.requests.items()}


@dataclass
class Workload:
    key: str  # namespace/name
    uid: str
    created: float  # creationTimestamp, seconds since the epoch
    priority: int
    queue_name: str  # the LocalQueue
    cluster_queue: str
    podsets: tuple[PodSet, ...]
    admission: dict[str, dict[str, str]] | None = None  # podset -> resource -> flavor
    admitted_at: float = 0.0  # QuotaReserved's lastTransitionTime
    active: bool = True
    evaluated: bool = False  # Kueue has tried it (QuotaReserved False): waits in inadmissible
    held: bool = False  # its LocalQueue has a stopPolicy
    refused: str | None = None  # Kueue's message when it cannot be queued (DRA, queues)
    admitted_in: str = ""  # status.admission.clusterQueue
    refused_reason: str = "Inadmissible"  # the replay's reason beside ``refused``
    admitted_counts: dict[str, int] | None = None  # pod set -> count, admitted partially
    check_states: dict[str, str] = field(default_factory=dict)  # AdmissionCheck -> state

    @property
    def partial(self) -> bool:
        """``CanBePartiallyAdmitted``: a pod set may run with fewer pods than it asks for."""
        return any(ps.min_count is not None and ps.min_count < ps.count
                   for ps in self.podsets)


@dataclass(frozen=True)
class Gap:
    """Something the replay does not model that can turn the decisions it reaches: the
    pending workloads in its scope are "unknown (feature)", never decided
    (:mod:`aiplat.kueue.unknown`). Scope: one workload, a ClusterQueue, the queues that list
    a flavor, the queues under a cohort, or ``everywhere``."""

    feature: str
    workload: str = ""
    cluster_queue: str = ""
    flavor: str = ""
    cohort: str = ""
    everywhere: bool = False


TAS = "topology-aware scheduling"


@dataclass
class Snapshot:
    flavors: dict[str, Flavor]
    cluster_queues: dict[str, ClusterQueue]
    cohorts: dict[str, Cohort]
    workloads: list[Workload]
    fair_sharing: bool = False
    strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    unsupported: list[str] = field(default_factory=list)
    excluded_prefixes: tuple[str, ...] = ()
    admission_fair_sharing: AdmissionFairSharing | None = None
    wait_for_pods_ready: WaitForPodsReady | None = None
    device_classes: dict[str, str] = field(default_factory=dict)  # DeviceClass -> resource
    counted_by_counters: frozenset[str] = frozenset()  # DeviceClasses with counter sources
    local_queues: dict[str, str] = field(default_factory=dict)  # namespace/name -> ClusterQueue
    gaps: list[Gap] = field(default_factory=list)  # unsupported notes that turn decisions
    namespaces: dict[str, dict[str, str]] | None = None  # name -> labels (None: not given)
    admission_checks: dict[str, bool] | None = None  # name -> Active (None: not given)

    def gap(self, note: str, feature: str, **scope: Any) -> None:
        """``note`` (a warning line) about something not modelled that turns decisions."""
        self.unsupported.append(note)
        self.gaps.append(Gap(feature, **scope))


# ---------------------------------------------------------------------------- reading


def unpack(docs: Iterable[Any], source: str) -> Iterator[Obj]:
    for i, d in enumerate(docs):
        if not isinstance(d, dict):
            raise InputError(f"{source}: document {i + 1} is {type(d).__name__}, not an "
                             "object (fix: pass 'kubectl get ... -o yaml' output)")
        if str(d.get("kind", "")).endswith("List") and "items" in d:
            if not isinstance(d["items"], list):
                raise InputError(f"{source}: document {i + 1} ({d['kind']}): items: "
                                 f"{d['items']!r} is not a list (fix: pass 'kubectl get ... "
                                 "-o yaml' output)")
            yield from unpack(d["items"], source)
        else:
            yield d


def _where(source: str, obj: Obj) -> str:
    meta = obj.get("metadata") or {}
    ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{source}: {obj.get('kind')} {ns}{meta.get('name', '?')}"


def _time(value: object, where: str) -> float:
    if value is None:
        return 0.0
    if isinstance(value, datetime):
        return value.timestamp()
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise InputError(f"{where}: {value!r} is not an RFC 3339 time") from None


def _choice(value: object, allowed: tuple[str, ...], where: str) -> str:
    if value not in allowed:
        raise InputError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return str(value)


_CQ_FIELDS = {"cohortName", "cohort", "queueingStrategy", "resourceGroups", "preemption",
              "flavorFungibility", "fairSharing", "stopPolicy", "namespaceSelector",
              "admissionChecks", "admissionChecksStrategy"}
_COHORT_FIELDS = {"parentName", "parent", "resourceGroups", "fairSharing"}
_RF_FIELDS = {"nodeLabels", "nodeTaints", "tolerations", "topologyName"}


def _groups(spec: Obj, where: str) -> tuple[ResourceGroup, ...]:
    out = []
    for gi, g in enumerate(spec.get("resourceGroups") or []):
        gat = f"{where} spec.resourceGroups[{gi}]"
        covered = tuple(str(r) for r in g.get("coveredResources") or [])
        flavors = []
        for fi, f in enumerate(g.get("flavors") or []):
            fat = f"{gat}.flavors[{fi}]"
            if not f.get("name"):
                raise InputError(f"{fat}.name: missing (fix: name a ResourceFlavor)")
            res: dict[str, Quota] = {}
            for ri, r in enumerate(f.get("resources") or []):
                rat = f"{fat}.resources[{ri}]"
                name = r.get("name")
                if not name or "nominalQuota" not in r:
                    raise InputError(f"{rat}: needs name and nominalQuota")
                res[str(name)] = Quota(
                    amount(r["nominalQuota"], name, f"{rat}.nominalQuota"),
                    amount(r["borrowingLimit"], name, f"{rat}.borrowingLimit")
                    if r.get("borrowingLimit") is not None else None,
                    amount(r["lendingLimit"], name, f"{rat}.lendingLimit")
                    if r.get("lendingLimit") is not None else None)
            flavors.append(FlavorQuota(str(f["name"]), res))
        if not covered and flavors:
            covered = tuple(flavors[0].resources)
        for fi, f in enumerate(flavors):
            if set(f.resources) != set(covered):
                raise InputError(f"{gat}.flavors[{fi}].resources: lists "
                                 f"{', '.join(f.resources) or 'none'}, not the group's "
                                 f"coveredResources {', '.join(covered)} (fix: "
                                 "each flavor of a group lists exactly the group's resources, "
                                 "as Kueue's webhook requires)")
        out.append(ResourceGroup(covered, tuple(flavors)))
    _unique([r for g in out for r in g.covered], f"{where} spec.resourceGroups",
            "a resource is covered by one resource group")
    _unique([f.flavor for g in out for f in g.flavors], f"{where} spec.resourceGroups",
            "a flavor appears once in a queue")
    return tuple(out)


def _unique(names: list[str], where: str, rule: str) -> None:
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"{where}: {', '.join(twice)} given twice (fix: {rule}, as Kueue's "
                         "webhook requires)")


def _weight(spec: Obj, where: str) -> float:
    w = (spec.get("fairSharing") or {}).get("weight")
    if w is None:
        return 1.0
    return amount(w, "cpu", f"{where} spec.fairSharing.weight") / 1000


def _cluster_queue(obj: Obj, where: str, snap: Snapshot) -> ClusterQueue:
    spec = obj.get("spec") or {}
    for key in sorted(set(spec) - _CQ_FIELDS):
        snap.gap(f"{where}: spec.{key}", f"ClusterQueue spec.{key}",
                 cluster_queue=str(obj["metadata"]["name"]))
    pre = spec.get("preemption") or {}
    bwc = pre.get("borrowWithinCohort") or {}
    fung = spec.get("flavorFungibility") or {}

    def stop(value: object, field_: str) -> str:
        v = _choice(value, ("MayStopSearch", "TryNextFlavor", "Borrow", "Preempt"),
                    f"{where} spec.flavorFungibility.{field_}")
        return "TryNextFlavor" if v == "TryNextFlavor" else "MayStopSearch"

    pw = f"{where} spec.preemption"
    return ClusterQueue(
        name=str(obj["metadata"]["name"]),
        groups=_groups(spec, where),
        cohort=spec.get("cohortName", spec.get("cohort")),
        queueing_strategy=_choice(spec.get("queueingStrategy", "BestEffortFIFO"),
                                  ("BestEffortFIFO", "StrictFIFO"),
                                  f"{where} spec.queueingStrategy"),
        preemption=Preemption(
            _choice(pre.get("withinClusterQueue", "Never"),
                    ("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
                    f"{pw}.withinClusterQueue"),
            _choice(pre.get("reclaimWithinCohort", "Never"), ("Never", "LowerPriority", "Any"),
                    f"{pw}.reclaimWithinCohort"),
            _choice(bwc.get("policy", "Never"), ("Never", "LowerPriority"),
                    f"{pw}.borrowWithinCohort.policy"),
            bwc.get("maxPriorityThreshold")),
        fungibility=Fungibility(
            stop(fung.get("whenCanBorrow", "MayStopSearch"), "whenCanBorrow"),
            stop(fung.get("whenCanPreempt", "TryNextFlavor"), "whenCanPreempt"),
            None if fung.get("preference") is None else _choice(
                fung["preference"], ("BorrowingOverPreemption", "PreemptionOverBorrowing"),
                f"{where} spec.flavorFungibility.preference")),
        weight=_weight(spec, where),
        stop_policy=_choice(spec.get("stopPolicy", "None"), ("None", "Hold", "HoldAndDrain"),
                            f"{where} spec.stopPolicy"),
        namespace_selector=spec.get("namespaceSelector"),
        checks=_checks(spec),
    )


def _checks(spec: Obj) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """v1beta2 ``admissionChecksStrategy`` rules; v1beta1's ``admissionChecks`` names."""
    rules: list[tuple[str, tuple[str, ...]]] = [
        (str(n), ()) for n in spec.get("admissionChecks") or []]
    rules += [(str(r.get("name")), tuple(str(f) for f in r.get("onFlavors") or ()))
              for r in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []]
    return tuple(rules)


def _request(resource: str, value: object, where: str) -> int:
    """A quantity of a pod's requests in Kueue's unit; negative ones are refused."""
    out = amount(value, resource, where)
    if out < 0:
        raise InputError(f"{where}: {value!r} is negative (fix: a request is zero or more; "
                         "the API server refuses the pod)")
    return out


def _affinity(pspec: Obj) -> tuple[Obj, ...]:
    required = (((pspec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = tuple(required.get("nodeSelectorTerms") or ())
    # a null term is no term the API server stores (nulls in lists are not pruned: the
    # schema refuses them); TypeError sends the caller to the schema, which names it
    for t in terms:
        if not isinstance(t, dict) or not all(
                isinstance(e, dict) and isinstance(e.get("key"), str)
                for e in t.get("matchExpressions") or []):
            raise TypeError(f"nodeSelectorTerms: {t!r} is not a node selector term")
    return terms


def _min_count(value: object, count: int, where: str) -> int | None:
    """``minCount``: 1 up to ``count`` (Kueue's workload webhook refuses others)."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= count:
        raise InputError(f"{where}.minCount: {value!r} is not a pod count from 1 to count "
                         f"({count}) (fix: the fewest pods the job can run with)")
    return value


def _admitted_counts(adm: Obj, podsets: list[PodSet]) -> dict[str, int] | None:
    """The counts of an admission that gave a pod set fewer pods than it asks for."""
    full = {p.name: p.count for p in podsets}
    got = {str(p.get("name")): int(p["count"]) for p in adm.get("podSetAssignments") or []
           if isinstance(p.get("count"), int)}
    return {**full, **got} if any(full.get(n, v) != v for n, v in got.items()) else None


_TAS_FIELDS = ("unconstrained", "required", "preferred", "podSetSliceRequiredTopology",
               "podSetSliceSize", "podsetSliceRequiredTopologyConstraints")


def _explicit_tas(request: Obj) -> bool:
    """``IsExplicitlyRequestingTAS``: a level or slice asked for; Kueue's job integrations
    add a bare ``podIndexLabel`` to every pod set, which asks for nothing."""
    return any(request.get(f) for f in _TAS_FIELDS)


def _podset(ps: Obj, pi: int, where: str, key: str, snap: Snapshot) -> PodSet:
    pat = f"{where} spec.podSets[{pi}]"
    pspec = (ps.get("template") or {}).get("spec") or {}
    tas = _explicit_tas(ps.get("topologyRequest") or {})
    if tas:
        snap.gap(f"{pat}.topologyRequest {NOT_REPLAYED_TAS}", TAS, workload=key)
    count = ps.get("count", 1)
    if not isinstance(count, int) or count < 0:
        raise InputError(f"{pat}.count: {count!r} is not a pod count (fix: a whole number, "
                         "0 or more)")
    return PodSet(str(ps.get("name", f"ps{pi}")), count,
                  pod_requests(pspec, _request, f"{pat}.template.spec"),
                  dict(pspec.get("nodeSelector") or {}), tuple(pspec.get("tolerations") or []),
                  _min_count(ps.get("minCount"), count, pat), _affinity(pspec), tas)


def _workload(obj: Obj, where: str, lq: dict[str, str], priorities: dict[str, int],
              snap: Snapshot) -> Workload:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    ns = str(meta.get("namespace", "default"))
    qn = spec.get("queueName")
    if not qn:
        raise InputError(f"{where}: spec.queueName is missing (fix: name the LocalQueue)")
    key = f"{ns}/{qn}"
    podsets = [_podset(ps, pi, where, f"{ns}/{meta.get('name')}", snap)
               for pi, ps in enumerate(spec.get("podSets") or [])]
    if not podsets:
        raise InputError(f"{where}: spec.podSets is empty (fix: a Workload needs a pod set)")
    if sum(p.min_count is not None for p in podsets) > 1:  # Kueue's workload webhook
        raise InputError(f"{where}: spec.podSets: at most one podSet can use minCount (fix: "
                         "keep minCount on one pod set)")
    prio = spec.get("priority")
    ref = spec.get("priorityClassRef") or {}
    pcn = ref.get("name") or spec.get("priorityClassName")
    if prio is None and pcn:
        if pcn not in priorities:
            raise InputError(f"{where}: spec.priorityClassRef: WorkloadPriorityClass {pcn} is "
                             "not in the snapshot (fix: include 'kubectl get "
                             "workloadpriorityclasses -o yaml')")
        prio = priorities[pcn]
    conds = {c.get("type"): c for c in status.get("conditions") or []}
    admission = None
    reserved = conds.get("QuotaReserved", {})
    adm = status.get("admission")
    if adm and reserved.get("status") == "True":
        admission = {str(p.get("name")): {str(r): str(f) for r, f in
                                           (p.get("flavors") or {}).items()}
                     for p in adm.get("podSetAssignments") or []}
        names = {p.name for p in podsets}
        for name in admission:
            if name not in names:
                raise InputError(f"{where}: status.admission.podSetAssignments: pod set "
                                 f"{name!r} is not in spec.podSets ({', '.join(sorted(names))})"
                                 " (fix: take the Workload from the cluster as it is)")
        if adm.get("clusterQueue") and key in lq and adm["clusterQueue"] != lq[key]:
            snap.unsupported.append(f"{where}: status.admission.clusterQueue differs from "
                                    "its LocalQueue's (counted in the LocalQueue's "
                                    "ClusterQueue)")
    if conds.get("Finished", {}).get("status") == "True":
        admission = None
    return Workload(
        key=f"{ns}/{meta.get('name')}", uid=str(meta.get("uid", meta.get("name"))),
        created=_time(meta.get("creationTimestamp"), where), priority=int(prio or 0),
        queue_name=str(qn), cluster_queue=lq.get(key, ""), podsets=tuple(podsets),
        admission=admission, admitted_in=str((adm or {}).get("clusterQueue") or ""),
        admitted_counts=_admitted_counts(adm, podsets) if admission and adm else None,
        check_states={str(c.get("name")): str(c.get("state"))
                      for c in status.get("admissionChecks") or []},
        admitted_at=_time(reserved.get("lastTransitionTime"), where),
        active=bool(spec.get("active", True))
        and conds.get("Finished", {}).get("status") != "True",
        # The scheduler's requeue writes reason Pending (the workload then waits among the
        # inadmissible); the workload controller's "ClusterQueue ... is inactive" for a queue
        # the scheduler skips writes Inadmissible, and the workload is still in the heap.
        evaluated=reserved.get("status") == "False" and reserved.get("reason") != "Inadmissible")

# ---------------------------------------------------------------------------- DRA claims
# Kueue v0.19.2 pkg/dra/claims.go (countDevicesPerClass, GetResourceRequestsForResourceClaim-
# Templates), pkg/dra/mapper.go, pkg/controller/core/workload_controller.go (Reconcile) and
# pkg/workload/workload.go (totalRequestsFromPodSets): each pod set's claim templates give
# devices per DeviceClass (ExactCount only); each class becomes its mapped quota resource,
# added per pod after excludeResourcePrefixes, then times the pod count. The first refusal
# ends the reading and the workload waits, inadmissible, with the field error as its message.
# Errors are written as apimachinery's field.Error prints them ("<field>: <type>: <value>:
# <detail>", the value as JSON).


@dataclass(frozen=True)
class ClaimTemplate:
    devices: dict[str, int]  # DeviceClass -> devices, summed over the template's requests
    error: tuple[str, str, str] | None = None  # (field, "<type>: <value>", detail)
    cel: bool = False  # CEL selectors: Kueue checks them against ResourceSlices


def _claim_template(obj: Obj) -> ClaimTemplate:
    spec = ((obj.get("spec") or {}).get("spec") or {})
    devices: dict[str, int] = {}
    cel = False
    for k, r in enumerate((spec.get("devices") or {}).get("requests") or []):
        at = f"devices.requests[{k}]"
        if r.get("firstAvailable"):
            return ClaimTemplate({}, (at, "Invalid value: null",
                                      "FirstAvailable device selection is not supported"))
        ex = r.get("exactly")
        if ex is None:
            return ClaimTemplate({}, (at, "Invalid value: null",
                                      "Exactly must be set if FirstAvailable is nil"))
        cel = cel or any(sel.get("cel") for sel in ex.get("selectors") or [])
        mode = ex.get("allocationMode", "ExactCount")  # the API server's default
        if ex.get("adminAccess"):
            return ClaimTemplate({}, (f"{at}.exactly.adminAccess", "Invalid value: null",
                                      "AdminAccess is not supported"))
        if mode == "All":
            return ClaimTemplate({}, (f"{at}.exactly.allocationMode", 'Invalid value: "All"',
                                      "AllocationMode 'All' is not supported"))
        if mode != "ExactCount":
            return ClaimTemplate({}, (f"{at}.exactly.allocationMode",
                                      f"Invalid value: {json.dumps(mode)}",
                                      f"unsupported allocation mode: {mode}"))
        dc = str(ex.get("deviceClassName") or "")
        if dc:
            devices[dc] = devices.get(dc, 0) + int(ex.get("count", 1))
    return ClaimTemplate(devices, cel=cel)


def _mappings(res: Obj, where: str, snap: Snapshot) -> None:
    """``resources.deviceClassMappings``: the first mapping naming a class wins (mapper.go)."""
    counters: set[str] = set()
    for mi, m in enumerate(res.get("deviceClassMappings") or []):
        if not m.get("name") or not m.get("deviceClassNames"):
            raise InputError(f"{where} resources.deviceClassMappings[{mi}]: needs name and "
                             "deviceClassNames")
        for dc in m["deviceClassNames"]:
            snap.device_classes.setdefault(str(dc), str(m["name"]))
            if any(src.get("counter") for src in m.get("sources") or []):
                counters.add(str(dc))
    snap.counted_by_counters = frozenset(counters)


def _devices(obj: Obj, wl: Workload, templates: dict[str, ClaimTemplate], snap: Snapshot,
             where: str) -> None:
    """Adds the pod sets' claimed devices to their requests, or sets ``wl.refused``."""
    if wl.refused:  # not queued at all
        return
    ns = wl.key.split("/", 1)[0]
    raw = [((p.get("template") or {}).get("spec") or {}).get("resourceClaims") or []
           for p in (obj.get("spec") or {}).get("podSets") or []]
    if any(c.get("resourceClaimName") for claims in raw for c in claims):
        wl.refused = "KueueDRAIntegration feature does not support use of resource claims"
        return
    podsets = []
    for i, (ps, claims) in enumerate(zip(wl.podsets, raw, strict=True)):
        extra: dict[str, int] = {}
        for j, c in enumerate(claims):
            name = c.get("resourceClaimTemplateName")
            if not name:
                continue
            at = f"spec.podSets[{i}].template.spec.resourceClaims[{j}]"
            t = templates.get(f"{ns}/{name}")
            if t is None and not templates:  # a snapshot without any: say so, count none
                snap.gap(
                    f"{where} {at}: ResourceClaimTemplate {ns}/{name} is not in the snapshot, "
                    "its devices are not counted (fix: include 'kubectl get "
                    "resourceclaimtemplates -A -o yaml')", "DRA claims", workload=wl.key)
                continue
            if t is None:  # Kueue's Get fails: an internal error, retried with backoff;
                # controller-runtime's cache names the Kind (seen on the real Kueue)
                wl.refused = (f"{at}: Internal error: failed to get claim spec for "
                              f"ResourceClaimTemplate {name} in podset {ps.name}: "
                              f"ResourceClaimTemplate.resource.k8s.io \"{name}\" not found")
                return
            if t.error:
                f, body, detail = t.error
                wl.refused = f"{at}.{f}: {body}: ResourceClaimTemplate {name}: {detail}"
                return
            if t.cel:
                snap.gap(f"{where} {at}: ResourceClaimTemplate {ns}/{name} CEL selectors "
                         "(Kueue checks them against ResourceSlices; not replayed)",
                         "DRA CEL selectors", workload=wl.key)
            for dc, n in t.devices.items():
                res = snap.device_classes.get(dc)
                if res is None:
                    wl.refused = (f"{at}.resourceClaimTemplateName: Not found: \"DeviceClass "
                                  f"{dc} is not mapped in DRA configuration for podset "
                                  f"{ps.name}\"")
                    return
                if dc in snap.counted_by_counters:  # KueueDRAIntegrationPartitionableDevices
                    snap.gap(f"{where} {at}: DeviceClass {dc} counted by ResourceSlice "
                             "counters (not replayed)", "DRA counters", workload=wl.key)
                    continue
                extra[res] = extra.get(res, 0) + n
        req = dict(ps.requests)
        for r, n in extra.items():
            req[r] = req.get(r, 0) + n
        podsets.append(dataclasses.replace(ps, requests=req) if extra else ps)
    wl.podsets = tuple(podsets)


def _configuration(cfg: Obj, where: str, snap: Snapshot) -> None:
    av = cfg.get("apiVersion")
    if av not in CONFIG_VERSIONS:
        raise InputError(f"{where}: apiVersion {av!r}: this replay reads "
                         f"{' or '.join(CONFIG_VERSIONS)}")
    for key in ("fairSharing", "resources", "admissionFairSharing", "waitForPodsReady"):
        if cfg.get(key) is not None and not isinstance(cfg[key], dict):
            raise InputError(f"{where} {key}: {cfg[key]!r} is not a mapping (fix: see Kueue's "
                             "Configuration reference)")
    fs = cfg.get("fairSharing")
    # v1beta2: the section's presence enables fair sharing; v1beta1 had an enable flag.
    snap.fair_sharing = fs is not None and (av.endswith("v1beta2") or bool(fs.get("enable")))
    if fs and fs.get("preemptionStrategies"):
        snap.strategies = tuple(_choice(s, ("LessThanOrEqualToFinalShare",
                                            "LessThanInitialShare"),
                                        f"{where} fairSharing.preemptionStrategies")
                                for s in fs["preemptionStrategies"])
    res = cfg.get("resources") or {}
    snap.excluded_prefixes = tuple(res.get("excludeResourcePrefixes") or ())
    _mappings(res, where, snap)
    afs = cfg.get("admissionFairSharing")
    if afs:
        snap.unsupported.append(f"{where}: {NOT_REPLAYED_AFS}")
        snap.admission_fair_sharing = AdmissionFairSharing(half_life_s=duration(
            afs.get("usageHalfLifeTime", "1h"), f"{where} admissionFairSharing.usageHalfLifeTime"))
    wait = cfg.get("waitForPodsReady")
    if (wait or {}).get("blockAdmission"):
        snap.gap(f"{where}: waitForPodsReady.blockAdmission",
                 "waitForPodsReady.blockAdmission", everywhere=True)
    if wait is not None and (av.endswith("v1beta2") or bool(wait.get("enable"))):
        snap.wait_for_pods_ready = _pods_ready(wait, av, f"{where} waitForPodsReady")
    if res.get("transformations"):
        snap.gap(f"{where}: resources.transformations", "resources.transformations",
                 everywhere=True)


def _pods_ready(wait: Obj, av: str, where: str) -> WaitForPodsReady:
    """v1beta2: the section's presence turns it on, timeout 30 min unless set; v1beta1: its
    ``enable``, 5 min (``apis/config/*/defaults.go``)."""
    rq = wait.get("requeuingStrategy") or {}
    limit = rq.get("backoffLimitCount")
    return WaitForPodsReady(
        timeout_s=duration(wait.get("timeout") or ("30m" if av.endswith("v1beta2") else "5m"),
                           f"{where}.timeout"),
        backoff_base_s=float(rq.get("backoffBaseSeconds", 60)),
        backoff_max_s=float(rq.get("backoffMaxSeconds", 3600)),
        backoff_limit=None if limit is None else int(limit))


@dataclass
class _Parts:
    """What the reading of the objects keeps for the steps after it."""

    lq: dict[str, str] = field(default_factory=dict)  # namespace/name -> ClusterQueue
    priorities: dict[str, int] = field(default_factory=dict)
    workloads: list[tuple[Obj, str]] = field(default_factory=list)
    held: set[str] = field(default_factory=set)  # LocalQueues with a stopPolicy
    templates: dict[str, ClaimTemplate] = field(default_factory=dict)  # namespace/name
    seen: set[str] = field(default_factory=set)


def parse(objects: Iterable[Obj], source: str = "<snapshot>",
          load_text: Callable[[str, str], list[Obj]] | None = None) -> Snapshot:
    """Objects -> Snapshot; see the module docstring for what is read and refused.
    ``load_text(text, where)`` parses the Configuration embedded in Kueue's ConfigMap (the
    caller's YAML reader: this module does no parsing of text)."""
    snap = Snapshot({}, {}, {}, [])
    parts = _Parts()
    for obj in objects:
        _object(obj, source, snap, parts, load_text)
    _finish(snap, parts, source)
    return snap


def _object(obj: Obj, source: str, snap: Snapshot, parts: _Parts,
            load_text: Callable[[str, str], list[Obj]] | None) -> None:
    kind = obj.get("kind")
    av = str(obj.get("apiVersion", ""))
    where = _where(source, obj)
    if not (obj.get("metadata") or {}).get("name") and kind not in ("ConfigMap",
                                                                     "Configuration"):
        raise InputError(f"{where}: metadata.name is missing")
    if kind in KUEUE_KINDS:
        if where in parts.seen:  # a cluster holds one; a folder of files may hold two
            raise InputError(f"{where}: given twice (fix: keep one copy of each object)")
        parts.seen.add(where)
    if kind == "Configuration":
        _configuration(obj, where, snap)
    elif kind == "ConfigMap":
        _config_map(obj, where, snap, load_text)
    elif kind == "Namespace":  # its labels, for the ClusterQueues' namespaceSelector
        labels = dict((obj.get("metadata") or {}).get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", str(obj["metadata"]["name"]))
        snap.namespaces = {**(snap.namespaces or {}), str(obj["metadata"]["name"]): labels}
    elif kind in ("Node", "Pod") or kind in PARAMETER_KINDS:
        pass  # quota needs no nodes (TAS reads them: tas_input); nor a check's parameters
    elif kind == "ResourceClaimTemplate":
        if av != DRA_VERSION:
            raise InputError(f"{where}: apiVersion {av!r}: this replay reads "
                             f"{DRA_VERSION} (as Kueue v0.19 does)")
        ns = obj["metadata"].get("namespace", "default")
        parts.templates[f"{ns}/{obj['metadata']['name']}"] = _claim_template(obj)
    elif kind not in KUEUE_KINDS:
        raise InputError(f"{where}: kind {kind!r} is not a Kueue object this replay reads "
                         f"(fix: pass only {', '.join(KUEUE_KINDS)}, "
                         "ResourceClaimTemplate, Node, Namespace, Configuration)")
    elif av not in KUEUE_VERSIONS:
        raise InputError(f"{where}: apiVersion {av!r}: this replay reads "
                         f"{' or '.join(KUEUE_VERSIONS)} (Kueue v0.19)")
    else:
        _kueue_object(obj, str(kind), where, snap, parts)


def _config_map(obj: Obj, where: str, snap: Snapshot,
                load_text: Callable[[str, str], list[Obj]] | None) -> None:
    text = (obj.get("data") or {}).get("controller_manager_config.yaml")
    if text is None:
        return  # some other ConfigMap: not Kueue's
    if load_text is None:
        raise InputError(f"{where}: a ConfigMap's embedded Configuration needs a "
                         "YAML reader (fix: pass the Configuration itself)")
    docs = load_text(str(text), where)
    if not docs:
        raise InputError(f"{where}: data.controller_manager_config.yaml holds no "
                         "Configuration mapping (fix: embed Kueue's Configuration "
                         "YAML there)")
    _configuration(docs[0], where, snap)


def _kueue_object(obj: Obj, kind: str, where: str, snap: Snapshot, parts: _Parts) -> None:
    spec = obj.get("spec") or {}
    name = str(obj["metadata"]["name"])
    if kind == "ResourceFlavor":
        for key in sorted(set(spec) - _RF_FIELDS):
            snap.gap(f"{where}: spec.{key}", f"ResourceFlavor spec.{key}", flavor=name)
        if spec.get("topologyName"):  # who may use it: kueue.assign.check_flavor
            snap.unsupported.append(f"{where}: spec.topologyName {NOT_REPLAYED_TAS}")
        snap.flavors[name] = Flavor(name, dict(spec.get("nodeLabels") or {}),
                                    tuple(spec.get("nodeTaints") or ()),
                                    tuple(spec.get("tolerations") or ()),
                                    spec.get("topologyName"))
    elif kind == "ClusterQueue":
        snap.cluster_queues[name] = _cluster_queue(obj, where, snap)
    elif kind == "Cohort":
        for key in sorted(set(spec) - _COHORT_FIELDS):
            snap.gap(f"{where}: spec.{key}", f"Cohort spec.{key}", cohort=name)
        snap.cohorts[name] = Cohort(name, spec.get("parentName", spec.get("parent")),
                                    _groups(spec, where), _weight(spec, where))
    elif kind == "LocalQueue":
        ns = obj["metadata"].get("namespace", "default")
        if not spec.get("clusterQueue"):
            raise InputError(f"{where}: spec.clusterQueue is missing")
        parts.lq[f"{ns}/{name}"] = str(spec["clusterQueue"])
        if spec.get("stopPolicy", "None") != "None":
            parts.held.add(f"{ns}/{name}")
        if spec.get("fairSharing"):
            snap.unsupported.append(f"{where}: spec.fairSharing (admission fair sharing)")
    elif kind == "WorkloadPriorityClass":
        parts.priorities[name] = int(obj.get("value", 0))
    elif kind == "AdmissionCheck":  # Kueue's cache: active when its condition says so
        conds = (obj.get("status") or {}).get("conditions") or []
        snap.admission_checks = {**(snap.admission_checks or {}), name: any(
            c.get("type") == "Active" and c.get("status") == "True" for c in conds)}
    elif kind == "Topology":
        snap.unsupported.append(f"{where}: Topology {NOT_REPLAYED_TAS}")
    else:
        parts.workloads.append((obj, where))


def _finish(snap: Snapshot, parts: _Parts, source: str) -> None:
    """What needs every object read: queues' flavors and checks, then the workloads."""
    for q in snap.cluster_queues.values():
        for g in q.groups:
            for f in g.flavors:
                if f.flavor not in snap.flavors:
                    snap.unsupported.append(
                        f"{source}: ClusterQueue {q.name} names ResourceFlavor {f.flavor}, "
                        "not in the snapshot (Kueue keeps the queue inactive)")
        if q.tas_only(snap.flavors):  # every pod set is placed by TAS (isTASImplied)
            snap.gap(f"{source}: ClusterQueue {q.name}: every flavor is topology-aware "
                     f"{NOT_REPLAYED_TAS}", TAS, cluster_queue=q.name)
        if q.checks and snap.admission_checks is None:  # missing, or not captured
            snap.gap(f"{source}: ClusterQueue {q.name}: admission checks "
                     f"{', '.join(n for n, _ in q.checks)}: no AdmissionCheck in the "
                     "snapshot (fix: include 'kubectl get admissionchecks -o yaml')",
                     "admissionChecks", cluster_queue=q.name)
    snap.local_queues = parts.lq
    workloads = parts.workloads
    snap.workloads = [_workload(o, w, parts.lq, parts.priorities, snap) for o, w in workloads]
    for (_, where), wl in zip(workloads, snap.workloads, strict=True):
        _queued(wl, snap)
        _namespace(wl, snap, where)
        if not wl.refused:
            _check_admission(wl, snap.cluster_queues[wl.cluster_queue], where,
                             snap.unsupported)
    if snap.excluded_prefixes:  # resources.excludeResourcePrefixes: not quota at all
        for wl in snap.workloads:
            wl.podsets = tuple(dataclasses.replace(p, requests={
                r: v for r, v in p.requests.items()
                if not r.startswith(snap.excluded_prefixes)}) for p in wl.podsets)
    for (obj, where), wl in zip(workloads, snap.workloads, strict=True):
        _devices(obj, wl, parts.templates, snap, where)  # after the exclusion, as Kueue does
    for wl in snap.workloads:
        if f"{wl.key.split('/', 1)[0]}/{wl.queue_name}" in parts.held and wl.admission is None:
            wl.active = False
            wl.held = True
    _check_cycles(snap, source)


def _queued(wl: Workload, snap: Snapshot) -> None:
    """A Workload whose LocalQueue or ClusterQueue does not exist is a normal cluster state:
    Kueue's workload controller leaves it pending (QuotaReserved False, reason Inadmissible,
    its message; ``getQueueBlocker``). One admitted before its queue went keeps counting in
    the ClusterQueue of its admission."""
    if wl.cluster_queue in snap.cluster_queues:
        return
    if wl.admission is not None and wl.admitted_in in snap.cluster_queues:
        wl.cluster_queue = wl.admitted_in
        return
    wl.refused = (f"LocalQueue {wl.queue_name} doesn't exist" if not wl.cluster_queue
                  else f"ClusterQueue {wl.cluster_queue} doesn't exist")
    wl.cluster_queue, wl.admission = "", None


NAMESPACE_MISMATCH = "workload namespace doesn't match ClusterQueue selector"


def _namespace(wl: Workload, snap: Snapshot, where: str) -> None:
    """The ClusterQueue's namespaceSelector (Kueue's ``ValidateAdmissibility`` before each
    nomination): null admits no namespace, ``{}`` every one; other selectors need the
    Namespace's labels, so without them in the snapshot the decision is unknown."""
    if wl.refused or wl.admission is not None:
        return
    sel = snap.cluster_queues[wl.cluster_queue].namespace_selector
    if sel == {}:
        return
    ns = wl.key.split("/", 1)[0]
    if sel is not None and (snap.namespaces is None or ns not in snap.namespaces):
        snap.gap(f"{where}: namespaceSelector of ClusterQueue {wl.cluster_queue}: Namespace "
                 f"{ns} is not in the snapshot (fix: include 'kubectl get namespaces -o "
                 "yaml')", "namespaceSelector", workload=wl.key)
        return
    if not selects(sel, (snap.namespaces or {}).get(ns, {})):
        wl.refused, wl.refused_reason = NAMESPACE_MISMATCH, "NamespaceMismatch"


def _check_admission(wl: Workload, cq: ClusterQueue, where: str, notes: list[str]) -> None:
    """An admission on a flavor or resource the queue no longer lists (the queue was edited
    after it): Kueue keeps counting it; here it counts against no quota, said by name."""
    quota = {(f.flavor, r) for g in cq.groups for f in g.flavors for r in f.resources}
    for ps, flavors in (wl.admission or {}).items():
        for res, flavor in sorted(flavors.items()):
            if (flavor, res) not in quota:
                notes.append(f"{where}: status.admission pod set {ps}: {res} on flavor "
                             f"{flavor}, which ClusterQueue {cq.name} has no quota for "
                             "(counted against none)")


def _check_cycles(snap: Snapshot, source: str) -> None:
    for c in snap.cohorts.values():
        seen = {c.name}
        p = c.parent
        while p is not None:
            if p in seen:
                snap.unsupported.append(f"{source}: Cohort {c.name}: parent chain has a cycle "
                                        f"through {p} (Kueue keeps its queues inactive)")
                break
            seen.add(p)
            p = snap.cohorts[p].parent if p in snap.cohorts else None


Decision = Literal["admitted", "preempted", "pending"]
