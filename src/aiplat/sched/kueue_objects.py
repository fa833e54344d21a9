"""Kueue objects (as rendered for the cluster) → :class:`~aiplat.sched.kueue.KueueConfig`.

Reads plain dicts (parsed YAML) of ``ClusterQueue``, ``Cohort``, ``ResourceFlavor``,
``LocalQueue`` and the Kueue ``Configuration``, in ``kueue.x-k8s.io/v1beta2`` or
``v1beta1`` form, so that what is simulated is what would be applied. Flavor names are pool
names (one name per concept). Quantities: GPUs as counts, ``cpu`` in cores (``500m`` = 0.5),
``memory`` in GiB (``64Gi``, ``512Mi``, ``1G``...).

Every field the simulator does not model is reported in ``KueueConfig.unsupported`` (the CLI
prints them as warnings) — never silently dropped. A malformed object raises
:class:`~aiplat.errors.InputError` naming the object and field. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from aiplat.errors import InputError
from aiplat.sched.kueue import (
    GPU,
    AdmissionFairSharing,
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    KueueConfig,
    Preemption,
    Quota,
    WaitForPodsReady,
)

_SUFFIX = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9,
           "T": 1e12, "m": 1e-3}
def _stop(value: str, stop: str) -> Any:
    """v1beta2's ``MayStopSearch`` is v1beta1's ``Borrow``/``Preempt``."""
    return "TryNextFlavor" if value == "TryNextFlavor" else stop


_CQ_KNOWN = {"cohortName", "cohort", "queueingStrategy", "resourceGroups", "preemption",
             "flavorFungibility", "fairSharing"}
_COHORT_KNOWN = {"parentName", "parent", "resourceGroups", "fairSharing"}


def quantity(value: object, resource: str, where: str) -> float:
    """A Kubernetes quantity in the simulator's unit for ``resource``."""
    text = str(value).strip()
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([A-Za-z]*)", text)
    if not m or (m.group(2) and m.group(2) not in _SUFFIX):
        raise InputError(f"{where}: {text!r} is not a quantity (fix: e.g. 8, 500m, 64Gi)")
    amount = float(m.group(1)) * _SUFFIX.get(m.group(2), 1.0)
    return amount / 2**30 if resource == "memory" else amount


def duration(value: object, where: str) -> float:
    """``1h30m``, ``30m``, ``60s`` → seconds."""
    text = str(value).strip()
    parts = re.findall(r"([0-9.]+)(h|m|s|ms)", text)
    if not parts or "".join(a + b for a, b in parts) != text:
        raise InputError(f"{where}: {text!r} is not a duration (fix: e.g. 30m, 1h, 90s)")
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(a) * scale[b] for a, b in parts)


def _whole_gpu(name: str) -> bool:
    """Whole-GPU resource names: the device plugin's (``nvidia.com/gpu``), the DRA driver's
    DeviceClass (``gpu.nvidia.com``) and aiplat's per-model DeviceClasses (``gpu-<model>``).
    A ClusterQueue covering both a device-plugin pool and a DRA pool lists both names in
    every flavor, one of them 0: they add up to the flavor's GPUs."""
    return name.endswith("/gpu") or name == "gpu.nvidia.com" or name.startswith("gpu-")


def _add(a: Quota, b: Quota) -> Quota:
    def opt(x: float | None, y: float | None) -> float | None:
        return None if x is None and y is None else (x or 0.0) + (y or 0.0)
    return Quota(a.nominal + b.nominal, opt(a.borrowing_limit, b.borrowing_limit),
                 opt(a.lending_limit, b.lending_limit))


def _groups(spec: dict[str, Any], where: str, unsupported: list[str]
            ) -> tuple[FlavorQuotas, ...]:
    out = []
    for gi, group in enumerate(spec.get("resourceGroups") or []):
        for fi, flavor in enumerate(group.get("flavors") or []):
            at = f"{where}.resourceGroups[{gi}].flavors[{fi}]"
            if "name" not in flavor:
                raise InputError(f"{at}: no name (fix: name the ResourceFlavor)")
            res: dict[str, Quota] = {}
            for ri, r in enumerate(flavor.get("resources") or []):
                rat = f"{at}.resources[{ri}]"
                name = r.get("name")
                if not name or "nominalQuota" not in r:
                    raise InputError(f"{rat}: needs name and nominalQuota")
                key = GPU if _whole_gpu(name) else name
                if key not in (GPU, "cpu", "memory"):
                    unsupported.append(f"{rat}: resource {name} (not simulated)")
                    continue
                q = Quota(
                    quantity(r["nominalQuota"], key, f"{rat}.nominalQuota"),
                    quantity(r["borrowingLimit"], key, f"{rat}.borrowingLimit")
                    if "borrowingLimit" in r else None,
                    quantity(r["lendingLimit"], key, f"{rat}.lendingLimit")
                    if "lendingLimit" in r else None,
                )
                res[key] = _add(res[key], q) if key in res else q
            out.append(FlavorQuotas(str(flavor["name"]), res))
    return tuple(out)


def _choice(value: object, allowed: tuple[str, ...], where: str) -> Any:
    if value not in allowed:
        raise InputError(f"{where}: {value!r} is not one of {', '.join(allowed)}")
    return value


def from_objects(objects: Iterable[dict[str, Any]], source: str = "<objects>") -> KueueConfig:
    queues: list[ClusterQueue] = []
    cohorts: list[Cohort] = []
    unsupported: list[str] = []
    fair = False
    strategies: tuple[Any, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    afs: AdmissionFairSharing | None = None
    wfpr: WaitForPodsReady | None = None
    for i, obj in enumerate(objects):
        if not isinstance(obj, dict):
            raise InputError(f"{source}: document {i + 1} is not a mapping")
        kind = obj.get("kind")
        name = str((obj.get("metadata") or {}).get("name", ""))
        spec = obj.get("spec") or {}
        where = f"{source}: {kind} {name}"
        if kind == "ClusterQueue":
            for key in sorted(set(spec) - _CQ_KNOWN):
                unsupported.append(f"{where}: spec.{key} (not simulated)")
            pre = spec.get("preemption") or {}
            bwc = pre.get("borrowWithinCohort") or {}
            fung = spec.get("flavorFungibility") or {}
            queues.append(ClusterQueue(
                name=name, flavors=_groups(spec, where + " spec", unsupported),
                cohort=spec.get("cohortName", spec.get("cohort")),
                queueing_strategy=_choice(spec.get("queueingStrategy", "BestEffortFIFO"),
                                          ("BestEffortFIFO", "StrictFIFO"),
                                          where + " spec.queueingStrategy"),
                preemption=Preemption(
                    within_cluster_queue=_choice(
                        pre.get("withinClusterQueue", "Never"),
                        ("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
                        where + " spec.preemption.withinClusterQueue"),
                    reclaim_within_cohort=_choice(
                        pre.get("reclaimWithinCohort", "Never"), ("Never", "LowerPriority", "Any"),
                        where + " spec.preemption.reclaimWithinCohort"),
                    borrow_within_cohort=_choice(
                        bwc.get("policy", "Never"), ("Never", "LowerPriority"),
                        where + " spec.preemption.borrowWithinCohort.policy"),
                    max_priority_threshold=bwc.get("maxPriorityThreshold"),
                ),
                # v1beta2 names the "stop here" choice MayStopSearch (v1beta1: Borrow/Preempt)
                when_can_borrow=_stop(_choice(
                    fung.get("whenCanBorrow", "Borrow"), ("Borrow", "MayStopSearch",
                                                          "TryNextFlavor"),
                    where + " spec.flavorFungibility.whenCanBorrow"), "Borrow"),
                when_can_preempt=_stop(_choice(
                    fung.get("whenCanPreempt", "TryNextFlavor"), ("Preempt", "MayStopSearch",
                                                                  "TryNextFlavor"),
                    where + " spec.flavorFungibility.whenCanPreempt"), "Preempt"),
                weight=float(quantity((spec.get("fairSharing") or {}).get("weight", 1), "",
                                      where + " spec.fairSharing.weight")),
            ))
        elif kind == "Cohort":
            for key in sorted(set(spec) - _COHORT_KNOWN):
                unsupported.append(f"{where}: spec.{key} (not simulated)")
            cohorts.append(Cohort(
                name=name, parent=spec.get("parentName", spec.get("parent")),
                flavors=_groups(spec, where + " spec", unsupported),
                weight=float(quantity((spec.get("fairSharing") or {}).get("weight", 1), "",
                                      where + " spec.fairSharing.weight")),
            ))
        elif kind == "ResourceFlavor":
            if spec.get("topologyName"):
                unsupported.append(f"{where}: spec.topologyName (TAS levels come from the "
                                   "pool's block/rack layout)")
        elif kind in ("LocalQueue", "WorkloadPriorityClass", "Topology"):
            continue  # queue names = tenants; priorities come with the jobs; TAS levels are
            # the pools' block/rack/host layout
        elif kind == "Configuration":
            fs = obj.get("fairSharing")
            # v1beta2: the section's presence turns fair sharing on (v1beta1: its enable)
            fair = fs is not None and (str(obj.get("apiVersion", "")).endswith("v1beta2")
                                       or bool(fs.get("enable", False)))
            fs = fs or {}
            if fs.get("preemptionStrategies"):
                strategies = tuple(fs["preemptionStrategies"])
            a = obj.get("admissionFairSharing")
            if a:
                afs = AdmissionFairSharing(
                    half_life_s=duration(a.get("usageHalfLifeTime", "1h"),
                                         f"{where} admissionFairSharing.usageHalfLifeTime"))
            w = obj.get("waitForPodsReady") or {}
            if w.get("enable"):
                rq = w.get("requeuingStrategy") or {}
                wfpr = WaitForPodsReady(
                    timeout_s=duration(w.get("timeout", "5m"), f"{where} waitForPodsReady"),
                    backoff_base_s=float(rq.get("backoffBaseSeconds", 60)),
                    backoff_max_s=float(rq.get("backoffMaxSeconds", 3600)),
                    backoff_limit=rq.get("backoffLimitCount"),
                )
        else:
            unsupported.append(f"{where}: kind {kind} (not simulated)")
    if not queues:
        raise InputError(f"{source}: no ClusterQueue found (fix: pass the rendered Kueue "
                         "objects, e.g. the kueue/ folder of the manifests)")
    try:
        return KueueConfig(tuple(queues), tuple(cohorts), fair_sharing=fair,
                           preemption_strategies=strategies, admission_fair_sharing=afs,
                           wait_for_pods_ready=wfpr, unsupported=tuple(unsupported))
    except ValueError as e:
        raise InputError(f"{source}: {e}") from e
