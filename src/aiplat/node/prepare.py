"""Reproducible node preparation (pure): the ordered, idempotent steps that bring a node to
its pool's approved matrix entry, rendered as a bash script for review.

aiplat never runs the script. The order is the one a real host needs:

1. the operating system and kernel are checked;
2. **Secure Boot first** (pools that require it): the machine owner key is created, DKMS is
   told to sign with it, and the key is queued for enrolment without a prompt, before any
   module is built: a driver installed earlier would be built unsigned, and under ``set -e``
   a ``modprobe`` of an unsigned module stops the script;
3. the apt repositories the packages come from, each with its signing key under
   ``/etc/apt/keyrings`` (``signed-by``): NVIDIA's CUDA repository (the driver), the
   container toolkit's, the container runtime's and pkgs.k8s.io for the Kubernetes minor;
4. the kernel prerequisites of a Kubernetes node: swap off (now and in fstab), overlay and
   br_netfilter loaded and persisted, IP forwarding and bridge netfilter sysctls;
5. the packages, each pinned through an apt preferences file;
6. device permissions, then the modules loaded (the NVIDIA modules only once the key is
   enrolled: enrolment completes at the next boot), services, IOMMU, runtime integration.

``platform.kubernetes.components`` decides who owns the NVIDIA driver and the container
toolkit: where the GPU Operator does, node prepare installs and loads nothing of it and says
so in a step of its own (the operator's driver or toolkit container does that work).

Every step is safe to re-run: files are written only when their content differs
(``aiplat_write``, which reports ``wrote PATH``), commands that change state run only when
the state differs, ``apt-get install`` of a pinned version present is a no-op. A second run
writes nothing. Debian/Ubuntu is assumed for package names (``nvidia-driver-580-open``,
``nvidia-fabricmanager-580``, ``nvidia-container-toolkit``); the script refuses to run on
other distributions.
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

KEYRINGS = "/etc/apt/keyrings"
SOURCES = "/etc/apt/sources.list.d"
MOK_DIR = "/var/lib/aiplat/mok"
MOK_CN = "aiplat module signing"
"""The subject of the signing key: ``modinfo -F signer`` shows it on a module it signed."""
KUBERNETES_MODULES = ("overlay", "br_netfilter")
KUBERNETES_SYSCTLS = (("net.bridge.bridge-nf-call-iptables", "1"),
                      ("net.bridge.bridge-nf-call-ip6tables", "1"),
                      ("net.ipv4.ip_forward", "1"))
NVIDIA_MODULES = ("nvidia", "nvidia_uvm", "nvidia_peermem")
"""Modules the driver package builds with DKMS (signed with the machine owner key)."""


def _exact(field: str, value: str) -> str:
    """The version apt pins: numbers and dots (a range or a suffix cannot be pinned)."""
    if not _EXACT.match(value):
        raise InputError(f"versions.approved {field} {value!r}: node prepare pins an exact "
                         "version, numbers and dots (fix: give the version to install, "
                         "e.g. 580.95.05, in the entry node prepare uses)")
    return value


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _preferences(name: str) -> str:
    """An apt preferences file: apt reads only files named with letters, digits, '-', '_'
    and '.' whose extension is none or .pref (apt_preferences(5)): containerd.io's pin in
    'aiplat-containerd.io' would be ignored without a word."""
    return f"/etc/apt/preferences.d/aiplat-{re.sub(r'[^A-Za-z0-9_-]', '-', name)}.pref"


def _pin(packages: list[str], version: str) -> str:
    blocks = "\n\n".join(f"Package: {p}\nPin: version {version}\nPin-Priority: 1001"
                         for p in packages)
    return blocks


def _install(pkgs: list[str]) -> str:
    return sh("DEBIAN_FRONTEND=noninteractive apt-get install -y -q {pkgs}", pkgs=pkgs)


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


def _key(url: str, name: str) -> str:
    """Fetch a repository's signing key into /etc/apt/keyrings, written only when it changed
    (a rotated key is picked up; an unchanged one is not rewritten). apt reads an
    ASCII-armoured key from a file named .asc, a binary one from .gpg."""
    return f'curl -fsSL --retry 3 "{url}" | ' + sh("aiplat_write {path} 0644",
                                                    path=f"{KEYRINGS}/{name}")


def _secure_boot(key: str = MOK_DIR) -> Step:
    cert, priv = f"{key}/MOK.der", f"{key}/MOK.priv"
    password, hashed = f"{key}/enrol-password", f"{key}/enrol-password.hash"
    return Step("Secure Boot: a machine owner key, DKMS signing with it, its enrolment queued",
                [
                    f"install -d -m 0700 {key}",
                    f"[ -f {cert} ] || openssl req -new -x509 -newkey rsa:2048 -nodes -days "
                    f"36500 -subj '/CN={MOK_CN}/' -keyout {priv} -outform DER -out {cert}",
                    # dkms reads /etc/dkms/framework.conf.d/*.conf: every module it builds
                    # from now on (the driver below, each new kernel) is signed with the key.
                    _write("/etc/dkms/framework.conf.d/aiplat-signing.conf",
                           f"mok_signing_key={priv}\nmok_certificate={cert}"),
                    # The one-time password MokManager asks for at the console. An admin may
                    # put one there before the run; otherwise a random one is made.
                    f"[ -s {password} ] || openssl rand -hex 8 | aiplat_write {password} 0600",
                    # mokutil --generate-hash reads the password twice from a stdin that is not
                    # a terminal: it never appears in a command line (ps) or a prompt.
                    f"[ -s {hashed} ] || cat {password} {password} | mokutil --generate-hash | "
                    f"aiplat_write {hashed} 0600",
                    # --test-key exits 0 when the key is enrolled or already queued (it
                    # prints which) and 1 when it is neither. The import uses mokutil's
                    # documented non-interactive form, --hash-file (a password hash from
                    # --generate-hash), not --root-pw: root often has no password on nodes.
                    f"aiplat_mok=$(mokutil --test-key {cert} || true)",
                    'case "$aiplat_mok" in',
                    '  *"already enrolled"*|*"already in db"*) aiplat_mok_pending=0 ;;',
                    '  *"enrollment request"*) aiplat_mok_pending=1 ;;',
                    f"  *) mokutil --import {cert} --hash-file {hashed}; aiplat_mok_pending=1 ;;",
                    "esac",
                    '[ "$aiplat_mok_pending" = 0 ] || echo "the machine owner key is queued: '
                    "reboot and enrol it at the console (MokManager: Enroll MOK, password in "
                    f'{password}); signed modules load after that" >&2',
                ], reboot=True, notes=[
                    "first, before any module is built: DKMS signs the driver with this key",
                    "the enrolment completes at the next boot, in MokManager at the console, "
                    f"with the password in {password}",
                ])


def _repositories(entry: VersionEntry, host_driver: bool, host_toolkit: bool,
                  runtime: str | None) -> Step | None:
    cmds: list[str] = []
    if host_driver:
        # NVIDIA's CUDA repository: one per distribution release and architecture
        # (ubuntu2404/x86_64, debian12/sbsa), known on the node only; printf fills it in.
        cmds += [
            'case "$(uname -m)" in aarch64) aiplat_cuda_arch=sbsa ;; '
            '*) aiplat_cuda_arch=$(uname -m) ;; esac',
            'aiplat_cuda="https://developer.download.nvidia.com/compute/cuda/repos/'
            '${ID}${VERSION_ID//./}/${aiplat_cuda_arch}"',
            _key("$aiplat_cuda/cuda-archive-keyring.gpg", "cuda-archive-keyring.gpg"),
            f"printf 'deb [signed-by={KEYRINGS}/cuda-archive-keyring.gpg] %s/ /\\n' "
            f'"$aiplat_cuda" | aiplat_write {SOURCES}/aiplat-cuda.list 0644',
        ]
    if host_toolkit:
        cmds += [
            _key("https://nvidia.github.io/libnvidia-container/gpgkey",
                 "nvidia-container-toolkit.asc"),
            # $(ARCH) is apt's own substitution, as in NVIDIA's list file.
            _write(f"{SOURCES}/aiplat-nvidia-container-toolkit.list",
                   f"deb [signed-by={KEYRINGS}/nvidia-container-toolkit.asc] "
                   "https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /"),
        ]
    if runtime == "containerd":
        # containerd.io is Docker's package: its repository per distribution and release.
        cmds += [
            _key("https://download.docker.com/linux/${ID}/gpg", "docker.asc"),
            f"printf 'deb [signed-by={KEYRINGS}/docker.asc] https://download.docker.com/"
            "linux/%s %s stable\\n' \"$ID\" \"${VERSION_CODENAME:?no VERSION_CODENAME in "
            f'/etc/os-release}}" | aiplat_write {SOURCES}/aiplat-docker.list 0644',
        ]
    elif runtime == "cri-o" and entry.container_runtime:
        crio = _minor(entry.container_runtime.split()[1])
        base = f"https://download.opensuse.org/repositories/isv:/cri-o:/stable:/v{crio}/deb/"
        cmds += [_key(f"{base}Release.key", "cri-o-apt-keyring.asc"),
                 _write(f"{SOURCES}/aiplat-cri-o.list",
                        f"deb [signed-by={KEYRINGS}/cri-o-apt-keyring.asc] {base} /")]
    if entry.kubernetes:
        kube = _minor(_exact("kubernetes", entry.kubernetes))
        base = f"https://pkgs.k8s.io/core:/stable:/v{kube}/deb/"
        cmds += [_key(f"{base}Release.key", "kubernetes-apt-keyring.asc"),
                 _write(f"{SOURCES}/aiplat-kubernetes.list",
                        f"deb [signed-by={KEYRINGS}/kubernetes-apt-keyring.asc] {base} /")]
    if not cmds:
        return None
    return Step("apt repositories and their signing keys", [
        "install -d -m 0755 /etc/apt/keyrings",
        ". /etc/os-release",
        *cmds,
        "apt-get update -q",
    ], notes=["keys are fetched on every run and written only when they changed"])


def _kernel_prerequisites() -> Step:
    sysctls = "\n".join(f"{k} = {v}" for k, v in KUBERNETES_SYSCTLS)
    # A swap line is one whose third field is 'swap' and that is not a comment already.
    swap_line = (r"^([^#[:space:]][^[:space:]]*[[:space:]]+[^[:space:]]+[[:space:]]+swap"
                 r"[[:space:]].*)$")
    return Step("kernel prerequisites of a Kubernetes node: swap off, overlay and "
                "br_netfilter, IP forwarding", [
                    "swapoff -a",
                    "[ ! -f /etc/fstab ] || sed -E "
                    + sh("{expr}", expr=f"s/{swap_line}/# aiplat: swap off for the kubelet: \\1/")
                    + " /etc/fstab | aiplat_write /etc/fstab 0644",
                    _write("/etc/modules-load.d/aiplat-kubernetes.conf",
                           "\n".join(KUBERNETES_MODULES)),
                    *(sh("modprobe {m}", m=m) for m in KUBERNETES_MODULES),
                    _write("/etc/sysctl.d/90-aiplat-kubernetes.conf", sysctls),
                    "sysctl --system >/dev/null",
                ], notes=["the kubelet refuses to start with swap on (unless configured for "
                          "it); pod networking needs forwarding and bridged traffic through "
                          "iptables"])


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
    owners = platform.kubernetes.components
    gpu_model = node.gpu.model.lower() if node.gpu else ""
    amd = gpu_model.startswith(("mi", "amd"))
    nvidia = bool(node.gpu) and not amd
    host_driver = nvidia and owners.driver == "host"
    host_toolkit = nvidia and owners.toolkit == "host"
    rdma = any(n.type in (NicType.INFINIBAND, NicType.ROCE) for n in node.nics)
    nvswitch = nvidia and node.gpu is not None and node.gpu.count == 8 and "sxm" in gpu_model
    secure_boot = checks.secure_boot == "required" and (host_driver or amd)
    runtime = (entry.container_runtime.split()[0].lower() if entry.container_runtime
               else None)
    driver = _exact("driver", entry.driver) if host_driver and entry.driver else None
    toolkit = (_exact("containerToolkit", entry.container_toolkit)
               if host_toolkit and entry.container_toolkit else None)
    group = checks.device_group
    steps: list[Step] = []

    steps.append(Step("check the operating system and kernel", [
        '[ -r /etc/debian_version ] || { echo "only Debian/Ubuntu is supported" >&2; exit 1; }',
        *(_range_check("kernel", entry.kernel, "uname -r | cut -d- -f1") if entry.kernel else []),
    ]))
    if nvidia and owners.driver == "operator":
        steps.append(Step("NVIDIA driver: owned by the GPU Operator, not installed here", [],
                          notes=["kubernetes.components.driver is operator: the operator's "
                                 "driver container builds and loads the modules, runs the "
                                 "persistence daemon (and the fabric manager); node prepare "
                                 "installs no driver package and loads no nvidia module"]))
    if nvidia and owners.toolkit == "operator":
        steps.append(Step("NVIDIA Container Toolkit: owned by the GPU Operator, not installed "
                          "here", [], notes=["kubernetes.components.toolkit is operator: the "
                                             "operator's toolkit container configures the "
                                             "runtime and writes the CDI specs"]))
    if secure_boot:
        steps.append(_secure_boot())
    repos = _repositories(entry, bool(driver), bool(toolkit), runtime)
    if repos is not None:
        steps.append(repos)
    if entry.kubernetes or entry.container_runtime:
        steps.append(_kernel_prerequisites())
    if driver:
        branch = driver.split(".")[0]
        pkgs = [f"nvidia-driver-{branch}-open"]
        if nvswitch:
            pkgs.append(f"nvidia-fabricmanager-{branch}")
        cmds = [
            # Every package of the branch ends in -580 (-open): nvidia-utils-580,
            # libnvidia-compute-580, nvidia-dkms-580-open. A plain nvidia-* glob would also
            # catch nvidia-container-toolkit, which has its own version line.
            _write(_preferences("nvidia-driver"), _pin(
                [f"/-{branch}(-open|-server|-server-open)?$/"], f"{driver}-*")),
            _install(pkgs),
        ]
        if secure_boot:
            # A driver installed before the key existed was built unsigned: rebuilt once.
            cmds += [
                'aiplat_kernel=$(uname -r)',
                sh('[ "$(modinfo -k "$aiplat_kernel" -F signer nvidia 2>/dev/null || true)" '
                   '= {cn} ] || dkms install --force {mod} -k "$aiplat_kernel"',
                   cn=MOK_CN, mod=f"nvidia/{driver}"),
            ]
        steps.append(Step(f"NVIDIA driver {driver} (open kernel modules), pinned", cmds,
                          reboot=True, notes=[
                              "a new driver needs a reboot (or unloading every nvidia module)",
                              *(["DKMS builds the modules signed with the machine owner key"]
                                if secure_boot else [])]))
    if toolkit:
        tk = ["nvidia-container-toolkit", "nvidia-container-toolkit-base",
              "libnvidia-container-tools", "libnvidia-container1"]
        steps.append(Step(f"NVIDIA Container Toolkit {toolkit}, pinned", [
            _write(_preferences("nvidia-container-toolkit"), _pin(tk, f"{toolkit}-*")),
            _install(tk),
        ]))
    if entry.container_runtime and runtime:
        pkg = RUNTIME_PACKAGES[runtime]
        ver = _exact("containerRuntime", entry.container_runtime.partition(" ")[2])
        steps.append(Step(f"container runtime {entry.container_runtime}, pinned", [
            _write(_preferences(pkg), _pin([pkg], f"{ver}*")),
            _install([pkg]),
        ]))
    if entry.kubernetes:
        kpk = ["kubelet", "kubeadm", "kubectl"]
        kube = _exact("kubernetes", entry.kubernetes)
        steps.append(Step(f"Kubernetes node packages {kube}, pinned and held", [
            _write(_preferences("kubernetes"), _pin(kpk, f"{kube}.*")),
            _install(kpk),
            sh("apt-mark hold {pkgs}", pkgs=kpk),
        ]))
    if group:
        perm_cmds = [sh("getent group {g} >/dev/null || groupadd --system {g}", g=group)]
        if host_driver:
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
            # Reloaded and triggered only when the rules changed: a second run does nothing.
            perm_cmds += ["aiplat_changed=0",
                          _write("/etc/udev/rules.d/70-aiplat-devices.rules", "\n".join(rules)),
                          '[ "$aiplat_changed" = 0 ] || { udevadm control --reload-rules && '
                          'udevadm trigger; }']
        # ``group`` is a SYSTEM_NAME (no quote, comma or space): it cannot add a key such as
        # RUN+= to the rules.
        steps.append(Step(f"device node permissions: root:{group} 0660, never world-writable",
                          perm_cmds, reboot=host_driver,
                          notes=["written before the modules load: NVreg_* options apply "
                                 "when the nvidia module loads"] if host_driver else []))
    signed = [m for m in NVIDIA_MODULES if host_driver and (m != "nvidia_peermem" or rdma)]
    done = set(KUBERNETES_MODULES) if entry.kubernetes or entry.container_runtime else set()
    other = [m for m in dict.fromkeys([*(["amdgpu"] if amd else []),
                                       *checks.required_modules])
             if m not in done and m not in NVIDIA_MODULES]
    if signed or other:
        if signed:
            load = "; ".join(sh("modprobe {m}", m=m) for m in signed)
            gate = ('if [ "${aiplat_mok_pending:-0}" = 1 ]; then echo "the nvidia modules load '
                    'at boot once the key is enrolled" >&2; aiplat_nvidia_loaded=0; else '
                    f"{load}; aiplat_nvidia_loaded=1; fi")
        steps.append(Step("kernel modules loaded at boot", [
            _write("/etc/modules-load.d/aiplat.conf", "\n".join([*signed, *other])),
            *(sh("modprobe {m}", m=m) for m in other),
            *([gate] if signed else []),
        ], notes=["the NVIDIA modules are DKMS-built: with Secure Boot they load once the "
                  "machine owner key is enrolled (after the reboot)"] if signed and secure_boot
            else []))
    if host_driver:
        services = ["nvidia-persistenced"] + (["nvidia-fabricmanager"] if nvswitch else [])
        steps.append(Step("persistence mode" + (" and the NVSwitch fabric manager"
                                                if nvswitch else ""),
                          [f"systemctl enable --now {s}" for s in services]))
    if checks.iommu == "required":
        flags = "amd_iommu=on iommu=pt" if amd else "intel_iommu=on iommu=pt"
        steps.append(Step("IOMMU on, in passthrough mode", [
            "if ! grep -q 'iommu=pt' /etc/default/grub; then "
            f"sed -i 's/^GRUB_CMDLINE_LINUX=\"/GRUB_CMDLINE_LINUX=\"{flags} /' /etc/default/grub"
            " && echo 'wrote /etc/default/grub' >&2 && update-grub; fi",
        ], reboot=True))
    if toolkit:
        rt = "crio" if runtime == "cri-o" else (runtime or "containerd")
        conf = "/etc/crio" if rt == "crio" else "/etc/containerd"
        # The specs name the driver's files by version: regenerated on every run, written
        # only when they changed (nvidia-ctk prints the spec without --output).
        cdi = "nvidia-ctk cdi generate | aiplat_write /etc/cdi/nvidia.yaml 0644"
        steps.append(Step("container runtime integration and CDI specs", [
            # Configured (and the runtime restarted) once: a second run restarts nothing.
            sh("grep -rqs nvidia-container-runtime {conf} || {{ nvidia-ctk runtime configure "
               "--runtime={rt} && systemctl restart {rt}; }}", conf=conf, rt=rt),
            f'if [ "${{aiplat_nvidia_loaded:-0}}" = 1 ]; then {cdi}; else echo "CDI specs: run '
            'the script again once the driver is loaded (after the reboot)" >&2; fi'
            if host_driver else
            "echo 'CDI specs: the driver is the GPU Operator'\"'\"'s: run nvidia-ctk cdi "
            "generate --driver-root=/run/nvidia/driver once its container runs' >&2",
        ]))
    steps.append(Step("verify", [
        sh("aiplat node check SPEC --pool {pool} --matrix", pool=pool.name),
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
        '  aiplat_changed=1',
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
