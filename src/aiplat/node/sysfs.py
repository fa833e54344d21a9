"""Readers for sysfs: PCI functions and their switch tree, network interfaces, IB ports.

Every reader takes ``root`` (``/`` on a live host, a fake tree in tests) and only reads
files under it; symlinks are resolved inside the tree, so fake trees built with relative
links behave like the real ``/sys``. A missing or unreadable attribute becomes ``None``
(sysfs attributes come and go with kernel versions and drivers), never an exception.

The PCIe tree: ``/sys/bus/pci/devices/<addr>`` links to
``/sys/devices/pci0000:00/<root port>/<switch up>/<switch down>/<addr>``; the PCI addresses
along that path are the bridges above the device, and ``pci0000:00`` is its host bridge.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from aiplat.node.inventory import DeviceKind, IbPort, NetInterface, PciDevice, PciLink
from aiplat.node.pciaddr import VENDORS, acs_control, classify, normalise, parse_link_speed

_PCI_COMPONENT = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def under(root: str | Path, path: str) -> Path:
    return Path(root) / path.lstrip("/")


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text, 0) if text.startswith("0x") else int(text)
    except ValueError:
        return None


def link_name(path: Path) -> str | None:
    """Basename of a symlink's target (``driver`` -> ``nvidia``), None when absent."""
    try:
        return os.path.basename(os.readlink(path))
    except OSError:
        return None


def _pci_chain(real: Path) -> tuple[str | None, list[str]]:
    """Host bridge and PCI addresses on the resolved sysfs path, device last."""
    host = None
    chain: list[str] = []
    for part in real.parts:
        if part.startswith("pci") and ":" in part and host is None:
            host = part
        elif _PCI_COMPONENT.match(part):
            chain.append(normalise(part))
    return host, chain


def read_pci(root: str | Path) -> list[PciDevice]:
    base = under(root, "/sys/bus/pci/devices")
    if not base.is_dir():
        return []
    devices = []
    for entry in sorted(base.iterdir()):
        d = entry.resolve()
        cls = read_text(d / "class")
        vendor = read_text(d / "vendor")
        if not cls or not vendor:
            continue
        numa = read_int(d / "numa_node")
        host, chain = _pci_chain(d)
        group = link_name(d / "iommu_group")
        speed_cur = parse_link_speed(read_text(d / "current_link_speed"))
        speed_max = parse_link_speed(read_text(d / "max_link_speed"))
        width_cur = read_int(d / "current_link_width")
        width_max = read_int(d / "max_link_width")
        link = None
        if any(v is not None for v in (speed_cur, speed_max, width_cur, width_max)):
            link = PciLink(current_speed_gts=speed_cur, max_speed_gts=speed_max,
                           current_width=width_cur or None, max_width=width_max or None)
        vendor = vendor.lower()
        address = normalise(entry.name)
        kind = classify(cls, vendor)
        acs = None
        if kind is DeviceKind.BRIDGE:
            try:
                acs = acs_control((d / "config").read_bytes())
            except OSError:
                acs = None
        devices.append(PciDevice(
            address=address,
            class_code=cls.lower(),
            kind=kind,
            vendor=vendor,
            vendor_name=VENDORS.get(vendor),
            device=(read_text(d / "device") or "").lower(),
            subsystem_vendor=read_text(d / "subsystem_vendor"),
            subsystem_device=read_text(d / "subsystem_device"),
            numa_node=None if numa is None or numa < 0 else numa,
            local_cpulist=read_text(d / "local_cpulist"),
            link=link,
            driver=link_name(d / "driver"),
            iommu_group=int(group) if group and group.isdigit() else None,
            host_bridge=host,
            acs_control=acs,
            parents=[a for a in chain if a != address],
        ))
    return devices


def _pci_of(device_link: Path) -> str | None:
    """The PCI function a class device belongs to (walks up: virtio nets sit below it)."""
    try:
        real = device_link.resolve(strict=True)
    except OSError:
        return None
    _, chain = _pci_chain(real)
    return chain[-1] if chain else None


def read_net(root: str | Path) -> list[NetInterface]:
    base = under(root, "/sys/class/net")
    if not base.is_dir():
        return []
    out = []
    for entry in sorted(base.iterdir()):
        if not entry.is_dir():
            continue
        name = entry.name
        d = entry.resolve()
        speed = read_int(d / "speed")
        master = link_name(d / "master")
        slaves_text = read_text(d / "bonding" / "slaves")
        vlan_parent, vlan_id = _vlan(root, name)
        has_device = (d / "device").exists()
        out.append(NetInterface(
            name=name,
            mtu=read_int(d / "mtu"),
            speed_mbps=speed if speed is not None and speed > 0 else None,
            operstate=read_text(d / "operstate"),
            driver=link_name(d / "device" / "driver") if has_device else None,
            pci_address=_pci_of(d / "device") if has_device else None,
            virtual="/devices/virtual/" in str(d) or not has_device,
            bond_master=master if master and (d / "bonding_slave").exists() else None,
            bond_slaves=slaves_text.split() if slaves_text else [],
            vlan_parent=vlan_parent,
            vlan_id=vlan_id,
        ))
    return out


def _vlan(root: str | Path, name: str) -> tuple[str | None, int | None]:
    """VLAN parent and id from /proc/net/vlan/<name> (``Device: eth0``, ``VID: 100``)."""
    text = read_text(under(root, f"/proc/net/vlan/{name}"))
    if not text:
        return None, None
    vid = re.search(r"VID:\s*(\d+)", text)
    dev = re.search(r"Device:\s*(\S+)", text)
    return (dev.group(1) if dev else None), (int(vid.group(1)) if vid else None)


def _after_colon(text: str | None) -> str | None:
    """``4: ACTIVE`` -> ``ACTIVE``; ``5: LinkUp`` -> ``LinkUp``."""
    if text is None:
        return None
    return text.split(":", 1)[1].strip() if ":" in text else text.strip()


def parse_ib_rate(text: str | None) -> float | None:
    """``400 Gb/sec (4X NDR)`` -> 400.0; ``10 Gb/sec (4X SDR)`` -> 10.0."""
    if not text:
        return None
    m = re.match(r"^\s*([0-9.]+)\s*Gb/sec", text)
    return float(m.group(1)) if m else None


def read_ib(root: str | Path, net: list[NetInterface] | None = None) -> list[IbPort]:
    base = under(root, "/sys/class/infiniband")
    if not base.is_dir():
        return []
    net = net or []
    out = []
    for hca in sorted(base.iterdir()):
        d = hca.resolve()
        pci = _pci_of(d / "device")
        netdevs = sorted(n.name for n in net if pci and n.pci_address == pci)
        ports = d / "ports"
        if not ports.is_dir():
            continue
        for port in sorted(ports.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else 0):
            rate = read_text(port / "rate")
            out.append(IbPort(
                device=hca.name,
                port=int(port.name) if port.name.isdigit() else 0,
                state=_after_colon(read_text(port / "state")),
                phys_state=_after_colon(read_text(port / "phys_state")),
                rate_gbps=parse_ib_rate(rate),
                rate=rate,
                link_layer=read_text(port / "link_layer"),
                pci_address=pci,
                netdevs=netdevs,
            ))
    return out


def pci_kinds(devices: list[PciDevice]) -> dict[DeviceKind, int]:
    counts: dict[DeviceKind, int] = {}
    for dev in devices:
        counts[dev.kind] = counts.get(dev.kind, 0) + 1
    return counts
