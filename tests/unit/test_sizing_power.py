"""Facility sizing against vendor figures and hand-worked arithmetic."""

from __future__ import annotations

import pytest

from aiplat.errors import InputError
from aiplat.sizing.power import (
    AIR_COOLING_LIMIT_W,
    DEFAULT_NODE_OVERHEAD_FACTOR,
    CoolingKind,
    RackLayout,
    cooling_load,
    facility_power,
    node_power,
    pool_power,
    rack_layout,
    run_energy,
    site_power_fit,
)

DGX_H100_W = 10_200.0  # NVIDIA DGX H100 user guide: ~10.2 kW max
DGX_A100_W = 6_500.0  # NVIDIA DGX A100 user guide: 6.5 kW max


def test_vendor_figure_wins_and_reports_implied_overhead() -> None:
    r = node_power(gpus_per_node=8, gpu_tdp_w=700, system_power_w=DGX_H100_W)
    assert r.node_power_w == DGX_H100_W
    assert not r.estimated
    assert r.gpu_power_w == 5600
    assert r.overhead_factor == pytest.approx(10.2 / 5.6)


def test_default_overhead_is_within_what_dgx_systems_show() -> None:
    h100 = DGX_H100_W / (8 * 700)
    a100 = DGX_A100_W / (8 * 400)
    # the estimate should not be more generous than the leanest real system
    assert min(h100, a100) >= DEFAULT_NODE_OVERHEAD_FACTOR
    est = node_power(gpus_per_node=8, gpu_tdp_w=700)
    assert est.estimated
    assert est.node_power_w == pytest.approx(8 * 700 * DEFAULT_NODE_OVERHEAD_FACTOR)
    # within 2% of the published DGX H100 maximum
    assert est.node_power_w == pytest.approx(DGX_H100_W, rel=0.02)
    assert est.notes


def test_cpu_node_needs_a_system_figure() -> None:
    with pytest.raises(InputError, match="system_power_w"):
        node_power(gpus_per_node=0, gpu_tdp_w=0)
    assert node_power(gpus_per_node=0, system_power_w=800).node_power_w == 800


def test_pool_power() -> None:
    r = pool_power(pool="h100", nodes=32, node_power_w=DGX_H100_W)
    assert r.pool_power_w == 326_400
    assert r.inputs["pool"] == "h100"


def test_dgx_h100_racks_are_power_limited_at_40kw() -> None:
    # 8U DGX H100: 38 usable U hold 4; 40 kW holds floor(40/10.2) = 3
    r = rack_layout(nodes=32, node_power_w=DGX_H100_W, node_height_u=8, rack_power_limit_w=40_000)
    assert r.nodes_per_rack_by_space == 4
    assert r.nodes_per_rack_by_power == 3
    assert r.nodes_per_rack == 3
    assert r.limited_by == "power"
    assert r.racks == 11  # ceil(32 / 3)
    assert r.rack_load_w == pytest.approx(30_600)
    assert not r.air_cooling_exceeded


def test_air_cooling_warning_above_threshold_only_for_air() -> None:
    def layout(cooling: CoolingKind) -> RackLayout:
        return rack_layout(
            nodes=16,
            node_power_w=DGX_H100_W,
            node_height_u=8,
            rack_power_limit_w=50_000,
            cooling=cooling,
        )

    air = layout("air")
    assert air.nodes_per_rack == 4
    assert air.limited_by == "space"
    assert air.rack_load_w == pytest.approx(40_800)
    assert air.rack_load_w > AIR_COOLING_LIMIT_W
    assert air.air_cooling_exceeded
    assert any("WARNING" in n for n in air.notes)
    liquid = layout("liquid")
    assert not liquid.air_cooling_exceeded
    assert not any("WARNING" in n for n in liquid.notes)


def test_space_limited_cpu_rack_with_reserve() -> None:
    r = rack_layout(
        nodes=100,
        node_power_w=400,
        node_height_u=1,
        rack_power_limit_w=20_000,
        rack_units=42,
        reserved_units=4,
    )
    assert r.usable_rack_units == 38
    assert r.nodes_per_rack == 38
    assert r.limited_by == "space"
    assert r.racks == 3


def test_node_over_rack_limit_is_an_actionable_error() -> None:
    with pytest.raises(InputError, match=r"\(fix: "):
        rack_layout(nodes=1, node_power_w=14_300, node_height_u=10, rack_power_limit_w=12_000)


def test_cooling_conversions() -> None:
    # 1 ton of refrigeration = 12,000 BTU/h = 3.516853 kW (standard conversion)
    assert cooling_load(it_power_w=3_516.853).cooling_tons == pytest.approx(1.0, rel=1e-5)
    r = cooling_load(it_power_w=100_000)
    assert r.heat_w == 100_000
    assert r.heat_btu_per_h == pytest.approx(341_214.2)
    assert r.cooling_tons == pytest.approx(28.43, abs=0.01)


def test_facility_power_with_pue() -> None:
    r = facility_power(it_power_w=1_000_000, pue=1.3)
    assert r.facility_power_w == pytest.approx(1_300_000)
    assert r.non_it_power_w == pytest.approx(300_000)
    with pytest.raises(InputError, match="pue"):
        facility_power(it_power_w=1, pue=0.9)


def test_run_energy_and_cost_by_hand() -> None:
    # 1024 GPUs x 700 W x 0.6 = 430.08 kW; x 720 h = 309,657.6 kWh; x 1.25 = 387,072 kWh
    r = run_energy(
        gpus=1024, hours=720, gpu_tdp_w=700, avg_utilisation=0.6, pue=1.25, price_per_kwh=0.15
    )
    assert r.gpu_energy_kwh == pytest.approx(309_657.6)
    assert r.it_energy_kwh == pytest.approx(309_657.6)
    assert r.facility_energy_kwh == pytest.approx(387_072.0)
    assert r.cost == pytest.approx(58_060.8)
    assert any("host_overhead_factor" in n for n in r.notes)
    with_host = run_energy(
        gpus=1024,
        hours=720,
        gpu_tdp_w=700,
        avg_utilisation=0.6,
        pue=1.25,
        price_per_kwh=0.15,
        host_overhead_factor=1.8,
    )
    assert with_host.it_energy_kwh == pytest.approx(309_657.6 * 1.8)


def test_run_energy_rejects_utilisation_above_one() -> None:
    with pytest.raises(InputError, match="share of TDP"):
        run_energy(gpus=1, hours=1, gpu_tdp_w=700, avg_utilisation=60, pue=1.2, price_per_kwh=1)


def test_site_fit_with_and_without_pue() -> None:
    whole_feed = site_power_fit(it_power_w=800_000, site_budget_w=1_000_000, pue=1.4)
    assert whole_feed.compared_power_w == pytest.approx(1_120_000)
    assert not whole_feed.fits
    assert whole_feed.headroom_w == pytest.approx(-120_000)
    assert any("over budget" in n for n in whole_feed.notes)
    it_only = site_power_fit(it_power_w=800_000, site_budget_w=1_000_000)
    assert it_only.fits
    assert it_only.headroom_fraction == pytest.approx(0.2)


def test_results_are_frozen() -> None:
    r = facility_power(it_power_w=1, pue=1.5)
    with pytest.raises(Exception):  # noqa: B017 - pydantic's ValidationError on frozen models
        r.facility_power_w = 2.0  # type: ignore[misc]


def test_a_node_of_small_gpus_is_never_below_its_host() -> None:
    """Issue 21: 4 x L4 (72 W each, NVIDIA L4 datasheet) came out at 0.52 kW, GPUs x TDP x 1.8,
    less than a two-socket server draws alone (the catalog's cpu-mgmt-2s: 0.8 kW)."""
    from aiplat.sizing.power import HOST_FLOOR_W, node_power

    r = node_power(gpus_per_node=4, gpu_tdp_w=72)
    assert r.node_power_w == 4 * 72 + HOST_FLOOR_W
    assert r.estimated and any("estimated from the GPUs alone" in n for n in r.notes)
    assert node_power(gpus_per_node=8, gpu_tdp_w=700).node_power_w == pytest.approx(8 * 700 * 1.8)
