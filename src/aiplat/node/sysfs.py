"""Readers for sysfs: PCI functions and their switch tree, network interfaces, IB ports.

Every reader takes ``root`` (``/`` on a live host, a fake or recorded tree, or the
``Tree`` collecting what was refused) and reads through ``aiplat.node.tree``: symlinks are
resolved inside the tree, so trees with relative links behave like the real ``/sys``, and a
link out of it, a special file or an oversized one is refused with a warning. A missing or
unreadable attribute becomes ``None`` (sysfs attributes come and go with kernel versions and
drivers), never an exception.

The PCIe tree: ``/sys/bus/pci/devices/<addr>`` links to
``/sys/devices/pci0000:00/<root port>/<switch up>/<switch down>/<addr>``; the PCI addresses
along that path are the bridges above the device, and ``pci0000:00`` is its host bridge.
"""

from __future__ import annotations

import re
from pathlib import Path

from aiplat import inputs
from aiplat.node.inventory import DeviceKind, IbPort, NetInterface, PciDevice, PciLink
from aiplat.node.pciaddr import VENDORS, acs_control, classify, normalise, parse_link_speed
from aiplat.node.tree import Tree

_PCI_COMPONENT = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


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


def read_pci(root: str | Path | Tree) -> list[PciDevice]:
    tree = Tree.of(root)
    devices = []
    for entry in tree.entries(tree.path("/sys/bus/pci/devices")):
        try:
            address = normalise(entry.name)
        except ValueError:
            tree.warn(f"{entry}: ignored: not a PCI address (DDDD:BB:DD.F) (fix: record the "
                      "directory from the host again)")
            continue
        d = tree.resolve(entry)
        if d is None:
            continue
        cls = tree.text(d / "class")
        vendor = tree.text(d / "vendor")
        if not cls or not vendor:
            continue
        if not _hex_id(tree, d / "class", cls, 6) or not _hex_id(tree, d / "vendor", vendor, 4):
            continue
        numa = tree.number(d / "numa_node")
        host, chain = _pci_chain(d)
        group = tree.link_name(d / "iommu_group")
        speed_cur = parse_link_speed(tree.text(d / "current_link_speed"))
        speed_max = parse_link_speed(tree.text(d / "max_link_speed"))
        width_cur = tree.number(d / "current_link_width")
        width_max = tree.number(d / "max_link_width")
        link = None
        if any(v is not None for v in (speed_cur, speed_max, width_cur, width_max)):
            link = PciLink(current_speed_gts=speed_cur, max_speed_gts=speed_max,
                           current_width=width_cur or None, max_width=width_max or None)
        vendor = vendor.lower()
        kind = classify(cls, vendor)
        config = tree.data(d / "config") if kind is DeviceKind.BRIDGE else None
        acs = acs_control(config) if config is not None else None
        devices.append(PciDevice(
            address=address,
            class_code=cls.lower(),
            kind=kind,
            vendor=vendor,
            vendor_name=VENDORS.get(vendor),
            device=(tree.text(d / "device") or "").lower(),
            subsystem_vendor=tree.text(d / "subsystem_vendor"),
            subsystem_device=tree.text(d / "subsystem_device"),
            numa_node=None if numa is None or numa < 0 else numa,
            local_cpulist=tree.text(d / "local_cpulist"),
            link=link,
            driver=tree.link_name(d / "driver"),
            iommu_group=_group(tree, d, group),
            host_bridge=host,
            acs_control=acs,
            parents=[a for a in chain if a != address],
        ))
    return devices


def _hex_id(tree: Tree, path: Path, text: str, digits: int) -> bool:
    """Whether ``text`` is the ``0x`` and ``digits`` hex digits the kernel writes for a class
    (``0x030200``) or an id (``0x10de``); a warning naming the file when not."""
    if len(text) == digits + 2 and text.startswith("0x") and \
            inputs.ascii_int(text, 16) is not None:
        return True
    tree.warn(f"{path}: ignored the device: '{text[:40]}' is not 0x and {digits} hex digits "
              "(fix: record the file from the host again)")
    return False


def _group(tree: Tree, d: Path, name: str | None) -> int | None:
    """The IOMMU group number its link names (``.../iommu_groups/32``)."""
    if name is None:
        return None
    n = inputs.ascii_int(name)
    if n is None or n < 0:
        tree.warn(f"{d / 'iommu_group'}: ignored: '{name[:40]}' is not a group number "
                  "(fix: record the link from the host again)")
        return None
    return n


def _pci_of(tree: Tree, device_link: Path) -> str | None:
    """The PCI function a class device belongs to (walks up: virtio nets sit below it)."""
    real = tree.resolve(device_link)
    if real is None or not real.exists():
        return None
    _, chain = _pci_chain(real)
    return chain[-1] if chain else None


def read_net(root: str | Path | Tree) -> list[NetInterface]:
    tree = Tree.of(root)
    out = []
    for entry in tree.entries(tree.path("/sys/class/net")):
        d = tree.resolve(entry)
        if d is None or not d.is_dir():
            continue
        name = entry.name
        speed = tree.number(d / "speed")
        master = tree.link_name(d / "master")
        slaves_text = tree.text(d / "bonding" / "slaves")
        vlan_parent, vlan_id = _vlan(tree, name)
        has_device = tree.exists(d / "device")
        out.append(NetInterface(
            name=name,
            mtu=tree.number(d / "mtu"),
            speed_mbps=speed if speed is not None and speed > 0 else None,
            operstate=tree.text(d / "operstate"),
            driver=tree.link_name(d / "device" / "driver") if has_device else None,
            pci_address=_pci_of(tree, d / "device") if has_device else None,
            virtual="/devices/virtual/" in str(d) or not has_device,
            bond_master=master if master and tree.exists(d / "bonding_slave") else None,
            bond_slaves=slaves_text.split() if slaves_text else [],
            vlan_parent=vlan_parent,
            vlan_id=vlan_id,
        ))
    return out


def _vlan(tree: Tree, name: str) -> tuple[str | None, int | None]:
    """VLAN parent and id from /proc/net/vlan/<name> (``Device: eth0``, ``VID: 100``)."""
    text = tree.text(tree.path(f"/proc/net/vlan/{name}"))
    if not text:
        return None, None
    vid = re.search(r"VID:\s*([0-9]{1,5})\b", text)
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


def read_ib(root: str | Path | Tree, net: list[NetInterface] | None = None) -> list[IbPort]:
    tree = Tree.of(root)
    net = net or []
    out = []
    for hca in tree.entries(tree.path("/sys/class/infiniband")):
        d = tree.resolve(hca)
        if d is None:
            continue
        pci = _pci_of(tree, d / "device")
        netdevs = sorted(n.name for n in net if pci and n.pci_address == pci)
        for number, port in tree.numbered(tree.entries(d / "ports")):
            rate = tree.text(port / "rate")
            out.append(IbPort(
                device=hca.name,
                port=number,
                state=_after_colon(tree.text(port / "state")),
                phys_state=_after_colon(tree.text(port / "phys_state")),
                rate_gbps=parse_ib_rate(rate),
                rate=rate,
                link_layer=tree.text(port / "link_layer"),
                pci_address=pci,
                netdevs=netdevs,
            ))
    return out


def pci_kinds(devices: list[PciDevice]) -> dict[DeviceKind, int]:
    counts: dict[DeviceKind, int] = {}
    for dev in devices:
        counts[dev.kind] = counts.get(dev.kind, 0) + 1
    return counts
