"""The published FGD simulator's rules, one test each on small hand-made clusters where the
rule and aiplat's earlier one disagree (each fails on the earlier behaviour, which is still
there as the ``aiplat`` variant / :mod:`aiplat.sched.policies`)."""

from __future__ import annotations

import numpy as np
import pytest

from aiplat.sched import policies as old
from aiplat.sched.cluster import ClusterState, Node, Placement, Request
from aiplat.sched.fgd import FgdOptions, cluster_nodes, run_fgd, sample_workload
from aiplat.sched.fgd_policies import (
    FGD,
    DotProd,
    GpuClustering,
    GpuPacking,
    RandomFit,
    Ties,
    fgd_score,
)
from aiplat.sched.fgd_protocol import AllocLog, headline, pod_sequence, typical_shapes
from aiplat.sched.frag import TypicalWorkload

CPU = Request(4000, 1024)
HALF = Request(1000, 1024, 1, 500)


def gpu_nodes(n: int, gpus: int = 2, cpu: int = 32_000) -> list[Node]:
    return [Node(f"n{i}", cpu, 262_144, gpus, "T4") for i in range(n)]


def ties(rank: list[int], seed: int = 0, rule: str = "node-order") -> Ties:
    return Ties(rule, np.array(rank, dtype=np.int64), np.random.default_rng(seed))  # type: ignore[arg-type]


# rule 1 -------------------------------------------------------------------------------


def test_ties_go_to_the_seeds_first_node_every_time() -> None:
    state = ClusterState(gpu_nodes(3))
    # a CPU-only pod scores 0 everywhere under packing: all three tie
    chosen = {GpuPacking(ties([2, 0, 1], seed=s)).place(state, CPU).node for s in range(20)}  # type: ignore[union-attr]
    assert chosen == {1}
    # aiplat's earlier rule (and the "random" option): a fresh random node among equals
    earlier = {old.GpuPacking().place(state, CPU, np.random.default_rng(s)).node  # type: ignore[union-attr]
               for s in range(20)}
    assert len(earlier) > 1
    optional = {GpuPacking(ties([2, 0, 1], seed=s, rule="random")).place(state, CPU).node  # type: ignore[union-attr]
                for s in range(20)}
    assert len(optional) > 1


# rule 2 -------------------------------------------------------------------------------


def test_the_cluster_is_the_gpu_nodes_only() -> None:
    nodes = [*gpu_nodes(2), Node("cpu0", 96_000, 262_144)]
    assert [n.name for n in cluster_nodes(nodes, FgdOptions())] == ["n0", "n1"]
    assert len(cluster_nodes(nodes, FgdOptions(nodes="all"))) == 3
    # the whole experiment: CPU-only pods cannot land on a CPU node
    reqs = [CPU, HALF, Request(1000, 1024, 1, 1000)]
    got = run_fgd(nodes, reqs, "packing", 42)
    assert got.variant == "published"
    assert run_fgd(nodes, reqs, "packing", 42, options=FgdOptions(nodes="all")).variant == \
        "published (nodes=all)"


# rule 3 -------------------------------------------------------------------------------


def _clustering(pol: GpuClustering | old.GpuClustering, state: ClusterState,
                placed: list[tuple[Request, Placement]]) -> None:
    for req, where in placed:
        state.allocate(req, where)
        pol.placed(state, req, where)


def test_clustering_tags_share_gpu_and_gpu_count() -> None:
    one, two = Request(1000, 1024, 1, 1000), Request(1000, 1024, 2, 1000)
    placed = [(two, Placement(0, (0, 1))), (one, Placement(1, (0,))),
              (Request(1000, 1024, 1, 300), Placement(2, (0,)))]
    state = ClusterState(gpu_nodes(4, gpus=4))
    pol = GpuClustering(ties([0, 1, 2, 3]))
    _clustering(pol, state, placed)
    # a 1-GPU pod: node 1 (only "1-gpu") beats the idle node 3, which beats node 0 ("2-gpu")
    s = pol.scores(state, one, np.arange(4))
    assert s[1] > s[3] > s[0]
    # a 500-milli pod joins the 300-milli one: every fractional pod is "share-gpu"
    assert pol.place(state, HALF).node == 2  # type: ignore[union-attr]
    # the earlier rule tagged by milli value: 2-GPU and 1-GPU pods looked alike
    state2 = ClusterState(gpu_nodes(4, gpus=4))
    earlier = old.GpuClustering()
    _clustering(earlier, state2, placed)
    e = earlier.scores(state2, one, np.arange(4))
    assert e[0] > e[3]  # node 0 in the "only my tag" band, ahead of the idle node


# rule 4 -------------------------------------------------------------------------------


def _fgd_case() -> tuple[ClusterState, TypicalWorkload, Request]:
    # typical workload: half-GPU pods only. Node 0 has a free GPU (placing 10 milli there
    # changes nothing); node 1's GPU has 400 free (a fragment: placing there shrinks it by
    # 10). Exact deltas prefer node 1; the integer score ties them (both 50).
    state = ClusterState(gpu_nodes(2, gpus=1))
    state.allocate(Request(0, 0, 1, 600), Placement(1, (0,)))
    typical = TypicalWorkload.from_shapes({(1000, 1, 500, frozenset()): 1.0})
    return state, typical, Request(1000, 1024, 1, 10)


def test_fgd_integer_score_ties_small_differences() -> None:
    state, typical, pod = _fgd_case()
    assert fgd_score(np.array([0.0, 400.0]), np.array([0.0, 390.0])).tolist() == [50, 50]
    assert FGD(ties([0, 1]), typical).place(state, pod).node == 0  # type: ignore[union-attr]
    assert FGD(ties([0, 1]), typical, "exact").place(state, pod).node == 1  # type: ignore[union-attr]
    assert old.FGD(typical).place(state, pod, np.random.default_rng(0)).node == 1  # type: ignore[union-attr]


def test_fgd_gpu_is_the_first_with_the_best_integer_score() -> None:
    state = ClusterState(gpu_nodes(1, gpus=2))
    state.allocate(Request(0, 0, 1, 600), Placement(0, (1,)))  # GPUs free: [1000, 400]
    typical = TypicalWorkload.from_shapes({(1000, 1, 500, frozenset()): 1.0})
    pod = Request(1000, 1024, 1, 10)
    assert FGD(ties([0]), typical).place(state, pod).gpus == (0,)  # type: ignore[union-attr]
    assert FGD(ties([0]), typical, "exact").place(state, pod).gpus == (1,)  # type: ignore[union-attr]


# rule 5 -------------------------------------------------------------------------------


def test_dotprod_normalises_by_fixed_maxima() -> None:
    big = Node("big", 128_000, 1_048_576, 8, "V100")
    small = Node("small", 32_000, 262_144, 2, "V100")
    state = ClusterState([big, small])
    pod = Request(8000, 1024, 1, 1000)
    # fixed maxima (128 cores, 8 GPUs): the emptier big node has the larger dot product
    assert DotProd(ties([0, 1])).scores(state, pod, np.arange(2)).tolist() == [90, 97]
    assert DotProd(ties([0, 1])).place(state, pod).node == 1  # type: ignore[union-attr]
    # the earlier rule divided by each node's own capacity and picked the big node
    assert old.DotProd().place(state, pod, np.random.default_rng(0)).node == 0  # type: ignore[union-attr]


# rule 6 -------------------------------------------------------------------------------


def test_typical_workload_keeps_the_popular_95_percent() -> None:
    a, b, c = Request(1000, 1, 1, 500), Request(2000, 1, 1, 1000), Request(8000, 1, 8, 1000)
    reqs = [a] * 96 + [b] * 3 + [c]
    assert typical_shapes(reqs) == {a.kind: 1.0}
    assert len(TypicalWorkload.from_requests(reqs).group_cap) == 3  # the earlier: every shape
    # equal counts: the larger shape first
    assert typical_shapes([a] * 50 + [b] * 50, threshold=50) == {b.kind: 1.0}


def test_typical_workload_counts_cpu_only_pods() -> None:
    reqs = [CPU] * 60 + [HALF] * 40
    assert typical_shapes(reqs) == {CPU.kind: 0.6, HALF.kind: 0.4}


# rule 7 -------------------------------------------------------------------------------


def test_random_policy_takes_a_random_fitting_gpu() -> None:
    state = ClusterState(gpu_nodes(1, gpus=3))
    state.allocate(Request(0, 0, 1, 700), Placement(0, (1,)))  # GPUs free: [1000, 300, 1000]
    pod = Request(1000, 1024, 1, 200)
    got = {RandomFit(ties([0], seed=s)).place(state, pod).gpus for s in range(30)}  # type: ignore[union-attr]
    assert got == {(0,), (1,), (2,)}
    assert old.RandomPolicy().place(state, pod, np.random.default_rng(0)).gpus == (1,)  # type: ignore[union-attr]


# rule 8 -------------------------------------------------------------------------------


def test_every_trace_pod_once_then_draws_until_the_next_would_pass() -> None:
    reqs = [Request(1000, 1, 1, 1000), Request(1000, 1, 1, 500), CPU, Request(1000, 1, 4, 1000)]
    cap = 10_000
    for seed in range(10):
        seq = pod_sequence(reqs, cap, np.random.default_rng(seed))
        assert sorted(map(id, seq[:4])) == sorted(map(id, reqs))  # all of them, first
        # each appended draw passed the check with its *per-GPU* milli (tuneUpPods), so a
        # 4-GPU draw may carry the total up to 3 GPUs past the limit
        before_last = sum(r.gpu_total_milli for r in seq[:-1])
        assert before_last + (seq[-1].gpu_milli if seq[-1].num_gpu else 0) <= 13_000
        assert sum(r.gpu_total_milli for r in seq) <= 16_000
        # the earlier sampling drew with replacement and kept the draw that passed the limit
        assert sum(r.gpu_total_milli for r in sample_workload(reqs, cap, seed)) >= 13_000


def test_a_trace_over_the_limit_loses_random_pods() -> None:
    reqs = [Request(1000, 1, 8, 1000)] * 3  # 24 GPUs asked of a 10-GPU cluster
    seq = pod_sequence(reqs, 10_000, np.random.default_rng(1))
    assert len(seq) == 1


# rule 9 -------------------------------------------------------------------------------


def test_headline_is_the_mean_over_lines_at_130_percent() -> None:
    # 10 GPUs: lines at arrivals 129.4%, 129.6%, 130.4% (these two round to 130) and 130.6%
    log = AllocLog(arrived=np.array([12_940, 12_960, 13_040, 13_060]),
                   allocated=np.array([9_000, 9_100, 9_300, 9_500]), gpus=10)
    assert headline(log) == pytest.approx(92.0)
    # none at 130: those within one point
    assert headline(AllocLog(np.array([12_000, 12_950 - 100]), np.array([8_000, 8_500]), 10)) \
        == pytest.approx(85.0)
