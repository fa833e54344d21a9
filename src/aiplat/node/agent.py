"""The node agent: run the checks periodically and publish the result on the node's own
Kubernetes Node object (labels, a condition, a NoSchedule taint while a check fails).

The patch is computed by a pure function (``node_patch``) from the check report, the
placement labels and the Node as it is now, so tests need no cluster. Applying it goes
through a small ``NodeClient`` protocol; ``LightkubeNodeClient`` implements it with lightkube
(in-cluster service account or a kubeconfig). Taints have no merge key in the Node schema:
the patch carries the whole list, keeping every taint that is not aiplat's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from aiplat.node.checks import CONDITION_TYPE, TAINT_KEY, CheckReport, node_condition


class NodeClient(Protocol):
    def get_node(self, name: str) -> dict[str, Any]: ...
    def patch_node(self, name: str, patch: dict[str, Any]) -> None: ...
    def patch_node_status(self, name: str, patch: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class NodePatch:
    metadata_spec: dict[str, Any]
    status: dict[str, Any]


def node_patch(node: dict[str, Any], report: CheckReport, labels: dict[str, str],
               now: str) -> NodePatch:
    spec = node.get("spec") or {}
    others = [t for t in spec.get("taints") or [] if t.get("key") != TAINT_KEY]
    mine = ([{"key": TAINT_KEY, "value": "checks-failed", "effect": "NoSchedule"}]
            if report.failed else [])
    cond = node_condition(report, now)
    old = next((c for c in (node.get("status") or {}).get("conditions") or []
                if c.get("type") == CONDITION_TYPE), None)
    if old is not None and old.get("status") == cond["status"]:
        cond["lastTransitionTime"] = old.get("lastTransitionTime", now)
    status_labels = {"node.aiplat.io/health": report.status}
    meta: dict[str, Any] = {"labels": {**labels, **status_labels}}
    version = (node.get("metadata") or {}).get("resourceVersion")
    if version:
        # Optimistic concurrency: the taint list is replaced whole, so a taint another
        # controller added since our read must make this patch fail (409), not vanish.
        meta["resourceVersion"] = version
    return NodePatch(
        metadata_spec={"metadata": meta,
                       "spec": {"taints": others + mine}},
        status={"status": {"conditions": [cond]}},
    )


def apply_once(client: NodeClient, name: str, report: CheckReport,
               labels: dict[str, str]) -> NodePatch:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    patch = node_patch(client.get_node(name), report, labels, now)
    client.patch_node(name, patch.metadata_spec)
    client.patch_node_status(name, patch.status)
    return patch


def run_agent(check: Callable[[], tuple[CheckReport, dict[str, str]]], *,
              client: NodeClient | None, node_name: str, interval_s: float,
              iterations: int | None = None,
              emit: Callable[[NodePatch, CheckReport], None] | None = None,
              on_error: Callable[[Exception], None] | None = None,
              sleep: Callable[[float], None] = time.sleep) -> int:
    """Loop: check, patch (or emit, with no client), sleep. Returns the last round's exit
    code: 1 when a check failed, 2 when its result could not be published on the Node (the
    output did not reach the cluster: 403, unreachable, a conflict), else 0."""
    code = 0
    n = 0
    while iterations is None or n < iterations:
        report, labels = check()
        code = 1 if report.failed else 0
        patch: NodePatch | None = None
        if client is not None:
            try:
                patch = apply_once(client, node_name, report, labels)
            except Exception as e:  # API unreachable, 409 conflict: retry next round
                if on_error is None:
                    raise
                on_error(e)
                code = 2
        else:
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            patch = node_patch({}, report, labels, now)
        if emit and patch is not None:
            emit(patch, report)
        n += 1
        if iterations is None or n < iterations:
            sleep(interval_s)
    return code


class LightkubeNodeClient:
    """NodeClient over lightkube: ``config`` (a kubeconfig context the CLI loaded), else
    lightkube's own order: in-cluster first, then $KUBECONFIG or ~/.kube/config."""

    def __init__(self, config: Any | None = None) -> None:
        import importlib

        lk = importlib.import_module("lightkube")
        self._types = importlib.import_module("lightkube.types")
        self._node = importlib.import_module("lightkube.resources.core_v1").Node
        self._client = lk.Client(config=config, field_manager="aiplat-node-agent")

    def get_node(self, name: str) -> dict[str, Any]:
        obj = self._client.get(self._node, name=name)
        return dict(obj.to_dict())

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        self._client.patch(self._node, name, patch, patch_type=self._types.PatchType.MERGE)

    def patch_node_status(self, name: str, patch: dict[str, Any]) -> None:
        # Strategic merge: conditions merge by type, so other controllers' conditions stay.
        self._client.patch(self._node.Status, name, patch,
                           patch_type=self._types.PatchType.STRATEGIC)
