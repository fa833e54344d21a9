"""The differential test's larger set: ``aiplat sim replay`` against the real Kueue v0.19.2.

Starts a lab control plane of its own (classic Kueue; ``--fair`` for fair sharing), runs
each generated scenario (``aiplat.kueue.scenarios``) on the real Kueue and replays its
snapshot (``tests/integration/kueue_live.py``), and prints the agreement: scenarios where
every workload agrees, and workloads that agree (admitted or not, and on which flavor per
pod set and resource), with each difference listed.

    .venv/bin/python bench/kueue_diff.py --seeds 100 [--first 1] [--fair] [--repeat 2]
                                         [--partial | --selectors | --tas]
                                         [--json out.json] [--dump DIR]
    .venv/bin/python bench/kueue_diff.py --from DIR   # replay a --dump again, no cluster

``--repeat N`` runs each scenario N times on the real Kueue: where Kueue's own outcomes differ
between runs (its eviction, requeue batch and cache updates race its scheduling cycles), the
scenario is counted apart as *Kueue varies*, and the replay is held to each run's snapshot; the
agreement is printed over all scenarios and over those where Kueue decided the same every time.

Needs the components built (``aiplat lab cluster build``). About 12 s per scenario here.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))

import kueue_live  # type: ignore[import-not-found]  # tests/integration, on sys.path above

from aiplat.kube.apply import Api
from aiplat.kueue.scenarios import generate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--first", type=int, default=1)
    ap.add_argument("--fair", action="store_true", help="Kueue with fair sharing")
    ap.add_argument("--partial", action="store_true",
                    help="pod sets with minCount (partial admission)")
    ap.add_argument("--selectors", action="store_true",
                    help="ClusterQueues with namespaceSelectors (null, {}, matching or not)")
    ap.add_argument("--tas", action="store_true",
                    help="topology-aware scheduling: a Topology, TAS flavors, kwok nodes in "
                         "blocks and racks, pod sets asking required/preferred/unconstrained "
                         "topologies (their domains compared too)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per scenario on Kueue")
    ap.add_argument("--dump", type=Path,
                    help="write each run's snapshot (kubectl's objects) and Kueue's final "
                         "workloads here; a run Kueue never settled, its snapshot alone "
                         "(seedN-runK-unsettled.json, for `aiplat sim replay`)")
    ap.add_argument("--from", dest="source", type=Path,
                    help="no cluster: replay the runs a --dump wrote and compare them with "
                         "Kueue's recorded outcome")
    ap.add_argument("--json", type=Path, help="write the per-scenario results here")
    ap.add_argument("--settle", type=float, default=kueue_live.SETTLE_TIMEOUT,
                    help="seconds Kueue gets to settle a run before it counts as never "
                         "settled (default %(default).0f)")
    args = ap.parse_args()
    kueue_live.SETTLE_TIMEOUT = args.settle
    if args.source:
        return _offline(args.source)
    name = "kueuebenchfs" if args.fair else "kueuebench"
    lab = kueue_live.Lab(Path(tempfile.mkdtemp(prefix="kueuebench-")) / "runs", name,
                         args.fair)
    t0 = time.monotonic()
    lab.start()
    rows: list[dict[str, Any]] = []
    try:
        for seed in range(args.first, args.first + args.seeds):
            row = _seed(lab.live, seed, args, args.dump)
            if any(r.get("settled") is False and not (r.get("loop") or {}).get("kueue")
                   for r in row["runs"]):
                # Kueue v0.19.2 can hang for good under the classic gate's cohort cycle
                # (kueue_live.Lab): a fresh lab, and the scenario once more; the first run
                # stays counted as unsettled. (A preemption loop is no hang: Kueue is busy
                # repeating it.)
                print(f"seed {seed}: Kueue did not settle: the lab restarts, the scenario "
                      "runs again", flush=True)
                lab.restart()
                again = _seed(lab.live, seed, args, args.dump)
                row["runs"] += again["runs"]
            rows.append(row)
    finally:
        lab.stop()
    mode = ("fair sharing" if args.fair else "classic") + (
        ", partial admission" if args.partial else "") + (
        ", namespaceSelectors" if args.selectors else "") + (
        ", topology-aware scheduling" if args.tas else "")
    print(f"\nKueue v0.19.2 {mode}, {args.seeds} scenarios x {args.repeat} runs, "
          f"{time.monotonic() - t0:.0f} s")
    _summary("all scenarios", rows)
    print("the stand-in job controller's gathering of a cycle's evictions: "
          + ", ".join(f"{k} {v}" for k, v in kueue_live.GATHERED.items()))
    if args.repeat > 1:
        stable = [r for r in rows if not r["kueue_varies"]]
        print(f"Kueue varied between runs on {len(rows) - len(stable)} scenarios: "
              f"{[r['seed'] for r in rows if r['kueue_varies']]}")
        _summary("scenarios Kueue decided the same every run", stable)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


def _seed(api: Api, seed: int, args: argparse.Namespace, dump: Path | None
          ) -> dict[str, Any]:
    """One scenario, ``args.repeat`` runs; a run agrees when every workload does."""
    fair = args.fair
    sc = generate(seed, fair_sharing=fair, partial=args.partial, selectors=args.selectors,
                  tas=args.tas)
    runs: list[dict[str, Any]] = []
    for _ in range(args.repeat):
        try:
            res = kueue_live.run(api, sc)
        except kueue_live.NotSettledError as e:  # no outcome to compare: was it a loop?
            n_wl = len(sc.phase_a) + len(sc.phase_b)
            # (no eviction finished: no loop to look for, e.g. a queue Kueue left out)
            loop = kueue_live.loops(sc, e) if e.snapshot and e.evictions else None
            runs.append({"workloads": n_wl, "differences": [str(e)], "kueue": None,
                         "settled": False, "loop": loop})
            if dump and e.snapshot:  # for a look at the loop without a cluster
                dump.mkdir(parents=True, exist_ok=True)
                (dump / f"seed{seed}-run{len(runs)}-unsettled.json").write_text(json.dumps(
                    {"apiVersion": "v1", "kind": "List", "items": kueue_live.replay_objects(
                        sc, e.snapshot)}, indent=1))
            if loop is not None:
                print(f"  seed {seed}: Kueue's preemption loops (victim, preemptor) "
                      f"{loop['kueue']}, the replay's {loop['sim']}: "
                      f"{'the same' if loop['agrees'] else 'DIFFERENT'} "
                      f"(evictions finished: {loop['evictions']})", flush=True)
            continue
        if dump:  # `aiplat sim replay FILE` reads it back; --from DIR replays them all
            dump.mkdir(parents=True, exist_ok=True)
            (dump / f"seed{seed}-run{len(runs) + 1}.json").write_text(json.dumps(
                {"apiVersion": "v1", "kind": "List", "items": res.snapshot + (
                    [{"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
                      "fairSharing": {}}] if fair else [])}, indent=1))
            (dump / f"seed{seed}-run{len(runs) + 1}-kueue.json").write_text(json.dumps(
                res.final, indent=1))
        runs.append({"workloads": len(res.kueue), "differences": res.differences(),
                     "unknown": len(res.unknown), "world": res.world,
                     "kueue": sorted((k, repr(v), repr(res.topology_kueue.get(k)))
                                     for k, v in res.kueue.items())})
    outcomes = {repr(r["kueue"]) for r in runs}
    row = {"seed": seed, "runs": runs, "kueue_varies": len(outcomes) > 1}
    verdicts = [("agrees" if not r["differences"] else f"{len(r['differences'])} differ")
                + (" (a timing alternative)" if r.get("world") else "") for r in runs]
    print(f"seed {seed}: {', '.join(verdicts)}"
          f"{' (Kueue varied)' if row['kueue_varies'] else ''}", flush=True)
    for r in runs:
        for d in r["differences"]:
            print(f"  {d}", flush=True)
    return row


def _offline(source: Path) -> int:
    """Replay the dumped snapshots again (after a change to the replay) against the outcome
    the real Kueue reached on them."""
    rows = []
    for snap in sorted(source.glob("seed*-run*[0-9].json"),
                       key=lambda p: [int(x) for x in p.stem[4:].split("-run")]):
        objs = json.loads(snap.read_text())["items"]
        final = json.loads(snap.with_name(snap.stem + "-kueue.json").read_text())
        r, outcomes = kueue_live.replay(objs, str(snap),
                                        tas=any(o.get("kind") == "Node" for o in objs))
        res = kueue_live.Result(
            0, {n: kueue_live.outcome(w) for n, w in final.items()},
            {o.workload.split("/", 1)[1]: kueue_live.decided(o) for o in outcomes},
            unknown={o.workload.split("/", 1)[1]: o.unknown for o in outcomes if o.unknown},
            topology_kueue={n: kueue_live.topology(w) for n, w in final.items()
                            if kueue_live.outcome(w)[0] and kueue_live.topology(w)},
            topology_sim=kueue_live.sim_topology(r), placed=kueue_live.placed(outcomes),
            alternatives=kueue_live.alternatives(r))
        diffs = [f"{snap.stem} {d.split(' ', 2)[2]}" for d in res.differences()]
        print(f"{snap.stem}: {'agrees' if not diffs else f'{len(diffs)} differ'}"
              + _world(res))
        for d in diffs:
            print(f"  {d}")
        rows.append({"runs": [{"workloads": len(res.kueue), "differences": diffs,
                               "unknown": len(res.unknown), "world": res.world}]})
    _summary(f"replayed from {source}", rows)
    return 0


def _world(res: kueue_live.Result) -> str:
    if not res.world:
        return ""
    return f" (the replay's timing alternative: {res.alternatives[res.world - 1][3]})"


def _summary(title: str, rows: list[dict[str, Any]]) -> None:
    """Agreement over the runs Kueue settled on; a run it never settled on has no outcome
    to compare (Kueue was still changing its decisions): those are counted apart."""
    every = [(row.get("seed"), r) for row in rows for r in row["runs"]]
    unsettled = [seed for seed, r in every if r.get("settled") is False]
    looped = [seed for seed, r in every if (r.get("loop") or {}).get("agrees")]
    runs = [r for _, r in every if r.get("settled") is not False]
    n_ok = sum(not r["differences"] for r in runs)
    wl = sum(r["workloads"] for r in runs)
    wl_ok = wl - sum(len(r["differences"]) for r in runs)
    unknown = sum(r.get("unknown", 0) for r in runs)
    timed = sum(bool(r.get("world")) for r in runs)
    print(f"{title}: runs agreeing {n_ok}/{len(runs)} ({100 * n_ok / max(1, len(runs)):.1f}%), "
          f"workloads agreeing {wl_ok}/{wl} ({100 * wl_ok / max(1, wl):.1f}%), "
          f"unknown (feature) in the replay {unknown} (counted as disagreeing); held "
          f"against a timing alternative of the replay: {timed} run(s)"
          + (f"; Kueue never settled on {len(unsettled)} more run(s), seeds {unsettled}, "
             f"in the preemption loop the replay reports on {len(looped)} of them"
             if unsettled else ""))


if __name__ == "__main__":
    raise SystemExit(main())
