"""Kueue objects (as rendered for the cluster) → :class:`~aiplat.sched.kueue.KueueConfig`.

There is one reader of Kueue objects: :func:`aiplat.kueue.snapshot.parse`, the
replay's. ``from_objects`` hands it the objects and converts the parsed ``Snapshot`` into the
simulator's configuration, so the month ``aiplat plan`` simulates, ``sim run --kueue`` and
``sim replay`` read every field the same way (the same kinds, API versions, defaults and
errors). What this module adds is the simulator's view:

- units: GPUs as counts, ``cpu`` in cores, ``memory`` in GiB (the snapshot keeps Kueue's
  milli-cores and bytes); the whole-GPU resource names of one flavor add up to its GPUs;
- names: flavors are pool names; a tenant's jobs go to the ClusterQueue its LocalQueue
  names (``KueueConfig.local_queues``; ``sched.platform.route``), whatever its name;
- notes: every field the simulator does not model is in ``KueueConfig.unsupported`` (the
  CLI prints them as warnings) — the snapshot's own notes, less those the simulator does
  models or words its own way (admission fair sharing, topology levels from the pools'
  layout, namespace selectors), plus its own.

Kueue's Configuration usually comes embedded in its ConfigMap: ``load_text`` (the caller's
YAML reader; ``sched`` parses no text) reads it. Without one, the ConfigMap is noted and
its Configuration is not read. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, cast

from aiplat.errors import InputError
from aiplat.kueue.snapshot import (
    KUEUE_KINDS,
    NOT_REPLAYED_AFS,
    NOT_REPLAYED_NS,
    NOT_REPLAYED_TAS,
    ResourceGroup,
    Snapshot,
    amount,
    duration,
    parse,
)
from aiplat.kueue.snapshot import ClusterQueue as ParsedQueue
from aiplat.sched.kueue import (
    GPU,
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    KueueConfig,
    Quota,
)
from aiplat.sched.sim_queues import whole_gpu

__all__ = ["duration", "from_objects", "quantity", "to_config"]
CONFIG_KEY = "controller_manager_config.yaml"
_READ = {*KUEUE_KINDS, "Configuration", "ConfigMap", "Node", "Namespace"}
# The replay's notes the simulator replaces by its own.
_REPLACED = (NOT_REPLAYED_TAS, f": {NOT_REPLAYED_AFS}", NOT_REPLAYED_NS)


def _units(resource: str, value: int) -> float:
    """Kueue's integer amount in the simulator's unit."""
    if resource == "cpu":
        return value / 1000
    if resource == "memory":
        return value / 2**30
    return float(value)


def quantity(value: object, resource: str, where: str) -> float:
    """A Kubernetes quantity in the simulator's unit for ``resource``."""
    return _units(resource, amount(value, resource, where))


def _add(a: Quota, b: Quota) -> Quota:
    def opt(x: float | None, y: float | None) -> float | None:
        return None if x is None and y is None else (x or 0.0) + (y or 0.0)
    return Quota(a.nominal + b.nominal, opt(a.borrowing_limit, b.borrowing_limit),
                 opt(a.lending_limit, b.lending_limit))


def _flavors(groups: tuple[ResourceGroup, ...], where: str, notes: list[str]
             ) -> tuple[FlavorQuotas, ...]:
    out = []
    for group in groups:
        for f in group.flavors:
            res: dict[str, Quota] = {}
            for name, q in f.resources.items():
                key = GPU if whole_gpu(name) else name
                if key not in (GPU, "cpu", "memory"):
                    notes.append(f"{where}: flavor {f.flavor} resource {name} (no simulated "
                                 "job asks for it)")
                    continue
                sim = Quota(_units(key, q.nominal),
                            None if q.borrowing_limit is None else _units(key, q.borrowing_limit),
                            None if q.lending_limit is None else _units(key, q.lending_limit))
                res[key] = _add(res[key], sim) if key in res else sim
            out.append(FlavorQuotas(f.flavor, res))
    return tuple(out)


def _queue(q: ParsedQueue, source: str, notes: list[str]) -> ClusterQueue:
    where = f"{source}: ClusterQueue {q.name}"
    if q.namespace_selector is not None:
        notes.append(f"{where}: spec.namespaceSelector (not simulated: a tenant's jobs go to "
                     "the ClusterQueue of the LocalQueue in its namespace)")
    fung = q.fungibility
    return ClusterQueue(
        name=q.name, flavors=_flavors(q.groups, where, notes), cohort=q.cohort,
        queueing_strategy=cast(Any, q.queueing_strategy), preemption=q.preemption,
        # The snapshot reads v1beta1's Borrow/Preempt as v1beta2's MayStopSearch.
        when_can_borrow="TryNextFlavor" if fung.when_can_borrow == "TryNextFlavor"
        else "Borrow",
        when_can_preempt="TryNextFlavor" if fung.when_can_preempt == "TryNextFlavor"
        else "Preempt",
        weight=q.weight)


def to_config(snap: Snapshot, source: str, notes: Iterable[str] = ()) -> KueueConfig:
    """The simulator's configuration from a parsed snapshot (see the module docstring)."""
    unsupported = [*notes, *(u for u in snap.unsupported if not u.endswith(_REPLACED))]
    queues = tuple(_queue(q, source, unsupported) for q in snap.cluster_queues.values())
    cohorts = tuple(Cohort(c.name, c.parent, _flavors(c.groups, f"{source}: Cohort {c.name}",
                                                      unsupported), c.weight)
                    for c in snap.cohorts.values())
    unsupported += [f"{source}: ResourceFlavor {f.name}: spec.topologyName (TAS levels come "
                    "from the pool's block/rack layout)" for f in snap.flavors.values()
                    if f.topology]
    if snap.workloads:
        unsupported.append(f"{source}: {len(snap.workloads)} Workload(s) (not simulated: the "
                           "jobs come from the spec's workloads)")
    if not queues:
        raise InputError(f"{source}: no ClusterQueue found (fix: pass the rendered Kueue "
                         "objects, e.g. the kueue/ folder of the manifests)")
    try:
        return KueueConfig(queues, cohorts, fair_sharing=snap.fair_sharing,
                           preemption_strategies=cast(Any, snap.strategies),
                           admission_fair_sharing=snap.admission_fair_sharing,
                           wait_for_pods_ready=snap.wait_for_pods_ready,
                           unsupported=tuple(unsupported),
                           local_queues=tuple(sorted(snap.local_queues.items())),
                           objects=snap)
    except ValueError as e:
        raise InputError(f"{source}: {e}") from e


def from_objects(objects: Iterable[Any], source: str = "<objects>",
                 load_text: Callable[[str, str], list[dict[str, Any]]] | None = None
                 ) -> KueueConfig:
    """Rendered (or ``kubectl get``) Kueue objects → the simulator's configuration. Kinds
    that are not Kueue's (a Kustomization, a Deployment...) are noted, not refused."""
    read: list[dict[str, Any]] = []
    notes: list[str] = []
    for i, obj in enumerate(objects):
        if not isinstance(obj, dict):
            raise InputError(f"{source}: document {i + 1} is not a mapping")
        kind = obj.get("kind")
        name = (obj.get("metadata") or {}).get("name", "")
        if kind not in _READ:
            notes.append(f"{source}: {kind} {name}: kind {kind} (not simulated)")
        elif kind == "ConfigMap" and load_text is None and CONFIG_KEY in (obj.get("data") or {}):
            notes.append(f"{source}: ConfigMap {name}: the Configuration it embeds is not read "
                         "(no YAML reader given): no fair sharing, no waitForPodsReady")
        else:
            read.append(obj)
    return to_config(parse(read, source, load_text), source, notes)
