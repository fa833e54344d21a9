"""why-pending with Kueue's next cycles: the cause ``aiplat.kube.pending`` names, checked
against the replay of Kueue v0.19's scheduler (``aiplat.kueue.cycle``) over the same
objects, so the answer never says "fits" when Kueue would keep the workload pending.

``kube`` and ``sched`` are independent packages; this module composes them (pure: it reads a
:class:`~aiplat.kube.snapshot.Snapshot`, no I/O):

1. ``kube.pending.why_pending`` walks queue, flavors, quota (the cohort tree), topology,
   DRA and placement, and stops at the first blocker.
2. The snapshot's Kueue objects go through ``aiplat.kueue.snapshot.parse`` and ``Replay.run``
   (one cycle, then until quiet): the workload's outcome — admitted (flavors, the cycle,
   whom it preempts) or pending (active or inadmissible, Kueue's reason and message).
3. The two are reconciled (:func:`_reconcile`): quota questions are the replay's to answer
   (it is tested against the real Kueue); what the replay does not model (topology-aware
   scheduling, node affinity, a ClusterQueue kept inactive by its status, DRA devices and
   node placement after admission) stays with the first walk, with the replay's
   quota-only outcome as evidence. When the replay admits a workload that is pending, the
   answer says why it has not been admitted yet: Kueue's scheduler has not tried it since
   the state allowed it (the snapshot is between cycles), or Kueue put it among the
   inadmissible workloads and retries it only on a requeue (quota released in its cohort
   tree, a change to its queues).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiplat import inputs
from aiplat.errors import InputError
from aiplat.kube.pending import Explanation, why_pending
from aiplat.kube.snapshot import Obj, Snapshot
from aiplat.kueue.cycle import Replay
from aiplat.kueue.snapshot import parse
from aiplat.ops import kueue_input

KINDS = {"resourceflavors": "ResourceFlavor", "cohorts": "Cohort",
         "clusterqueues": "ClusterQueue", "localqueues": "LocalQueue",
         "workloads": "Workload"}
KUEUE_API = "kueue.x-k8s.io/v1beta2"
QUOTA = {"Fits", "QuotaExhausted", "CohortExhausted", "BorrowingLimit", "NeverFits",
         "ResourceNotCovered"}
"""Codes the replay decides too: its answer wins when the two differ."""
ADMITTED = {"Admitted", "Unschedulable", "Schedulable", "NoDeviceMatches", "DevicesAllocated",
            "DevicesSpread", "DeviceClassMissing", "ClaimMissing"}
"""Codes of a workload Kueue already admitted: what blocks its pods is not Kueue's."""


@dataclass(frozen=True)
class NextCycles:
    """The replay's outcome for one workload."""

    decision: str  # admitted | pending | preempted
    cycle: int | None  # the replay cycle that admits it (None: admitted before)
    flavors: dict[str, dict[str, str]]
    victims: list[str]  # workloads it preempts, with Kueue's reason
    pending: str  # active | inadmissible, when pending
    reason: str
    message: str
    evaluated: bool  # Kueue already tried it and keeps it among the inadmissible
    next_cycle: str  # what the very next cycle does: admitted | preempting | pending
    not_modelled: list[str]  # what the replay skips that concerns this workload

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"decision": self.decision, "nextCycle": self.next_cycle}
        if self.cycle is not None:
            out["cycle"] = self.cycle
        if self.flavors:
            out["flavors"] = self.flavors
        if self.victims:
            out["preempts"] = self.victims
        if self.decision != "admitted":
            out |= {"pending": self.pending, "reason": self.reason, "message": self.message}
        if self.not_modelled:
            out["notReplayed"] = self.not_modelled
        return out

    def flavor_text(self) -> str:
        return "; ".join(f"{ps}: " + ", ".join(f"{r}={f}" for r, f in fl.items())
                         for ps, fl in self.flavors.items())


@dataclass(frozen=True)
class Answer:
    object: str
    code: str
    reason: str
    evidence: list[str] = field(default_factory=list)
    kueue: NextCycles | None = None
    replay_error: str = ""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"object": self.object, "code": self.code,
                               "reason": self.reason, "evidence": self.evidence}
        if self.kueue is not None:
            out["replay"] = self.kueue.as_dict()
        elif self.replay_error:
            out["replay"] = {"error": self.replay_error}
        return out


# ---------------------------------------------------------------------------- the replay


def _name(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("name", ""))


def _ns(o: Obj) -> str:
    return str((o.get("metadata") or {}).get("namespace", ""))


def kueue_objects(snap: Snapshot) -> list[Obj]:
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
        if "controller_manager_config.yaml" in (cm.get("data") or {}):
            out.append({**cm, "kind": "ConfigMap", "apiVersion": "v1"})
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
    for a topology) its flavors' topologies? Every queue admitting every namespace is left
    out: why-pending does not weigh it either (lint's namespace-selector does)."""
    if "namespaceSelector" in note:
        return False
    return (f"Workload {key} " in note or f"ClusterQueue {cq}:" in note
            or (topology and any(f"ResourceFlavor {f}:" in note for f in wl_flavors)))


DECISIVE = ("topologyRequest", "topologyName", "minCount", "admissionChecks")
"""Notes that can turn the replay's quota answer around (TAS, partial admission, checks)."""


def _asks_topology(snap: Snapshot, key: str) -> bool:
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


def next_cycles(snap: Snapshot, key: str) -> NextCycles:
    """The replay's outcome for the workload ``namespace/name``; InputError when the
    objects are not something the replay reads."""
    objects = kueue_objects(snap)
    parsed = kueue_input.read([("snapshot", o) for o in objects], "snapshot",
                              lambda objs: parse(objs, "snapshot", _load_text),
                              "pass 'kubectl get ... -o yaml' output")
    first = {o.workload: o for o in Replay(parse(objects, "snapshot", _load_text)).run(1)}
    outcomes = Replay(parsed).run()
    out = next((o for o in outcomes if o.workload == key), None)
    wl = next((w for w in parsed.workloads if w.key == key), None)
    if out is None or wl is None:
        raise InputError(f"workload {key} is not among the replayed ones")
    spec = parsed.cluster_queues[wl.cluster_queue]
    flavors = {f.flavor for g in spec.groups for f in g.flavors}
    victims = _victims(objects, key, out.cycle) if out.decision == "admitted" else []
    nxt = first[key]
    next_cycle = ("admitted" if nxt.decision == "admitted" else
                  "preempting" if nxt.reason == "PendingPreemption" else "pending")
    return NextCycles(out.decision, out.cycle, out.flavors, victims, out.pending, out.reason,
                      out.message, wl.evaluated, next_cycle,
                      sorted({(n.split(": ", 1)[1] if ": " in n else n)
                              .replace(f"Workload {key} ", "the workload's ")
                              for n in parsed.unsupported
                              if _concerns(n, key, flavors, wl.cluster_queue,
                                           _asks_topology(snap, key))}))


# ---------------------------------------------------------------------------- the answer


def _replay_line(k: NextCycles) -> str:
    if k.decision == "admitted":
        when = (f"admitted at cycle {k.cycle}" if k.cycle is not None else "already admitted")
        return (f"replay of Kueue's cycle: {when} ({k.flavor_text()})"
                + (f", preempting {', '.join(k.victims)}" if k.victims else ""))
    return (f"replay of Kueue's cycle: stays pending ({k.pending}): {k.reason}"
            + (f": {k.message}" if k.message else ""))


def _why_not_yet(k: NextCycles, cohort: str | None) -> str:
    """Why a workload the replay admits is pending in the snapshot."""
    if k.evaluated:
        where = f"in the tree of cohort {cohort}" if cohort else "in its ClusterQueue"
        return ("Kueue tried it before and keeps it among the inadmissible workloads: it "
                f"retries only on a requeue (quota released {where}, a change to its "
                "queues)")
    if k.next_cycle == "admitted":
        return "Kueue's scheduler has not run a cycle since the state allowed it"
    return (f"{k.cycle - 1 if k.cycle else 0} earlier cycle(s) go first (other queues' "
            "heads, preemptions)")


def _admits(e: Explanation, k: NextCycles, cohort: str | None) -> Answer:
    """The replay admits a workload the snapshot shows pending."""
    flavors = sorted({f for fl in k.flavors.values() for f in fl.values()})
    pre = f", after preempting {', '.join(k.victims)}" if k.victims else ""
    when = "its next cycle" if k.next_cycle == "admitted" else (
        f"a later cycle (cycle {k.cycle} of the replay)")
    return Answer(e.object, "WouldPreempt" if k.victims else "WouldAdmit",
                  f"Kueue admits it on {when} in flavor {', '.join(flavors)}{pre}; "
                  f"still pending because {_why_not_yet(k, cohort)}",
                  [_replay_line(k), *e.evidence], k)


def _pending(e: Explanation, k: NextCycles) -> Answer:
    """The first walk found quota, the replay keeps it pending: Kueue's reason wins."""
    code = {"Pending": "BehindQueueHead", "Inactive": "Inactive"}.get(k.reason, k.reason)
    return Answer(e.object, code or "Pending",
                  f"Kueue keeps it pending ({k.pending}): {k.message or k.reason}",
                  [_replay_line(k), *(x + " (per resource, without the cycle)"
                                      if x.endswith("— fits") else x for x in e.evidence)], k)


def _reconcile(e: Explanation, k: NextCycles, cohort: str | None) -> Answer:
    line = _replay_line(k)
    decisive = [n for n in k.not_modelled if any(d in n for d in DECISIVE)]
    if e.code in ADMITTED:
        return Answer(e.object, e.code, e.reason, [*e.evidence, line], k)
    if e.code in QUOTA - {"Fits"} and k.decision == "admitted":  # preemption, a requeue
        a = _admits(e, k, cohort)
        caveat = ([f"the replay does not model {'; '.join(decisive)}: Kueue may still "
                   "refuse it there"] if decisive else [])
        return Answer(a.object, a.code, a.reason, [*a.evidence, *caveat], k)
    if e.code in QUOTA and not decisive:
        if k.decision == "admitted":
            return _admits(e, k, cohort)
        if e.code == "Fits":
            return _pending(e, k)
        return Answer(e.object, e.code, e.reason, [*e.evidence, line], k)
    if e.code == "Fits" and k.decision == "admitted":  # quota says yes; the rest not replayed
        return Answer(e.object, "QuotaAvailable",
                      f"quota is available and the replay admits it, but it does not model "
                      f"{'; '.join(decisive)}: check those", [line, *e.evidence], k)
    if e.code == "Fits":
        return _pending(e, k)
    if e.code == "WaitingForPreemption" and k.decision == "admitted":
        return Answer(e.object, e.code, e.reason,
                      [*e.evidence, line + " once the victims release their quota"], k)
    if k.decision == "admitted":  # a blocker the replay does not see
        skipped = f"; the replay does not model {'; '.join(k.not_modelled)}" \
            if k.not_modelled else ""
        if e.code in QUEUE_LEVEL:
            skipped += ("; the replay reads the queues' specs, not the conditions Kueue "
                        "set: admitted once the queue is active")
        return Answer(e.object, e.code, e.reason,
                      [*e.evidence, f"{line} — on quota alone{skipped}"], k)
    return Answer(e.object, e.code, e.reason, [*e.evidence, line], k)


def _cohort_of(snap: Snapshot, key: str) -> str | None:
    ns, name = key.split("/", 1)
    wl = snap.get("workloads", name, ns) or {}
    lq = snap.get("localqueues", str((wl.get("spec") or {}).get("queueName", "")), ns) or {}
    cq = snap.get("clusterqueues", str((lq.get("spec") or {}).get("clusterQueue", ""))) or {}
    spec = cq.get("spec") or {}
    c = spec.get("cohortName") or spec.get("cohort")
    return str(c) if c else None


QUEUE_LEVEL = {"LocalQueueStopped", "ClusterQueueInactive", "Deactivated"}
NO_REPLAY = {"NotFound", "NotPending", "LocalQueueMissing", "ClusterQueueMissing",
             "Finished"}


def explain(snap: Snapshot, name: str, namespace: str | None = None) -> Answer:
    """why-pending's answer for the Job, Workload or Pod ``name``, with Kueue's next
    cycles; see the module docstring."""
    e = why_pending(snap, name, namespace)
    if not e.object.startswith("Workload/") or e.code in NO_REPLAY:
        return Answer(e.object, e.code, e.reason, e.evidence)
    key = e.object.removeprefix("Workload/")
    try:
        k = next_cycles(snap, key)
    except InputError as err:
        note = f"the replay of Kueue's cycle could not run: {err}"
        if e.code == "Fits":
            return Answer(e.object, "QuotaAvailable", "quota is available per resource; "
                          f"{note}, so whether Kueue's cycle admits it is not known",
                          e.evidence, replay_error=str(err))
        return Answer(e.object, e.code, e.reason, [*e.evidence, note], replay_error=str(err))
    return _reconcile(e, k, _cohort_of(snap, key))


__all__ = ["Answer", "NextCycles", "explain", "kueue_objects", "next_cycles"]
