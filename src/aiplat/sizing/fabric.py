"""Network fabric sizing: a rail-optimised leaf/spine(/core) compute fabric, and the simpler
leaf/spine fabrics of storage, in-band and out-of-band management (pure).

Design. A GPU node has one fabric NIC per GPU ("rails"); NIC *i* of every node in a scalable
unit (SU) goes to the leaf switches of rail *i*, so a rail's traffic inside an SU is one hop.
Each leaf gives ``down`` ports to nodes and ``up`` ports to the spines; non-blocking is
``down == up``, an oversubscription *o* gives ``down = o x up``. The rules:

- Leaves. The fabric is built for whole SUs (NVIDIA: "the fabric should be designed to support
  the full SU, including leaf switches and leaf-spine cables, and leave the portion of the
  fabric unused where these nodes would be located"): per SU and rail, ceil(SU nodes / down)
  leaves; a fabric whose ports all fit one switch is that one switch.
- Spines, two tiers. Spines join the leaves of a plane: one plane of all leaves ("shared", the
  DGX H100/B200 SuperPOD) or one plane per rail ("rail": rail *i*'s leaves only meet rail
  *i*'s spines, the DGX B300 SuperPOD). A plane needs ceil(its leaves x up / radix) spines, and
  every leaf spreads its ``up`` links evenly over them, so the count is rounded up to the next
  divisor of ``up``: this is where NVIDIA pre-provisions spines (3 H100 SUs: 24 leaves x 32
  uplinks = 768 links need 12 spines; 32 is not divisible by 12, so 16 are installed, the 4-SU
  set). Two tiers hold while a plane has no more leaves than a spine has ports.
- Three tiers. Past that, each SU is a pod whose spines give half their ports to the pod's
  leaves and half to the cores (same divisor rule); cores = spine uplinks / radix.
- Cables: node-leaf = nodes x rails, leaf-spine = leaves x up, spine-core = spines x (radix/2),
  counted for every leaf port of the full SUs as NVIDIA does; a fabric manager's ports (UFM
  appliances on InfiniBand) take spare leaf ports.
- Transceivers: optical links need one transceiver per end; a switch cage is a twin-port OSFP
  carrying two links (Quantum-2 QM97xx: 32 OSFP cages = 64 NDR ports, "Class 8 (17W) OSFP112
  transceivers"); a node's NIC end is counted per port. Length classes are a stated rule:
  node-leaf links stay in the row (multimode, <= 50 m: MMA4Z00-NS), switch-to-switch links
  cross rows (single-mode, <= 100 m: MMS4X00-NS). A fabric of one switch in the rack row uses
  the same node-leaf optics.

Sources (figures each test reproduces, see ``tests/unit/test_sizing_fabric_superpod.py``):
NVIDIA DGX SuperPOD reference architectures, H100 (network fabrics, Table 4 "Compute fabric
component count"), B200 ("Larger SuperPOD component counts"), B300 and B300 XDR (Table 3).
"""

from __future__ import annotations

import math
from typing import Literal

from aiplat.errors import InputError
from aiplat.sizing.result import Result, require_positive

Planes = Literal["shared", "rail"]

TWIN_PORT_LINKS = 2
"""Links per switch-side twin-port OSFP transceiver (QM97xx: 32 cages, 64 ports)."""
SWITCH_TRANSCEIVER_W = 17.0
"""Most a QM97xx OSFP cage powers (Class 8, 17 W): the switch-side optics' power per cage."""
NODE_LINK_CLASS = "multimode <= 50 m (in the row)"
SWITCH_LINK_CLASS = "single-mode <= 100 m (between rows)"


class CableGroup(Result):
    """Cables of one kind between two tiers, with the transceivers at their ends."""

    between: str
    cables: int
    length_class: str
    transceivers: int
    """Both ends: switch-side twin-port cages (two links each) plus node-side NIC ports."""


class ComputeFabric(Result):
    """A rail-optimised compute fabric: switches per tier, ports, cables and transceivers."""

    tiers: int
    scalable_units: int
    su_nodes: int
    nodes: int
    rails: int
    planes: Planes
    radix: int
    leaf_down: int
    leaf_up: int
    leaves: int
    spines: int
    cores: int
    switches: int
    ports: int
    ports_used: int
    ports_spare: int
    manager_ports: int
    cables: list[CableGroup]
    transceivers: int
    spines_minimum: int
    """Spines the links alone need; ``spines`` above it is NVIDIA's pre-provisioning."""

    @property
    def node_leaf_cables(self) -> int:
        return self.cables[0].cables

    def cables_between(self, between: str) -> int:
        return sum(c.cables for c in self.cables if c.between == between)


def _divisor_at_least(n: int, need: int) -> int:
    """The smallest divisor of ``n`` that is at least ``need`` (``n`` when none is smaller)."""
    return next((d for d in range(max(need, 1), n + 1) if n % d == 0), n)


def leaf_ports(radix: int, oversubscription: float) -> tuple[int, int]:
    """A leaf's ports to nodes and to spines: down = oversubscription x up, down + up = radix."""
    up = math.floor(radix / (1 + oversubscription))
    return radix - up, up


def compute_fabric(
    *,
    nodes: int,
    rails: int,
    radix: int,
    oversubscription: float = 1.0,
    su_nodes: int | None = None,
    planes: Planes = "shared",
    manager_ports: int = 0,
) -> ComputeFabric:
    """Size a rail-optimised fat tree (one, two or three tiers) for ``nodes`` x ``rails`` NICs.

    ``su_nodes`` is the scalable unit (default: the nodes one leaf per rail serves);
    ``manager_ports`` the fabric manager's links (UFM appliances), placed on spare leaf ports.
    """
    if nodes < 1 or rails < 1:
        raise InputError(f"a compute fabric needs nodes and rails >= 1, got {nodes} and {rails}")
    if radix < 2:
        raise InputError(f"switch radix must be >= 2 ports, got {radix}")
    require_positive(oversubscription=oversubscription)
    if manager_ports < 0:
        raise InputError(f"manager_ports must be >= 0, got {manager_ports}")
    down, up = leaf_ports(radix, oversubscription)
    inputs: dict[str, float | int | str | bool | None] = {
        "nodes": nodes, "rails": rails, "radix": radix, "oversubscription": oversubscription,
        "su_nodes": su_nodes, "planes": planes, "manager_ports": manager_ports}
    endpoints = nodes * rails + manager_ports
    notes: list[str] = []
    if endpoints <= radix and su_nodes is None:
        node_cables = nodes * rails
        cables = [_group("node-leaf", node_cables, NODE_LINK_CLASS, node_cables)]
        return ComputeFabric(
            tiers=1, scalable_units=1, su_nodes=nodes, nodes=nodes, rails=rails, planes=planes,
            radix=radix, leaf_down=radix, leaf_up=0, leaves=1, spines=0, cores=0, switches=1,
            ports=radix, ports_used=endpoints, ports_spare=radix - endpoints,
            manager_ports=manager_ports, cables=cables,
            transceivers=sum(c.transceivers for c in cables), spines_minimum=0,
            formula="one switch holds every port: no leaf/spine tiers",
            inputs=inputs,
            notes=["a single switch is a single point of failure for every rail"])
    su = su_nodes or down
    if su < 1:
        raise InputError(f"scalable unit must hold >= 1 node, got {su}")
    if up < 1:
        raise InputError(f"oversubscription {oversubscription} leaves a {radix}-port leaf no "
                         "uplink (fix: lower it)")
    sus = math.ceil(nodes / su)
    leaves_su_rail = math.ceil(su / down)
    leaves_su = leaves_su_rail * rails
    leaves = sus * leaves_su
    n_planes = rails if planes == "rail" else 1
    if leaves_su % n_planes:
        raise InputError(f"{leaves_su} leaves per SU do not split into {n_planes} rail planes")
    plane_leaves = leaves // n_planes
    free_leaf_ports = leaves * down - nodes * rails
    if manager_ports > free_leaf_ports:
        raise InputError(f"the fabric manager's {manager_ports} ports find {free_leaf_ports} "
                         "free leaf ports (fix: leave a node's slot of an SU empty, as "
                         "NVIDIA does for UFM)")
    node_cables = nodes * rails + manager_ports
    leaf_spine = leaves * up
    if plane_leaves <= radix:
        tiers, cores, spine_core = 2, 0, 0
        need = math.ceil(plane_leaves * up / radix)
        per_plane = _divisor_at_least(up, need)
        spines, minimum = per_plane * n_planes, need * n_planes
        formula = ("leaves = SUs x rails x ceil(SU nodes / leaf down ports); spines per plane = "
                   "smallest divisor of the leaf's uplinks >= ceil(plane leaves x uplinks / "
                   "radix)")
    else:
        tiers = 3
        spine_down = radix // 2
        pod_leaves = leaves_su // n_planes
        need = math.ceil(pod_leaves * up / spine_down)
        per_pod = _divisor_at_least(up, need)
        spines, minimum = per_pod * sus * n_planes, need * sus * n_planes
        spine_core = spines * (radix - spine_down)
        cores = math.ceil(spine_core / radix)
        if sus > radix:
            raise InputError(f"{sus} SUs exceed what three tiers of {radix}-port switches "
                             "join (fix: larger switches or a fourth tier)")
        formula = ("three tiers: each SU a pod; pod spines = smallest divisor of the leaf's "
                   "uplinks >= ceil(pod leaves x uplinks / (radix / 2)); cores = spine "
                   "uplinks / radix")
    if spines > minimum:
        notes.append(f"{spines - minimum} spine(s) pre-provisioned so every leaf spreads its "
                     f"{up} uplinks evenly")
    cables = [_group("node-leaf", node_cables, NODE_LINK_CLASS, node_cables),
              _group("leaf-spine", leaf_spine, SWITCH_LINK_CLASS, 0)]
    if spine_core:
        cables.append(_group("spine-core", spine_core, SWITCH_LINK_CLASS, 0))
    switches = leaves + spines + cores
    ports_used = node_cables + 2 * leaf_spine + 2 * spine_core
    return ComputeFabric(
        tiers=tiers, scalable_units=sus, su_nodes=su, nodes=nodes, rails=rails, planes=planes,
        radix=radix, leaf_down=down, leaf_up=up, leaves=leaves, spines=spines, cores=cores,
        switches=switches, ports=switches * radix, ports_used=ports_used,
        ports_spare=switches * radix - ports_used, manager_ports=manager_ports, cables=cables,
        transceivers=sum(c.transceivers for c in cables), spines_minimum=minimum,
        formula=formula, inputs=inputs, notes=notes)


def _group(between: str, cables: int, length_class: str, node_ends: int) -> CableGroup:
    """Cables and their transceivers: twin-port cages at switch ends, one per node NIC port."""
    switch_ends = cables * 2 - node_ends
    return CableGroup(
        between=between, cables=cables, length_class=length_class,
        transceivers=math.ceil(switch_ends / TWIN_PORT_LINKS) + node_ends,
        formula="transceivers = ceil(switch ends / 2 links per twin-port OSFP) + node ends",
        inputs={"cables": cables, "node_ends": node_ends})


class SimpleFabric(Result):
    """A leaf (and spine) fabric for storage or management ports: switches, ports, uplinks."""

    name: str
    ports_needed: int
    radix: int
    leaf_down: int
    leaf_up: int
    leaves: int
    spines: int
    switches: int
    uplinks: int
    ports_spare: int


def simple_fabric(*, name: str, ports: int, radix: int, oversubscription: float = 1.0,
                  redundant: bool = True) -> SimpleFabric:
    """Leaves = ceil(ports / leaf down ports), in pairs when ``redundant`` (each node's two
    ports on two switches, an MLAG pair); past one leaf (one pair) spines join them:
    ceil(uplinks / radix), at least two when ``redundant``. Otherwise the leaves' uplinks go
    to the site."""
    if ports < 0:
        raise InputError(f"{name}: ports must be >= 0, got {ports}")
    if radix < 2:
        raise InputError(f"{name}: switch radix must be >= 2, got {radix}")
    require_positive(oversubscription=oversubscription)
    down, up = leaf_ports(radix, oversubscription)
    inputs: dict[str, float | int | str | bool | None] = {
        "name": name, "ports": ports, "radix": radix, "oversubscription": oversubscription,
        "redundant": redundant}
    if ports == 0:
        return SimpleFabric(name=name, ports_needed=0, radix=radix, leaf_down=down, leaf_up=up,
                            leaves=0, spines=0, switches=0, uplinks=0, ports_spare=0,
                            formula="no ports: no switch", inputs=inputs)
    group = 2 if redundant else 1
    leaves = math.ceil(ports / down / group) * group
    uplinks = leaves * up
    spines = 0 if leaves == group else max(math.ceil(uplinks / radix), group)
    switches = leaves + spines
    return SimpleFabric(
        name=name, ports_needed=ports, radix=radix, leaf_down=down, leaf_up=up, leaves=leaves,
        spines=spines, switches=switches, uplinks=uplinks,
        ports_spare=leaves * down - ports + (spines * radix - uplinks if spines else 0),
        formula="leaves = ceil(ports / leaf down ports), in MLAG pairs when redundant; spines "
                "= max(ceil(leaves x up / radix), 2 if redundant) past one leaf (pair)",
        inputs=inputs)
