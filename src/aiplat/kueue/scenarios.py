"""Seeded Kueue scenarios for the differential test against the real Kueue.

A scenario is plain Kueue objects (``kueue.x-k8s.io/v1beta2``): ResourceFlavors, a cohort
tree, ClusterQueues with one or two resource groups (cpu+memory over one to three flavors,
an extended resource over one or two), nominal/borrowing/lending limits, preemption
policies, flavor fungibility, LocalQueues, WorkloadPriorityClasses and Workloads of one or
two pod sets, in two phases: phase ``a`` is admitted first, phase ``b`` arrives on top.

Every ClusterQueue hangs below one root cohort whose parent is a ``gate`` cohort: making
``gate``'s parent the root (a cycle) stops every queue of the tree at once, removing it
starts them at once, so the real Kueue's first cycle sees every head, as the replay does.
Priorities are distinct within a scenario: Kueue breaks equal-priority ties by creation
time at one-second resolution, then by UID (random), which no replay can follow.

Three variants draw from a second random stream, so a seed's base scenario stays the same:
``partial`` gives pod sets more pods and a ``minCount`` (partial admission), ``selectors``
gives each ClusterQueue one of the namespaceSelectors that decide against the ``default``
namespace (null: none admitted; ``{}``; its name label matched or not), ``tas`` adds
topology-aware scheduling (its own stream, ``{seed}-tas``): a Topology of block, rack and
(mostly) hostname levels, most cpu/memory flavors made TAS flavors of it, lab Nodes
(``Scenario.nodes``, kwok) labelled into blocks and racks under each such flavor's
``nodeLabels``, with a few CPUs each, and pod sets asking a required, preferred or
unconstrained topology (the Workload's ``topologyRequest``, as Kueue's job integrations
write it from the ``podset-*-topology`` annotations), or nothing.
Pure: no I/O; the same seed gives the same objects.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
API = "kueue.x-k8s.io/v1beta2"
EXT = "example.com/accel"


@dataclass
class Scenario:
    seed: int
    prefix: str
    setup: list[Obj]  # flavors, cohorts, queues, priority classes
    phase_a: list[Obj]  # workloads admitted before the snapshot
    phase_b: list[Obj]  # workloads pending in the snapshot
    fair_sharing: bool
    nodes: list[Obj] = field(default_factory=list)  # lab Nodes (kwok), created first

    @property
    def gate(self) -> str:
        return f"{self.prefix}-gate"

    @property
    def root(self) -> str:
        return f"{self.prefix}-root"

    def cohort(self, name: str, parent: str | None) -> Obj:
        # an empty spec is refused by server-side apply ("spec: null"): weight 1 is the default
        spec: Obj = {"parentName": parent} if parent else {"fairSharing": {"weight": "1"}}
        return {"apiVersion": API, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def _meta(name: str, **extra: Any) -> Obj:
    return {"name": name, **extra}


SELECTORS: tuple[Obj | None, ...] = (
    None, {}, {"matchLabels": {"kubernetes.io/metadata.name": "default"}},
    {"matchLabels": {"kubernetes.io/metadata.name": "elsewhere"}},
    {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                           "values": ["default"]}]})
"""The namespaceSelectors a ``selectors`` scenario draws from, against namespace default."""


def generate(seed: int, fair_sharing: bool = False, *, partial: bool = False,
             selectors: bool = False, tas: bool = False) -> Scenario:
    sc = _generate(seed, fair_sharing)
    if tas:
        _tas(random.Random(f"{seed}-tas"), sc)
    extra = random.Random(f"{seed}-variants")
    if partial:
        for w in sc.phase_a + sc.phase_b:
            _partial(extra, w)
    if selectors:
        for o in sc.setup:
            if o["kind"] == "ClusterQueue":
                _select(extra, o)
    return sc


def _partial(rng: random.Random, wl: Obj) -> None:
    """Most workloads may run with fewer pods: one pod set (Kueue's webhook allows one)
    gets more pods and a minCount."""
    if rng.random() < 0.7:
        ps = rng.choice(wl["spec"]["podSets"])
        ps["count"] = rng.choice([3, 4, 6, 8])
        ps["minCount"] = rng.randint(1, ps["count"] - 1)


BLOCK = "aiplat.io/block"
RACK = "aiplat.io/rack"
HOST = "kubernetes.io/hostname"


def _tas(rng: random.Random, sc: Scenario) -> None:
    """Topology-aware scheduling on top of the base scenario (see the module's doc)."""
    levels = rng.choice([[BLOCK, RACK, HOST], [BLOCK, RACK, HOST], [BLOCK, HOST],
                         [BLOCK, RACK]])
    topo = f"{sc.prefix}-topo"
    flavors = [o for o in sc.setup if o["kind"] == "ResourceFlavor"
               and o["metadata"]["name"].startswith(f"{sc.prefix}-f")]
    tas = [f for f in flavors if rng.random() < 0.75] or flavors[:1]
    for f in tas:
        name = f["metadata"]["name"]
        f["spec"]["topologyName"] = topo
        for b in range(rng.choice([1, 2, 2])):
            for r in range(rng.choice([1, 2, 2])):
                for h in range(rng.choice([1, 2])):
                    node = f"{name}-b{b}r{r}h{h}"
                    cpu = rng.choice([1, 2, 2, 3, 4])
                    alloc = {"cpu": str(cpu), "memory": f"{rng.choice([4, 8])}Gi",
                             "pods": "110"}
                    if rng.random() < 0.5:
                        alloc[EXT] = str(rng.choice([1, 2]))
                    sc.nodes.append({
                        "apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": node, "labels": {
                            "pool": name, BLOCK: f"{name}-b{b}", RACK: f"{name}-b{b}r{r}",
                            HOST: node, "type": "kwok"},
                            "annotations": {"kwok.x-k8s.io/node": "fake",
                                            "node.alpha.kubernetes.io/ttl": "0"}},
                        "spec": {},
                        "status": {"capacity": dict(alloc), "allocatable": alloc}})
    sc.setup.insert(0, {"apiVersion": API, "kind": "Topology", "metadata": _meta(topo),
                        "spec": {"levels": [{"nodeLabel": lv} for lv in levels]}})
    asks: list[Obj | None] = [*({"required": lv} for lv in levels), *(
        {"preferred": lv} for lv in levels[:-1]), {"unconstrained": True}, None]
    for w in sc.phase_a + sc.phase_b:
        for ps in w["spec"]["podSets"]:
            ask = rng.choice(asks)
            if ask is None:
                continue
            ps["topologyRequest"] = dict(ask)
            req = ps["template"]["spec"]["containers"][0]["resources"]["requests"]
            if EXT in req and rng.random() < 0.7:
                del req[EXT]  # the extended flavors are not TAS flavors: mostly NoFit


def _select(rng: random.Random, cq: Obj) -> None:
    sel = rng.choices(SELECTORS, weights=(1, 2, 2, 1, 1))[0]  # most queues admit
    if sel is None:
        cq["spec"].pop("namespaceSelector", None)
    else:
        cq["spec"]["namespaceSelector"] = sel


def _generate(seed: int, fair_sharing: bool) -> Scenario:
    rng = random.Random(seed)
    px = f"s{seed}"
    flavors = [f"{px}-f{i}" for i in range(rng.choice([1, 2, 2, 3]))]
    ext_flavors = [f"{px}-x{i}" for i in range(rng.choice([0, 0, 1, 2]))]
    setup: list[Obj] = [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": _meta(f),
                         "spec": {"nodeLabels": {"pool": f}}} for f in flavors + ext_flavors]
    sc = Scenario(seed, px, setup, [], [], fair_sharing)
    cohorts = [sc.root]
    setup.append(sc.cohort(sc.root, sc.gate))
    for i in range(rng.choice([0, 0, 1, 2])):
        name = f"{px}-c{i}"
        cohorts.append(name)
        child = sc.cohort(name, sc.root)
        if fair_sharing and rng.random() < 0.5:
            child["spec"]["fairSharing"] = {"weight": rng.choice(["1", "2", "0.5"])}
        if rng.random() < 0.3:  # a cohort with quota of its own
            child["spec"]["resourceGroups"] = [{"coveredResources": ["cpu", "memory"],
                                                "flavors": [_quota(rng, f, own=True)
                                                            for f in flavors]}]
        setup.append(child)
    prio = rng.sample(range(1, 1000), 40)
    classes = sorted(set(prio))
    setup += [{"apiVersion": API, "kind": "WorkloadPriorityClass",
               "metadata": _meta(f"{px}-p{v}"), "value": v} for v in classes]
    queues = []
    for i in range(rng.choice([2, 3, 3, 4])):
        cq = f"{px}-q{i}"
        queues.append(cq)
        setup.append(_cluster_queue(rng, cq, rng.choice(cohorts), flavors, ext=ext_flavors,
                                    fair=fair_sharing))
        setup.append({"apiVersion": API, "kind": "LocalQueue",
                      "metadata": _meta(cq, namespace="default"),
                      "spec": {"clusterQueue": cq}})
    n = rng.randint(6, 14)
    for j in range(n):
        wl = _workload(rng, f"{px}-w{j:02d}", rng.choice(queues), prio[j], px=px,
                       ext=bool(ext_flavors))
        (sc.phase_a if rng.random() < 0.4 else sc.phase_b).append(wl)
    return sc


def _quota(rng: random.Random, flavor: str, own: bool = False) -> Obj:
    cpu = rng.choice([0, 2, 3, 4, 6]) if not own else rng.choice([1, 2])
    r: Obj = {"name": "cpu", "nominalQuota": str(cpu)}
    if not own and rng.random() < 0.3:
        r["borrowingLimit"] = str(rng.choice([0, 1, 2, 4]))
    if not own and rng.random() < 0.25:
        r["lendingLimit"] = str(min(cpu, rng.choice([0, 1, 2, cpu])))
    mem = {"name": "memory", "nominalQuota": f"{rng.choice([4, 8, 16])}Gi"}
    return {"name": flavor, "resources": [r, mem]}


def _cluster_queue(rng: random.Random, name: str, cohort: str, flavors: list[str], *,
                   ext: list[str], fair: bool) -> Obj:
    groups: list[Obj] = [{"coveredResources": ["cpu", "memory"],
                          "flavors": [_quota(rng, f) for f in flavors]}]
    if ext:
        groups.append({"coveredResources": [EXT], "flavors": [
            {"name": f, "resources": [{"name": EXT, "nominalQuota": str(rng.choice([0, 1, 2]))}]}
            for f in ext]})
    within = rng.choice(["Never", "LowerPriority", "LowerPriority", "LowerOrNewerEqualPriority"])
    reclaim = rng.choice(["Never", "LowerPriority", "Any"])
    pre: Obj = {"withinClusterQueue": within, "reclaimWithinCohort": reclaim}
    if not fair and reclaim != "Never" and rng.random() < 0.3:  # CEL: needs reclaim
        pre["borrowWithinCohort"] = {"policy": "LowerPriority"}
        if rng.random() < 0.5:
            pre["borrowWithinCohort"]["maxPriorityThreshold"] = rng.choice([200, 500, 800])
    spec: Obj = {"cohortName": cohort, "namespaceSelector": {}, "resourceGroups": groups,
                 "preemption": pre,
                 "flavorFungibility": {
                     "whenCanBorrow": rng.choice(["MayStopSearch", "TryNextFlavor"]),
                     "whenCanPreempt": rng.choice(["MayStopSearch", "TryNextFlavor"])}}
    if rng.random() < 0.2:
        spec["queueingStrategy"] = "StrictFIFO"
    if fair and rng.random() < 0.5:
        spec["fairSharing"] = {"weight": rng.choice(["1", "2", "0.5", "0"])}
    fung = spec["flavorFungibility"]
    if fung["whenCanBorrow"] == fung["whenCanPreempt"] == "TryNextFlavor" \
            and rng.random() < 0.5:
        fung["preference"] = rng.choice(["BorrowingOverPreemption", "PreemptionOverBorrowing"])
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": _meta(name), "spec": spec}


def _workload(rng: random.Random, name: str, queue: str, priority: int, *, px: str,
              ext: bool) -> Obj:
    podsets = []
    for k in range(rng.choice([1, 1, 2])):
        req: Obj = {"cpu": rng.choice(["1", "1", "2", "500m"]),
                    "memory": rng.choice(["1Gi", "2Gi"])}
        if ext and rng.random() < 0.4:
            req[EXT] = "1"
        podsets.append({"name": f"ps{k}", "count": rng.choice([1, 1, 2, 3]), "template": {
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "x", "resources": {"requests": req}}]}}})
    return {"apiVersion": API, "kind": "Workload",
            "metadata": _meta(name, namespace="default"),
            "spec": {"queueName": queue, "priority": priority,
                     "priorityClassRef": {"group": "kueue.x-k8s.io",
                                          "kind": "WorkloadPriorityClass",
                                          "name": f"{px}-p{priority}"},
                     "podSets": podsets}}
