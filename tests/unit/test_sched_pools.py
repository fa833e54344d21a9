"""Pool strategies: fixed, autoscaling with start-up delay and scale-down, warm reserve,
node failures; provisioned GPU-hours (idle included) next to the waits."""

from __future__ import annotations

import pytest
from sched_helpers import cq, job, nodes, starts

from aiplat.sched import PoolStrategy, queues, simulate

CFG = queues((cq("a", 64, cohort=None),))


def test_fixed_pool_runs_at_once_and_pays_for_idle_nodes() -> None:
    r = simulate(nodes(n=4), [job("j", "a", 8, dur=3600)], CFG)
    assert starts(r) == {"j": 0}
    assert r.provisioned_gpu_hours == pytest.approx(32.0)  # 4 nodes x 8 GPUs x 1 h
    assert r.allocated_gpu_hours == pytest.approx(8.0)
    assert r.utilisation == pytest.approx(0.25)


def test_autoscaling_waits_for_node_start_up() -> None:
    strat = {"a": PoolStrategy(autoscaling=True, min_nodes=0, startup_s=600,
                               scale_down_idle_s=300)}
    r = simulate(nodes(n=4), [job("j", "a", 8, pods=2, dur=3600)], CFG, strategies=strat)
    assert starts(r) == {"j": 600}
    # two nodes started: 600 s starting + 3600 s running, then gone after 300 s idle
    assert r.provisioned_gpu_hours == pytest.approx(16 * (600 + 3600 + 300) / 3600)


def test_warm_reserve_removes_the_wait_at_a_price() -> None:
    strat = {"a": PoolStrategy(autoscaling=True, min_nodes=0, startup_s=600, warm_nodes=1,
                               scale_down_idle_s=300)}
    jobs = [job("j", "a", 8, dur=3600)]
    cold = simulate(nodes(n=4), jobs, CFG, strategies={"a": PoolStrategy(
        autoscaling=True, startup_s=600, scale_down_idle_s=300)})
    warm = simulate(nodes(n=4), jobs, CFG, strategies=strat)
    assert starts(cold) == {"j": 600}
    assert starts(warm) == {"j": 0}
    assert warm.provisioned_gpu_hours > warm.allocated_gpu_hours
    # the reserve is refilled while j runs: a second node is provisioned on top of j's
    assert warm.provisioned_gpu_hours > 8 * 1.0 + 1


def test_node_failures_evict_and_requeue_jobs() -> None:
    strat = {"a": PoolStrategy(mtbf_h=0.5, mttr_h=0.25)}
    jobs = [job(f"j{i}", "a", 8, submit=i * 600, dur=3600) for i in range(6)]
    r = simulate(nodes(n=2), jobs, CFG, strategies=strat, seed=3, horizon=20 * 3600)
    assert sum(rec.evictions for rec in r.records) > 0
    assert r.preemptions == 0  # failures are not preemptions
    assert r.finished == 6


def test_same_seed_same_result_with_failures() -> None:
    strat = {"a": PoolStrategy(mtbf_h=1, mttr_h=0.5)}
    jobs = [job(f"j{i}", "a", 4, submit=i * 300, dur=1800) for i in range(10)]
    a = simulate(nodes(n=2), jobs, CFG, strategies=strat, seed=7, horizon=10 * 3600)
    b = simulate(nodes(n=2), jobs, CFG, strategies=strat, seed=7, horizon=10 * 3600)
    assert a.to_dict(records=True) == b.to_dict(records=True)
