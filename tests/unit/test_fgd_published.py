"""aiplat sim fgd against the published simulator's expected results, on a reduced seed set.

The published figures (bench/fgd_published.csv) are the simulator's own
experiments/analysis/expected_results/analysis_allo_discrete.csv, 10 seeds. Here: seeds
42-44 on the default trace. Each policy's mean must lie within 1 percentage point of the
published 10-seed mean (the published per-seed spread is 0.1-0.6 pp; a 3-seed mean against a
10-seed one has a 3-sigma band of ~1.2 pp for the noisiest policy), and the policies must
rank in the paper's order. aiplat's earlier model fails both (GpuClustering came out last).
The 10-seed table on every variant is bench/fgd_compare.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from aiplat.sched.alibaba import load_nodes, load_pods, trace_dir
from aiplat.sched.cluster import Node, Request
from aiplat.sched.fgd import PAPER_POLICIES, FgdOptions, fgd_table

ROOT = Path(__file__).parents[2]
DATA = ROOT.parent / "shared" / "data"
SEEDS = [42, 43, 44]
TOLERANCE_PP = 1.0
Trace = tuple[list[Node], list[Request]]

sys.path.insert(0, str(ROOT / "bench"))
from fgd_compare import published_means  # noqa: E402


@pytest.fixture(scope="module")
def default_trace() -> Trace:
    if not (DATA / "traces" / "alibaba-gpu-v2023").is_dir():
        reason = f"trace data missing at {DATA} (the shared data folder)"
        if os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}:
            pytest.fail(f"{reason} (CI=true: this test must run, not skip)", pytrace=False)
        pytest.skip(reason)
    folder = trace_dir(DATA)
    return load_nodes(folder), [p.request for p in load_pods(folder, "default")]


def _means(trace: Trace, options: FgdOptions) -> dict[str, float]:
    nodes, reqs = trace
    table = fgd_table(nodes, {"default": reqs}, list(PAPER_POLICIES), SEEDS,
                      options=options)
    assert table["variant"] == options.label
    means: dict[str, float] = table["mean"]["default"]
    return means


def test_default_trace_tracks_the_published_means_in_the_papers_order(
        default_trace: Trace) -> None:
    ours = _means(default_trace, FgdOptions())
    theirs = published_means("default")
    diff = {p: round(ours[p] - theirs[p], 2) for p in PAPER_POLICIES}
    assert all(abs(d) <= TOLERANCE_PP for d in diff.values()), diff
    # the paper's order on the default trace; packing and clustering are 0.12 pp apart in
    # the published means, so only their place between DotProd and BestFit is asserted
    assert ours["fgd"] > ours["bestfit"] > max(ours["packing"], ours["clustering"]), ours
    assert min(ours["packing"], ours["clustering"]) > ours["dotprod"] > ours["random"], ours


def test_the_earlier_model_does_not(default_trace: Trace) -> None:
    nodes, reqs = default_trace
    table = fgd_table(nodes, {"default": reqs}, ["clustering", "dotprod"], SEEDS[:1],
                      options=FgdOptions.aiplat())
    ours = table["mean"]["default"]
    theirs = published_means("default")
    assert ours["clustering"] < ours["dotprod"]  # GpuClustering behind DotProd: not the paper
    assert abs(ours["clustering"] - theirs["clustering"]) > TOLERANCE_PP
