"""Parser for ``lstopo --of xml`` (hwloc 1.x and 2.x): PCI functions with their bridges and
NUMA locality, for hosts read from a recording instead of a live sysfs.

hwloc nests I/O objects under the CPU-side object they are local to (a Package, Group or
the Machine); the NUMA node is the ``NUMANode`` child of that object (2.x memory children)
or an ancestor of type NUMANode (1.x). Bridges are ``HostBridge``/``PCIBridge`` (2.x) or
``Bridge`` (1.x); a PCI function's ``pci_type`` is ``"0302 [10de:2330] [10de:16c1] a1"``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable

from aiplat.errors import InputError
from aiplat.node.inventory import PciDevice
from aiplat.node.pciaddr import VENDORS, classify, normalise
from aiplat.text import shown

_IO = {"HostBridge", "PCIBridge", "Bridge", "PCIDev", "OSDev", "Misc"}


# lstopo's pci_type: the class (base and sub, 4 hex digits), then [vendor:device]; the
# subsystem and revision may follow
_PCI_TYPE = re.compile(r"[0-9a-fA-F]{4}(?: \[[0-9a-fA-F]{4}:[0-9a-fA-F]{4}\](?: .*)?)?")


def _fail(text: str) -> str:
    raise ValueError(text)


def _checked(parse: Callable[[str], str], raw: str, source: str, attr: str, what: str) -> str:
    """``parse(raw)``, or an input error naming the file and the attribute."""
    try:
        return parse(raw)
    except ValueError:
        raise InputError(f"{source}: {attr} {shown(repr(raw))} is not {what} (fix: record "
                         "`lstopo --of xml > topo.xml` again)") from None


def parse_lstopo(text: str, source: str = "lstopo") -> list[PciDevice]:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise InputError(
            f"{source}: not XML ({e}) (fix: record `lstopo --of xml > topo.xml`)") from e
    if root.tag != "topology":
        raise InputError(f"{source}: root element is <{root.tag}>, expected <topology>")
    out: list[PciDevice] = []

    def numa_of(stack: list[ET.Element]) -> int | None:
        for obj in reversed(stack):
            if obj.get("type") == "NUMANode":
                return int(obj.get("os_index", "-1"))
            if obj.get("type") not in _IO:
                for child in obj.findall("object"):
                    if child.get("type") == "NUMANode":
                        return int(child.get("os_index", "-1"))
        return None

    def walk(obj: ET.Element, stack: list[ET.Element], host: str | None,
             bridges: list[str]) -> None:
        kind = obj.get("type")
        busid = obj.get("pci_busid")
        host_side = kind == "Bridge" and obj.get("bridge_type", "").startswith("0")
        if kind == "HostBridge" or host_side:
            m = re.match(r"([0-9a-fA-F]{4}):\[([0-9a-fA-F]{2})", obj.get("bridge_pci", ""))
            host = f"pci{m.group(1)}:{m.group(2)}".lower() if m else "pci-unknown"
        elif kind in ("PCIBridge", "Bridge", "PCIDev") and busid:
            address = _checked(normalise, busid, source, "pci_busid", "a PCI address")
            raw_type = obj.get("pci_type") or ""
            ptype = raw_type.split()
            class_code = f"0x{ptype[0]}00" if ptype else "0x000000"
            ids = ptype[1].strip("[]").split(":") if len(ptype) > 1 else ["0000", "0000"]
            if not _PCI_TYPE.fullmatch(raw_type or "0000 [0000:0000]"):
                _checked(_fail, raw_type, source, "pci_type", "a class and [vendor:device]")
            vendor = f"0x{ids[0].lower()}"
            numa = numa_of(stack)
            out.append(PciDevice(
                address=address, class_code=class_code, kind=classify(class_code, vendor),
                vendor=vendor, vendor_name=VENDORS.get(vendor), device=f"0x{ids[1].lower()}",
                numa_node=numa if numa is not None and numa >= 0 else None,
                host_bridge=host, parents=list(bridges),
            ))
            if kind != "PCIDev":
                bridges = [*bridges, address]
        for child in obj.findall("object"):
            walk(child, [*stack, obj], host, bridges)

    walk(root, [], None, [])
    return sorted(out, key=lambda d: d.address)
