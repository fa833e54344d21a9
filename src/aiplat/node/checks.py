"""Node health checks (pure), NHC-style: each check reads the inventory (plus kernel log
events) and the pool's expectations and returns results with observed, expected and a
remediation. Checks are registered by name (``@check("name")``), so a site can add its own
with ``register`` and select or skip any with ``--only``/``--skip``.

Thresholds come from the spec (``pools[].node.checks``, ``NodeChecksSpec``) and the pool's
shape (GPU count, NVMe count, NICs and their rate, segment MTU). Without a spec, checks that
need an expectation are ``skip`` and say what to pass.

Mapping onto Kubernetes (used by the agent): any ``fail`` makes the node condition
``AiplatNodeHealthy=False`` and adds the ``node.aiplat.io/unhealthy:NoSchedule`` taint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from aiplat.errors import InputError
from aiplat.findings import Severity
from aiplat.node.inventory import DeviceKind, Inventory
from aiplat.node.kernlog import XidEvent
from aiplat.node.pciaddr import ACS_REDIRECT, acs_flags
from aiplat.node.placement import LABEL_DOMAIN, link_findings
from aiplat.plan.netpath import interface_mtu
from aiplat.spec.models import NicType, NodeChecksSpec, Platform

Status = Literal["pass", "warn", "fail", "skip"]
STATUS_OF: dict[Severity, Status] = {"error": "fail", "warning": "warn", "info": "pass"}
"""A check's status from the severity of the finding it reports."""
CRITICAL_XIDS = frozenset({48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119,
                           120})
BAD_CLOCK_REASONS = {"hw_slowdown": "fail", "hw_thermal_slowdown": "fail",
                     "hw_power_brake_slowdown": "fail", "sw_thermal_slowdown": "warn"}
CONDITION_TYPE = "AiplatNodeHealthy"
TAINT_KEY = f"{LABEL_DOMAIN}/unhealthy"


class CheckResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    status: Status
    subject: str = "node"
    observed: str = ""
    expected: str = ""
    remediation: str = ""


@dataclass(frozen=True)
class Expectations:
    thresholds: NodeChecksSpec = field(default_factory=NodeChecksSpec)
    pool: str | None = None
    gpu_count: int | None = None
    nvme_count: int | None = None
    rdma_ports: int | None = None
    rdma_rate_gbps: float | None = None
    mtu: int | None = None

    @classmethod
    def from_platform(cls, platform: Platform, pool_name: str) -> Expectations:
        pool = platform.pool(pool_name)
        if pool is None:
            names = ", ".join(p.name for p in platform.pools)
            raise InputError(f"--pool {pool_name}: no such pool in the spec (fix: use one of "
                             f"{names})")
        node = pool.node
        fast = [n for n in node.nics if n.type in (NicType.INFINIBAND, NicType.ROCE)]
        mtu = node.checks.mtu
        if mtu is None and fast:
            seg = next((s for s in platform.network.segments if s.purpose == fast[0].segment),
                       None)
            # What the interface shows: an IPoIB one carries 4 bytes less than the IB MTU.
            mtu = interface_mtu(seg, fast[0].type) if seg else None
        return cls(
            thresholds=node.checks, pool=pool.name,
            gpu_count=node.gpu.count if node.gpu else 0,
            nvme_count=node.nvme.count if node.nvme else None,
            rdma_ports=sum(n.count for n in fast) if fast else None,
            rdma_rate_gbps=min(n.rate_gbps for n in fast) if fast else None,
            mtu=mtu,
        )


@dataclass(frozen=True)
class CheckContext:
    inv: Inventory
    exp: Expectations
    xids: list[XidEvent] | None = None  # None: the kernel log was not read


CheckFn = Callable[[CheckContext], list[CheckResult]]
CHECKS: dict[str, CheckFn] = {}


def register(name: str, fn: CheckFn) -> None:
    CHECKS[name] = fn


def check(name: str) -> Callable[[CheckFn], CheckFn]:
    def deco(fn: CheckFn) -> CheckFn:
        register(name, fn)
        return fn
    return deco


def _ok(name: str, observed: str, expected: str = "") -> list[CheckResult]:
    return [CheckResult(name=name, status="pass", observed=observed, expected=expected)]


def _skip(name: str, why: str) -> list[CheckResult]:
    return [CheckResult(name=name, status="skip", observed=why)]


@check("gpu-count")
def _gpu_count(ctx: CheckContext) -> list[CheckResult]:
    inv, exp = ctx.inv, ctx.exp
    pci = len(inv.gpus)
    out = []
    if exp.gpu_count is not None and pci != exp.gpu_count:
        out.append(CheckResult(
            name="gpu-count", status="fail", observed=f"{pci} on PCI", expected=str(exp.gpu_count),
            remediation="a missing GPU has fallen off the bus or is not seated: check `dmesg` "
                        "for XID 79, reseat or RMA; drain the node first"))
    if inv.gpu_details and len(inv.gpu_details) != pci:
        missing = sorted({g.address for g in inv.gpus} - {d.address for d in inv.gpu_details})
        out.append(CheckResult(
            name="gpu-count", status="fail", subject=",".join(missing) or "node",
            observed=f"{len(inv.gpu_details)} visible to the driver", expected=f"{pci} (on PCI)",
            remediation="the driver lost these GPUs: check XIDs, then reset (`nvidia-smi -r`) "
                        "or reboot"))
    if out:
        return out
    if exp.gpu_count is None:
        return _ok("gpu-count", f"{pci} on PCI", "no expectation (give SPEC and --pool)")
    return _ok("gpu-count", f"{pci}", str(exp.gpu_count))


@check("pcie-link")
def _pcie(ctx: CheckContext) -> list[CheckResult]:
    out = []
    watched = [d for d in ctx.inv.pci if d.kind in (DeviceKind.GPU, DeviceKind.NIC,
                                                     DeviceKind.INFINIBAND, DeviceKind.NVME,
                                                     DeviceKind.NVSWITCH)]
    for dev in watched:
        for f in link_findings(dev, dev.kind.value):
            out.append(CheckResult(name="pcie-link", status=STATUS_OF[f.severity],
                                   subject=f.subject, observed=f.message,
                                   expected="link at its maximum width and speed",
                                   remediation=f.fix))
    linked = sum(1 for d in watched if d.link is not None)
    return out or _ok("pcie-link", f"{linked} links at maximum width and speed"
                      + (f" ({len(watched) - linked} devices report no link)"
                         if linked < len(watched) else ""))


def _need_details(ctx: CheckContext, name: str) -> list[CheckResult] | None:
    if not ctx.inv.gpus:
        return _skip(name, "no GPUs")
    if not ctx.inv.gpu_details:
        return _skip(name, "no GPU details (NVIDIA: install nvidia-ml-py or pass --from "
                           "smi-xml=FILE; other vendors' details are not read yet)")
    return None


@check("gpu-ecc")
def _ecc(ctx: CheckContext) -> list[CheckResult]:
    skip = _need_details(ctx, "gpu-ecc")
    if skip:
        return skip
    t = ctx.exp.thresholds
    out = []
    for d in ctx.inv.gpu_details:
        subject = f"GPU{d.index} {d.address}"
        unc = d.ecc_uncorrected_volatile
        if unc is not None and unc > t.max_ecc_uncorrected:
            out.append(CheckResult(
                name="gpu-ecc", status="fail", subject=subject,
                observed=f"{unc} uncorrected (volatile)", expected=f"<= {t.max_ecc_uncorrected}",
                remediation="drain, run `dcgmi diag -r 3`; persistent errors: RMA"))
        if d.ecc_enabled is False:
            out.append(CheckResult(
                name="gpu-ecc", status="warn", subject=subject, observed="ECC disabled",
                expected="enabled", remediation="`nvidia-smi -i N -e 1` and reboot"))
        rr = d.remapped_rows
        if rr is None:
            continue
        if rr.failure:
            out.append(CheckResult(
                name="gpu-ecc", status="fail", subject=subject, observed="row remapping failed",
                expected="no remapping failure", remediation="the GPU is out of spare rows: RMA"))
        elif rr.pending:
            out.append(CheckResult(
                name="gpu-ecc", status="warn", subject=subject, observed="row remap pending",
                expected="none pending",
                remediation="drain and reset the GPU (`nvidia-smi -r -i N`) to apply the remap"))
        limit = t.max_remapped_rows_uncorrectable
        if limit is not None and rr.uncorrectable > limit:
            out.append(CheckResult(
                name="gpu-ecc", status="fail", subject=subject,
                observed=f"{rr.uncorrectable} rows remapped (uncorrectable)",
                expected=f"<= {limit}", remediation="past the site's threshold: RMA"))
    return out or _ok("gpu-ecc", f"{len(ctx.inv.gpu_details)} GPUs clean",
                      f"<= {t.max_ecc_uncorrected} uncorrected, no pending/failed remap")


@check("gpu-xid")
def _xid(ctx: CheckContext) -> list[CheckResult]:
    if ctx.xids is None:
        return _skip("gpu-xid", "kernel log not readable (run as root, or pass --kernel-log "
                                "FILE with `dmesg` output)")
    window = ctx.exp.thresholds.xid_window_hours * 3600
    recent = [e for e in ctx.xids if e.age_s is None or e.age_s <= window]
    out = []
    for e in recent:
        critical = e.xid in CRITICAL_XIDS
        age = f"{e.age_s / 3600:.1f} h ago" if e.age_s is not None else "age unknown"
        out.append(CheckResult(
            name="gpu-xid", status="fail" if critical else "warn", subject=e.address,
            observed=f"XID {e.xid} ({age})",
            expected=f"no critical XID in {ctx.exp.thresholds.xid_window_hours:g} h",
            remediation="drain; XID 79/74/48/63/64/94/95: reset or reboot, run "
                        "`dcgmi diag -r 3`, RMA when it recurs" if critical else
                        "usually an application fault (e.g. 13, 31, 43): check the job"))
    return out or _ok("gpu-xid", f"no XID in the last {ctx.exp.thresholds.xid_window_hours:g} h")


@check("nvlink")
def _nvlink(ctx: CheckContext) -> list[CheckResult]:
    skip = _need_details(ctx, "nvlink")
    if skip:
        return skip
    with_links = [d for d in ctx.inv.gpu_details if d.nvlinks]
    if not with_links:
        return _skip("nvlink", "no NVLink state (PCIe GPUs, or pass --from nvlink=FILE)")
    out = []
    for d in with_links:
        down = [str(link.link) for link in d.nvlinks if not link.active]
        if down:
            out.append(CheckResult(
                name="nvlink", status="fail", subject=f"GPU{d.index} {d.address}",
                observed=f"links {','.join(down)} inactive of {len(d.nvlinks)}",
                expected="all links active",
                remediation="drain; check the NVSwitch fabric manager (`systemctl status "
                            "nvidia-fabricmanager`), reset the GPU; persistent: RMA the board"))
    return out or _ok("nvlink", f"{sum(len(d.nvlinks) for d in with_links)} links active")


@check("nvswitch-fabric")
def _fabric(ctx: CheckContext) -> list[CheckResult]:
    skip = _need_details(ctx, "nvswitch-fabric")
    if skip:
        return skip
    on_fabric = [d for d in ctx.inv.gpu_details if d.fabric_state is not None]
    if not on_fabric:
        return _skip("nvswitch-fabric", "no fabric state (GPUs not on an NVSwitch fabric, or "
                                        "the driver does not report it)")
    out = []
    for d in on_fabric:
        if d.fabric_state != "Completed" or d.fabric_status not in (None, "Success"):
            out.append(CheckResult(
                name="nvswitch-fabric", status="fail", subject=f"GPU{d.index} {d.address}",
                observed=f"fabric {d.fabric_state}, status {d.fabric_status or 'unknown'}",
                expected="Completed, Success",
                remediation="until the GPU has joined the NVSwitch fabric, CUDA refuses work "
                            "(error 802, system not ready): run the fabric manager at exactly "
                            "the driver's version (`systemctl enable --now "
                            "nvidia-fabricmanager`, `journalctl -u nvidia-fabricmanager`)"))
    return out or _ok("nvswitch-fabric", f"{len(on_fabric)} GPUs joined the fabric",
                      "Completed, Success")


@check("ib-port")
def _ib(ctx: CheckContext) -> list[CheckResult]:
    ports = ctx.inv.ib_ports
    exp = ctx.exp
    if not ports and not exp.rdma_ports:
        return _skip("ib-port", "no RDMA ports")
    out = []
    if exp.rdma_ports is not None and len(ports) < exp.rdma_ports:
        out.append(CheckResult(name="ib-port", status="fail", observed=f"{len(ports)} ports",
                               expected=str(exp.rdma_ports),
                               remediation="check the HCA is seated and mlx5_core loaded"))
    for p in ports:
        subject = f"{p.device}/{p.port}"
        if p.state != "ACTIVE" or p.phys_state != "LinkUp":
            out.append(CheckResult(
                name="ib-port", status="fail", subject=subject,
                observed=f"{p.state}/{p.phys_state}", expected="ACTIVE/LinkUp",
                remediation="check the cable and switch port (`ibstat`, `mlxlink -d "
                            f"{p.device}`); Polling = no partner, INIT = no subnet manager"))
        elif exp.rdma_rate_gbps and (p.rate_gbps or 0) < exp.rdma_rate_gbps:
            out.append(CheckResult(
                name="ib-port", status="fail", subject=subject, observed=p.rate or "unknown",
                expected=f">= {exp.rdma_rate_gbps:g} Gb/sec",
                remediation="the link trained below its rate: check cable type and length, "
                            "reseat, `mlxlink` for errors"))
    return out or _ok("ib-port", f"{len(ports)} ports ACTIVE/LinkUp",
                      f">= {exp.rdma_rate_gbps:g} Gb/sec" if exp.rdma_rate_gbps else "")


@check("mtu")
def _mtu(ctx: CheckContext) -> list[CheckResult]:
    want = ctx.exp.mtu
    if want is None:
        return _skip("mtu", "no MTU expectation (spec segments or checks.mtu)")
    rdma_pci = {p.pci_address for p in ctx.inv.ib_ports}
    nets = [n for n in ctx.inv.net if n.pci_address in rdma_pci and not n.virtual]
    if not nets:
        return _skip("mtu", "no network interface on an RDMA NIC")
    out = [CheckResult(name="mtu", status="fail", subject=n.name, observed=str(n.mtu),
                       expected=str(want),
                       remediation=f"set MTU {want} (`ip link set {n.name} mtu {want}` and in "
                                   "the network configuration); the switch ports must match")
           for n in nets if n.mtu != want]
    return out or _ok("mtu", f"{len(nets)} interfaces at {want}", str(want))


@check("gpu-clocks")
def _clocks(ctx: CheckContext) -> list[CheckResult]:
    skip = _need_details(ctx, "gpu-clocks")
    if skip:
        return skip
    out = []
    for d in ctx.inv.gpu_details:
        for r in d.clock_event_reasons:
            if r in BAD_CLOCK_REASONS:
                out.append(CheckResult(
                    name="gpu-clocks", status="fail" if BAD_CLOCK_REASONS[r] == "fail" else "warn",
                    subject=f"GPU{d.index} {d.address}", observed=r, expected="no slowdown",
                    remediation="check cooling and power (fans, inlet temperature, PSU, power "
                                "brake signal); `nvidia-smi -q -d PERFORMANCE`"))
    return out or _ok("gpu-clocks", "no thermal/power slowdown")


@check("gpu-temperature")
def _temp(ctx: CheckContext) -> list[CheckResult]:
    skip = _need_details(ctx, "gpu-temperature")
    if skip:
        return skip
    limit = ctx.exp.thresholds.max_gpu_temp_c
    out = []
    for d in ctx.inv.gpu_details:
        if d.temperature_c is None:
            continue
        status: Status = ("fail" if d.temperature_c > limit else
                          "warn" if d.temperature_c > limit - 5 else "pass")
        if status != "pass":
            out.append(CheckResult(
                name="gpu-temperature", status=status, subject=f"GPU{d.index} {d.address}",
                observed=f"{d.temperature_c:g} C", expected=f"<= {limit:g} C",
                remediation="check airflow/coolant and neighbours; sustained heat throttles "
                            "and ages the GPU"))
    hottest = max((d.temperature_c for d in ctx.inv.gpu_details if d.temperature_c is not None),
                  default=None)
    return out or _ok("gpu-temperature", f"max {hottest:g} C" if hottest is not None else "n/a",
                      f"<= {limit:g} C")


@check("nvme-count")
def _nvme(ctx: CheckContext) -> list[CheckResult]:
    n = sum(1 for d in ctx.inv.pci if d.kind is DeviceKind.NVME)
    want = ctx.exp.nvme_count
    if want is None:
        return _skip("nvme-count", f"{n} present; no expectation (spec node.nvme)")
    if n != want:
        return [CheckResult(name="nvme-count", status="fail", observed=str(n), expected=str(want),
                            remediation="check drive seating and `nvme list`; a missing drive "
                                        "breaks local RAID/scratch")]
    return _ok("nvme-count", str(n), str(want))


@check("disk-space")
def _disk(ctx: CheckContext) -> list[CheckResult]:
    fss = ctx.inv.host.filesystems
    if not fss:
        return _skip("disk-space", "no watched file system found")
    limit = ctx.exp.thresholds.min_free_disk_percent
    out = []
    for fs in fss:
        pct = 100 * fs.free_bytes / fs.size_bytes if fs.size_bytes else 100.0
        if pct < limit:
            out.append(CheckResult(
                name="disk-space", status="fail", subject=fs.mount, observed=f"{pct:.1f}% free",
                expected=f">= {limit:g}% free",
                remediation="prune images (`crictl rmi --prune`), logs and old checkpoints"))
    return out or _ok("disk-space", ", ".join(
        f"{fs.mount} {100 * fs.free_bytes / max(fs.size_bytes, 1):.0f}% free" for fs in fss),
        f">= {limit:g}% free")


@check("kernel-modules")
def _modules(ctx: CheckContext) -> list[CheckResult]:
    inv = ctx.inv
    loaded = {m.name for m in inv.software.modules}
    required = list(ctx.exp.thresholds.required_modules)
    vendors = {g.vendor for g in inv.gpus}
    if "0x10de" in vendors:
        required += ["nvidia", "nvidia_uvm"]
    if "0x1002" in vendors:
        required += ["amdgpu"]
    infiniband = any(p.link_layer == "InfiniBand" for p in inv.ib_ports)
    recommended = (["nvidia_peermem"] if "0x10de" in vendors and (infiniband or ctx.exp.rdma_ports)
                   else [])
    out = [CheckResult(name="kernel-modules", status="fail", subject=m, observed="not loaded",
                       expected="loaded", remediation=f"`modprobe {m}` and add it to "
                                                      "/etc/modules-load.d (see `aiplat node "
                                                      "prepare`)")
           for m in dict.fromkeys(required) if m not in loaded]
    out += [CheckResult(name="kernel-modules", status="warn", subject=m, observed="not loaded",
                        expected="loaded for GPUDirect RDMA (unless DMA-BUF is used)",
                        remediation=f"`modprobe {m}`")
            for m in recommended if m not in loaded and m not in required]
    return out or _ok("kernel-modules", ", ".join(dict.fromkeys(required)) or "none required")


@check("secure-boot")
def _secure_boot(ctx: CheckContext) -> list[CheckResult]:
    want = ctx.exp.thresholds.secure_boot
    got = ctx.inv.software.secure_boot
    if want == "any":
        return _ok("secure-boot", got, "any")
    bad = (want == "required" and got != "enabled") or (want == "forbidden" and got == "enabled")
    if bad:
        return [CheckResult(
            name="secure-boot", status="fail", observed=got, expected=want,
            remediation="enable Secure Boot in the firmware and enrol the module signing key "
                        "(`aiplat node prepare` prints the MOK steps)" if want == "required"
            else "disable Secure Boot in the firmware, or sign the modules")]
    return _ok("secure-boot", got, want)


@check("device-permissions")
def _devices(ctx: CheckContext) -> list[CheckResult]:
    t = ctx.exp.thresholds
    nodes = ctx.inv.software.device_nodes
    if not nodes:
        return _skip("device-permissions", "no accelerator or RDMA device nodes")
    out = []
    for n in nodes:
        problems = []
        if int(n.mode, 8) & 0o002:
            problems.append(f"world-writable ({n.mode})")
        if n.owner != t.device_owner:
            problems.append(f"owner {n.owner}")
        if t.device_group and n.group != t.device_group:
            problems.append(f"group {n.group}")
        if problems:
            out.append(CheckResult(
                name="device-permissions", status="fail", subject=n.path,
                observed=", ".join(problems),
                expected=f"not world-writable, {t.device_owner}:{t.device_group or '*'}",
                remediation="set NVreg_DeviceFileMode/UID/GID (modprobe.d) and udev rules for "
                            "/dev/infiniband; `aiplat node prepare` writes both"))
    return out or _ok("device-permissions", f"{len(nodes)} nodes",
                      f"not world-writable, {t.device_owner}:{t.device_group or '*'}")


@check("iommu")
def _iommu(ctx: CheckContext) -> list[CheckResult]:
    want = ctx.exp.thresholds.iommu
    on = ctx.inv.host.iommu_groups > 0
    cmdline = ctx.inv.host.cmdline or ""
    passthrough = "iommu=pt" in cmdline.split()
    got = ("on (passthrough)" if passthrough else "on") if on else "off"
    if want == "required" and not on:
        return [CheckResult(name="iommu", status="fail", observed=got, expected="on",
                            remediation="enable VT-d/AMD-Vi in the firmware and add "
                                        "`intel_iommu=on iommu=pt` (or amd_iommu=on) to the "
                                        "kernel command line")]
    if want == "off" and on:
        return [CheckResult(name="iommu", status="fail", observed=got, expected="off",
                            remediation="remove intel_iommu/amd_iommu from the command line")]
    if want == "required" and on and not passthrough:
        return [CheckResult(name="iommu", status="warn", observed=got, expected="on with iommu=pt",
                            remediation="add iommu=pt: translated DMA costs GPUDirect bandwidth")]
    return _ok("iommu", got, want)


@check("acs")
def _acs(ctx: CheckContext) -> list[CheckResult]:
    want = ctx.exp.thresholds.acs
    inv = ctx.inv
    pci = inv.pci_by_address
    rdma = {p.pci_address for p in inv.ib_ports}
    endpoints = [d for d in inv.pci if d.kind is DeviceKind.GPU or d.address in rdma]
    above = sorted({b for d in endpoints for b in d.parents})
    readable = [pci[b] for b in above if b in pci and pci[b].acs_control is not None]
    if want == "any":
        return _ok("acs", f"{len(readable)} bridges with ACS above GPUs/RDMA NICs", "any")
    if not readable:
        return _skip("acs", "no ACS capability readable above GPUs/RDMA NICs (run as root)")
    out = []
    for b in readable:
        ctrl = b.acs_control or 0
        on = bool(ctrl & ACS_REDIRECT)
        if (want == "disabled" and on) or (want == "enabled" and not on):
            out.append(CheckResult(
                name="acs", status="fail", subject=b.address,
                observed="ACS " + (",".join(acs_flags(ctrl)) or "off"),
                expected="no P2P redirect (RR, CR off)" if want == "disabled"
                else "P2P redirect on (RR, CR)",
                remediation="disable ACS in the BIOS (or at boot: `setpci -s "
                            f"{b.address} ECAP_ACS+6.w=0000`) so GPU peer and GPUDirect RDMA "
                            "traffic stays in the switch" if want == "disabled" else
                            "enable ACS in the BIOS: passthrough needs isolated IOMMU groups"))
    return out or _ok("acs", f"{len(readable)} bridges", want)


class CheckReport(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    node: str | None
    pool: str | None
    status: Literal["pass", "warn", "fail"]
    results: list[CheckResult]

    @property
    def failed(self) -> bool:
        return self.status == "fail"


def run_checks(ctx: CheckContext, only: list[str] | None = None,
               skip: list[str] | None = None) -> CheckReport:
    for name in (only or []) + (skip or []):
        if name not in CHECKS:
            raise InputError(f"check '{name}' does not exist (fix: use one of "
                             f"{', '.join(sorted(CHECKS))})")
    results: list[CheckResult] = []
    for name, fn in CHECKS.items():
        if only and name not in only:
            continue
        if skip and name in skip:
            continue
        results += fn(ctx)
    statuses = {r.status for r in results}
    overall: Literal["pass", "warn", "fail"] = (
        "fail" if "fail" in statuses else "warn" if "warn" in statuses else "pass")
    return CheckReport(node=ctx.inv.host.hostname, pool=ctx.exp.pool, status=overall,
                       results=results)


def node_condition(report: CheckReport, now: str) -> dict[str, str]:
    failed = [r for r in report.results if r.status == "fail"]
    return {
        "type": CONDITION_TYPE,
        "status": "False" if failed else "True",
        "reason": "ChecksFailed" if failed else "ChecksPassed",
        "message": "; ".join(f"{r.name} {r.subject}: {r.observed}" for r in failed)[:1024]
        or f"{len(report.results)} checks passed or warned",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def node_taints(report: CheckReport) -> list[dict[str, str]]:
    return [{"key": TAINT_KEY, "value": "checks-failed", "effect": "NoSchedule"}] \
        if report.failed else []

