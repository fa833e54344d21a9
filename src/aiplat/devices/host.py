"""Host edges for CDI: stat of device nodes, the linker cache, GPU identities, spec files.

Everything here reads the machine (under a ``root`` so tests use temporary trees) and hands
plain facts to the pure ``aiplat.devices.cdi``. GPU identities come through one small
interface, ``GpuIdentity``, fed by either source:

- ``nvidia-smi -q -x`` (``parse_nvidia_smi_xml``) plus ``/proc/driver/nvidia-caps/mig-minors``
  for the MIG capability nodes;
- the node inventory's JSON (``--inventory FILE``, ``gpus_from_inventory``): a document with a
  ``gpus`` list whose entries carry ``index``, ``uuid``, ``minor``, ``vendor`` and optionally
  ``renderNode`` (AMD) and ``mig`` (``index``, ``uuid``, ``gi``, ``ci``, ``profile``). The
  node inventory (``aiplat.node``) maps its own model onto this shape; nothing here re-reads
  sysfs or PCI.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
import re
import shutil
import stat
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiplat import findings
from aiplat.devices import cdi, cdiyaml
from aiplat.devices import nvidia_files as nvf
from aiplat.devices.cdi import DeviceEntry, Edits, Hook, Mount, NodeFact
from aiplat.errors import InputError
from aiplat.text import shown, shown_lines


class DeviceError(InputError):
    """A device, spec file or option that cannot be used (exit 2). Its message quotes paths
    and names from the command line, a tree or a spec: each line is shown terminal-safe
    (``aiplat.text.shown``), and a value that could hold a newline is escaped where it is
    quoted, so no line can be forged either."""

    def __init__(self, message: str) -> None:
        super().__init__(shown_lines(message))


# ---------------------------------------------------------------------------- device nodes


def _under(root: str, path: str) -> str:
    return path if root in ("", "/") else os.path.join(root, path.lstrip("/"))


def stat_node(path: str, root: str = "/", host_path: str | None = None) -> NodeFact | None:
    """The device node at ``host_path`` (default ``path``) under ``root``; None if missing
    or not a character/block device. The fact's ``host_path`` includes ``root``: like
    nvidia-ctk's driver root, ``--root`` is where the host's files are visible (a
    containerised driver under /run/nvidia/driver, or a test tree), so the spec points there."""
    hp = _under(root, host_path or path)
    try:
        st = os.stat(hp)
    except OSError:
        return None
    return _node_fact(path, hp, st)


def _node_fact(path: str, host_path: str, st: os.stat_result) -> NodeFact | None:
    if stat.S_ISCHR(st.st_mode):
        typ = "c"
    elif stat.S_ISBLK(st.st_mode):
        typ = "b"
    else:
        return None
    return NodeFact(path, host_path, typ, os.major(st.st_rdev), os.minor(st.st_rdev),
                    stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


MISC_MAJOR = 10  # misc devices: the minor names the device (/proc/misc)


@dataclass(frozen=True)
class RealHost:
    """``cdi.Host`` on this machine (or a tree under ``root``)."""

    root: str = "/"

    def node(self, path: str) -> NodeFact | None:
        """The node at ``path``, with the driver ``/proc/devices`` (or ``/proc/misc``) of
        the root names for its numbers."""
        n = stat_node(path, self.root)
        return None if n is None else dataclasses.replace(n, driver=self._driver(n))

    def _driver(self, n: NodeFact) -> str | None:
        if n.type != "c":
            return None
        if n.major == MISC_MAJOR and self._misc is not None:
            return self._misc.get(n.minor, "misc")
        return None if self._drivers is None else self._drivers.get(n.major, "")

    @functools.cached_property
    def _drivers(self) -> dict[int, str] | None:
        return nvf.char_drivers(self.root)

    @functools.cached_property
    def _misc(self) -> dict[int, str] | None:
        return nvf.misc_devices(self.root)

    def exists(self, path: str) -> bool:
        return os.path.lexists(_under(self.root, path))

    def executable(self, path: str) -> bool:
        p = _under(self.root, path)
        return os.path.isfile(p) and os.access(p, os.X_OK)

    def real(self, path: str) -> str:
        """``path`` with its symlinks resolved, as the host under ``root`` sees it (a link
        that leaves ``root`` keeps its target: that is what a runtime there would open)."""
        real = os.path.realpath(_under(self.root, path))
        if self.root in ("", "/"):
            return real
        top = os.path.realpath(self.root)
        return "/" + os.path.relpath(real, top) if real.startswith(top + os.sep) else real

    def link(self, path: str) -> str | None:
        """The target of the link at ``path`` under ``root``, as written (an absolute one is
        the host's path, not the tree's); None when it is not a link or cannot be read."""
        try:
            return os.readlink(_under(self.root, path))
        except (OSError, ValueError):
            return None

    def replaceable(self, path: str) -> str | None:
        """The first part of ``path`` (resolved; itself, else the nearest directory above)
        a user other than root could write: not owned by root, writable by others, or by a
        group other than root's. A sticky directory (/tmp) protects the entries in it that
        exist, not a name still free."""
        p = os.path.realpath(_under(self.root, path))
        missing = False
        while True:
            try:
                st = os.stat(p)
            except OSError:
                missing = True
            else:
                open_to = st.st_mode & 0o002 or (st.st_mode & 0o020 and st.st_gid != 0)
                sticky = stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX
                if st.st_uid != 0 or (open_to and (missing or not sticky)):
                    return p
                missing = False
            parent = os.path.dirname(p)
            if parent == p:
                return None
            p = parent


def tree_node(path: str, root: str, host_path: str | None = None) -> NodeFact | None:
    """``stat_node`` for a spec generated from a tree, looked up through the tree's walk
    (``inputs.stat_in_tree``: no link out, whatever the tree does meanwhile): a node whose
    links leave ``root`` is an input error (a tree pointing /dev/nvidia0 at the host's disk
    must not become a grant), and so is a block device (every accelerator's node is a
    character device)."""
    hp = _under(root, host_path or path)
    if root in ("", "/"):
        n = stat_node(path, root, host_path)
    else:
        from aiplat import inputs

        try:
            n = _node_fact(path, hp, inputs.stat_in_tree(root, hp))
        except OSError:  # missing (a link out of the tree is an InputError)
            n = None
    if n is not None and n.type != "c":
        raise DeviceError(f"{shown(hp)} is a block device, not an accelerator's character "
                          "device (fix: name the device's own node)")
    return n


def need_node(path: str, root: str, host_path: str | None = None) -> NodeFact:
    n = tree_node(path, root, host_path)
    if n is None:
        hp = _under(root, host_path or path)
        what = "is not a device node" if os.path.lexists(hp) else "does not exist"
        raise DeviceError(f"{shown(hp)} {what} (fix: check the path, load the driver, or "
                          "drop it)")
    return n


# ---------------------------------------------------------------------------- linker cache

NVIDIA_LIBS = ("libcuda.so", "libcudadebugger.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so",
               "libnvidia-nvvm.so", "libnvidia-opencl.so", "libnvidia-cfg.so",
               "libnvidia-gpucomp.so", "libnvidia-allocator.so")
NVIDIA_BINS = ("nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
               "nvidia-cuda-mps-server", "nvidia-imex", "nvidia-imex-ctl")

_LDCACHE_LINE = re.compile(r"^\s+(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$")


def parse_ldconfig(text: str, arch: str = "x86-64") -> dict[str, str]:
    """``ldconfig -p`` output → soname → path, for libraries of ``arch`` (first wins)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _LDCACHE_LINE.match(line)
        if m and (arch in m.group(2) or "," not in m.group(2)):
            out.setdefault(m.group(1), m.group(3))
    return out


def linker_cache(root: str = "/") -> dict[str, str]:
    """The linker cache under ``root`` as ``ldconfig -p`` reads it: soname → path. ldconfig
    gets the descriptor aiplat opened (``/dev/fd/N``), not the path: the file it reads is the
    regular file inside the root that was checked, whatever the tree does meanwhile."""
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    cache = _under(root, "/etc/ld.so.cache")
    from aiplat import inputs

    try:  # a FIFO would hang ldconfig, a link out of the root is the host's cache
        fd = inputs.open_in_tree(root, cache, "the linker cache")
    except OSError:  # missing or unreadable: no cache (a refusal is an InputError)
        return {}
    try:
        res = subprocess.run([ldconfig, "-p", "-C", f"/dev/fd/{fd}"], capture_output=True,
                             text=True, check=False, timeout=30, pass_fds=(fd,))
    except (OSError, subprocess.TimeoutExpired):
        return {}
    finally:
        os.close(fd)
    return parse_ldconfig(res.stdout)


def library_mounts(cache: Mapping[str, str], prefixes: Iterable[str],
                   root: str = "/") -> list[Mount]:
    pre = tuple(prefixes)
    paths = sorted({p for so, p in cache.items() if so.startswith(pre)})
    return [Mount(_under(root, p), p) for p in paths]


# ---------------------------------------------------------------------------- GPU identities


@dataclass(frozen=True)
class MigIdentity:
    index: int  # MIG device index on its parent (nvidia-ctk's "<gpu>:<index>")
    gi: int
    ci: int
    uuid: str = ""
    profile: str = ""


@dataclass(frozen=True)
class GpuIdentity:
    index: int
    uuid: str
    minor: int
    vendor: str = "nvidia"
    render_node: str = ""  # AMD: renderD128
    mig: tuple[MigIdentity, ...] = field(default=())
    pci: str = ""  # bus id, e.g. 0000:17:00.0: finds the GPU's /dev/dri nodes


def pci_bus_id(text: str) -> str:
    """``00000000:17:00.0`` (nvidia-smi) or ``0000:17:00.0`` → ``0000:17:00.0``."""
    m = re.fullmatch(r"([0-9a-fA-F]{4,8}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])",
                     text.strip())
    if not m:
        return ""
    return f"{int(m.group(1), 16):04x}:{m.group(2).lower()}:{m.group(3).lower()}.{m.group(4)}"


def dri_nodes(pci: str, root: str) -> tuple[NodeFact, ...]:
    """The GPU's DRM card and render nodes, by ``/dev/dri/by-path/pci-<bus>-card|render``
    (nvidia-ctk's per-GPU graphics nodes, internal/discover/graphics.go)."""
    out = []
    for what in ("card", "render"):
        link = _under(root, f"/dev/dri/by-path/pci-{pci}-{what}")
        if not pci or not os.path.lexists(link):
            continue
        real = os.path.realpath(link)
        path = "/" + os.path.relpath(real, root) if root not in ("", "/") else real
        n = stat_node(path, root)
        if n is not None and path.startswith("/dev/dri/"):
            out.append(n)
    return tuple(out)


def parse_nvidia_smi_xml(text: str) -> list[GpuIdentity]:
    """``nvidia-smi -q -x``: GPUs in index order with minor number, UUID and MIG devices."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise DeviceError(f"nvidia-smi XML does not parse: {e}") from e
    gpus = []
    for i, g in enumerate(root.findall("gpu")):
        migs = []
        for m in g.findall("./mig_devices/mig_device"):
            migs.append(MigIdentity(
                index=int(m.findtext("index", "0")),
                gi=int(m.findtext("gpu_instance_id", "0")),
                ci=int(m.findtext("compute_instance_id", "0")),
                uuid=(m.findtext("uuid") or "").strip(),
                profile=(m.findtext("profile_name") or "").strip()))
        gpus.append(GpuIdentity(index=i, uuid=(g.findtext("uuid") or "").strip(),
                                minor=int(g.findtext("minor_number", str(i))),
                                mig=tuple(migs), pci=pci_bus_id(g.get("id", ""))))
    return gpus


def gpus_from_nvidia_smi() -> list[GpuIdentity]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    res = subprocess.run([exe, "-q", "-x"], capture_output=True, text=True, check=False,
                         timeout=60)
    if res.returncode != 0:
        raise DeviceError(f"nvidia-smi -q -x failed: {res.stderr.strip()[:300]}")
    return parse_nvidia_smi_xml(res.stdout)


def gpus_from_inventory(doc: object, file: str = "inventory") -> list[GpuIdentity]:
    if not isinstance(doc, Mapping) or not isinstance(doc.get("gpus"), list):
        raise DeviceError(f"{file}: expected an object with a 'gpus' list, e.g. "
                          '{"gpus": [{"index": 0, "uuid": "GPU-...", "minor": 0, "mig": []}]} '
                          "(fix: write the GPUs' index, UUID and device minor that way, or "
                          "leave --inventory out to read them from nvidia-smi -q -x; a node "
                          "inventory has no device minors)")
    out = []
    for i, g in enumerate(doc["gpus"]):
        try:
            migs = tuple(MigIdentity(index=int(m["index"]), gi=int(m["gi"]), ci=int(m["ci"]),
                                     uuid=str(m.get("uuid", "")),
                                     profile=str(m.get("profile", "")))
                         for m in g.get("mig", []))
            out.append(GpuIdentity(index=int(g.get("index", i)), uuid=str(g.get("uuid", "")),
                                   minor=int(g.get("minor", i)),
                                   vendor=str(g.get("vendor", "nvidia")).lower(),
                                   render_node=str(g.get("renderNode", "")), mig=migs,
                                   pci=pci_bus_id(str(g.get("pci", "")))))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise DeviceError(f"{file}: gpus[{i}]: {e!r} — each GPU needs index, uuid, minor; "
                              "each MIG device index, gi, ci") from e
    return out


def parse_mig_minors(text: str) -> dict[tuple[int, int, int | None], int]:
    """``/proc/driver/nvidia-caps/mig-minors``: (gpu, gi, ci|None) → capability minor."""
    out: dict[tuple[int, int, int | None], int] = {}
    for line in text.splitlines():
        m = re.match(r"^gpu([0-9]+)/gi([0-9]+)(?:/ci([0-9]+))?/access\s+([0-9]+)$",
                     line.strip())
        if m:
            ci = int(m.group(3)) if m.group(3) is not None else None
            out[(int(m.group(1)), int(m.group(2)), ci)] = int(m.group(4))
    return out


# ---------------------------------------------------------------------------- generation


@dataclass(frozen=True)
class CharDevice:
    """A generic device: ``kind``/``name`` with nodes ``path`` (container) ← ``host_path``."""

    kind: str
    name: str
    paths: tuple[tuple[str, str], ...]


def parse_char_option(text: str) -> CharDevice:
    """``vendor.com/class=name:/dev/x[=/host/x][,/dev/y...]`` from ``--char``."""
    kind, sep, rest = text.partition("=")
    name, sep2, paths = rest.partition(":")
    if not sep or not sep2 or not name or not paths:
        raise DeviceError(f"--char '{shown(text)}': expected vendor.com/class=name:/dev/path"
                          "[=/host/path][,...]")
    problems = cdi.kind_problems(kind)
    if problems:
        raise DeviceError(f"--char '{shown(text)}': {shown('; '.join(problems))}")
    if not cdi.device_name_ok(name):
        raise DeviceError(f"--char '{shown(text)}': device name '{shown(name)}' must start "
                          "and end with a letter or digit")
    pairs = []
    for p in paths.split(","):
        c, _, h = p.partition("=")
        pairs.append((c, h or c))
    return CharDevice(kind, name, tuple(pairs))


def parse_mount_option(text: str) -> Mount:
    """``/host/path[:/container/path]`` from ``--mount`` (always ro,nosuid,nodev,bind)."""
    host, _, container = text.partition(":")
    if not host.startswith("/") or (container and not container.startswith("/")):
        raise DeviceError(f"--mount '{shown(text)}': expected /host/path[:/container/path]")
    return Mount(host, container or host)


def generate(root: str = "/", *, gpus: list[GpuIdentity] | None = None,
             chars: Iterable[CharDevice] = (), env: Iterable[str] = (),
             mounts: Iterable[Mount] = (),
             mig_minors: Mapping[tuple[int, int, int | None], int] | None = None,
             ldcache: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Specs (file name → document) for everything found: NVIDIA GPUs and MIG devices, AMD
    GPUs, RDMA verbs devices and the generic devices given. ``env`` and ``mounts`` (read-only
    binds) go to the common edits of the generic devices' specs.

    A ``root`` may be a tree someone else made: before a spec is returned (and so before
    anything is written), each host path in it must stay inside the root, and the spec must
    pass ``cdi validate``'s escape checks as the host it describes sees it; a
    ``DeviceError`` names the spec, the field and the fix otherwise."""
    # host paths in a spec must be absolute: a relative --root would break every container
    root = os.path.abspath(root) if root not in ("", "/") else "/"
    specs: dict[str, dict[str, Any]] = {}
    common_env = tuple(env)
    extra_mounts = tuple(Mount(_under(root, m.host_path), m.container_path, m.options)
                         for m in mounts)
    for m in extra_mounts:
        if not os.path.exists(m.host_path):
            raise DeviceError(f"--mount {shown(m.host_path)}: no such file or directory (fix: "
                              "give a path that exists on the host, --mount HOST[:CONTAINER])")

    def add(kind: str, devices: list[DeviceEntry], common: Edits) -> None:
        try:
            doc = cdi.build_spec(kind, devices, common)
        except ValueError as e:
            raise DeviceError(f"{e} (fix: check --char names and paths)") from e
        specs[cdi.spec_filename(kind)] = doc

    gpus = gpus if gpus is not None else []
    nv = [g for g in gpus if g.vendor == "nvidia"]
    if nv:
        if mig_minors is None:
            mig_minors = parse_mig_minors(
                nvf.tree_text(root, "/proc/driver/nvidia-caps/mig-minors") or "")
        if ldcache is None:
            ldcache = linker_cache(root)
        add("nvidia.com/gpu", _nvidia_devices(nv, root, mig_minors), _nvidia_common(root, ldcache,
                                                                                    common_env))
    channels = imex_channels(root)
    if channels:  # pkg/nvcdi/lib-imex.go: one device per channel, no "all"
        specs[cdi.spec_filename("nvidia.com/imex-channel")] = cdi.build_spec(
            "nvidia.com/imex-channel", [DeviceEntry(str(i), Edits((n,))) for i, n in channels],
            Edits(env=("NVIDIA_VISIBLE_DEVICES=void",)), all_device=False)
    amd = [g for g in gpus if g.vendor == "amd"]
    if amd:
        devs = []
        for g in amd:
            render = g.render_node or f"renderD{128 + g.index}"
            devs.append(DeviceEntry(str(g.index), Edits((need_node(f"/dev/dri/{render}", root),))))
        add("amd.com/gpu", devs, Edits((need_node("/dev/kfd", root),), common_env))
    verbs = [p for _, p in _numbered(Path(_under(root, "/dev/infiniband")), "uverbs")]
    if verbs:
        devs = [DeviceEntry(p.name, Edits((need_node(f"/dev/infiniband/{p.name}", root),)))
                for p in verbs]
        cm = tree_node("/dev/infiniband/rdma_cm", root)
        add("rdma.aiplat.io/hca", devs, Edits((cm,) if cm else (), common_env))
    by_kind: dict[str, list[DeviceEntry]] = {}
    for ch in chars:
        nodes = tuple(need_node(c, root, h) for c, h in ch.paths)
        by_kind.setdefault(ch.kind, []).append(DeviceEntry(ch.name, Edits(nodes)))
    for kind, devs in by_kind.items():
        add(kind, devs, Edits((), common_env, extra_mounts))
    for name, doc in specs.items():  # before anything is written, or handed to a runtime
        _refuse_outside_tree(root, name, doc)
        _refuse_escapes(root, name, doc)
    return specs


def _edits_of(doc: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = [("containerEdits", doc["containerEdits"])] if "containerEdits" in doc else []
    return out + [(f"devices[{i}].containerEdits", d["containerEdits"])
                  for i, d in enumerate(doc["devices"])]


def _host_paths(doc: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any], str]]:
    """Every host path of a generated spec: (field, path, the entry, its key)."""
    out = []
    for at, e in _edits_of(doc):
        for what, key in (("mounts", "hostPath"), ("deviceNodes", "hostPath"),
                          ("hooks", "path")):
            for j, entry in enumerate(e.get(what, [])):
                k = key if key in entry else "path"
                out.append((f"{at}.{what}[{j}].{k}", entry[k], entry, k))
    return out


def _refuse_outside_tree(root: str, name: str, doc: Mapping[str, Any]) -> None:
    """Each host path under ``root``, with no '..' and no link out of it: what a runtime
    binds or runs later, by name, must be the tree's file, not the host's it points at."""
    if root in ("", "/"):
        return
    from aiplat import inputs

    for where, path, _, _ in _host_paths(doc):
        if ".." in path.split("/") or not path.startswith(root.rstrip("/") + "/"):
            raise DeviceError(f"{name}: {where}: {shown(path)} holds '..' or leaves the root "
                              f"{shown(root)} (the runtime would reach the host's file) (fix: "
                              "correct the tree's entry (a linker cache naming it?), or remove "
                              "it)")
        try:
            inputs.inside(root, path)
        except InputError as e:
            raise DeviceError(f"{name}: {where}: {shown(str(e))}") from None


@dataclass(frozen=True)
class _SpecHost(RealHost):
    """The host a generated spec describes, read as ``RealHost`` reads it. In a tree, who
    owns a file is its recorder's business, and a major its /proc/devices leaves out is not
    taken as free (a recording that omits a driver would make its nodes look harmless)."""

    def replaceable(self, path: str) -> str | None:
        return super().replaceable(path) if self.root in ("", "/") else None

    def node(self, path: str) -> NodeFact | None:
        n = super().node(path)
        tree = self.root not in ("", "/")
        return dataclasses.replace(n, driver=None) if n and tree and n.driver == "" else n


def _refuse_escapes(root: str, name: str, doc: Mapping[str, Any]) -> None:
    """The escape checks of ``cdi validate`` (aiplat.devices.escape) on the spec as the host
    it describes sees it (``root`` stripped): an error there is an input error here."""
    view = copy.deepcopy(dict(doc))
    if root not in ("", "/"):
        for _, path, entry, key in _host_paths(view):
            entry[key] = "/" + os.path.relpath(path, root)
    found = [f for f in cdi.validate_spec(view, name, _SpecHost(root))
             if f.escape and f.severity == "error"]
    if found:
        raise DeviceError(f"refusing to write {name}: it would hand the host to its "
                          "containers:\n" + "\n".join(f"  {findings.line(f)}" for f in found)
                          + "\n(fix: "
                          "remove what each line names from the root (or the options), then "
                          "generate again)")


def imex_channels(root: str) -> list[tuple[int, NodeFact]]:
    """The IMEX channel nodes (``/dev/nvidia-caps-imex-channels/channelN``), by N."""
    out = []
    for i, p in _numbered(Path(_under(root, "/dev/nvidia-caps-imex-channels")), "channel"):
        n = tree_node(f"/dev/nvidia-caps-imex-channels/{p.name}", root)
        if n is not None:
            out.append((i, n))
    return out


def _numbered(directory: Path, prefix: str) -> list[tuple[int, Path]]:
    """The entries of ``directory`` named ``prefix`` and a number in ASCII digits, by number:
    the names a driver gives its nodes (``uverbs0``, ``channel12``). Any other (``uverbs1²``:
    str.isdigit says yes, int() refuses) is no node of the driver's and is not granted."""
    from aiplat import inputs

    found = []
    for p in directory.glob(f"{prefix}*"):
        n = inputs.ascii_int(p.name[len(prefix):])
        if n is not None and n >= 0:
            found.append((n, p))
    return sorted(found)


NVIDIA_HOOK_BINARIES = (("/usr/bin/nvidia-cdi-hook", ("nvidia-cdi-hook",)),
                        ("/usr/bin/nvidia-ctk", ("nvidia-ctk", "hook")))
"""The toolkit's hook binary (1.16 and later), else ``nvidia-ctk hook`` (older toolkits)."""


def nvidia_hook_binary(root: str) -> tuple[str, tuple[str, ...]] | None:
    """The installed hook binary (host path) and the argv prefix that calls its hooks."""
    for path, argv in NVIDIA_HOOK_BINARIES:
        if os.access(_under(root, path), os.X_OK):
            return _under(root, path), argv
    return None


# The toolkit release whose hook binary first has each subcommand (nvidia-container-toolkit
# CHANGELOG.md: nvidia-cdi-hook in 1.16.0; enable-cuda-compat and
# disable-device-node-modification in 1.18.0-rc.1; update-application-profile in 1.20.0)
HOOK_SINCE = {"create-symlinks": (1, 16, 0), "update-ldcache": (1, 16, 0),
              "enable-cuda-compat": (1, 18, 0), "disable-device-node-modification": (1, 18, 0),
              "update-application-profile": (1, 20, 0)}


def toolkit_version(root: str) -> tuple[int, int, int] | None:
    """The NVIDIA Container Toolkit installed under ``root`` (dpkg's status of
    nvidia-container-toolkit-base or nvidia-container-toolkit), None if not found."""
    text = nvf.tree_text(root, "/var/lib/dpkg/status")
    if text is None:
        return None
    for block in text.split("\n\n"):
        if re.search(r"^Package: nvidia-container-toolkit(-base)?$", block, re.M) and \
                re.search(r"^Status: install ok installed$", block, re.M):
            m = re.search(r"^Version: ([0-9]+)\.([0-9]+)\.([0-9]+)", block, re.M)
            if m:
                return int(m.group(1)), int(m.group(2)), int(m.group(3))
    return None


def nvidia_hooks(root: str, mounts: Iterable[Mount], driver_version: str | None = None,
                 sonames: Mapping[str, str] | None = None,
                 toolkit: tuple[int, int, int] | None = None) -> tuple[Hook, ...]:
    """The createContainer hooks ``nvidia-ctk cdi generate`` (v1.20) adds, in its order.

    The libraries are bind-mounted at their host paths; an image whose dynamic linker does
    not search that directory (a RHEL-based image on an Ubuntu host: ``/usr/lib64`` vs
    ``/usr/lib/x86_64-linux-gnu``) would not find ``libcuda.so.1`` without ``update-ldcache``
    for the directories, and frameworks that ``dlopen("libcuda.so")`` need the soname and
    unversioned links (``create-symlinks``). A hook is written only when the installed
    toolkit's hook binary knows it (``HOOK_SINCE``; an unknown toolkit counts as 1.16): a
    subcommand it lacks fails every container. ``enable-cuda-compat`` also needs the driver
    version. None when no hook binary is installed under ``root``: a spec naming a missing
    hook would fail every container.
    """
    found = nvidia_hook_binary(root)
    if found is None:
        return ()
    path, argv = found
    have = toolkit or (1, 16, 0)
    libs = [m.container_path for m in mounts if ".so" in os.path.basename(m.container_path)]
    env = ("NVIDIA_CTK_DEBUG=false",)

    def hook(*args: str) -> Hook:
        return Hook("createContainer", path, (*argv, *args), env)

    links = {f"libcuda.so.1::{os.path.dirname(lib)}/libcuda.so" for lib in libs
             if os.path.basename(lib).startswith("libcuda.so.")}
    if driver_version:  # each versioned library under its soname, as nvidia-ctk links them
        links |= {f"{os.path.basename(file)}::{os.path.dirname(file)}/{so}"
                  for so, file in (sonames or {}).items()
                  if file in libs and os.path.basename(file) != so}
    hooks = [hook("create-symlinks", *(a for ln in sorted(links) for a in ("--link", ln)))] \
        if links else []
    if driver_version and hooks and have >= HOOK_SINCE["enable-cuda-compat"]:
        hooks.append(hook("enable-cuda-compat", f"--host-driver-version={driver_version}"))
    folders = sorted({os.path.dirname(lib) for lib in libs})
    if folders:
        hooks.append(hook("update-ldcache", *(a for f in folders for a in ("--folder", f))))
    for name in ("disable-device-node-modification", "update-application-profile"):
        if have >= HOOK_SINCE[name]:
            hooks.append(hook(name))
    return tuple(hooks)


def _nvidia_common(root: str, ldcache: Mapping[str, str], env: tuple[str, ...]) -> Edits:
    majors = nvf.proc_devices(root)
    nodes = [_registered(n, majors) for p in ("/dev/nvidiactl", "/dev/nvidia-uvm",
                                               "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
             if (n := tree_node(p, root)) is not None]
    if not nodes:
        raise DeviceError(f"{_under(root, '/dev/nvidiactl')} does not exist (fix: load the "
                          "NVIDIA driver (modprobe nvidia; nvidia-modprobe -c 0 -u))")
    version = nvf.driver_version(root, ldcache)
    if version:
        paths = nvf.driver_libraries(root, ldcache, version) + nvf.firmware(root, version)
        mounts = [Mount(_under(root, p), p) for p in paths]
    else:  # no version to match: the library families, at their files
        mounts = library_mounts(ldcache, NVIDIA_LIBS, root)
    for b in NVIDIA_BINS:
        for d in ("/usr/bin", "/usr/sbin"):
            if os.path.isfile(_under(root, f"{d}/{b}")):
                mounts.append(Mount(_under(root, f"{d}/{b}"), f"{d}/{b}"))
                break
    mounts += [Mount(_under(root, p), p) for p in nvf.existing(root, nvf.GRAPHICS + nvf.IPC)]
    cuda = [m.container_path for m in mounts
            if os.path.basename(m.container_path).startswith("libcuda.so.")]
    # pkg/nvcdi: the spec-level env nvidia-ctk writes (void: the legacy hook injects nothing)
    spec_env = (*((f"NVIDIA_CTK_LIBCUDA_DIR={os.path.dirname(cuda[0])}",) if cuda else ()),
                "NVIDIA_VISIBLE_DEVICES=void")
    return Edits(tuple(nodes), (*spec_env, *env), tuple(mounts),
                 nvidia_hooks(root, mounts, version, nvf.sonames(root, ldcache),
                              toolkit_version(root)))


def _registered(n: NodeFact, majors: Mapping[str, int]) -> NodeFact:
    """The node with the major the driver registered (``/proc/devices``), not a stale one;
    a node of a family whose driver the root's /proc/devices does not list is refused: its
    major may be another driver's by now (a disk controller's)."""
    major = nvf.registered_major(n.path, majors)
    if major is None and majors and (family := nvf.family_driver(n.path)):
        raise DeviceError(f"{shown(n.host_path)}: no {family} in the root's /proc/devices, "
                          f"so its major {n.major} is not the driver's (another driver may hold "
                          "it) "
                          f"(fix: load {family} (nvidia-modprobe -u -c 0), or remove the stale "
                          "node)")
    return n if major is None or major == n.major else dataclasses.replace(n, major=major)


def _nvidia_devices(gpus: list[GpuIdentity], root: str,
                    mig_minors: Mapping[tuple[int, int, int | None], int]) -> list[DeviceEntry]:
    out = []
    majors = nvf.proc_devices(root)
    for g in gpus:
        gpu = Edits((need_node(f"/dev/nvidia{g.minor}", root), *dri_nodes(g.pci, root)))
        out.append(DeviceEntry(str(g.index), gpu))
        if g.uuid:
            out.append(DeviceEntry(g.uuid, gpu))
        for m in g.mig:
            caps = []
            for key in ((g.minor, m.gi, None), (g.minor, m.gi, m.ci)):
                if key not in mig_minors:
                    raise DeviceError(f"no capability minor for gpu{key[0]}/gi{key[1]}"
                                      + (f"/ci{key[2]}" if key[2] is not None else "")
                                      + " in /proc/driver/nvidia-caps/mig-minors (fix: "
                                      "check the MIG layout (nvidia-smi mig -lgi))")
                caps.append(_registered(
                    need_node(f"/dev/nvidia-caps/nvidia-cap{mig_minors[key]}", root), majors))
            edits = Edits(gpu.nodes[:1] + tuple(caps))
            out.append(DeviceEntry(f"{g.index}:{m.index}", edits))
            if m.uuid:
                out.append(DeviceEntry(m.uuid, edits))
    return out


# ---------------------------------------------------------------------------- spec files


def spec_files(paths: Iterable[str]) -> list[str]:
    """Files to load, in the loader's order: a directory's ``.json``/``.yaml`` files sorted."""
    out: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            out.extend(sorted(str(f) for f in Path(p).iterdir()
                              if f.suffix in (".json", ".yaml") and f.is_file()))
        elif os.path.isfile(p):
            out.append(p)
        else:
            raise DeviceError(f"{shown(p)}: no such file or directory (fix: give a CDI spec "
                              "file or a folder of them, e.g. /etc/cdi /var/run/cdi)")
    return out


def read_spec(file: str) -> Any:
    """A spec file's data as the reference loader decodes it (JSON or YAML alike);
    DeviceError when it cannot be read or decoded."""
    from aiplat import inputs

    try:
        text = inputs.read_text(file, "a CDI spec")
    except InputError as e:
        raise DeviceError(str(e)) from None
    d = cdiyaml.decode_spec(text)
    if d.doc is None or d.errors:
        raise DeviceError(f"{file}: not a CDI spec: {'; '.join(d.errors) or 'no Spec data'} "
                          "(fix: run 'aiplat cdi validate' on it)")
    return d.doc


def check_spec_file(file: str, h: cdi.Host | None) -> tuple[Any, list[cdi.Finding]]:
    """One file's data and findings; an unreadable or undecodable file is a finding, not
    an exception, so a directory's other files are still checked."""
    from aiplat import inputs

    try:
        text = inputs.read_text(file, "a CDI spec")
    except InputError as e:
        return None, [cdi.finding(file, "", "(file)", str(e), "fix the file or remove it")]
    return cdi.check_text(text, file, h)


def read_json(file: str) -> Any:
    from aiplat import inputs

    try:
        return inputs.load_json(file)
    except InputError as e:
        raise DeviceError(str(e)) from None


def runtime_version(command: list[str]) -> str | None:
    """``containerd --version`` / ``crio --version`` / ``podman --version`` → its version."""
    exe = shutil.which(command[0])
    if exe is None:
        return None
    try:
        res = subprocess.run([exe, *command[1:]], capture_output=True, text=True, check=False,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\bv?([0-9]+\.[0-9]+\.[0-9]+)", res.stdout + res.stderr)
    return m.group(1) if m else None
