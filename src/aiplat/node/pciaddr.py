"""PCI addresses and class codes: pure helpers shared by every reader.

NVML and ``nvidia-smi`` print an 8-digit domain in upper case (``00000000:1B:00.0``), sysfs
and lspci a 4-digit domain in lower case (``0000:1b:00.0``), ``nvidia-smi -q`` XIDs a short
form without function (``PCI:0000:1b:00``). Every address in the inventory goes through
``normalise`` so sources can be joined on it.
"""

from __future__ import annotations

import re

from aiplat.inputs import ascii_int
from aiplat.node.inventory import DeviceKind

_ADDR = re.compile(
    r"^(?:(?P<domain>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})"
    r"(?:\.(?P<fn>[0-7]))?$"
)

VENDORS = {
    "0x10de": "NVIDIA",
    "0x15b3": "Mellanox",
    "0x1002": "AMD",
    "0x1022": "AMD",
    "0x8086": "Intel",
    "0x1af4": "virtio",
    "0x14e4": "Broadcom",
    "0x1000": "Broadcom/LSI",
    "0x144d": "Samsung",
    "0x1344": "Micron",
    "0x1d0f": "Amazon",
}
ACCELERATOR_VENDORS = {"0x10de", "0x1002", "0x8086"}


def normalise(address: str) -> str:
    """``00000000:1B:00.0`` / ``0000:1b:00.0`` / ``1b:00.0`` -> ``0000:1b:00.0``.

    >>> normalise("00000000:1B:00.0")
    '0000:1b:00.0'
    """
    text = address.strip()
    if text.upper().startswith("PCI:"):
        text = text[4:]
    m = _ADDR.match(text)
    if not m:
        raise ValueError(f"not a PCI address: {address!r}")
    domain = int(m["domain"] or "0", 16)
    fn = m["fn"] or "0"
    return f"{domain:04x}:{m['bus'].lower()}:{m['dev'].lower()}.{fn}"


def classify(class_code: str, vendor: str) -> DeviceKind:
    """Device kind from the 24-bit class (``0x030200``) and vendor id."""
    code = int(class_code, 16)
    base_sub = code >> 8
    vendor = vendor.lower()
    if base_sub in (0x0300, 0x0302) and vendor in ACCELERATOR_VENDORS:
        return DeviceKind.GPU
    if base_sub == 0x1200 and vendor in ACCELERATOR_VENDORS:
        return DeviceKind.GPU
    if base_sub == 0x0680 and vendor == "0x10de":
        return DeviceKind.NVSWITCH
    if base_sub == 0x0200:
        return DeviceKind.NIC
    if base_sub == 0x0207:
        return DeviceKind.INFINIBAND
    if base_sub == 0x0108:
        return DeviceKind.NVME
    if base_sub == 0x0604:
        return DeviceKind.BRIDGE
    return DeviceKind.OTHER


def parse_link_speed(text: str | None) -> float | None:
    """``16.0 GT/s PCIe`` / ``8 GT/s`` / ``2.5 GT/s`` -> GT/s; ``Unknown`` -> None."""
    if not text:
        return None
    m = re.match(r"^\s*([0-9.]+)\s*GT/s", text)
    return float(m.group(1)) if m else None


MAX_CPUS = 1 << 16
"""CPU ids a cpulist may name: Linux's NR_CPUS is at most 8,192 (x86-64 MAXSMP), so a list
beyond this is not a host's (``0-4294967295`` would be 4 billion ints)."""


def parse_cpulist(text: str) -> list[int]:
    """``0-3,8,10-11`` -> [0, 1, 2, 3, 8, 10, 11]; empty -> []. ValueError when it is not
    a cpulist, or names an id of ``MAX_CPUS`` or more."""
    cpus: list[int] = []
    for raw in text.strip().split(","):
        part = raw.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        first, last = ascii_int(lo), ascii_int(hi or lo)
        if first is None or last is None:  # int() would take ' 3', '+3', '3_0' and '٣'
            raise ValueError(f"'{part[:40]}' is not a CPU id or range in ASCII digits")
        if not 0 <= first <= last < MAX_CPUS:
            raise ValueError(f"'{part[:40]}' is not a range of CPU ids below {MAX_CPUS}")
        cpus.extend(range(first, last + 1))
        if len(cpus) > MAX_CPUS:
            raise ValueError(f"more than {MAX_CPUS} CPUs")
    return cpus


def format_cpulist(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> ``0-2,5``."""
    out: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


ACS_EXT_CAP_ID = 0x000D
ACS_BITS = {0: "SV", 1: "TB", 2: "RR", 3: "CR", 4: "UF", 5: "EC", 6: "DT"}
ACS_REDIRECT = 0b1100  # P2P Request Redirect | P2P Completion Redirect


def acs_control(config: bytes) -> int | None:
    """The ACS Control register from a function's PCIe config space, or None when the space
    is short (only root reads past 64 bytes) or has no ACS extended capability.

    Extended capabilities start at 0x100: a 32-bit header (ID in bits 0-15, next offset in
    bits 20-31); ACS has ID 0x000D, its capability register at +4 and control at +6.
    """
    if len(config) < 0x104:
        return None
    offset, seen = 0x100, set()
    while offset and offset + 8 <= len(config) and offset not in seen:
        seen.add(offset)
        header = int.from_bytes(config[offset:offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == ACS_EXT_CAP_ID:
            return int.from_bytes(config[offset + 6:offset + 8], "little")
        offset = (header >> 20) & 0xFFC
    return None


def acs_flags(control: int) -> list[str]:
    return [name for bit, name in ACS_BITS.items() if control & (1 << bit)]
