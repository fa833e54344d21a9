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

Why a cohort cycle as the gate, although Kueue v0.19.2 can hang on one (:class:`Lab`
restarts it): it is one object whose change stops or starts every queue of the tree at once,
and it leaves the queues as the replay reads them. ClusterQueue (or LocalQueue)
``stopPolicy: Hold`` would gate without a cycle, but each queue is released by an update of
its own, and Kueue runs scheduling cycles between them: the first queues released would
get cycles to themselves that the replay, which opens them together, does not give. A
missing ResourceFlavor in each queue (the fair-sharing runs' gate, which needs no second
closing) would have to be added to every queue for phase b, changing the queues the
snapshot carries (their flavors, generation and whether they are TAS-only).

Standalone Workloads have no job controller to finish an eviction, so this module plays it
(as ``jobframework`` does for a stopped job): an Evicted workload that still holds quota gets
its reservation cleared and is requeued; a cycle's evictions are gathered and finished
together, as the replay finishes them (:func:`_gathered`, :func:`_together`). Where the
outcome depends on the cycle an eviction completes in, the replay names the other outcome
(``aiplat.kueue.timing``) and a run is held against either as a whole
(:meth:`Result.differences`).
"""

from __future__ import annotations

import copy
import json
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiplat.cluster.assets import locate
from aiplat.cluster.run import down, kubeconfig_path, up
from aiplat.kube.apply import Api, ApiError
from aiplat.kueue.cycle import Outcome, Replay
from aiplat.kueue.scenarios import API, Scenario
from aiplat.kueue.snapshot import parse
from aiplat.kueue.tas_admitted import admitted_domains
from aiplat.kueue.tas_input import TasCluster
from aiplat.kueue.tas_world import TasReplay
from aiplat.kueue.unknown import decide
from aiplat.ops.kueue_input import tas_cluster

Obj = dict[str, Any]
Decided = tuple[bool, dict[str, dict[str, str]], dict[str, int]]  # admitted, flavors, counts
Domains = dict[str, list[tuple[tuple[str, ...], int]]]  # pod set -> sorted (values, pods)
KINDS = ("Topology", "ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue",
         "WorkloadPriorityClass", "Workload")


@dataclass
class Result:
    seed: int
    kueue: dict[str, Decided]
    sim: dict[str, Decided]
    preempted_kueue: dict[str, str] = field(default_factory=dict)
    preempted_sim: dict[str, str] = field(default_factory=dict)
    snapshot: list[Obj] = field(default_factory=list)
    final: dict[str, Obj] = field(default_factory=dict)  # Kueue's workloads at the end
    unknown: dict[str, str] = field(default_factory=dict)  # the replay's "unknown (feature)"
    topology_kueue: dict[str, Domains] = field(default_factory=dict)
    topology_sim: dict[str, Domains] = field(default_factory=dict)
    placed: set[str] = field(default_factory=set)  # admitted by the replay (not before)
    # the replay's timing alternatives (kueue.timing): each a whole outcome, with its
    # topology assignments and placed workloads, and when it happens
    alternatives: list[tuple[dict[str, Decided], dict[str, Domains], set[str], str]] = \
        field(default_factory=list)

    def differences(self) -> list[str]:
        """A workload differs when its admission, flavors or counts do, when both admitted
        it on the same flavors but in other topology domains, and when the replay left it
        unknown (counted as a disagreement, whatever Kueue did). Held against the replay's
        outcome or, where it names them, against the outcome of one of its timing
        alternatives as a whole (the one with the fewest differences: :attr:`world`)."""
        return self._against(self.world)

    @property
    def world(self) -> int:
        """0: the replay's own outcome; i: its i-th timing alternative, which Kueue's run
        matches more closely."""
        worlds = range(1 + len(self.alternatives))
        return min(worlds, key=lambda i: len(self._against(i)))

    def _against(self, world: int) -> list[str]:
        sim, topo, placed = (self.sim, self.topology_sim, self.placed) if world == 0 \
            else self.alternatives[world - 1][:3]
        out = []
        for k in sorted(self.kueue):
            if k in self.unknown:
                out.append(f"seed {self.seed} {k}: kueue {self.kueue[k]} sim unknown "
                           f"({self.unknown[k]})")
            elif self.kueue[k] != sim.get(k):
                out.append(f"seed {self.seed} {k}: kueue {self.kueue[k]} sim {sim.get(k)}")
            elif k in placed and (self.topology_kueue.get(k) or {}) != (topo.get(k) or {}):
                out.append(f"seed {self.seed} {k}: topology kueue {self.topology_kueue.get(k)} "
                           f"sim {topo.get(k)}")
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


def cluster_objects(api: Api, sc: Scenario) -> list[Obj]:
    """A TAS scenario's snapshot adds every Node and Pod as the live read lists them."""
    if not sc.nodes:
        return []
    return [{"apiVersion": "v1", "kind": kind, **o} for kind in ("Node", "Pod")
            for o in api.objects("v1", kind)]


def workloads(api: Api, prefix: str) -> list[Obj]:
    return _mine(api.objects(API, "Workload", "default"), prefix)


def _finish_evictions(api: Api, wls: list[Obj],
                      counts: dict[tuple[str, str], int] | None = None) -> int:
    """Play the job controller: clear the quota of Evicted workloads (jobframework step 6).
    Every eviction seen is finished at once (:func:`_together`), as the replay finishes a
    cycle's evictions together: one by one, in the listing's name order, let Kueue run a
    cycle between two of them (seed 5 of the partial-admission runs: its preemptor fit on
    the flavor the first victim freed before the second was gone). Sent together they
    still reach Kueue as separate events, under 2 ms apart, and Kueue retries a preemptor
    every ~10 ms while its preemption is ongoing: a cycle can still fall between them (a
    race, counted as a difference). ``counts``: (victim, preemptor) ->
    evictions finished, the preemptor read from Kueue's message ("Preempted to accommodate
    a workload (UID: ...")."""
    names = {w["metadata"].get("uid"): w["metadata"]["name"] for w in wls}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    todo = [(wl, _requeued(wl, now)) for wl in wls if _evicted(wl)]
    if not todo:
        return 0
    answers = _together(api, [(api.path(new) + "/status", new) for _wl, new in todo])
    done = 0
    for (wl, _new), r in zip(todo, answers, strict=True):
        if r.status_code >= 400:
            continue
        done += 1
        if counts is not None:
            msg = _conds(wl)["Evicted"].get("message", "")
            uid = re.search(r"\(UID: ([^,)]+)", msg)
            pair = (wl["metadata"]["name"], names.get(uid.group(1), uid.group(1))
                    if uid else "?")
            counts[pair] = counts.get(pair, 0) + 1
    return done


def _together(api: Api, puts: list[tuple[str, Obj]]) -> list[Any]:
    """PUT each (path, object) at the same moment: every thread first takes a connection of
    its own (a GET while the others make theirs), then all send at once. Kueue runs a cycle
    every ~10 ms while a preemptor waits: sent one after another (~8 ms apart here, each
    through Kueue's webhook) a cycle can fall between two of a cycle's victims (partial
    seed 5), which the replay releases together."""
    if len(puts) == 1:
        return [api._request("PUT", puts[0][0], json=puts[0][1])]
    warm, go = threading.Barrier(len(puts)), threading.Barrier(len(puts))
    bodies = [json.dumps(o).encode() for _p, o in puts]

    def put(i: int) -> Any:
        warm.wait()
        api._request("GET", "/readyz")
        go.wait()
        return api._request("PUT", puts[i][0], content=bodies[i],
                            headers={"Content-Type": "application/json"})

    with ThreadPoolExecutor(len(puts)) as pool:
        return list(pool.map(put, range(len(puts))))


def _evicted(wl: Obj) -> bool:
    """Evicted by Kueue and still holding its quota: the job controller's turn."""
    c = _conds(wl)
    return c.get("Evicted", {}).get("status") == "True" \
        and c.get("QuotaReserved", {}).get("status") == "True"


def _requeued(wl: Obj, now: str) -> Obj:
    """``wl`` with its reservation cleared and requeued, as jobframework leaves it."""
    c = _conds(wl)
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
    return new


GATHER_TIMEOUT = 0.3  # s; the most a cycle's evictions are waited for
GATHERED = {"listed": 0, "timed out": 0}  # how each gathering ended (bench/kueue_diff.py)


def _rv(o: Obj) -> int:
    return int(o["metadata"].get("resourceVersion") or 0)


def _cycle_listed(wls: list[Obj]) -> bool:
    """Every eviction of the cycles that made the listed ones is in this listing. Kueue
    issues a cycle's preemptions (``processEntry``, step 5 of ``schedule``) before it
    writes any head's status (``requeueAndUpdate``, step 6), and the preemptor's message
    then changes ("... Pending the preemption of N workload(s)"): a preemptor written after
    its victims shows that its cycle's evictions are all done, its own and any other
    preemptor's. (A preemptor whose message did not change writes nothing: the caller's
    timeout.)"""
    by_uid = {w["metadata"].get("uid"): w for w in wls}
    for v in wls:
        if not _evicted(v):
            continue
        uid = re.search(r"\(UID: ([^,)]+)", _conds(v)["Evicted"].get("message", ""))
        p = by_uid.get(uid.group(1)) if uid else None
        if uid and (p is None or _rv(p) < _rv(v)):
            return False
    return True


def _gathered(api: Api, prefix: str, wls: list[Obj]) -> list[Obj]:
    """``wls`` once the evictions of their cycle are all listed (:func:`_cycle_listed`), or
    :data:`GATHER_TIMEOUT` later. Kueue issues a cycle's evictions in parallel, and a
    listing can hold some of them only: finished a poll apart, Kueue schedules between two
    victims of one cycle (partial seed 5), where the replay finishes them together. A fixed
    wait instead has its price: meanwhile Kueue runs cycles against the victims' quota that
    the replay does not run (partial seed 22: a requeue Kueue batches for 1 s came before
    the victim's quota was released and admitted a partial workload with fewer pods)."""
    deadline = time.monotonic() + GATHER_TIMEOUT
    while not (listed := _cycle_listed(wls)) and time.monotonic() < deadline:
        time.sleep(0.02)
        wls = workloads(api, prefix)
    GATHERED["listed" if listed else "timed out"] += 1
    return wls


SETTLE_TIMEOUT = 120.0  # s; bench/kueue_diff.py --settle waits longer for a churn to end


class NotSettledError(AssertionError):
    """Kueue kept changing its decisions: the evictions the harness finished meanwhile, per
    (victim, preemptor), and the scenario's snapshot (set by the caller)."""

    def __init__(self, message: str, evictions: dict[tuple[str, str], int]) -> None:
        super().__init__(message)
        self.evictions = evictions
        self.snapshot: list[Obj] = []


LOOP_EVICTIONS = 3  # a victim evicted this often by one preemptor: Kueue is in a loop


def _decisions(wls: list[Obj]) -> tuple[Any, ...]:
    return tuple(sorted((w["metadata"]["name"], repr(outcome(w)), repr(topology(w)))
                        for w in wls))


def settle(api: Api, prefix: str, quiet: float = 3.0, timeout: float | None = None) -> None:
    """Wait until no admission, flavor, count or topology assignment of the scenario's
    workloads changes for ``quiet`` seconds, its evictions finished meanwhile. Not until
    the workloads stop changing: Kueue v0.19.2 retries some heads every cycle and rewrites
    their condition's message each time, never going quiet (a pending TAS workload that
    fits its quota but not the topology; a StrictFIFO head whose flavor scan goes round,
    its message alternating between two flavors' reasons: partial seed 3's phase a)."""
    timeout = SETTLE_TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + timeout
    last: tuple[Any, ...] | None = None
    since = time.monotonic()
    counts: dict[tuple[str, str], int] = {}
    while time.monotonic() < deadline:
        wls = workloads(api, prefix)
        if any(_evicted(w) for w in wls):
            wls = _gathered(api, prefix, wls)
        if _finish_evictions(api, wls, counts):
            last, since = None, time.monotonic()
            continue
        st = _decisions(wls)
        if st != last:
            last, since = st, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        # often: Kueue runs a cycle every ~10 ms while a preemptor waits, and each one
        # before the victims are gone is one the replay does not run (partial seed 22)
        time.sleep(0.05)
    raise NotSettledError(f"{prefix}: Kueue did not settle within {timeout:.0f} s", counts)


def _scheduler_marked(wl: Obj) -> bool:
    """Kueue's scheduler has tried ``wl`` (QuotaReserved written by the scheduler, not
    only the workload controller's reason Inadmissible for an inactive queue)."""
    c = _conds(wl).get("QuotaReserved")
    return c is not None and c.get("reason") != "Inadmissible"


def _wait_seen(api: Api, sc: Scenario, timeout: float = 30.0) -> None:
    """Until Kueue has marked the new workloads inactive (the gate holds; the ClusterQueue's
    own Active condition is not refreshed for a cohort cycle). It marks one head per queue
    per cycle, each going to the inadmissible list, so a BestEffortFIFO queue's workloads
    are all marked in turn; a StrictFIFO head stays first, so only it is. A snapshot taken
    before a queue is done leaves its unmarked workloads in the heap: when the gate opens
    they have a cycle to themselves before the cohort's requeue brings the marked ones back
    (seen on seed 12 under load: a priority-2 workload admitted ahead of its queue).
    A queue whose head is a pending phase-a workload may never reach the new ones (a
    StrictFIFO head, say): so this also returns once nothing new was marked for 2 s.

    Only the scheduler's mark counts (QuotaReserved False, reason Pending: its
    requeueAndUpdate), not the workload controller's for the same inactive queue (reason
    Inadmissible, ``resolveLegacyUnadmittedQuotaReservedCondition``): that one is written
    first, while the workload still waits in the heap, and the scheduler moves it on soon
    after. A snapshot taken in between leaves the outcome to a race: three dumped runs of
    partial-admission seed 12 read w04 (priority 2) with the controller's mark alone; the
    replay then admits it alone ahead of its queue, as Kueue did in one of them, while in
    the other two Kueue decided as the replay does once the scheduler's mark is there."""
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
                if _scheduler_marked(w)}
        if seen != last:
            last, since = seen, time.monotonic()
        if not [q for q, names in by_queue.items()
                if not (names & seen if q in strict else names <= seen)]:
            return
        if seen and time.monotonic() - since >= 2.0:
            return
        time.sleep(0.2)
    # no outcome to compare (a Kueue that hangs on the cohort cycle, kueue#12529): the
    # callers run the scenario again on a fresh lab
    raise NotSettledError(f"{sc.prefix}: Kueue marked none of the new workloads", {})


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


def topology(wl: Obj) -> Domains:
    """Kueue's topology assignment of an admitted workload: pod set -> its domains (the
    level values, lowest level's node name alone when that is the hostname) and pods."""
    adm = (wl.get("status") or {}).get("admission") or {}
    out: Domains = {}
    for psa in adm.get("podSetAssignments") or []:
        ta = psa.get("topologyAssignment")
        if ta:
            out[psa["name"]] = sorted((d.values, d.count) for d in admitted_domains(
                ["x"], ta, {}))
    return out


def decided(o: Outcome) -> Decided:
    """The replay's decision in :func:`outcome`'s terms (unknown is not admitted)."""
    return o.shown == "admitted", o.flavors, o.counts


def run(api: Api, sc: Scenario) -> Result:
    """Classic scenarios in two phases behind the cohort gate; fair-sharing ones in one
    phase behind the flavor gate (Kueue with fair sharing does not survive a cohort cycle
    made on a live tree: its cohort status update fails on the cycle and admission stops)."""
    try:
        _add_nodes(api, sc)
        return _run_flavor_gate(api, sc) if sc.fair_sharing else _run(api, sc)
    finally:
        cleanup(api, sc.prefix)
        for n in sc.nodes:
            api.delete(n)


def _add_nodes(api: Api, sc: Scenario) -> None:
    """A TAS scenario's kwok Nodes, Ready before Kueue sees anything of the scenario."""
    for n in sc.nodes:
        api.create_or_get(n)
    names = [n["metadata"]["name"] for n in sc.nodes]
    deadline = time.monotonic() + 60
    while not api.nodes_ready(names):
        if time.monotonic() > deadline:
            raise AssertionError(f"{sc.prefix}: kwok did not make the nodes Ready")
        time.sleep(0.3)


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
    snapshot = [*list_objects(api, sc.prefix), *cluster_objects(api, sc), flavors[-1]]
    _apply(api, flavors[-1:])
    _settle_after(api, sc, snapshot)
    return _compare(api, sc, snapshot)


def _settle_after(api: Api, sc: Scenario, snapshot: list[Obj]) -> None:
    try:
        settle(api, sc.prefix)
    except NotSettledError as e:
        e.snapshot = snapshot
        raise


def _all_scheduled(api: Api, sc: Scenario, snapshot: list[Obj]) -> None:
    """After the cohort gate opened and Kueue settled: every workload of a BestEffortFIFO
    queue was tried (:func:`never_scheduled`), else the run has no outcome to compare."""
    stuck = never_scheduled(sc, workloads(api, sc.prefix))
    if stuck:
        e = NotSettledError(
            f"{sc.prefix}: Kueue's scheduler never tried {', '.join(stuck)} although their "
            "BestEffortFIFO queues were open: Kueue left a queue out after the cohort cycle "
            "(no outcome to compare)", {})
        e.snapshot = snapshot
        raise e


def never_scheduled(sc: Scenario, wls: list[Obj]) -> list[str]:
    """Workloads of BestEffortFIFO queues that Kueue's scheduler never tried once the
    queues were open: neither admitted nor marked by the scheduler (:func:`_scheduler_marked`).
    Such a queue pops every workload in turn, so one left so is a queue Kueue dropped, not
    a decision: partial-admission seed 1 (run 2 of ``bench/kueue_diff.py --partial
    --repeat 2``) kept w01, alone in s1-q3, at 'ClusterQueue s1-q3 is inactive' from its
    creation to the end, after Kueue logged 'Failed to add clusterQueue to cache ... cohort
    has a cycle' for s1-q3 once and 'Failed to update' twice, while the other queues ran.
    A StrictFIFO queue only ever tries its head, so its others are not judged here."""
    best_effort = {o["metadata"]["name"] for o in sc.setup if o["kind"] == "ClusterQueue"
                   and o["spec"].get("queueingStrategy", "BestEffortFIFO") == "BestEffortFIFO"}
    cq_of = {o["metadata"]["name"]: o["spec"].get("clusterQueue") for o in sc.setup
             if o["kind"] == "LocalQueue"}
    return sorted(w["metadata"]["name"] for w in wls
                  if cq_of.get(w["spec"].get("queueName")) in best_effort
                  and _conds(w).get("QuotaReserved", {}).get("status") != "True"
                  and not _scheduler_marked(w))


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
    snapshot = list_objects(api, sc.prefix) + cluster_objects(api, sc)
    for o in snapshot:
        if o["kind"] == "Cohort" and o["metadata"]["name"] == sc.gate:
            o["spec"].pop("parentName", None)  # replay what happens next: the gate opens
    _apply(api, [sc.cohort(sc.gate, None)])
    _settle_after(api, sc, snapshot)
    _all_scheduled(api, sc, snapshot)
    return _compare(api, sc, snapshot)


def replay_objects(sc: Scenario, snapshot: list[Obj]) -> list[Obj]:
    """The snapshot as the replay reads it: with a fair-sharing Configuration where Kueue
    ran with one."""
    return snapshot + ([{"apiVersion": "config.kueue.x-k8s.io/v1beta2",
                         "kind": "Configuration", "fairSharing": {}}]
                       if sc.fair_sharing else [])


def loops(sc: Scenario, e: NotSettledError) -> dict[str, Any]:
    """A run Kueue never settled: the preemption loops Kueue was in (a victim evicted at
    least ``LOOP_EVICTIONS`` times by one preemptor) against those the replay of the same
    snapshot reports (``Replay.loops``)."""
    objs = replay_objects(sc, e.snapshot)
    cluster = _cluster(sc, objs)
    r = Replay(parse(objs, f"seed {sc.seed}")) if cluster is None else TasReplay(
        parse(objs, f"seed {sc.seed}"), cluster)
    r.run()
    sim = sorted((v.split("/", 1)[1], p.split("/", 1)[1]) for v, p in r.loops())
    kueue = sorted(pair for pair, n in e.evictions.items() if n >= LOOP_EVICTIONS)
    return {"kueue": kueue, "sim": sim, "agrees": bool(kueue) and kueue == sim,
            "evictions": sorted((*pair, n) for pair, n in e.evictions.items())}


def _cluster(sc: Scenario, objs: list[Obj]) -> TasCluster | None:
    """TAS's inputs as ``aiplat sim replay`` reads them from a live cluster (its Pods
    listed); None for a scenario without TAS."""
    if not sc.nodes:
        return None
    cluster = tas_cluster([(f"seed {sc.seed}", o) for o in objs], f"seed {sc.seed}",
                          pods_listed=True)
    if cluster is None:
        raise AssertionError(f"seed {sc.seed}: the snapshot does not decide TAS")
    return cluster


def replay(objs: list[Obj], source: str, tas: bool) -> tuple[Replay, list[Outcome]]:
    """``aiplat sim replay``'s decision on a snapshot (with TAS where ``tas``)."""
    cluster = tas_cluster([(source, o) for o in objs], source, pods_listed=True) \
        if tas else None
    return decide(parse(objs, source), cluster=cluster)


def sim_topology(r: Replay) -> dict[str, Domains]:
    """The replay's topology assignments of the workloads it admitted."""
    if not isinstance(r, TasReplay):
        return {}
    return {k.split("/", 1)[1]: {ps: sorted((d.values, d.count) for d in a.domains)
                                 for ps, a in got.items()}
            for k, got in r.assignments.items()}


def alternatives(r: Replay) -> list[tuple[dict[str, Decided], dict[str, Domains], set[str],
                                          str]]:
    """The replay's timing alternatives in :class:`Result`'s terms."""
    out = []
    for alt in r.alternatives:
        rows = list(alt.outcomes.values())
        out.append(({o.workload.split("/", 1)[1]: decided(o) for o in rows},
                    sim_topology(alt.replay),
                    placed(rows), alt.when))
    return out


def placed(outcomes: list[Outcome]) -> set[str]:
    """The workloads the replay admitted in one of its cycles: their topology assignments
    are compared (one admitted in the snapshot keeps the assignment it has)."""
    return {o.workload.split("/", 1)[1] for o in outcomes
            if o.decision == "admitted" and o.cycle is not None}


def _compare(api: Api, sc: Scenario, snapshot: list[Obj]) -> Result:
    final = {w["metadata"]["name"]: w for w in workloads(api, sc.prefix)}
    r, outcomes = replay(replay_objects(sc, snapshot), f"seed {sc.seed}", bool(sc.nodes))
    res = Result(sc.seed, {n: outcome(w) for n, w in final.items()},
                 {o.workload.split("/", 1)[1]: decided(o) for o in outcomes},
                 snapshot=snapshot, final=final,
                 unknown={o.workload.split("/", 1)[1]: o.unknown for o in outcomes
                          if o.unknown},
                 topology_kueue={n: topology(w) for n, w in final.items()
                                 if outcome(w)[0] and topology(w)},
                 topology_sim=sim_topology(r), placed=placed(outcomes),
                 alternatives=alternatives(r))
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
                                                                "ResourceFlavor", "Topology")):
            break
        time.sleep(0.3)


def config(fair: bool) -> dict[str, Any]:
    """The lab's Kueue Configuration: classic, or fair sharing with both strategies."""
    cfg: dict[str, Any] = {"apiVersion": "config.kueue.x-k8s.io/v1beta2",
                           "kind": "Configuration", "manageJobsWithoutQueueName": False}
    if fair:
        cfg["fairSharing"] = {"preemptionStrategies": ["LessThanOrEqualToFinalShare",
                                                       "LessThanInitialShare"]}
    return cfg


class Lab:
    """A lab control plane with Kueue (classic or fair sharing) in a run folder of its own,
    for the live differential (``test_kueue_diff_live.py``) and ``bench/kueue_diff.py``.
    ``restart`` makes it afresh (new etcd, new Kueue, ~15 s) under the same name. Why:
    Kueue v0.19.2 can hang for good while a cohort path has a cycle, the classic gate
    (:func:`_run`): a workload that holds quota and changes there makes
    ``clusterQueue.reportActiveWorkloads`` walk ``PathSelfToRoot`` round the cycle forever
    under the cache's lock (kubernetes-sigs/kueue#12529, fixed by #13774 after v0.19.2;
    seen in clean-clone CI: Kueue at 100 % CPU from the first scenario, every later one
    unsettled). A run that fails that way is run again on a fresh lab."""

    def __init__(self, runs: Path, name: str, fair: bool) -> None:
        self.runs, self.name, self.fair = runs, name, fair
        self.api: Api | None = None
        self.kubeconfig = ""

    def _here(self) -> None:  # the cluster functions read the run folder from the environment
        os.environ["AIPLAT_CLUSTER_DIR"] = str(self.runs)

    def start(self) -> None:
        self._here()
        up(self.name, [], config(self.fair), locate())
        self.kubeconfig = str(kubeconfig_path(self.name))
        self.api = Api.from_kubeconfig(self.kubeconfig)

    def stop(self) -> None:
        if self.api is not None:
            self.api.close()
            self.api = None
        self._here()  # another lab may have pointed it elsewhere meanwhile
        stopped = down(self.name)
        assert not (self.runs / self.name).exists(), stopped

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def live(self) -> Api:
        assert self.api is not None, "the lab is not up"
        return self.api
