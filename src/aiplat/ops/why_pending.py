"""why-pending with Kueue's next cycles: the object walk (``aiplat.kube.pending``) composed
with the replay of Kueue v0.19's scheduler (``aiplat.kueue.cycle``) over the same objects,
one answer that never says "fits" when Kueue would keep the workload pending.

Kueue's decision (:func:`next_cycles`) is what the walk asks for at the step that found the
cause (``decide``); how each step tells it is :mod:`aiplat.kube.pending_answer`'s. Here the
snapshot's Kueue objects go through Kueue's CRD schema (``ops.kueue_input``), the one
reader (``aiplat.kueue.snapshot.parse``, Kueue's Configuration from its ConfigMap) and
``Replay.run`` (one cycle, then until quiet): the workload's outcome — admitted (flavors,
the cycle, whom it preempts) or pending (active or inadmissible, Kueue's reason and message)
— and what the replay does not model that concerns it. Pure: it reads a
:class:`~aiplat.kube.snapshot.ClusterObjects`, no I/O.
"""

from __future__ import annotations

import functools

from aiplat import inputs
from aiplat.errors import InputError
from aiplat.kube.defaults import without_nulls
from aiplat.kube.objects import ref
from aiplat.kube.pending import KUEUE_API, why_pending
from aiplat.kube.pending_answer import Explanation, NextCycles
from aiplat.kube.shape import problems
from aiplat.kube.snapshot import KUEUE, KUEUE_CONFIGMAP, LISTS, ClusterObjects, Obj
from aiplat.kueue.cycle import Replay
from aiplat.kueue.snapshot import NOT_REPLAYED_TAS, TAS, Snapshot, parse
from aiplat.kueue.unknown import decide
from aiplat.ops import kueue_input
from aiplat.ops.kueue_input import without_map_nulls

SHOWN = 10  # errors listed before "and N more"
_MISSING = "is required but missing"  # kube.shape's words
KINDS = {r: LISTS[r][0] for r in ("resourceflavors", "cohorts", "clusterqueues", "localqueues",
                                  "workloads", "admissionchecks")}
"""The lists the replay reads (topology-aware requests are answered by the object walk)."""


# ---------------------------------------------------------------------------- the replay


def _name(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("name", ""))


def _ns(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("namespace", ""))


def kueue_objects(snap: ClusterObjects) -> list[Obj]:
    """The snapshot's Kueue objects as ``aiplat.kueue.snapshot.parse`` reads them: kind and
    apiVersion on each (a list's items may lack them), LocalQueues without their
    ClusterQueue and Workloads without their LocalQueue left out (Kueue cannot schedule
    them; why-pending names that cause itself), Kueue's Configuration from its ConfigMap."""
    cqs = {_name(c) for c in snap.list("clusterqueues")}
    lqs = {(_ns(q), _name(q)) for q in snap.list("localqueues")
           if (q.get("spec") or {}).get("clusterQueue") in cqs}
    out: list[Obj] = []
    for resource, kind in KINDS.items():
        for o in snap.list(resource):
            if kind == "LocalQueue" and (_ns(o), _name(o)) not in lqs:
                continue
            if kind == "Workload" and (_ns(o), (o.get("spec") or {}).get("queueName")) \
                    not in lqs:
                continue
            out.append({**o, "kind": kind, "apiVersion": o.get("apiVersion") or KUEUE_API})
    for cm in snap.list("configmaps"):
        if KUEUE_CONFIGMAP[1] in (cm.get("data") or {}):
            out.append({**cm, "kind": "ConfigMap", "apiVersion": "v1"})
    # the Namespaces' labels, for the ClusterQueues' namespaceSelector
    out += [{**n, "kind": "Namespace", "apiVersion": "v1"} for n in snap.list("namespaces")]
    # the devices Kueue counts as quota through deviceClassMappings (DRA claims)
    out += [{**t, "kind": "ResourceClaimTemplate",
             "apiVersion": t.get("apiVersion") or "resource.k8s.io/v1"}
            for t in snap.list("resourceclaimtemplates")]
    return out


def _load_text(text: str, where: str) -> list[Obj]:
    docs = inputs.parse_yaml_all(text, where, "Kueue's Configuration")
    return [d for d in docs if isinstance(d, dict)]


def _concerns(note: str, key: str, wl_flavors: set[str], cq: str, topology: bool) -> bool:
    """Is an ``unsupported`` note about this workload, its ClusterQueue or (when it asks
    for a topology) its flavors' topologies?"""
    return (f"Workload {key} " in note or f"ClusterQueue {cq}:" in note
            or (topology and any(f"ResourceFlavor {f}:" in note for f in wl_flavors)))


def _asks_topology(snap: ClusterObjects, key: str) -> bool:
    ns, name = key.split("/", 1)
    wl = snap.get("workloads", name, ns) or {}
    return any(ps.get("topologyRequest") for ps in (wl.get("spec") or {}).get("podSets") or [])


def _victims(objects: list[Obj], key: str, cycle: int | None) -> list[str]:
    """Whom admitting ``key`` preempts: the replay cycle by cycle up to its admission, the
    workloads whose eviction names it (a victim may be readmitted later, so the final
    outcomes do not say)."""
    if not cycle:
        return []
    r = Replay(parse(objects, "snapshot", _load_text))
    found: dict[str, str] = {}
    for _ in range(10 * cycle):
        for o in r.run(1):
            if o.decision == "preempted" and f"({key})" in o.message:
                found.setdefault(o.workload, ", ".join(o.preempted))
        if r.outcomes[key].decision == "admitted":
            break
    return [f"{w} ({why})" for w, why in found.items()]


def _without_namespaces(parsed: Snapshot) -> None:
    """A why-pending snapshot without Namespaces (its folder's lists and the live read do
    not take them yet): the namespaceSelector is not checked, as the walk does not check it,
    and the note stays among what the replay does not model, rather than every workload
    behind a selector being unknown."""
    parsed.gaps = [g for g in parsed.gaps if g.feature != "namespaceSelector"]


def _tas_items(snap: ClusterObjects, objects: list[Obj]) -> list[tuple[str, Obj]]:
    """What topology-aware scheduling reads beside the Kueue objects: Topologies, Nodes,
    Pods (``kueue_input.tas_cluster`` decides whether they are enough)."""
    more = [{**o, "kind": kind, "apiVersion": o.get("apiVersion") or api}
            for resource, kind, api in (("topologies", "Topology", KUEUE_API),
                                        ("nodes", "Node", "v1"), ("pods", "Pod", "v1"))
            for o in snap.list(resource)]
    return [("snapshot", o) for o in [*objects, *more]]


def _set_aside(r: Replay, key: str) -> bool:
    """Is ``key`` among the inadmissible workloads before the replay starts? Kueue's next
    cycle does not see it: it waits for a requeue (the replay's first cycle comes after the
    queues start, which brings it back)."""
    return any(q[key].inadmissible for q in r.queues.pending.values() if key in q)


def next_cycles(snap: ClusterObjects, key: str) -> NextCycles:
    """The replay's outcome for the workload ``namespace/name``; InputError when the
    objects are not something the replay reads."""
    objects = kueue_objects(snap)
    parsed = kueue_input.read([("snapshot", o) for o in objects], "snapshot",
                              lambda objs: parse(objs, "snapshot", _load_text),
                              "pass 'kubectl get ... -o yaml' output")
    if not snap.list("namespaces"):
        _without_namespaces(parsed)
    first_run = Replay(parse(objects, "snapshot", _load_text))
    set_aside = _set_aside(first_run, key)
    first = {o.workload: o for o in first_run.run(1)}
    # the Pod list read (a folder's pods.json, the live read's), even empty: an idle cluster
    tas_items, pods = _tas_items(snap, objects), "pods" in snap.items
    cluster = kueue_input.tas_cluster(tas_items, "snapshot", pods_listed=pods)
    missing = None if cluster else kueue_input.tas_missing(tas_items, pods_listed=pods)
    outcomes = decide(parsed, None, cluster)[1]
    out = next((o for o in outcomes if o.workload == key), None)
    wl = next((w for w in parsed.workloads if w.key == key), None)
    if out is None or wl is None:
        raise InputError(f"workload {key} is not among the replayed ones")
    spec = parsed.cluster_queues[wl.cluster_queue]
    flavors = {f.flavor for g in spec.groups for f in g.flavors}
    victims = _victims(objects, key, out.cycle) if out.decision == "admitted" else []
    nxt = first[key]
    next_cycle = ("pending" if set_aside else "admitted" if nxt.decision == "admitted" else
                  "preempting" if nxt.reason == "PendingPreemption" else "pending")
    notes = sorted({(n.split(": ", 1)[1] if ": " in n else n)
                    .replace(f"Workload {key} ", "the workload's ")
                    for n in parsed.unsupported
                    if _concerns(n, key, flavors, wl.cluster_queue, _asks_topology(snap, key))
                    # TAS unknown for lack of an input: said once, as that (unknown_why)
                    and not (missing and n.endswith(NOT_REPLAYED_TAS))})
    return NextCycles(out.decision, out.cycle, out.flavors, victims, out.pending, out.reason,
                      out.message, wl.evaluated, next_cycle, notes,
                      dict(out.counts), {ps.name: ps.count for ps in wl.podsets},
                      out.unknown, list(out.depends_on),
                      missing if missing and out.unknown == TAS else "")


def _as_stored(resource: str, o: Obj) -> Obj:
    """The object as the API server stores it: kind and apiVersion of its list when the
    list's items lack them; nulls in maps dropped (a CRD's schema refuses those in lists,
    Kubernetes' own types read them as absent)."""
    kind, versions = LISTS[resource]
    o = {**o, "kind": o.get("kind") or kind, "apiVersion": o.get("apiVersion") or versions[0]}
    if versions[0] not in KUEUE:
        out: Obj = without_nulls(o)
        return out
    out = without_map_nulls(o)  # metadata is ObjectMeta, decoded as Kubernetes' own types are
    return {**out, "metadata": without_nulls(out["metadata"])} if "metadata" in out else out


def _problems(file: str, resource: str, o: Obj) -> list[str]:
    """``FILE: Kind/ns/name at field: what is wrong`` for each field of ``o`` that is not
    the shape its schema gives (a Kueue kind: Kueue's CRD, strict as the API server is)."""
    kind = LISTS[resource][0]
    if o.get("kind") != kind:
        return [f"{file}: {ref(o)}: kind {o.get('kind')!r} in the list of {kind}s"]
    if LISTS[resource][1][0] in KUEUE:
        return kueue_input.schema_errors([(file, o)])
    # status is the controllers' record: a snapshot's (or a test's) may leave out fields
    # their schema requires, which the walk does not read; a wrong type there still counts
    return [f"{file}: {ref(o)} at {p}: {m}" for p, m in problems(o)
            if not (p.startswith("status") and m == _MISSING)]


def checked(snap: ClusterObjects) -> ClusterObjects:
    """The snapshot as the API server stores it, or an InputError naming each file, object
    and field it would refuse: the walk and the replay read every list's fields and trust
    their types (``metadata: -1`` or ``containers: 5`` would fail inside them)."""
    lists = {r: [_as_stored(r, o) for o in snap.list(r)] for r in snap.items if r in LISTS}
    errors = [e for r, objs in lists.items() for o in objs
              for e in _problems(f"{r}.json", r, o)]
    if errors:
        more = f"\n  ... and {len(errors) - SHOWN} more" if len(errors) > SHOWN else ""
        raise InputError("objects that the API server would refuse (their schemas: "
                         "Kubernetes' own, Kueue v0.19's CRDs):\n  "
                         + "\n  ".join(errors[:SHOWN]) + more + "\n(fix: correct each "
                         "field as named; 'kubectl apply --dry-run=server' tells the same)")
    return ClusterObjects(lists)


def explain(snap: ClusterObjects, name: str, namespace: str | None = None) -> Explanation:
    """why-pending's answer for the Job, Workload or Pod ``name``, with Kueue's next
    cycles; see the module docstring. The objects are checked first (:func:`checked`)."""
    snap = checked(snap)
    return why_pending(snap, name, namespace, functools.partial(next_cycles, snap))


__all__ = ["explain", "kueue_objects", "next_cycles"]
