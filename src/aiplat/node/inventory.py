"""The node inventory model: what a Linux accelerator node *is*, as one versioned document.

This is the contract between the host readers (``aiplat.node.readers``) and everything that
consumes a node description: placement, the version matrix, health checks, and the device
binding layer (``aiplat.devices``). Keep it stable:

- ``SCHEMA_VERSION`` names the document format (``aiplat.io/node-inventory/v1``). Adding an
  optional field is compatible; renaming, removing or changing the meaning of a field needs
  ``v2`` and a new published schema file under ``schema/``.
- Field names are snake_case in Python and in JSON (the document is machine output, not a
  hand-written spec); units are in the name (``memory_kib``, ``rate_gbps``, ``speed_mbps``).
- PCI addresses are always normalised to the sysfs form ``dddd:bb:dd.f`` in lower case
  (NVML and nvidia-smi print ``00000000:1B:00.0``; see ``aiplat.node.pciaddr``).
- ``None`` means "not known on this host" (e.g. ``numa_node`` is -1 in sysfs on VMs), never 0.
- Every model is frozen: readers build it once; consumers never mutate it.

Public entry points: ``Inventory`` (the document), ``inventory_json_schema()`` (the JSON
Schema published as ``schema/node-inventory-v1.schema.json``), and the helper properties on
``Inventory`` (``gpus``, ``nics``, ``pci_by_address``) so consumers need not re-classify.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION: Literal["aiplat.io/node-inventory/v1"] = "aiplat.io/node-inventory/v1"


class InventoryModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DeviceKind(StrEnum):
    """What a PCI function is, from its class code (and vendor for accelerators)."""

    GPU = "gpu"  # 0x0300 VGA, 0x0302 3D controller (SXM), 0x1200 processing accelerator
    NVSWITCH = "nvswitch"  # 0x0680 from NVIDIA
    NIC = "nic"  # 0x0200 Ethernet (incl. RoCE-capable ConnectX)
    INFINIBAND = "infiniband"  # 0x0207
    NVME = "nvme"  # 0x0108
    BRIDGE = "bridge"  # 0x0604 PCI-to-PCI (root ports, switch ports)
    OTHER = "other"


class PciLink(InventoryModel):
    current_speed_gts: float | None = Field(default=None, description="GT/s, e.g. 32.0")
    max_speed_gts: float | None = None
    current_width: int | None = Field(default=None, description="lanes, e.g. 16")
    max_width: int | None = None

    @property
    def width_degraded(self) -> bool:
        return bool(self.current_width and self.max_width and self.current_width < self.max_width)

    @property
    def speed_degraded(self) -> bool:
        return bool(
            self.current_speed_gts
            and self.max_speed_gts
            and self.current_speed_gts < self.max_speed_gts
        )


class PciDevice(InventoryModel):
    address: str = Field(description="normalised sysfs address dddd:bb:dd.f")
    class_code: str = Field(description="24-bit class, e.g. 0x030200")
    kind: DeviceKind
    vendor: str = Field(description="e.g. 0x10de")
    vendor_name: str | None = None
    device: str
    subsystem_vendor: str | None = None
    subsystem_device: str | None = None
    numa_node: int | None = Field(default=None, description="None when sysfs says -1")
    local_cpulist: str | None = None
    link: PciLink | None = None
    driver: str | None = None
    iommu_group: int | None = None
    host_bridge: str | None = Field(default=None, description="root complex, e.g. pci0000:00")
    acs_control: int | None = Field(
        default=None, description="bridges: ACS Control register (bit 0 SV, 1 TB, 2 RR, 3 CR, "
        "4 UF, 5 EC, 6 DT); None: no ACS capability or config space not readable (not root)")
    parents: list[str] = Field(
        default=[], description="bridge addresses from the root port down to the parent"
    )


class NumaNode(InventoryModel):
    id: int
    cpulist: str
    memory_kib: int | None = None
    distances: list[int] = Field(default=[], description="row of the SLIT distance matrix")


class CpuInfo(InventoryModel):
    model: str | None = None
    sockets: int
    cores: int = Field(description="physical cores in total")
    threads: int = Field(description="logical CPUs online")
    smt: bool
    core_threads: list[list[int]] = Field(
        default=[], description="logical CPUs of each physical core (SMT siblings together)"
    )


class Filesystem(InventoryModel):
    mount: str
    fstype: str
    size_bytes: int
    free_bytes: int


class HostInfo(InventoryModel):
    hostname: str | None = None
    kernel: str | None = None
    cmdline: str | None = None
    cpu: CpuInfo | None = None
    memory_kib: int | None = None
    hugepages: dict[str, int] = Field(default={}, description="page size (e.g. '2048kB') -> count")
    numa: list[NumaNode] = []
    iommu_groups: int = Field(default=0, description="entries in /sys/kernel/iommu_groups")
    filesystems: list[Filesystem] = []


class NetInterface(InventoryModel):
    name: str
    mtu: int | None = None
    speed_mbps: int | None = None
    operstate: str | None = None
    driver: str | None = None
    pci_address: str | None = None
    virtual: bool = False
    bond_master: str | None = None
    bond_slaves: list[str] = []
    vlan_parent: str | None = None
    vlan_id: int | None = None


class IbPort(InventoryModel):
    device: str = Field(description="HCA name, e.g. mlx5_0")
    port: int
    state: str | None = Field(default=None, description="e.g. ACTIVE (from '4: ACTIVE')")
    phys_state: str | None = Field(default=None, description="e.g. LinkUp")
    rate_gbps: float | None = None
    rate: str | None = Field(default=None, description="as written, e.g. '400 Gb/sec (4X NDR)'")
    link_layer: str | None = Field(default=None, description="InfiniBand or Ethernet (RoCE)")
    pci_address: str | None = None
    netdevs: list[str] = []


class Module(InventoryModel):
    name: str
    version: str | None = None


class NvidiaDriver(InventoryModel):
    version: str
    flavor: Literal["open", "proprietary"]
    raw: str


class DeviceNode(InventoryModel):
    path: str
    type: Literal["char", "block", "file", "other"]
    mode: str = Field(description="permission bits in octal, e.g. '0660'")
    owner: str
    group: str
    major: int | None = None
    minor: int | None = None


class SoftwareInfo(InventoryModel):
    modules: list[Module] = []
    nvidia_driver: NvidiaDriver | None = None
    secure_boot: Literal["enabled", "disabled", "legacy-boot", "unknown"] = "unknown"
    device_nodes: list[DeviceNode] = []
    runtimes: dict[str, str | None] = Field(
        default={}, description="tool name -> version (None: present, version unknown)"
    )
    cdi_specs: list[str] = []

    def module(self, name: str) -> Module | None:
        return next((m for m in self.modules if m.name == name), None)


class NvLink(InventoryModel):
    link: int
    active: bool
    speed_gbps: float | None = None


class RemappedRows(InventoryModel):
    correctable: int = 0
    uncorrectable: int = 0
    pending: bool = False
    failure: bool = False


class GpuDetail(InventoryModel):
    """What the driver says about one GPU (NVML or ``nvidia-smi -q -x``)."""

    address: str
    index: int | None = None
    uuid: str | None = None
    name: str | None = None
    vbios: str | None = None
    memory_mib: int | None = None
    ecc_enabled: bool | None = None
    ecc_corrected_volatile: int | None = None
    ecc_uncorrected_volatile: int | None = None
    ecc_uncorrected_aggregate: int | None = None
    remapped_rows: RemappedRows | None = None
    clock_event_reasons: list[str] = Field(
        default=[], description="active reasons, e.g. hw_thermal_slowdown"
    )
    temperature_c: float | None = None
    power_w: float | None = None
    nvlinks: list[NvLink] = []
    fabric_state: str | None = Field(
        default=None, description="NVSwitch fabric registration: Not Started, In Progress, "
        "Completed (None: not on a fabric, or not reported)")
    fabric_status: str | None = Field(
        default=None, description="result of the registration: Success or the error")


class TopoMatrix(InventoryModel):
    """``nvidia-smi topo -m`` as data: ``cells[a][b]`` is X, NV#, PIX, PXB, PHB, NODE or SYS."""

    devices: list[str]
    cells: dict[str, dict[str, str]]
    nic_names: dict[str, str] = Field(default={}, description="NIC0 -> mlx5_0")
    cpu_affinity: dict[str, str | None] = {}
    numa_affinity: dict[str, int | None] = {}


class Inventory(InventoryModel):
    schema_version: Literal["aiplat.io/node-inventory/v1"] = SCHEMA_VERSION
    collected_at: str = Field(description="RFC 3339 UTC time of collection")
    root: str = Field(description="file system root the readers used ('/' on a live host)")
    sources: list[str] = Field(default=[], description="what was read, e.g. sysfs, nvml")
    host: HostInfo
    pci: list[PciDevice] = []
    net: list[NetInterface] = []
    ib_ports: list[IbPort] = []
    software: SoftwareInfo = SoftwareInfo()
    gpu_details: list[GpuDetail] = []
    topology: TopoMatrix | None = None
    driver_cuda_version: str | None = Field(
        default=None, description="highest CUDA the driver supports, e.g. '13.0'"
    )
    warnings: list[str] = Field(default=[], description="what could not be read, and why")

    @property
    def gpus(self) -> list[PciDevice]:
        return [d for d in self.pci if d.kind is DeviceKind.GPU]

    @property
    def nics(self) -> list[PciDevice]:
        """Network functions (Ethernet and InfiniBand class); virtual functions included."""
        return [d for d in self.pci if d.kind in (DeviceKind.NIC, DeviceKind.INFINIBAND)]

    @property
    def pci_by_address(self) -> dict[str, PciDevice]:
        return {d.address: d for d in self.pci}

    def gpu_detail(self, address: str) -> GpuDetail | None:
        return next((g for g in self.gpu_details if g.address == address), None)


def inventory_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``Inventory``, with its ``$id``."""
    schema = Inventory.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://aiplat.io/schemas/node-inventory-v1.schema.json",
        **schema,
    }
