"""The GPU Operator's DCGM exporter values: what it exports and how Prometheus finds it.

(The counters the alert rules read, the labels they join on and the ServiceMonitor's
selection are issue #41's work, kept here so ``render_cluster.gpu_operator`` only places them.)
"""

from __future__ import annotations

from typing import Any

from aiplat.kube.facts import PoolFacts
from aiplat.kube.objects import Obj
from aiplat.spec.models import Platform


def dcgm_exporter(platform: Platform, pools: list[PoolFacts]) -> tuple[dict[str, Any], list[Obj]]:
    """(the ``dcgmExporter`` values, the ConfigMaps they reference in the operator's
    namespace)."""
    del platform, pools
    return {"enabled": True, "serviceMonitor": {"enabled": True}}, []
