"""How a serving workload scales: its floor and ceiling of replicas, the load one replica
carries within the SLO, and the start-up chain a new replica waits through (pure).

One place for the renderer's autoscaler (``kube/render_apps.py``: the HPA's bounds and
targets) and the simulator's (``sched/sim_serving.py``: when a replica is ready).

- **Floor**: the planned replicas (sizing's ``replicas_for_slo`` at the spec's
  ``queriesPerSecond``): the tree never scales below what the plan guarantees.
- **Ceiling**: the replicas the pool's GPUs hold (its ``autoscaling.max`` nodes when it
  autoscales, else its planned nodes), less the GPUs of the other serving groups' floors on
  it (a RAG encoder's, prefill and decode replicas included); never below the floor.
  Training shares the pool through Kueue's quota and preemption
  (serving's priority is the highest), so the ceiling is what the hardware allows, not a
  promise.
- **Load per replica**: the spec's qps over the planned replicas. Sizing's rule (M/D/1
  TTFT on ρ = λ·t_prefill/r, Little's law r·b ≥ λ·(TTFT + out/rate)) depends on λ/r only, so
  r replicas meet the SLO up to r times that load (a little more, as replicas are rounded
  up: the figure is conservative).
- **Queue allowance**: a prompt that waits behind n others starts after n·t_prefill, so the
  TTFT target allows n = ⌊(target − t_prefill)/t_prefill⌋ waiting requests per replica —
  the target of the autoscaler's ``vllm:num_requests_waiting`` metric.
- **Start-up chain**, each from the plan or a stated assumption:
  node boot (the pool's ``autoscaling.startupSeconds``: provisioning to node Ready),
  driver (the GPU operator's driver container: ``DRIVER_SECONDS``, an assumption),
  image pull (the vLLM image over the node's NICs, at most the unpack rate) and
  model load (the replica's weights over the node's storage NICs, as ``plan/storage.py``
  reckons a cold start, at most the object store's read rate, plus the engine's start:
  ``ENGINE_START_SECONDS``, an assumption).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aiplat.plan.models import Plan, WorkloadPlan
from aiplat.plan.pods import PodGroup, pod_groups
from aiplat.spec.models import Platform, WorkloadKind

SERVES = (WorkloadKind.ONLINE_INFERENCE.value, WorkloadKind.RAG.value)

# vllm/vllm-openai v0.11: about 12.6 GB pulled (https://github.com/vllm-project/vllm/issues/27154,
# "around 12 GB"; discuss.vllm.ai "current vLLM docker image size is 12.64GB").
SERVE_IMAGE_BYTES = 12.6e9
# containerd unpacks gzip layers on one core: ~100 MB/s is an assumption, not a measurement.
UNPACK_BYTES_PER_S = 100e6
# The GPU operator's driver container building and loading the kernel module on a fresh node:
# minutes; a precompiled driver image or a host driver shortens it. An assumption.
DRIVER_SECONDS = 180.0
# vLLM's engine start after the weights are read: KV-cache profiling, CUDA graph capture and
# torch.compile (vLLM's start-up log: tens of seconds to minutes; its compile cache shortens
# it). An assumption.
ENGINE_START_SECONDS = 60.0
NODE_BOOT_SECONDS = 600.0  # Autoscaling.startupSeconds' default, for a pool of fixed size


@dataclass(frozen=True)
class StartupChain:
    """Seconds from a scale-up decision to a ready replica, item by item."""

    node_boot_s: float
    driver_s: float
    image_pull_s: float
    model_load_s: float

    @property
    def total_s(self) -> float:
        return self.node_boot_s + self.driver_s + self.image_pull_s + self.model_load_s

    @property
    def on_warm_node_s(self) -> float:
        """A replica on a node already up with its driver (a warm reserve node)."""
        return self.image_pull_s + self.model_load_s

    def items(self) -> list[tuple[str, float]]:
        return [("node boot", self.node_boot_s), ("driver", self.driver_s),
                ("image pull", self.image_pull_s), ("model load", self.model_load_s)]


@dataclass(frozen=True)
class ServingScale:
    """One serving group's autoscaling figures (the chain is the simulator's: ``startup_chain``)."""

    workload: str
    tenant: str
    pool: str
    role: str
    floor: int
    ceiling: int
    gpus_per_replica: int
    pods_per_replica: int
    replicas_per_node: int
    qps: float
    qps_per_replica: float
    ttft_target_s: float | None
    queue_allowance: int | None
    weight_bytes: float


def _storage_bytes_per_s(plan: Plan, pool: str) -> float | None:
    cache = next((c for c in plan.storage.pools if c.pool == pool), None)
    if cache is None or not cache.storage_gbps:
        return None
    nic = cache.storage_gbps * 1e9 / 8
    store = plan.storage.store_read_gbytes
    return min(nic, store * 1e9) if store else nic


def startup_chain(platform: Platform, plan: Plan, pool: str, weight_bytes: float) -> StartupChain:
    spec = platform.pool(pool)
    boot = float(spec.autoscaling.startup_seconds) if spec and spec.autoscaling \
        else NODE_BOOT_SECONDS
    rate = _storage_bytes_per_s(plan, pool)
    nic = sum(n.rate_gbps * n.count for n in spec.node.nics) * 1e9 / 8 if spec else 0.0
    pull_rate = min(nic, UNPACK_BYTES_PER_S) if nic else UNPACK_BYTES_PER_S
    return StartupChain(node_boot_s=boot, driver_s=DRIVER_SECONDS,
                        image_pull_s=SERVE_IMAGE_BYTES / pull_rate,
                        model_load_s=(weight_bytes / rate if rate else 0.0)
                        + ENGINE_START_SECONDS)


def _target(w: WorkloadPlan) -> tuple[float | None, float | None]:
    slo = w.results.get("slo") or {}
    inputs = slo.get("inputs") or {}
    return inputs.get("target_ttft_seconds"), slo.get("prefill_seconds")


def serving_groups(w: WorkloadPlan, gpus_per_node: int) -> list[PodGroup]:
    """The groups an autoscaler scales: the serving replicas, not a RAG query encoder
    (sized apart on its own load) nor disaggregated prefill/decode (their ratio is the
    plan's; scaling one alone breaks it)."""
    if not gpus_per_node or w.run_hours is not None or w.kind not in SERVES:
        return []
    return [g for g in pod_groups(w, gpus_per_node) if g.role == "serve"]


def serving_scales(platform: Platform, workloads: list[WorkloadPlan],
                   pool_nodes: dict[str, tuple[int, int]]) -> list[ServingScale]:
    """One per always-on serving group, in the plan's order; ``pool_nodes``: each pool's
    (planned nodes, GPUs per node)."""
    groups = [(w, g) for w in workloads if w.pool in pool_nodes
              for g in serving_groups(w, pool_nodes[w.pool][1])]
    out = []
    for w, g in groups:
        planned, gpn = pool_nodes[w.pool]
        spec = platform.pool(w.pool)
        nodes = spec.autoscaling.max if spec is not None and spec.autoscaling else planned
        per_replica = g.gpus * g.pods_per_replica
        others = sum(o.gpus * o.pods for ow in workloads if ow.pool == w.pool
                     and ow.run_hours is None and ow.kind in SERVES
                     for o in pod_groups(ow, gpn) if not (ow is w and o.role == g.role))
        ceiling = max(g.replicas, (nodes * gpn - others) // max(1, per_replica))
        ws = next((x for x in platform.workloads if x.name == w.name), None)
        qps = ws.slo.queries_per_second if ws is not None and ws.slo.queries_per_second \
            else 0.0
        target, prefill = _target(w)
        allowance = (max(1, math.floor((target - prefill) / prefill))
                     if target and prefill else None)
        out.append(ServingScale(
            workload=w.name, tenant=w.tenant, pool=w.pool, role=g.role, floor=g.replicas,
            ceiling=ceiling, gpus_per_replica=per_replica, pods_per_replica=g.pods_per_replica,
            replicas_per_node=max(1, gpn // max(1, g.gpus)) if g.pods_per_replica == 1 else 1,
            qps=qps, qps_per_replica=qps / max(1, g.replicas), ttft_target_s=target,
            queue_allowance=allowance, weight_bytes=g.weight_bytes))
    return out


def plan_serving_scales(platform: Platform, plan: Plan) -> list[ServingScale]:
    return serving_scales(platform, plan.workloads,
                          {p.name: (p.nodes, p.gpus_per_node) for p in plan.pools})
