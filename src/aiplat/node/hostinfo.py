"""Readers for the host itself: kernel, command line, CPU, memory, hugepages, NUMA, disks.

Sources (all under ``root``): ``/proc/sys/kernel/{osrelease,hostname}``, ``/proc/cmdline``,
``/proc/cpuinfo`` plus ``/sys/devices/system/cpu/cpu*/topology`` (SMT siblings),
``/proc/meminfo``, ``/sys/kernel/mm/hugepages``, ``/sys/devices/system/node/node*``,
``/sys/kernel/iommu_groups`` and ``/proc/mounts`` with ``statvfs`` for real file systems,
all read through ``aiplat.node.tree`` (bounded, never out of the root).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from aiplat import inputs
from aiplat.node.inventory import CpuInfo, Filesystem, HostInfo, NumaNode
from aiplat.node.pciaddr import parse_cpulist
from aiplat.node.tree import TEXT_MAX_BYTES, Tree

REAL_FS = {"ext4", "ext3", "xfs", "btrfs", "zfs", "f2fs", "overlay", "tmpfs", "nfs", "nfs4",
           "lustre", "gpfs", "beegfs", "ceph", "fuse.juicefs", "virtiofs"}
# Only these mount points are reported: what node checks care about (root, container and
# kubelet state, local scratch), not every bind mount a container runtime creates.
WATCHED_MOUNTS = ("/", "/var", "/var/lib", "/var/lib/containerd", "/var/lib/kubelet",
                  "/var/lib/containers", "/raid", "/scratch", "/tmp", "/mnt/local")


def read_cpu(root: str | Path | Tree) -> CpuInfo | None:
    tree = Tree.of(root)
    text = tree.text(tree.path("/proc/cpuinfo"), TEXT_MAX_BYTES)
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
    groups = _core_threads(tree)
    n_cores = len(groups) if groups else len(cores)
    return CpuInfo(model=model, sockets=max(1, len(sockets)), cores=n_cores or threads,
                   threads=threads, smt=threads > (n_cores or threads), core_threads=groups)


def _core_threads(tree: Tree) -> list[list[int]]:
    seen: dict[str, list[int]] = {}
    for cpu in tree.glob(tree.path("/sys/devices/system/cpu"), "cpu[0-9]*"):
        path = cpu / "topology" / "thread_siblings_list"
        siblings = tree.text(path)
        if siblings and siblings not in seen and _cpulist(tree, path, siblings):
            seen[siblings] = parse_cpulist(siblings)
    return sorted(seen.values())


def _cpulist(tree: Tree, path: Path, text: str) -> bool:
    """Whether ``text`` is a cpulist; a warning naming the file when not."""
    try:
        parse_cpulist(text)
    except ValueError as e:
        tree.warn(f"{path}: ignored: {e} (fix: record the file from the host again)")
        return False
    return True


def read_meminfo(root: str | Path | Tree) -> dict[str, int]:
    tree = Tree.of(root)
    text = tree.text(tree.path("/proc/meminfo"), TEXT_MAX_BYTES) or ""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S+):\s+([0-9]{1,20})\b", line)  # more digits: no host's
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def read_hugepages(root: str | Path | Tree) -> dict[str, int]:
    tree = Tree.of(root)
    out = {}
    for d in tree.glob(tree.path("/sys/kernel/mm/hugepages"), "hugepages-*"):
        n = tree.number(d / "nr_hugepages")
        if n is not None:
            out[d.name.removeprefix("hugepages-")] = n
    return out


def read_numa(root: str | Path | Tree) -> list[NumaNode]:
    tree = Tree.of(root)
    nodes = []
    found = tree.glob(tree.path("/sys/devices/system/node"), "node*")
    for number, d in tree.numbered(found, "node"):
        mem = None
        meminfo = tree.text(d / "meminfo") or ""
        m = re.search(r"MemTotal:\s+([0-9]{1,20})\s*kB", meminfo)
        if m:
            mem = int(m.group(1))
        dist = tree.text(d / "distance") or ""
        cpulist = tree.text(d / "cpulist") or ""
        distances = [inputs.ascii_int(x) for x in dist.split() if len(x) < 6]
        nodes.append(NumaNode(id=number,
                              cpulist=cpulist if _cpulist(tree, d / "cpulist", cpulist) else "",
                              memory_kib=mem,
                              distances=[x for x in distances if x is not None and x >= 0]))
    return nodes


def read_filesystems(root: str | Path | Tree) -> list[Filesystem]:
    tree = Tree.of(root)
    text = tree.text(tree.path("/proc/mounts"), TEXT_MAX_BYTES) or ""
    out = []
    seen = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        mount, fstype = parts[1].replace("\\040", " "), parts[2]
        if mount not in WATCHED_MOUNTS or fstype not in REAL_FS or mount in seen:
            continue
        real = tree.resolve(tree.path(mount))  # a link out of the tree: not the host's disk
        try:
            st = os.statvfs(real) if real is not None else None
        except OSError:
            st = None
        if st is None:
            continue
        seen.add(mount)
        out.append(Filesystem(mount=mount, fstype=fstype, size_bytes=st.f_blocks * st.f_frsize,
                              free_bytes=st.f_bavail * st.f_frsize))
    return out


def read_host(root: str | Path | Tree) -> HostInfo:
    tree = Tree.of(root)
    meminfo = read_meminfo(tree)
    return HostInfo(
        hostname=tree.text(tree.path("/proc/sys/kernel/hostname")),
        kernel=tree.text(tree.path("/proc/sys/kernel/osrelease")),
        cmdline=tree.text(tree.path("/proc/cmdline")),
        cpu=read_cpu(tree),
        memory_kib=meminfo.get("MemTotal"),
        hugepages=read_hugepages(tree),
        numa=read_numa(tree),
        iommu_groups=len(tree.entries(tree.path("/sys/kernel/iommu_groups"))),
        filesystems=read_filesystems(tree),
    )
