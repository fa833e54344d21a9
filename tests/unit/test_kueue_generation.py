"""What outdates a flavor scan: Kueue's ``lastAssignmentOutdated`` compares the scan's
ClusterQueue generation with the one the cycle's snapshot copied from the cache, where it
moves only when a workload leaves or is updated in a queue (``clusterQueue.deleteWorkload``)
or quotas change. Usage the cycle takes on its snapshot alone (a preemptor's hold, fair
sharing's shares of each head) leaves it as it was.

The live case (``tests/data/kueue_tas_live/fair-seed5.json``, run by
``test_kueue_tas_live.py``): with the shares moving it, every cycle outdated the scan of a
two-pod-set workload whose flavor scan resumes across cycles, so it started over each time,
stayed at the head of its BestEffortFIFO queue and the lower-priority workload behind it,
which Kueue admitted, was never tried.
"""

from __future__ import annotations

from aiplat.kueue.fairshare import tournament
from aiplat.kueue.quota import Tree
from aiplat.kueue.scenarios import generate
from aiplat.kueue.snapshot import parse


def _tree() -> Tree:
    sc = generate(5, fair_sharing=True)
    objs = [*sc.setup, *sc.phase_a, *sc.phase_b,
            {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
             "fairSharing": {}}]
    return Tree(parse(objs, "seed 5"))


def test_fair_sharing_shares_leave_the_generation() -> None:
    tree = _tree()
    cqs = list(tree.cqs.values())
    heads = {cq.name: cq.name for cq in cqs}
    gen = tree.generation
    got = tournament(tree, cqs[0].root(), heads, lambda name: {
        (f, "cpu"): 1000 for f, r in tree.cqs[name].quotas if r == "cpu"},
        lambda name: (name,))
    assert got in heads
    assert tree.generation == gen


def test_on_snapshot_restores_the_generation_but_not_the_usage() -> None:
    tree = _tree()
    cq = next(iter(tree.cqs.values()))
    fr = next(iter(cq.quotas))
    gen = tree.generation
    with tree.on_snapshot():
        tree.add_usage(cq, {fr: 1})
    assert tree.generation == gen
    assert cq.usage.get(fr) == 1
    tree.remove_usage(cq, {fr: 1})  # a real change (a workload leaving) moves it
    assert tree.generation > gen
