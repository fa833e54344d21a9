"""The lab as data: segments, nodes, addresses and the commands that build it (pure, no I/O).

A lab is one Linux bridge per network segment and one network namespace per node; every node
port is a veth pair whose host end is enslaved to the segment's bridge and whose node end is
named after the segment inside the namespace (``storage``, ``mgmt``...), so metric labels
such as node-exporter's ``device`` read as segment names. Each port is shaped with tbf at the
lab's emulated NIC rate in both directions (node egress on the node end, node ingress on the
host end), which makes rates reproducible on a small machine and gives faults something to
cap below.

Every host-visible name starts with the lab prefix (default ``alab``): bridges
``alab-<segment>``, host veth ends ``alab<node>s<segment>``, namespaces ``alab-<node>``.
:func:`up_steps` returns the commands that build the lab as argv lists, each with the object
it creates, so the runner can log the object to the state file *before* creating it (a crash
mid-way still leaves a complete list for ``down``) and ``--dry-run`` can print them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from ipaddress import IPv4Address, IPv4Network
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aiplat.errors import AiplatError, InputError

Argv = list[str]

DEFAULT_PREFIX = "alab"
AUTO_POOL = IPv4Network("10.247.0.0/16")
"""Segments without a CIDR in the spec get ``10.247.<n>.0/24``."""

STORE = "store"
PROM_PORT = 9490
EXPORTER_PORT = 9100
REGISTRY_PORT = 5000

_IFACE_RE = re.compile(r"^[a-z][a-z0-9-]{0,14}$")
_PREFIX_RE = re.compile(r"^[a-z][a-z0-9]{1,5}$")


class LabError(AiplatError):
    """The lab could not be built, changed or queried (exit 1)."""


class LabInputError(InputError):
    """A lab request that cannot be satisfied as given (exit 2)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LabSegment(_Model):
    name: str
    purpose: str
    index: int
    cidr: IPv4Network
    mtu: int
    vlan: int | None = None
    rate_gbps: float | None = Field(default=None, description="the spec's rate (production)")
    bridge: str
    iface: str = Field(description="interface name inside every node namespace")

    @property
    def port_suffix(self) -> str:
        return f"s{self.index}"


class LabNode(_Model):
    name: str
    index: int
    role: Literal["compute", "storage"]
    ns: str
    addrs: dict[str, IPv4Address] = Field(description="segment name -> address")


class LabPlan(_Model):
    prefix: str
    segments: list[LabSegment]
    nodes: list[LabNode]
    link_mbit: int = Field(description="emulated NIC rate of every node port")
    host_addr: IPv4Address = Field(description="the host's address on the management bridge")
    prom_port: int = PROM_PORT

    # ------------------------------------------------------------------ look-ups
    def segment(self, name: str) -> LabSegment:
        for s in self.segments:
            if name in (s.name, s.purpose):
                return s
        known = ", ".join(s.name for s in self.segments)
        raise LabInputError(f"no segment {name!r} in the lab (segments: {known})")

    def node(self, name: str) -> LabNode:
        for n in self.nodes:
            if n.name == name:
                return n
        known = ", ".join(n.name for n in self.nodes)
        raise LabInputError(f"no node {name!r} in the lab (nodes: {known})")

    @property
    def management(self) -> LabSegment:
        return next(s for s in self.segments if s.purpose == "management")

    @property
    def storage_segment(self) -> LabSegment:
        """The segment model pulls use: the storage segment, else management."""
        return next((s for s in self.segments if s.purpose == "storage"), self.management)

    @property
    def store(self) -> LabNode:
        return next(n for n in self.nodes if n.role == "storage")

    @property
    def compute(self) -> list[LabNode]:
        return [n for n in self.nodes if n.role == "compute"]

    def host_port(self, node: LabNode, seg: LabSegment) -> str:
        """Host end of the node's veth on the segment (≤ 15 characters)."""
        return f"{self.prefix}{node.index}{seg.port_suffix}"

    def node_port(self, seg: LabSegment) -> str:
        """The veth end inside the namespace: the segment interface, or its VLAN trunk."""
        return f"t{seg.index}" if seg.vlan else seg.iface

    def on(self, seg: LabSegment) -> list[LabNode]:
        return [n for n in self.nodes if seg.name in n.addrs]

    def segment_of_iface(self, iface: str) -> LabSegment | None:
        return next((s for s in self.segments if s.iface == iface), None)

    @property
    def prom_url(self) -> str:
        return f"http://127.0.0.1:{self.prom_port}"

    @property
    def registry_url(self) -> str:
        return f"http://{self.store.addrs[self.storage_segment.name]}:{REGISTRY_PORT}"

    def shell_env(self) -> dict[str, str]:
        """The lab as shell variables (``aiplat lab status -o env``; the lab course's steps
        use them): its prefix, the first compute node's namespace, the store's address."""
        return {"LAB": self.prefix, "LAB_NODE": self.compute[0].ns,
                "LAB_STORE": self.registry_url.removeprefix("http://")}


class SegmentInput(_Model):
    """What the lab needs from a spec segment (``aiplat.spec.models.SegmentSpec``)."""

    name: str
    purpose: str
    mtu: int = 1500
    cidr: IPv4Network | None = None
    vlan: int | None = None
    rate_gbps: float | None = None


DEFAULT_SEGMENTS: tuple[SegmentInput, ...] = (
    SegmentInput(name="mgmt", purpose="management", mtu=1500),
    SegmentInput(name="storage", purpose="storage", mtu=9000),
    SegmentInput(name="service", purpose="service", mtu=1500),
    SegmentInput(name="hpc", purpose="hpc", mtu=9000),
)


def _iface_name(name: str, index: int) -> str:
    return name if _IFACE_RE.match(name) and not name.startswith("t") else f"seg{index}"


def _bridge_name(prefix: str, name: str, index: int) -> str:
    full = f"{prefix}-{name}"
    return full if len(full) <= 15 and _IFACE_RE.match(full) else f"{prefix}-br{index}"


def plan_lab(
    segments: Sequence[SegmentInput] = DEFAULT_SEGMENTS,
    *,
    nodes: int = 3,
    prefix: str = DEFAULT_PREFIX,
    link_mbit: int = 1000,
    only: Iterable[str] = (),
    prom_port: int = PROM_PORT,
) -> LabPlan:
    """Lay out a lab of ``nodes`` compute nodes plus one storage node over ``segments``.

    >>> p = plan_lab(nodes=2)
    >>> [n.name for n in p.nodes], p.store.addrs["storage"], p.host_addr
    (['store', 'node-1', 'node-2'], IPv4Address('10.247.1.2'), IPv4Address('10.247.0.1'))
    """
    if not _PREFIX_RE.match(prefix):
        raise LabInputError(
            f"lab prefix {prefix!r} is not 2-6 lower-case letters/digits starting with a letter"
        )
    if not 1 <= nodes <= 8:
        raise LabInputError(f"a lab has 1 to 8 compute nodes, not {nodes}")
    if not 10 <= link_mbit <= 10000:
        raise LabInputError(f"link rate {link_mbit} Mbit/s is outside 10..10000")
    wanted = set(only)
    chosen = [s for s in segments if not wanted or s.name in wanted or s.purpose == "management"]
    unknown = wanted - {s.name for s in segments}
    if unknown:
        raise LabInputError(f"segments {sorted(unknown)} are not in the spec's network section")
    if not any(s.purpose == "management" for s in chosen):
        raise LabInputError(
            "the lab needs a management segment (Prometheus scrapes nodes over it)",
        )
    segs: list[LabSegment] = []
    for i, s in enumerate(chosen):
        cidr = s.cidr or IPv4Network(f"{AUTO_POOL.network_address + (i << 8)}/24")
        if cidr.num_addresses < 32:
            raise LabInputError(
                f"segment {s.name}: {cidr} is too small for a lab (use /27 or more)")
        for earlier in segs:
            if cidr.overlaps(earlier.cidr):
                raise LabInputError(f"segments {earlier.name} and {s.name} overlap ({cidr})")
        segs.append(LabSegment(
            name=s.name, purpose=s.purpose, index=i, cidr=cidr, mtu=s.mtu, vlan=s.vlan,
            rate_gbps=s.rate_gbps, bridge=_bridge_name(prefix, s.name, i),
            iface=_iface_name(s.name, i),
        ))
    storage = next((s for s in segs if s.purpose == "storage"), None)
    store_segs = [s for s in segs if s.purpose == "management" or s is storage]
    lab_nodes = [LabNode(
        name=STORE, index=0, role="storage", ns=f"{prefix}-{STORE}",
        addrs={s.name: s.cidr.network_address + 2 for s in store_segs},
    )]
    for i in range(1, nodes + 1):
        lab_nodes.append(LabNode(
            name=f"node-{i}", index=i, role="compute", ns=f"{prefix}-node-{i}",
            addrs={s.name: s.cidr.network_address + 10 + i for s in segs},
        ))
    mgmt = next(s for s in segs if s.purpose == "management")
    if not 1024 <= prom_port <= 65535:
        raise LabInputError(f"Prometheus port {prom_port} is outside 1024..65535")
    return LabPlan(prefix=prefix, segments=segs, nodes=lab_nodes, link_mbit=link_mbit,
                   host_addr=mgmt.cidr.network_address + 1, prom_port=prom_port)


def route_overlaps(plan: LabPlan, routes: Iterable[IPv4Network]) -> list[str]:
    """Lab subnets that overlap a route the host already has (default routes excluded).

    >>> route_overlaps(plan_lab(), [IPv4Network("10.247.1.0/24"), IPv4Network("0.0.0.0/0")])
    ['storage 10.247.1.0/24 overlaps host route 10.247.1.0/24']
    """
    out = []
    for seg in plan.segments:
        for r in routes:
            if r.prefixlen == 0:
                continue
            if seg.cidr.overlaps(r):
                out.append(f"{seg.name} {seg.cidr} overlaps host route {r}")
    return out


# ---------------------------------------------------------------------- commands as data


class Step(_Model):
    """One command and the object it creates (logged to the state file before it runs)."""

    argv: Argv
    creates: tuple[str, str] | None = Field(
        default=None, description="(kind, name): ('netns', ns) or ('link', host link)"
    )


def tbf_argv(prefix_argv: Argv, dev: str, mbit: int) -> Argv:
    """``tc qdisc replace ... root tbf`` for ``mbit``: burst covers 4 ms (at least 64 KiB, so
    jumbo frames and GSO segments pass), and at most 20 ms may queue."""
    burst = max(65536, mbit * 1_000_000 // 8 * 4 // 1000)
    return [*prefix_argv, "tc", "qdisc", "replace", "dev", dev, "root", "tbf",
            "rate", f"{mbit}mbit", "burst", str(burst), "latency", "20ms"]


def ns_argv(ns: str) -> Argv:
    return ["ip", "netns", "exec", ns]


def up_steps(plan: LabPlan, forward_rules: bool) -> list[Step]:
    """Every command that builds the network of ``plan``, in order."""
    steps: list[Step] = []
    for seg in plan.segments:
        steps.append(Step(argv=["ip", "link", "add", seg.bridge, "type", "bridge"],
                          creates=("link", seg.bridge)))
        steps.append(Step(argv=["ip", "link", "set", seg.bridge, "mtu", str(seg.mtu), "up"]))
        if forward_rules:
            steps.append(Step(argv=["iptables", "-I", "FORWARD", *forward_rule(plan, seg)],
                              creates=("iptables", seg.bridge)))
    for node in plan.nodes:
        steps.append(Step(argv=["ip", "netns", "add", node.ns], creates=("netns", node.ns)))
        steps.append(Step(argv=["ip", "-n", node.ns, "link", "set", "lo", "up"]))
        steps.append(Step(argv=[*ns_argv(node.ns), "sysctl", "-q", "-w",
                                "net.ipv4.conf.all.rp_filter=2",
                                "net.ipv4.conf.default.rp_filter=2",
                                "net.ipv6.conf.all.disable_ipv6=1",
                                "net.ipv6.conf.default.disable_ipv6=1"]))
        for seg in plan.segments:
            if seg.name not in node.addrs:
                continue
            host = plan.host_port(node, seg)
            port = plan.node_port(seg)
            mtu = str(seg.mtu)
            steps.append(Step(argv=["ip", "link", "add", host, "mtu", mtu, "type", "veth",
                                    "peer", "name", port, "mtu", mtu, "netns", node.ns],
                              creates=("link", host)))
            steps.append(Step(argv=["ip", "link", "set", host, "master", seg.bridge, "up"]))
            if seg.vlan:
                steps.append(Step(argv=["ip", "-n", node.ns, "link", "add", "link", port,
                                        "name", seg.iface, "type", "vlan", "id",
                                        str(seg.vlan)]))
                steps.append(Step(argv=["ip", "-n", node.ns, "link", "set", port, "up"]))
            steps.append(Step(argv=["ip", "-n", node.ns, "addr", "add",
                                    f"{node.addrs[seg.name]}/{seg.cidr.prefixlen}",
                                    "dev", seg.iface]))
            steps.append(Step(argv=["ip", "-n", node.ns, "link", "set", seg.iface, "up"]))
            steps.extend(Step(argv=a) for a in shape_argvs(plan, node, seg, plan.link_mbit))
    mgmt = plan.management
    steps.append(Step(argv=["ip", "addr", "add", f"{plan.host_addr}/{mgmt.cidr.prefixlen}",
                            "dev", mgmt.bridge]))
    return steps


def shape_argvs(plan: LabPlan, node: LabNode, seg: LabSegment, mbit: int) -> list[Argv]:
    """Shape the node's port on ``seg`` to ``mbit`` in both directions."""
    return [tbf_argv(ns_argv(node.ns), plan.node_port(seg), mbit),
            tbf_argv([], plan.host_port(node, seg), mbit)]


def forward_rule(plan: LabPlan, seg: LabSegment) -> Argv:
    """An ACCEPT for traffic bridged inside one lab bridge (needed when br_netfilter passes
    bridged frames through a FORWARD chain whose policy or rules would drop them)."""
    return ["-i", seg.bridge, "-o", seg.bridge, "-j", "ACCEPT",
            "-m", "comment", "--comment", f"aiplat-lab {plan.prefix}"]
