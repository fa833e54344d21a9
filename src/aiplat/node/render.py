"""Text renderings of node results for the CLI (tables on stdout; JSON/YAML are model dumps).

Kept apart from the CLI so tests and the agent can render without click, and apart from the
pure evaluators so those never import rich.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from aiplat.findings import line
from aiplat.node.checks import CheckReport
from aiplat.node.inventory import DeviceKind, Inventory
from aiplat.node.matrix import MatrixReport
from aiplat.node.placement import Placement
from aiplat.text import shown, shown_all


def console() -> Console:
    # Piped output keeps whole lines: rich would wrap at 80 columns off a terminal. Free-text
    # lines soft-wrap (tables still fit the width), so commands and names in them are never split.
    # No markup: names come from the host or a recorded tree ("[/x]" would be a tag).
    return Console(highlight=False, markup=False, width=None if sys.stdout.isatty() else 200,
                   soft_wrap=True)


M = TypeVar("M", bound=BaseModel)

def printable(model: M) -> M:
    """``model`` with every text made terminal-safe (``shown``), for the tables; JSON and
    YAML escape control characters themselves."""
    return type(model).model_validate(shown_all(model.model_dump()))


def dump(data: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    # ASCII with escapes: a host's names may hold a bidi override, which YAML counts as
    # printable and would write raw (JSON escapes every non-ASCII character itself).
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=False)


def _gib(kib: int | None) -> str:
    return f"{kib / 1024 / 1024:,.0f} GiB" if kib else "?"


def inventory_table(inv: Inventory, placement: Placement) -> None:
    c = console()
    inv = printable(inv)
    h = inv.host
    cpu = h.cpu
    c.print(f"host {h.hostname or '?'} · kernel {h.kernel or '?'} · "
            f"{cpu.model if cpu else '?'} ({cpu.sockets if cpu else '?'} sockets, "
            f"{cpu.cores if cpu else '?'} cores, {cpu.threads if cpu else '?'} threads) · "
            f"memory {_gib(h.memory_kib)} · NUMA nodes {len(h.numa)} · IOMMU groups "
            f"{h.iommu_groups} · Secure Boot {inv.software.secure_boot}")
    sw = inv.software
    drv = f"{sw.nvidia_driver.version} ({sw.nvidia_driver.flavor})" if sw.nvidia_driver else "none"
    runtimes = ", ".join(f"{k} {v or '(version unknown)'}" for k, v in sw.runtimes.items())
    c.print(f"NVIDIA driver {drv} · CUDA {inv.driver_cuda_version or '?'} · runtimes: "
            f"{runtimes or 'none found'} · CDI specs: {', '.join(sw.cdi_specs) or 'none'}")
    t = Table(title="PCI devices of interest", title_justify="left")
    for col in ("address", "kind", "vendor", "device", "NUMA", "link", "driver", "bridges"):
        t.add_column(col)
    shown = [d for d in inv.pci if d.kind not in (DeviceKind.BRIDGE,)]
    for d in shown:
        ln = d.link
        link = (f"{ln.current_speed_gts or '?'}GT/s x{ln.current_width or '?'} "
                f"(max {ln.max_speed_gts or '?'}GT/s x{ln.max_width or '?'})") if ln else "-"
        t.add_row(d.address, d.kind.value, d.vendor_name or d.vendor, d.device,
                  "-" if d.numa_node is None else str(d.numa_node), link, d.driver or "-",
                  str(len(d.parents)))
    c.print(t)
    nt = Table(title="Network", title_justify="left")
    for col in ("name", "mtu", "speed", "pci", "driver", "bond/vlan"):
        nt.add_column(col)
    for n in inv.net:
        rel = (f"slave of {n.bond_master}" if n.bond_master else
               f"bond of {','.join(n.bond_slaves)}" if n.bond_slaves else
               f"vlan {n.vlan_id} on {n.vlan_parent}" if n.vlan_id else "")
        nt.add_row(n.name, str(n.mtu or "?"), f"{n.speed_mbps} Mb/s" if n.speed_mbps else "-",
                   n.pci_address or ("virtual" if n.virtual else "-"), n.driver or "-", rel)
    c.print(nt)
    if inv.ib_ports:
        it = Table(title="RDMA ports", title_justify="left")
        for col in ("device", "port", "state", "phys", "rate", "link layer", "pci"):
            it.add_column(col)
        for p in inv.ib_ports:
            it.add_row(p.device, str(p.port), p.state or "?", p.phys_state or "?", p.rate or "?",
                       p.link_layer or "?", p.pci_address or "-")
        c.print(it)
    placement_table(placement)
    for w in inv.warnings:
        c.print(f"warning: {w}")


def placement_table(p: Placement) -> None:
    c = console()
    p = printable(p)
    if p.gpus:
        t = Table(title="GPU placement", title_justify="left")
        for col in ("GPU", "address", "NUMA", "nearest NIC", "path", "cpuset"):
            t.add_column(col)
        for g in p.gpus:
            t.add_row(str(g.index), g.address, "-" if g.numa_node is None else str(g.numa_node),
                      ",".join(n.name for n in g.nearest_nics) or "-", g.best_path or "-",
                      g.cpuset or "-")
        c.print(t)
    r = p.recommendation
    c.print(f"kubelet: topologyManagerPolicy={r.topology_manager_policy} "
            f"topologyManagerScope={r.topology_manager_scope} cpuManagerPolicy="
            f"{r.cpu_manager_policy} reservedSystemCPUs={r.reserved_system_cpus or '-'}"
            + (f" · NCCL_IB_HCA={r.nccl_ib_hca}" if r.nccl_ib_hca else ""))
    for f in p.findings:
        c.print(line(f))


def check_table(report: CheckReport, matrix: MatrixReport | None, extra: list[str]) -> None:
    c = console()
    report = printable(report)
    matrix = printable(matrix) if matrix is not None else None
    extra = [shown(line) for line in extra]
    t = Table(title=f"Node checks — {report.node or '?'}"
              + (f" (pool {report.pool})" if report.pool else ""), title_justify="left")
    for col in ("check", "status", "subject", "observed", "expected", "remediation"):
        t.add_column(col)
    for r in report.results:
        t.add_row(r.name, r.status, r.subject, r.observed, r.expected,
                  r.remediation if r.status in ("warn", "fail") else "")
    c.print(t)
    if matrix is not None:
        if matrix.matched:
            entry = next(e for e in matrix.entries if e.name == matrix.matched)
            unseen = (f" (not observable on the node: {', '.join(entry.unobserved)}; pass "
                      "--observed KEY=VALUE)") if entry.unobserved else ""
            c.print(f"matrix: matches approved entry '{matrix.matched}'{unseen}")
        elif not matrix.entries:
            c.print("matrix: the spec approves no version combination (versions.approved)")
        else:
            entry = next(e for e in matrix.entries if e.name == matrix.closest)
            diffs = "; ".join(f"{d.key} {d.observed or 'missing'} (approved {d.expected})"
                              for d in entry.differences)
            c.print(f"matrix: no approved entry matches; closest '{entry.name}' differs in: "
                    f"{diffs}")
        for f in matrix.facts:
            c.print(line(f))
    for text in extra:
        c.print(text)
    c.print(f"overall: {report.status}")
