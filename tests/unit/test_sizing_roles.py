"""Node roles and zones: counts, sizes, attachments and the MTU rules."""

from __future__ import annotations

import pytest

from aiplat.errors import InputError
from aiplat.sizing.roles import (
    ComputePool,
    Services,
    control_plane_size,
    model_store_capacity,
    monitoring_series,
    plan_roles,
    prometheus_estimate,
)

H100 = ComputePool(name="h100", nodes=32, gpus_per_node=8)
CPU = ComputePool(name="cpu", nodes=4, gpus_per_node=0)


def test_prometheus_disk_formula_by_hand() -> None:
    # 1M series every 15 s = 66,666.7 samples/s; 15 d = 1,296,000 s; x 2 B = 172.8 GB
    r = prometheus_estimate(series=1_000_000, scrape_interval_s=15, retention_days=15)
    assert r.samples_per_second == pytest.approx(66_666.667, rel=1e-6)
    assert r.disk_bytes == pytest.approx(172.8e9)
    # 3 kB per head series, doubled for queries
    assert r.memory_bytes == pytest.approx(6e9)


def test_monitoring_series_rule() -> None:
    assert monitoring_series(nodes=0, gpus=0, base_series=0) == 0
    assert monitoring_series(
        nodes=10, gpus=80, series_per_node=100, series_per_gpu=10, base_series=5
    ) == (5 + 1000 + 800)


def test_model_store_capacity() -> None:
    # a 70B model in bf16 (140 GB) and an 8B one (16 GB), two versions, 25% headroom
    r = model_store_capacity(model_sizes_bytes=[140 * 10**9, 16 * 10**9])
    assert r.models_bytes == 156 * 10**9
    assert r.capacity_bytes_per_replica == 390 * 10**9
    assert r.raw_capacity_bytes == 780 * 10**9


@pytest.mark.parametrize(
    ("workers", "expected"),
    [
        (10, (4, 16, True)),
        (25, (4, 16, True)),
        (26, (8, 32, True)),
        (250, (16, 96, True)),
        (300, (16, 96, False)),
    ],
)
def test_control_plane_sizing_table(workers: int, expected: tuple[int, int, bool]) -> None:
    assert control_plane_size(workers) == expected


def test_plan_roles_for_a_typical_gpu_platform() -> None:
    p = plan_roles(
        pools=[H100, CPU],
        tenants=3,
        services=Services(model_sizes_bytes=[140 * 10**9, 16 * 10**9], storage_gateway=True),
    )
    cp = p.role("control-plane")
    assert cp.nodes == 3
    assert (cp.cpu_cores, cp.memory_gib) == (8, 32)  # 36 workers: the 100-worker row
    assert p.role("system").nodes == 2
    assert p.role("registry").nodes == 2
    assert p.role("registry").disk_bytes == 390 * 10**9
    assert p.role("monitoring").nodes == 2
    assert p.role("storage-gateway").nodes == 2
    assert p.compute_nodes == 36
    assert p.non_compute_nodes == 3 + 2 + 2 + 2 + 2
    for r in p.roles:
        assert r.reason
    assert p.monitoring is not None
    assert p.monitoring.series == 50_000 + 36 * 2_000 + 256 * 30


def test_zones_and_attachments_infiniband() -> None:
    p = plan_roles(pools=[H100, CPU], tenants=1)
    assert [z.zone for z in p.zones] == ["management", "service", "storage", "high_performance"]
    assert p.zone("management").mtu_bytes == 1500
    assert p.zone("storage").mtu_bytes == 9000
    hpc = p.zone("high_performance")
    assert hpc.mtu_bytes == 4096
    assert hpc.rdma
    # only GPU compute joins the fabric; every node is managed
    assert hpc.roles == ["compute:h100"]
    assert set(p.zone("management").roles) == {r.role for r in p.roles if r.nodes > 0}
    assert "control-plane" not in p.zone("storage").roles
    for z in p.zones:
        assert z.guidance


def test_roce_zone_uses_jumbo_ethernet_with_4096_rdma_path() -> None:
    hpc = plan_roles(pools=[H100], tenants=1, fabric="roce").zone("high_performance")
    assert hpc.mtu_bytes == 9000
    assert hpc.rdma
    assert "4096" in hpc.guidance


def test_no_fabric_or_no_gpus_means_no_hpc_zone() -> None:
    assert "high_performance" not in [
        z.zone for z in plan_roles(pools=[H100], tenants=1, fabric="none").zones
    ]
    cpu_only = plan_roles(pools=[CPU], tenants=1)
    assert "high_performance" not in [z.zone for z in cpu_only.zones]
    assert cpu_only.notes


def test_managed_control_plane_and_optional_services() -> None:
    p = plan_roles(pools=[H100], tenants=1, managed_control_plane=True,
                   services=Services(model_store=False, monitoring=False))
    assert p.role("control-plane").nodes == 0
    assert "control-plane" not in p.zone("management").roles
    assert [r.role for r in p.roles] == ["control-plane", "system", "compute:h100"]
    assert p.non_compute_nodes == 2
    assert p.monitoring is None
    assert p.model_store is None


def test_large_fleet_or_many_tenants_get_a_third_system_node() -> None:
    big = ComputePool(name="h100", nodes=300, gpus_per_node=8)
    p = plan_roles(pools=[big], tenants=2)
    assert p.role("system").nodes == 3
    assert any("250" in n for n in p.notes)  # past the measured control-plane table
    assert plan_roles(pools=[H100], tenants=20).role("system").nodes == 3


def test_invalid_pools() -> None:
    with pytest.raises(InputError):
        plan_roles(pools=[], tenants=1)
    with pytest.raises(InputError, match="unique"):
        plan_roles(pools=[H100, H100], tenants=1)
