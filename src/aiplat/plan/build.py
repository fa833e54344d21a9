"""Assemble the plan: workloads -> pools -> facility, roles and deployment model.

Pure: takes a validated ``Platform`` and the catalog, returns a ``Plan``. Each workload is
sized on the pool it names; pools then add up their workloads' demand (peak: all running at
once; average: GPU-hours per month over 730 h) and compare it with what they hold, their
tenants' quotas and their spares; the facility adds up the pools and the non-compute roles.
Findings say what a reviewer must act on; nothing is silently re-planned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from aiplat import __version__
from aiplat.catalog import Catalog
from aiplat.plan.context import HOURS_PER_MONTH, pool_hardware, resolve_arch
from aiplat.plan.inference import plan_inference
from aiplat.plan.models import FacilityPlan, Finding, Plan, PoolPlan, WorkloadPlan
from aiplat.plan.training import node_watts, plan_training
from aiplat.sizing import deployment, power, reserve, roles
from aiplat.spec.models import Cooling, Platform, PoolSpec, WorkloadKind

CPU_NODE_W = 800.0
"""A two-socket CPU server under load, when the spec gives no power (catalog cpu-mgmt-2s)."""
NODE_HEIGHT_U = {0: 2, 1: 2, 2: 2, 4: 4, 8: 8}
"""Rack units by GPUs per node when no node type says (typical 2U/4U/8U chassis)."""


def build_plan(platform: Platform, catalog: Catalog) -> Plan:
    workloads: list[WorkloadPlan] = []
    for w in platform.workloads:
        arch = resolve_arch(w.model, catalog)
        hw = pool_hardware(platform, catalog, w)
        if w.kind.trains:
            workloads.append(plan_training(w, arch, hw, platform))
        else:
            workloads.append(plan_inference(w, arch, hw, platform, catalog))

    findings: list[Finding] = []
    pools = [_plan_pool(p, platform, catalog, workloads, findings) for p in platform.pools]
    role_plan = _roles(platform, catalog, pools, workloads)
    facility = _facility(platform, pools, role_plan, findings)
    dep = _deployment(platform, pools, workloads)
    return Plan(
        platform=platform.metadata.name,
        description=platform.metadata.description,
        aiplat_version=__version__,
        kubernetes_version=platform.kubernetes.version,
        workloads=workloads,
        pools=pools,
        facility=facility,
        roles=role_plan.model_dump(mode="json"),
        deployment=dep.model_dump(mode="json"),
        findings=findings,
    )


def _plan_pool(
    pool: PoolSpec,
    platform: Platform,
    catalog: Catalog,
    workloads: Sequence[WorkloadPlan],
    findings: list[Finding],
) -> PoolPlan:
    gpn = pool.node.gpu.count if pool.node.gpu else 0
    gpu = catalog.gpu(pool.node.gpu.model) if pool.node.gpu else None
    node_type = catalog.node_type(pool.node.node_type) if pool.node.node_type else None
    mine = [w for w in workloads if w.pool == pool.name]
    peak = sum(w.gpus for w in mine)
    always_on = sum(w.gpus for w in mine if w.run_hours is None)
    average = sum(w.gpu_hours_per_month for w in mine) / HOURS_PER_MONTH
    quota = sum(t.quota[pool.name].gpus for t in platform.tenants if pool.name in t.quota)
    subject = f"pool {pool.name}"
    results: dict[str, Any] = {}

    if gpu is not None:
        node_w = node_watts(pool, gpu.tdp_w, node_type)
    else:
        node_w = (pool.node.power_kw * 1000 if pool.node.power_kw else
                  node_type.system_power_kw * 1000 if node_type else CPU_NODE_W)
    pool_w = power.pool_power(pool=pool.name, nodes=pool.nodes, node_power_w=node_w)
    height = node_type.rack_units if node_type else NODE_HEIGHT_U.get(gpn, 4)
    spares = reserve.spare_nodes(
        nodes=pool.nodes, failures_per_node_year=platform.reserve.node_failures_per_year,
        lead_time_days=platform.reserve.replacement_lead_time_days,
        target_availability=platform.reserve.target_availability, gpus_per_node=gpn,
    )
    racks = power.rack_layout(
        nodes=pool.nodes + spares.spare_nodes, node_power_w=node_w, node_height_u=height,
        rack_power_limit_w=platform.site.rack_power_limit_kw * 1000,
        rack_units=platform.site.rack_units,
        cooling="air" if platform.site.cooling is Cooling.AIR else "liquid",
    )
    results |= {"power": pool_w, "racks": racks, "reserve": spares}
    nodes_per_rack = racks.nodes_per_rack
    wanted = pool.topology.nodes_per_rack
    if wanted is not None:
        if wanted > racks.nodes_per_rack:
            findings.append(Finding(
                severity="error", subject=subject,
                message=f"topology.nodesPerRack {wanted} exceeds what a rack holds: "
                        f"{racks.nodes_per_rack} (limited by {racks.limited_by})",
                fix=f"set nodesPerRack ≤ {racks.nodes_per_rack} or raise rackPowerLimitKW"))
        else:
            nodes_per_rack = wanted
    rack_count = math.ceil((pool.nodes + spares.spare_nodes) / nodes_per_rack) if pool.nodes else 0
    if racks.air_cooling_exceeded:
        findings.append(Finding(
            severity="warning", subject=subject,
            message=f"racks draw {racks.rack_load_w / 1000:.1f} kW with air cooling",
            fix="plan rear-door heat exchangers or direct liquid cooling"))

    gpus = pool.gpus
    if gpn:
        if always_on > gpus:
            findings.append(Finding(
                severity="error", subject=subject,
                message=f"always-on inference needs {always_on} GPUs; the pool has {gpus}",
                fix=f"grow the pool to ≥ {math.ceil(always_on / gpn)} nodes"))
        if average > gpus:
            findings.append(Finding(
                severity="error", subject=subject,
                message=f"monthly work averages {average:.1f} GPUs; the pool has {gpus}",
                fix=f"grow the pool to ≥ {math.ceil(average / gpn)} nodes or run less often"))
        elif peak > gpus:
            findings.append(Finding(
                severity="warning", subject=subject,
                message=f"all workloads at once need {peak} GPUs; the pool has {gpus}: "
                        "jobs will queue",
                fix=f"accept queueing (Kueue), or grow to {math.ceil(peak / gpn)} nodes"))
        if quota > gpus:
            findings.append(Finding(
                severity="warning", subject=subject,
                message=f"tenants' nominal quotas add up to {quota:g} GPUs; the pool has "
                        f"{gpus}: admitted jobs can stay pending",
                fix="lower the quotas to the pool's size, or grow the pool"))
    return PoolPlan(
        name=pool.name, zone=pool.zone, gpu_model=gpu.name if gpu else None, gpus_per_node=gpn,
        nodes=pool.nodes, gpus=gpus, autoscaling=pool.autoscaling is not None,
        peak_demand_gpus=peak, average_demand_gpus=average, quota_gpus=quota,
        spare_nodes=spares.spare_nodes, node_power_kw=node_w / 1000,
        pool_power_kw=pool_w.pool_power_w / 1000, nodes_per_rack=nodes_per_rack,
        racks=rack_count, results={k: r.model_dump(mode="json") for k, r in results.items()},
    )


def _roles(
    platform: Platform, catalog: Catalog, pools: Sequence[PoolPlan],
    workloads: Sequence[WorkloadPlan],
) -> roles.RolePlan:
    segments = {s.purpose.value: s for s in platform.network.segments}
    nic_types = {n.type.value for p in platform.pools for n in p.node.nics if n.segment == "hpc"}
    hpc = segments.get("hpc")
    fabric: roles.Fabric
    if (hpc and hpc.rdma == "infiniband") or "infiniband" in nic_types:
        fabric = "infiniband"
    elif (hpc and hpc.rdma == "roce") or "roce" in nic_types:
        fabric = "roce"
    else:
        fabric = "none"
    sizes = {w.model: int(w.params * 2) for w in workloads}  # bf16 weights per model
    return roles.plan_roles(
        pools=[roles.ComputePool(name=p.name, nodes=p.nodes, gpus_per_node=p.gpus_per_node,
                                 hpc_nics=_has_hpc_nics(platform.pool(p.name)))
               for p in pools],
        tenants=len(platform.tenants),
        managed_control_plane=platform.kubernetes.managed_control_plane,
        model_sizes_bytes=list(sizes.values()),
        storage_gateway=any(c.tier == "file" for c in platform.storage.classes),
        fabric=fabric,
    )


def _has_hpc_nics(pool: PoolSpec | None) -> bool:
    return pool is not None and any(n.segment.value == "hpc" for n in pool.node.nics)


def _facility(
    platform: Platform, pools: Sequence[PoolPlan], role_plan: roles.RolePlan,
    findings: list[Finding],
) -> FacilityPlan:
    site = platform.site
    mgmt_w = role_plan.non_compute_nodes * CPU_NODE_W
    it_w = sum(p.pool_power_kw for p in pools) * 1000 + mgmt_w
    fac = power.facility_power(it_power_w=it_w, pue=site.pue)
    cool = power.cooling_load(it_power_w=it_w)
    fit = power.site_power_fit(it_power_w=it_w, site_budget_w=site.power_budget_kw * 1000)
    if not fit.fits:
        findings.append(Finding(
            severity="error", subject="site",
            message=f"IT load {it_w / 1000:,.1f} kW exceeds the {site.power_budget_kw:g} kW "
                    "power budget",
            fix="shrink pools, cap GPU power (nvidia-smi -pl), or raise powerBudgetKW"))
    mgmt_racks = math.ceil(role_plan.non_compute_nodes * 2 / max(site.rack_units - 4, 1))
    return FacilityPlan(
        it_power_kw=it_w / 1000,
        facility_power_kw=fac.facility_power_w / 1000,
        power_budget_kw=site.power_budget_kw,
        fits_budget=fit.fits,
        cooling_kw=cool.heat_w / 1000,
        cooling_btu_per_hour=cool.heat_btu_per_h,
        racks=sum(p.racks for p in pools) + mgmt_racks,
        energy_cost_per_month=fac.facility_power_w / 1000 * HOURS_PER_MONTH
        * site.electricity_price_per_kwh,
        currency=site.currency,
        results={
            "facility": fac.model_dump(mode="json"),
            "cooling": cool.model_dump(mode="json"),
            "site_fit": fit.model_dump(mode="json"),
            "management_power_w": {"value": mgmt_w, "nodes": role_plan.non_compute_nodes,
                                    "watts_per_node": CPU_NODE_W},
        },
    )


def _deployment(
    platform: Platform, pools: Sequence[PoolPlan], workloads: Sequence[WorkloadPlan],
) -> deployment.DeploymentAssessment:
    gpus = sum(p.gpus for p in pools) or 1
    online = sum(w.gpus for w in workloads
                 if w.kind in (WorkloadKind.ONLINE_INFERENCE.value, WorkloadKind.RAG.value))
    pool_by_name = {p.name: p for p in pools}
    multi_node = any(
        w.kind in ("pretrain", "finetune") and w.gpus > pool_by_name[w.pool].gpus_per_node
        for w in workloads
    )
    return deployment.assess_deployment(
        tenants=len(platform.tenants),
        multi_node_rdma_training=multi_node,
        online_inference_share=min(1.0, online / gpus),
        strict_tenant_isolation=platform.operations.strict_tenant_isolation,
        team_kubernetes_experience=platform.operations.kubernetes_experience,
        nodes=max(1, sum(p.nodes for p in pools)),
    )
