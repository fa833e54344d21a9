"""aiplat sim fgd beside the published FGD simulator, one experiment per policy.

For each policy: the published simulator (built from its Go module by bench/fgd_tools.py)
and ``aiplat.sched.fgd.run_fgd`` on the same trace and seed; prints both wall times, their
ratio, and both allocation ratios at 130% arrivals (the published metric, computed by the
same code from the simulator's own ``[Alloc]`` log lines). Per-seed figures differ by
design (numpy's generator, not Go's), so compare the 10-seed means in bench/fgd_compare.py;
this measures speed and that the binary runs the protocol we read.

Usage:
  .venv/bin/python bench/fgd_side_by_side.py --source GIT_DIR [--build] [--policy P ...]
      [--trace default] [--seed 42] [--timeout 1800] [--every N] [--data ../shared/data]
--every N runs both on every n-th GPU node (a cluster 1/N the size, the trace tuned to it
the same way) when the full one takes the published simulator too long here.
--build (--build-only) times a build from empty Go caches (GOCACHE/GOMODCACHE in a temp dir).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import fgd_tools
from aiplat.sched.alibaba import load_pods, trace_dir
from aiplat.sched.fgd import PAPER_POLICIES, run_fgd
from aiplat.sched.fgd_protocol import headline

ROOT = Path(__file__).resolve().parents[1]


def fresh_build(source: Path) -> Path:
    """Build in empty Go caches and an empty output folder (all thrown away after); prints
    the time; returns the usual cached build."""
    tmp = Path(tempfile.mkdtemp(prefix="fgd-gocache-"))
    saved = {k: os.environ.get(k) for k in ("GOCACHE", "GOMODCACHE")}
    os.environ.update(GOCACHE=str(tmp / "cache"), GOMODCACHE=str(tmp / "mod"))
    try:
        t0 = time.perf_counter()
        fgd_tools.build(source, cache=tmp / "out", force=True)
        print(f"fresh build (empty GOCACHE/GOMODCACHE and output cache, download + compile): "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    finally:
        # the module cache is read-only: only go itself removes it
        subprocess.run(["go", "clean", "-modcache"], check=False, capture_output=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(tmp, ignore_errors=True)
    return fgd_tools.build(source)  # the usual cache, for the runs that follow


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, required=True,
                    help="git dir of hkust-adsl/kubernetes-scheduler-simulator")
    ap.add_argument("--build", action="store_true", help="time a fresh build first")
    ap.add_argument("--build-only", action="store_true", help="time a fresh build, run nothing")
    ap.add_argument("--policy", action="append", choices=PAPER_POLICIES)
    ap.add_argument("--trace", default="default")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--work", type=Path, help="keep inputs and logs here")
    ap.add_argument("--every", type=int, default=1,
                    help="every n-th GPU node only: a smaller cluster for both (default: all)")
    args = ap.parse_args()
    simon = (fresh_build(args.source) if args.build or args.build_only
             else fgd_tools.build(args.source))
    if args.build_only:
        return
    folder = trace_dir(args.data)
    nodes = fgd_tools.gpu_nodes(folder, args.every)
    reqs = [p.request for p in load_pods(folder, args.trace)]
    work = args.work or Path(tempfile.mkdtemp(prefix="fgd-side-"))
    print(f"{args.trace}, seed {args.seed}, {len(nodes)} GPU nodes "
          f"({sum(n.gpus for n in nodes):,} GPUs); inputs and logs in {work}")
    print(f"{'policy':<11}{'published s':>12}{'aiplat s':>10}{'ratio':>9}"
          f"{'published %':>13}{'aiplat %':>10}")
    for policy in args.policy or list(PAPER_POLICIES):
        out = work / policy
        cc, sc = fgd_tools.write_inputs(folder, args.trace, policy, args.seed, out,
                                        nodes=nodes)
        t0 = time.perf_counter()
        log = fgd_tools.run(simon, cc, sc, out / "simon.log", args.timeout)
        theirs = time.perf_counter() - t0
        t0 = time.perf_counter()
        ours = run_fgd(nodes, reqs, policy, args.seed)
        mine = time.perf_counter() - t0
        print(f"{policy:<11}{theirs:>12.1f}{mine:>10.2f}{theirs / mine:>8.0f}x"
              f"{headline(log):>13.2f}{ours.allocation_ratio:>10.2f}", flush=True)


if __name__ == "__main__":
    main()
