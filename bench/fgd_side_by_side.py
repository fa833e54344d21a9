"""aiplat sim fgd beside the published FGD simulator, one experiment per policy.

For each policy: the published simulator (built from its Go module by bench/fgd_tools.py)
and ``aiplat.sched.fgd.run_fgd`` on the same trace and seed; prints both wall times, their
ratio, and both allocation ratios at 130% arrivals (the published metric, computed by the
same code from the simulator's own ``[Alloc]`` log lines). Per-seed figures differ by
design (numpy's generator, not Go's), so compare the 10-seed means in bench/fgd_compare.py;
this measures speed and that the binary runs the protocol we read.

Usage:
  .venv/bin/python bench/fgd_side_by_side.py --source GIT_DIR [--build] [--policy P ...]
      [--trace default] [--seed 42] [--timeout 1800] [--data ../shared/data]
--build times a build from empty Go caches (GOCACHE/GOMODCACHE in a temp dir).
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import fgd_tools
from aiplat.sched.alibaba import load_nodes, load_pods, trace_dir
from aiplat.sched.fgd import PAPER_POLICIES, run_fgd
from aiplat.sched.fgd_protocol import headline

ROOT = Path(__file__).resolve().parents[1]


def fresh_build(source: Path) -> Path:
    """Build with empty Go caches and an empty output cache; prints the time."""
    tmp = Path(tempfile.mkdtemp(prefix="fgd-gocache-"))
    saved = {k: os.environ.get(k) for k in ("GOCACHE", "GOMODCACHE")}
    os.environ.update(GOCACHE=str(tmp / "cache"), GOMODCACHE=str(tmp / "mod"))
    try:
        t0 = time.perf_counter()
        simon = fgd_tools.build(source, force=True)
        print(f"fresh build (empty GOCACHE/GOMODCACHE, download + compile): "
              f"{time.perf_counter() - t0:.0f} s -> {simon}", flush=True)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(tmp, ignore_errors=True)
    return simon


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, required=True,
                    help="git dir of hkust-adsl/kubernetes-scheduler-simulator")
    ap.add_argument("--build", action="store_true", help="time a fresh build first")
    ap.add_argument("--policy", action="append", choices=PAPER_POLICIES)
    ap.add_argument("--trace", default="default")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--work", type=Path, help="keep inputs and logs here")
    args = ap.parse_args()
    simon = fresh_build(args.source) if args.build else fgd_tools.build(args.source)
    folder = trace_dir(args.data)
    nodes = load_nodes(folder)
    reqs = [p.request for p in load_pods(folder, args.trace)]
    work = args.work or Path(tempfile.mkdtemp(prefix="fgd-side-"))
    print(f"{args.trace}, seed {args.seed}; inputs and logs in {work}")
    print(f"{'policy':<11}{'published s':>12}{'aiplat s':>10}{'ratio':>9}"
          f"{'published %':>13}{'aiplat %':>10}")
    for policy in args.policy or list(PAPER_POLICIES):
        out = work / policy
        cc, sc = fgd_tools.write_inputs(folder, args.trace, policy, args.seed, out)
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
