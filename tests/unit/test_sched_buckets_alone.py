"""The simulator's queue manager skips the nomination of a lone head it proves inadmissible
(``Buckets.inadmissible_alone``, issue #39): every decision stays as the nomination would
have made it. The run compares the same oversubscribed Kueue-shaped simulation with and
without the shortcut, job by job; the digests of ``bench/sim_digest.py`` cover more shapes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aiplat.sched import ClusterQueue, FlavorQuotas, Job, Node, PodSet, Quota, queues
from aiplat.sched import Request as Req
from aiplat.sched.buckets import Buckets
from aiplat.sched.engine import Simulator


def _run(monkeypatch: pytest.MonkeyPatch, shortcut: bool) -> tuple[list[Any], int]:
    """(every job's admission, start, finish and flavor; how often the shortcut fired)."""
    fired = 0
    orig = Buckets.inadmissible_alone

    def counted(self: Buckets, p: Any) -> bool:
        nonlocal fired
        got = orig(self, p) if shortcut else False
        fired += got
        return got

    monkeypatch.setattr(Buckets, "inadmissible_alone", counted)
    cqs = tuple(ClusterQueue(f"cq-{c}-{i}", (FlavorQuotas("cpu", {"cpu": Quota(20, 100)}),),
                             f"cohort-{c}") for c in range(2) for i in range(3))
    rng = np.random.default_rng(5)
    jobs = [Job(f"w{k}", cqs[int(rng.integers(len(cqs)))].name, float(rng.uniform(0, 600)),
                float(rng.uniform(30, 300)), (PodSet(1, Req(int(s) * 1000, 0)),),
                int(rng.integers(0, 3)))
            for k, s in enumerate(rng.choice([1, 5, 20], size=800, p=[0.6, 0.3, 0.1]))]
    sim = Simulator([Node(f"n{i}", 64_000, 512 * 1024, pool="cpu") for i in range(2)], jobs,
                    queues(cqs), policy="least-allocated", samples=5)
    sim.run()
    rows = [(r.job.name, r.state, r.admitted_at, r.started_at, r.finished_at, r.flavor)
            for r in sim.runs.values()]
    return rows, fired


def test_skipping_a_lone_inadmissible_head_changes_no_decision(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with_it, fired = _run(monkeypatch, True)
    without, none = _run(monkeypatch, False)
    assert fired > 100 and none == 0  # the shortcut is taken, often
    assert with_it == without
    assert sum(1 for r in with_it if r[2] is not None) > 400  # most jobs were admitted


def test_not_claimed_where_a_flavor_scan_could_differ() -> None:
    """Two flavors in a group: the scan's progress, which cycle counts and the tree's
    generation decide, could change an assignment, so the shortcut is off."""
    cq = ClusterQueue("two", (FlavorQuotas("a", {"cpu": Quota(1)}),
                              FlavorQuotas("b", {"cpu": Quota(1)})))
    config = queues((cq,))
    from aiplat.kueue.quota import Tree

    snap = config.snapshot
    assert not Buckets(snap, Tree(snap))._single
