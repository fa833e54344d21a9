"""GPU sharing strategies: their documented isolation, the configs they need, and a choice.

Pure. ``STRATEGIES`` is the model an administrator compares (what each strategy protects,
how many partitions, what a change costs); ``device_plugin_config``, ``dra_gpu_config`` and
``aiplat.devices.mig.mig_parted_config`` render the configs NVIDIA's components read;
``compare`` scores the strategies for the workloads and tenants of one pool of a platform
spec and ends in a recommendation with its reasons. The rules behind the recommendation are
few and stated in ``compare`` so they can be argued with:

- training (pretrain/finetune) wants whole GPUs: collectives and memory need all of it;
- several tenants on one GPU need hard isolation: memory, faults and bandwidth → MIG;
- one tenant's inference services share well with MPS (memory limits, SM percentages);
- time-slicing isolates nothing: development and notebooks of one tenant at most.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from aiplat.catalog import GpuModel
from aiplat.errors import InputError
from aiplat.plan.resolve import Resolved, ResolvedPool, gpu_of
from aiplat.spec.models import PoolSpec, SharingStrategy, WorkloadKind


class SharingError(InputError, ValueError):
    """A sharing configuration that cannot be made (the message says what to change)."""


@dataclass(frozen=True)
class Strategy:
    name: str
    memory_protection: bool
    fault_isolation: bool
    bandwidth_qos: bool
    compute: str
    max_partitions: str
    reconfiguration: str
    interference: str  # expected interference between co-located workloads


STRATEGIES: dict[str, Strategy] = {s.name: s for s in (
    Strategy("exclusive", True, True, True, "whole GPU", "1 per GPU",
             "none", "none"),
    Strategy("mig", True, True, True, "dedicated SM slices (g of 7)",
             "7 instances per GPU (per-profile maximum)",
             "GPU idle, MIG manager relabels the node; pods on that GPU drained", "low"),
    Strategy("mps", True, False, False, "SM share by active-thread percentage",
             "48 clients per GPU", "device plugin restart (node-wide setting)",
             "medium: shared memory bandwidth and caches; one fault ends every client"),
    Strategy("time-slicing", False, False, False, "none: contexts take turns",
             "replicas per GPU (no hard limit)", "device plugin restart (node-wide setting)",
             "high: no memory limit, context switches, one fault or OOM hits all"),
    # Isolation is the chosen TimeSlicing/MPS's; listed as the weaker (time-slicing) one.
    Strategy("dra", False, False, False,
             "per claim: TimeSlicing or MPS through the DRA driver's GpuConfig",
             "per claim (MPS: 48 clients)", "none per node: each ResourceClaim carries its own",
             "as the chosen TimeSlicing/MPS; but scoped to the pods sharing one claim"),
)}


def device_plugin_config(strategy: str, replicas: int = 0, *, rename_by_default: bool = False,
                         resource: str = "nvidia.com/gpu", mig_strategy: str = "mixed"
                         ) -> dict[str, Any]:
    """NVIDIA device plugin config (``version: v1``) for one node setting."""
    if strategy == "exclusive":
        return {"version": "v1", "flags": {"migStrategy": "none"}}
    if strategy == "mig":
        if mig_strategy not in ("single", "mixed"):
            raise SharingError("migStrategy must be single or mixed")
        return {"version": "v1", "flags": {"migStrategy": mig_strategy}}
    if strategy not in ("time-slicing", "mps"):
        raise SharingError(f"unknown strategy '{strategy}' (fix: use exclusive, mig, time-slicing "
                           "or mps)")
    if not 2 <= replicas <= (48 if strategy == "mps" else 1024):
        raise SharingError(f"{strategy} needs replicas between 2 and "
                         f"{48 if strategy == 'mps' else 1024}")
    key = "timeSlicing" if strategy == "time-slicing" else "mps"
    return {"version": "v1", "flags": {"migStrategy": "none"},
            "sharing": {key: {"renameByDefault": rename_by_default,
                              "failRequestsGreaterThanOne": True,
                              "resources": [{"name": resource, "replicas": replicas}]}}}


def dra_gpu_config(strategy: str, *, interval: str = "Default", replicas: int = 2,
                   memory_gb: float | None = None) -> dict[str, Any]:
    """Opaque parameters for the NVIDIA DRA driver (``resource.nvidia.com/v1beta1``)."""
    base: dict[str, Any] = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"}
    if strategy == "time-slicing":
        if interval not in ("Default", "Short", "Medium", "Long"):
            raise SharingError("interval must be Default, Short, Medium or Long")
        base["sharing"] = {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": interval}}
    elif strategy == "mps":
        if not 2 <= replicas <= 48:
            raise SharingError("MPS shares a GPU among 2..48 clients")
        mps: dict[str, Any] = {"defaultActiveThreadPercentage": 100 // replicas}
        if memory_gb:
            mps["defaultPinnedDeviceMemoryLimit"] = f"{int(memory_gb / replicas)}Gi"
        base["sharing"] = {"strategy": "MPS", "mpsConfig": mps}
    else:
        raise SharingError("the DRA driver's GpuConfig shares by time-slicing or mps")
    return base


@dataclass(frozen=True)
class Option:
    strategy: str
    units_per_gpu: float
    capacity: float  # schedulable units in the pool
    memory_per_unit_gb: float | None  # None: not enforced
    isolation: str
    interference: str
    fits: bool
    why_not: str = ""


@dataclass(frozen=True)
class Comparison:
    pool: str
    gpu: str
    gpus: int
    options: tuple[Option, ...]
    recommended: str
    reasons: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"pool": self.pool, "gpu": self.gpu, "gpus": self.gpus,
                "options": [asdict(o) for o in self.options],
                "recommended": self.recommended, "reasons": list(self.reasons)}


def _isolation(s: Strategy) -> str:
    parts = [("memory", s.memory_protection), ("faults", s.fault_isolation),
             ("bandwidth", s.bandwidth_qos)]
    held = [n for n, ok in parts if ok]
    return ", ".join(held) if held else "none"


def compare(resolved: Resolved, pool: ResolvedPool, mig_layout: list[str] | None = None,
            replicas: int | None = None) -> Comparison:
    """Strategies for ``pool``'s workload mix, ending in a recommendation with reasons."""
    gpu = gpu_of(pool)
    workloads = [w.spec for w in resolved.workloads_on(pool.name)]
    tenants = {w.tenant for w in workloads} | {t.name for t in resolved.spec.tenants
                                               if pool.name in t.quota}
    trains = [w.name for w in workloads if w.kind in (WorkloadKind.PRETRAIN,
                                                      WorkloadKind.FINETUNE)]
    serves = [w.name for w in workloads if not w.kind.trains]
    gpus = pool.gpus
    sharing = pool.spec.sharing
    reps = replicas or sharing.replicas or 4
    layout = mig_layout or sharing.mig_layout or _default_layout(gpu)
    by = {p.name: p for p in gpu.mig_profiles}
    options = [Option("exclusive", 1, gpus, gpu.memory_gb, _isolation(STRATEGIES["exclusive"]),
                      STRATEGIES["exclusive"].interference, True)]
    if gpu.mig_profiles and layout:
        mem = min(by[p].memory_gb for p in layout if p in by)
        options.append(Option("mig", len(layout), gpus * len(layout), mem,
                              _isolation(STRATEGIES["mig"]), STRATEGIES["mig"].interference,
                              True))
    else:
        options.append(Option("mig", 0, 0, None, "-", "-", False,
                              f"{gpu.name} has no MIG"))
    for name in ("mps", "time-slicing"):
        s = STRATEGIES[name]
        r = min(reps, 48) if name == "mps" else reps
        options.append(Option(name, r, gpus * r,
                              round(gpu.memory_gb / r, 1) if s.memory_protection else None,
                              _isolation(s), s.interference, True))
    reasons: list[str] = []
    if trains:
        rec = "exclusive"
        reasons.append(f"training workloads ({', '.join(trains)}) need whole GPUs: collectives "
                       "and optimizer state use all memory and bandwidth")
        if serves:
            reasons.append(f"serve {', '.join(serves)} from a separate MIG or MPS pool")
    elif len(tenants) > 1 and gpu.mig_profiles:
        rec = "mig"
        reasons.append(f"{len(tenants)} tenants ({', '.join(sorted(tenants))}) share the pool: "
                       "only MIG isolates memory, faults and memory bandwidth between them")
        reasons.append("plan the layouts with `aiplat sharing plan`; reconfiguring needs the "
                       "GPU idle")
    elif len(tenants) > 1:
        rec = "exclusive"
        reasons.append(f"{len(tenants)} tenants but {gpu.name} has no MIG: MPS and "
                       "time-slicing would let one tenant's fault or memory use hit another")
    elif serves:
        rec = "mps"
        reasons.append(f"one tenant's inference ({', '.join(serves)}): MPS enforces memory "
                       f"limits ({gpu.memory_gb / min(reps, 48):.0f} GB per client at "
                       f"{min(reps, 48)} replicas) and SM shares, at less interference than "
                       "time-slicing")
        reasons.append("a fault in one client ends all clients on that GPU: keep replicas of "
                       "one service on different GPUs")
    else:
        rec = "exclusive"
        reasons.append("no workloads on this pool: nothing to share yet")
    if rec != "time-slicing":
        reasons.append("time-slicing is not recommended: no memory or fault isolation")
    return Comparison(pool.name, gpu.name, gpus, tuple(options), rec, tuple(reasons))


def _default_layout(gpu: GpuModel) -> list[str]:
    """Seven of the smallest instances: the most schedulable units MIG offers."""
    if not gpu.mig_profiles:
        return []
    small = min(gpu.mig_profiles, key=lambda p: (p.memory_slices, p.compute_slices))
    return [small.name] * small.max_instances


def spec_strategy(pool: PoolSpec) -> str:
    return {SharingStrategy.EXCLUSIVE: "exclusive", SharingStrategy.MIG: "mig",
            SharingStrategy.TIME_SLICING: "time-slicing", SharingStrategy.MPS: "mps"
            }[pool.sharing.strategy]


def strategies_table() -> list[Mapping[str, Any]]:
    return [asdict(s) for s in STRATEGIES.values()]
