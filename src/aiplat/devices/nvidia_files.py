"""The NVIDIA driver's files on a host (or under a driver ``root``), found as nvidia-ctk finds
them, for the GPU spec's common edits.

Each rule follows nvidia-container-toolkit v1.20 (cited per function): the driver version
(``/proc/driver/nvidia/version``), every library of the linker cache whose file ends in
``.so.<driver version>`` plus the ``vdpau`` ones, mounted at that versioned file (not the
soname link, which the image may not have); GSP firmware; the graphics/compute config files
(EGL/Vulkan ICDs, ``nvoptix.bin``); the persistenced and fabric manager sockets and the MPS
pipe directory; and the character-device majors the driver registered in ``/proc/devices``
(``nvidia-uvm`` and ``nvidia-caps`` are dynamic). Reads files only; returns plain data.

The driver root may be a tree someone else made (``cdi generate --root``): its files are read
by ``tree_text`` (``aiplat.inputs.read_in_tree``: never through a link out of the root, never
a FIFO or device, bounded), and a refused one is an ``InputError`` naming it.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping

from aiplat import inputs

_VERSION = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+([0-9]+\.[0-9]+(?:\.[0-9]+)?)")


def _under(root: str, path: str) -> str:
    return path if root in ("", "/") else os.path.join(root, path.lstrip("/"))


def _strip(root: str, path: str) -> str:
    """``path`` (under ``root``) as the host sees it."""
    if root in ("", "/"):
        return path
    rel = os.path.relpath(path, root)
    return "/" + rel if not rel.startswith("..") else path


def tree_text(root: str, path: str) -> str | None:
    """The text of ``path`` under the driver ``root``; None when missing or unreadable."""
    try:
        data = inputs.read_in_tree(root or "/", _under(root, path))
    except OSError:
        return None
    return data.decode(errors="replace")


def driver_version(root: str, ldcache: Mapping[str, str]) -> str | None:
    """The kernel module's version (``NVRM version: ... Kernel Module  550.54.15``), else
    the suffix of the file ``libcuda.so.1`` resolves to."""
    m = _VERSION.search(tree_text(root, "/proc/driver/nvidia/version") or "")
    if m:
        return m.group(1)
    cuda = ldcache.get("libcuda.so.1")
    if cuda:
        real = _strip(root, os.path.realpath(_under(root, cuda)))
        m = re.search(r"\.so\.([0-9]+\.[0-9]+(?:\.[0-9]+)?)$", real)
        if m:
            return m.group(1)
    return None


def driver_libraries(root: str, ldcache: Mapping[str, str], version: str) -> list[str]:
    """Host paths (without ``root``) of the driver's libraries: each linker-cache entry
    resolved to its file, kept when it ends in ``.so.<version>``, plus
    ``<dir>/vdpau/*.so.<version>`` (pkg/nvcdi/driver-nvml.go getVersionLibs: the ldcache
    searched for ``*.so.<version>``, with the vdpau subdirectory)."""
    suffix = f".so.{version}"
    found: set[str] = set()
    for path in ldcache.values():
        real = _strip(root, os.path.realpath(_under(root, path)))
        if real.endswith(suffix) and os.path.isfile(_under(root, real)):
            found.add(real)
    for d in sorted({os.path.dirname(p) for p in found}):
        for p in glob.glob(_under(root, f"{d}/vdpau/*{suffix}")):
            found.add(_strip(root, p))
    return sorted(found)


def sonames(root: str, ldcache: Mapping[str, str]) -> dict[str, str]:
    """soname → the file (host path, without ``root``) its cache entry resolves to."""
    return {so: _strip(root, os.path.realpath(_under(root, path)))
            for so, path in ldcache.items()}


def firmware(root: str, version: str) -> list[str]:
    """GSP and ucode firmware of this driver version (driver-nvml.go
    newDriverFirmwareDiscoverer: nvidia/<version>/gsp*.bin, ucodes*.bin under
    /lib/firmware)."""
    out = []
    for base in ("/lib/firmware/updates", "/lib/firmware"):
        for pat in ("gsp*.bin", "ucodes*.bin"):
            out += glob.glob(_under(root, f"{base}/nvidia/{version}/{pat}"))
    return sorted({_strip(root, p) for p in out})


# internal/discover/graphics.go: the EGL vendor and platform files and nvoptix.bin under
# /usr/share, the Vulkan ICD and layer files under /etc (or /usr/share)
GRAPHICS = (
    "/usr/share/glvnd/egl_vendor.d/10_nvidia.json",
    "/usr/share/egl/egl_external_platform.d/15_nvidia_gbm.json",
    "/usr/share/egl/egl_external_platform.d/10_nvidia_wayland.json",
    "/usr/share/egl/egl_external_platform.d/09_nvidia_wayland2.json",
    "/usr/share/egl/egl_external_platform.d/20_nvidia_xcb.json",
    "/usr/share/egl/egl_external_platform.d/20_nvidia_xlib.json",
    "/usr/share/nvidia/nvoptix.bin",
    "/etc/vulkan/icd.d/nvidia_icd.json", "/usr/share/vulkan/icd.d/nvidia_icd.json",
    "/etc/vulkan/icd.d/nvidia_icd.x86_64.json", "/usr/share/vulkan/icd.d/nvidia_icd.x86_64.json",
    "/etc/vulkan/icd.d/nvidia_layers.json", "/usr/share/vulkan/icd.d/nvidia_layers.json",
    "/etc/vulkan/implicit_layer.d/nvidia_layers.json",
    "/usr/share/vulkan/implicit_layer.d/nvidia_layers.json",
)
# internal/discover/ipc.go: sockets under /run (or /var/run) and the MPS pipe directory
IPC = ("/run/nvidia-persistenced/socket", "/var/run/nvidia-persistenced/socket",
       "/run/nvidia-fabricmanager/socket", "/var/run/nvidia-fabricmanager/socket",
       "/tmp/nvidia-mps")


def existing(root: str, paths: tuple[str, ...]) -> list[str]:
    """The paths present under ``root``; of a /run and /var/run pair only the first."""
    out: list[str] = []
    for p in paths:
        twin = p.replace("/var/run/", "/run/", 1)
        if os.path.lexists(_under(root, p)) and twin not in out:
            out.append(p)
    return out


def proc_devices(root: str) -> dict[str, int]:
    """``/proc/devices``' character devices: driver name → major."""
    out: dict[str, int] = {}
    text = tree_text(root, "/proc/devices") or ""
    block = False
    for line in text.splitlines():
        if line.startswith("Block devices"):
            block = True
        major = _numbered(line)
        if not block and major is not None:
            out.setdefault(major[1], major[0])
    return out


def _numbered(line: str) -> tuple[int, str] | None:
    """A ``/proc/devices`` or ``/proc/misc`` line, ``NUMBER NAME``: the number in ASCII
    digits (``str.isdigit`` says yes to '²', which int() refuses; int() reads '٣' as 3), else
    None: no kernel writes it, and a wrong major would name the wrong driver."""
    parts = line.split()
    n = inputs.ascii_int(parts[0]) if len(parts) == 2 else None
    return None if n is None or n < 0 else (n, parts[1])


def char_drivers(root: str) -> dict[int, str] | None:
    """``/proc/devices``' character devices: major → the drivers holding it (joined by ',');
    None when the file is missing (a tree recorded without it)."""
    text = tree_text(root, "/proc/devices")
    if text is None:
        return None
    out: dict[int, list[str]] = {}
    for line in text.partition("Block devices")[0].splitlines():
        if (entry := _numbered(line)) is not None:
            out.setdefault(entry[0], []).append(entry[1])
    return {major: ",".join(names) for major, names in out.items()}


def misc_devices(root: str) -> dict[int, str] | None:
    """``/proc/misc``: misc minor (major 10) → the device's name (``58 rdma_cm``); None when
    the file is missing."""
    text = tree_text(root, "/proc/misc")
    if text is None:
        return None
    out: dict[int, str] = {}
    for line in text.splitlines():
        if (entry := _numbered(line)) is not None:
            out.setdefault(entry[0], entry[1])
    return out


# the driver name in /proc/devices behind each node family (the uvm and caps majors are
# dynamic: a stale node from an earlier module load can carry an old one)
DYNAMIC_MAJORS = (("/dev/nvidia-uvm", "nvidia-uvm"), ("/dev/nvidia-caps/", "nvidia-caps"))


def registered_major(path: str, majors: Mapping[str, int]) -> int | None:
    for prefix, driver in DYNAMIC_MAJORS:
        if path.startswith(prefix) and driver in majors:
            return majors[driver]
    return None


def family_driver(path: str) -> str | None:
    """The driver whose dynamic major the node at ``path`` carries (None: a fixed one)."""
    return next((driver for prefix, driver in DYNAMIC_MAJORS if path.startswith(prefix)), None)
