"""Readers for drivers and software: kernel modules, the NVIDIA driver, Secure Boot, device
nodes, container runtimes and CDI specs.

Versions of runtimes come from the Debian package database (``/var/lib/dpkg/status``), which
is a plain file and so works on any ``root``; only on the live host (``root == "/"``) is a
tool asked for ``--version``, with a short timeout, when the package database does not know
it. Binaries under a foreign root are never executed: a mounted image is not trusted code,
and its files are read through ``aiplat.node.tree`` (bounded, never out of the root).
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Literal

from aiplat import inputs
from aiplat.node.inventory import DeviceNode, Module, NvidiaDriver, SoftwareInfo
from aiplat.node.tree import TEXT_MAX_BYTES, Tree

SecureBoot = Literal["enabled", "disabled", "legacy-boot", "unknown"]
SECURE_BOOT_VAR = "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
DEVICE_GLOBS = ("nvidia*", "nvidia-caps/*", "dri/*", "kfd", "infiniband/*", "accel/*")
# tool -> (Debian packages that carry it, command that prints its version)
RUNTIMES: dict[str, tuple[tuple[str, ...], list[str]]] = {
    "containerd": (("containerd.io", "containerd"), ["containerd", "--version"]),
    "cri-o": (("cri-o",), ["crio", "--version"]),
    "podman": (("podman",), ["podman", "--version"]),
    "runc": (("runc",), ["runc", "--version"]),
    "nvidia-container-toolkit": (("nvidia-container-toolkit",), ["nvidia-ctk", "--version"]),
    "kubelet": (("kubelet",), ["kubelet", "--version"]),
}
_VERSION = re.compile(r"v?([0-9]+\.[0-9]+(?:\.[0-9]+)?(?:[-+~][0-9A-Za-z.+~-]*)?)")


def read_modules(root: str | Path | Tree) -> list[Module]:
    tree = Tree.of(root)
    text = tree.text(tree.path("/proc/modules"), TEXT_MAX_BYTES) or ""
    names = [line.split()[0] for line in text.splitlines() if line.strip()]
    out = []
    for name in names:
        version = tree.text(tree.path(f"/sys/module/{name}/version"))
        out.append(Module(name=name, version=version))
    return out


def parse_nvidia_version(text: str) -> NvidiaDriver | None:
    """``/proc/driver/nvidia/version``: both the proprietary and the open module forms.

    ``NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.216.03  Tue Sep 24 ...`` and
    ``NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ...``.
    """
    first = next((line for line in text.splitlines() if line.startswith("NVRM")), "")
    m = re.search(r"Kernel Module(?: for \S+)?\s+([0-9]+\.[0-9]+(?:\.[0-9]+)?)", first)
    if not m:
        return None
    flavor = "open" if "Open Kernel Module" in first else "proprietary"
    return NvidiaDriver(version=m.group(1), flavor=flavor, raw=first.strip())


def read_secure_boot(root: str | Path | Tree) -> SecureBoot:
    tree = Tree.of(root)
    efi = tree.path("/sys/firmware/efi")
    if not tree.is_dir(efi):
        return "legacy-boot"
    data = tree.data(efi / "efivars" / SECURE_BOOT_VAR)
    if data is None:
        return "unknown" if not tree.is_dir(efi / "efivars") else "disabled"
    # 4 bytes of attributes, then the value byte.
    if len(data) < 5:
        return "unknown"
    return "enabled" if data[4] == 1 else "disabled"


def _names(tree: Tree, path: str) -> dict[int, str]:
    text = tree.text(tree.path(path), TEXT_MAX_BYTES) or ""
    out: dict[int, str] = {}
    for line in text.splitlines():
        parts = line.split(":")
        uid = inputs.ascii_int(parts[2]) if len(parts) >= 3 else None
        if uid is not None and uid >= 0:
            out.setdefault(uid, parts[0])
    return out


def read_device_nodes(root: str | Path | Tree) -> list[DeviceNode]:
    """The accelerator nodes under /dev, by ``lstat`` (a node is never opened)."""
    tree = Tree.of(root)
    dev = tree.path("/dev")
    if not tree.is_dir(dev):
        return []
    users, groups = _names(tree, "/etc/passwd"), _names(tree, "/etc/group")
    live = tree.live
    out = []
    seen = set()
    for pattern in DEVICE_GLOBS:
        for p in tree.glob(dev, pattern):
            if p in seen or tree.is_dir(p):
                continue
            seen.add(p)
            try:
                st = p.lstat()
            except OSError:
                continue
            kind = ("char" if stat.S_ISCHR(st.st_mode) else "block" if stat.S_ISBLK(st.st_mode)
                    else "file" if stat.S_ISREG(st.st_mode) else "other")
            is_dev = kind in ("char", "block")
            out.append(DeviceNode(
                path="/" + str(p.relative_to(tree.root)).lstrip("/"),
                type=kind,
                mode=f"{stat.S_IMODE(st.st_mode):04o}",
                owner=users.get(st.st_uid) or (_live_user(st.st_uid) if live else str(st.st_uid)),
                group=groups.get(st.st_gid) or (_live_group(st.st_gid) if live else str(st.st_gid)),
                major=os.major(st.st_rdev) if is_dev else None,
                minor=os.minor(st.st_rdev) if is_dev else None,
            ))
    return out


def _live_user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _live_group(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def read_dpkg(root: str | Path | Tree, wanted: set[str]) -> dict[str, str]:
    """Installed versions of ``wanted`` packages from the dpkg status database."""
    tree = Tree.of(root)
    text = tree.text(tree.path("/var/lib/dpkg/status"), TEXT_MAX_BYTES) or ""
    out = {}
    for block in text.split("\n\n"):
        fields = dict(
            (k, v.strip()) for k, _, v in (line.partition(":") for line in block.splitlines()
                                            if line and not line.startswith(" "))
        )
        name = fields.get("Package")
        if name in wanted and "installed" in fields.get("Status", "").split():
            out[name] = fields.get("Version", "")
    return out


def version_from_output(text: str) -> str | None:
    """First version-like token in a ``--version`` output (``runc version 1.1.12`` -> 1.1.12)."""
    m = _VERSION.search(text)
    return m.group(1) if m else None


def read_runtimes(root: str | Path | Tree) -> dict[str, str | None]:
    tree = Tree.of(root)
    wanted = {p for pkgs, _ in RUNTIMES.values() for p in pkgs}
    packages = read_dpkg(tree, wanted)
    live = tree.live
    out: dict[str, str | None] = {}
    for tool, (pkgs, cmd) in RUNTIMES.items():
        version = next((packages[p] for p in pkgs if p in packages), None)
        binary = _find_binary(tree, cmd[0])
        if version is None and binary and live:
            version = _ask_version(cmd)
        if version is not None or binary:
            out[tool] = version
    return out


def _find_binary(tree: Tree, name: str) -> Path | None:
    for d in ("/usr/bin", "/usr/local/bin", "/usr/sbin", "/bin", "/sbin"):
        p = tree.path(f"{d}/{name}")
        if tree.is_file(p) and os.access(p, os.X_OK):
            return p
    return None


def _ask_version(cmd: list[str]) -> str | None:
    exe = shutil.which(cmd[0])
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=5,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return version_from_output(proc.stdout + proc.stderr)


def read_cdi_specs(root: str | Path | Tree) -> list[str]:
    tree = Tree.of(root)
    out = []
    for d in ("/etc/cdi", "/var/run/cdi"):
        out += [f"{d}/{p.name}" for p in tree.entries(tree.path(d))
                if p.suffix in (".json", ".yaml")]
    return out


def read_software(root: str | Path | Tree) -> SoftwareInfo:
    tree = Tree.of(root)
    version_text = tree.text(tree.path("/proc/driver/nvidia/version"))
    return SoftwareInfo(
        modules=read_modules(tree),
        nvidia_driver=parse_nvidia_version(version_text) if version_text else None,
        secure_boot=read_secure_boot(tree),
        device_nodes=read_device_nodes(tree),
        runtimes=read_runtimes(tree),
        cdi_specs=read_cdi_specs(tree),
    )
