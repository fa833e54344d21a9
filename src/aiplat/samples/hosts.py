"""Sample Linux hosts for the node readers: sysfs/procfs/dev trees with real relative symlinks
(``aiplat samples get node-hgx-h100-degraded`` writes one; the tests build theirs with it).

``FakeHost(root)`` writes files the way the kernel lays them out: each PCI function is a
directory under ``sys/devices/pciDDDD:BB/<root port>/.../<addr>`` and
``sys/bus/pci/devices/<addr>`` is a relative symlink to it, so the readers resolve the
bridge chain exactly as on a real host. Device nodes are regular files with the wanted mode
(tests cannot rely on mknod); ``owner``/``group`` names come from the fake ``etc/passwd`` and
``etc/group`` with the current uid/gid, so no chown is needed.

Scenario builders (each returns the root):
- ``hgx_h100``: 8 H100 SXM, 8 ConnectX-7 NDR IB NICs rail-aligned (each GPU and its NIC under
  one PCIe switch), 4 NVSwitches, 2 NUMA nodes, 8 NVMe, a bonded management pair with a VLAN.
  ``degraded=True``: GPU 3 trained at x8 and mlx5_5 port 1 DOWN.
- ``l40s_4``: 4 L40S over 2 NUMA nodes directly on root ports; one Ethernet NIC on NUMA 0.
- ``mi300x_8``: 8 AMD MI300X (class 0x1200) with 8 rail-aligned IB NICs, amdgpu, /dev/kfd.
- ``gpu_less_vm``: virtio devices only, numa_node -1, no EFI.

The numbers follow the kernel's sysfs ABI and the vendors' PCI ids (class codes, vendor ids,
attribute formats); they are written by hand in the documented formats, not captured on real
hardware.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

NV, MLX, AMD, INTEL, VIRTIO, SAMSUNG = "0x10de", "0x15b3", "0x1002", "0x8086", "0x1af4", "0x144d"
SECURE_BOOT = "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"


@dataclass
class Link:
    cur_speed: str = "32.0 GT/s PCIe"
    max_speed: str = "32.0 GT/s PCIe"
    cur_width: int = 16
    max_width: int = 16


@dataclass
class FakeHost:
    root: Path
    iommu_groups: int = 0
    acs_control: int = 0  # written into every bridge's config space
    _next_group: int = field(default=0, init=False)

    def write(self, rel: str, text: str | bytes, mode: int | None = None) -> Path:
        p = self.root / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)
        if mode is not None:
            os.chmod(p, mode)
        return p

    def symlink(self, rel: str, target_rel: str) -> None:
        """Relative symlink at ``rel`` pointing to ``target_rel`` (both root-relative)."""
        link = self.root / rel.lstrip("/")
        target = self.root / target_rel.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        target.mkdir(parents=True, exist_ok=True) if not target.exists() else None
        os.symlink(os.path.relpath(target, link.parent), link)

    # ---------------------------------------------------------------- PCI

    def pci(  # noqa: PLR0917 (mirrors the sysfs attributes)
            self, host_bridge: str, chain: list[str], cls: str, vendor: str, device: str,
            numa: int = -1, cpulist: str = "", link: Link | None = None,
            driver: str | None = None, iommu: bool = True) -> str:
        """Add the PCI function ``chain[-1]``; ``chain[:-1]`` are its bridges (created with
        class 0x060400 when missing). Returns the sysfs directory (root-relative)."""
        path = f"sys/devices/{host_bridge}"
        for i, addr in enumerate(chain):
            path += f"/{addr}"
            is_dev = i == len(chain) - 1
            d = self.root / path
            if not is_dev and (d / "class").exists():
                continue
            self.write(f"{path}/class", (cls if is_dev else "0x060400") + "\n")
            self.write(f"{path}/vendor", (vendor if is_dev else "0x1000") + "\n")
            self.write(f"{path}/device", (device if is_dev else "0xc010") + "\n")
            self.write(f"{path}/subsystem_vendor", (vendor if is_dev else "0x1000") + "\n")
            self.write(f"{path}/subsystem_device", "0x16c1\n")
            self.write(f"{path}/numa_node", f"{numa}\n")
            if not is_dev:
                self.write(f"{path}/config", acs_config(self.acs_control))
            self.write(f"{path}/local_cpulist", f"{cpulist}\n")
            ln = link if is_dev else Link()
            if ln is not None:
                self.write(f"{path}/current_link_speed", ln.cur_speed + "\n")
                self.write(f"{path}/max_link_speed", ln.max_speed + "\n")
                self.write(f"{path}/current_link_width", f"{ln.cur_width}\n")
                self.write(f"{path}/max_link_width", f"{ln.max_width}\n")
            drv = driver if is_dev else "pcieport"
            if drv:
                self.symlink(f"{path}/driver", f"sys/bus/pci/drivers/{drv}")
            if iommu and self.iommu_groups is not None:
                g = self._next_group
                self._next_group += 1
                self.symlink(f"{path}/iommu_group", f"sys/kernel/iommu_groups/{g}")
                self.iommu_groups += 1
            self.symlink(f"sys/bus/pci/devices/{addr}", path)
        return path

    # ---------------------------------------------------------------- host

    def host(self, *, hostname: str, kernel: str, cmdline: str, cpu_model: str, sockets: int,
             cores_per_socket: int, smt: bool, numa_cpus: list[str], mem_kib: int,
             hugepages_2m: int = 0) -> None:
        self.write("proc/sys/kernel/hostname", hostname + "\n")
        self.write("proc/sys/kernel/osrelease", kernel + "\n")
        self.write("proc/cmdline", cmdline + "\n")
        threads_per_core = 2 if smt else 1
        ncores = sockets * cores_per_socket
        blocks = []
        for t in range(threads_per_core):
            for c in range(ncores):
                cpu = t * ncores + c
                sock = c // cores_per_socket
                blocks.append(f"processor\t: {cpu}\nmodel name\t: {cpu_model}\n"
                              f"physical id\t: {sock}\ncore id\t\t: {c % cores_per_socket}\n")
                sibs = [c + k * ncores for k in range(threads_per_core)]
                sib_text = ",".join(str(s) for s in sibs)
                self.write(f"sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list",
                           sib_text + "\n")
        self.write("proc/cpuinfo", "\n".join(blocks) + "\n")
        self.write("proc/meminfo", f"MemTotal:       {mem_kib} kB\n"
                   f"MemFree:        {mem_kib // 2} kB\n"
                   f"HugePages_Total:       {hugepages_2m}\nHugepagesize:       2048 kB\n")
        self.write("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", f"{hugepages_2m}\n")
        n = len(numa_cpus)
        for i, cpus in enumerate(numa_cpus):
            dist = " ".join("10" if j == i else "21" for j in range(n))
            self.write(f"sys/devices/system/node/node{i}/cpulist", cpus + "\n")
            self.write(f"sys/devices/system/node/node{i}/distance", dist + "\n")
            self.write(f"sys/devices/system/node/node{i}/meminfo",
                       f"Node {i} MemTotal:       {mem_kib // n} kB\n")
            # The node bus lists the same nodes (what NFD's memory source reads).
            self.symlink(f"sys/bus/node/devices/node{i}", f"sys/devices/system/node/node{i}")
        self.write("proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n")
        self.write("proc/mounts", "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\nproc /proc proc rw 0 0\n")
        (self.root / "sys/kernel/iommu_groups").mkdir(parents=True, exist_ok=True)

    def users(self) -> None:
        uid, gid = os.getuid(), os.getgid()
        self.write("etc/passwd", f"root:x:{uid}:{gid}:root:/root:/bin/bash\n")
        self.write("etc/group", f"video:x:{gid}:\n")

    def modules(self, mods: dict[str, str | None]) -> None:
        lines = [f"{m} 1234 0 - Live 0x0000000000000000" for m in mods]
        self.write("proc/modules", "\n".join(lines) + "\n")
        for m, v in mods.items():
            (self.root / f"sys/module/{m}").mkdir(parents=True, exist_ok=True)
            if v:
                self.write(f"sys/module/{m}/version", v + "\n")

    def secure_boot(self, enabled: bool | None) -> None:
        """None: legacy boot (no /sys/firmware/efi)."""
        if enabled is None:
            return
        self.write(f"sys/firmware/efi/efivars/{SECURE_BOOT}",
                   b"\x06\x00\x00\x00" + (b"\x01" if enabled else b"\x00"))

    def dev(self, rel: str, mode: int) -> None:
        self.write(f"dev/{rel}", "", mode)

    def dpkg(self, packages: dict[str, str]) -> None:
        blocks = [f"Package: {p}\nStatus: install ok installed\nVersion: {v}\n"
                  for p, v in packages.items()]
        self.write("var/lib/dpkg/status", "\n".join(blocks))

    def net(self, name: str, mtu: int, *, pci_dir: str | None = None, speed: int | None = None,
            driver: str | None = None, master: str | None = None,
            slaves: list[str] | None = None, vlan: tuple[str, int] | None = None) -> None:
        if pci_dir:
            base = f"{pci_dir}/net/{name}"
            self.symlink(f"{base}/device", pci_dir)
        else:
            base = f"sys/devices/virtual/net/{name}"
        self.write(f"{base}/mtu", f"{mtu}\n")
        self.write(f"{base}/operstate", "up\n")
        self.write(f"{base}/speed", f"{speed if speed is not None else -1}\n")
        if master:
            self.symlink(f"{base}/master", f"sys/devices/virtual/net/{master}")
            self.write(f"{base}/bonding_slave/state", "active\n")
        if slaves:
            self.write(f"{base}/bonding/slaves", " ".join(slaves) + "\n")
        if vlan:
            self.write(f"proc/net/vlan/{name}", f"{name}  VID: {vlan[1]}\t REORDER_HDR: 1\n"
                       f"Device: {vlan[0]}\n")
        self.symlink(f"sys/class/net/{name}", base)

    def ib(self, hca: str, pci_dir: str, *, state: str = "4: ACTIVE",
           phys: str = "5: LinkUp", rate: str = "400 Gb/sec (4X NDR)",
           layer: str = "InfiniBand") -> None:
        base = f"{pci_dir}/infiniband/{hca}"
        self.symlink(f"{base}/device", pci_dir)
        for attr, value in (("state", state), ("phys_state", phys), ("rate", rate),
                            ("link_layer", layer)):
            self.write(f"{base}/ports/1/{attr}", value + "\n")
        self.symlink(f"sys/class/infiniband/{hca}", base)


def acs_config(control: int) -> bytes:
    """4 KiB of config space with one extended capability: ACS (ID 0x000D, version 1) at
    0x100, capability register 0x005f, control ``control``; ``next`` = 0 ends the list."""
    space = bytearray(4096)
    space[0x100:0x104] = (0x000D | (1 << 16)).to_bytes(4, "little")
    space[0x104:0x106] = (0x005F).to_bytes(2, "little")
    space[0x106:0x108] = control.to_bytes(2, "little")
    return bytes(space)


# ------------------------------------------------------------------------ scenarios

NUMA_CPUS_2S = ["0-55,112-167", "56-111,168-223"]
GPU_BUS = [0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb]


def _rail_node(h: FakeHost, *, gpu_cls: str, gpu_vendor: str, gpu_device: str,
               gpu_driver: str, degraded: bool, nvswitches: bool, ib_down: int | None,
               x8_gpu: int | None) -> None:
    for i, bus in enumerate(GPU_BUS):
        numa = 0 if i < 4 else 1
        cpus = NUMA_CPUS_2S[numa]
        hb = f"pci0000:{bus - 2:02x}"
        rp = f"0000:{bus - 2:02x}:01.0"
        usp = f"0000:{bus - 1:02x}:00.0"
        dsp_gpu, dsp_nic = f"0000:{bus:02x}:00.0", f"0000:{bus:02x}:01.0"
        gpu, nic = f"0000:{bus + 1:02x}:00.0", f"0000:{bus + 2:02x}:00.0"
        link = Link(cur_width=8) if degraded and x8_gpu == i else Link()
        h.pci(hb, [rp, usp, dsp_gpu, gpu], gpu_cls, gpu_vendor, gpu_device, numa, cpus,
              link, gpu_driver)
        nic_dir = h.pci(hb, [rp, usp, dsp_nic, nic], "0x020700", MLX, "0x1021", numa, cpus,
                        Link(), "mlx5_core")
        down = degraded and ib_down == i
        h.ib(f"mlx5_{i}", nic_dir, state="1: DOWN" if down else "4: ACTIVE",
             phys="2: Polling" if down else "5: LinkUp",
             rate="10 Gb/sec (4X SDR)" if down else "400 Gb/sec (4X NDR)")
    if nvswitches:
        for k in range(4):
            h.pci("pci0000:e0", ["0000:e0:01.0", "0000:e1:00.0", f"0000:e2:0{k}.0",
                                 f"0000:e{3 + k}:00.0"], "0x068000", NV, "0x22a3", 1,
                  NUMA_CPUS_2S[1], Link(cur_speed="16.0 GT/s PCIe", max_speed="16.0 GT/s PCIe",
                                        cur_width=2, max_width=2), "nvidia")
    # local NVMe: 4 per socket, each on its own root port
    for k in range(8):
        numa = k // 4
        h.pci(f"pci0000:{0x60 + k * 2:02x}", [f"0000:{0x60 + k * 2:02x}:01.0",
                                             f"0000:{0x61 + k * 2:02x}:00.0"],
              "0x010802", SAMSUNG, "0xa824", numa, NUMA_CPUS_2S[numa],
              Link(cur_speed="16.0 GT/s PCIe", max_speed="16.0 GT/s PCIe", cur_width=4,
                   max_width=4), "nvme")
    # management: two Intel ports bonded, a VLAN on the bond
    mgmt = [h.pci("pci0000:00", ["0000:00:1c.0", f"0000:01:00.{fn}"], "0x020000", INTEL,
                  "0x1563", 0, NUMA_CPUS_2S[0],
                  Link(cur_speed="8.0 GT/s PCIe", max_speed="8.0 GT/s PCIe", cur_width=4,
                       max_width=4), "ixgbe") for fn in (0, 1)]
    h.net("eno1", 1500, pci_dir=mgmt[0], speed=10000, master="bond0")
    h.net("eno2", 1500, pci_dir=mgmt[1], speed=10000, master="bond0")
    h.net("bond0", 1500, slaves=["eno1", "eno2"])
    h.net("bond0.100", 1500, vlan=("bond0", 100))
    h.net("lo", 65536)


def hgx_h100(root: Path, *, degraded: bool = False) -> Path:
    h = FakeHost(root)
    h.host(hostname="hgx-h100-01", kernel="6.8.0-49-generic",
           cmdline="BOOT_IMAGE=/vmlinuz-6.8.0-49-generic root=UUID=1 ro intel_iommu=on iommu=pt "
                   "default_hugepagesz=2M hugepages=8192",
           cpu_model="Intel(R) Xeon(R) Platinum 8480C", sockets=2, cores_per_socket=56,
           smt=True, numa_cpus=NUMA_CPUS_2S, mem_kib=2_113_000_000, hugepages_2m=8192)
    _rail_node(h, gpu_cls="0x030200", gpu_vendor=NV, gpu_device="0x2330", gpu_driver="nvidia",
               degraded=degraded, nvswitches=True, ib_down=5, x8_gpu=3)
    h.users()
    h.modules({"nvidia": "580.95.05", "nvidia_uvm": "580.95.05", "nvidia_modeset": None,
               "nvidia_peermem": "580.95.05", "mlx5_core": "24.10-1.1.4", "mlx5_ib": None,
               "ib_core": None, "nvme": None})
    h.write("proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build"
            "  (dvs-builder@U16-I3-B13-4-1)  Thu Sep 25 20:44:47 UTC 2025\n"
            "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n")
    h.secure_boot(True)
    for i in range(8):
        h.dev(f"nvidia{i}", 0o660)
    for name in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"):
        h.dev(name, 0o660)
    h.dev("nvidia-caps/nvidia-cap1", 0o400)
    for i in range(8):
        h.dev(f"infiniband/uverbs{i}", 0o660)
    h.dpkg({"containerd.io": "2.1.4-1", "nvidia-container-toolkit": "1.18.0-1",
            "runc": "1.3.0-1", "kubelet": "1.34.2-1.1"})
    h.write("etc/cdi/nvidia.yaml", "cdiVersion: 0.6.0\nkind: nvidia.com/gpu\ndevices: []\n")
    return root


def l40s_4(root: Path) -> Path:
    h = FakeHost(root)
    h.host(hostname="l40s-01", kernel="6.1.0-26-amd64",
           cmdline="BOOT_IMAGE=/boot/vmlinuz-6.1.0-26-amd64 root=/dev/sda1 ro amd_iommu=on",
           cpu_model="AMD EPYC 9354 32-Core Processor", sockets=2, cores_per_socket=32,
           smt=True, numa_cpus=["0-31,64-95", "32-63,96-127"], mem_kib=792_000_000)
    numa_cpus = ["0-31,64-95", "32-63,96-127"]
    for i, bus in enumerate((0x01, 0x41, 0x81, 0xc1)):
        numa = 0 if i < 2 else 1
        h.pci(f"pci0000:{bus - 1:02x}", [f"0000:{bus - 1:02x}:01.1", f"0000:{bus:02x}:00.0"],
              "0x030200", NV, "0x26b9", numa, numa_cpus[numa],
              Link(cur_speed="16.0 GT/s PCIe", max_speed="16.0 GT/s PCIe"), "nvidia")
    nic = h.pci("pci0000:20", ["0000:20:03.1", "0000:21:00.0"], "0x020000", MLX, "0x101d", 0,
                numa_cpus[0], Link(cur_speed="16.0 GT/s PCIe", max_speed="16.0 GT/s PCIe"),
                "mlx5_core")
    h.net("ens1f0np0", 9000, pci_dir=nic, speed=100000, driver="mlx5_core")
    h.ib("mlx5_0", nic, rate="100 Gb/sec (4X EDR)", layer="Ethernet")
    nvme = h.pci("pci0000:60", ["0000:60:01.1", "0000:61:00.0"], "0x010802", SAMSUNG, "0xa80a",
                 0, numa_cpus[0], Link(cur_speed="16.0 GT/s PCIe", max_speed="16.0 GT/s PCIe",
                                       cur_width=4, max_width=4), "nvme")
    assert nvme
    h.net("lo", 65536)
    h.users()
    h.modules({"nvidia": "570.172.08", "nvidia_uvm": "570.172.08", "mlx5_core": None})
    h.write("proc/driver/nvidia/version",
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.172.08  Tue Jul  8 17:52:30 UTC"
            " 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
    h.secure_boot(False)
    for i in range(4):
        h.dev(f"nvidia{i}", 0o660)
    h.dev("nvidiactl", 0o660)
    h.dev("nvidia-uvm", 0o660)
    h.dpkg({"containerd": "1.7.24~ds1-1", "nvidia-container-toolkit": "1.17.8-1"})
    return root


def mi300x_8(root: Path) -> Path:
    h = FakeHost(root)
    h.host(hostname="mi300x-01", kernel="6.8.0-60-generic",
           cmdline="BOOT_IMAGE=/vmlinuz root=UUID=2 ro amd_iommu=on iommu=pt",
           cpu_model="AMD EPYC 9654 96-Core Processor", sockets=2, cores_per_socket=56,
           smt=True, numa_cpus=NUMA_CPUS_2S, mem_kib=2_300_000_000)
    _rail_node(h, gpu_cls="0x120000", gpu_vendor=AMD, gpu_device="0x74a1", gpu_driver="amdgpu",
               degraded=False, nvswitches=False, ib_down=None, x8_gpu=None)
    h.users()
    h.modules({"amdgpu": "6.10.5", "mlx5_core": None, "mlx5_ib": None, "ib_core": None})
    h.secure_boot(True)
    h.dev("kfd", 0o660)
    for i in range(8):
        h.dev(f"dri/renderD{128 + i}", 0o660)
        h.dev(f"infiniband/uverbs{i}", 0o660)
    h.dpkg({"containerd.io": "2.1.4-1"})
    return root


def gpu_less_vm(root: Path) -> Path:
    h = FakeHost(root)
    h.host(hostname="vm-01", kernel="6.12.0-1-cloud-amd64",
           cmdline="console=ttyS0 root=/dev/vda1", cpu_model="AMD EPYC", sockets=1,
           cores_per_socket=2, smt=False, numa_cpus=["0-1"], mem_kib=24_000_000)
    h.pci("pci0000:00", ["0000:00:00.0"], "0x060000", INTEL, "0x0d57", iommu=False)
    d = h.pci("pci0000:00", ["0000:00:03.0"], "0x020000", VIRTIO, "0x1041", driver="virtio-pci",
              iommu=False)
    h.net("eth0", 1400, pci_dir=f"{d}/virtio2")
    h.pci("pci0000:00", ["0000:00:02.0"], "0x018000", VIRTIO, "0x1042", driver="virtio-pci",
          iommu=False)
    h.net("lo", 65536)
    h.users()
    h.modules({"virtio_net": None})
    h.secure_boot(None)
    return root
