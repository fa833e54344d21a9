"""Collect a node inventory: run every reader under ``root`` and join what they found.

Sources, in order of trust for GPU details: NVML on the live host, then ``nvidia-smi`` on
the live host, then recorded outputs given with ``--from KIND=FILE``. Recordings always win
over live reads of the same kind (the administrator asked for them). When sysfs has no PCI
devices (reading another host's recordings), a recorded ``lstopo`` supplies them.

Nothing here raises for an unreadable host file. One ``Tree`` reads the host (or a tree
someone recorded): a link out of it, a FIFO, device or socket, or a file past the bound is
not read and becomes an entry in ``warnings``, as do missing sources. Unreadable or malformed
*recordings* are input errors (exit 2): the user named them.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from aiplat.errors import InputError
from aiplat.node.hostinfo import read_host
from aiplat.node.inventory import DeviceKind, GpuDetail, Inventory, TopoMatrix
from aiplat.node.lstopo import parse_lstopo
from aiplat.node.nvml import read_nvml
from aiplat.node.nvsmi import parse_nvlink_status, parse_smi_xml, parse_topo
from aiplat.node.software import read_software
from aiplat.node.sysfs import read_ib, read_net, read_pci
from aiplat.node.tree import Tree

RECORDED_KINDS = {
    "topo": "nvidia-smi topo -m",
    "smi-xml": "nvidia-smi -q -x",
    "nvlink": "nvidia-smi nvlink -s",
    "lstopo": "lstopo --of xml",
}


def parse_from_options(values: list[str]) -> dict[str, Path]:
    """``["topo=a.txt", "smi-xml=b.xml"]`` -> {kind: path}; bad kinds are input errors."""
    out: dict[str, Path] = {}
    for value in values:
        kind, sep, file = value.partition("=")
        if not sep or kind not in RECORDED_KINDS or not file:
            kinds = ", ".join(f"{k} ({v})" for k, v in RECORDED_KINDS.items())
            raise InputError(f"--from {value!r}: expected KIND=FILE with KIND one of {kinds}")
        out[kind] = Path(file)
    return out


def _read_recording(kind: str, path: Path) -> str:
    from aiplat import inputs

    try:
        return inputs.read_text(path, f"the output of `{RECORDED_KINDS[kind]}`")
    except InputError as e:
        raise InputError(
            f"--from {kind}={e} (record it with `{RECORDED_KINDS[kind]} > {path.name}` and "
            "pass its path)") from None


def _live_smi(args: list[str]) -> str | None:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def collect_inventory(root: str | Path | Tree = "/",
                      recorded: Mapping[str, Path] | None = None,
                      live_gpu: bool | None = None) -> Inventory:
    """Read the node under ``root``. ``live_gpu`` (default: root is ``/``) allows NVML and
    running ``nvidia-smi``; recordings in ``recorded`` are used either way. A ``Tree`` given
    as ``root`` keeps collecting refusals for later readers (the checks' kernel log)."""
    recorded = dict(recorded or {})
    tree = Tree.of(root)
    root_s = str(tree.root)
    live = tree.live if live_gpu is None else live_gpu
    sources = ["sysfs", "procfs"]
    warnings: list[str] = []
    host = read_host(tree)
    pci = read_pci(tree)
    if "lstopo" in recorded:
        from_lstopo = parse_lstopo(_read_recording("lstopo", recorded["lstopo"]),
                                   str(recorded["lstopo"]))
        sources.append("lstopo")
        if not pci:
            pci = from_lstopo
    net = read_net(tree)
    ib = read_ib(tree, net)
    software = read_software(tree)

    details: list[GpuDetail] = []
    cuda: str | None = None
    topo: TopoMatrix | None = None
    if "smi-xml" in recorded:
        details, _, cuda = parse_smi_xml(_read_recording("smi-xml", recorded["smi-xml"]),
                                         str(recorded["smi-xml"]))
        sources.append("nvidia-smi -q -x (recorded)")
    has_nvidia = any(d.kind is DeviceKind.GPU and d.vendor == "0x10de" for d in pci)
    if not details and live and has_nvidia:
        got = read_nvml()
        if got is not None:
            details, _, cuda = got
            sources.append("nvml")
        else:
            xml = _live_smi(["-q", "-x"])
            if xml:
                details, _, cuda = parse_smi_xml(xml, "nvidia-smi -q -x")
                sources.append("nvidia-smi -q -x")
    if "nvlink" in recorded:
        links = parse_nvlink_status(_read_recording("nvlink", recorded["nvlink"]))
        details = [d.model_copy(update={"nvlinks": links.get(d.index, d.nvlinks)})
                   if d.index is not None else d for d in details]
        sources.append("nvidia-smi nvlink -s (recorded)")
    if "topo" in recorded:
        topo = parse_topo(_read_recording("topo", recorded["topo"]), str(recorded["topo"]))
        sources.append("nvidia-smi topo -m (recorded)")
    elif live and has_nvidia:
        text = _live_smi(["topo", "-m"])
        if text:
            topo = parse_topo(text, "nvidia-smi topo -m")
            sources.append("nvidia-smi topo -m")
    if has_nvidia and not details:
        warnings.append("NVIDIA GPUs found but no NVML, nvidia-smi or --from smi-xml: ECC, "
                        "remapped rows, temperatures, clocks and NVLink are unknown")
    if not pci:
        warnings.append(f"no PCI devices under {Path(root_s) / 'sys/bus/pci/devices'}")
    return Inventory(
        collected_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        root=root_s,
        sources=sources,
        host=host,
        pci=pci,
        net=net,
        ib_ports=ib,
        software=software,
        gpu_details=details,
        topology=topo,
        driver_cuda_version=cuda,
        warnings=tree.warnings + warnings,
    )
