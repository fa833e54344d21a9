"""The plan: every figure ``aiplat plan`` computes, machine-readable (``plan.json``).

The plan keeps the sizing results whole (figures, formula, inputs) under ``results`` so an
administrator can trace any number back to its inputs; the flat ``gpus``, ``*_bytes`` and
``*_kw`` fields are what reports, charts and later capabilities (Kubernetes quotas, the
simulator) read. Findings are what a reviewer must act on; their severity decides the exit
code of ``aiplat plan --strict``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from aiplat.plan.bom import BillOfMaterials
from aiplat.plan.fabric import FabricPlan
from aiplat.plan.findings import Finding, PlanModel
from aiplat.plan.network import NetworkAdvice
from aiplat.plan.storage import StorageGuidance
from aiplat.sizing.deployment import DeploymentAssessment
from aiplat.sizing.roles import RolePlan

PLAN_SCHEMA = "aiplat.plan/v1alpha1"
__all__ = ["PLAN_SCHEMA", "FacilityPlan", "Finding", "Plan", "PoolPlan", "ReplicaGroup",
           "WorkloadPlan"]


class ReplicaGroup(PlanModel):
    """Identical replicas of an inference workload, each one model instance: what the tree
    runs as one pod per replica (a replica wider than a node spans several). Sizing decides
    them; the renderers read them and work out nothing again."""

    role: str = Field(description="serve, prefill, decode (disaggregated), embed (RAG query "
                      "embedding) or batch")
    model: str = Field(description="the model each replica serves (catalog name)")
    weight_bytes: float = Field(description="that model's weights, all GPUs of a replica")
    replicas: int
    gpus: int = Field(description="GPUs of one replica: tensor x pipeline parallel")
    tensor_parallel: int
    pipeline_parallel: int = 1


class WorkloadPlan(PlanModel):
    name: str
    kind: str
    tenant: str
    pool: str
    gpu_model: str
    model: str
    params: float
    precision: str
    gpus: int = Field(description="GPUs the workload holds while it runs")
    nodes: float = Field(description="gpus / GPUs per node of its pool")
    run_hours: float | None = Field(description="wall time of one run; None = always on")
    gpu_hours_per_month: float
    memory_per_gpu_bytes: dict[str, float] = Field(description="breakdown of one GPU's memory")
    gpu_memory_bytes: float
    goodput: float | None = Field(default=None, description="training: useful compute / "
                                  "wall time with checkpoints and interruptions")
    cost_per_run: float | None = Field(default=None, description="GPU-hours x pricePerGpuHour "
                                       "(site currency); serving: per month")
    cost_per_million_tokens: float | None = Field(
        default=None, description="training: per million training tokens; serving: per "
        "million output tokens at the sized load")
    key_figures: dict[str, str] = Field(description="human-readable headline figures")
    results: dict[str, dict[str, Any]] = Field(description="sizing results: figures + inputs")
    findings: list[Finding] = Field(default_factory=list)
    replica_groups: list[ReplicaGroup] = Field(
        default_factory=list, description="inference: the replicas sized, their GPUs adding "
        "up to gpus; training: none (one gang of gpus)")

    @property
    def multi_node(self) -> bool:
        """Holds GPUs on more than one node: its collectives cross the node network. The one
        rule the report, the network plan and the deployment assessment use."""
        return self.nodes > 1


class PoolPlan(PlanModel):
    name: str
    zone: str | None
    gpu_model: str | None
    gpus_per_node: int
    nodes: int
    gpus: int
    autoscaling: bool
    peak_demand_gpus: int = Field(description="sum of the GPUs of workloads on this pool")
    average_demand_gpus: float = Field(description="GPU-hours per month / 730 h")
    quota_gpus: float = Field(description="sum of tenants' nominal quotas on this pool")
    spare_nodes: int
    node_power_kw: float
    pool_power_kw: float
    nodes_per_rack: int
    racks: int
    racked_nodes: int = Field(description="nodes racked and cabled: the pool's and its spares, "
                              "except a rack-scale pool's spare trays (on the shelf)")
    rack_scale: bool = Field(description="bought as whole NVLink-domain racks (GB200 NVL72)")
    switch_trays_per_rack: int = Field(description="NVLink switch trays in each rack of a "
                                       "rack-scale pool (0 otherwise)")
    results: dict[str, dict[str, Any]]


class FacilityPlan(PlanModel):
    it_power_kw: float
    facility_power_kw: float
    power_budget_kw: float
    fits_budget: bool
    cooling_kw: float
    cooling_btu_per_hour: float
    racks: int
    energy_cost_per_month: float
    currency: str
    results: dict[str, dict[str, Any]]


class Plan(PlanModel):
    schema_: str = Field(default=PLAN_SCHEMA, alias="schema")
    platform: str
    description: str
    aiplat_version: str
    kubernetes_version: str
    workloads: list[WorkloadPlan]
    pools: list[PoolPlan]
    facility: FacilityPlan
    roles: RolePlan
    deployment: DeploymentAssessment
    network: NetworkAdvice
    fabric: FabricPlan = Field(description="the compute, storage, in-band and out-of-band "
                               "fabrics sized: switches, ports, cables, racks and power")
    storage: StorageGuidance
    bom: BillOfMaterials = Field(description="what to buy and what it costs to buy and run")
    findings: list[Finding]

    @property
    def all_findings(self) -> list[Finding]:
        """Every finding of the plan, from every part: the report's findings list, the CLI's
        lines and ``-o json`` all read this one list. The network advice's warnings and
        errors count (its info lines are design guidance and stay in the network section)."""
        return (self.findings + [f for w in self.workloads for f in w.findings]
                + self.network.findings() + list(self.storage.findings))
