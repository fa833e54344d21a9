"""The Linux accelerator node: inventory, placement, version matrix, health checks, baseline,
burn-in, preparation and the node agent.

Layout (I/O at the edges, pure in the middle):

    tree (I/O)                           the one bounded reader of a root (links kept
                                         inside it, no FIFOs or devices, size bounds)
    readers (I/O, each takes root=)      sysfs, hostinfo, software, kernlog, nvml
    recorded-output parsers (pure)       nvsmi (topo -m, -q -x, nvlink -s), lstopo
    collect (I/O)                        runs the readers -> ``Inventory``
    inventory (model)                    the versioned document + its JSON Schema
    placement, matrix, checks (pure)     evaluate an Inventory against facts and the spec
    baseline, burnin (I/O: measure)      probes; ``compare``/``evaluate_burnin`` are pure
    prepare (pure)                       the preparation script as text
    agent                                checks -> Node patch (pure) -> lightkube client
    service, render                      what each CLI command does / prints

Consumers outside this package (``aiplat.devices`` for CDI, ``aiplat.kube`` for node labels
and the agent DaemonSet) should use only ``Inventory`` and its parts, ``collect_inventory``,
``evaluate_placement`` (labels under ``node.aiplat.io/``) and the check report models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiplat.lazy import lazy_exports

if TYPE_CHECKING:
    from aiplat.node.collect import collect_inventory
    from aiplat.node.inventory import (
        SCHEMA_VERSION,
        DeviceKind,
        DeviceNode,
        GpuDetail,
        IbPort,
        Inventory,
        NetInterface,
        PciDevice,
        PciLink,
        inventory_json_schema,
    )
    from aiplat.node.placement import LABEL_DOMAIN, Placement, evaluate_placement

# Re-exports load on first use (aiplat.lazy).
_EXPORTS = {
    "DeviceKind": "inventory",
    "DeviceNode": "inventory",
    "GpuDetail": "inventory",
    "IbPort": "inventory",
    "Inventory": "inventory",
    "LABEL_DOMAIN": "placement",
    "NetInterface": "inventory",
    "PciDevice": "inventory",
    "PciLink": "inventory",
    "Placement": "placement",
    "SCHEMA_VERSION": "inventory",
    "collect_inventory": "collect",
    "evaluate_placement": "placement",
    "inventory_json_schema": "inventory",
}

__all__ = [
    "LABEL_DOMAIN",
    "SCHEMA_VERSION",
    "DeviceKind",
    "DeviceNode",
    "GpuDetail",
    "IbPort",
    "Inventory",
    "NetInterface",
    "PciDevice",
    "PciLink",
    "Placement",
    "collect_inventory",
    "evaluate_placement",
    "inventory_json_schema",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
