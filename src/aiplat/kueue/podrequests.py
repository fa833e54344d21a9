"""What one pod requests, as Kubernetes schedules it and Kueue charges quota for it.

Kubernetes' rule (``k8s.io/component-helpers/resource`` ``PodRequests`` and
``AggregateContainerRequests``, which Kueue v0.19 calls in ``pkg/resources/requests.go``),
per resource:

- the regular containers add up, and so do the sidecars (init containers with
  ``restartPolicy: Always``): they run beside them for the pod's whole life;
- an ordinary init container runs alone, but beside the sidecars started before it: the pod
  needs at least that, for each of them;
- the pod needs the larger of the two; pod-level ``spec.resources`` (cpu, memory,
  hugepages-*), where set, replaces what its containers add up to;
- then ``spec.overhead`` (the RuntimeClass's) is added.

A limit stands in for a request not given, a container's and the pod level's (Kueue's
``UseLimitsAsMissingRequestsInPod`` on a Workload's pod template; the API server defaults a
Pod's containers the same way).

Callers read quantities their own way (``read``: Kueue's integer units in the snapshot, exact
Decimals in ``kube``); the rule only adds and compares them. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeVar

N = TypeVar("N", int, Decimal)
# (resource, quantity as written, where it stands) -> the amount in the caller's unit
Read = Callable[[str, Any, str], N]
Obj = dict[str, Any]


def container_requests(c: Obj, read: Read[N], where: str) -> dict[str, N]:
    """A container's (or a pod's ``spec.resources``) requests, limits standing in for
    missing ones."""
    res = c.get("resources") or {}
    asked = {**(res.get("limits") or {}), **(res.get("requests") or {})}
    return {str(k): read(str(k), v, f"{where}.resources.requests.{k}")
            for k, v in asked.items()}


def pod_requests(spec: Obj, read: Read[N], where: str = "spec", *,
                 overhead: bool = True) -> dict[str, N]:
    """What a pod with this spec requests, per resource (see the module docstring);
    ``overhead=False``: without ``spec.overhead`` (``ExcludeOverhead``: the LimitRanger's
    Pod limits, which are the containers')."""
    total: dict[str, N] = {}
    for i, c in enumerate(spec.get("containers") or []):
        _add(total, container_requests(c, read, f"{where}.containers[{i}]"))
    sidecars: dict[str, N] = {}
    init: dict[str, N] = {}  # the most any init container needs while it runs
    for i, c in enumerate(spec.get("initContainers") or []):
        own = container_requests(c, read, f"{where}.initContainers[{i}]")
        if c.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            _max(init, sidecars)
        else:
            _max(init, _add(own, sidecars))
    _max(total, init)
    total.update({k: v for k, v in container_requests(spec, read, where).items()
                  if _pod_level(k)})
    if overhead:
        extra = spec.get("overhead") or {}
        _add(total, {str(k): read(str(k), v, f"{where}.overhead.{k}") for k, v in extra.items()})
    return total


def _pod_level(resource: str) -> bool:
    """The resources pod-level ``spec.resources`` may set (``IsSupportedPodLevelResource``)."""
    return resource in ("cpu", "memory") or resource.startswith("hugepages-")


def _add(into: dict[str, N], more: dict[str, N]) -> dict[str, N]:
    for k, v in more.items():
        into[k] = into[k] + v if k in into else v
    return into


def _max(into: dict[str, N], other: dict[str, N]) -> None:
    for k, v in other.items():
        into[k] = max(into[k], v) if k in into else v


__all__ = ["container_requests", "pod_requests"]
