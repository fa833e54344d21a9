"""What in a CDI spec hands the host to a container, or to whoever wrote the spec.

Pure: each function takes one spec entry (a mount, a hook, a device node) as decoded, and
optionally the host's real path for it, or (``link_problems``, ``mount_link_problems``)
the hooks and mounts that meet in one container, and returns ``Problem``s; ``aiplat.devices.cdi``
reports them in its ``host-check`` class. The reference loader accepts every one of these
specs; the runtime would then, as root:

- bind ``/``, credentials or a container runtime's socket into the container
  (``ESCAPE_PATHS``, and any directory above one of them), or a system directory writable
  (``SYSTEM_DIRS``: the container changes what the host runs, or what its root daemons
  write: /var/log, /var/cache...);
- mount a kernel file system (``KERNEL_FS``), a second procfs the runtime does not mask, or
  any file system a device does not need (a disk, an overlay of host directories, a network
  share): only binds and ``SAFE_FS`` are let through;
- give the container a device node that is not an accelerator's (``/dev/mem``, MSRs, a
  disk, the TPM, the IPMI controller, ...): only nodes of GPU, accelerator and RDMA drivers
  (``ACCELERATOR_MAJORS``, ``ACCELERATOR_DRIVERS``, ``ACCELERATOR_NODES``) and the ones every
  container has (``HARMLESS_NODES``) are let through;
- run a hook that is not a known CDI hook (``KNOWN_HOOKS``: NVIDIA's, in the forms NVIDIA
  writes them): any other program is arbitrary code as root on the host, whatever its name.
  A shell, an interpreter, a launcher or a network client is named as such; so is a hook
  that pipes into a shell, sits where anyone can replace it, or whose environment is not
  the few variables NVIDIA's hooks read; and a known hook pointed at a path outside the
  container (``CONTAINER_PATH_FLAGS``: ``chmod --path ../../etc``, a link at ``/proc/1/root``);
- let a hook act on the host through a link another hook makes (``link_problems``: across
  all the hooks a container may get, from one spec or several): create-symlinks writes an
  absolute target as given, and chmod follows it on the host (``--link
  /etc/shadow::/usr/lib/x`` then ``chmod --path /usr/lib/x``), as does a chmod run after
  the container started through whatever link the container made;
- let chmod act on the host through a host link in a bind of a host folder
  (``mount_link_problems``: in the root the bind is the host folder, and a link there to an
  absolute target resolves from the host's root, ``ro`` or not).

Allow-lists, not deny-lists, for what a device needs (hooks, file system types, device
nodes): the programs and devices that hand the host over are too many to list. Binds are the
exception: a device's files may lie anywhere, so binds are checked against what they must
not reach.

Paths are compared after the kernel's own normalisation (``//etc/./ssh/../shadow`` is
``/etc/shadow``); symlinks are the host's business, resolved by the caller when it has one.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as _field
from typing import Any, Literal

Severity = Literal["error", "warning"]

# Host paths no container may see, with what they hand over. A bind of any directory above
# one of them (``/``, ``/etc``, ``/var``, ``/run``) hands it over too.
ESCAPE_PATHS: dict[str, str] = {
    "/etc/shadow": "the password hashes",
    "/etc/gshadow": "the group password hashes",
    "/etc/sudoers": "who may become root",
    "/etc/sudoers.d": "who may become root",
    "/etc/ssh": "the host's SSH keys",
    "/etc/kubernetes": "the kubelet's and control plane's credentials",
    "/etc/pki": "the host's private keys",
    "/etc/ssl/private": "the host's private keys",
    "/etc/krb5.keytab": "the host's Kerberos keys",
    "/etc/cdi": "the CDI specs (a writer adds hooks that run as root)",
    "/etc/containerd": "containerd's configuration (what runs as root)",
    "/etc/crio": "CRI-O's configuration (what runs as root)",
    "/etc/docker": "Docker's configuration (what runs as root)",
    "/etc/containers": "Podman's configuration (what runs as root)",
    "/root": "root's home (SSH keys, cloud and cluster credentials)",
    "/home": "the users' homes (SSH keys, tokens)",
    "/boot": "the kernel and boot loader",
    "/proc": "the host's processes (/proc/1/root is the host's /), kernel settings and memory",
    "/run/containerd": "containerd's socket (it starts any container, privileged too)",
    "/run/crio": "CRI-O's socket (it starts any container, privileged too)",
    "/run/docker.sock": "Docker's socket (it starts any container, privileged too)",
    "/run/docker": "Docker's sockets",
    "/run/podman": "Podman's socket (it starts any container, privileged too)",
    "/run/cri-dockerd.sock": "cri-dockerd's socket",
    "/run/k3s": "k3s's containerd socket",
    "/run/buildkit": "BuildKit's socket",
    "/run/dbus": "the system bus (systemd starts units on request)",
    "/run/systemd": "systemd's private socket",
    "/run/user": "the users' session sockets (rootless Podman, D-Bus)",
    "/run/cdi": "the CDI specs (a writer adds hooks that run as root)",
    "/run/secrets": "the host's secrets",
    "/var/lib/kubelet": "every pod's secrets and the kubelet's credentials",
    "/var/lib/etcd": "the cluster's whole state, secrets included",
    "/var/lib/rancher": "k3s/RKE2 state and join tokens",
    "/var/lib/docker": "every container's files and images",
    "/var/lib/containerd": "every container's files and images",
    "/var/lib/containers": "every container's files and images",
    "/etc/rancher": "k3s/RKE2 configuration and the cluster admin's kubeconfig",
    "/etc/k0s": "k0s's configuration",
    "/var/lib/k0s": "k0s's state, keys and join tokens",
    "/run/k0s": "k0s's containerd socket",
    "/var/snap/microk8s": "MicroK8s's credentials and its containerd socket",
    "/run/snapd.socket": "snapd's socket (it installs snaps, as root)",
    "/run/snapd-snap.socket": "snapd's socket (it installs snaps, as root)",
    "/run/libvirt": "libvirt's sockets (it starts VMs with any host file or device)",
    "/var/lib/libvirt": "libvirt's VM disks and state",
    "/var/snap/lxd": "LXD's socket (it starts privileged containers)",
    "/var/lib/lxd": "LXD's socket (it starts privileged containers)",
    "/var/lib/incus": "Incus's socket (it starts privileged containers)",
    "/var/lib/cloud": "cloud-init's data (user-data with secrets, scripts it runs as root)",
    "/sys/kernel/debug": "debugfs (kernel memory, driver internals)",
    "/sys/kernel/tracing": "tracefs (every process's system calls and their arguments)",
    "/sys/kernel/security": "securityfs (the LSM policies)",
    "/sys/kernel/config": "configfs (kernel object configuration)",
    "/sys/firmware/efi/efivars": "the firmware's variables",
    "/sys/fs/bpf": "pinned BPF programs and maps",
}
# /var/run is a link to /run on current distributions; a spec may name either.
ESCAPE_PATHS |= {"/var" + p: why for p, why in ESCAPE_PATHS.items() if p.startswith("/run/")}

SYSTEM_DIRS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
               "/var", "/sys", "/boot", "/run", "/root", "/home", "/srv", "/snap")
"""Directories whose files the host runs, trusts or writes as root: a writable bind lets the
container change them (a library the host loads, a unit, a kernel setting; under /run the
drop-ins root's daemons read: modprobe.d, sysctl.d, tmpfiles.d, udev rules, a containerised
driver's root; under /var the cron and at jobs, the logs root's daemons append to and
logrotate rotates by name, apt's package cache, the crash reports apport reads, every
daemon's state; /srv what the host serves). Only the shared scratch below ``SHARED_DIRS``
(/var/tmp/x) is not the system's."""

SHARED_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
"""Directories everyone writes, root's programs too, by names they pick: a writable bind of
one of them (not of a subdirectory) lets the container plant what root opens next."""

# File systems that are the host kernel's own interfaces, not the container's.
KERNEL_FS: dict[str, str] = {
    "devtmpfs": "every host device node",
    "debugfs": "the kernel's debug interface (kernel memory, driver internals)",
    "tracefs": "the kernel's tracing (every process's syscalls)",
    "securityfs": "the LSM policies (AppArmor, IMA)",
    "bpf": "pinned BPF programs and maps",
    "efivarfs": "the firmware's variables (a write can brick the machine)",
    "binfmt_misc": "which interpreter runs host binaries",
    "configfs": "kernel object configuration (USB gadgets, targets)",
}
# ...those that are safe only read-only (or, procfs, only where the runtime masks it)...
WRITABLE_KERNEL_FS: dict[str, str] = {
    "sysfs": "the kernel's and drivers' settings",
    "cgroup": "the cgroup tree (release_agent runs as root on the host)",
    "cgroup2": "the cgroup tree of the host",
}
# ...and the file systems a container may be given besides binds: each is the container's
# own (a new instance in its namespaces), not a view of the host's.
SAFE_FS: dict[str, str] = {
    "tmpfs": "memory charged to the container's cgroup",
    "devpts": "a new pseudo-terminal instance (every devpts mount is one since Linux 4.7)",
    "mqueue": "the POSIX message queues of the container's IPC namespace",
    "proc": "the container's own processes (at /proc only)",
    "sysfs": "read-only",
    "cgroup": "read-only",
    "cgroup2": "read-only",
}

MEMORY_NODES: dict[tuple[int, int], str] = {(1, 1): "/dev/mem", (1, 2): "/dev/kmem",
                                            (1, 4): "/dev/port"}
_MSR_MAJOR = 202  # /dev/cpu/N/msr: model-specific registers
_CPUID_MAJOR = 203  # /dev/cpu/N/cpuid
_BLOCK = re.compile(r"/dev/(?:[shv]d[a-z]+|xvd[a-z]+|nvme\d+n\d+|mmcblk\d+|dm-\d+|md\d+|"
                    r"loop\d+|nbd\d+|rbd\d+|zd\d+|mapper/[^/]+)(?:p?\d+)?")

HARMLESS_NODES: dict[tuple[int, int], str] = {
    (1, 3): "/dev/null", (1, 5): "/dev/zero", (1, 7): "/dev/full", (1, 8): "/dev/random",
    (1, 9): "/dev/urandom", (5, 0): "/dev/tty", (5, 2): "/dev/ptmx", (10, 200): "/dev/net/tun"}
"""Nodes every runc container already has (its default devices and device-cgroup rules):
granting one adds nothing."""

ACCELERATOR_MAJORS: dict[int, str] = {195: "NVIDIA's GPUs", 226: "DRM (GPUs)",
                                      231: "InfiniBand verbs", 261: "compute accelerators"}
"""Fixed majors of accelerator drivers (the kernel's devices.txt; 195 is the NVIDIA driver's
NV_MAJOR_DEVICE_NUMBER, 261 is ACCEL_MAJOR). Of 231 only the verbs minors (192 and up):
below them are umad and issm, which reach the fabric's subnet management."""
_VERBS_FIRST_MINOR = 192

ACCELERATOR_DRIVERS = ("nvidia", "drm", "accel", "kfd", "infiniband_verbs", "rdma_cm",
                       "habanalabs", "neuron")
"""Driver names in /proc/devices (and, for misc devices, /proc/misc) whose nodes are GPUs,
accelerators or RDMA devices; ``nvidia`` covers nvidia-uvm, nvidia-caps, nvidia-nvswitch and
the IMEX channels. A node of any other driver is refused when the host says whose it is."""

ACCELERATOR_NODES = re.compile(
    r"/dev/(?:nvidia(?:\d+|ctl|-uvm|-uvm-tools|-modeset|-nvswitch\d+|-nvswitchctl|-nvlink)"
    r"|nvidia-caps/nvidia-cap\d+|nvidia-caps-imex-channels/channel\d+"
    r"|dri/(?:card|renderD)\d+|kfd|accel/accel\d+|infiniband/(?:uverbs\d+|rdma_cm)"
    r"|hl\d+|hl_controlD\d+|neuron\d+)")
"""The nodes NVIDIA's, AMD's, DRM's, the accel subsystem's, RDMA's, Habana's and AWS
Neuron's drivers create: a node named only by its path must be one of them (the runtime
then reads its numbers from the host), under the host's /dev or a driver root's
(nvidia-ctk's /run/nvidia/driver/dev/nvidia0)."""
_ACCELERATOR_AT = re.compile(r"(?:/.*)?" + ACCELERATOR_NODES.pattern)

DYNAMIC_MAJORS = (range(60, 64), range(120, 128), range(234, 255), range(384, 512))
"""Majors no driver owns for good: the kernel's dynamic ranges (234-254, 384-511) and those
kept for local use (60-63, 120-127). nvidia-uvm, nvidia-caps and kfd get one at load, and so
do disks' controllers (nvme, bsg), the TPM and the IPMI interface: only the host's
/proc/devices says whose such a major is."""
_MISC_MAJOR = 10
_MISC_STATIC = range(128, 256)
"""Misc minors devices.txt assigns for good (/dev/kvm, /dev/snapshot, /dev/uinput, /dev/vfio,
...); rdma_cm gets a dynamic one (below 128, or from 256 on)."""

# Programs that run whatever their arguments say: a hook that is one of them is arbitrary
# code. Matched on the basename of the path, of its real path, and of argv[0] (multi-call
# binaries such as busybox pick the applet by argv[0]).
_SHELLS = ("sh", "bash", "rbash", "dash", "ash", "zsh", "ksh", "mksh", "pdksh", "oksh",
           "csh", "tcsh", "fish", "yash", "posh", "xonsh", "elvish")
_INTERPRETERS = ("python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php",
                 "lua", "luajit", "tclsh", "wish", "expect", "awk", "gawk", "mawk", "nawk",
                 "pwsh", "java", "gdb")
_LAUNCHERS = ("env", "sudo", "su", "doas", "pkexec", "nsenter", "chroot", "unshare",
              "setsid", "nohup", "xargs", "timeout", "nice", "ionice", "stdbuf", "taskset",
              "busybox", "toybox", "systemd-run", "strace", "systemctl",
              # container CLIs: each starts any container, privileged too
              "runc", "crun", "ctr", "nerdctl", "docker", "podman", "crictl", "kubectl")
_FETCHERS = ("curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp",
             "sftp", "rsync", "ftp", "tftp")
_VERSIONED = re.compile(r"(?P<name>[a-z]+?)[0-9.]*")  # python3.12 -> python, perl5 -> perl
RUNS_ANYTHING: dict[str, str] = {
    **dict.fromkeys(_SHELLS, "a shell"), **dict.fromkeys(_INTERPRETERS, "an interpreter"),
    **dict.fromkeys(_LAUNCHERS, "a launcher of other programs"),
    **dict.fromkeys(_FETCHERS, "a network client"),
}

KERNEL_DIRS = ("/proc", "/sys", "/dev")
"""Where a hook path is the kernel's view (another process's root, an open descriptor), not
an installed file."""

WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/shm", "/run/user", "/var/run/user",
                  "/home")
"""Where a hook binary can be replaced by someone other than root."""

PRELOAD_ENV = ("LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "GCONV_PATH", "BASH_ENV", "ENV",
               "PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "PERL5LIB", "RUBYOPT", "RUBYLIB",
               "NODE_OPTIONS")
"""Hook environment variables that load code into the hook (a root process on the host)."""

KNOWN_HOOKS: dict[str, str] = {
    "nvidia-cdi-hook": "the NVIDIA Container Toolkit's CDI hook (1.16 and later)",
    "nvidia-ctk": "the NVIDIA Container Toolkit's CLI, as 'nvidia-ctk hook ...' (before 1.16)",
    "nvidia-container-runtime-hook": "the NVIDIA Container Toolkit's legacy prestart hook",
    "nvidia-container-toolkit": "the legacy prestart hook's older name",
}
"""The hook binaries a spec may run on the host (NVIDIA's goldens, cmd/nvidia-ctk/cdi and
pkg/nvcdi of nvidia-container-toolkit v1.18): any other program is arbitrary code as root,
whatever its arguments (sed -i, find -exec, ld.so, flock, useradd, insmod, mount, dd...)."""

NVIDIA_HOOKS = ("update-ldcache", "create-symlinks", "chmod", "enable-cuda-compat",
                "disable-device-node-modification", "update-application-profile", "noop")
"""nvidia-cdi-hook's (and `nvidia-ctk hook`'s) subcommands (cmd/nvidia-cdi-hook/commands):
one it does not know it skips with a warning (a spec for a newer toolkit)."""

HOOK_GLOBAL_FLAGS = ("--debug", "-d", "--quiet")
LEGACY_HOOK_ARGS = ("prestart", "poststart", "poststop", "-debug", "--debug")
"""All the legacy hook takes besides -config, which names the configuration that picks the
program it runs (cmd/nvidia-container-runtime-hook/main.go)."""

NOT_A_HOOK_FLAG = ("--container-spec", "-container-spec")
"""Reads the container's state from a file of the spec's choosing instead of the runtime's
stdin: a state whose root is the host's makes the hook change the host's own files."""

CONTAINER_PATH_FLAGS: dict[str, str] = {
    "path": "chmod's --path", "folder": "update-ldcache's --folder",
    "link": "create-symlinks' --link", "cuda-compat-container-root":
    "enable-cuda-compat's --cuda-compat-container-root"}
"""The hook flags that name a path in the container (cmd/nvidia-cdi-hook): the hook, root on
the host, joins it to the container's root (chmod and update-ldcache with filepath.Join, so
'..' leaves it; create-symlinks before 1.17.5 too) and acts there. nvidia-ctk writes each as
an absolute, clean path (internal/discover/hooks.go transformArgs)."""

HOST_VIEWS = ("/proc", "/sys")
"""Container paths a hook must not be pointed at: while createContainer hooks run, the
container's /proc/1 is the runtime's init, whose root is still the host's (/proc/1/root/etc is
the host's /etc); /sys is the host's kernel settings."""

LDCONFIG = ("ldconfig", "ldconfig.real")
"""What update-ldcache's --ldconfig-path may name: it runs that program as root on the host
(Ubuntu's /sbin/ldconfig is a wrapper around ldconfig.real)."""

HOOK_ENV = ("NVIDIA_CTK_DEBUG", "NVIDIA_CDI_DEBUG", "NVIDIA_CTK_QUIET", "NVIDIA_CDI_QUIET")
"""The environment NVIDIA's hooks read (nvidia-cdi-hook's --debug and --quiet); any other
variable is the spec's hand on a root process (PATH picks the programs it starts, LD_* and
GLIBC_TUNABLES what it loads, NVIDIA_CTK_CONFIG_FILE_PATH the configuration it obeys)."""

_SHELL_SYNTAX = re.compile(r"[|;&`<>\n]|\$\(|\$\{")
_PIPE_TO_SHELL = re.compile(r"\|\s*(?:\S*/)?(?:sudo\s+|env\s+)?(?:" + "|".join(_SHELLS) +
                            r"|python[0-9.]*|perl|ruby|node)\b")
# startContainer hooks resolve and run inside the container (runtime-spec config.md,
# "startContainer"): its own shell there is the workload's business, not the host's.
_HOST_HOOKS = ("prestart", "createRuntime", "createContainer", "poststart", "poststop")
_AFTER_START = ("poststart", "poststop")  # the container's own processes have run


@dataclass(frozen=True)
class Problem:
    """One finding for an entry: ``field`` is relative to it (``hostPath``, ``args[2]``)."""

    field: str
    message: str
    hint: str
    severity: Severity = "error"


def normal(path: str) -> str:
    """An absolute ``path`` as the kernel walks it: repeated slashes, ``.`` and ``..`` gone."""
    return posixpath.normpath("/" + path.lstrip("/"))


def _within(path: str, top: str) -> bool:
    return top in ("/", path) or path.startswith(top + "/")


def _strings(v: object) -> list[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def read_only(options: Sequence[str]) -> bool:
    """The last of ro/rw wins, as runc parses mount options."""
    ro = False
    for o in options:
        if o in ("ro", "rro"):
            ro = True
        elif o in ("rw", "rrw"):
            ro = False
    return ro


def is_bind(m: Mapping[str, Any]) -> bool:
    """A bind mount: no type or ``bind``, or a bind option on any type (runc binds then)."""
    opts = _strings(m.get("options"))
    return m.get("type") in (None, "", "bind", "rbind") or "bind" in opts or "rbind" in opts


def escaped(path: str) -> tuple[str, str] | None:
    """The first escape path ``path`` is, lies under, or lies above; and what it hands over."""
    for p, why in ESCAPE_PATHS.items():
        if _within(path, p) or _within(p, path):
            return p, why
    return None


def mount_problems(m: Mapping[str, Any], real: str | None = None) -> list[Problem]:
    """A bind of an escape path or a writable system directory; a file system that is not
    a bind or one of ``SAFE_FS`` (a kernel file system, a disk, an overlay, a share)."""
    hp, cp = m.get("hostPath"), m.get("containerPath")
    opts = _strings(m.get("options"))
    ro = read_only(opts)
    if not is_bind(m):
        return _fs_problems(str(m.get("type")), cp, ro)
    if not isinstance(hp, str) or not hp:
        return []
    if not hp.startswith("/"):
        return [Problem("hostPath", f"'{hp}' is not an absolute host path: runc resolves it "
                        "against the bundle directory, so '..' reaches any host file",
                        "give the absolute host path")]
    out: list[Problem] = []
    for path in dict.fromkeys(p for p in (normal(hp), real and normal(real)) if p):
        via = "" if path == hp else f" ({hp} is {path} on the host)"
        esc = escaped(path)
        if esc is not None:
            top, why = esc
            what = why if top == path else (
                "the host's whole file system (credentials, runtime sockets, /proc)"
                if path == "/" else f"{top}: {why}")
            out.append(Problem("hostPath", f"bind mount of {path}{via} gives the container "
                               f"{what}", "remove the mount; bind only the files the device "
                               "needs (libraries, binaries, its own sockets)"))
        elif not ro and (problem := _writable_problem(path, via)):
            out.append(problem)
    return out


def _writable_problem(path: str, via: str) -> Problem | None:
    if any(path != d and _within(path, d) for d in SHARED_DIRS):
        return None  # a directory of its own in the shared scratch (/var/tmp/x)
    system = None if path in SHARED_DIRS else \
        next((d for d in SYSTEM_DIRS if _within(path, d)), None)
    if system is not None:
        return Problem("options", f"bind mount of {path}{via} is writable: the container can "
                       f"change {system}, which the host runs or trusts",
                       "add 'ro' (aiplat generates ro,nosuid,nodev,bind)")
    shared = next((d for d in SHARED_DIRS if _within(d, path)), None)
    if shared is not None:
        return Problem("options", f"bind mount of {path}{via} is writable: the container "
                       f"plants files in {shared}, where root's programs on the host create "
                       "and open files by name", "add 'ro', or bind a directory of the "
                       "device's own")
    return None


def _fs_problems(fstype: str, cp: object, ro: bool) -> list[Problem]:
    if fstype in KERNEL_FS:
        return [Problem("type", f"a {fstype} mount gives the container "
                        f"{KERNEL_FS[fstype]}", "remove the mount")]
    if fstype in WRITABLE_KERNEL_FS and not ro:
        return [Problem("options", f"a writable {fstype} mount gives the container "
                        f"{WRITABLE_KERNEL_FS[fstype]}", "add 'ro', or remove the mount")]
    if fstype == "proc" and isinstance(cp, str) and normal(cp) != "/proc":
        return [Problem("containerPath", f"a second procfs at {cp} escapes the runtime's "
                        "masked and read-only paths (/proc/sys, /proc/sysrq-trigger, "
                        "/proc/kcore)", "remove the mount; the runtime mounts /proc itself")]
    if fstype not in SAFE_FS:
        return [Problem("type", f"a mount of type '{_short(fstype)}' is not one a device "
                        "needs: a disk's file system (ext4, xfs), an overlay of host "
                        "directories or a network share hands the container the host's "
                        "files", "bind only the files the device needs (ro, type bind), or "
                        f"use one of {', '.join(SAFE_FS)}")]
    return []


@dataclass(frozen=True)
class HostNode:
    """What the host has at a node's host path: its type, its numbers and the driver they
    belong to (``/proc/devices``; for misc devices ``/proc/misc``): ``""`` when no driver
    holds them, None when the host was not asked. Several drivers are joined by ','."""

    type: str
    major: int
    minor: int
    driver: str | None = None


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def node_problems(n: Mapping[str, Any], host: HostNode | None = None) -> list[Problem]:
    """A device node that is not an accelerator's: the host's memory or CPU registers, a
    disk, or any node outside the allow-lists (see the module doc). ``host``: what the host
    has at the node's host path, when it was asked."""
    raw = n.get("hostPath") or n.get("path")
    path = normal(raw) if isinstance(raw, str) and raw.startswith("/") else ""
    typ = n.get("type") or (host.type if host else None)
    if typ == "p":  # a FIFO: the container's own
        return []
    major: int | None = _int(n.get("major"))
    minor: int | None = _int(n.get("minor")) or 0  # a missing minor is 0 to the runtime
    if not major:  # the runtime reads a missing (or zero) major from the host
        major, minor = (host.major, host.minor) if host is not None else (None, None)
    driver = host.driver if host is not None and (host.major, host.minor) == (major, minor) \
        else None
    if typ == "b" or _BLOCK.fullmatch(path):
        return [Problem("path", f"{path or 'the node'} is a block device: the container "
                        "reads and writes the disk below every file system (the host's own, "
                        "if it holds them)", "remove it; an accelerator's nodes are "
                        "character devices")]
    if memory := _memory_problem(path, major, minor):
        return [memory]
    if major is None or minor is None:  # only a path: the runtime takes the host's node
        if _ACCELERATOR_AT.fullmatch(path) or path in HARMLESS_NODES.values():
            return []
        return [Problem("path", f"{path or _short(str(raw))} is not a GPU's, accelerator's "
                        "or RDMA device's node: the runtime hands the container whatever the "
                        "host has there", _NODE_FIX)]
    return _numbered_problems(path, major, minor, driver)


_NODE_FIX = ("grant only the device's own nodes (/dev/nvidia*, /dev/dri/card*|renderD*, "
             "/dev/kfd, /dev/accel/accel*, /dev/infiniband/uverbs*|rdma_cm), by path or with "
             "the type, major and minor its driver registered")


def _memory_problem(path: str, major: int | None, minor: int | None) -> Problem | None:
    mem = MEMORY_NODES.get((major, minor)) if major is not None and minor is not None \
        else None
    regs = major in (_MSR_MAJOR, _CPUID_MAJOR) or re.fullmatch(r"/dev/cpu/\d+/(?:msr|cpuid)",
                                                              path)
    if not (path in MEMORY_NODES.values() or mem or regs):
        return None
    what = f"{path} ({major}:{minor}, {mem})" if mem and path != mem else path or mem
    return Problem("path", f"{what} is the host's memory or CPU registers: the container can "
                   "read and change the running kernel", "remove the device node")


def _accelerator_driver(name: str) -> bool:
    return name.startswith("nvidia") or name in ACCELERATOR_DRIVERS


def _numbered_problems(path: str, major: int, minor: int,
                       driver: str | None) -> list[Problem]:
    """A character node by its numbers (what the runtime creates in the container)."""
    what = f"{path or 'the node'} ({major}:{minor})"
    if (major, minor) in HARMLESS_NODES:
        return []
    if major in ACCELERATOR_MAJORS:
        if major == 231 and minor < _VERBS_FIRST_MINOR:
            return [Problem("path", f"{what} is InfiniBand's umad or issm: the container "
                            "reaches the fabric's subnet management", _NODE_FIX)]
        return []
    if driver is not None:  # the host said whose the numbers are
        if driver == "" or all(_accelerator_driver(d) for d in driver.split(",")):
            return []  # no driver at all opens nothing
        return [Problem("path", f"{what} is {driver}'s node on the host, not a GPU's, "
                        "accelerator's or RDMA device's", _NODE_FIX)]
    if major == _MISC_MAJOR:
        if path == "/dev/infiniband/rdma_cm" and minor not in _MISC_STATIC:
            return []
        return [Problem("path", f"{what} is a misc device (/dev/kvm, /dev/snapshot, "
                        "/dev/uinput, /dev/vfio/vfio and the like), not an accelerator's",
                        _NODE_FIX)]
    if any(major in r for r in DYNAMIC_MAJORS):
        if _ACCELERATOR_AT.fullmatch(path):
            return []
        return [Problem("path", f"{what}: major {major} is handed out when a driver loads "
                        "(an accelerator's, or a disk controller's, the TPM's, IPMI's): only "
                        "the host's /proc/devices says whose it is",
                        "validate on the node, without --no-host", "warning")]
    return [Problem("path", f"{what} is not a GPU's, accelerator's or RDMA device's node",
                    _NODE_FIX)]


def _program(name: str) -> str | None:
    """What kind of program-runner ``name`` (a basename) is, if it is one: also with a
    version (``python3.12``) or a suffix after a dot (``busybox.static``)."""
    for n in dict.fromkeys((name, name.partition(".")[0])):
        m = _VERSIONED.fullmatch(n)
        kind = RUNS_ANYTHING.get(n) or (RUNS_ANYTHING.get(m.group("name")) if m else None)
        if kind:
            return kind
    return None


def hook_problems(h: Mapping[str, Any], real: str | None = None) -> list[Problem]:
    """A hook that is arbitrary code: a shell or the like, a binary that is no known CDI
    hook or one called outside its hook forms, a replaceable binary, an environment that
    steers it."""
    path = h.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        return []
    raw = h.get("args")
    args = [a if isinstance(a, str) else "" for a in raw] if isinstance(raw, list) else []
    out = _runner_problems(path, real, args, h.get("hookName"))
    out += _arg_problems(args, bool(out))
    host = h.get("hookName") in _HOST_HOOKS
    if host and not any(p.field == "path" for p in out):
        out += _known_hook_problems(path, real, args)
    if h.get("hookName") in _AFTER_START:
        out += [Problem(fld, f"chmod's --path '{_short(p)}' is changed by a "
                        f"{h.get('hookName')} hook, which runs after the container's process "
                        "started: by then the container (root in it) can have put a link "
                        "there, and the hook follows it on the host as root",
                        "run chmod as a createContainer hook, as nvidia-ctk writes it")
                for p, fld, chmod in _written(h) if chmod]
    env = h.get("env")
    for j, e in enumerate(env if isinstance(env, list) else []):
        name = e.partition("=")[0] if isinstance(e, str) else ""
        if name in PRELOAD_ENV:
            out.append(Problem(f"env[{j}]", f"{name} loads code into the hook, which runs as "
                               "root on the host", f"remove {name}"))
        elif host and name not in HOOK_ENV:
            out.append(Problem(f"env[{j}]", f"'{_short(name)}' in the hook's environment "
                               "steers a root process on the host (what it runs, loads or "
                               f"obeys); NVIDIA's hooks read only {', '.join(HOOK_ENV)}",
                               f"remove {_short(name)}"))
    return out


def _known_hook_problems(path: str, real: str | None, args: list[str]) -> list[Problem]:
    """The allow-list: a binary of ``KNOWN_HOOKS``, called as NVIDIA calls it."""
    named = posixpath.basename(normal(path))
    binary = posixpath.basename(normal(real)) if real else named
    for name in dict.fromkeys((named, binary)):
        if name not in KNOWN_HOOKS:
            via = "" if name == named else f" ({path} is {normal(real or '')} on the host)"
            return [Problem("path", f"unknown hook binary '{_short(name)}'{via}: a spec's "
                            "hooks run as root on the host, so only known CDI hooks are let "
                            f"through ({', '.join(KNOWN_HOOKS)})",
                            "use the vendor's CDI hook as it writes it (e.g. "
                            "/usr/bin/nvidia-cdi-hook update-ldcache --folder DIR), or "
                            "remove the hook")]
    if binary in ("nvidia-container-runtime-hook", "nvidia-container-toolkit"):
        return [Problem(f"args[{j}]", f"'{_short(a)}' is not an argument of the legacy "
                        f"hook: it takes {', '.join(LEGACY_HOOK_ARGS)} (its -config names the "
                        "configuration that picks the program it runs)",
                        "call it as NVIDIA does: nvidia-container-runtime-hook prestart")
                for j, a in enumerate(args[1:], 1) if a not in LEGACY_HOOK_ARGS]
    first = 1
    if binary == "nvidia-ctk":
        if args[1:2] != ["hook"]:
            said = f"nvidia-ctk {_short(args[1])}" if len(args) > 1 else "nvidia-ctk alone"
            return [Problem("args[1]", f"{said} is not a hook: nvidia-ctk's other commands "
                            "configure the runtimes and the toolkit, as root",
                            "call it as 'nvidia-ctk hook SUBCOMMAND ...'")]
        first = 2
    return _subcommand_problems(args, first)


def _subcommand_problems(args: list[str], first: int) -> list[Problem]:
    out: list[Problem] = []
    sub = None
    for j, a in enumerate(args[first:], first):
        flag, eq, value = a.partition("=")
        if sub is None and not a.startswith("-"):
            sub = a
            if a not in NVIDIA_HOOKS:
                out.append(Problem(f"args[{j}]", f"'{_short(a)}' is no hook this toolkit "
                                   "knows: it skips it with a warning", "generate the spec "
                                   "with the installed toolkit", "warning"))
        elif sub is None and a not in HOOK_GLOBAL_FLAGS:
            out.append(Problem(f"args[{j}]", f"'{_short(a)}' before the hook's name is not "
                               f"one of {', '.join(HOOK_GLOBAL_FLAGS)}",
                               "write the hook's name first, as NVIDIA does"))
        elif flag in NOT_A_HOOK_FLAG:
            out.append(Problem(f"args[{j}]", f"'{_short(a)}' makes the hook read the "
                               "container's state from a file the spec picks (a root of / "
                               "makes it change the host's own files)", f"remove {flag}"))
        elif flag.startswith("-") and flag.lstrip("-") in CONTAINER_PATH_FLAGS:
            named = value if eq else (args[j + 1] if j + 1 < len(args) else "")
            out += [Problem(f"args[{j + (not eq)}]", m, h)
                    for m, h in _container_path_problems(flag.lstrip("-"), named)]
        elif flag in ("--ldconfig-path", "-ldconfig-path"):
            named = value if eq else (args[j + 1] if j + 1 < len(args) else "")
            program = posixpath.basename(named.removeprefix("@"))
            if program not in LDCONFIG:
                out.append(Problem(f"args[{j}]", f"'{_short(a)}' makes update-ldcache run "
                                   f"{_short(named) or 'nothing'} as root on the host in "
                                   "ldconfig's place", "name the host's ldconfig (e.g. "
                                   "--ldconfig-path @/sbin/ldconfig), or drop the flag"))
    return out


_PATH_FIX = ("name the absolute path in the container, without '..', as nvidia-ctk writes "
             "it (e.g. --path /dev/dri, --folder /usr/lib64, --link "
             "libcuda.so.1::/usr/lib64/libcuda.so)")


def _container_path_problems(flag: str, value: str) -> list[tuple[str, str]]:
    """What is wrong with ``value``, the argument of a ``CONTAINER_PATH_FLAGS`` flag: (message,
    fix) pairs. nvidia-cdi-hook splits a list flag at commas (urfave/cli's default)."""
    what = CONTAINER_PATH_FLAGS[flag]
    out = []
    for piece in value.split(","):
        target, sep, link = piece.partition("::") if flag == "link" else ("", "", piece)
        if sep:  # else the hook refuses the link itself
            out += _target_problems(what, target, link)
        if problem := _path_problem(what, link):
            out.append((problem, _PATH_FIX))
    return out


def _path_problem(what: str, path: str) -> str | None:
    said = f"{what} '{_short(path)}'"
    if not path:
        return None  # the hook refuses an empty path itself
    if ".." in path.split("/"):
        return (f"{said} holds '..': joined to the container's root it leaves it, and the "
                "hook (root on the host) changes the host's own files")
    if not path.startswith("/"):
        return (f"{said} is not an absolute path: the hook, root on the host, joins it to "
                "the container's root, and nvidia-ctk writes only absolute ones")
    top = next((t for t in HOST_VIEWS if _within(normal(path), t)), None)
    if top is not None:
        return (f"{said} lies under {top}: while the hook runs, the container's /proc/1/root "
                "is the host's / and /sys the host's kernel settings, so the hook acts on the "
                "host")
    return None


def _target_problems(what: str, target: str, link: str) -> list[tuple[str, str]]:
    """A link's target is resolved where the link is followed: in the container it cannot
    leave the root, but a hook following it on the host can (``link_problems``: a chmod
    --path through the link). nvidia-ctk writes clean absolute targets and relative ones
    that stay inside ('../card1' from /dev/dri/by-path)."""
    said = f"{what} target '{_short(target)}'"
    fix = "point the link at a file inside the container, as nvidia-ctk writes it"
    if target.startswith("/"):
        if ".." in target.split("/"):
            return [(f"{said} holds '..'", fix)]
        return []
    depth = len([c for c in posixpath.dirname(link).split("/") if c not in ("", ".")])
    for c in target.split("/"):
        if c == "..":
            depth -= 1
            if depth < 0:
                return [(f"{said} climbs above the root from {_short(link)}: followed on the "
                         "host it leaves the container", fix)]
        elif c not in ("", "."):
            depth += 1
    return []


@dataclass(frozen=True)
class HookCall:
    """nvidia-cdi-hook's (or ``nvidia-ctk hook``'s) subcommand in a hook's args (``at``: its
    index) and the flags after it: (name without dashes, value, index of the argument that
    holds the value)."""

    sub: str | None
    at: int
    flags: tuple[tuple[str, str, int], ...]


def hook_call(h: Mapping[str, Any]) -> HookCall:
    """Hook ``h``'s call as urfave/cli reads it: flags end at ``--``; the global ones take no
    value. A hook without a subcommand has ``sub`` None."""
    raw = h.get("args")
    args = [a if isinstance(a, str) else "" for a in raw] if isinstance(raw, list) else []
    first = 2 if args[1:2] == ["hook"] else 1
    sub: str | None = None
    at = 0
    flags: list[tuple[str, str, int]] = []
    j = first
    while j < len(args):
        a = args[j]
        j += 1
        if sub is None:
            if not a.startswith("-"):
                sub, at = a, j - 1
        elif a == "--":
            break
        elif a.startswith("-"):
            name, eq, value = a.partition("=")
            if eq or name in HOOK_GLOBAL_FLAGS:
                flags.append((name.lstrip("-"), value, j - 1))
            else:
                flags.append((name.lstrip("-"), args[j] if j < len(args) else "", j))
                j += 1
    return HookCall(sub, at, tuple(flags))


LDSO_CONF_D = "/etc/ld.so.conf.d"
"""Where update-ldcache writes its 00-nvcr-*.conf (given a --folder): before nvidia-cdi-hook
1.17.5 it created it with os.MkdirAll and os.CreateTemp of filepath.Join(root, this),
following links on the host; 1.17.5 resolves it inside the root, 1.17.7 pivots into the
root first."""

_MAX_HOPS = 40  # the kernel's MAXSYMLINKS: one more and the walk fails with ELOOP
MAX_LINK_STEPS = 200_000
"""Path components ``link_problems`` walks at most (NVIDIA's specs need a few hundred): a
spec of thousands of long, chained links is refused as not checked, not followed for
minutes."""


@dataclass(frozen=True)
class _Link:
    """A link a create-symlinks hook makes: its target as written, the hook (its index in
    what ``link_problems`` was given) and the argument."""

    target: str
    hook: int
    field: str


@dataclass(frozen=True)
class _Left:
    """Where a walk on the host left the container's root: through the link at ``at`` to the
    host's ``host`` (None: above the container's root)."""

    at: str
    link: _Link
    host: str | None

    def then(self, rest: list[str]) -> _Left:
        """Where the walk ends when ``rest`` (the components after the link) follows."""
        if not rest or self.host is None:
            return self
        return _Left(self.at, self.link, normal(self.host + "/" + "/".join(rest)))


class _TooManyStepsError(Exception):
    """The walk passed ``MAX_LINK_STEPS``."""


def _parts(path: str) -> list[str]:
    return [c for c in path.split("/") if c not in ("", ".")]


@dataclass
class _Links:
    """The links the spec's hooks make, by where they are in the container's root, and
    paths walked through them one component at a time, as the kernel walks them."""

    at: dict[str, _Link] = _field(default_factory=dict)
    steps: int = 0
    _followed: dict[tuple[str, bool], tuple[str | _Left | None, int]] = \
        _field(default_factory=dict)

    def add(self, target: str, link: str, hook: int, fld: str) -> None:
        """As create-symlinks places it: its directory resolved inside the root (pathrs)."""
        name = posixpath.basename(normal(link))
        parent, _ = self.walk(posixpath.dirname(normal(link)), scoped=True)
        if name and isinstance(parent, str):
            self.at[posixpath.join(parent, name)] = _Link(target, hook, fld)
            self._followed.clear()

    def walk(self, path: str, *, scoped: bool,
             via: tuple[str, _Link] | None = None) -> tuple[str | _Left | None, int]:
        """``path`` walked from the root. ``scoped``: as pathrs does (inside the root: an
        absolute target starts again at the root, '..' stops there); else as the host's
        kernel does for chmod, where an absolute target is the host's and '..' climbs out
        (``via``: the link whose target is walked). What it reaches in the root, where it
        left it, or None for a loop (the kernel's ELOOP); and the links it followed."""
        todo = _parts(path)[::-1]
        cur = [""]  # each component's path from the root: "", "/usr", "/usr/lib"
        hops = 0
        while todo:
            self.steps += 1
            if self.steps > MAX_LINK_STEPS:
                raise _TooManyStepsError
            c = todo.pop()
            if c == "..":
                if len(cur) > 1:
                    cur.pop()
                elif not scoped and via is not None:
                    return _Left(via[0], via[1], None), hops
                continue
            here = f"{cur[-1]}/{c}"
            link = self.at.get(here)
            if link is None:
                cur.append(here)
                continue
            got, used = self._follow(here, link, scoped)
            hops += used
            if got is None or hops > _MAX_HOPS:
                return None, hops
            if isinstance(got, _Left):
                return got.then(todo[::-1]), hops
            cur = [""]
            for part in _parts(got):
                cur.append(f"{cur[-1]}/{part}")
        return cur[-1] or "/", hops

    def _follow(self, here: str, link: _Link, scoped: bool) -> tuple[str | _Left | None, int]:
        """Where the link at ``here`` leads, and the links that took (itself included)."""
        key = (here, scoped)
        if key in self._followed:
            return self._followed[key]
        self._followed[key] = (None, _MAX_HOPS + 1)  # met again while following it: a loop
        if link.target.startswith("/") and not scoped:
            got: tuple[str | _Left | None, int] = (_Left(here, link, normal(link.target)), 0)
        elif link.target.startswith("/"):
            got = self.walk(link.target, scoped=True)
        else:
            got = self.walk(posixpath.dirname(here) + "/" + link.target, scoped=scoped,
                            via=(here, link))
        self._followed[key] = (got[0], got[1] + 1)
        return self._followed[key]


def link_problems(hooks: Sequence[tuple[str, Mapping[str, Any]]]) -> list[
        tuple[int, int, Problem]]:
    """Hooks that act on the host through a link another hook makes. ``hooks``: every hook
    a container may get, each with where it is (for the message): one spec's spec-level and
    devices' edits together (a container may ask for several of its devices), or several
    specs'. Each problem: (the acting hook's index, the linking hook's, the Problem).

    create-symlinks writes a link's target as given, placing the link inside the root; chmod
    (os.Stat, os.Chmod) and update-ldcache before 1.17.5 (``LDSO_CONF_D``) act on
    filepath.Join(root, path) as root on the host, before pivot_root, following every link
    on the way: one with an absolute target (or climbing above the root) hands them a host
    file. The order of the hooks does not save it: across specs it is the request's, and a
    restarted container runs its hooks again over the links the first run made."""
    links = _Links()
    out: list[tuple[int, int, Problem]] = []
    try:
        for i, (_, h) in enumerate(hooks):
            call = hook_call(h)
            for name, value, j in call.flags if call.sub == "create-symlinks" else ():
                for piece in value.split(",") if name == "link" else ():
                    parts = piece.split("::")
                    if len(parts) == 2 and parts[0]:  # else the hook refuses it
                        links.add(parts[0], parts[1], i, f"args[{j}]")
        for i, (_, h) in enumerate(hooks):
            if not links.at or h.get("hookName") not in _HOST_HOOKS:
                continue  # in the container, a link cannot leave its root
            for path, fld, chmod in _written(h):
                left, _ = links.walk(normal(path), scoped=False)
                if isinstance(left, _Left):
                    made = (f"create-symlinks makes ({hooks[left.link.hook][0]}."
                            f"{left.link.field})")
                    out.append((i, left.link.hook, Problem(fld, _through_message(
                        chmod, path, left, made), _LINK_FIX)))
    except _TooManyStepsError:
        first = next((i for i, (_, h) in enumerate(hooks) if _written(h)), 0)
        return [(first, first, Problem("args", f"the hooks' links take more than "
                                       f"{MAX_LINK_STEPS} steps to follow: whether a hook "
                                       "acts on the host through them is not known",
                                       "make fewer, shorter links, as nvidia-ctk does"))]
    return out


_LINK_FIX = ("give the link a relative target inside the container, as nvidia-ctk writes "
             "the links its hooks act on (libcuda.so.1::/usr/lib64/libcuda.so, "
             "../card1::/dev/dri/by-path/...), or drop the hook that acts through it")


def _written(h: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """The container paths hook ``h`` acts on through filepath.Join on the host: (path,
    field, whether it is chmod's)."""
    call = hook_call(h)
    if call.sub == "chmod":
        return [(p, f"args[{j}]", True) for name, value, j in call.flags if name == "path"
                for p in value.split(",") if p]
    if call.sub == "update-ldcache" and any(n == "folder" and v for n, v, _ in call.flags):
        return [(LDSO_CONF_D, f"args[{call.at}]", False)]  # no folder: it writes nothing
    return []


def mount_link_problems(hooks: Sequence[tuple[str, Mapping[str, Any]]],
                        mounts: Sequence[tuple[str, Mapping[str, Any], str | None]],
                        link: Callable[[str], str | None] | None) -> list[
        tuple[int, Problem]]:
    """Host-side hooks whose chmod path lies in a bind of a host folder, through a link the
    host has there. ``hooks`` as for ``link_problems``; ``mounts``: every mount a container
    may get, each with where it is and its host path as the host resolves it (None: as
    written); ``link``: the host's link target at a host path (None: not a link), or None
    without a host view. Each problem: (the hook's index, the Problem).

    chmod acts in the container's mount namespace before pivot_root: in the root, the bind
    is the host folder itself, and a link in it with an absolute target resolves from the
    host's root (one climbing above the mount continues in the image's files), so the mode
    lands on a host file, whatever 'ro' says of the mount. Without a host view a chmod under
    such a bind is a warning, except under /dev (nvidia-ctk chmods /dev/dri and
    /dev/nvidia-caps, and /dev's links are the driver's)."""
    binds = [(normal(cp), normal(real or hp), hp, at) for at, m, real in mounts
             if is_bind(m) and isinstance(cp := m.get("containerPath"), str)
             and cp.startswith("/") and isinstance(hp := m.get("hostPath"), str)
             and hp.startswith("/")]
    out: list[tuple[int, Problem]] = []
    for i, (_, h) in enumerate(hooks):
        if h.get("hookName") not in _HOST_HOOKS:
            continue
        for path, fld, chmod in _written(h):
            where = normal(path)
            # the deepest bind holding the path strictly below its mount point is the one
            # the path goes through (pkg/cdi sorts mounts by depth; a mount point itself is
            # its resolved source, no link). Of two at the same point the last applied wins
            # (ContainerEdits.Apply removes a mount at that path, then adds its own), and
            # which is last depends on the order devices are asked for: every one is walked.
            under = [b for b in binds if where != b[0] and _within(where, b[0])]
            if not chmod or not under or (link is None and _within(where, "/dev")):
                continue
            depth = max(len(_parts(b[0])) for b in under)
            for cp, start, hp, at in [b for b in under if len(_parts(b[0])) == depth][::-1]:
                said = (f"chmod's --path '{_short(path)}' lies in the bind of the host's "
                        f"{_short(hp)} at {_short(cp)} ({at})")
                if link is None:
                    out.append((i, Problem(fld, f"{said}: a link there on the host leads "
                                           "chmod, as root, to any host file; not checked "
                                           "without a host view", "run `cdi validate` on the "
                                           "host, or with --root of its tree", "warning")))
                    break
                left = _host_walk(_parts(where[len(cp):]), start, link)
                if left is not None:
                    out.append((i, Problem(fld, f"{said}: {left}", _MOUNT_LINK_FIX)))
                    break
    return out


_MOUNT_LINK_FIX = ("chmod only what the spec itself creates (nvidia-ctk chmods /dev/dri and "
                   "/dev/nvidia-caps), or bind the file itself rather than the folder that "
                   "holds the link")


def _host_walk(rest: list[str], top: str, link: Callable[[str], str | None]) -> str | None:
    """``rest`` walked on the host from the mount's host folder ``top`` as the kernel walks
    it: how it leaves the mount (a link to an absolute target, or one climbing above
    ``top``), or None when it stays in it (or loops: ELOOP, chmod fails)."""
    todo = rest[::-1]
    cur = top
    hops = 0
    last = ("", "")
    while todo:
        c = todo.pop()
        if c == "..":
            if cur == top:  # only a link's target climbs: the path itself is normalised
                return (f"the host's link {_short(last[0])} points to '{_short(last[1])}', "
                        "which climbs out of the mount into the container's own files: "
                        "whatever the image has there decides what chmod changes, as root "
                        "on the host")
            cur = posixpath.dirname(cur)
            continue
        nxt = posixpath.join(cur, c)
        target = link(nxt)
        if target is None:
            cur = nxt
            continue
        hops += 1
        if hops > _MAX_HOPS:
            return None
        last = (nxt, target)
        if target.startswith("/") and _within(normal(target), top) and top != "/":
            cur = top  # from the host's root back into the same folder: still the mount's
            todo.extend(_parts(normal(target)[len(top):])[::-1])
        elif target.startswith("/"):
            reached = normal("/".join([target, *todo[::-1]]))
            return (f"the host's link {_short(nxt)} points to '{_short(target)}': chmod "
                    "follows it from the host's root, as root, so it changes the host's "
                    f"{_short(reached)} ('ro' does not help: it lies outside the mount)")
        else:
            todo.extend(_parts(target)[::-1])
    return None


def _through_message(chmod: bool, path: str, left: _Left, made: str) -> str:
    link = f"the link {_short(left.at)} that {made} to '{_short(left.link.target)}'"
    reached = "a file above the container's root" if left.host is None else \
        f"the host's {_short(left.host)}"
    if chmod:
        where = normal(path)
        place = "is" if where == left.at else "lies under" if _within(where, left.at) else \
            "leads through"
        return (f"chmod's --path '{_short(path)}' {place} {link}: chmod joins the path to "
                "the container's root on the host and follows the link there, as root, so "
                f"it changes {reached}")
    return (f"update-ldcache before nvidia-cdi-hook 1.17.5 creates its {LDSO_CONF_D}/"
            f"00-nvcr-*.conf through {link}: joined to the container's root on the host, the "
            f"file lands in {reached}")


def _runner_problems(path: str, real: str | None, args: list[str],
                     hook_name: object) -> list[Problem]:
    out = []
    where = normal(path)
    names = {posixpath.basename(where): "path"}
    if real:
        names.setdefault(posixpath.basename(normal(real)), "path")
    if args and args[0]:
        names.setdefault(posixpath.basename(args[0]), "args[0]")
    if hook_name in _HOST_HOOKS:
        for name, fld in names.items():
            kind = _program(name)
            if kind:
                out.append(Problem(fld, f"the hook runs {name}, {kind}: whatever its "
                                   "arguments say runs as root on the host",
                                   "use the vendor's hook binary (e.g. /usr/bin/nvidia-cdi-hook)"
                                   ", never a shell, interpreter or downloader"))
                break
    top = next((t for t in KERNEL_DIRS if _within(where, t)), None)
    if top:  # /proc/1/root/tmp/x is the host's /tmp/x; /proc/self/fd/N whatever is open
        out.append(Problem("path", f"hook {where} lies under {top}: it runs whatever the "
                           "kernel's view resolves to, not a file root installed",
                           "install the hook under /usr/bin and name that path"))
    return out


def replaceable_hook(path: str, writer: str | None = None, *,
                     asked: bool = False) -> Problem | None:
    """A hook binary someone other than root can replace (and so run as root on the host).

    ``asked``: the host was asked, and ``writer`` is its answer (the first part of the path a
    user other than root can write; None: only root can). Without a host, the place decides
    (``WORLD_WRITABLE``)."""
    where = normal(path)
    fix = "install the hook root-owned, in a directory only root can write (/usr/bin)"
    if asked:
        return None if writer is None else Problem(
            "path", f"hook {where}: {writer} can be written by a user other than root, who "
            "can then replace the hook and run as root on the host", fix)
    top = next((t for t in WORLD_WRITABLE if _within(where, t)), None)
    return None if top is None else Problem(
        "path", f"hook {where} lies under {top}: whoever can write there replaces it and "
        "runs as root on the host", fix)


def _arg_problems(args: list[str], runner: bool) -> list[Problem]:
    out = []
    for j, a in enumerate(args[1:], 1):
        if _PIPE_TO_SHELL.search(a):
            out.append(Problem(f"args[{j}]", f"'{_short(a)}' pipes into a shell",
                               "remove it; a hook takes plain arguments"))
            continue
        value = a.partition("=")[2] if a.startswith("-") and "=" in a else a
        value = value.removeprefix("@")  # nvidia-cdi-hook: '@/sbin/ldconfig' is a host path
        absolute = value.startswith("/")
        kind = _program(posixpath.basename(value)) if absolute else None
        top = next((t for t in WORLD_WRITABLE if _within(normal(value), t)), None) \
            if absolute else None
        if kind:
            out.append(Problem(f"args[{j}]", f"'{_short(a)}' names {value}, {kind}, for the "
                               "hook to run as root", "name the program the hook is meant "
                               "to run (e.g. /sbin/ldconfig), or drop the argument"))
        elif top:
            out.append(Problem(f"args[{j}]", f"'{_short(a)}' names {value} under {top}: "
                               "whoever can write there chooses what the hook (root) runs "
                               "or reads", "name a root-owned path (e.g. /sbin/ldconfig)"))
        elif not runner and _SHELL_SYNTAX.search(a):
            out.append(Problem(f"args[{j}]", f"'{_short(a)}' holds shell syntax: harmless "
                               "only if the hook never hands it to a shell",
                               "write plain arguments", "warning"))
    return out


def _short(text: str, limit: int = 60) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."
