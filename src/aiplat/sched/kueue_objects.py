"""Kueue objects (as rendered for the cluster) → :class:`~aiplat.sched.kueue.KueueConfig`.

There is one reader of Kueue objects: :func:`aiplat.kueue.snapshot.parse`, the
replay's. ``from_objects`` hands it the objects and keeps the parsed ``Snapshot`` as the
simulator's queues, so the month ``aiplat plan`` simulates, ``sim run --kueue`` and
``sim replay`` read every field the same way (the same kinds, API versions, defaults and
errors) and decide on the same Kueue objects in the same integer units. What this module
adds is the simulator's view:

- the whole-GPU resource names of one flavor are one ``nvidia.com/gpu`` in milli-GPUs, every
  flavor a pool (:mod:`aiplat.sched.kueue`);
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

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

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
from aiplat.sched.kueue import (
    KueueConfig,
    check_cohorts,
    merge_gpus,
    sim_units,
    simulated,
    whole_gpu,
)

__all__ = ["duration", "from_objects", "quantity", "to_config"]
CONFIG_KEY = "controller_manager_config.yaml"
_READ = {*KUEUE_KINDS, "Configuration", "ConfigMap", "Node", "Namespace"}
# The replay's notes the simulator replaces by its own.
_REPLACED = (NOT_REPLAYED_TAS, f": {NOT_REPLAYED_AFS}", NOT_REPLAYED_NS)


def quantity(value: object, resource: str, where: str) -> float:
    """A Kubernetes quantity in the simulator's unit for ``resource`` (GPUs, cores, GiB)."""
    got = amount(value, resource, where)
    return sim_units(resource, got) if resource in ("cpu", "memory") else float(got)


def _unmodelled(groups: tuple[ResourceGroup, ...], where: str) -> list[str]:
    """Resources no simulated job asks for (the jobs ask for cpu, memory and GPUs)."""
    return [f"{where}: flavor {f.flavor} resource {name} (no simulated job asks for it)"
            for g in groups for f in g.flavors for name in f.resources
            if not whole_gpu(name) and name not in ("cpu", "memory")]


def to_config(snap: Snapshot, source: str, notes: Iterable[str] = ()) -> KueueConfig:
    """The simulator's queues from a parsed snapshot (see the module docstring)."""
    unsupported = [*notes, *(u for u in snap.unsupported if not u.endswith(_REPLACED))]
    for q in snap.cluster_queues.values():
        where = f"{source}: ClusterQueue {q.name}"
        if q.namespace_selector is not None:
            unsupported.append(f"{where}: spec.namespaceSelector (not simulated: a tenant's "
                               "jobs go to the ClusterQueue of the LocalQueue in its namespace)")
        unsupported += _unmodelled(q.groups, where)
    for c in snap.cohorts.values():
        unsupported += _unmodelled(c.groups, f"{source}: Cohort {c.name}")
    unsupported += [f"{source}: ResourceFlavor {f.name}: spec.topologyName (TAS levels come "
                    "from the pool's block/rack layout)" for f in snap.flavors.values()
                    if f.topology]
    if snap.workloads:
        unsupported.append(f"{source}: {len(snap.workloads)} Workload(s) (not simulated: the "
                           "jobs come from the spec's workloads)")
    if not snap.cluster_queues:
        raise InputError(f"{source}: no ClusterQueue found (fix: pass the rendered Kueue "
                         "objects, e.g. the kueue/ folder of the manifests)")
    try:
        check_cohorts((c.name, c.parent) for c in snap.cohorts.values())
    except ValueError as e:
        raise InputError(f"{source}: {e}") from e
    return KueueConfig(simulated(dataclasses.replace(
        snap, cluster_queues={q.name: dataclasses.replace(q, groups=merge_gpus(q.groups))
                              for q in snap.cluster_queues.values()},
        cohorts={c.name: dataclasses.replace(c, groups=merge_gpus(c.groups))
                 for c in snap.cohorts.values()})), tuple(unsupported))


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
