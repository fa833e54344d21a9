"""Decision digests of ``sim run`` (and ``sim replay``): the proof that a change to the
simulator's admission left every decision as it was.

Each scenario runs the discrete-event simulator and records, per job, every admission (the
time and the pools its flavors name), every start, every eviction (time and reason) and every
preemption the job's Workload issued or suffered, then the job's final state; a sha256 over
those rows is the scenario's digest. The scenarios:

1. ``kueue-30``: bench/sim.py's Kueue-shaped one (5 cohorts x 6 ClusterQueues covering cpu
   only, nominal 20, borrowingLimit 100), 3,000 workloads, queues built in code, classic.
2. ``kueue-30-preempt``: the same shape read from Kueue objects, with preemption
   (withinClusterQueue LowerPriority, reclaimWithinCohort Any) and weights, classic;
   1,000 workloads in 20 minutes (the same load: queues full, heads preempting).
3. ``kueue-30-fair``: the same objects under fair sharing (borrowWithinCohort off).
4. ``kueue-200``: bench/sim.py's large shape, smaller: 20 cohorts x 10, 6,000 workloads.
5. ``month-fair``: the example platform's simulated month on its rendered queues (fair sharing,
   waitForPodsReady), as ``aiplat sim run`` runs it.
6. ``month-classic``: the same month in classic order.
7. ``month-autoscale``: two months, autoscaled pools from zero, node failures (MTBF 150 h).
8. ``month-busy``: one month with the training and batch jobs of three seeds, a warm node
   kept in each pool, failures every 100 h per node.
9. ``gpu-classic`` / 10. ``gpu-fair``: hand-made GPU queues (two flavors, a cohort tree with
   quota, lending and borrowing limits, every preemption policy, flavor fungibility, pool
   pins, topology-aware pod sets, admission fair sharing in the fair one, waitForPodsReady),
   250 jobs over three days that preempt.

And ``sim replay`` on the same Kueue cycle: 11. ``replay-scenarios`` (the differential test's
seeded scenarios 0-39, classic and fair) and 12. ``replay-30`` (bench/sim.py's replay shape,
3,000 pending Workloads).

Usage: .venv/bin/python bench/sim_digest.py [--only NAME ...] [--rows DIR]
Prints one line per scenario (digest, jobs, seconds) and the digest of them all. ``--rows``
writes each scenario's rows to DIR/NAME.txt, to compare two runs line by line.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from aiplat.sched import ClusterQueue, FlavorQuotas, Job, Node, PodSet, Quota, queues
from aiplat.sched import Request as Req
from aiplat.sched.engine import PoolStrategy, Simulator
from aiplat.sched.workload import Run, TopologyRequest

API = "kueue.x-k8s.io/v1beta2"
Obj = dict[str, Any]


class Recorder(Simulator):
    """The simulator, writing down every decision the admission hands it."""

    log: list[tuple[object, ...]]

    def __init__(self, *args: Any, **kw: Any) -> None:
        self.log = []
        super().__init__(*args, **kw)

    def admitted(self, run: Run) -> None:
        self.log.append(("admit", self.now, run.job.name, tuple(run.pools)))
        super().admitted(run)

    def start(self, run: Run) -> None:
        self.log.append(("start", self.now, run.job.name, tuple(run.pools), run.admitted_at))
        super().start(run)

    def evict(self, run: Run, reason: str) -> None:
        self.log.append(("evict", self.now, run.job.name, reason, run.state))
        super().evict(run, reason)

    def stop_later(self, run: Run) -> None:
        self.log.append(("preempted", self.now, run.job.name))
        super().stop_later(run)

    def rows(self) -> list[str]:
        out = [repr(x) for x in self.log]
        for r in self.runs.values():
            out.append(repr(("job", r.job.name, r.state, r.admitted_at, r.first_start,
                             r.started_at, r.finished_at, r.evictions, r.preempted,
                             r.preempted_at, r.attempts, r.wasted_gpu_s, tuple(r.pools),
                             r.flavor)))
        return out


def read_queues(objects: list[Obj], source: str) -> Any:
    """Kueue objects -> the simulator's queues (the reader ``sim run --kueue`` uses)."""
    from aiplat.sched.kueue_objects import from_objects

    return from_objects(objects, source)


def fair(queues: Any, on: bool) -> Any:
    """The queues with fair sharing switched on or off (``sim run --classic``)."""
    return queues.with_fair_sharing(on)


# ---------------------------------------------------------------------------- Kueue's shape


def _kueue_jobs(names: list[str], workloads: int, span: float = 3600.0) -> list[Job]:
    rng = np.random.default_rng(1)
    sizes = rng.choice([1, 5, 20], size=workloads, p=[0.6, 0.3, 0.1])
    return [Job(f"w{k}", names[int(rng.integers(len(names)))], float(rng.uniform(0, span)),
                float(rng.uniform(30, 300)), (PodSet(1, Req(int(s) * 1000, 0)),),
                int(rng.integers(0, 3)))
            for k, s in enumerate(sizes)]


def _cpu_nodes(queues: int) -> list[Node]:
    cores = 20 * queues
    return [Node(f"n{i}", 64_000, 512 * 1024, pool="cpu") for i in range(-(-cores // 64))]


def kueue_code(cohorts: int, per_cohort: int, workloads: int) -> Recorder:
    cqs = tuple(
        ClusterQueue(f"cq-{c}-{i}", (FlavorQuotas("cpu", {"cpu": Quota(20, 100)}),),
                     f"cohort-{c}")
        for c in range(cohorts) for i in range(per_cohort))
    jobs = _kueue_jobs([q.name for q in cqs], workloads)
    return Recorder(_cpu_nodes(len(cqs)), jobs, queues(cqs),
                    policy="least-allocated", samples=20)


def kueue_objects(cohorts: int, per_cohort: int, workloads: int, *, fair_sharing: bool,
                  span: float) -> Recorder:
    objs: list[Obj] = [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "cpu"}}]
    names = []
    for c in range(cohorts):
        for i in range(per_cohort):
            name = f"cq-{c}-{i}"
            names.append(name)
            objs.append({"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
                         "spec": {"cohortName": f"cohort-{c}", "resourceGroups": [{
                             "coveredResources": ["cpu"], "flavors": [{"name": "cpu",
                                                                       "resources": [{
                                 "name": "cpu", "nominalQuota": 20, "borrowingLimit": 100}]}]}],
                             "preemption": {"withinClusterQueue": "LowerPriority",
                                            "reclaimWithinCohort": "Any"},
                             "fairSharing": {"weight": str(1 + i % 3)}}})
    if fair_sharing:
        objs.append({"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                     "fairSharing": {}})
    queues = read_queues(objs, "kueue-30")
    jobs = _kueue_jobs(names, workloads, span)
    return Recorder(_cpu_nodes(len(names)), jobs, queues, policy="least-allocated", samples=20)


# ---------------------------------------------------------------------------- the example month


def month(*, fair_sharing: bool, months: float = 1.0, strategy: str = "spec",
          mtbf_h: float | None = None, seeds: int = 1) -> Recorder:
    """The example's month; ``seeds`` > 1 adds the training and batch jobs of further
    seeds (an overloaded month: a backlog, and failures evicting running gangs)."""
    import dataclasses

    from aiplat.catalog import load_catalog
    from aiplat.ops.sim_month import tree_queues
    from aiplat.plan import build_plan
    from aiplat.sched.platform import (
        platform_jobs,
        platform_nodes,
        platform_strategies,
        route,
    )
    from aiplat.spec import EXAMPLE, example_text, parse_platform

    catalog = load_catalog()
    platform = parse_platform(example_text(), EXAMPLE, catalog)
    plan = build_plan(platform, catalog)
    queues = fair(tree_queues(platform, catalog), fair_sharing)
    seed = 0
    jobs = platform_jobs(platform, plan, seed, months)
    for extra in range(1, seeds):
        jobs += [dataclasses.replace(j, name=f"{extra}-{j.name}")
                 for j in platform_jobs(platform, plan, extra, months) if j.priority < 1000]
    jobs = route(jobs, queues, [w.tenant for w in plan.workloads])
    strategies = platform_strategies(platform, strategy, mtbf_h=mtbf_h)
    return Recorder(platform_nodes(platform, plan), jobs, queues, policy="bestfit",
                    strategies=strategies, seed=seed, horizon=months * 730 * 3600)


# ---------------------------------------------------------------------------- hand-made GPUs


def _res(gpu: int, *, borrow: int | None = None, lend: int | None = None) -> list[Obj]:
    out = []
    for name, per_gpu, unit in (("nvidia.com/gpu", 1, ""), ("cpu", 12, ""),
                                ("memory", 100, "Gi")):
        r: Obj = {"name": name, "nominalQuota": f"{gpu * per_gpu}{unit}"}
        if borrow is not None:
            r["borrowingLimit"] = f"{borrow * per_gpu}{unit}"
        if lend is not None:
            r["lendingLimit"] = f"{lend * per_gpu}{unit}"
        out.append(r)
    return out


def _cq(name: str, cohort: str, flavors: list[tuple[str, list[Obj]]], preemption: Obj,
        **spec: Any) -> Obj:
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": {"cohortName": cohort, "resourceGroups": [{
                "coveredResources": ["nvidia.com/gpu", "cpu", "memory"],
                "flavors": [{"name": f, "resources": r} for f, r in flavors]}],
                "preemption": preemption, **spec}}


def gpu_objects(fair_sharing: bool) -> list[Obj]:
    objs: list[Obj] = [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": f},
                        "spec": {"nodeLabels": {"aiplat.io/pool": f}}} for f in ("h100", "l40s")]
    objs += [
        {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "org"},
         "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu", "cpu", "memory"],
                                      "flavors": [{"name": "l40s", "resources": _res(4)}]}]}},
        {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "ai"},
         "spec": {"parentName": "org", "fairSharing": {"weight": "2"}}},
        {"apiVersion": API, "kind": "Cohort", "metadata": {"name": "ops"},
         "spec": {"parentName": "org"}},
        _cq("train", "ai", [("h100", _res(16, borrow=8)), ("l40s", _res(4))],
            {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            flavorFungibility={"whenCanBorrow": "TryNextFlavor",
                               "whenCanPreempt": "TryNextFlavor"},
            fairSharing={"weight": "2"}),
        _cq("infer", "ai", [("l40s", _res(8, lend=4)), ("h100", _res(4, lend=2))],
            {"withinClusterQueue": "LowerOrNewerEqualPriority", "reclaimWithinCohort": "Any"}),
        _cq("batch", "ops", [("l40s", _res(4, borrow=12))],
            {"withinClusterQueue": "LowerPriority"}, fairSharing={"weight": "0.5"}),
        _cq("research", "ops", [("h100", _res(8)), ("l40s", _res(2))],
            ({"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority"}
             if fair_sharing else
             {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority",
              "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 1}}),
            queueingStrategy="StrictFIFO"),
    ]
    for q in ("train", "infer", "batch", "research"):
        for lq in (q, f"{q}-b"):
            objs.append({"apiVersion": API, "kind": "LocalQueue",
                         "metadata": {"name": lq, "namespace": q}, "spec": {"clusterQueue": q}})
    config: Obj = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                   "waitForPodsReady": {"timeout": "20m", "requeuingStrategy": {
                       "backoffBaseSeconds": 120, "backoffLimitCount": 3}}}
    if fair_sharing:
        config["fairSharing"] = {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}
        config["admissionFairSharing"] = {"usageHalfLifeTime": "2h"}
    objs.append(config)
    return objs


def gpu_nodes() -> list[Node]:
    nodes = [Node(f"h100-{i}", 96_000, 1_000 * 1024, 8, "H100", "h100", f"hb{i // 4}",
                  f"hr{i // 2}") for i in range(6)]
    nodes += [Node(f"l40s-{i}", 48_000, 400 * 1024, 4, "L40S", "l40s", f"lb{i // 6}",
                   f"lr{i // 3}") for i in range(9)]
    return nodes


def gpu_jobs(n: int = 250) -> list[Job]:
    rng = np.random.default_rng(7)
    queues = ["train", "infer", "batch", "research"]
    jobs = []
    for k in range(n):
        q = queues[int(rng.integers(4))]
        gpus = int(rng.choice([1, 2, 4, 8, 16], p=[0.35, 0.25, 0.2, 0.15, 0.05]))
        per = min(gpus, 4)
        pods = gpus // per
        topo = None
        u = rng.random()
        if pods > 1 and u < 0.3:
            topo = TopologyRequest("rack" if u < 0.15 else "block",
                                   "required" if u < 0.2 else "preferred")
        elif u > 0.9:
            topo = TopologyRequest("host", "preferred")
        pool = None if rng.random() < 0.7 else str(rng.choice(["h100", "l40s"]))
        req = Req(per * 12_000, per * 100 * 1024, per, 1000)
        jobs.append(Job(f"j{k}", q, float(rng.uniform(0, 72 * 3600)),
                        float(rng.exponential(3 * 3600)), (PodSet(pods, req, topo),),
                        int(rng.integers(0, 4)), f"{q}-b" if rng.random() < 0.3 else q, pool))
    return jobs


def gpu(fair_sharing: bool) -> Recorder:
    queues = read_queues(gpu_objects(fair_sharing), "gpu")
    strategies = {"l40s": PoolStrategy(autoscaling=True, min_nodes=3, startup_s=300,
                                       scale_down_idle_s=900)}
    return Recorder(gpu_nodes(), gpu_jobs(), queues, policy="bestfit", strategies=strategies,
                    seed=3)


# ---------------------------------------------------------------------------- sim replay


def replay_scenarios() -> list[str]:
    from aiplat.kueue.cycle import Replay
    from aiplat.kueue.scenarios import generate
    from aiplat.kueue.snapshot import parse

    rows = []
    for fair_sharing in (False, True):
        for seed in range(40):
            sc = generate(seed, fair_sharing)
            objs = [*sc.setup, *sc.phase_a, *sc.phase_b]
            if fair_sharing:
                objs.append({"apiVersion": "config.kueue.x-k8s.io/v1beta2",
                             "kind": "Configuration", "fairSharing": {}})
            r = Replay(parse(objs, f"seed {seed}"))
            rows += [repr(o.as_dict()) for o in r.run()]
            rows.append(repr(("cycles", fair_sharing, seed, r.cycle, r.loops())))
    return rows


def replay_30(workloads: int = 3_000) -> list[str]:
    from aiplat.kueue.cycle import Replay
    from aiplat.kueue.snapshot import parse

    rng = np.random.default_rng(1)
    objs: list[Obj] = [{"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": "cpu"}}]
    names = []
    for c in range(5):
        for i in range(6):
            name = f"cq-{c}-{i}"
            names.append(name)
            objs += [{"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name},
                      "spec": {"cohortName": f"cohort-{c}", "namespaceSelector": {},
                               "resourceGroups": [{
                          "coveredResources": ["cpu"], "flavors": [{"name": "cpu", "resources": [
                              {"name": "cpu", "nominalQuota": 20, "borrowingLimit": 100}]}]}],
                          "preemption": {"withinClusterQueue": "LowerPriority"}}},
                     {"apiVersion": API, "kind": "LocalQueue",
                      "metadata": {"name": name, "namespace": "ns"},
                      "spec": {"clusterQueue": name}}]
    sizes = rng.choice([1, 5, 20], size=workloads, p=[0.6, 0.3, 0.1])
    for k, s in enumerate(sizes):
        objs.append({"apiVersion": API, "kind": "Workload", "metadata": {
            "name": f"w{k}", "namespace": "ns", "uid": f"{k:08d}",
            "creationTimestamp": f"2026-01-01T{k // 3600 % 24:02d}:{k // 60 % 60:02d}:"
                                 f"{k % 60:02d}Z"},
            "spec": {"queueName": names[int(rng.integers(len(names)))],
                     "priority": int(rng.integers(0, 3)), "podSets": [{
                         "name": "main", "count": 1, "template": {"spec": {"containers": [
                             {"name": "c", "resources": {"requests": {"cpu": str(s)}}}]}}}]}})
    r = Replay(parse(objs, "bench"))
    rows = [repr(o.as_dict()) for o in r.run()]
    rows.append(repr(("cycles", r.cycle, r.loops())))
    return rows


# ---------------------------------------------------------------------------- running


def _sim(make: Callable[[], Recorder]) -> Callable[[], tuple[list[str], int]]:
    def go() -> tuple[list[str], int]:
        sim = make()
        r = sim.run()
        return [*sim.rows(), repr(("preemptions", r.preemptions))], len(sim.runs)
    return go


def _rows(make: Callable[[], list[str]]) -> Callable[[], tuple[list[str], int]]:
    def go() -> tuple[list[str], int]:
        rows = make()
        return rows, len(rows)
    return go


SCENARIOS: dict[str, Callable[[], tuple[list[str], int]]] = {
    "kueue-30": _sim(lambda: kueue_code(5, 6, 3_000)),
    "kueue-30-preempt": _sim(lambda: kueue_objects(5, 6, 1_000, fair_sharing=False,
                                                          span=1_200)),
    "kueue-30-fair": _sim(lambda: kueue_objects(5, 6, 1_000, fair_sharing=True,
                                                       span=1_200)),
    "kueue-200": _sim(lambda: kueue_code(20, 10, 6_000)),
    "month-fair": _sim(lambda: month(fair_sharing=True)),
    "month-classic": _sim(lambda: month(fair_sharing=False)),
    "month-autoscale": _sim(lambda: month(fair_sharing=True, months=2, strategy="autoscale",
                                          mtbf_h=150)),
    "month-busy": _sim(lambda: month(fair_sharing=True, strategy="warm", mtbf_h=100, seeds=3)),
    "gpu-classic": _sim(lambda: gpu(False)),
    "gpu-fair": _sim(lambda: gpu(True)),
    "replay-scenarios": _rows(replay_scenarios),
    "replay-30": _rows(replay_30),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--only", nargs="*", choices=list(SCENARIOS), help="these scenarios only")
    ap.add_argument("--rows", type=Path, help="write each scenario's rows to DIR/NAME.txt")
    args = ap.parse_args()
    total = hashlib.sha256()
    for name in args.only or SCENARIOS:
        t0 = time.perf_counter()
        rows, jobs = SCENARIOS[name]()
        dt = time.perf_counter() - t0
        text = "\n".join(rows) + "\n"
        digest = hashlib.sha256(text.encode()).hexdigest()
        total.update(f"{name} {digest}\n".encode())
        if args.rows is not None:
            args.rows.mkdir(parents=True, exist_ok=True)
            (args.rows / f"{name}.txt").write_text(text)
        print(f"{name:<18} {digest[:16]}  {jobs:>6} jobs  {len(rows):>7} rows  {dt:6.2f} s",
              flush=True)
    print(f"{'all':<18} {total.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
