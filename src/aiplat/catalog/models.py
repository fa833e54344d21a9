"""Typed catalog entries. Field names carry their unit so no figure is ambiguous.

Memory sizes of accelerators are the marketed capacity in GiB-like "GB" as vendors print them
(an "80GB" H100 exposes 80 GiB of HBM3); bandwidths are decimal (TB/s, GB/s); compute is
dense (no structured sparsity) TFLOP/s, as the vendors' datasheets list next to the sparse
figure.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel


class CatalogEntry(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )


class MigProfile(CatalogEntry):
    """One MIG GPU-instance profile, e.g. ``1g.10gb`` on an H100-80GB."""

    name: str = Field(pattern=r"^[1-7]g\.\d+gb(\+me)?$")
    max_instances: int = Field(ge=1, le=7)
    compute_slices: int = Field(ge=1, le=7, description="g count: sevenths of the SMs")
    memory_slices: int = Field(ge=1, le=8, description="eighths of the memory")
    memory_gb: float = Field(gt=0)
    placements: list[int] = Field(description="allowed start memory slices (of 8)")


class GpuModel(CatalogEntry):
    name: str
    aliases: list[str] = []
    vendor: str
    architecture: str
    form_factor: str = Field(description="sxm, pcie, oam, nvl")
    memory_gb: float = Field(gt=0)
    memory_bandwidth_tbps: float = Field(gt=0)
    bf16_tflops: float = Field(gt=0, description="dense BF16 tensor TFLOP/s")
    fp8_tflops: float | None = Field(default=None, gt=0, description="dense FP8 TFLOP/s")
    fp4_tflops: float | None = Field(default=None, gt=0,
                                     description="dense FP4 (NVFP4) TFLOP/s, Blackwell on")
    int8_tops: float | None = Field(default=None, gt=0)
    fp32_tflops: float = Field(gt=0, description="non-tensor FP32 TFLOP/s")
    tdp_w: float = Field(gt=0)
    interconnect: str = Field(description="e.g. NVLink 4, Infinity Fabric, PCIe 5")
    interconnect_gbps: float = Field(gt=0, description="GB/s per GPU, both directions")
    pcie_gen: int = Field(ge=3, le=6)
    mig_profiles: list[MigProfile] = []
    product_name: str | None = Field(default=None, description="NVML's device name")
    compute_capability: str | None = Field(default=None, pattern=r"^\d+\.\d+$")
    nvml_memory_mib: int | None = Field(default=None, gt=0, alias="nvmlMemoryMiB",
                                        description="NVML memory.total, where known")
    source: str

    ARCHITECTURE_NAMES: ClassVar[dict[str, str]] = {
        "ada": "Ada Lovelace", "ampere": "Ampere", "hopper": "Hopper",
        "blackwell": "Blackwell", "cdna3": "CDNA3", "cdna4": "CDNA4", "gaudi3": "Gaudi 3"}

    @property
    def architecture_name(self) -> str:
        """The architecture as NVML and the DRA driver spell it ("Ada Lovelace")."""
        return self.ARCHITECTURE_NAMES.get(self.architecture, self.architecture.capitalize())

    @property
    def reported_memory_mib(self) -> int:
        """What the driver reports as memory.total: NVML's figure, else 95% of the
        marketed decimal size (a safe lower bound for selectors)."""
        if self.nvml_memory_mib:
            return self.nvml_memory_mib
        return int(self.memory_gb * 1000**3 / 1024**2 * 0.95)

    @field_validator("aliases")
    @classmethod
    def _lower(cls, v: list[str]) -> list[str]:
        return [a.lower() for a in v]


class MlaProjections(CatalogEntry):
    """Multi-head latent attention ranks (DeepSeek-V2/V3 config.json)."""

    q_lora_rank: int = Field(gt=0)
    kv_lora_rank: int = Field(gt=0)
    qk_nope_head_dim: int = Field(gt=0)
    qk_rope_head_dim: int = Field(gt=0)
    v_head_dim: int = Field(gt=0)


class ModelArchitecture(CatalogEntry):
    """A transformer's shape. ``params`` is the total parameter count; for a mixture of
    experts ``active_params`` is what one token touches, ``experts`` the routed experts per
    MoE layer, ``shared_experts`` the always-on ones, ``expert_ffn_hidden`` one expert's FFN
    width (config.json's moe_intermediate_size; Mixtral's experts are ``ffn_hidden`` wide)
    and ``dense_layers`` the layers with a dense FFN instead (DeepSeek-V3's first 3, every
    other one in Llama 4 Maverick)."""

    name: str
    aliases: list[str] = []
    family: str
    params: float = Field(gt=0)
    active_params: float | None = Field(default=None, gt=0)
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    ffn_hidden: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0, description="unset: hidden / heads")
    vocab: int = Field(gt=0)
    max_context: int = Field(gt=0)
    experts: int = Field(default=1, ge=1)
    experts_per_token: int = Field(default=1, ge=1)
    shared_experts: int = Field(default=0, ge=0)
    expert_ffn_hidden: int | None = Field(default=None, gt=0)
    shared_ffn_hidden: int | None = Field(default=None, gt=0)
    dense_layers: int = Field(default=0, ge=0)
    mla: MlaProjections | None = None
    embedding_dim: int | None = Field(
        default=None, gt=0, description="output size of an embedding model"
    )
    source: str

    @model_validator(mode="before")
    @classmethod
    def _default_head_dim(cls, data: object) -> object:
        if isinstance(data, dict) and "headDim" not in data and "head_dim" not in data:
            hidden, heads = data.get("hidden"), data.get("heads")
            if isinstance(hidden, int) and isinstance(heads, int) and heads > 0:
                return {**data, "headDim": hidden // heads}
        return data


Cooling = Literal["air", "liquid", "hybrid"]
"""How the vendor cools the system: ``hybrid`` is direct liquid on the CPUs, GPUs and
switches with fans for the rest (NVIDIA's DGX GB200 racks)."""


class RackScale(CatalogEntry):
    """An NVLink domain larger than one node, bought as whole racks (GB200/GB300 NVL72: 18
    compute trays of 4 GPUs and 9 NVLink switch trays in one rack; an NVL36x2 is the same
    72-GPU domain over 2 racks). The nodes (compute trays, each its own OS) are the pool's
    nodes; the domain is the unit racks and power are counted in and the span tensor and
    expert parallelism keep on NVLink."""

    gpus: int = Field(ge=2, description="GPUs in one NVLink domain")
    nodes: int = Field(ge=2, description="compute trays (nodes) in one domain")
    racks: int = Field(default=1, ge=1, description="racks one domain fills")
    switch_trays: int = Field(ge=0, description="NVLink switch trays per domain")
    power_kw: float = Field(gt=0, description="maximum power of one domain, switch trays, "
                            "fans and power-shelf loss included")
    typical_power_kw: float | None = Field(default=None, gt=0)
    cooling: Cooling = "liquid"

    @model_validator(mode="after")
    def _whole_trays(self) -> RackScale:
        if self.gpus % self.nodes:
            raise ValueError(f"{self.gpus} GPUs do not split into {self.nodes} equal trays")
        return self

    @property
    def gpus_per_node(self) -> int:
        return self.gpus // self.nodes

    @property
    def nodes_per_rack(self) -> int:
        return -(-self.nodes // self.racks)


class NodeType(CatalogEntry):
    """A server model as bought: GPUs, host resources, power and height; for a rack-scale
    system (``rack_scale``) one compute tray, with the domain it is sold in."""

    name: str
    gpu: str | None
    gpus: int = Field(ge=0)
    cpu_cores: int = Field(gt=0)
    memory_gib: int = Field(gt=0)
    system_power_kw: float = Field(gt=0, description="maximum system power under AI load; a "
                                   "tray of a rack-scale system: its share of the domain's")
    typical_power_kw: float | None = Field(default=None, gt=0,
                                           description="typical draw, where published")
    rack_units: int = Field(gt=0, description="height of one node (a tray), U")
    psus: int | None = Field(default=None, gt=0, alias="psus")
    psu_kw: float | None = Field(default=None, gt=0, alias="psuKW")
    psu_redundancy: str | None = Field(default=None, pattern=r"^\d+\+\d+$",
                                       description="e.g. 5+1: PSUs carrying the load + spare")
    cooling: Cooling = "air"
    rack_scale: RackScale | None = None
    source: str

    @model_validator(mode="after")
    def _tray_of_domain(self) -> NodeType:
        rs = self.rack_scale
        if rs is not None and rs.gpus_per_node != self.gpus:
            raise ValueError(f"{self.name}: a tray of a {rs.gpus}-GPU domain over {rs.nodes} "
                             f"trays holds {rs.gpus_per_node} GPUs, not {self.gpus}")
        share_off = rs is not None and abs(self.system_power_kw * rs.nodes - rs.power_kw) \
            > 0.01 * rs.power_kw
        if rs is not None and share_off:
            raise ValueError(f"{self.name}: systemPowerKw is a tray's share of the domain's "
                             f"{rs.power_kw:g} kW, {rs.power_kw / rs.nodes:.3f}, not "
                             f"{self.system_power_kw:g}")
        return self


class CatalogOverlay(CatalogEntry):
    """A site's own entries (``--catalog FILE``): accelerators, models and node types in the
    packaged catalog's form. One whose name or alias names a packaged entry replaces it."""

    gpus: list[GpuModel] = []
    models: list[ModelArchitecture] = []
    node_types: list[NodeType] = []


class Catalog(BaseModel):
    model_config = ConfigDict(frozen=True)

    gpus: list[GpuModel]
    models: list[ModelArchitecture]
    node_types: list[NodeType]

    def overlaid(self, overlay: CatalogOverlay) -> tuple[Catalog, list[str]]:
        """This catalog with ``overlay``'s entries; and which packaged ones they replaced."""
        replaced: list[str] = []
        kinds: dict[str, list[Any]] = {}
        for kind, label in (("gpus", "GPU"), ("models", "model"), ("node_types", "node type")):
            own = list(getattr(overlay, kind))
            kept = []
            for e in getattr(self, kind):
                names = [e.name, *getattr(e, "aliases", [])]
                if any(_find(own, n) is not None for n in names):
                    replaced.append(f"{label} {e.name}")
                else:
                    kept.append(e)
            kinds[kind] = kept + own
        return Catalog(**kinds), replaced

    def gpu(self, name: str) -> GpuModel | None:
        return _find(self.gpus, name)

    def model(self, name: str) -> ModelArchitecture | None:
        return _find(self.models, name)

    def node_type(self, name: str) -> NodeType | None:
        return _find(self.node_types, name)


_E = TypeVar("_E", GpuModel, ModelArchitecture, NodeType)


def _find(entries: list[_E], name: str) -> _E | None:
    key = name.lower()
    for e in entries:
        if e.name.lower() == key or key in getattr(e, "aliases", []):
            return e
    return None
