"""Reproducible node preparation (pure): the ordered, idempotent steps that bring a node to
its pool's approved matrix entry, rendered as a bash script for review.

aiplat never runs the script. Every step is safe to re-run: files are written only when their
content differs (``aiplat_write``), packages are pinned through an apt preferences file and
installed with ``apt-get install`` (a no-op when the pinned version is present), services are
enabled with ``systemctl enable --now``. Steps that need a reboot or a console (Secure Boot
key enrolment) say so. Debian/Ubuntu with NVIDIA's CUDA repository is assumed for package
names (``nvidia-driver-580-open``, ``nvidia-fabricmanager-580``, ``nvidia-container-toolkit``);
other distributions are out of scope for now and the script refuses to run there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from aiplat.errors import InputError
from aiplat.shell import heredoc, sh
from aiplat.spec.models import NicType, Platform, VersionEntry


@dataclass(frozen=True)
class Step:
    title: str
    commands: list[str]
    reboot: bool = False
    notes: list[str] = field(default_factory=list)


def _write(path: str, content: str, mode: str = "0644") -> str:
    return heredoc(sh("aiplat_write {path} {mode}", path=path, mode=mode), content)


_EXACT = re.compile(r"^[0-9]+(?:\.[0-9]+)*$")
RUNTIME_PACKAGES = {"containerd": "containerd.io", "cri-o": "cri-o"}
"""The runtimes node prepare installs (the spec allows no other), and their packages."""


def _exact(field: str, value: str) -> str:
    """The version apt pins: numbers and dots (a range or a suffix cannot be pinned)."""
    if not _EXACT.match(value):
        raise InputError(f"versions.approved {field} {value!r}: node prepare pins an exact "
                         "version, numbers and dots (fix: give the version to install, "
                         "e.g. 580.95.05, in the entry node prepare uses)")
    return value


def _preferences(name: str) -> str:
    """An apt preferences file: apt reads only files named with letters, digits, '-', '_'
    and '.' whose extension is none or .pref (apt_preferences(5)): containerd.io's pin in
    'aiplat-containerd.io' would be ignored without a word."""
    return f"/etc/apt/preferences.d/aiplat-{re.sub(r'[^A-Za-z0-9_-]', '-', name)}.pref"


def _pin(packages: list[str], version: str) -> str:
    blocks = "\n\n".join(f"Package: {p}\nPin: version {version}\nPin-Priority: 1001"
                         for p in packages)
    return blocks


def _range_check(what: str, spec: str, value_cmd: str) -> list[str]:
    ops = {">=": "ge", "<=": "le", ">": "gt", "<": "lt", "==": "eq", "!=": "ne"}
    out = []
    for clause in (c.strip() for c in spec.split(",") if c.strip()):
        op = next((o for o in (">=", "<=", "==", "!=", ">", "<") if clause.startswith(o)), None)
        ver = clause[len(op):].strip() if op else clause
        dop = ops[op] if op else "eq"
        out.append(sh(f'dpkg --compare-versions "$({value_cmd})" {dop} {{ver}} || '
                      f'{{{{ echo "{what} $({value_cmd}) is not "{{clause}}" (approved)" >&2; '
                      'exit 1; }}', ver=ver, clause=clause))
    return out


def plan_steps(platform: Platform, pool_name: str, entry_name: str | None = None) -> list[Step]:  # noqa: C901 (ratchet)
    pool = platform.pool(pool_name)
    if pool is None:
        raise InputError(f"--pool {pool_name}: no such pool (fix: use one of "
                         f"{', '.join(p.name for p in platform.pools)})")
    entries = platform.versions.approved
    if not entries:
        raise InputError("the spec approves no version combination (fix: add "
                         "versions.approved with driver, containerToolkit, ... versions)")
    entry: VersionEntry | None = (next((e for e in entries if e.name == entry_name), None)
                                  if entry_name else entries[0])
    if entry is None:
        raise InputError(f"--entry {entry_name}: not in versions.approved (fix: use one of "
                         f"{', '.join(e.name for e in entries)})")
    node = pool.node
    checks = node.checks
    gpu_model = node.gpu.model.lower() if node.gpu else ""
    amd = gpu_model.startswith(("mi", "amd"))
    nvidia = bool(node.gpu) and not amd
    rdma = any(n.type in (NicType.INFINIBAND, NicType.ROCE) for n in node.nics)
    nvswitch = nvidia and node.gpu is not None and node.gpu.count == 8 and "sxm" in gpu_model
    group = checks.device_group
    steps: list[Step] = []

    steps.append(Step("check the operating system and kernel", [
        '[ -r /etc/debian_version ] || { echo "only Debian/Ubuntu is supported" >&2; exit 1; }',
        *(_range_check("kernel", entry.kernel, "uname -r | cut -d- -f1") if entry.kernel else []),
    ]))
    if nvidia and entry.driver:
        branch = _exact("driver", entry.driver).split(".")[0]
        pkgs = [f"nvidia-driver-{branch}-open"]
        if nvswitch:
            pkgs.append(f"nvidia-fabricmanager-{branch}")
        steps.append(Step(f"NVIDIA driver {entry.driver} (open kernel modules), pinned", [
            # Every package of the branch ends in -580 (-open): nvidia-utils-580,
            # libnvidia-compute-580, nvidia-dkms-580-open. A plain nvidia-* glob would also
            # catch nvidia-container-toolkit, which has its own version line.
            _write(_preferences("nvidia-driver"), _pin(
                [f"/-{branch}(-open|-server|-server-open)?$/"], f"{entry.driver}-*")),
            "apt-get update -q",
            sh("DEBIAN_FRONTEND=noninteractive apt-get install -y -q {pkgs}", pkgs=pkgs),
        ], reboot=True, notes=["a new driver needs a reboot (or unloading every nvidia module)"]))
    if entry.container_toolkit and nvidia:
        tk = ["nvidia-container-toolkit", "nvidia-container-toolkit-base",
              "libnvidia-container-tools", "libnvidia-container1"]
        toolkit = _exact("containerToolkit", entry.container_toolkit)
        steps.append(Step(f"NVIDIA Container Toolkit {toolkit}, pinned", [
            _write(_preferences("nvidia-container-toolkit"),
                   _pin(tk, f"{toolkit}-*")),
            sh("DEBIAN_FRONTEND=noninteractive apt-get install -y -q {pkgs}", pkgs=tk),
        ]))
    if entry.container_runtime:
        name, _, ver = entry.container_runtime.partition(" ")
        pkg = RUNTIME_PACKAGES[name.lower()]
        _exact("containerRuntime", ver)
        steps.append(Step(f"container runtime {entry.container_runtime}, pinned", [
            _write(_preferences(pkg), _pin([pkg], f"{ver}*")),
            sh("DEBIAN_FRONTEND=noninteractive apt-get install -y -q {pkg}", pkg=pkg),
        ]))
    if entry.kubernetes:
        kpk = ["kubelet", "kubeadm", "kubectl"]
        kube = _exact("kubernetes", entry.kubernetes)
        steps.append(Step(f"Kubernetes node packages {kube}, pinned and held", [
            _write(_preferences("kubernetes"), _pin(kpk, f"{kube}.*")),
            sh("DEBIAN_FRONTEND=noninteractive apt-get install -y -q {pkgs}", pkgs=kpk),
            sh("apt-mark hold {pkgs}", pkgs=kpk),
        ]))
    modules = ([*(["nvidia", "nvidia_uvm"] if nvidia else []), *(["amdgpu"] if amd else []),
                *(["nvidia_peermem"] if nvidia and rdma else []), *checks.required_modules])
    modules = list(dict.fromkeys(modules))
    if modules:
        steps.append(Step("kernel modules loaded at boot", [
            _write("/etc/modules-load.d/aiplat.conf", "\n".join(modules)),
            *(sh("modprobe {m}", m=m) for m in modules),
        ]))
    if group:
        perm_cmds = [sh("getent group {g} >/dev/null || groupadd --system {g}", g=group)]
        if nvidia:
            # The group's number is known on the node only: printf fills it in, so the
            # written text is never expanded by the shell.
            perm_cmds += [
                sh('gid=$(getent group {g} | cut -d: -f3)', g=group),
                sh("printf 'options nvidia NVreg_DeviceFileUID=0 NVreg_DeviceFileGID=%s "
                   "NVreg_DeviceFileMode=0660\\n' \"$gid\" | aiplat_write {path} 0644",
                   path="/etc/modprobe.d/aiplat-nvidia-devices.conf")]
        rules = []
        if rdma:
            rules += [f'KERNEL=="uverbs*", SUBSYSTEM=="infiniband_verbs", OWNER="root", '
                      f'GROUP="{group}", MODE="0660"',
                      f'KERNEL=="rdma_cm", SUBSYSTEM=="infiniband", OWNER="root", '
                      f'GROUP="{group}", MODE="0660"']
        if amd:
            rules += [f'KERNEL=="kfd", SUBSYSTEM=="kfd", GROUP="{group}", MODE="0660"',
                      f'SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="{group}", MODE="0660"']
        if rules:
            perm_cmds += [_write("/etc/udev/rules.d/70-aiplat-devices.rules", "\n".join(rules)),
                          "udevadm control --reload-rules", "udevadm trigger"]
        # ``group`` is a SYSTEM_NAME (no quote, comma or space): it cannot add a key such as
        # RUN+= to the rules.
        steps.append(Step(f"device node permissions: root:{group} 0660, never world-writable",
                          perm_cmds, reboot=nvidia,
                          notes=["NVreg_* options apply when the nvidia module next loads"]))
    if nvidia:
        services = ["nvidia-persistenced"] + (["nvidia-fabricmanager"] if nvswitch else [])
        steps.append(Step("persistence mode" + (" and the NVSwitch fabric manager"
                                                if nvswitch else ""),
                          [f"systemctl enable --now {s}" for s in services]))
    if checks.iommu == "required":
        flags = "amd_iommu=on iommu=pt" if amd else "intel_iommu=on iommu=pt"
        steps.append(Step("IOMMU on, in passthrough mode", [
            f"grep -q 'iommu=pt' /etc/default/grub || sed -i 's/^GRUB_CMDLINE_LINUX=\"/"
            f"GRUB_CMDLINE_LINUX=\"{flags} /' /etc/default/grub",
            "update-grub",
        ], reboot=True))
    if checks.secure_boot == "required" and (nvidia or amd):
        key = "/var/lib/aiplat/mok"
        steps.append(Step("Secure Boot: a machine owner key signs the DKMS-built modules", [
            f"install -d -m 0700 {key}",
            f"[ -f {key}/MOK.der ] || openssl req -new -x509 -newkey rsa:2048 -nodes -days "
            f"36500 -subj '/CN=aiplat module signing/' -keyout {key}/MOK.priv -outform DER "
            f"-out {key}/MOK.der",
            _write("/etc/dkms/framework.conf.d/aiplat-signing.conf",
                   f"mok_signing_key={key}/MOK.priv\nmok_certificate={key}/MOK.der"),
            f"mokutil --test-key {key}/MOK.der || mokutil --import {key}/MOK.der",
        ], reboot=True, notes=["enrolment finishes at the console after reboot (MOK manager "
                               "asks for the password set by mokutil --import)"]))
    if nvidia and entry.container_toolkit:
        runtime = (entry.container_runtime or "containerd").split()[0].lower()
        rt = "crio" if runtime == "cri-o" else runtime
        steps.append(Step("container runtime integration and CDI specs", [
            sh("nvidia-ctk runtime configure --runtime={rt}", rt=rt),
            "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml",
            sh("systemctl restart {rt}", rt=rt),
        ]))
    steps.append(Step("verify", [
        sh("aiplat node check --spec SPEC --pool {pool} --matrix", pool=pool.name),
    ], notes=["replace SPEC with the platform spec path; the node stays cordoned until it "
              "passes"]))
    return steps


def _comment(text: str) -> str:
    """A comment line: a newline in ``text`` would start a command."""
    return "# " + " ".join(text.split())


def render_script(steps: list[Step], platform: Platform, pool: str,
                  entry: str | None) -> str:
    lines = [
        "#!/usr/bin/env bash",
        f"# Node preparation for pool '{pool}' of platform '{platform.metadata.name}'"
        f" (approved entry '{entry or platform.versions.approved[0].name}').",
        "# Generated by `aiplat node prepare`; review it, then run it as root. aiplat never",
        "# runs it. Every step is idempotent: running the script twice changes nothing more.",
        "set -euo pipefail",
        "",
        "aiplat_write() {  # aiplat_write PATH MODE < content: write only when it differs",
        '  local path=$1 mode=$2 tmp',
        '  tmp=$(mktemp)',
        '  cat >"$tmp"',
        '  if [ -f "$path" ] && cmp -s "$tmp" "$path"; then rm -f "$tmp"; return 0; fi',
        '  install -D -m "$mode" "$tmp" "$path" && rm -f "$tmp"',
        '  echo "wrote $path" >&2',
        "}",
        "",
    ]
    reboot = False
    for i, s in enumerate(steps, 1):
        lines.append(_comment(f"--- step {i}: {s.title}"
                              + (" (needs a reboot)" if s.reboot else "")))
        lines += [_comment(f"note: {n}") for n in s.notes]
        lines.append(sh("echo {title} >&2", title=f"== step {i}: {s.title}"))
        lines += s.commands
        lines.append("")
        reboot = reboot or s.reboot
    if reboot:
        lines.append("echo 'done: reboot the node, then run the verify step again' >&2")
    else:
        lines.append("echo 'done' >&2")
    return "\n".join(lines) + "\n"
