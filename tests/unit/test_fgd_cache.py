"""The FGD policy's per-state score cache (aiplat.sched.fgd_cache) decides as scoring every
node for every pod does, to the node and the GPU; and the one-state fragmentation measure
is the array measure to the last bit (the cache relies on both)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiplat.sched import fgd_cache
from aiplat.sched.cluster import ClusterState, Node, Request
from aiplat.sched.fgd_policies import FGD, PublishedPolicy, Ties
from aiplat.sched.fgd_protocol import typical_shapes
from aiplat.sched.frag import FragMeter, TypicalWorkload

MODELS = ("T4", "V100", "A10")


def _meter(seed: int) -> tuple[FragMeter, ClusterState]:
    """A workload of 14 GPU shapes with random weights: enough groups that the order of
    their sum shows in the last bit."""
    rng = np.random.default_rng(seed)
    shapes: dict[tuple[int, int, int, frozenset[str]], float] = {
        (int(c), 1, int(m), frozenset()): float(p) for c, m, p in zip(
        rng.integers(0, 32, 10) * 1000, rng.integers(1, 1000, 10), rng.random(10), strict=True)}
    shapes.update({(4000, n, 1000, frozenset({"T4"})): 0.3 for n in (1, 2, 4, 8)})
    total = sum(shapes.values())
    workload = TypicalWorkload.from_shapes({k: p / total for k, p in shapes.items()})
    nodes = [Node(f"n{i}", 64_000, 1 << 20, 8, MODELS[i % 3]) for i in range(3)]
    return FragMeter(workload, ClusterState(nodes)), ClusterState(nodes)


@pytest.mark.parametrize("seed", range(5))
def test_one_state_measure_is_the_array_measure_to_the_bit(seed: int) -> None:
    meter, _ = _meter(seed)
    rng = np.random.default_rng(seed + 100)
    rows = rng.choice([-1, 0, 130, 470, 500, 810, 1000, 1000], size=(400, 8))
    cpu = rng.integers(0, 40_000, 400)
    model = rng.integers(0, 3, 400)
    want = meter.of(rows, cpu, model)
    got = [meter.one(tuple(r), meter.bucket(c), m) for r, c, m in zip(
        rows.tolist(), cpu.tolist(), model.tolist(), strict=True)]
    assert got == want.tolist()
    # not vacuous: adding the same terms in another order changes some last bits
    p = meter._p_ok.transpose(1, 2, 0)
    moved = 0
    for r, c, m, w in zip(rows.tolist(), cpu.tolist(), model.tolist(), want.tolist(),
                          strict=True):
        terms = p[m, np.searchsorted(meter.w.cpu_values, c, side="right")].tolist()
        usable = meter._usable_of(tuple(r))[1]
        backwards = 0.0
        for t, u in reversed(list(zip(terms, usable, strict=True))):
            backwards += t * u
        moved += float(sum(max(v, 0) for v in r)) - backwards != w
    assert moved > 0


pods = st.builds(
    lambda cpu, mem, n, milli, whole, models: Request(
        cpu, mem, n, 1000 if (whole or n > 1) else milli, frozenset(models) if n else frozenset()),
    st.sampled_from([0, 1000, 2000, 4000, 8000, 16_000]),
    st.sampled_from([0, 1024, 65_536, 131_072]),
    st.sampled_from([0, 1, 1, 1, 2, 4, 8]), st.sampled_from([100, 250, 500, 500, 700, 1000]),
    st.booleans(), st.sets(st.sampled_from(MODELS), max_size=2),
)


@pytest.mark.parametrize("arrays", [False, True], ids=["one-by-one", "arrays"])
@settings(max_examples=40, deadline=None)
@given(reqs=st.lists(pods, min_size=1, max_size=80), gpus=st.lists(
    st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=12), seed=st.integers(0, 99))
def test_cached_choice_is_the_per_node_scoring(arrays: bool, reqs: list[Request],
                                               gpus: list[int], seed: int) -> None:
    # memory runs short on some nodes first (the cache keeps it out of its keys)
    nodes = [Node(f"n{i}", 32_000 * (1 + i % 2), 131_072 * (1 + i % 3), g, MODELS[i % 3])
             for i, g in enumerate(gpus)]
    rank = np.random.default_rng(seed).permutation(len(nodes)).astype(np.int64)
    typical = TypicalWorkload.from_shapes(typical_shapes(reqs))
    cached = FGD(Ties("node-order", rank, np.random.default_rng(0)), typical)
    plain = FGD(Ties("node-order", rank, np.random.default_rng(0)), typical)
    a, b = ClusterState(nodes), ClusterState(nodes)
    saved = fgd_cache.SMALL, fgd_cache.FEW
    if arrays:  # every change re-keyed with arrays, every unknown state scored with them
        fgd_cache.SMALL = fgd_cache.FEW = 0
    try:
        for req in reqs * 2:
            got = cached.place(a, req)
            want = PublishedPolicy.place(plain, b, req)
            assert got == want
            if got is not None:
                a.allocate(req, got)
                b.allocate(req, got)
    finally:
        fgd_cache.SMALL, fgd_cache.FEW = saved
    assert cached._index is not None  # the cache, not the plain path, decided above
