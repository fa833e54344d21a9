"""What in a CDI spec hands the host to a container, or to whoever wrote the spec.

Pure: each function takes one spec entry (a mount, a hook, a device node) as decoded, and
optionally the host's real path for it, and returns ``Problem``s; ``aiplat.devices.cdi``
reports them in its ``host-check`` class. The reference loader accepts every one of these
specs; the runtime would then, as root:

- bind ``/``, credentials or a container runtime's socket into the container
  (``ESCAPE_PATHS``, and any directory above one of them), or a system directory writable
  (``SYSTEM_DIRS``: the container changes what the host runs);
- mount a kernel file system (``KERNEL_FS``), or a second procfs the runtime does not mask;
- give the container the host's memory (``/dev/mem``, ``/dev/kmem``, ``/dev/port``, MSRs);
- run a hook that is a shell, an interpreter, a launcher or a network client (its arguments
  are then the program), that pipes into a shell, that sits where anyone can replace it,
  or whose environment preloads code.

Paths are compared after the kernel's own normalisation (``//etc/./ssh/../shadow`` is
``/etc/shadow``); symlinks are the host's business, resolved by the caller when it has one.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
}
# /var/run is a link to /run on current distributions; a spec may name either.
ESCAPE_PATHS |= {"/var" + p: why for p, why in ESCAPE_PATHS.items() if p.startswith("/run/")}

SYSTEM_DIRS = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
               "/var/lib", "/sys", "/boot")
"""Directories whose files the host runs or trusts: a writable bind lets the container
change them (a library the host loads, a unit, a kernel setting)."""

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
# ...and those that are safe only read-only.
WRITABLE_KERNEL_FS: dict[str, str] = {
    "sysfs": "the kernel's and drivers' settings",
    "cgroup": "the cgroup tree (release_agent runs as root on the host)",
    "cgroup2": "the cgroup tree of the host",
}

MEMORY_NODES: dict[tuple[int, int], str] = {(1, 1): "/dev/mem", (1, 2): "/dev/kmem",
                                            (1, 4): "/dev/port"}
_MSR_MAJOR = 202  # /dev/cpu/N/msr: model-specific registers
_BLOCK = re.compile(r"/dev/(?:[shv]d[a-z]+|xvd[a-z]+|nvme\d+n\d+|mmcblk\d+|dm-\d+|md\d+|"
                    r"loop\d+|nbd\d+|rbd\d+|zd\d+|mapper/[^/]+)(?:p?\d+)?")

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

_SHELL_SYNTAX = re.compile(r"[|;&`<>\n]|\$\(|\$\{")
_PIPE_TO_SHELL = re.compile(r"\|\s*(?:\S*/)?(?:sudo\s+|env\s+)?(?:" + "|".join(_SHELLS) +
                            r"|python[0-9.]*|perl|ruby|node)\b")
# startContainer hooks resolve and run inside the container (runtime-spec config.md,
# "startContainer"): its own shell there is the workload's business, not the host's.
_HOST_HOOKS = ("prestart", "createRuntime", "createContainer", "poststart", "poststop")


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
    """A bind of an escape path or a writable system directory; a kernel file system."""
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
        elif not ro and (system := next((d for d in SYSTEM_DIRS if _within(path, d)), None)):
            out.append(Problem("options", f"bind mount of {path}{via} is writable: the "
                               f"container can change {system}, which the host runs or "
                               "trusts", "add 'ro' (aiplat generates ro,nosuid,nodev,bind)"))
    return out


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
    return []


def node_problems(n: Mapping[str, Any]) -> list[Problem]:
    """The host's memory or a disk handed over as a device node."""
    raw = n.get("hostPath") or n.get("path")
    path = normal(raw) if isinstance(raw, str) and raw.startswith("/") else ""
    major, minor = n.get("major"), n.get("minor")
    char = n.get("type") == "c" and isinstance(major, int) and isinstance(minor, int)
    mem = MEMORY_NODES.get((int(major or 0), int(minor or 0))) if char else None
    if path in MEMORY_NODES.values() or mem or (char and major == _MSR_MAJOR) or \
            re.fullmatch(r"/dev/cpu/\d+/msr", path):
        what = f"{path} ({major}:{minor}, {mem})" if mem and path != mem else path or mem
        return [Problem("path", f"{what} is the host's memory or CPU registers: the "
                        "container can read and change the running kernel",
                        "remove the device node")]
    if n.get("type") == "b" or _BLOCK.fullmatch(path):
        return [Problem("path", f"{path or 'the node'} is a block device: the container "
                        "reads and writes the disk below every file system (the host's own, "
                        "if it holds them)", "remove it unless the disk is the container's "
                        "alone", "warning")]
    return []


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
    """A hook that is arbitrary code: a shell or the like, a replaceable binary, a preload."""
    path = h.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        return []
    raw = h.get("args")
    args = [a if isinstance(a, str) else "" for a in raw] if isinstance(raw, list) else []
    out = _runner_problems(path, real, args, h.get("hookName"))
    out += _arg_problems(args, bool(out))
    env = h.get("env")
    for j, e in enumerate(env if isinstance(env, list) else []):
        name = e.partition("=")[0] if isinstance(e, str) else ""
        if name in PRELOAD_ENV:
            out.append(Problem(f"env[{j}]", f"{name} loads code into the hook, which runs as "
                               "root on the host", f"remove {name}"))
    return out


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
