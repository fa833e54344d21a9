"""aiplat sim fgd's 10-seed means against the published simulator's expected results.

The published figures are bench/fgd_published.csv (column 130 of the simulator's
experiments/analysis/expected_results/analysis_allo_discrete.csv, commit 8f3d641). For each
trace: aiplat's mean, the published mean, the difference (percentage points), and whether
the policies rank in the published order. Prints, never asserts; the assertions on a
reduced seed set are tests/unit/test_fgd_published.py.

Usage: .venv/bin/python bench/fgd_compare.py [--trace T ...] [--seeds 10] [--jobs 2]
       [--ties random] [--fgd-score exact] [--typical all] [--nodes all] [--variant aiplat]
       [--data ../shared/data] [--markdown] [--rng go]
"""

from __future__ import annotations

import argparse
import csv
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from statistics import mean

from aiplat.sched.alibaba import load_nodes, load_pods, trace_dir
from aiplat.sched.fgd import PAPER_POLICIES, FgdOptions, fgd_table, run_fgd

HERE = Path(__file__).resolve().parent
PUBLISHED = HERE / "fgd_published.csv"
DEFAULT_TRACES = ("default", "gpushare40", "gpuspec33", "multigpu50", "cpu250")


def published() -> dict[str, dict[str, dict[int, float]]]:
    """trace -> policy -> seed -> allocation % at 130% arrivals."""
    out: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    with PUBLISHED.open() as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        for r in rows:
            out[r["trace"]][r["policy"]][int(r["seed"])] = float(r["alloc130"])
    return out


def published_means(trace: str) -> dict[str, float]:
    return {p: mean(v.values()) for p, v in published()[trace].items()}


def _one(job: tuple[Path, str, int, FgdOptions, bool]) -> tuple[str, dict[str, float], str]:
    data, trace, seeds, options, go = job
    folder = trace_dir(data)
    reqs = {trace: [p.request for p in load_pods(folder, trace)]}
    if go:
        return _one_go(folder, trace, seeds, options)
    t = fgd_table(load_nodes(folder), reqs, list(PAPER_POLICIES), list(range(42, 42 + seeds)),
                  options=options)
    return trace, t["mean"][trace], t["variant"]


def _one_go(folder: Path, trace: str, seeds: int, options: FgdOptions
            ) -> tuple[str, dict[str, float], str]:
    """Go's math/rand replayed: also counts the seeds equal to the published one."""
    from fgd_gorand import GoRand

    nodes = load_nodes(folder, gpu_only=True)
    reqs = [p.request for p in load_pods(folder, trace)]
    theirs = published()[trace]
    means, label, equal = {}, "", dict.fromkeys(PAPER_POLICIES, 0)
    for policy in PAPER_POLICIES:
        vals = []
        for seed in range(42, 42 + seeds):
            r = run_fgd(nodes, reqs, policy, seed, options=options, draws=GoRand(seed))
            vals.append(r.allocation_ratio)
            label = r.variant
            equal[policy] += abs(r.allocation_ratio - theirs[policy][seed]) < 1e-9
        means[policy] = mean(vals)
    exact = ", ".join(f"{p} {n}/{seeds}" for p, n in equal.items())
    return trace, means, f"{label}; seeds equal to the published: {exact}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", action="append")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--variant", choices=["published", "aiplat"], default="published")
    ap.add_argument("--ties", choices=["node-order", "random"], default="node-order")
    ap.add_argument("--fgd-score", choices=["integer", "exact"], default="integer")
    ap.add_argument("--typical", choices=["popular", "all"], default="popular")
    ap.add_argument("--nodes", choices=["gpu", "all"], default="gpu")
    ap.add_argument("--data", type=Path, default=HERE.parents[1] / "shared" / "data")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--rng", choices=["numpy", "go"], default="numpy",
                    help="go: replay Go's math/rand (bench/fgd_gorand.py) and count the seeds "
                    "equal to the published ones")
    a = ap.parse_args()
    options = (FgdOptions.aiplat() if a.variant == "aiplat"
               else FgdOptions(ties=a.ties, fgd_score=a.fgd_score, typical=a.typical,
                               nodes=a.nodes))
    traces = a.trace or list(DEFAULT_TRACES)
    t0 = time.perf_counter()
    pub = published()
    print(f"variant: {options.label}; seeds 42..{41 + a.seeds}", flush=True)
    if a.markdown:
        print("| trace | policy | aiplat | published | diff (pp) |\n|---|---|---|---|---|")
    with ProcessPoolExecutor(a.jobs) as pool:
        results = pool.map(_one, [(a.data, t, a.seeds, options, a.rng == "go")
                                  for t in traces])
        worst = max(_report(r, pub, markdown=a.markdown) for r in results)
    print(f"{len(traces) * 6 * a.seeds} experiments in {time.perf_counter() - t0:.0f} s; "
          f"largest |difference|: {worst:.2f} pp")


def _report(result: tuple[str, dict[str, float], str],
            pub: dict[str, dict[str, dict[int, float]]], *, markdown: bool) -> float:
    """Prints one trace's rows; returns its largest |difference|."""
    trace, ours, label = result
    worst = 0.0
    if "seeds equal" in label:
        print(f"{trace}: {label}")
    theirs = {p: mean(v.values()) for p, v in pub[trace].items()}
    for p in PAPER_POLICIES:
        d = ours[p] - theirs[p]
        worst = max(worst, abs(d))
        if markdown:
            print(f"| {trace} | {p} | {ours[p]:.2f} | {theirs[p]:.2f} | {d:+.2f} |")
        else:
            print(f"{trace:<12}{p:<12}{ours[p]:>8.2f}{theirs[p]:>10.2f}{d:>+8.2f}")
    rank_o = sorted(PAPER_POLICIES, key=lambda p: -ours[p])
    rank_t = sorted(PAPER_POLICIES, key=lambda p: -theirs[p])
    print(f"{trace}: aiplat {' > '.join(rank_o)}\n{'':{len(trace)}}  published "
          f"{' > '.join(rank_t)}", flush=True)
    return worst


if __name__ == "__main__":
    main()
