"""Readers for the host itself: kernel, command line, CPU, memory, hugepages, NUMA, disks.

Sources (all under ``root``): ``/proc/sys/kernel/{osrelease,hostname}``, ``/proc/cmdline``,
``/proc/cpuinfo`` plus ``/sys/devices/system/cpu/cpu*/topology`` (SMT siblings),
``/proc/meminfo``, ``/sys/kernel/mm/hugepages``, ``/sys/devices/system/node/node*``,
``/sys/kernel/iommu_groups`` and ``/proc/mounts`` with ``statvfs`` for real file systems.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from aiplat.node.inventory import CpuInfo, Filesystem, HostInfo, NumaNode
from aiplat.node.pciaddr import parse_cpulist
from aiplat.node.sysfs import read_int, read_text, under

REAL_FS = {"ext4", "ext3", "xfs", "btrfs", "zfs", "f2fs", "overlay", "tmpfs", "nfs", "nfs4",
           "lustre", "gpfs", "beegfs", "ceph", "fuse.juicefs", "virtiofs"}
# Only these mount points are reported: what node checks care about (root, container and
# kubelet state, local scratch), not every bind mount a container runtime creates.
WATCHED_MOUNTS = ("/", "/var", "/var/lib", "/var/lib/containerd", "/var/lib/kubelet",
                  "/var/lib/containers", "/raid", "/scratch", "/tmp", "/mnt/local")


def read_cpu(root: str | Path) -> CpuInfo | None:
    text = read_text(under(root, "/proc/cpuinfo"))
    if not text:
        return None
    model = None
    sockets: set[str] = set()
    cores: set[tuple[str, str]] = set()
    threads = 0
    for block in text.split("\n\n"):
        fields = dict(
            (k.strip(), v.strip())
            for k, _, v in (line.partition(":") for line in block.splitlines())
        )
        if "processor" not in fields:
            continue
        threads += 1
        model = model or fields.get("model name") or fields.get("Model")
        phys = fields.get("physical id", "0")
        sockets.add(phys)
        cores.add((phys, fields.get("core id", fields["processor"])))
    groups = _core_threads(root)
    n_cores = len(groups) if groups else len(cores)
    return CpuInfo(model=model, sockets=max(1, len(sockets)), cores=n_cores or threads,
                   threads=threads, smt=threads > (n_cores or threads), core_threads=groups)


def _core_threads(root: str | Path) -> list[list[int]]:
    base = under(root, "/sys/devices/system/cpu")
    if not base.is_dir():
        return []
    seen: dict[str, list[int]] = {}
    for cpu in base.glob("cpu[0-9]*"):
        siblings = read_text(cpu / "topology" / "thread_siblings_list")
        if siblings:
            seen.setdefault(siblings, parse_cpulist(siblings))
    return sorted(seen.values())


def read_meminfo(root: str | Path) -> dict[str, int]:
    text = read_text(under(root, "/proc/meminfo")) or ""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+):\s+(\d+)", line)
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def read_hugepages(root: str | Path) -> dict[str, int]:
    base = under(root, "/sys/kernel/mm/hugepages")
    if not base.is_dir():
        return {}
    out = {}
    for d in sorted(base.glob("hugepages-*")):
        n = read_int(d / "nr_hugepages")
        if n is not None:
            out[d.name.removeprefix("hugepages-")] = n
    return out


def read_numa(root: str | Path) -> list[NumaNode]:
    base = under(root, "/sys/devices/system/node")
    if not base.is_dir():
        return []
    nodes = []
    for d in sorted(base.glob("node[0-9]*"), key=lambda p: int(p.name[4:])):
        mem = None
        meminfo = read_text(d / "meminfo") or ""
        m = re.search(r"MemTotal:\s+(\d+)\s*kB", meminfo)
        if m:
            mem = int(m.group(1))
        dist = read_text(d / "distance") or ""
        nodes.append(NumaNode(id=int(d.name[4:]), cpulist=read_text(d / "cpulist") or "",
                              memory_kib=mem, distances=[int(x) for x in dist.split()]))
    return nodes


def read_filesystems(root: str | Path) -> list[Filesystem]:
    text = read_text(under(root, "/proc/mounts")) or ""
    out = []
    seen = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        mount, fstype = parts[1].replace("\\040", " "), parts[2]
        if mount not in WATCHED_MOUNTS or fstype not in REAL_FS or mount in seen:
            continue
        try:
            st = os.statvfs(under(root, mount))
        except OSError:
            continue
        seen.add(mount)
        out.append(Filesystem(mount=mount, fstype=fstype, size_bytes=st.f_blocks * st.f_frsize,
                              free_bytes=st.f_bavail * st.f_frsize))
    return out


def read_host(root: str | Path) -> HostInfo:
    groups = under(root, "/sys/kernel/iommu_groups")
    meminfo = read_meminfo(root)
    return HostInfo(
        hostname=read_text(under(root, "/proc/sys/kernel/hostname")),
        kernel=read_text(under(root, "/proc/sys/kernel/osrelease")),
        cmdline=read_text(under(root, "/proc/cmdline")),
        cpu=read_cpu(root),
        memory_kib=meminfo.get("MemTotal"),
        hugepages=read_hugepages(root),
        numa=read_numa(root),
        iommu_groups=sum(1 for _ in groups.iterdir()) if groups.is_dir() else 0,
        filesystems=read_filesystems(root),
    )
