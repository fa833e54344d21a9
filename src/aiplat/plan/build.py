"""Assemble the plan: workloads -> pools -> facility, roles and deployment model.

Pure: takes the ``Resolved`` platform (``plan.resolve``), returns a ``Plan``. Each workload is
sized on the pool it names; pools then add up their workloads' demand (peak: all running at
once; average: GPU-hours per month over 730 h) and compare it with what they hold, their
tenants' quotas and their spares; the facility adds up the pools and the non-compute roles;
network and storage advice follow from the sized workloads.
Findings say what a reviewer must act on; nothing is silently re-planned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from aiplat import __version__
from aiplat.catalog import Catalog
from aiplat.plan.bom import PoolCount, bill_of_materials
from aiplat.plan.fabric import FabricPlan, plan_fabric
from aiplat.plan.inference import plan_inference
from aiplat.plan.models import FacilityPlan, Finding, Plan, PoolPlan, WorkloadPlan
from aiplat.plan.netpath import network_findings
from aiplat.plan.network import plan_network
from aiplat.plan.resolve import CPU_NODE_W, HOURS_PER_MONTH, Resolved, ResolvedPool, resolve
from aiplat.plan.storage import plan_storage
from aiplat.plan.training import plan_training
from aiplat.sizing import deployment, power, roles
from aiplat.spec.models import Platform, WorkloadKind


def build_plan(platform: Platform, catalog: Catalog) -> Plan:
    """Resolve the spec and size it: what ``aiplat plan`` computes."""
    return plan_resolved(resolve(platform, catalog))


def plan_resolved(resolved: Resolved) -> Plan:
    platform = resolved.spec
    workloads: list[WorkloadPlan] = []
    for w in resolved.workloads:
        if w.spec.kind.trains:
            workloads.append(plan_training(w.spec, w.arch, w.pool, platform))
        else:
            workloads.append(plan_inference(w.spec, w.arch, w.pool, platform, resolved.catalog))

    findings: list[Finding] = []
    pools = [_plan_pool(p, platform, workloads, findings) for p in resolved.pools]
    role_plan = _roles(resolved, pools, workloads)
    fabric = plan_fabric(resolved, non_compute_nodes=role_plan.non_compute_nodes,
                         other_racks=sum(p.racks for p in pools) + _management_racks(
                             platform, role_plan), findings=findings)
    facility = _facility(platform, pools, role_plan, fabric, findings)
    assessed = _deployment(platform, pools, workloads)
    findings += _deployment_findings(assessed)
    findings += network_findings(platform)
    return Plan(
        platform=platform.metadata.name,
        description=platform.metadata.description,
        aiplat_version=__version__,
        kubernetes_version=platform.kubernetes.version,
        workloads=workloads,
        pools=pools,
        facility=facility,
        roles=role_plan,
        deployment=assessed,
        network=plan_network(platform, workloads),
        fabric=fabric,
        storage=plan_storage(resolved),
        bom=bill_of_materials(
            platform, [PoolCount(name=p.name, gpu_model=p.gpu_model, nodes=p.nodes,
                                 spare_nodes=p.spare_nodes, gpus_per_node=r.gpus_per_node)
                       for p, r in zip(pools, resolved.pools, strict=True)],
            non_compute_nodes=role_plan.non_compute_nodes, racks=facility.racks, fabric=fabric,
            energy_per_month=facility.energy_cost_per_month),
        findings=findings,
    )


def _plan_pool(
    pool: ResolvedPool,
    platform: Platform,
    workloads: Sequence[WorkloadPlan],
    findings: list[Finding],
) -> PoolPlan:
    gpn, gpu = pool.gpus_per_node, pool.gpu
    mine = [w for w in workloads if w.pool == pool.name]
    peak = sum(w.gpus for w in mine)
    always_on = sum(w.gpus for w in mine if w.run_hours is None)
    average = sum(w.gpu_hours_per_month for w in mine) / HOURS_PER_MONTH
    quota = sum(t.quota[pool.name].gpus for t in platform.tenants if pool.name in t.quota)
    subject = f"pool {pool.name}"
    racks = pool.racks
    pool_w = power.pool_power(pool=pool.name, nodes=pool.nodes, node_power_w=pool.node_power_w)
    results: dict[str, Any] = {"power": pool_w, "racks": racks, "reserve": pool.spares}
    if pool.nodes_per_rack_too_high:
        findings.append(Finding(
            severity="error", subject=subject,
            message=f"topology.nodesPerRack {pool.spec.topology.nodes_per_rack} exceeds what a "
                    f"rack holds: {racks.nodes_per_rack} (limited by {racks.limited_by})",
            fix=f"set nodesPerRack ≤ {racks.nodes_per_rack} or raise rackPowerLimitKW"))
    if racks.air_cooling_exceeded:
        findings.append(Finding(
            severity="warning", subject=subject,
            message=f"racks draw {racks.rack_load_w / 1000:.1f} kW with air cooling",
            fix="plan rear-door heat exchangers or direct liquid cooling"))

    gpus = pool.gpus
    if gpn:
        findings += _demand_findings(subject, gpus, gpn, always_on=always_on, average=average,
                                     peak=peak, quota=quota)
        findings += _never_starts(mine, gpus, gpn, always_on)
        findings += _power_estimate_finding(pool)
    return PoolPlan(
        name=pool.name, zone=pool.spec.zone, gpu_model=gpu.name if gpu else None,
        gpus_per_node=gpn, nodes=pool.nodes, gpus=gpus,
        autoscaling=pool.spec.autoscaling is not None,
        peak_demand_gpus=peak, average_demand_gpus=average, quota_gpus=quota,
        spare_nodes=pool.spares.spare_nodes, node_power_kw=pool.node_power_w / 1000,
        pool_power_kw=pool_w.pool_power_w / 1000, nodes_per_rack=pool.nodes_per_rack,
        racks=pool.rack_count, racked_nodes=pool.racked_nodes,
        rack_scale=pool.rack_scale is not None,
        switch_trays_per_rack=pool.switch_trays_per_rack,
        results={k: r.model_dump(mode="json") for k, r in results.items()},
    )


LOW_UTILISATION = 0.25
"""Average monthly demand / GPUs below which a pool is flagged as mostly idle."""


def _power_estimate_finding(pool: ResolvedPool) -> list[Finding]:
    """A node power with neither node type nor measurement is the GPUs' TDP times a factor:
    say so, since racks, cooling and the energy bill rest on it."""
    if (pool.node_type is not None or pool.spec.node.power_kw or pool.gpu is None
            or pool.rack_scale is not None):
        return []
    return [Finding(
        severity="info", subject=f"pool {pool.name}",
        message=f"node power {pool.node_power_w / 1000:.2f} kW is an estimate from the GPUs "
                f"alone ({pool.gpus_per_node} × {pool.gpu.tdp_w:g} W TDP × an overhead factor, "
                "at least GPUs + a two-socket host), not a vendor or measured figure",
        fix="set node.nodeType to a catalog node type, or node.powerKW to the measured "
            "maximum system power")]


def _demand_findings(subject: str, gpus: int, gpn: int, *, always_on: int, average: float,
                     peak: int, quota: float) -> list[Finding]:
    out = []
    if gpus and average / gpus < LOW_UTILISATION:
        out.append(Finding(
            severity="warning", subject=subject,
            message=f"monthly work averages {average:.1f} of {gpus} GPUs "
                    f"({average / gpus:.0%} use)",
            fix="shrink or autoscale the pool, lend it to other tenants (cohort borrowing), "
                "or move workloads onto it"))
    if always_on > gpus:
        out.append(Finding(
            severity="error", subject=subject,
            message=f"always-on inference needs {always_on} GPUs; the pool has {gpus}",
            fix=f"grow the pool to ≥ {math.ceil(always_on / gpn)} nodes"))
    if average > gpus:
        out.append(Finding(
            severity="error", subject=subject,
            message=f"monthly work averages {average:.1f} GPUs; the pool has {gpus}",
            fix=f"grow the pool to ≥ {math.ceil(average / gpn)} nodes or run less often"))
    elif peak > gpus:
        out.append(Finding(
            severity="warning", subject=subject,
            message=f"all workloads at once need {peak} GPUs; the pool has {gpus}: "
                    "jobs will queue",
            fix=f"accept queueing (Kueue), or grow to {math.ceil(peak / gpn)} nodes"))
    if quota > gpus:
        out.append(Finding(
            severity="warning", subject=subject,
            message=f"tenants' nominal quotas add up to {quota:g} GPUs; the pool has "
                    f"{gpus}: admitted jobs can stay pending",
            fix="lower the quotas to the pool's size, or grow the pool"))
    return out


def _never_starts(mine: Sequence[WorkloadPlan], gpus: int, gpn: int,
                  always_on: int) -> list[Finding]:
    """A run the tree admits whole (one Kueue workload: a training gang, a batch Job) that
    needs more GPUs than the always-on serving ever leaves free on its pool waits for ever,
    however long it queues."""
    free = gpus - always_on
    if always_on == 0 or free < 0:
        return []  # nothing always on, or the always-on error already says the pool is short
    return [Finding(
        severity="warning", subject=f"workload {w.name}",
        message=f"needs {w.gpus} GPUs at once (one Kueue workload), but the always-on "
                f"workloads hold {always_on} of pool {w.pool}'s {gpus}: at most {free} are ever "
                "free, so it never starts while they run",
        fix=f"grow the pool to ≥ {math.ceil((w.gpus + always_on) / gpn)} nodes, give it "
            f"≤ {free} GPUs (a longer completion time), or let Kueue admit it partly "
            "(batch: kueue.x-k8s.io/job-min-parallelism)")
        for w in mine if w.run_hours is not None and w.gpus > free]


def _roles(
    resolved: Resolved, pools: Sequence[PoolPlan], workloads: Sequence[WorkloadPlan],
) -> roles.RolePlan:
    platform = resolved.spec
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
                                 hpc_nics=resolved.pool(p.name).hpc_nics)
               for p in pools],
        tenants=len(platform.tenants),
        managed_control_plane=platform.kubernetes.managed_control_plane,
        services=roles.Services(
            model_sizes_bytes=list(sizes.values()),
            storage_gateway=any(c.tier == "file" for c in platform.storage.classes)),
        fabric=fabric,
    )


def _management_racks(platform: Platform, role_plan: roles.RolePlan) -> int:
    """Racks of the non-compute nodes (2U each, the site's rack less its reserved units)."""
    return math.ceil(role_plan.non_compute_nodes * 2 / max(platform.site.rack_units - 4, 1))


def _facility(
    platform: Platform, pools: Sequence[PoolPlan], role_plan: roles.RolePlan,
    fabric: FabricPlan, findings: list[Finding],
) -> FacilityPlan:
    site = platform.site
    mgmt_w = role_plan.non_compute_nodes * CPU_NODE_W
    it_w = sum(p.pool_power_kw for p in pools) * 1000 + mgmt_w + fabric.power_w
    fac = power.facility_power(it_power_w=it_w, pue=site.pue)
    cool = power.cooling_load(it_power_w=it_w)
    fit = power.site_power_fit(it_power_w=it_w, site_budget_w=site.power_budget_kw * 1000)
    if not fit.fits:
        findings.append(Finding(
            severity="error", subject="site",
            message=f"IT load {it_w / 1000:,.1f} kW exceeds the {site.power_budget_kw:g} kW "
                    "power budget",
            fix="shrink pools, cap GPU power (nvidia-smi -pl), or raise powerBudgetKW"))
    mgmt_racks = _management_racks(platform, role_plan)
    return FacilityPlan(
        it_power_kw=it_w / 1000,
        facility_power_kw=fac.facility_power_w / 1000,
        power_budget_kw=site.power_budget_kw,
        fits_budget=fit.fits,
        cooling_kw=cool.heat_w / 1000,
        cooling_btu_per_hour=cool.heat_btu_per_h,
        racks=sum(p.racks for p in pools) + mgmt_racks + fabric.racks,
        energy_cost_per_month=fac.facility_power_w / 1000 * HOURS_PER_MONTH
        * site.electricity_price_per_kwh,
        currency=site.currency,
        results={
            "facility": fac.model_dump(mode="json"),
            "cooling": cool.model_dump(mode="json"),
            "site_fit": fit.model_dump(mode="json"),
            "management_power_w": {"value": mgmt_w, "nodes": role_plan.non_compute_nodes,
                                    "watts_per_node": CPU_NODE_W},
            "fabric": {"power_w": fabric.power_w, "racks": fabric.racks,
                       "switches": fabric.switches, "rack_units": fabric.rack_units},
        },
    )


def _deployment_findings(d: deployment.DeploymentAssessment) -> list[Finding]:
    """What the recommendation leaves to the admin. Virtual machines are a plan aiplat does
    not render (no hypervisor, image or domain definition): said plainly, not left to be
    found in an empty folder."""
    if d.recommendation != "virtual_machines":
        return []
    return [Finding(
        severity="warning", subject="deployment",
        message="virtual machines are recommended, and aiplat renders none: no hypervisor "
                "set-up, VM image or libvirt domain (vfio-pci passthrough of each node's GPUs "
                "and HCAs) is written; kube/ describes Kubernetes on the hosts, not the VMs",
        fix="define one VM per node type with your hypervisor's tooling, passing through "
            "every GPU and HCA of the node (IOMMU on, the PCIe ACS/ATS settings GPUDirect "
            "needs); the pools' sizes, racks and power in this plan hold for those hosts")]


def _deployment(
    platform: Platform, pools: Sequence[PoolPlan], workloads: Sequence[WorkloadPlan],
) -> deployment.DeploymentAssessment:
    gpus = sum(p.gpus for p in pools) or 1
    online = sum(w.gpus for w in workloads
                 if w.kind in (WorkloadKind.ONLINE_INFERENCE.value, WorkloadKind.RAG.value))
    multi_node = any(w.multi_node for w in workloads
                     if w.kind in (WorkloadKind.PRETRAIN.value, WorkloadKind.FINETUNE.value))
    return deployment.assess_deployment(
        tenants=len(platform.tenants),
        multi_node_rdma_training=multi_node,
        online_inference_share=min(1.0, online / gpus),
        strict_tenant_isolation=platform.operations.strict_tenant_isolation,
        team_kubernetes_experience=platform.operations.kubernetes_experience,
        nodes=max(1, sum(p.nodes for p in pools)),
    )
