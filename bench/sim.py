"""Speed of the simulator against its peers, and the full FGD table.

Prints, never asserts (timings vary with the machine):

1. One FGD-protocol experiment (FGD policy, seed 42, default trace, 6,212 GPUs): our wall
   time against the published simulator's ~600 s on 2 vCPUs (target: under 10 s).
2. A Kueue-scale scenario shaped like Kueue's own performance test: 5 cohorts x 6
   ClusterQueues, 15,000 workloads of 1, 5 and 20 CPUs and no memory (the queues cover cpu
   only, nominal 20, borrowingLimit 100);
   Kueue's test takes ~351 s against a test API server (target: under 3 s, issue #39).
   Events/s.
3. 1,000 ClusterQueues (100 cohorts x 10) with 50,000 workloads (target: under 20 s).
4. ``sim replay`` (Kueue's scheduling cycle) on the same shapes as a cluster snapshot: the
   30-queue one with 15,000 pending Workloads and the 1,000-queue one with 50,000, cycled
   until quiet (Kueue's own scheduler, measured in its test: ~351 s for the first).
5. The full FGD table: the paper's six policies on four traces, 10 seeds each (skip with
   --quick); the same numbers ``aiplat sim fgd --seeds 10`` prints.

Every figure gives its CPU time beside its wall time (the machine may be shared).
``--against REV`` runs 2. and 3. again on the library as it was at git revision REV, in the
same run (a subprocess, the same scenario code), and prints the ratio: on a busy machine a
ratio measured minutes apart means little.

Usage: .venv/bin/python bench/sim.py [--quick] [--against REV] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import atexit
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from aiplat.sched import ClusterQueue, FlavorQuotas, Job, Node, PodSet, Quota
from aiplat.sched import Request as Req
from aiplat.sched.alibaba import load_nodes, load_pods, trace_dir
from aiplat.sched.engine import Simulator
from aiplat.sched.fgd import PAPER_POLICIES, fgd_table, run_fgd

try:
    from aiplat.sched import queues
except ImportError:  # --against a revision from before the queues were the snapshot
    import aiplat.sched

    queues = aiplat.sched.KueueConfig  # type: ignore[assignment]

PUBLISHED_FGD_S = 600.0
KUEUE_PERF_S = 351.0
ROOT = Path(__file__).resolve().parents[1]


def fgd_once(folder: Path) -> None:
    nodes = load_nodes(folder)
    reqs = [p.request for p in load_pods(folder, "default")]
    t0, c0 = time.perf_counter(), time.process_time()
    r = run_fgd(nodes, reqs, "fgd", 42)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"1. FGD experiment (fgd, seed 42, default): {dt:.2f} s (cpu {cpu:.2f} s) for "
          f"{r.pods:,} pods, "
          f"allocation {r.allocation_ratio:.2f}% — published simulator ~{PUBLISHED_FGD_S:.0f} s:"
          f" {PUBLISHED_FGD_S / dt:,.0f}x faster (target < 10 s)")


def kueue_run(cohorts: int, per_cohort: int, workloads: int) -> dict[str, float]:
    """One Kueue-shaped simulation: wall and CPU seconds, events, finished jobs."""
    rng = np.random.default_rng(1)
    cqs = tuple(
        ClusterQueue(f"cq-{c}-{i}", (FlavorQuotas("cpu", {"cpu": Quota(20, 100)}),),
                     f"cohort-{c}")
        for c in range(cohorts) for i in range(per_cohort))
    cores = 20 * len(cqs)
    nodes = [Node(f"n{i}", 64_000, 512 * 1024, pool="cpu") for i in range(-(-cores // 64))]
    sizes = rng.choice([1, 5, 20], size=workloads, p=[0.6, 0.3, 0.1])
    span = 3600.0
    jobs = [Job(f"w{k}", cqs[int(rng.integers(len(cqs)))].name,
                float(rng.uniform(0, span)), float(rng.uniform(30, 300)),
                (PodSet(1, Req(int(s) * 1000, 0)),), int(rng.integers(0, 3)))
            for k, s in enumerate(sizes)]
    t0, c0 = time.perf_counter(), time.process_time()
    sim = Simulator(nodes, jobs, queues(cqs), policy="least-allocated", samples=20)
    r = sim.run()
    return {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
            "events": r.events, "finished": r.finished, "queues": len(cqs)}


def kueue_scale(cohorts: int, per_cohort: int, workloads: int, *, label: str, target: float,
                peer: float | None = None, against: tuple[str, Path] | None = None) -> None:
    got = kueue_run(cohorts, per_cohort, workloads)
    dt, cpu = got["wall"], got["cpu"]
    peer_txt = f"; Kueue's own test ~{peer:.0f} s: {peer / dt:,.1f}x" if peer else ""
    print(f"{label}: {got['queues']:.0f} ClusterQueues, {workloads:,} workloads: {dt:.2f} s "
          f"(cpu {cpu:.2f} s), {got['events']:,.0f} events ({got['events'] / dt:,.0f} "
          f"events/s), {got['finished']:,.0f} finished (target < {target:.0f} s: "
          f"{target / dt:.1f}x headroom{peer_txt})", flush=True)
    if against is not None:
        rev, src = against
        old = _run_previous(src, cohorts, per_cohort, workloads)
        print(f"   the same run on {rev}'s code: {old['wall']:.2f} s (cpu {old['cpu']:.2f} s), "
              f"{old['events']:,.0f} events, {old['finished']:,.0f} finished: "
              f"{old['wall'] / dt:.2f}x wall, {old['cpu'] / cpu:.2f}x cpu", flush=True)


def _previous(rev: str) -> Path:
    """The library's source as it was at ``rev`` (git archive), in a temporary folder."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src"],
                          check=True, capture_output=True).stdout
    folder = Path(tempfile.mkdtemp(prefix="aiplat-bench-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


def _run_previous(src: Path, cohorts: int, per_cohort: int, workloads: int
                  ) -> dict[str, float]:
    code = (f"import json, sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); import sim; "
            f"print(json.dumps(sim.kueue_run({cohorts}, {per_cohort}, {workloads})))")
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=env).stdout
    got: dict[str, float] = json.loads(out.splitlines()[-1])
    return got


def replay_scale(cohorts: int, per_cohort: int, workloads: int, *, label: str,
                 target: float, peer: float | None = None) -> None:
    from aiplat.kueue.cycle import Replay
    from aiplat.kueue.snapshot import parse

    api = "kueue.x-k8s.io/v1beta2"
    rng = np.random.default_rng(1)
    objs: list[dict[str, object]] = [{"apiVersion": api, "kind": "ResourceFlavor",
                                      "metadata": {"name": "cpu"}}]
    names = []
    for c in range(cohorts):
        for i in range(per_cohort):
            name = f"cq-{c}-{i}"
            names.append(name)
            objs += [{"apiVersion": api, "kind": "ClusterQueue", "metadata": {"name": name},
                      "spec": {"cohortName": f"cohort-{c}", "namespaceSelector": {},
                               "resourceGroups": [{
                          "coveredResources": ["cpu"], "flavors": [{"name": "cpu", "resources": [
                              {"name": "cpu", "nominalQuota": 20, "borrowingLimit": 100}]}]}],
                          "preemption": {"withinClusterQueue": "LowerPriority"}}},
                     {"apiVersion": api, "kind": "LocalQueue",
                      "metadata": {"name": name, "namespace": "ns"},
                      "spec": {"clusterQueue": name}}]
    sizes = rng.choice([1, 5, 20], size=workloads, p=[0.6, 0.3, 0.1])
    for k, s in enumerate(sizes):
        objs.append({"apiVersion": api, "kind": "Workload", "metadata": {
            "name": f"w{k}", "namespace": "ns", "uid": f"{k:08d}",
            "creationTimestamp": f"2026-01-01T{k // 3600 % 24:02d}:{k // 60 % 60:02d}:"
                                 f"{k % 60:02d}Z"},
            "spec": {"queueName": names[int(rng.integers(len(names)))],
                     "priority": int(rng.integers(0, 3)), "podSets": [{
                         "name": "main", "count": 1, "template": {"spec": {"containers": [
                             {"name": "c", "resources": {"requests": {"cpu": str(s)}}}]}}}]}})
    t0, c0 = time.perf_counter(), time.process_time()
    r = Replay(parse(objs, "bench"))
    out = r.run()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    admitted = sum(1 for o in out if o.decision == "admitted")
    peer_txt = f"; Kueue's own test ~{peer:.0f} s: {peer / dt:,.1f}x" if peer else ""
    print(f"{label}: {len(names)} ClusterQueues, {workloads:,} pending Workloads: {dt:.2f} s "
          f"(cpu {cpu:.2f} s), "
          f"{r.cycle:,} cycles, {admitted:,} admitted (target < {target:.0f} s: "
          f"{target / dt:.1f}x headroom{peer_txt})")


def full_table(folder: Path) -> None:
    nodes = load_nodes(folder)
    traces = ("default", "gpushare40", "gpuspec33", "multigpu50")
    reqs = {t: [p.request for p in load_pods(folder, t)] for t in traces}
    t0 = time.perf_counter()
    table = fgd_table(nodes, reqs, list(PAPER_POLICIES), list(range(42, 52)))
    dt = time.perf_counter() - t0
    print(f"5. FGD table, mean GPU allocation % at 130% arrivals, seeds 42-51 ({dt:.0f} s for "
          f"{len(traces) * len(PAPER_POLICIES) * 10} experiments):")
    print(f"   {'policy':<12}" + "".join(f"{t:>12}" for t in traces))
    for p in PAPER_POLICIES:
        print(f"   {p:<12}" + "".join(f"{table['mean'][t][p]:>12.2f}" for t in traces))
    for t in traces:
        m = table["mean"][t]
        base = max((v, k) for k, v in m.items() if k != "fgd")
        cut = 1 - (100 - m["fgd"]) / (100 - base[0])
        print(f"   {t}: {' > '.join(sorted(m, key=lambda k: -m[k]))}; FGD leaves "
              f"{cut:.0%} fewer GPUs unallocated than {base[1]} "
              f"({table['unallocated_gpus'][t][base[1]] - table['unallocated_gpus'][t]['fgd']:.0f}"
              " more GPUs in use)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="skip the full FGD table")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--against", metavar="REV", help="also run 2. and 3. on the code of git "
                    "revision REV, in this run, and print the ratios")
    args = ap.parse_args()
    against = (args.against, _previous(args.against)) if args.against else None
    folder = trace_dir(args.data)
    fgd_once(folder)
    kueue_scale(5, 6, 15_000, label="2. Kueue performance-test shape", target=3,
                peer=KUEUE_PERF_S, against=against)
    kueue_scale(100, 10, 50_000, label="3. Large", target=20, against=against)
    replay_scale(5, 6, 15_000, label="4a. sim replay, Kueue performance-test shape", target=10,
                 peer=KUEUE_PERF_S)
    replay_scale(100, 10, 50_000, label="4b. sim replay, large", target=120)
    if not args.quick:
        full_table(folder)


if __name__ == "__main__":
    main()
