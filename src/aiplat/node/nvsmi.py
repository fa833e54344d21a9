"""Parsers for recorded ``nvidia-smi`` outputs (pure: text in, inventory parts out).

Used when NVML is not importable, or to read outputs recorded on another machine
(``aiplat node inventory --from topo=FILE --from smi-xml=FILE --from nvlink=FILE``).

- ``nvidia-smi topo -m``: tab separated; the header starts with an empty cell; the self cell
  is `` X ``; rows of GPUs carry CPU and NUMA affinity after the device cells, with an extra
  empty field (two tabs) before "GPU NUMA ID" on recent drivers and blank affinities on VMs;
  old drivers print ``SOC`` where new ones print ``SYS``; a "NIC Legend" block maps
  ``NIC0: mlx5_0``. Terminal output may carry ANSI underline codes; they are stripped.
- ``nvidia-smi -q -x``: one ``<gpu id="00000000:1B:00.0">`` per GPU. ECC counters come in the
  flat form (``dram_uncorrectable``, R525+) or the older ``double_bit/total``; clock reasons
  as ``clocks_event_reasons`` (R535+) or ``clocks_throttle_reasons``.
- ``nvidia-smi nvlink -s``: ``GPU 0: ... (UUID: ...)`` then ``Link 3: 26.562 GB/s`` or
  ``Link 3: <inactive>``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from aiplat.errors import InputError
from aiplat.node.inventory import GpuDetail, NvLink, RemappedRows, TopoMatrix
from aiplat.node.pciaddr import normalise
from aiplat.text import shown

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC|N/A)$")
_CPULIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def parse_topo(text: str, source: str = "topo") -> TopoMatrix:
    lines = [_ANSI.sub("", line.rstrip("\n")) for line in text.splitlines()]
    header_i = next((i for i, line in enumerate(lines) if re.match(r"^\s*\t\s*GPU0", line)), None)
    if header_i is None:
        raise InputError(
            f"{source}: no 'nvidia-smi topo -m' header (a line starting with a tab, then GPU0)"
            " (fix: record it with `nvidia-smi topo -m > topo.txt`)"
        )
    header = [c.strip() for c in lines[header_i].split("\t")[1:]]
    devices = [c for c in header if re.match(r"^(GPU|NIC|mlx)\S*$", c)]
    cells: dict[str, dict[str, str]] = {}
    cpu_aff: dict[str, str | None] = {}
    numa_aff: dict[str, int | None] = {}
    for line in lines[header_i + 1:]:
        if not line.strip() or line.strip().startswith("Legend"):
            break
        fields = line.split("\t")
        name = fields[0].strip()
        if name not in devices:
            continue
        values = [v.strip() for v in fields[1:1 + len(devices)]]
        row = {}
        for dev, v in zip(devices, values, strict=False):
            if not _CELL.match(v):
                raise InputError(f"{source}: cell {name}/{dev} is {v!r}, not a topology type")
            row[dev] = "SYS" if v == "SOC" else v
        cells[name] = row
        if name.startswith("GPU"):
            rest = [v.strip() for v in fields[1 + len(devices):]]
            cpu = rest[0] if rest and _CPULIST.match(rest[0]) else None
            cpu_aff[name] = cpu
            after = rest[1:] if cpu is not None else rest
            numa = next((v for v in after if v.isdigit() or v == "N/A"), None)
            numa_aff[name] = int(numa) if numa and numa.isdigit() else None
    nic_names = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)\s*$", "\n".join(lines), re.M))
    return TopoMatrix(devices=devices, cells=cells, nic_names=nic_names,
                      cpu_affinity=cpu_aff, numa_affinity=numa_aff)


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    m = re.match(r"^\s*(\d+)", text)
    return int(m.group(1)) if m else None


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    m = re.match(r"^\s*([0-9.]+)", text)
    return float(m.group(1)) if m else None


def _sum_matching(node: ET.Element | None, pattern: str) -> int | None:
    if node is None:
        return None
    values = [_int(e.text) for e in node.iter() if re.search(pattern, e.tag)]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _uncorrected(node: ET.Element | None) -> int | None:
    if node is None:
        return None
    flat = _sum_matching(node, r"(^|_)uncorrectable$")
    if flat is not None:
        return flat
    total = node.find("double_bit/total")
    return _int(total.text) if total is not None else None


def _corrected(node: ET.Element | None) -> int | None:
    if node is None:
        return None
    flat = _sum_matching(node, r"(^|_)correctable$")
    if flat is not None:
        return flat
    total = node.find("single_bit/total")
    return _int(total.text) if total is not None else None


def _address(g: ET.Element, index: int, source: str) -> str:
    """The GPU's bus id (its ``id`` attribute, else pci/pci_bus_id), normalised."""
    raw = g.get("id") or g.findtext("pci/pci_bus_id") or ""
    try:
        return normalise(raw)
    except ValueError:
        what = "id" if g.get("id") else "pci/pci_bus_id"
        raise InputError(f"{source}: gpu[{index}] {what} {shown(repr(raw))} is not a PCI "
                         "address (fix: record `nvidia-smi -q -x > smi.xml` again)") from None


def parse_smi_xml(text: str, source: str = "smi-xml"
                  ) -> tuple[list[GpuDetail], str | None, str | None]:
    """GPUs, driver version and CUDA version from ``nvidia-smi -q -x``."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise InputError(
            f"{source}: not XML ({e}) (fix: record `nvidia-smi -q -x > smi.xml`)") from e
    if root.tag != "nvidia_smi_log":
        raise InputError(f"{source}: root element is <{root.tag}>, expected <nvidia_smi_log>")
    gpus = []
    for index, g in enumerate(root.findall("gpu")):
        addr = _address(g, index, source)
        ecc_mode = g.findtext("ecc_mode/current")
        rr = g.find("remapped_rows")
        remapped = None
        if rr is not None and rr.findtext("remapped_row_corr") not in (None, "N/A"):
            remapped = RemappedRows(
                correctable=_int(rr.findtext("remapped_row_corr")) or 0,
                uncorrectable=_int(rr.findtext("remapped_row_unc")) or 0,
                pending=(rr.findtext("remapped_row_pending") or "").strip() == "Yes",
                failure=(rr.findtext("remapped_row_failure") or "").strip() == "Yes",
            )
        reasons_node = g.find("clocks_event_reasons")
        if reasons_node is None:
            reasons_node = g.find("clocks_throttle_reasons")
        reasons = []
        if reasons_node is not None:
            for elem in reasons_node:
                if (elem.text or "").strip() == "Active":
                    reasons.append(re.sub(r"^clocks_(event|throttle)_reason_", "", elem.tag))
        power = (g.findtext("gpu_power_readings/power_draw")
                 or g.findtext("power_readings/power_draw"))
        volatile = g.find("ecc_errors/volatile")
        aggregate = g.find("ecc_errors/aggregate")
        fabric = {k: None if v in (None, "N/A") else v.strip()
                  for k in ("state", "status") for v in [g.findtext(f"fabric/{k}")]}
        gpus.append(GpuDetail(
            address=addr,
            index=index,
            uuid=g.findtext("uuid"),
            name=g.findtext("product_name"),
            vbios=g.findtext("vbios_version"),
            memory_mib=_int(g.findtext("fb_memory_usage/total")),
            ecc_enabled=None if ecc_mode in (None, "N/A") else ecc_mode == "Enabled",
            ecc_corrected_volatile=_corrected(volatile),
            ecc_uncorrected_volatile=_uncorrected(volatile),
            ecc_uncorrected_aggregate=_uncorrected(aggregate),
            remapped_rows=remapped,
            clock_event_reasons=reasons,
            temperature_c=_float(g.findtext("temperature/gpu_temp")),
            power_w=_float(power),
            fabric_state=fabric["state"],
            fabric_status=fabric["status"],
        ))
    return gpus, root.findtext("driver_version"), root.findtext("cuda_version")


def parse_nvlink_status(text: str) -> dict[int, list[NvLink]]:
    """GPU index -> its links, from ``nvidia-smi nvlink -s``."""
    out: dict[int, list[NvLink]] = {}
    current: int | None = None
    for line in text.splitlines():
        g = re.match(r"^GPU (\d+):", line)
        if g:
            current = int(g.group(1))
            out[current] = []
            continue
        m = re.match(r"^\s*Link (\d+):\s*(.*)$", line)
        if m and current is not None:
            value = m.group(2).strip()
            speed = re.match(r"^([0-9.]+)\s*GB/s", value)
            out[current].append(NvLink(
                link=int(m.group(1)),
                active=speed is not None and float(speed.group(1)) > 0,
                speed_gbps=float(speed.group(1)) if speed else None,
            ))
    return out
