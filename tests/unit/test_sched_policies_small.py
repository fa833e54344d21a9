"""Least/most-allocated on a small cluster score a pod without GPUs in Python floats: the
same node, the same GPUs and the same random draws as the numpy scores (issue #39)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from aiplat.sched import ClusterState, Node, Placement, Request, make_policy
from aiplat.sched.policies import _Scored

NODES = st.lists(st.tuples(st.integers(1, 64), st.integers(1, 512), st.integers(0, 8)),
                 min_size=1, max_size=12)
PODS = st.lists(st.tuples(st.integers(0, 16), st.integers(0, 64), st.integers(0, 2)),
                min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(nodes=NODES, pods=PODS, most=st.booleans(), seed=st.integers(0, 2**16),
       down=st.integers(0, 11))
def test_small_cluster_places_as_numpy(nodes: list[tuple[int, int, int]],
                                       pods: list[tuple[int, int, int]], most: bool,
                                       seed: int, down: int) -> None:
    name = "most-allocated" if most else "least-allocated"
    spec = [Node(f"n{i}", c * 1000, m * 1024, g, "V100" if g else "")
            for i, (c, m, g) in enumerate(nodes)]
    placed: list[list[Placement | None]] = []
    draws = []
    for fast in (True, False):
        state = ClusterState(spec)
        if down < len(spec):
            state.set_up(down, False)
        policy = make_policy(name)
        rng = np.random.default_rng(seed)
        got = []
        for c, m, g in pods:
            req = Request(c * 500, m * 512, g, 1000 if g else 0)
            where = (policy.place(state, req, rng) if fast
                     else _Scored.place(policy, state, req, rng))  # type: ignore[arg-type]
            got.append(where)
            if where is not None:
                state.allocate(req, where)
        placed.append(got)
        draws.append(rng.integers(1 << 30))
    assert placed[0] == placed[1]
    assert draws[0] == draws[1]
