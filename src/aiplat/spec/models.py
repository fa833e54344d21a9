"""The platform spec: ``apiVersion: aiplat/v1alpha1``, ``kind: Platform``.

One YAML document describes the whole platform; every other capability reads it. Design:
- Keys are camelCase like Kubernetes objects; units are in the key (``memoryGiB``,
  ``rateGbps``, ``powerBudgetKW``) so no figure is ambiguous.
- Every model forbids unknown keys (the loader turns that into a "did you mean").
- Checks that need only the document itself (one-of rules, ranges, unique names, references
  between sections) live here; checks against the catalog (GPU and model names, MIG profiles)
  live in ``aiplat.spec.refs`` so the models stay free of data files.
- Later capabilities (storage, network, versions, operations) already have typed homes, so a
  spec written today keeps loading tomorrow.
"""

from __future__ import annotations

import typing
from enum import StrEnum
from ipaddress import IPv4Network
from typing import Annotated, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from aiplat.errors import InputError
from aiplat.spec import amounts
from aiplat.text import shown

API_VERSION = "aiplat/v1alpha1"

# Pool, tenant and workload names become node labels, namespaces and queue names:
# a DNS-1123 label is the one format that is valid in all of those places.
Name = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63),
]
LabelKey = Annotated[
    str,
    StringConstraints(
        pattern=r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
        max_length=316,
    ),
]
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
"""A label or taint value as the API server validates it (IsValidLabelValue)."""
LabelValue = Annotated[str, StringConstraints(pattern=LABEL_VALUE, max_length=63)]
Fraction = Annotated[float, Field(gt=0, le=1)]

# Strings that reach a root shell, apt or a udev rule (``node prepare``, the runbook) hold
# to the grammar of what they name, checked here at load with the fix; the shell text is
# also quoted where it is assembled (``aiplat.shell``). Each pattern's hint is in
# PATTERN_HINTS, which the loader shows instead of the pattern.
MODULE_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,54}$"
"""A kernel module name: MODULE_NAME_LEN is 56 bytes with the NUL (include/linux/module.h);
modprobe treats '-' and '_' alike. Not starting with '-': modprobe would read an option."""
SYSTEM_NAME = r"^[a-z_][a-z0-9_-]{0,31}$"
"""A user or group name as useradd/groupadd accept by default (shadow-utils' NAME_REGEX,
32 characters); the '$' of machine accounts is left out."""
_VERSION = r"v?(?:[0-9]+:)?[0-9][A-Za-z0-9.+~-]*"
_CLAUSE = rf"(?:(?:>=|<=|==|!=|>|<) ?)?{_VERSION}"
_CLAUSES = rf"{_CLAUSE}(?: ?, ?{_CLAUSE})*"
VERSION_SPEC = rf"^{_CLAUSES}$"
"""A version ('580.95.05', 'v25.10.0', '6.8.0-49-generic', '1:2.1.4-1') or a range
('>=6.1,<6.13'): Debian's version characters (deb-version(7)) and the comparison operators
node/matrix.py reads, nothing else. Patterns say [0-9], not \\d: \\d also matches other
scripts' digits ('1.３４'), which int() reads but no package manager does."""
RUNTIME_SPEC = rf"^(?i:containerd|cri-o) {_CLAUSES}$"
"""The container runtime and its version or range ('containerd 2.1', 'cri-o >=1.33'): the
two CRI runtimes node prepare installs and configures; any other name would be installed,
pinned and restarted as a package of that name."""
Version = Annotated[str, StringConstraints(pattern=VERSION_SPEC, max_length=128)]
RuntimeVersion = Annotated[str, StringConstraints(pattern=RUNTIME_SPEC, max_length=128)]
ModuleName = Annotated[str, StringConstraints(pattern=MODULE_NAME)]
SystemName = Annotated[str, StringConstraints(pattern=SYSTEM_NAME)]
NODE_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
"""A Kubernetes node name: a DNS-1123 subdomain (the API server's rule for Node names)."""
NodeName = Annotated[str, StringConstraints(pattern=NODE_NAME, max_length=253)]
PATTERN_HINTS: dict[str, tuple[str, str]] = {
    LABEL_VALUE: (
        "a label value", "at most 63 letters, digits, '-', '_' and '.', starting and ending "
        "with a letter or digit (or empty), as Kubernetes validates it"),
    MODULE_NAME: ("a kernel module name", "letters, digits, '_' and '-', at most 55 "
                  "(e.g. br_netfilter)"),
    SYSTEM_NAME: ("a Linux user or group name", "lowercase letters, digits, '_' and '-', "
                  "starting with a letter or '_', at most 32 (e.g. video)"),
    VERSION_SPEC: ("a version or a range of versions", "e.g. 580.95.05, v25.10.0 or "
                   "'>=6.1,<6.13': letters, digits, . + ~ - : and the operators "
                   ">= <= == != > < only"),
    NODE_NAME: ("a Kubernetes node name", "lowercase letters, digits, '-' and '.', "
                "starting and ending with a letter or digit, at most 253 (e.g. gpu-r01-n03)"),
    RUNTIME_SPEC: ("a container runtime and its version", "containerd or cri-o, a space, "
                   "then a version or range, e.g. 'containerd 2.1' or 'cri-o 1.36'"),
}
"""pattern -> (what the value must be, the fix), for the loader's message."""

# Tenants become namespaces with rights for their groups: a tenant must not be a namespace
# that Kubernetes, aiplat or an operator aiplat installs runs in (its groups would get pod
# create there: a path to cluster-admin), and a group must not be one Kubernetes assigns.
RESERVED_NAMESPACES: frozenset[str] = frozenset({
    "default", "kube-system", "kube-public", "kube-node-lease",
    "aiplat-system", "aiplat-gateway",                  # aiplat's node agent and gateway
    "kueue-system", "gpu-operator", "monitoring",       # what the tree renders and installs
    "nvidia-dra-driver-gpu", "node-feature-discovery",  # the operators' default namespaces
    "nvidia-network-operator", "jobset-system", "lws-system", "cert-manager",
    "envoy-gateway-system",                             # the default Gateway controller's
    # Add-ons a cluster commonly runs whose namespaces do not end in -system (each chart's or
    # manifest's documented default namespace).
    "tigera-operator", "calico-apiserver", "argocd", "ingress-nginx", "local-path-storage",
    "rook-ceph", "metallb", "keda", "velero", "kyverno", "external-secrets", "vault",
    "prometheus", "grafana", "loki", "tempo", "observability", "kubeflow", "cilium-secrets",
    "nvidia-gpu-operator", "gpu-operator-resources", "traefik", "kong", "harbor", "minio",
    "minio-operator", "openebs", "kubernetes-dashboard", "mpi-operator", "spark-operator",
    "kuberay-operator", "volcano-monitoring", "istio-ingress", "crossplane-system",
    "kserve", "argo", "argo-rollouts", "argo-events", "runai", "runai-backend",
    "kai-scheduler", "falco", "nvidia-device-plugin", "jupyterhub", "mlflow",
})
RESERVED_NAMESPACE_PREFIXES = ("kube-", "aiplat-", "openshift-", "linkerd", "knative-",
                               "cattle-", "gatekeeper")
RESERVED_NAMESPACE_SUFFIX = "-system"
"""By convention a platform component's namespace ends in -system (kueue-system,
calico-system, istio-system, flux-system, cattle-system, envoy-gateway-system, ...): a
tenant may not take one, so an add-on installed later cannot find its namespace owned."""


def reserved_namespace(name: str) -> bool:
    """A namespace Kubernetes, aiplat or an operator runs in (by name or convention)."""
    return (name in RESERVED_NAMESPACES or name.startswith(RESERVED_NAMESPACE_PREFIXES)
            or name.endswith(RESERVED_NAMESPACE_SUFFIX))


RESERVED_SUBJECT_PREFIX = "system:"
"""Kubernetes reserves 'system:' for its own users and groups (system:authenticated,
system:masters, system:serviceaccounts:...): binding one grants every such identity."""

# Upper bounds keep every figure the planner derives finite: a value that validates must plan.
MAX_TOKENS = 10_485_760
"""Tokens in one prompt, answer or context (10 Mi; the longest contexts today are 1-2 Mi)."""
MAX_QUOTA = 1_000_000
"""GPUs (or MIG/replica units) in one quota figure."""
MIN_WEIGHT = 0.001
"""The smallest non-zero fair-sharing weight (Kueue divides usage by it)."""


class SpecModel(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=True,
        # .inf/.nan are valid YAML floats but no figure in a spec may be infinite or undefined.
        allow_inf_nan=False,
    )

    @field_validator("*", mode="before")
    @classmethod
    def _printable(cls, v: object, info: ValidationInfo) -> object:
        """No spec string holds a control or format character (but newline and tab): it would
        reach a script, a manifest, the runbook or a terminal raw (an escape sequence, a
        bidi override reordering a command). Strings directly in a list or in a mapping
        field (labels) too; a nested model checks its own fields (so the error names them)."""
        field = cls.model_fields.get(info.field_name or "")
        ann = field.annotation if field else None
        mapping = isinstance(v, dict) and any(
            typing.get_origin(a) is dict for a in (ann, *typing.get_args(ann)))
        texts: list[tuple[tuple[typing.Any, ...], object]]
        if mapping and isinstance(v, dict):
            texts = [((k,), k) for k in v] + [((k,), x) for k, x in v.items()]
        elif isinstance(v, list | tuple):
            texts = [((i,), x) for i, x in enumerate(v)]
        else:
            texts = [((), v)]
        for at, text in texts:
            if isinstance(text, str) and not text.replace("\n", "").replace("\t", "")\
                    .isprintable():
                bad = next(c for c in text if not c.isprintable() and c not in "\n\t")
                raise SpecValueError(f"'{shown(text[:60])}' holds the control or format "
                                     f"character {shown(bad)} (U+{ord(bad):04X})",
                                     "remove it: spec text is printable (newlines and tabs "
                                     "only in descriptions)", at)
        return v

    @field_validator("*", mode="before")
    @classmethod
    def _amount(cls, v: object, info: ValidationInfo) -> object:
        """``memoryGiB: 2Ti``: a string in a field whose name carries a unit is an amount
        with its own unit, converted to the field's (``spec/amounts.py``)."""
        field = cls.model_fields.get(info.field_name or "")
        if not isinstance(v, str) or field is None:
            return v
        name = field.alias or info.field_name or ""
        if amounts.field_unit(name) is None:
            return v
        args = typing.get_args(field.annotation) or (field.annotation,)
        try:
            return amounts.convert(v, name, integer=int in args and float not in args)
        except amounts.AmountError as e:
            raise SpecValueError(str(e), e.fix) from None

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, v: object, info: ValidationInfo) -> object:
        """``count: true`` is not 1 GPU: pydantic's lax mode would read a bool as a number."""
        if isinstance(v, bool) and info.field_name is not None:
            field = cls.model_fields.get(info.field_name)
            allowed = typing.get_args(field.annotation) if field else ()
            annotation = field.annotation if field else None
            if (annotation in (int, float) or (allowed and bool not in allowed
                                                and set(allowed) & {int, float})):
                raise SpecValueError(f"{str(v).lower()} is not a number",
                                     "write the number itself")
        return v


class SpecValueError(InputError, ValueError):
    """A rule inside the document is broken. ``hint`` says how to fix it; ``at`` is the
    location of the offending key relative to the model that raised (aliases, as written),
    so the loader can point at that line instead of the start of the model."""

    def __init__(self, message: str, hint: str = "", at: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.hint = hint
        self.at = at


class Metadata(SpecModel):
    name: Name
    description: str = ""


# ---------------------------------------------------------------------------- cluster, site


class CohortSpec(SpecModel):
    name: Name
    parent: Name | None = Field(default=None, description="unset: the platform's root cohort")


Owner = Literal["host", "operator"]


class ComponentsSpec(SpecModel):
    """Who installs and upgrades each node-level GPU component: ``host`` (``aiplat node
    prepare`` installs the pinned package; the GPU Operator leaves it alone) or ``operator``
    (the GPU Operator's ClusterPolicy deploys it and its upgrade controller rolls it; node
    prepare leaves it out). One owner each: the operator values, node prepare, the runbook's
    procedures and lint all read this. The device plugin and the DRA driver are not chosen
    here: each pool's ``gpuResources`` decides (the operator's device plugin, or the DRA
    driver's own chart); MIG Manager and the DCGM exporter are the operator's."""

    driver: Owner = Field(
        default="host", description="the NVIDIA kernel driver: host packages (DKMS, signed "
        "for Secure Boot by node prepare) or the operator's driver container")
    toolkit: Owner = Field(
        default="host", description="the NVIDIA Container Toolkit and the runtime's CDI "
        "configuration: host packages or the operator's toolkit container")


class KubernetesSpec(SpecModel):
    version: Annotated[str, StringConstraints(pattern=r"^1\.[0-9]{2}$")] = Field(
        default="1.34", description="target Kubernetes minor version, e.g. '1.34'"
    )
    kueue_version: Annotated[str, StringConstraints(pattern=r"^[0-9]+\.[0-9]+\.[0-9]+$")] = "0.19.2"
    managed_control_plane: bool = Field(
        default=False, description="control plane run by a provider: no control-plane nodes"
    )
    gpu_resources: Literal["device-plugin", "dra"] = Field(
        default="device-plugin",
        description="how pods ask for GPUs: device-plugin resources (nvidia.com/gpu) or DRA "
        "claims on DeviceClasses (Kueue counts them via deviceClassMappings)",
    )
    kueue_api: Literal["v1beta2", "v1beta1"] = "v1beta2"
    gateway_controller: str = Field(
        default="gateway.envoyproxy.io/gatewayclass-controller",
        description="controllerName of the GatewayClass the inference Gateway uses (the "
        "Gateway API implementation installed: Envoy Gateway by default)")
    fair_sharing: bool = Field(
        default=True, description="Kueue fair sharing between the tenants' ClusterQueues by "
        "their weights (the Configuration's fairSharing); off: classic borrowing order")
    cohorts: list[CohortSpec] = Field(
        default_factory=list, description="nested Kueue cohorts; tenants join one by name"
    )
    components: ComponentsSpec = Field(
        default_factory=ComponentsSpec, description="who owns the driver and the container "
        "toolkit on the GPU nodes: the host (node prepare) or the GPU Operator")


class Cooling(StrEnum):
    AIR = "air"
    REAR_DOOR = "rear-door"
    DIRECT_LIQUID = "direct-liquid"
    IMMERSION = "immersion"


class SwitchPrices(SpecModel):
    """One switch's price per fabric (as ``network.fabric`` names them): an InfiniBand
    compute switch and a 1 GbE management switch differ a hundredfold."""

    compute: float | None = Field(default=None, ge=0, le=1e8)
    storage: float | None = Field(default=None, ge=0, le=1e8)
    in_band: float | None = Field(default=None, ge=0, le=1e8)
    out_of_band: float | None = Field(default=None, ge=0, le=1e8)


class PriceSpec(SpecModel):
    """What the platform's parts cost, in site.currency, for the report's bill of materials.

    Every price is optional: a part without one is listed with "no price given", and the
    totals say how many parts they leave out. A GPU node's price is on its pool
    (``pools[].node.price``)."""

    source: str = Field(default="", max_length=200, description="where the figures come "
                        "from, printed beside every total: a quote's reference, or "
                        "'illustrative, not a quote'")
    cpu_node: float | None = Field(default=None, ge=0, le=1e8, description="one non-compute "
                                   "node (control plane, login, storage gateway ...)")
    rack: float | None = Field(default=None, ge=0, le=1e7, description="one rack with its "
                               "PDUs")
    switch: SwitchPrices = SwitchPrices()
    cable: float | None = Field(default=None, ge=0, le=1e6, description="one compute-fabric "
                                "cable")
    transceiver: float | None = Field(default=None, ge=0, le=1e6)
    ufm_appliance: float | None = Field(default=None, ge=0, le=1e7)
    storage_per_tb: float | None = Field(
        default=None, ge=0, le=1e6, alias="storagePerTB", description="shared storage "
        "(file, object, block classes) per TB of capacity; local NVMe is in the node price")
    support_per_year: float | None = Field(
        default=None, ge=0, le=1, description="support and maintenance per year, as a share "
        "of the purchase price (0.1: 10 %)")


class SiteSpec(SpecModel):
    power_budget_kw: float = Field(gt=0, le=10_000_000, alias="powerBudgetKW",
                                   description="IT power available")
    rack_power_limit_kw: float = Field(gt=0, le=1000, alias="rackPowerLimitKW")
    rack_units: int = Field(default=42, ge=10, le=60, description="usable height of a rack")
    cooling: Cooling = Cooling.AIR
    pue: float = Field(default=1.3, ge=1.0, le=3.0)
    electricity_price_per_kwh: float = Field(default=0.20, ge=0, le=100,
                                             alias="electricityPricePerKWh")
    currency: Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")] = "EUR"
    prices: PriceSpec = Field(default_factory=PriceSpec, description="parts' prices for the "
                              "bill of materials (unset: listed without a price)")


class ReserveSpec(SpecModel):
    node_failures_per_year: float = Field(
        default=0.25,
        ge=0,
        le=20,
        description="hardware failures per node per year that need a part or node replaced",
    )
    replacement_lead_time_days: float = Field(default=14, gt=0, le=365)
    target_availability: float = Field(default=0.99, gt=0, lt=1)
    support_contract: Literal["4h", "next-business-day", "5x9", "best-effort"] = (
        "next-business-day"
    )


# ---------------------------------------------------------------------------- pools


INLINE_GPU_REQUIRED = {"memory_gb": "memoryGB", "memory_bandwidth_tbps": "memoryBandwidthTBps",
                       "bf16_tflops": "bf16Tflops", "tdp_w": "tdpW"}
"""What a GPU outside the catalog must state for sizing (memory, bandwidth, compute, power)."""


class GpuSpec(SpecModel):
    model: str = Field(min_length=1, description="catalog GPU name or alias, e.g. "
                       "H100-SXM-80GB; a name outside the catalog needs the figures below")
    count: int = Field(ge=1, le=16)
    price_per_gpu_hour: float | None = Field(
        default=None, ge=0, le=10_000, description="what one GPU-hour costs (in site.currency: "
        "a cloud rate, or amortised purchase + operations); unset: no cost per run or per "
        "million tokens")
    memory_gb: float | None = Field(default=None, gt=0, le=100_000, alias="memoryGB",
                                    description="inline GPU: memory per GPU, GB (decimal)")
    memory_bandwidth_tbps: float | None = Field(
        default=None, gt=0, le=1000, alias="memoryBandwidthTBps",
        description="inline GPU: peak memory bandwidth, TB/s")
    bf16_tflops: float | None = Field(default=None, gt=0, le=1_000_000,
                                      description="inline GPU: dense BF16 TFLOP/s")
    fp8_tflops: float | None = Field(default=None, gt=0, le=1_000_000,
                                     description="inline GPU: dense FP8 TFLOP/s; unset: no FP8")
    fp4_tflops: float | None = Field(default=None, gt=0, le=1_000_000,
                                     description="inline GPU: dense FP4 (NVFP4) TFLOP/s; unset: "
                                     "no FP4 (fp4 weights then run at the FP8 rate)")
    tdp_w: float | None = Field(default=None, gt=0, le=100_000, alias="tdpW",
                                description="inline GPU: board power, W")
    interconnect_gbps: float | None = Field(
        default=None, gt=0, le=100_000, alias="interconnectGBps",
        description="inline GPU: GPU-to-GPU bandwidth per GPU, GB/s both directions; unset: "
        "PCIe 5 x16 (128 GB/s)")

    @model_validator(mode="after")
    def _inline_complete(self) -> Self:
        given = [f for f in INLINE_GPU_REQUIRED if getattr(self, f) is not None]
        if given and len(given) < len(INLINE_GPU_REQUIRED):
            missing = [key for f, key in INLINE_GPU_REQUIRED.items() if f not in given]
            raise SpecValueError(
                f"an inline GPU needs {', '.join(missing)} as well",
                "give memoryGB, memoryBandwidthTBps, bf16Tflops and tdpW from the datasheet")
        return self

    @property
    def inline(self) -> bool:
        """The spec gives the GPU's figures itself (a GPU outside the catalog, or overrides)."""
        return self.memory_gb is not None


class NicType(StrEnum):
    ETHERNET = "ethernet"
    ROCE = "roce"
    INFINIBAND = "infiniband"


class SegmentPurpose(StrEnum):
    MANAGEMENT = "management"
    STORAGE = "storage"
    SERVICE = "service"
    HPC = "hpc"


class NicSpec(SpecModel):
    type: NicType
    rate_gbps: float = Field(gt=0, le=1600, alias="rateGbps")
    count: int = Field(default=1, ge=1, le=32)
    segment: SegmentPurpose


class NvmeSpec(SpecModel):
    count: int = Field(ge=0, le=64)
    size_tb: float = Field(gt=0, le=1000, alias="sizeTB")


class NodeChecksSpec(SpecModel):
    """Thresholds for ``aiplat node check`` and ``baseline compare`` on this pool's nodes."""

    max_gpu_temp_c: float = Field(default=85, gt=0, le=120, alias="maxGpuTempC")
    max_ecc_uncorrected: int = Field(default=0, ge=0, le=1_000_000, description="volatile, per GPU")
    max_remapped_rows_uncorrectable: int | None = Field(
        default=None, ge=0, description="unset: only pending/failed remapping is flagged"
    )
    xid_window_hours: float = Field(default=24, gt=0, le=8760)
    min_free_disk_percent: float = Field(default=10, ge=0, le=100)
    required_modules: list[ModuleName] = []
    secure_boot: Literal["required", "forbidden", "any"] = "any"
    iommu: Literal["required", "off", "any"] = "any"
    acs: Literal["disabled", "enabled", "any"] = Field(
        default="any", description="PCIe ACS redirect on bridges above GPUs and RDMA NICs: "
        "'disabled' for GPUDirect peer traffic, 'enabled' for device passthrough isolation"
    )
    device_owner: SystemName = "root"
    device_group: SystemName | None = Field(default=None, description="unset: any group")
    mtu: int | None = Field(default=None, ge=576, le=65536, description="unset: from segments")
    baseline_tolerance: Fraction = Field(
        default=0.10, description="slowdown of a baseline median that counts as a regression"
    )


class CharDeviceSpec(SpecModel):
    """A generic character device that containers get through CDI (``aiplat cdi generate``):
    ``kind`` ``vendor.com/class`` and device ``name`` follow the CDI naming rules."""

    kind: Annotated[str, StringConstraints(
        pattern=r"^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?/[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")]
    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$")]
    paths: list[Annotated[str, StringConstraints(pattern=r"^/dev/")]] = Field(
        min_length=1, description="device nodes on the host, e.g. /dev/fpga0"
    )


class RackScaleSpec(SpecModel):
    """An NVLink domain larger than a node, bought as whole racks (a GB200 NVL72: 72 GPUs over
    18 compute trays and 9 NVLink switch trays in one rack; an NVL36x2: the same over 2 racks).
    The pool's nodes are the compute trays; racks and power are counted per domain and tensor
    and expert parallelism may span it on NVLink."""

    gpus: int = Field(ge=2, le=100_000, description="GPUs in one NVLink domain")
    nodes: int = Field(ge=2, le=10_000, description="compute trays (nodes) in one domain")
    racks: int = Field(default=1, ge=1, le=64, description="racks one domain fills")
    switch_trays: int = Field(default=0, ge=0, le=1000, description="NVLink switch trays")
    power_kw: float = Field(gt=0, le=10_000, alias="powerKW",
                            description="maximum power of one domain, switch trays included")
    cooling: Literal["air", "liquid", "hybrid"] = "liquid"


class NodeSpec(SpecModel):
    node_type: str | None = Field(
        default=None, description="catalog node type; supplies system power when set"
    )
    rack_units: int | None = Field(
        default=None, ge=1, le=60, alias="rackUnits", description="height of one node, U "
        "(unset: the node type's, else 2U up to 2 GPUs, 4U for 4, 8U for 8)")
    rack_scale: RackScaleSpec | None = Field(
        default=None, description="the node is a compute tray of a rack-scale NVLink domain "
        "(unset: the node type's, if it is one)")
    gpu: GpuSpec | None = None
    cpu_cores: int = Field(ge=1, le=1024)
    memory_gib: int = Field(ge=1, le=65536, alias="memoryGiB")
    nics: list[NicSpec] = []
    nvme: NvmeSpec | None = None
    power_kw: float | None = Field(
        default=None, gt=0, le=200, alias="powerKW", description="measured or rated system power"
    )
    checks: NodeChecksSpec = NodeChecksSpec()
    price: float | None = Field(
        default=None, ge=0, le=1e9, description="purchase price of one node as configured "
        "(GPUs, NICs, NVMe), in site.currency; unset: the report says it has no price")
    char_devices: list[CharDeviceSpec] = Field(
        default=[], description="generic character devices exposed through CDI"
    )


class Autoscaling(SpecModel):
    min: int = Field(ge=0, le=10000)
    max: int = Field(ge=1, le=10000)
    startup_seconds: int = Field(default=600, ge=0, le=7200)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.min > self.max:
            raise SpecValueError(
                f"autoscaling min ({self.min}) is above max ({self.max})",
                "make min at most max",
                ("min",),
            )
        return self


class SharingStrategy(StrEnum):
    EXCLUSIVE = "exclusive"
    MIG = "mig"
    TIME_SLICING = "time-slicing"
    MPS = "mps"


class SharingSpec(SpecModel):
    strategy: SharingStrategy = SharingStrategy.EXCLUSIVE
    mig_layout: list[str] | None = Field(
        default=None, description="MIG profiles on every GPU, e.g. ['3g.40gb', '2g.20gb', ...]"
    )
    replicas: int | None = Field(default=None, ge=2, le=48)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        s = self.strategy
        if s is SharingStrategy.MIG and not self.mig_layout:
            raise SpecValueError(
                "strategy 'mig' needs migLayout (the profiles on each GPU)",
                "add migLayout, e.g. [3g.40gb, 3g.40gb]",
                ("strategy",),
            )
        if s is not SharingStrategy.MIG and self.mig_layout:
            raise SpecValueError(
                f"migLayout is only used with strategy 'mig', not '{s.value}'",
                "set strategy: mig, or remove migLayout",
                ("migLayout",),
            )
        if s in (SharingStrategy.TIME_SLICING, SharingStrategy.MPS) and self.replicas is None:
            raise SpecValueError(
                f"strategy '{s.value}' needs replicas (2..48 per GPU)",
                "add replicas, e.g. replicas: 4",
                ("strategy",),
            )
        if s in (SharingStrategy.EXCLUSIVE, SharingStrategy.MIG) and self.replicas is not None:
            raise SpecValueError(
                f"replicas is only used with time-slicing or mps, not '{s.value}'",
                "remove replicas, or set strategy: time-slicing or mps",
                ("replicas",),
            )
        return self


class TopologySpec(SpecModel):
    block_label: LabelKey = "topology.aiplat.io/block"
    rack_label: LabelKey = "topology.aiplat.io/rack"
    nodes_per_rack: int | None = Field(
        default=None, ge=1, le=64, description="default: as many as rack power allows"
    )
    racks_per_block: int = Field(default=4, ge=1, le=256)


class TaintEffect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


class Taint(SpecModel):
    key: LabelKey
    value: LabelValue = ""
    effect: TaintEffect = TaintEffect.NO_SCHEDULE


class PoolSpec(SpecModel):
    name: Name
    zone: Name | None = None
    node: NodeSpec
    count: int | None = Field(default=None, ge=0, le=100000)
    autoscaling: Autoscaling | None = None
    gpu_resources: Literal["device-plugin", "dra"] | None = Field(
        default=None, description="how this pool's pods ask for GPUs (default: "
        "kubernetes.gpuResources); a pool is one or the other: the NVIDIA DRA driver does not "
        "run beside the device plugin on a node")
    sharing: SharingSpec = SharingSpec()
    topology: TopologySpec = TopologySpec()
    taints: list[Taint] = []
    labels: dict[LabelKey, LabelValue] = {}
    node_names: list[NodeName] | None = Field(
        default=None, max_length=100000, description="the pool's node names in physical "
        "order, rack by rack (the floor plan): with it the tree labels and taints the nodes "
        "with NodeFeatureRules (pool, rack, block), without it with a reviewed script")

    @model_validator(mode="after")
    def _inventory(self) -> Self:
        if self.node_names is None:
            return self
        seen: dict[str, int] = {}
        for i, name in enumerate(self.node_names):
            if name in seen:
                raise SpecValueError(
                    f"node '{name}' is listed twice (entries {seen[name]} and {i})",
                    "list every node of the pool once, in physical order", ("nodeNames", i))
            seen[name] = i
        size = self.count if self.count is not None else (
            self.autoscaling.max if self.autoscaling is not None else None)
        if size is not None and len(self.node_names) != size:
            what = "count" if self.count is not None else "autoscaling.max"
            raise SpecValueError(
                f"nodeNames lists {len(self.node_names)} nodes but the pool's {what} is {size}",
                f"list all {size} nodes, rack by rack (rack and block labels follow their "
                f"order), or set {what} to {len(self.node_names)}", ("nodeNames",))
        return self

    @model_validator(mode="after")
    def _sized(self) -> Self:
        if self.count is not None and self.autoscaling is not None:
            raise SpecValueError(
                "count and autoscaling are both given",
                "keep count for a fixed size or autoscaling (min/max), not both",
                ("autoscaling",),
            )
        if self.count is None and self.autoscaling is None:
            raise SpecValueError(
                "the pool has no size",
                "add count (fixed size) or autoscaling: {min: ..., max: ...}",
            )
        if self.sharing.strategy is not SharingStrategy.EXCLUSIVE and self.node.gpu is None:
            raise SpecValueError(
                "GPU sharing is set but the node has no gpu",
                "add node.gpu, or remove sharing",
                ("sharing",),
            )
        return self

    @property
    def nodes(self) -> int:
        """Nodes the plan sizes for: the fixed count, or the autoscaling maximum."""
        if self.count is not None:
            return self.count
        assert self.autoscaling is not None
        return self.autoscaling.max

    @property
    def gpus(self) -> int:
        return self.nodes * (self.node.gpu.count if self.node.gpu else 0)


# ---------------------------------------------------------------------------- tenants


class PoolQuota(SpecModel):
    gpus: float = Field(ge=0, le=MAX_QUOTA,
                        description="nominal quota in GPUs (whole or MIG/replica units)")
    borrowing_limit: float | None = Field(default=None, ge=0, le=MAX_QUOTA,
                                         description="unset: whole cohort")
    lending_limit: float | None = Field(default=None, ge=0, le=MAX_QUOTA,
                                       description="unset: lend all")

    @model_validator(mode="after")
    def _lend_within_quota(self) -> Self:
        if self.lending_limit is not None and self.lending_limit > self.gpus:
            raise SpecValueError(
                f"lendingLimit {self.lending_limit:g} exceeds the nominal quota {self.gpus:g}",
                f"use a lendingLimit of at most {self.gpus:g}, or raise gpus",
                ("lendingLimit",),
            )
        return self


class PreemptionSpec(SpecModel):
    """Kueue ClusterQueue preemption policies, with Kueue's names."""

    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Any"
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = (
        "LowerPriority"
    )
    borrow_within_cohort: Literal["Never", "LowerPriority"] = "Never"


class TenantSpec(SpecModel):
    name: Name
    description: str = ""
    weight: float = Field(default=1.0, ge=0, le=1000, description="fair-sharing weight")
    quota: dict[Name, PoolQuota] = Field(default_factory=dict, description="per pool name")
    admins: list[str] = []
    users: list[str] = []
    cohort: Name | None = Field(default=None, description="unset: the platform's root cohort")
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    preemption: PreemptionSpec = PreemptionSpec()
    pod_security: Literal["privileged", "baseline", "restricted"] = "restricted"
    secrets_access: bool = Field(default=False, description="team roles may read Secrets")

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if reserved_namespace(name):
            raise SpecValueError(
                f"'{name}' is a namespace Kubernetes, aiplat or an operator runs in: the "
                "tenant's groups would get pod create there (a path to cluster-admin)",
                "name the tenant after the team (e.g. research); reserved: names starting "
                f"with {', '.join(RESERVED_NAMESPACE_PREFIXES)} or ending in "
                f"{RESERVED_NAMESPACE_SUFFIX}, and " + ", ".join(
                    n for n in sorted(RESERVED_NAMESPACES)
                    if not n.startswith(RESERVED_NAMESPACE_PREFIXES)
                    and not n.endswith(RESERVED_NAMESPACE_SUFFIX)))
        return name

    @field_validator("admins", "users")
    @classmethod
    def _not_system_subjects(cls, groups: list[str]) -> list[str]:
        for i, g in enumerate(groups):
            if g.startswith(RESERVED_SUBJECT_PREFIX):
                raise SpecValueError(
                    f"'{g}' is a group Kubernetes assigns itself ({RESERVED_SUBJECT_PREFIX}*): "
                    "binding it grants the tenant's rights to every such identity",
                    "name the team's group from your identity provider (e.g. oidc:ml-team)",
                    (i,))
            if not g or any(not c.isprintable() for c in g):
                raise SpecValueError(f"{g!r} is not a group name",
                                     "give the group as your identity provider names it, on "
                                     "one line", (i,))
        return groups

    @field_validator("weight")
    @classmethod
    def _weight(cls, v: float) -> float:
        if 0 < v < MIN_WEIGHT:
            raise SpecValueError(f"weight {v:g} is too small to divide by",
                                 f"use 0 (no share) or at least {MIN_WEIGHT:g}")
        return v


# ---------------------------------------------------------------------------- workloads


class WorkloadKind(StrEnum):
    PRETRAIN = "pretrain"
    FINETUNE = "finetune"
    LORA = "lora"
    RAG = "rag"
    BATCH_INFERENCE = "batch-inference"
    ONLINE_INFERENCE = "online-inference"

    @property
    def trains(self) -> bool:
        return self in (WorkloadKind.PRETRAIN, WorkloadKind.FINETUNE, WorkloadKind.LORA)

    @property
    def serves(self) -> bool:
        """Answers requests online: always on, reached through the inference gateway."""
        return self in (WorkloadKind.ONLINE_INFERENCE, WorkloadKind.RAG)


class Precision(StrEnum):
    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    FP4 = "fp4"
    INT8 = "int8"
    INT4 = "int4"


class ModelRef(SpecModel):
    """A catalog model by ``name``, or an architecture given in full (``params`` and shape)."""

    name: str | None = Field(default=None, description="catalog model name or alias")
    params: float | None = Field(default=None, gt=0, le=1e15,
                                  description="total parameters, e.g. 7.2e9")
    layers: int | None = Field(default=None, ge=1, le=1000)
    hidden: int | None = Field(default=None, ge=64, le=131072)
    ffn_hidden: int | None = Field(default=None, ge=64, le=1048576)
    heads: int | None = Field(default=None, ge=1, le=1024)
    kv_heads: int | None = Field(default=None, ge=1, le=1024)
    vocab: int | None = Field(default=None, ge=1, le=10_000_000)
    max_context: int | None = Field(default=None, ge=128, le=MAX_TOKENS)
    head_dim: int | None = Field(default=None, ge=8, le=4096,
                                 description="unset: hidden / heads (config.json head_dim)")
    active_params: float | None = Field(
        default=None, gt=0, le=1e15, description="mixture of experts: parameters one token "
        "uses (attention, dense and shared parts, expertsPerToken routed experts); unset: "
        "params for a dense model, the catalog's figure for a catalog one")
    experts: int | None = Field(default=None, ge=1, le=4096,
                                description="routed experts per MoE layer; unset or 1: dense")
    experts_per_token: int | None = Field(default=None, ge=1, le=4096,
                                          description="routed experts each token uses (top-k)")
    shared_experts: int | None = Field(default=None, ge=0, le=64,
                                       description="always-on experts per MoE layer")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: object) -> object:
        # `model: llama-3-70b` is the common case; expand it to `{name: ...}`.
        return {"name": data} if isinstance(data, str) else data

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # The schema must accept the shorthand too, or editors flag `model: llama-3-70b`.
        schema = handler.resolve_ref_schema(handler(core_schema))
        shorthand = {"type": "string", "minLength": 1, "description": "catalog model name or alias"}
        return {"anyOf": [shorthand, schema]}

    @model_validator(mode="after")
    def _sized(self) -> Self:
        shape = ("layers", "hidden", "heads", "vocab")
        if self.name is None:
            missing = [f for f in shape if getattr(self, f) is None]
            if missing:
                raise SpecValueError(
                    f"the model has no size: missing {', '.join(to_camel(m) for m in missing)}",
                    "give a catalog name (model: llama-3-70b) or the architecture: "
                    "params, layers, hidden, heads, vocab",
                )
        if self.heads and self.kv_heads and self.heads % self.kv_heads:
            raise SpecValueError(
                f"heads ({self.heads}) must be a multiple of kvHeads ({self.kv_heads})",
                "use a kvHeads that divides heads",
                ("kvHeads",),
            )
        if self.hidden and self.heads and self.hidden % self.heads and not self.head_dim:
            raise SpecValueError(
                f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})",
                "use a number of heads that divides hidden, or give headDim",
                ("heads",),
            )
        self._experts_consistent()
        return self

    def _experts_consistent(self) -> None:
        e, k = self.experts, self.experts_per_token
        if e is not None and e > 1 and k is not None and k >= e:
            raise SpecValueError(f"expertsPerToken ({k}) must be below experts ({e})",
                                 "take num_experts_per_tok from config.json",
                                 ("expertsPerToken",))
        if k is not None and k > 1 and (e is None or e == 1) and self.name is None:
            raise SpecValueError("expertsPerToken without experts",
                                 "add experts (routed experts per layer)", ("expertsPerToken",))
        if self.name is None and e is not None and e > 1 and self.active_params is None:
            raise SpecValueError(
                "a mixture of experts needs activeParams (what one token uses)",
                "add activeParams from the model card, e.g. 12.9e9 for Mixtral 8x7B",
                ("experts",))
        if self.params and self.active_params and self.active_params > self.params:
            raise SpecValueError(
                f"activeParams ({self.active_params:.4g}) exceeds params ({self.params:.4g})",
                "activeParams counts what one token uses, at most the total",
                ("activeParams",))


class Recompute(StrEnum):
    NONE = "none"
    SELECTIVE = "selective"
    FULL = "full"


class ParallelismSpec(SpecModel):
    tensor: int = Field(default=1, ge=1, le=64)
    pipeline: int = Field(default=1, ge=1, le=512)
    data: int | None = Field(default=None, ge=1, le=1_000_000,
                             description="unset: derived from the SLO")
    zero_stage: Literal[0, 1, 2, 3] = 1
    recompute: Recompute = Recompute.SELECTIVE
    micro_batch: int = Field(default=1, ge=1, le=1024)
    global_batch: int | None = Field(default=None, ge=1, le=100_000_000,
                                     description="sequences per step")
    sequence_length: int = Field(default=4096, ge=128, le=1048576)
    expert: int = Field(default=1, ge=1, le=4096, description="expert parallelism: routed "
                        "experts sharded over this many data-parallel ranks (divides data "
                        "parallelism and the experts)")
    context: int = Field(default=1, ge=1, le=1024, description="context parallelism: each "
                         "sequence split over this many GPUs (GPUs = tensor × pipeline × "
                         "context × data)")
    virtual_stages: int = Field(default=1, ge=1, le=128, description="interleaved 1F1B: "
                                "model chunks per pipeline stage (Megatron's virtual pipeline "
                                "size); the bubble shrinks by this factor")
    offload: Literal["none", "optimizer", "optimizer-and-params"] = Field(
        default="none", description="ZeRO-Offload / ZeRO-Infinity: optimizer states (and with "
        "ZeRO-3 the fp32 master weights) held in host memory instead of on the GPU")
    tensor_overlap: float = Field(
        default=0.0, ge=0, le=1, description="share of the tensor-parallel traffic hidden "
        "under compute (0: on the critical path between the GEMMs, Narayanan et al. 2021; "
        "Transformer Engine's tp-comm-overlap hides part of it on NVLink: measure it)")
    expert_overlap: float = Field(
        default=0.0, ge=0, le=1, description="share of the expert-parallel all-to-all hidden "
        "under compute (0: on the critical path; DeepSeek-V3's DualPipe hides it: 1)")


class DataSpec(SpecModel):
    tokens: float | None = Field(default=None, gt=0, le=1e17,
                                  description="training tokens per run")
    dataset_size_gb: float | None = Field(default=None, gt=0, le=1e9, alias="datasetSizeGB")
    epochs: float = Field(default=1.0, gt=0, le=1000)


class SloSpec(SpecModel):
    target_days: float | None = Field(default=None, ge=0.01, le=3650, description="training run")
    queries_per_second: float | None = Field(default=None, gt=0, le=1_000_000)
    concurrency: int | None = Field(default=None, ge=1, le=10_000_000,
                                    description="concurrent sequences")
    context_length: int | None = Field(default=None, ge=128, le=MAX_TOKENS)
    prompt_tokens: int = Field(default=1024, ge=1, le=MAX_TOKENS, description="mean prompt "
                               "length; the median when promptTokensP95 is given")
    output_tokens: int = Field(default=256, ge=1, le=MAX_TOKENS, description="mean output "
                               "length; the median when outputTokensP95 is given")
    prompt_tokens_p95: int | None = Field(
        default=None, ge=1, le=MAX_TOKENS, alias="promptTokensP95",
        description="95th-percentile prompt length: with it promptTokens is the median, the "
        "mean follows from a lognormal through both, and the context must hold the p95")
    output_tokens_p95: int | None = Field(
        default=None, ge=1, le=MAX_TOKENS, alias="outputTokensP95",
        description="95th-percentile output length (as promptTokensP95)")
    time_to_first_token_ms: float | None = Field(default=None, gt=0, le=3_600_000,
                                                  alias="timeToFirstTokenMs")
    time_to_first_token_p99_ms: float | None = Field(
        default=None, gt=0, le=3_600_000, alias="timeToFirstTokenP99Ms",
        description="99th-percentile TTFT target (M/D/1 tail of the prefill queue); a miss is "
        "a finding")
    tokens_per_second: float | None = Field(
        default=None, gt=0, description="decode rate each user sees"
    )
    completion_hours: float | None = Field(default=None, ge=0.01, le=8760,
                                          description="batch inference")
    hourly_load: list[Annotated[float, Field(ge=0, le=100)]] | None = Field(
        default=None, min_length=24, max_length=24, description="serving: the load in each "
        "hour of the day (0 = midnight) as a multiple of queriesPerSecond, which the plan "
        "sizes the replicas for; sim compare serves it (unset: sched.sim_serving's default "
        "day, mean 1, peak 1.5)")

    @model_validator(mode="after")
    def _percentiles_ordered(self) -> Self:
        for p50, p95, key in ((self.prompt_tokens, self.prompt_tokens_p95, "promptTokensP95"),
                              (self.output_tokens, self.output_tokens_p95, "outputTokensP95")):
            if p95 is not None and p95 < p50:
                raise SpecValueError(f"{key} ({p95}) is below the median ({p50})",
                                     "the 95th percentile is at least the median", (key,))
        return self


class LoraSpec(SpecModel):
    rank: int = Field(default=16, ge=1, le=4096)
    quantized_base: bool = Field(default=False, description="QLoRA: 4-bit NF4 base weights")
    target: Literal["qv", "attention", "all-linear"] = Field(
        default="all-linear", description="adapted matrices: qv (the LoRA paper's q and v), "
        "attention (q, k, v, o) or all-linear (QLoRA: attention and every MLP/expert matrix)")


class RagSpec(SpecModel):
    embedding_model: str = "bge-large-en-v1.5"
    documents: int = Field(ge=1, le=1e12)
    tokens_per_document: int = Field(default=800, ge=1, le=MAX_TOKENS)
    chunk_tokens: int = Field(default=512, ge=16, le=MAX_TOKENS)
    top_k: int = Field(default=5, ge=1, le=1000)
    index: Literal["flat", "hnsw", "ivf-pq"] = "hnsw"
    vector_precision: Literal["fp32", "fp16", "int8"] = "fp32"


class ServingSpec(SpecModel):
    """Serving-stack efficiencies against the roofline. The defaults are aiplat.sizing.inference's
    constants, fitted to published NIM, vLLM and TensorRT-LLM measurements on A100/H100/H200
    (aiplat.sizing.calibration: 13 % RMS error over 23 figures; a mixture of experts 8 % over
    TensorRT-LLM's three DeepSeek-R1 H200/B200 figures); replace them with a measurement on
    the target stack."""

    bandwidth_efficiency: Fraction = Field(
        default=0.68, description="share of peak HBM bandwidth a decode step sustains (MBU)")
    compute_efficiency: Fraction | None = Field(
        default=None, description="share of dense peak FLOP/s (at the weights' precision) "
        "prefill and compute-bound decode reach; unset: 0.45 with 8-bit or fewer, 0.76 with "
        "16-bit, times 0.43 for a mixture of experts (calibrated)")
    tensor_parallel_efficiency: Fraction = Field(
        default=0.86, description="throughput factor per doubling of tensor parallelism "
        "(all-reduces): TP2 ×0.86, TP4 ×0.74, TP8 ×0.64 at the default")
    gpu_memory_utilization: Fraction = Field(
        default=0.9, description="share of GPU memory the server may use (vLLM's default)")
    overhead_gib_per_gpu: float = Field(
        default=3.0, ge=0, le=1024, alias="overheadGiBPerGpu",
        description="activations, CUDA context, NCCL and CUDA graphs per GPU, GiB")
    max_batch: int = Field(default=256, ge=1, le=65536,
                           description="sequences a replica runs at once (vLLM max_num_seqs)")
    draft_tokens: int = Field(default=0, ge=0, le=64, description="speculative decoding: "
                              "tokens the draft proposes per step (0: off)")
    acceptance_rate: float = Field(default=0.0, ge=0, lt=1, description="speculative "
                                   "decoding: chance the target keeps a draft token (measured)")
    draft_cost: float = Field(default=0.0, ge=0, le=1, description="speculative decoding: one "
                              "draft step's time / one target step's")
    moe_layer_floor_us: float = Field(
        default=200, ge=0, le=100_000,
        description="mixture of experts: shortest time a decode step spends per layer, µs "
        "(router, top-k, grouped GEMM and expert-parallel kernels; fitted to TensorRT-LLM's "
        "DeepSeek-R1 min-latency runs); 0: none")
    prefix_cache_hit_ratio: float = Field(
        default=0.0, ge=0, lt=1, description="share of prompt tokens served from the prefix "
        "cache (shared system prompts, multi-turn history); not recomputed in prefill")
    disaggregated_prefill: bool = Field(
        default=False, description="prefill on replicas of its own, decode on others "
        "(DistServe, Splitwise): no prefill stalls in decode; each prompt's KV cache crosses "
        "kvTransferGbps")
    kv_transfer_gbps: float = Field(
        default=400, gt=0, le=100_000, alias="kvTransferGbps",
        description="link from prefill to decode replicas, Gbit/s (default: one 400G NIC)")
    chunked_prefill_tokens: int | None = Field(
        default=None, ge=16, le=1_048_576, description="chunked prefill (Sarathi-Serve; "
        "vLLM --enable-chunked-prefill --max-num-batched-tokens): prompt tokens added to "
        "each decode step; unset: each prompt runs whole between decode steps")
    tensor_parallel: int | None = Field(
        default=None, ge=1, le=64, description="a replica's tensor parallelism, pinned "
        "(vLLM --tensor-parallel-size): more GPUs than the weights need leave more memory for "
        "the KV cache, so more sequences at once; unset: the smallest that fits")
    pipeline_parallel: int | None = Field(
        default=None, ge=1, le=64, description="a replica's pipeline stages, pinned (vLLM "
        "--pipeline-parallel-size, stages across nodes); needs tensorParallel; unset: 1 "
        "where tensorParallel is pinned")
    prefill_tensor_parallel: int | None = Field(
        default=None, ge=1, le=64, description="disaggregated prefill: tensor parallelism of "
        "the prefill replicas (DistServe sizes each phase apart: prefill wider for TTFT, "
        "decode narrower); unset: the decode replicas' layout")
    attention_data_parallel: bool = Field(
        default=False, description="attention data parallelism (TensorRT-LLM "
        "enable_attention_dp, SGLang --enable-dp-attention): each TP rank runs attention for "
        "its own 1/TP of the sequences with the attention weights whole, experts split by "
        "expert parallelism; a rank caches only its own sequences, so an MLA latent "
        "(DeepSeek-V3), which TP cannot split by heads, is no longer held on every GPU")
    lora_adapters: int = Field(
        default=0, ge=0, le=100_000, description="multi-LoRA: adapters served on the one "
        "base model (vLLM --enable-lora, S-LoRA): their weights are resident and each decode "
        "step reads the ones its batch uses")
    lora_rank: int = Field(default=16, ge=1, le=4096, description="rank of the served "
                           "adapters (vLLM --max-lora-rank), on every linear layer")
    max_loras: int | None = Field(default=None, ge=1, le=100_000, description="distinct "
                                  "adapters one batch may use (vLLM --max-loras); unset: all")

    @model_validator(mode="after")
    def _prefill_modes(self) -> Self:
        if self.chunked_prefill_tokens is not None and self.disaggregated_prefill:
            raise SpecValueError("chunkedPrefillTokens and disaggregatedPrefill are both set",
                                 "keep one: prefill on replicas of its own, or in chunks "
                                 "beside decode", ("chunkedPrefillTokens",))
        return self

    @model_validator(mode="after")
    def _pinned_layout(self) -> Self:
        if self.pipeline_parallel is not None and self.tensor_parallel is None:
            raise SpecValueError("pipelineParallel is set but tensorParallel is not",
                                 "pin both, e.g. tensorParallel: 8 with pipelineParallel: 2",
                                 ("pipelineParallel",))
        return self

    @model_validator(mode="after")
    def _prefill_layout(self) -> Self:
        if self.prefill_tensor_parallel is not None and not self.disaggregated_prefill:
            raise SpecValueError("prefillTensorParallel is set but disaggregatedPrefill is not",
                                 "set disaggregatedPrefill: true, or remove "
                                 "prefillTensorParallel (colocated prefill shares the decode "
                                 "layout)", ("prefillTensorParallel",))
        return self

    @model_validator(mode="after")
    def _speculation(self) -> Self:
        if self.draft_tokens and not self.acceptance_rate:
            raise SpecValueError("draftTokens without acceptanceRate",
                                 "give the acceptance rate measured on your traffic, e.g. 0.7",
                                 ("acceptanceRate",))
        return self


class CheckpointSpec(SpecModel):
    interval_minutes: float = Field(default=60, gt=0, le=100_000)
    max_overhead: Fraction = Field(default=0.05, description="share of time spent writing")
    interruptions_per_node_year: float = Field(
        default=1.38, gt=0, le=1000, description="job interruptions per node and year (Llama "
        "3 paper: 419 unexpected in 54 days on 2,048 8-GPU nodes = 1.38)")
    restart_minutes: float = Field(
        default=10, ge=0, le=10_000, description="reschedule, load the checkpoint and warm "
        "up after an interruption (an assumption; measure it)")


Problem = tuple[str, str, tuple[str, ...]]
"""(message, fix, path under the workload) of a spec the planner cannot run."""


def _layout_problem(par: ParallelismSpec, model: ModelRef) -> Problem | None:
    """The first impossible training layout the spec alone decides, else None."""
    dense = model.name is None and (model.experts or 1) == 1
    return _batch_problem(par) or model_layout_problem(
        par, layers=model.layers, heads=model.heads, experts=model.experts, dense=dense)


def _batch_problem(par: ParallelismSpec) -> Problem | None:
    dp, gb = par.data, par.global_batch
    if dp is not None and gb is not None and gb % (par.micro_batch * dp):
        unit = par.micro_batch * dp
        up = -(-gb // unit) * unit
        return (f"globalBatch ({gb}) is not a multiple of microBatch ({par.micro_batch}) × "
                f"data parallel ({dp}) = {unit}: every rank must run whole micro-batches",
                f"globalBatch {up}, or a smaller microBatch or data parallelism",
                ("parallelism", "globalBatch"))
    if par.sequence_length % par.context:
        return (f"context ({par.context}) does not divide sequenceLength "
                f"({par.sequence_length})", "a divisor of the sequence length",
                ("parallelism", "context"))
    if dp is not None and dp % par.expert:
        return (f"expert ({par.expert}) does not divide the data-parallel degree {dp} "
                "(experts are sharded over data-parallel ranks)",
                f"parallelism.data a multiple of {par.expert}", ("parallelism", "expert"))
    return None


def model_layout_problem(
    par: ParallelismSpec, *, layers: int | None, heads: int | None, experts: int | None,
    dense: bool = False,
) -> Problem | None:
    """The first layout the model's shape rules out (None where a figure is unknown). The
    spec's own validator passes an inline model's figures; the catalog check can pass a
    catalog model's (layers, heads, experts; dense when it has no experts)."""
    if layers is not None and par.pipeline > layers:
        return (f"pipeline ({par.pipeline}) exceeds the model's {layers} layers (a stage "
                "holds at least one)", f"pipeline ≤ {layers}", ("parallelism", "pipeline"))
    if heads is not None and heads % par.tensor:
        return (f"tensor ({par.tensor}) does not divide the model's {heads} attention heads",
                f"a divisor of {heads}", ("parallelism", "tensor"))
    if par.expert > 1 and dense:
        return (f"expert ({par.expert}) is set but the model is dense",
                "remove parallelism.expert, or give model.experts", ("parallelism", "expert"))
    if experts is not None and experts > 1 and experts % par.expert:
        return (f"expert ({par.expert}) does not divide the {experts} experts",
                f"a divisor of {experts}", ("parallelism", "expert"))
    return None


class WorkloadSpec(SpecModel):
    name: Name
    kind: WorkloadKind
    tenant: Name
    pool: Name | None = Field(default=None, description="unset: the first pool with GPUs")
    model: ModelRef
    precision: Precision = Precision.BF16
    kv_cache_precision: Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4"] | None = Field(
        default=None, description="KV-cache values when they differ from the weights; unset: "
        "fp8 with fp8 weights, else bf16")
    serving: ServingSpec = ServingSpec()
    optimizer: Literal["adamw", "adamw-8bit", "sgd"] = "adamw"
    fp8_storage: Literal["bf16", "fp8"] = Field(
        default="bf16", description="training with precision fp8: how the weights and "
        "gradients are stored. bf16: Transformer Engine's default, FP8 only in the GEMMs, "
        "16-bit stored weights and gradients beside the fp32 master (2 + 2 + 12 = 16 B/param, "
        "as bf16); fp8: FP8-stored weights and gradients, 1 byte each, as MS-AMP O2 or TE "
        "fp8_model_init keep them (1 + 1 + 12 = 14 B/param; smaller checkpoint and gradient "
        "all-reduce)")
    parallelism: ParallelismSpec = ParallelismSpec()
    data: DataSpec = DataSpec()
    slo: SloSpec = SloSpec()
    lora: LoraSpec | None = None
    rag: RagSpec | None = None
    checkpoint: CheckpointSpec = CheckpointSpec()
    mfu: Fraction = Field(default=0.4, description="model FLOPs utilisation assumed for "
                          "training: 6 FLOPs per active parameter and token (+ attention), "
                          "against the dense peak at the precision; ignored when "
                          "achievedTflopsPerGpu or hfu is given")
    achieved_tflops_per_gpu: float | None = Field(
        default=None, gt=0, le=100_000, alias="achievedTflopsPerGpu",
        description="measured hardware TFLOP/s per GPU (what Megatron logs): counts the "
        "recomputed forward pass, 8 FLOPs per parameter and token with recompute full, 6 "
        "otherwise")
    hfu: Fraction | None = Field(
        default=None, description="hardware FLOPs utilisation: achieved TFLOP/s (8 or 6 FLOPs "
        "per parameter and token, as achievedTflopsPerGpu) over the dense peak")
    runs_per_month: float = Field(default=1.0, gt=0, le=1000)

    @model_validator(mode="after")
    def _trainable_layout(self) -> Self:
        """Layouts no training framework can run, refused where the spec alone decides it
        (the catalog model's own limits are checked when planning: plan/training.py)."""
        if self.kind.trains:
            problem = _layout_problem(self.parallelism, self.model)
            if problem is not None:
                raise SpecValueError(*problem)
        return self

    @model_validator(mode="after")
    def _kind_needs(self) -> Self:
        k = self.kind
        if self.achieved_tflops_per_gpu is not None and self.hfu is not None:
            raise SpecValueError("achievedTflopsPerGpu and hfu are both given",
                                 "keep one: the measured TFLOP/s, or HFU against the peak",
                                 ("hfu",))
        if self.fp8_storage == "fp8" and not (
                self.precision is Precision.FP8 and k.trains and k is not WorkloadKind.LORA):
            raise SpecValueError(
                f"'fp8' (1-byte weights and gradients) only applies to FP8 training; this "
                f"workload is {k.value} at precision {self.precision.value}",
                "set precision: fp8 on a pretrain or finetune workload, or remove fp8Storage",
                ("fp8Storage",))
        if k.trains and self.data.tokens is None:
            raise SpecValueError(
                f"a {k.value} workload needs data.tokens (training tokens per run)",
                "add data: {tokens: ...}",
                ("data",),
            )
        if k.trains and self.slo.target_days is None and self.parallelism.data is None:
            raise SpecValueError(
                f"a {k.value} workload needs slo.targetDays or parallelism.data to size its GPUs",
                "add slo: {targetDays: ...}",
                ("slo",),
            )
        if k is not WorkloadKind.LORA and self.lora is not None:
            raise SpecValueError(
                f"lora settings are only used by kind 'lora', not '{k.value}'",
                "remove lora, or set kind: lora",
                ("lora",),
            )
        if k is WorkloadKind.RAG and self.rag is None:
            raise SpecValueError(
                "a rag workload needs rag.documents (the corpus to index)",
                "add rag: {documents: ...}",
                ("kind",),
            )
        if k in (WorkloadKind.ONLINE_INFERENCE, WorkloadKind.RAG) and not (
            self.slo.queries_per_second or self.slo.concurrency
        ):
            raise SpecValueError(
                f"a {k.value} workload needs slo.queriesPerSecond or slo.concurrency",
                "add slo: {queriesPerSecond: ...}",
                ("slo",),
            )
        if k is WorkloadKind.BATCH_INFERENCE and self.data.tokens is None:
            raise SpecValueError(
                "a batch-inference workload needs data.tokens (tokens to process)",
                "add data: {tokens: ...}",
                ("data",),
            )
        return self


# ---------------------------------------------------------------------------- later sections


class StorageClassSpec(SpecModel):
    name: Name
    tier: Literal["object", "file", "block", "local-nvme"]
    capacity_tb: float = Field(gt=0, le=1_000_000, alias="capacityTB")
    read_gbps: float | None = Field(default=None, gt=0, le=100_000, alias="readGBps")
    write_gbps: float | None = Field(default=None, gt=0, le=100_000, alias="writeGBps")
    provisioner: str | None = Field(
        default=None, description="CSI driver; unset: the tier's usual one (block: Ceph RBD, "
        "file: csi-driver-nfs, object: Mountpoint for S3, local-nvme: local static PVs)")
    parameters: dict[str, str] = Field(
        default_factory=dict, description="StorageClass parameters the driver needs, e.g. "
        "server and share for NFS, clusterID and pool for Ceph RBD, bucketName for S3")

    @model_validator(mode="after")
    def _driver_parameters(self) -> Self:
        from aiplat.catalog.storage import DEFAULT_PROVISIONERS, driver

        d = driver(self.provisioner or DEFAULT_PROVISIONERS[self.tier])
        missing = [k for k in d.required if not self.parameters.get(k)] if d else []
        if d is not None and missing:
            example = ", ".join(f"{k}: {d.example.get(k, '...')}" for k in missing)
            raise SpecValueError(
                f"storage class '{self.name}' ({d.name}) needs parameters "
                f"{', '.join(missing)}: the driver refuses to create volumes without them",
                f"add parameters: {{{example}}}", ("parameters",))
        return self


REGISTRY_PREFIX = r"^[a-z0-9][a-z0-9.-]*(:[0-9]+)?(/[a-z0-9._/-]+)?$"
"""host[:port][/path]: what `aiplat model push` and the kubelet accept as a repository prefix."""
IMAGE_REFERENCE = (r"^[a-z0-9][a-z0-9.-]*(?::[0-9]+)?(?:/[a-z0-9][a-z0-9._-]*)*"
                   r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
                   r"(?:@(?:sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128}))?$")
"""[host[:port]/]path[:tag][@digest] as distribution/reference spells it: it becomes an
argument of the puller's `aiplat model pull` and a pod's image, so it cannot start with '-'
or hold a space."""
ImageReference = Annotated[str, StringConstraints(pattern=IMAGE_REFERENCE, max_length=512)]
PATTERN_HINTS[IMAGE_REFERENCE] = ("an OCI reference", "host[:port]/path[:tag][@sha256:...] "
                                  "with a lowercase path, e.g. registry.ai.internal/models/llama:1")


class ModelStoreSpec(SpecModel):
    """Where serving pods get their weights: a ModelPack artifact in an OCI registry, mounted
    as an image volume where the nodes can, else pulled by an init container running
    ``aiplat model pull`` with the trust policy (see ``kube/render_apps.py``)."""

    registry: Annotated[str, StringConstraints(pattern=REGISTRY_PREFIX)] = Field(
        description="repository prefix the models are pushed under, e.g. "
              "'registry.ai.internal/models'; a model's reference is <registry>/<model>:latest "
              "unless references names it")
    references: dict[str, ImageReference] = Field(
        default_factory=dict,
        description="model name -> full reference (tag or @sha256 digest) where it is not "
        "<registry>/<model>:latest")
    mount: Literal["auto", "image-volume", "init-container"] = Field(
        default="auto", description="auto: an image volume where Kubernetes has ImageVolume on "
        "by default (1.35+) and every approved container runtime mounts OCI artifacts (CRI-O "
        ">= 1.33; containerd mounts runnable images only), else an init container")
    puller_image: ImageReference | None = Field(
        default=None, description="image with aiplat installed for the init container; unset: "
        "<registry host>/aiplat/aiplat:<aiplat version>")
    signing_keys: dict[Name, str] = Field(
        default_factory=dict,
        description="name -> PEM public key; when given, the init container refuses a model "
        "not signed by one of them (cosign key-pair signatures)")
    cache_class: Name | None = Field(
        default=None, description="StorageClass of each pod's model cache volume (a generic "
        "ephemeral volume); unset: the local-nvme class where a node has an NVMe disk for "
        "each pod of the size, else an emptyDir")

    @field_validator("signing_keys")
    @classmethod
    def _pem(cls, keys: dict[str, str]) -> dict[str, str]:
        for name, pem in keys.items():
            if "-----BEGIN PUBLIC KEY-----" not in pem:
                raise SpecValueError(f"signingKeys.{name} is not a PEM public key",
                                     "paste the .pub file cosign or `aiplat model sign "
                                     "--generate-key` wrote (-----BEGIN PUBLIC KEY----- ...)",
                                     (name,))
        return keys


class StorageSpec(SpecModel):
    classes: list[StorageClassSpec] = []
    model_store: ModelStoreSpec | None = Field(
        default=None, description="the registry serving pods take their models from")

    @model_validator(mode="after")
    def _cache_class_known(self) -> Self:
        store = self.model_store
        names = [c.name for c in self.classes]
        if store is not None and store.cache_class and store.cache_class not in names:
            raise SpecValueError(f"modelStore.cacheClass '{store.cache_class}' is not a storage"
                                 " class of this spec", f"use one of {names} or leave it unset",
                                 ("modelStore", "cacheClass"))
        return self


class SegmentSpec(SpecModel):
    name: Name
    purpose: SegmentPurpose
    mtu: int = Field(default=1500, ge=1280, le=9216)
    cidr: IPv4Network | None = None
    vlan: int | None = Field(default=None, ge=1, le=4094)
    rdma: Literal["none", "roce", "infiniband"] = "none"
    rate_gbps: float | None = Field(default=None, gt=0, le=1600, alias="rateGbps")

    @field_validator("cidr", mode="before")
    @classmethod
    def _cidr_is_text(cls, value: object) -> object:
        # ipaddress reads an int (or a bool) as an address: `cidr: 5` would be 0.0.0.5/32.
        if value is not None and not isinstance(value, str):
            raise SpecValueError(f"{value!r} is not a network", "write it like 10.0.0.0/24")
        return value


class LabSpec(SpecModel):
    """``aiplat lab up``: the lab built from this network on one Linux host."""

    nodes: int = Field(default=3, ge=1, le=8, description="compute nodes (plus one storage node)")
    segments: list[Name] = Field(default_factory=list, description="empty: every segment")
    link_mbit: int = Field(default=1000, ge=10, le=10000, description="emulated NIC rate")


FabricTechnology = Literal["infiniband-ndr", "infiniband-xdr", "roce"]


class ComputeFabricSpec(SpecModel):
    """The GPUs' fabric (the hpc NICs): what ``plan/fabric.py`` sizes as a rail-optimised fat
    tree. Every field has a default that follows from the pools' hpc NICs."""

    technology: FabricTechnology | None = Field(
        default=None, description="infiniband-ndr (400G, 64-port Quantum-2), infiniband-xdr "
        "(800G, 144-port Quantum-X800) or roce; unset: from the hpc NICs (InfiniBand above "
        "400 Gb/s is XDR)")
    switch_ports: int | None = Field(
        default=None, ge=2, le=1024, description="ports per switch at the NICs' rate; unset: "
        "64 (NDR, RoCE) or 144 (XDR)")
    oversubscription: float = Field(
        default=1.0, ge=1, le=16, description="a leaf's ports to nodes per port to spines "
        "(1 = non-blocking)")
    scalable_unit_nodes: int | None = Field(
        default=None, ge=1, le=4096, description="nodes per scalable unit, the fabric being "
        "built for whole units (DGX SuperPOD: 32 H100/B200, 64 B300); unset: the nodes one "
        "leaf per rail serves, and one switch when every port fits it")
    planes: Literal["shared", "rail"] = Field(
        default="shared", description="spines shared by all rails, or one spine plane per rail")
    ufm_appliances: int | None = Field(
        default=None, ge=0, le=64, description="fabric manager appliances (InfiniBand UFM), "
        "one leaf port each; unset: 2 (active and standby) on an InfiniBand fabric of more "
        "than one switch, else 0 (the switch's own subnet manager)")
    switch_power_w: float | None = Field(
        default=None, gt=0, le=50_000, alias="switchPowerW",
        description="one switch's maximum power without optics, W; unset: a stated assumption")
    switch_rack_units: int = Field(default=1, ge=1, le=20)


class EthernetFabricSpec(SpecModel):
    """A storage or management network: leaves for the nodes' ports, spines past one leaf."""

    switch_ports: int = Field(default=64, ge=2, le=1024)
    oversubscription: float = Field(default=1.0, ge=1, le=64)
    switch_power_w: float | None = Field(default=None, gt=0, le=50_000, alias="switchPowerW")
    switch_rack_units: int = Field(default=1, ge=1, le=20)


class OutOfBandFabricSpec(EthernetFabricSpec):
    """BMCs, switch and PDU management ports: 1 GbE leaves with a few fast uplinks."""

    switch_ports: int = Field(default=52, ge=2, le=1024, description="48 device ports and "
                              "4 uplinks (e.g. SN2201: 48 x 1GbE, 4 x 100GbE)")
    oversubscription: float = Field(default=12, ge=1, le=64)


class FabricSpec(SpecModel):
    """The physical fabrics ``aiplat plan`` sizes (``Plan.fabric``)."""

    compute: ComputeFabricSpec = ComputeFabricSpec()
    storage: EthernetFabricSpec = EthernetFabricSpec()
    in_band: EthernetFabricSpec = EthernetFabricSpec()
    out_of_band: OutOfBandFabricSpec = OutOfBandFabricSpec()


PodRouting = Literal["native", "vxlan", "geneve", "ipip"]


class CniSpec(SpecModel):
    """The pod network: ``kube render`` writes the plugin's Helm values
    (``cluster/cni/values.yaml``) and the plan checks the pod MTU against the underlay."""

    plugin: Literal["cilium", "calico"] | None = Field(
        default=None, description="the CNI plugin installed; unset: no values are rendered, "
        "the plan still checks an explicit mtu")
    segment: SegmentPurpose | None = Field(
        default=None, description="the purpose of the segment the nodes' InternalIPs (and pod "
        "traffic) are on; unset: service when every pool has service NICs, else management")
    routing: PodRouting | None = Field(
        default=None, description="native (pod addresses routed by the underlay: nodes on one "
        "subnet, or BGP to the leaves), or an overlay: vxlan, geneve (Cilium), ipip (Calico); "
        "unset: native where the segment's subnet holds every node, else vxlan")
    mtu: int | None = Field(
        default=None, ge=1200, le=9216, description="the pods' MTU; unset: the segment's less "
        "the overlay's header")
    pod_cidr: IPv4Network = Field(
        default=IPv4Network("10.244.0.0/16"), description="the pods' addresses (an "
        "assumption when unset: kubeadm's usual 10.244.0.0/16)")

    @field_validator("pod_cidr", mode="before")
    @classmethod
    def _cidr_is_text(cls, value: object) -> object:
        if not isinstance(value, str | IPv4Network):
            raise SpecValueError(f"{value!r} is not a network", "write it like 10.244.0.0/16")
        return value

    @model_validator(mode="after")
    def _plugin_can_route(self) -> Self:
        cannot = {"cilium": "ipip", "calico": "geneve"}
        if self.plugin is not None and self.routing == cannot[self.plugin]:
            other = "vxlan or geneve" if self.plugin == "cilium" else "vxlan or ipip"
            raise SpecValueError(f"{self.plugin} has no {self.routing} overlay",
                                 f"use native, {other}", ("routing",))
        return self


class NetworkSpec(SpecModel):
    segments: list[SegmentSpec] = []
    lab: LabSpec = LabSpec()
    fabric: FabricSpec = FabricSpec()
    cni: CniSpec = CniSpec()


class VersionEntry(SpecModel):
    """One approved combination; each value is a version or a range like '>=6.1,<6.9'."""

    name: Name
    kernel: Version | None = None
    firmware: Version | None = None
    driver: Version | None = None
    cuda: Version | None = None
    container_toolkit: Version | None = None
    container_runtime: RuntimeVersion | None = None
    kubernetes: Version | None = None
    gpu_operator: Version | None = None
    dra_driver: Version | None = None
    kueue: Version | None = None


class VersionsSpec(SpecModel):
    approved: list[VersionEntry] = []

    @field_validator("approved")
    @classmethod
    def _unique_entries(cls, items: list[VersionEntry]) -> list[VersionEntry]:
        seen: dict[str, int] = {}
        for i, e in enumerate(items):
            if e.name in seen:
                raise SpecValueError(f"name '{e.name}' is already used by entry {seen[e.name]}",
                                     "give every approved combination a unique name",
                                     (i, "name"))
            seen[e.name] = i
        return items


CRON = r"^[0-9A-Za-z*/,?#-]+( [0-9A-Za-z*/,?#-]+){4}$"
"""Five cron fields (minute hour day-of-month month day-of-week) in cron's own characters."""
PATTERN_HINTS[CRON] = ("a cron schedule", "five fields: minute hour day-of-month month "
                       "day-of-week, e.g. '0 2 * * 6' (Saturdays 02:00)")


class MaintenanceWindow(SpecModel):
    name: Name
    schedule: Annotated[str, StringConstraints(pattern=CRON)] = Field(
        description="cron expression, e.g. '0 2 * * 6'")
    duration_hours: float = Field(gt=0, le=168)


class Responsibility(SpecModel):
    area: str
    responsible: str
    accountable: str
    consulted: list[str] = []
    informed: list[str] = []


class EscalationStep(SpecModel):
    level: int = Field(ge=1, le=10)
    contact: str
    after_minutes: int = Field(ge=0, le=525_600)


RunbookBaseUrl = Annotated[str, StringConstraints(
    pattern=r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~!$&()*+,;=:@%/-]*)?$",
    max_length=2048)]
"""An absolute http(s) URL without query, fragment or template braces: Alertmanager shows the
link as is, and Prometheus would expand ``{{`` in an annotation."""


class MonitoringSpec(SpecModel):
    """Alert thresholds for ``aiplat monitoring render`` that no node check already holds
    (GPU temperature, ECC, remapped rows, XID window and free disk come from each pool's
    ``node.checks``)."""

    idle_gpu_utilization: Fraction = Field(
        default=0.05, description="an allocated GPU busier than this is not idle"
    )
    idle_gpu_minutes: int = Field(default=60, ge=5, le=1440)
    pending_minutes: int = Field(
        default=60, ge=5, le=10080, description="pending with no admission in the queue for"
    )
    quota_usage_warning: Fraction = Field(default=0.95, description="usage / nominal quota")
    preemptions_per_hour: int = Field(default=10, ge=1, le=100000)
    model_pull_error_ratio: Fraction = Field(default=0.05, description="failed / all pulls")
    min_cache_hit_ratio: Fraction = Field(default=0.8, description="node model cache hits")
    selector_labels: dict[LabelKey, LabelValue] = Field(
        default={"release": "kube-prometheus-stack"},
        description="labels on every rendered ServiceMonitor and PrometheusRule (the DCGM "
                    "exporter's too): what the Prometheus's serviceMonitorSelector and "
                    "ruleSelector match; kube-prometheus-stack's default is release: <its Helm "
                    "release name>")
    runbook_base_url: RunbookBaseUrl | None = Field(
        default=None,
        description="where the rendered runbook.html is published (http or https, no query "
                    "or fragment): each alert's runbook_url is <this>/runbook.html#<procedure>; "
                    "unset, the link is the relative runbook.html#<procedure>")


class OperationsSpec(SpecModel):
    kubernetes_experience: bool = Field(
        default=True, description="the operating team runs Kubernetes today"
    )
    strict_tenant_isolation: bool = Field(
        default=False, description="tenants must not share a kernel or cluster (legal/regulatory)"
    )
    maintenance_windows: list[MaintenanceWindow] = []
    responsibilities: list[Responsibility] = []
    escalation: list[EscalationStep] = []
    monitoring: MonitoringSpec = MonitoringSpec()


# ---------------------------------------------------------------------------- the platform


class Platform(SpecModel):
    api_version: Literal["aiplat/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["Platform"]
    metadata: Metadata
    kubernetes: KubernetesSpec = KubernetesSpec()
    site: SiteSpec
    reserve: ReserveSpec = ReserveSpec()
    pools: list[PoolSpec] = Field(min_length=1)
    tenants: list[TenantSpec] = Field(min_length=1)
    workloads: list[WorkloadSpec] = []
    storage: StorageSpec = StorageSpec()
    network: NetworkSpec = NetworkSpec()
    versions: VersionsSpec = VersionsSpec()
    operations: OperationsSpec = OperationsSpec()

    @field_validator("pools", "tenants", "workloads")
    @classmethod
    def _unique_names(cls, items: list[PoolSpec] | list[TenantSpec] | list[WorkloadSpec]) -> object:
        seen: dict[str, int] = {}
        for i, name in enumerate([item.name for item in items]):
            if name in seen:
                raise SpecValueError(
                    f"name '{name}' is already used by entry {seen[name]}",
                    "give every entry a unique name",
                    (i, "name"),
                )
            seen[name] = i
        return items

    @model_validator(mode="after")
    def _one_pool_per_node(self) -> Self:
        owner: dict[str, str] = {}
        for i, p in enumerate(self.pools):
            for j, name in enumerate(p.node_names or []):
                if name in owner:
                    raise SpecValueError(
                        f"node '{name}' is in the nodeNames of pools '{owner[name]}' and "
                        f"'{p.name}'", "a node belongs to one pool: remove it from one list",
                        ("pools", i, "nodeNames", j))
                owner[name] = p.name
        return self

    @model_validator(mode="after")
    def _one_driver_owner(self) -> Self:
        """The operator's driver container builds the kernel modules on the node, unsigned: a
        Secure Boot kernel refuses to load them (NVIDIA's signed drivers are precompiled
        images for some Ubuntu kernels only, not an exact version such as 580.95.05)."""
        if self.kubernetes.components.driver != "operator":
            return self
        for i, p in enumerate(self.pools):
            if p.node.gpu is not None and p.node.checks.secure_boot == "required":
                raise SpecValueError(
                    f"pool '{p.name}' requires Secure Boot but kubernetes.components.driver "
                    "is 'operator': the GPU Operator's driver container builds unsigned "
                    "modules, which a Secure Boot kernel refuses to load",
                    "set kubernetes.components.driver: host (node prepare signs the DKMS "
                    "build with the machine owner key), or drop secureBoot: required",
                    ("pools", i, "node", "checks", "secureBoot"))
        return self

    def pool(self, name: str) -> PoolSpec | None:
        return next((p for p in self.pools if p.name == name), None)

    def tenant(self, name: str) -> TenantSpec | None:
        return next((t for t in self.tenants if t.name == name), None)
