"""Spare nodes against Poisson tables and high-precision sums; N+k for management services."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiplat.errors import InputError
from aiplat.sizing.reserve import (
    LLAMA3_INTERRUPTIONS_PER_NODE_YEAR,
    management_reserve,
    poisson_cdf,
    poisson_sf,
    quorum_members,
    smallest_k_for_cdf,
    spare_nodes,
)


def test_poisson_cdf_closed_forms() -> None:
    assert poisson_cdf(0, 1.0) == pytest.approx(math.exp(-1))
    assert poisson_cdf(2, 1.0) == pytest.approx(2.5 * math.exp(-1))
    assert poisson_cdf(0, 0.0) == 1.0
    assert poisson_cdf(-1, 3.0) == 0.0


@pytest.mark.parametrize(
    ("k", "expected"),
    # cumulative Poisson table, lambda = 2 (4 decimals)
    [(0, 0.1353), (1, 0.4060), (2, 0.6767), (3, 0.8571), (4, 0.9473), (5, 0.9834), (6, 0.9955)],
)
def test_poisson_cdf_matches_table_lambda_2(k: int, expected: float) -> None:
    assert poisson_cdf(k, 2.0) == pytest.approx(expected, abs=6e-5)


def test_poisson_cdf_table_lambda_10() -> None:
    assert poisson_cdf(10, 10.0) == pytest.approx(0.5830, abs=6e-5)


def test_small_tail_keeps_precision() -> None:
    with localcontext() as ctx:
        ctx.prec = 60
        e_inv = Decimal(-1).exp()
        head = sum(Decimal(1) / math.factorial(j) for j in range(11))
        exact_tail = Decimal(1) - e_inv * head  # P(X > 10), X ~ Poisson(1), ~1.0e-8
    assert poisson_sf(10, 1.0) == pytest.approx(float(exact_tail), rel=1e-9)


@given(
    k=st.integers(min_value=0, max_value=400),
    lam=st.floats(min_value=0.0, max_value=300.0, allow_nan=False),
)
def test_cdf_and_sf_sum_to_one(k: int, lam: float) -> None:
    assert poisson_cdf(k, lam) + poisson_sf(k, lam) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(("target", "expected"), [(0.98, 5), (0.99, 6), (0.995, 6), (0.999, 8)])
def test_smallest_k_lambda_2(target: float, expected: int) -> None:
    # from the lambda = 2 table: cdf(4)=0.9473, 5=0.9834, 6=0.9955, 7=0.9989, 8=0.9998
    assert smallest_k_for_cdf(2.0, target) == expected


def test_large_lambda_near_normal_quantile() -> None:
    # lambda = 10,000: the 0.99 quantile ~ lambda + 2.326 sqrt(lambda) = 10,232.6, plus a
    # skewness correction under one unit
    k = smallest_k_for_cdf(10_000.0, 0.99)
    assert 10_231 <= k <= 10_236
    assert poisson_cdf(k, 10_000.0) >= 0.99
    assert poisson_cdf(k - 1, 10_000.0) < 0.99


def test_spare_nodes_lambda_2_fleet() -> None:
    # 365 nodes x 0.2 failures/node-year x 10 days / 365 = lambda 2
    r = spare_nodes(
        nodes=365,
        failures_per_node_year=0.2,
        lead_time_days=10,
        target_availability=0.99,
        gpus_per_node=8,
    )
    assert r.expected_failures_in_lead_time == pytest.approx(2.0)
    assert r.expected_failures_per_year == pytest.approx(73.0)
    assert r.spare_nodes == 6
    assert r.probability_enough_spares == pytest.approx(0.9955, abs=6e-5)
    assert r.shortfall_probability == pytest.approx(1 - 0.9955, abs=6e-5)
    assert r.shortfall_probability <= 0.01
    assert r.reserve_gpus == 48
    assert r.total_gpus == 371 * 8
    assert r.reserve_share == pytest.approx(6 / 371)


def test_no_failures_no_spares() -> None:
    r = spare_nodes(
        nodes=10, failures_per_node_year=0.0, lead_time_days=30, target_availability=0.9
    )
    assert r.spare_nodes == 0
    assert r.shortfall_probability == 0.0


def test_llama3_reference_rate() -> None:
    # 419 interruptions / 54 days on 16,384 GPUs = 2,048 eight-GPU nodes
    assert pytest.approx(1.383, abs=0.001) == LLAMA3_INTERRUPTIONS_PER_NODE_YEAR


def test_longer_lead_time_never_needs_fewer_spares() -> None:
    counts = [
        spare_nodes(
            nodes=512, failures_per_node_year=1.38, lead_time_days=d, target_availability=0.999
        ).spare_nodes
        for d in (1, 3, 7, 14, 30, 60)
    ]
    assert counts == sorted(counts)
    assert counts[0] < counts[-1]


def test_invalid_target_is_an_actionable_error() -> None:
    with pytest.raises(InputError, match=r"\(fix: "):
        spare_nodes(nodes=10, failures_per_node_year=1, lead_time_days=7, target_availability=1.0)


def test_quorum_members() -> None:
    assert quorum_members(0) == 1
    assert quorum_members(1) == 3
    assert quorum_members(2) == 5


def test_management_n_plus_1_and_n_plus_2() -> None:
    n1 = management_reserve(rule="N+1")
    by = {s.service: s for s in n1.services}
    assert by["control-plane"].deployed_instances == 3
    assert by["registry"].deployed_instances == 2
    assert by["monitoring"].deployed_instances == 2
    assert n1.management_instances == 7
    n2 = management_reserve(rule="N+2")
    by2 = {s.service: s for s in n2.services}
    assert by2["control-plane"].deployed_instances == 5
    assert by2["registry"].deployed_instances == 3
    assert n2.management_instances == 11
    assert all(s.reason for s in n2.services)


def test_managed_control_plane_needs_no_nodes() -> None:
    r = management_reserve(managed_control_plane=True, monitoring=False)
    by = {s.service: s for s in r.services}
    assert by["control-plane"].deployed_instances == 0
    assert "monitoring" not in by
    assert r.management_instances == 2
