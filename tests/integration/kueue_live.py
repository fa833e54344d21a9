"""Run a generated scenario on the real Kueue and replay its snapshot: the differential test.

Used by ``test_kueue_diff_live.py`` (the CI seed set) and ``bench/kueue_diff.py`` (the larger
set). Steps per scenario (:mod:`aiplat.kueue.scenarios`):

1. the cohort tree is created with a cycle through its ``gate`` cohort (every queue
   inactive), then queues, LocalQueues, priority classes and the phase-a workloads;
2. the cycle is broken (all queues start at once) and Kueue settles;
3. the cycle is made again, the phase-b workloads are created, and the snapshot is taken
   as ``kubectl get -o yaml`` would return it;
4. the cycle is broken, Kueue settles; each workload's state is read back;
5. ``aiplat sim replay`` logic runs on the snapshot (the gate open, as in step 4) and every
   workload's admission and flavors are compared.

Standalone Workloads have no job controller to finish an eviction, so this module plays it
(as ``jobframework`` does for a stopped job): an Evicted workload that still holds quota gets
its reservation cleared and is requeued.
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field
from typing import Any

from aiplat.kube.apply import Api, ApiError
from aiplat.kueue.cycle import Outcome, Replay
from aiplat.kueue.scenarios import API, Scenario
from aiplat.kueue.snapshot import parse
from aiplat.kueue.unknown import decide

Obj = dict[str, Any]
Decided = tuple[bool, dict[str, dict[str, str]], dict[str, int]]  # admitted, flavors, counts
KINDS = ("ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass",
         "Workload")


@dataclass
class Result:
    seed: int
    kueue: dict[str, Decided]
    sim: dict[str, Decided]
    preempted_kueue: dict[str, str] = field(default_factory=dict)
    preempted_sim: dict[str, str] = field(default_factory=dict)
    snapshot: list[Obj] = field(default_factory=list)
    final: dict[str, Obj] = field(default_factory=dict)  # Kueue's workloads at the end

    def differences(self) -> list[str]:
        out = []
        for k in sorted(self.kueue):
            if self.kueue[k] != self.sim.get(k):
                out.append(f"seed {self.seed} {k}: kueue {self.kueue[k]} sim {self.sim.get(k)}")
        return out


def _conds(wl: Obj) -> dict[str, Obj]:
    return {c["type"]: c for c in (wl.get("status") or {}).get("conditions") or []}


def _mine(objs: list[Obj], prefix: str) -> list[Obj]:
    return [o for o in objs if o["metadata"]["name"].startswith(prefix + "-")]


def list_objects(api: Api, prefix: str) -> list[Obj]:
    """The scenario's objects, and the namespace its workloads are in (its labels decide
    the ClusterQueues' namespaceSelector)."""
    out = [{"apiVersion": "v1", "kind": "Namespace", **o} for o in api.objects("v1", "Namespace")
           if o["metadata"]["name"] == "default"]
    for kind in KINDS:
        for o in _mine(api.objects(API, kind), prefix):
            out.append({"apiVersion": API, "kind": kind, **o})
    return out


def workloads(api: Api, prefix: str) -> list[Obj]:
    return _mine(api.objects(API, "Workload", "default"), prefix)


def _finish_evictions(api: Api, wls: list[Obj],
                      counts: dict[tuple[str, str], int] | None = None) -> int:
    """Play the job controller: clear the quota of Evicted workloads (jobframework step 6).
    ``counts``: (victim, preemptor) -> evictions finished, the preemptor read from Kueue's
    message ("Preempted to accommodate a workload (UID: ...")."""
    done = 0
    names = {w["metadata"].get("uid"): w["metadata"]["name"] for w in wls}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for wl in wls:
        c = _conds(wl)
        if c.get("Evicted", {}).get("status") != "True" or \
                c.get("QuotaReserved", {}).get("status") != "True":
            continue
        new = copy.deepcopy(wl)
        st = new.setdefault("status", {})
        st.pop("admission", None)
        keep = [x for x in st.get("conditions", []) if x["type"] not in (
            "QuotaReserved", "Admitted", "Requeued")]
        msg = c["Evicted"].get("message", "")
        keep += [
            {"type": "QuotaReserved", "status": "False", "reason": "Pending",
             "message": msg, "lastTransitionTime": now},
            {"type": "Admitted", "status": "False", "reason": "NoReservation",
             "message": "The workload has no reservation", "lastTransitionTime": now},
            {"type": "Requeued", "status": "True", "reason": c["Evicted"].get("reason",
                                                                              "Preempted"),
             "message": msg, "lastTransitionTime": now}]
        st["conditions"] = keep
        path = api.path(new) + "/status"
        r = api._request("PUT", path, json=new)
        if r.status_code < 400:
            done += 1
            if counts is not None:
                uid = re.search(r"\(UID: ([^,)]+)", msg)
                pair = (wl["metadata"]["name"], names.get(uid.group(1), uid.group(1))
                        if uid else "?")
                counts[pair] = counts.get(pair, 0) + 1
    return done


def _state(wls: list[Obj]) -> tuple[Any, ...]:
    return tuple(sorted((w["metadata"]["name"], w["metadata"].get("resourceVersion"))
                        for w in wls))


SETTLE_TIMEOUT = 120.0  # s; bench/kueue_diff.py --settle waits longer for a churn to end


class NotSettledError(AssertionError):
    """Kueue kept changing its decisions: the evictions the harness finished meanwhile, per
    (victim, preemptor), and the scenario's snapshot (set by the caller)."""

    def __init__(self, message: str, evictions: dict[tuple[str, str], int]) -> None:
        super().__init__(message)
        self.evictions = evictions
        self.snapshot: list[Obj] = []


LOOP_EVICTIONS = 3  # a victim evicted this often by one preemptor: Kueue is in a loop


def settle(api: Api, prefix: str, quiet: float = 3.0, timeout: float | None = None) -> None:
    """Wait until no workload of the scenario changes for ``quiet`` seconds."""
    timeout = SETTLE_TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + timeout
    last: tuple[Any, ...] | None = None
    since = time.monotonic()
    counts: dict[tuple[str, str], int] = {}
    while time.monotonic() < deadline:
        wls = workloads(api, prefix)
        if _finish_evictions(api, wls, counts):
            last, since = None, time.monotonic()
            time.sleep(0.2)
            continue
        st = _state(wls)
        if st != last:
            last, since = st, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.3)
    raise NotSettledError(f"{prefix}: Kueue did not settle within {timeout:.0f} s", counts)


def _wait_seen(api: Api, sc: Scenario, timeout: float = 30.0) -> None:
    """Until Kueue has marked the new workloads inactive (the gate holds; the ClusterQueue's
    own Active condition is not refreshed for a cohort cycle). It marks one head per queue
    per cycle, each going to the inadmissible list, so a BestEffortFIFO queue's workloads
    are all marked in turn; a StrictFIFO head stays first, so only it is. A snapshot taken
    before a queue is done leaves its unmarked workloads in the heap: when the gate opens
    they have a cycle to themselves before the cohort's requeue brings the marked ones back
    (seen on seed 12 under load: a priority-2 workload admitted ahead of its queue).
    A queue whose head is a pending phase-a workload may never reach the new ones (a
    StrictFIFO head, say): so this also returns once nothing new was marked for 2 s."""
    strict = {o["metadata"]["name"] for o in sc.setup if o["kind"] == "ClusterQueue"
              and o["spec"].get("queueingStrategy") == "StrictFIFO"}
    by_queue: dict[str, set[str]] = {}
    for w in sc.phase_b:
        by_queue.setdefault(w["spec"]["queueName"], set()).add(w["metadata"]["name"])
    deadline = time.monotonic() + timeout
    last: set[str] = set()
    since = time.monotonic()
    while time.monotonic() < deadline:
        seen = {w["metadata"]["name"] for w in workloads(api, sc.prefix)
                if "QuotaReserved" in _conds(w)}
        if seen != last:
            last, since = seen, time.monotonic()
        if not [q for q, names in by_queue.items()
                if not (names & seen if q in strict else names <= seen)]:
            return
        if seen and time.monotonic() - since >= 2.0:
            return
        time.sleep(0.2)
    raise AssertionError(f"{sc.prefix}: Kueue marked none of the new workloads")


def outcome(wl: Obj) -> Decided:
    """Kueue's decision: quota reserved, the flavors, and the pods of each pod set when it
    admitted fewer than the spec asks (partial admission)."""
    c = _conds(wl)
    adm = (wl.get("status") or {}).get("admission")
    if c.get("QuotaReserved", {}).get("status") == "True" and adm:
        psas = adm.get("podSetAssignments") or []
        asked = {p["name"]: p.get("count", 1) for p in wl["spec"]["podSets"]}
        counts = {p["name"]: p["count"] for p in psas if "count" in p}
        partial = any(asked.get(n, v) != v for n, v in counts.items())
        return True, {p["name"]: dict(p.get("flavors") or {}) for p in psas}, \
            ({**asked, **counts} if partial else {})
    return False, {}, {}


def decided(o: Outcome) -> Decided:
    """The replay's decision in :func:`outcome`'s terms (unknown is not admitted)."""
    return o.shown == "admitted", o.flavors, o.counts


def run(api: Api, sc: Scenario) -> Result:
    """Classic scenarios in two phases behind the cohort gate; fair-sharing ones in one
    phase behind the flavor gate (Kueue with fair sharing does not survive a cohort cycle
    made on a live tree: its cohort status update fails on the cycle and admission stops)."""
    try:
        return _run_flavor_gate(api, sc) if sc.fair_sharing else _run(api, sc)
    finally:
        cleanup(api, sc.prefix)


def _run_flavor_gate(api: Api, sc: Scenario) -> Result:
    """Every queue names every flavor: until the last ResourceFlavor exists no queue is
    active (Kueue's heads skip them), and its creation starts them all at once."""
    flavors = [o for o in sc.setup if o["kind"] == "ResourceFlavor"]
    flavors.sort(key=lambda o: "-f" in o["metadata"]["name"])  # extended ones first
    _apply(api, [sc.cohort(sc.gate, None)])
    _apply(api, [o for o in sc.setup if o["kind"] != "ResourceFlavor"])
    _apply(api, flavors[:-1])
    _apply(api, sc.phase_a + sc.phase_b)
    # Kueue's cache has the workloads, and the requeue they cause has fired: about 0.8 s
    # after they arrive the ClusterQueues' status updates reconcile the cohorts, which asks
    # for the tree's inadmissible workloads to be requeued a batch period (1 s) later.
    # Opened before that, the requeue lands mid-replay at a time no snapshot carries (seed
    # 11: a workload came back to its queue while a preemptor waited for its victim).
    time.sleep(3.0)
    snapshot = [*list_objects(api, sc.prefix), flavors[-1]]
    _apply(api, flavors[-1:])
    _settle_after(api, sc, snapshot)
    return _compare(api, sc, snapshot)


def _settle_after(api: Api, sc: Scenario, snapshot: list[Obj]) -> None:
    try:
        settle(api, sc.prefix)
    except NotSettledError as e:
        e.snapshot = snapshot
        raise


def _apply(api: Api, objs: list[Obj]) -> None:
    for o in objs:
        api.apply(o)


def _run(api: Api, sc: Scenario) -> Result:
    _apply(api, [sc.cohort(sc.gate, sc.root)])  # the cycle: nothing admits yet
    _apply(api, sc.setup)
    _apply(api, sc.phase_a)
    _apply(api, [sc.cohort(sc.gate, None)])
    settle(api, sc.prefix)
    _apply(api, [sc.cohort(sc.gate, sc.root)])
    time.sleep(0.5)  # the cohort controller closes the gate
    _apply(api, sc.phase_b)
    _wait_seen(api, sc)  # then for the cache
    time.sleep(1.0)
    snapshot = list_objects(api, sc.prefix)
    for o in snapshot:
        if o["kind"] == "Cohort" and o["metadata"]["name"] == sc.gate:
            o["spec"].pop("parentName", None)  # replay what happens next: the gate opens
    _apply(api, [sc.cohort(sc.gate, None)])
    _settle_after(api, sc, snapshot)
    return _compare(api, sc, snapshot)


def _objects(sc: Scenario, snapshot: list[Obj]) -> list[Obj]:
    return snapshot + ([{"apiVersion": "config.kueue.x-k8s.io/v1beta2",
                         "kind": "Configuration", "fairSharing": {}}]
                       if sc.fair_sharing else [])


def loops(sc: Scenario, e: NotSettledError) -> dict[str, Any]:
    """A run Kueue never settled: the preemption loops Kueue was in (a victim evicted at
    least ``LOOP_EVICTIONS`` times by one preemptor) against those the replay of the same
    snapshot reports (``Replay.loops``)."""
    r = Replay(parse(_objects(sc, e.snapshot), f"seed {sc.seed}"))
    r.run()
    sim = sorted((v.split("/", 1)[1], p.split("/", 1)[1]) for v, p in r.loops())
    kueue = sorted(pair for pair, n in e.evictions.items() if n >= LOOP_EVICTIONS)
    return {"kueue": kueue, "sim": sim, "agrees": bool(kueue) and kueue == sim,
            "evictions": sorted((*pair, n) for pair, n in e.evictions.items())}


def _compare(api: Api, sc: Scenario, snapshot: list[Obj]) -> Result:
    final = {w["metadata"]["name"]: w for w in workloads(api, sc.prefix)}
    outcomes = decide(parse(_objects(sc, snapshot), f"seed {sc.seed}"))[1]
    res = Result(sc.seed, {n: outcome(w) for n, w in final.items()},
                 {o.workload.split("/", 1)[1]: decided(o) for o in outcomes},
                 snapshot=snapshot, final=final)
    for n, w in final.items():
        p = _conds(w).get("Preempted", {})
        if p.get("status") == "True":
            res.preempted_kueue[n] = p.get("reason", "")
    for o in outcomes:
        if o.preempted:
            res.preempted_sim[o.workload.split("/", 1)[1]] = o.preempted[-1]
    return res


def cleanup(api: Api, prefix: str) -> None:
    gate = f"{prefix}-gate"
    if api.exists(API, "Cohort", gate):  # open the gate first: no cycle left behind
        api.apply({"apiVersion": API, "kind": "Cohort", "metadata": {"name": gate},
                   "spec": {"fairSharing": {"weight": "1"}}})
    for kind in reversed(KINDS):
        ns = "default" if kind in ("LocalQueue", "Workload") else None
        try:
            objs = _mine(api.objects(API, kind, ns), prefix)
        except ApiError:
            continue
        for o in objs:
            api.delete({"apiVersion": API, "kind": kind, **o})
    # ClusterQueues and flavors keep finalizers until their workloads are gone: wait.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not any(_mine(api.objects(API, k), prefix) for k in ("ClusterQueue",
                                                                "ResourceFlavor")):
            break
        time.sleep(0.3)
