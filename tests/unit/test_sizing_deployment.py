"""Deployment model: different platforms get different, explained recommendations."""

from __future__ import annotations

import pytest

from aiplat.errors import InputError
from aiplat.sizing.deployment import (
    BASE_WEIGHTS,
    OPTIONS,
    DeploymentAssessment,
    assess_deployment,
)


def _hpc_training() -> DeploymentAssessment:
    # one research group, multi-node RDMA training only, no Kubernetes in the team
    return assess_deployment(
        tenants=1,
        multi_node_rdma_training=True,
        online_inference_share=0.0,
        strict_tenant_isolation=False,
        team_kubernetes_experience=False,
        nodes=32,
    )


def _mixed_platform() -> DeploymentAssessment:
    # a dozen teams of one company, training and half the load online inference
    return assess_deployment(
        tenants=12,
        multi_node_rdma_training=True,
        online_inference_share=0.5,
        strict_tenant_isolation=False,
        team_kubernetes_experience=True,
        nodes=64,
    )


def test_base_weights_are_explicit_and_sum_to_one() -> None:
    assert sum(BASE_WEIGHTS.values()) == pytest.approx(1.0)
    assert set(BASE_WEIGHTS) == {
        "performance",
        "isolation",
        "operating_effort",
        "multi_tenancy",
        "elasticity",
    }


def test_single_tenant_hpc_cluster_gets_bare_metal() -> None:
    a = _hpc_training()
    assert a.recommendation == "bare_metal"
    # VMs lose on multi-node RDMA: the performance reason must say so
    vm_perf = next(s for s in a.option("virtual_machines").scores if s.criterion == "performance")
    assert "RDMA" in vm_perf.reason
    assert vm_perf.score < a.option("bare_metal").scores[0].score
    # with one tenant, sharing does not count at all
    mt = next(c for c in a.criteria if c.criterion == "multi_tenancy")
    assert mt.effective_weight == 0.0


def test_many_tenant_mixed_platform_gets_kubernetes() -> None:
    a = _mixed_platform()
    assert a.recommendation == "kubernetes"
    assert any("Kueue" in r for r in a.reasons)


def test_the_two_platforms_get_different_answers() -> None:
    assert _hpc_training().recommendation != _mixed_platform().recommendation


def test_strict_isolation_rules_out_a_shared_cluster() -> None:
    a = assess_deployment(
        tenants=4,
        multi_node_rdma_training=False,
        online_inference_share=0.3,
        strict_tenant_isolation=True,
        team_kubernetes_experience=True,
        nodes=40,
    )
    k8s = a.option("kubernetes")
    assert k8s.disqualified
    assert k8s.disqualification
    assert a.recommendation == "virtual_machines"
    assert any("ruled out" in r for r in a.reasons)


def test_every_score_and_weight_comes_with_a_reason_and_is_printed() -> None:
    for a in (_hpc_training(), _mixed_platform()):
        table = a.render_table()
        for c in a.criteria:
            assert c.reason
            assert c.reason in table
        assert {o.option for o in a.options} == set(OPTIONS)
        for o in a.options:
            assert len(o.scores) == len(BASE_WEIGHTS)
            for s in o.scores:
                assert s.reason
                assert 0.0 <= s.score <= 5.0
                assert s.reason in table
            assert 0.0 <= o.weighted_score <= 5.0
        assert f"recommendation: {a.recommendation}" in table


def test_weighted_score_is_the_weighted_mean_of_the_table() -> None:
    a = _mixed_platform()
    weights = {c.criterion: c.effective_weight for c in a.criteria}
    for o in a.options:
        expected = sum(s.score * weights[s.criterion] for s in o.scores) / sum(weights.values())
        assert o.weighted_score == pytest.approx(expected)


def test_kubernetes_experience_raises_kubernetes_score() -> None:
    def assess(experience: bool) -> DeploymentAssessment:
        return assess_deployment(
            tenants=3,
            multi_node_rdma_training=False,
            online_inference_share=0.2,
            strict_tenant_isolation=False,
            team_kubernetes_experience=experience,
            nodes=20,
        )

    without, with_ = assess(False), assess(True)
    assert with_.option("kubernetes").weighted_score > without.option("kubernetes").weighted_score
    assert with_.option("bare_metal").weighted_score == without.option("bare_metal").weighted_score


@pytest.mark.parametrize(
    ("tenants", "nodes", "share"),
    [(0, 10, 0.1), (2, 0, 0.1), (2, 10, 1.5)],
)
def test_invalid_inputs(tenants: int, nodes: int, share: float) -> None:
    with pytest.raises(InputError):
        assess_deployment(
            tenants=tenants,
            multi_node_rdma_training=False,
            online_inference_share=share,
            strict_tenant_isolation=False,
            team_kubernetes_experience=True,
            nodes=nodes,
        )
