"""Properties of whole simulations (hypothesis): no node is ever over-allocated, GPU
milli-units are conserved, quota usage equals what admitted jobs hold and stays within what
the queue may use, and the same seed gives the same result."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sched_helpers import cq
from sched_helpers import nodes as make_nodes

from aiplat.sched import Job, PodSet, PoolStrategy, Request, TopologyRequest, queues
from aiplat.sched.engine import Simulator
from aiplat.sched.kueue import GPU, Preemption
from aiplat.sched.workload import LEVELS


class Checked(Simulator):
    """Checks the invariants after every instant of simulated time."""

    def _pool_upkeep(self) -> None:
        super()._pool_upkeep()
        st_ = self.state
        exists = st_.gpu_exists
        assert (st_.gfree[exists] >= 0).all() and (st_.gfree[exists] <= 1000).all()
        assert (st_.cpu_free >= 0).all() and (st_.mem_free >= 0).all()
        held = sum(self.runs[n].job.podsets[pi].request.gpu_total_milli
                   for n in self.runs for pi, _ in self.runs[n].placements)
        assert st_.allocated_gpu_milli() == held
        running = [r for r in self.runs.values() if r.state == "running"]
        assert held == sum(round(r.job.gpus * 1000) for r in running)
        for q, node in self.adm.tree.cqs.items():
            holding = {r.job.name for r in self.runs.values() if r.job.queue == q
                       and r.state in ("admitted", "running")}
            assert set(node.workloads) == holding
            expect = sum(round(self.runs[n].job.gpus * 1000) for n in holding)  # milli-GPUs
            assert node.usage.get(("a", GPU), 0) == expect
            assert self.adm.tree.available(node, ("a", GPU)) >= 0


jobs_st = st.lists(
    st.tuples(st.sampled_from(["x", "y", "z"]), st.integers(0, 4), st.integers(1, 3),
              st.sampled_from([250, 500, 1000]), st.integers(0, 500), st.integers(1, 400),
              st.integers(0, 2), st.sampled_from([None, *LEVELS])),
    min_size=1, max_size=25)


def _jobs(spec: list[tuple[str, int, int, int, int, int, int, str | None]]) -> list[Job]:
    out = []
    for i, (q, gpus, pods, milli, submit, dur, prio, level) in enumerate(spec):
        # GPU pods ask for GPUs only (the queues cover nothing else); a CPU pod asks for
        # what no queue covers and stays pending, as in Kueue
        req = (Request(0, 0, gpus, 1000) if gpus > 1 or milli == 1000
               else Request(0, 0, gpus, milli) if gpus else Request(1000, 1024))
        topo = TopologyRequest(level, "required" if i % 2 else "preferred") if level else None  # type: ignore[arg-type]
        out.append(Job(f"j{i}", q, float(submit), float(dur), (PodSet(pods, req, topo),), prio))
    return out


@settings(max_examples=25, deadline=None)
@given(spec=jobs_st, fair=st.booleans(), seed=st.integers(0, 5), strict=st.booleans(),
       policy=st.sampled_from(["bestfit", "fgd", "random", "packing"]))
def test_invariants_hold_at_every_instant(
    spec: list[tuple[str, int, int, int, int, int, int, str | None]], fair: bool, seed: int,
    strict: bool, policy: str,
) -> None:
    pre = Preemption(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any",
                     borrow_within_cohort="LowerPriority")
    strategy = "StrictFIFO" if strict else "BestEffortFIFO"
    cfg = queues((cq("x", 6, preemption=pre, queueing_strategy=strategy),
                       cq("y", 4, borrow=2, preemption=pre), cq("z", 2, lend=1)),
                      fair_sharing=fair)
    nodes = make_nodes(n=4, gpus=4, racks=[2, 2])
    strategies = {"a": PoolStrategy(mtbf_h=0.1, mttr_h=0.05)}
    sim = Checked(nodes, _jobs(spec), cfg, policy=policy, seed=seed, strategies=strategies,
                  horizon=3000)
    a = sim.run()
    b = Checked(nodes, _jobs(spec), cfg, policy=policy, seed=seed, strategies=strategies,
                horizon=3000).run()
    assert a == b
    assert np.isfinite(a.jain_index)
