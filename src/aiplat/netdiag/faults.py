"""Faults as data: what each kind changes in the lab and how to undo it (pure, no I/O).

===============  ========================================================================
kind             what it does (``--node N --segment S``)
===============  ========================================================================
loss             drop a share of packets arriving on N's S interface (iptables
                 ``statistic --mode random`` in N's namespace)
rate             cap N's S port to a rate in both directions (tbf, replacing the lab's
                 emulated NIC rate)
mtu              set N's S interface MTU below the segment's (one side of a mismatch)
asym             policy routing in N: replies from N's S address to the S subnet leave over
                 another segment (the request path and the reply path differ)
down             take N's S link down (host end of the veth)
slow-storage     a rate cap on the storage node's storage port (defaults: store, storage)
noisy            a noisy neighbour: N floods S with a bounded iperf3 download (4 streams)
                 from the storage node (or another node on S)
===============  ========================================================================

No kind uses netem (not available on these kernels). Every fault affects only objects the
lab created: commands run inside lab namespaces or on the host ends of lab veths.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from aiplat.netdiag.model import (
    STORE,
    Argv,
    LabInputError,
    LabPlan,
    ns_argv,
    shape_argvs,
)

KINDS = ("loss", "rate", "mtu", "asym", "down", "slow-storage", "noisy")
ASYM_TABLE = "100"
NOISY_SECONDS = 120


class FaultPlan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    kind: str
    node: str
    segment: str
    detail: str
    apply: list[Argv]
    undo: list[Argv]
    spawn: Argv | None = Field(default=None, description="a bounded process (noisy)")
    spawn_ns: str | None = None


def plan_fault(plan: LabPlan, kind: str, node: str | None = None, segment: str | None = None,  # noqa: C901 (ratchet)
               *, value: float | None = None, seconds: int = NOISY_SECONDS) -> FaultPlan:
    """The commands that inject (and remove) one fault.

    >>> from aiplat.netdiag.model import plan_lab
    >>> f = plan_fault(plan_lab(nodes=2), "loss", "node-2", "storage", value=20)
    >>> f.id, " ".join(f.apply[0][4:13])
    ('loss@node-2/storage', 'iptables -A INPUT -i storage -m statistic --mode random')
    """
    if kind not in KINDS:
        raise LabInputError(f"unknown fault kind {kind!r} (kinds: {', '.join(KINDS)})")
    if kind == "slow-storage":
        node = node or STORE
        segment = segment or plan.storage_segment.name
    if node is None or segment is None:
        raise LabInputError(f"fault {kind} needs --node and --segment")
    n = plan.node(node)
    s = plan.segment(segment)
    if s.name not in n.addrs:
        raise LabInputError(f"node {n.name} has no port on segment {s.name}")
    fid = f"{kind}@{n.name}/{s.name}"
    ns = ns_argv(n.ns)
    iface = s.iface
    if kind == "loss":
        pct = value if value is not None else 20.0
        if not 0 < pct < 100:
            raise LabInputError(f"loss must be between 0 and 100 %, not {pct}")
        rule = ["INPUT", "-i", iface, "-m", "statistic", "--mode", "random",
                "--probability", f"{pct / 100:.4g}", "-j", "DROP",
                "-m", "comment", "--comment", f"aiplat-lab {fid}"]
        return FaultPlan(id=fid, kind=kind, node=n.name, segment=s.name,
                         detail=f"drop {pct:g} % of packets arriving on {n.name} {s.name}",
                         apply=[[*ns, "iptables", "-A", *rule]],
                         undo=[[*ns, "iptables", "-D", *rule]])
    if kind in ("rate", "slow-storage"):
        mbit = int(value if value is not None else 100)
        if not 1 <= mbit < plan.link_mbit:
            raise LabInputError(f"a rate cap must be 1..{plan.link_mbit - 1} Mbit/s "
                                f"(below the lab's {plan.link_mbit} Mbit/s), not {mbit}")
        return FaultPlan(id=fid, kind=kind, node=n.name, segment=s.name,
                         detail=f"{n.name} {s.name} port capped at {mbit} Mbit/s (tbf)",
                         apply=shape_argvs(plan, n, s, mbit),
                         undo=shape_argvs(plan, n, s, plan.link_mbit))
    if kind == "mtu":
        mtu = int(value if value is not None else (1500 if s.mtu > 1500 else 1400))
        if not 1280 <= mtu < s.mtu:
            raise LabInputError(f"mtu must be 1280..{s.mtu - 1} (below the segment's {s.mtu})")
        link = ["ip", "-n", n.ns, "link", "set", iface, "mtu"]
        return FaultPlan(id=fid, kind=kind, node=n.name, segment=s.name,
                         detail=f"{n.name} {s.name} MTU {mtu}, segment {s.mtu}",
                         apply=[[*link, str(mtu)]], undo=[[*link, str(s.mtu)]])
    if kind == "asym":
        others = [o for o in plan.segments if o.name in n.addrs and o.name != s.name]
        if not others:
            raise LabInputError(f"asym needs a second segment on {n.name}")
        via = next((o for o in others if o.purpose == "management"), others[0])
        src = str(n.addrs[s.name])
        rt = ["ip", "-n", n.ns, "route"]
        rule = ["ip", "-n", n.ns, "rule"]
        return FaultPlan(
            id=fid, kind=kind, node=n.name, segment=s.name,
            detail=f"{n.name} answers {s.name} traffic over {via.name} (policy routing)",
            apply=[[*rt, "add", str(s.cidr), "dev", via.iface, "table", ASYM_TABLE],
                   [*rule, "add", "from", src, "to", str(s.cidr), "lookup", ASYM_TABLE,
                    "pref", ASYM_TABLE]],
            undo=[[*rule, "del", "from", src, "to", str(s.cidr), "lookup", ASYM_TABLE,
                   "pref", ASYM_TABLE],
                  [*rt, "del", str(s.cidr), "dev", via.iface, "table", ASYM_TABLE]])
    if kind == "down":
        port = plan.host_port(n, s)
        return FaultPlan(id=fid, kind=kind, node=n.name, segment=s.name,
                         detail=f"{n.name} {s.name} link down",
                         apply=[["ip", "link", "set", port, "down"]],
                         undo=[["ip", "link", "set", port, "up"]])
    # noisy
    peers = [p for p in plan.on(s) if p.name != n.name]
    if not peers:
        raise LabInputError(f"noisy needs another node on {s.name}")
    target = next((p for p in peers if p.role == "storage"), peers[0])
    if not 1 <= seconds <= 600:
        raise LabInputError(f"a noisy neighbour runs 1..600 s, not {seconds}")
    return FaultPlan(
        id=fid, kind=kind, node=n.name, segment=s.name,
        detail=f"{n.name} floods {s.name} from {target.name} (iperf3 -R -P 4, {seconds} s)",
        apply=[], undo=[],
        spawn=["iperf3", "-c", str(target.addrs[s.name]), "-R", "-P", "4", "-t", str(seconds),
               "--connect-timeout", "2000"],
        spawn_ns=n.ns)

