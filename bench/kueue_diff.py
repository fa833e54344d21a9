"""The differential test's larger set: ``aiplat sim replay`` against the real Kueue v0.19.2.

Starts a lab control plane of its own (classic Kueue; ``--fair`` for fair sharing), runs
each generated scenario (``aiplat.sched.kueue_scenarios``) on the real Kueue and replays its
snapshot (``tests/integration/kueue_live.py``), and prints the agreement: scenarios where
every workload agrees, and workloads that agree (admitted or not, and on which flavor per
pod set and resource), with each difference listed.

    .venv/bin/python bench/kueue_diff.py --seeds 100 [--first 1] [--fair] [--json out.json]

Needs the components built (``aiplat lab cluster build``). About 12 s per scenario here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))

import kueue_live  # type: ignore[import-not-found]  # tests/integration, on sys.path above

from aiplat.cluster.assets import locate
from aiplat.cluster.run import down, kubeconfig_path, up
from aiplat.kube.apply import Api
from aiplat.sched.kueue_scenarios import generate


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--first", type=int, default=1)
    ap.add_argument("--fair", action="store_true", help="Kueue with fair sharing")
    ap.add_argument("--json", type=Path, help="write the per-scenario results here")
    args = ap.parse_args()
    name = "kueuebenchfs" if args.fair else "kueuebench"
    tmp = Path(tempfile.mkdtemp(prefix="kueuebench-"))
    os.environ["AIPLAT_CLUSTER_DIR"] = str(tmp / "runs")
    cfg: dict[str, object] = {"apiVersion": "config.kueue.x-k8s.io/v1beta2",
                              "kind": "Configuration", "manageJobsWithoutQueueName": False}
    if args.fair:
        cfg["fairSharing"] = {"preemptionStrategies": ["LessThanOrEqualToFinalShare",
                                                       "LessThanInitialShare"]}
    t0 = time.monotonic()
    up(name, [], cfg, locate())
    api = Api.from_kubeconfig(str(kubeconfig_path(name)))
    scen_ok = wl_ok = wl_total = 0
    rows = []
    try:
        for seed in range(args.first, args.first + args.seeds):
            sc = generate(seed, fair_sharing=args.fair)
            try:
                res = kueue_live.run(api, sc)
            except AssertionError as e:  # Kueue never settled: a difference of its own
                n_wl = len(sc.phase_a) + len(sc.phase_b)
                wl_total += n_wl
                rows.append({"seed": seed, "workloads": n_wl, "differences": [str(e)]})
                print(f"seed {seed}: {e}", flush=True)
                continue
            diffs = res.differences()
            scen_ok += not diffs
            wl_total += len(res.kueue)
            wl_ok += len(res.kueue) - len(diffs)
            rows.append({"seed": seed, "workloads": len(res.kueue), "differences": diffs})
            print(f"seed {seed}: {'agrees' if not diffs else f'{len(diffs)} differ'}",
                  flush=True)
            for d in diffs:
                print(f"  {d}", flush=True)
    finally:
        api.close()
        down(name)
    n = args.seeds
    print(f"\nKueue v0.19.2 {'fair sharing' if args.fair else 'classic'}: scenarios agreeing "
          f"{scen_ok}/{n} ({100 * scen_ok / n:.1f}%), workloads agreeing {wl_ok}/{wl_total} "
          f"({100 * wl_ok / max(1, wl_total):.1f}%) in {time.monotonic() - t0:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
