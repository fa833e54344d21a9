"""Container runtime configuration for CDI and NRI, as minimal merges into existing TOML.

Pure: a merge takes the current file's text and the runtime's version and returns the new
text plus the list of changed keys. ``tomlkit`` keeps every other key, comment, blank line and
the order of tables, so the diff an administrator reviews holds only what aiplat changed, and
merging twice changes nothing the second time.

What "enable" means per runtime (the defaults decide what is *minimal*). Each floor is read
from the runtime's own source at that release (module go.mod via proxy.golang.org, or its
repository at the tag), cited where it is used:
- containerd 1.7 (config ``version = 2``): CDI is off by default → ``enable_cdi = true`` under
  ``[plugins."io.containerd.grpc.v1.cri"]``; NRI is off → ``disable = false`` under
  ``[plugins."io.containerd.nri.v1.nri"]``. containerd < 1.7 has no CDI.
- containerd 2.x (``version = 3``): CDI (``[plugins.'io.containerd.cri.v1.runtime']``) and NRI
  are on by default; only keys that a file sets to something else are corrected. From 2.3
  ``enable_cdi`` is deprecated and from 2.4 ignored (CDI always on): it is removed, not set.
- CRI-O ≥ 1.24: CDI always on; ``[crio.runtime] cdi_spec_dirs`` only when asked for other
  directories. NRI (≥ 1.26): ``[crio.nri] enable_nri = true``, on by default from 1.30.
- Podman ≥ 4.1: CDI always on with ``/etc/cdi`` and ``/var/run/cdi``; ``[engine]
  cdi_spec_dirs`` only for other directories, and only Podman ≥ 5.5 reads it. Podman has no
  NRI.

A ``cdi_spec_dirs`` the file already sets is kept unless other directories are asked for.
``CDI_LIBRARY`` records the CDI library each release links, hence the highest ``cdiVersion``
it loads (``max_cdi_version``).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from aiplat.errors import InputError

DEFAULT_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
RUNTIMES = ("containerd", "crio", "podman")

V = tuple[int, int, int]
# Floors, each read from the runtime's source at that release:
CONTAINERD_CDI = (1, 7, 0)  # v1.7.0 go.mod: container-device-interface v0.5.4 (none in 1.6)
CONTAINERD_CDI_DEPRECATED = (2, 3, 0)  # v2.3.0 pkg/deprecation: CRIEnableCDI "enable_cdi ...
# is deprecated ... CDI support will always be enabled"; v2.2.x has no such warning
CONTAINERD_CDI_ALWAYS = (2, 4, 0)  # v2.4 plugins/cri/runtime/plugin.go: enable_cdi skipped,
# "CDI is always enabled"; the field is gone from internal/cri/config
CRIO_CDI = (1, 24, 0)  # v1.24.0 go.mod: container-device-interface v0.3.2; v1.23.0: none
CRIO_NRI = (1, 26, 0)  # v1.26.0 go.mod: containerd/nri v0.2.0; template.go enable_nri
CRIO_NRI_DEFAULT = (1, 30, 0)  # v1.30.0 internal/config/nri/nri.go New(): Enabled: true
# (v1.29.0's New() leaves it false)
PODMAN_CDI = (4, 1, 0)  # v4.1.0 go.mod: container-device-interface v0.4.0
PODMAN_SPEC_DIRS = (5, 5, 0)  # v5.5.0 libpod/container_internal_common.go and
# pkg/specgen/generate/config_linux.go pass Engine.CdiSpecDirs to the CDI cache; v5.4.0
# does not read it (containers/common has carried the field since v0.62, unused)

# The CDI library each release links (its go.mod) and so the newest cdiVersion it loads:
# a vX.Y library knows the spec versions up to X.Y.0 (v0.4.0 pkg/cdi/spec.go
# validSpecVersions ends at "0.4.0"). (runtime, first release, library)
CDI_LIBRARY: tuple[tuple[str, V, V], ...] = (
    ("podman", (4, 1, 0), (0, 4, 0)), ("podman", (4, 3, 0), (0, 5, 2)),
    ("podman", (5, 0, 0), (0, 6, 2)), ("podman", (5, 4, 0), (0, 8, 0)),
    ("podman", (5, 5, 0), (1, 0, 1)),
    ("crio", (1, 24, 0), (0, 3, 2)), ("crio", (1, 25, 0), (0, 5, 0)),
    ("crio", (1, 29, 0), (0, 6, 2)), ("crio", (1, 30, 0), (0, 7, 2)),
    ("containerd", (1, 7, 0), (0, 5, 4)),
)


def cdi_library(runtime: str, version: str) -> V | None:
    """The CDI library a runtime release links (None: no CDI, or a runtime not listed)."""
    v = parse_version(version)
    found = None
    for rt, first, lib in CDI_LIBRARY:
        if rt == runtime and v >= first:
            found = lib
    return found


def max_cdi_version(runtime: str, version: str) -> str | None:
    """The newest ``cdiVersion`` that release loads; None when not known here (newer
    releases link libraries that load every version aiplat writes)."""
    lib = cdi_library(runtime, version)
    if lib is None or lib >= (1, 0, 0):
        return None
    return f"{lib[0]}.{lib[1]}.0"


class RuntimeConfigError(InputError, ValueError):
    """An unsupported combination or a file that cannot be merged (says what to change)."""


@dataclass(frozen=True)
class Change:
    key: str
    old: Any
    new: Any


@dataclass
class Merge:
    runtime: str
    version: str
    before: str
    after: str
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def diff(self, path: str = "config.toml") -> str:
        return "".join(difflib.unified_diff(self.before.splitlines(True),
                                            self.after.splitlines(True),
                                            f"a/{path.lstrip('/')}", f"b/{path.lstrip('/')}"))


def parse_version(text: str) -> tuple[int, int, int]:
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not m:
        raise RuntimeConfigError(f"cannot read a version from '{text}' (fix: pass --version "
                                 "X.Y.Z)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def _load(text: str, what: str) -> tomlkit.TOMLDocument:
    try:
        return tomlkit.parse(text)
    except TOMLKitError as e:
        raise RuntimeConfigError(f"{what}: not valid TOML: {e}; fix the file first") from e
    except RecursionError:
        raise RuntimeConfigError(f"{what}: nested too deeply to be a runtime config; fix the "
                                 "file first") from None


def _table(doc: tomlkit.TOMLDocument, path: tuple[str, ...]) -> Table:
    cur: Any = doc
    for k in path:
        if k not in cur:
            t = tomlkit.table(is_super_table=False)
            cur[k] = t
        cur = cur[k]
        if not isinstance(cur, Table):
            raise RuntimeConfigError(f"{'.'.join(path)} is not a table in the current file")
    assert isinstance(cur, Table)
    return cur


def _get(doc: tomlkit.TOMLDocument, path: tuple[str, ...], key: str) -> Any:
    cur: Any = doc
    for k in path:
        if not isinstance(cur, dict) or k not in cur:
            return None
        cur = cur[k]
    return cur.get(key) if isinstance(cur, dict) else None


def _set(doc: tomlkit.TOMLDocument, m: Merge, path: tuple[str, ...], key: str, value: Any,
         *, only_if_present: bool = False) -> None:
    old = _get(doc, path, key)
    plain_old = old.unwrap() if hasattr(old, "unwrap") else old
    if plain_old == value or (only_if_present and old is None):
        return
    _table(doc, path)[key] = value
    m.changes.append(Change(".".join((*path, key)), plain_old, value))


def merge_containerd(text: str, version: str, *, cdi: bool = True, nri: bool = True,
                     spec_dirs: tuple[str, ...] | None = None) -> Merge:
    v = parse_version(version)
    if v < CONTAINERD_CDI:
        raise RuntimeConfigError(f"containerd {version} has no CDI support (fix: upgrade to "
                                 "containerd >= 1.7 (CDI and NRI) — 2.x has both on by default)")
    doc = _load(text, "containerd config")
    m = Merge("containerd", version, text, "")
    file_version = _containerd_file_version(doc, text, v, m)
    on_by_default = file_version == 3 or v >= (2, 0, 0)
    if cdi:
        cri = (("plugins", "io.containerd.cri.v1.runtime") if file_version == 3
               else ("plugins", "io.containerd.grpc.v1.cri"))
        if v >= CONTAINERD_CDI_DEPRECATED:
            _drop(doc, m, cri, "enable_cdi")
        else:
            _set(doc, m, cri, "enable_cdi", True, only_if_present=on_by_default)
        if spec_dirs is not None:
            _set(doc, m, cri, "cdi_spec_dirs", list(spec_dirs),
                 only_if_present=tuple(spec_dirs) == DEFAULT_SPEC_DIRS)
        if on_by_default and not m.changes:
            m.notes.append(f"containerd {version}: CDI is on by default with "
                           f"{', '.join(_get(doc, cri, 'cdi_spec_dirs') or DEFAULT_SPEC_DIRS)}")
    elif v >= CONTAINERD_CDI_ALWAYS:
        raise RuntimeConfigError(f"containerd {version} always has CDI on (fix: drop --no-cdi)")
    if nri:
        nri_path = ("plugins", "io.containerd.nri.v1.nri")
        before = len(m.changes)
        _set(doc, m, nri_path, "disable", False, only_if_present=v >= (2, 0, 0))
        if v >= (2, 0, 0) and len(m.changes) == before:
            m.notes.append(f"containerd {version}: NRI is on by default "
                           "(socket /var/run/nri/nri.sock, plugins /opt/nri/plugins)")
    m.after = tomlkit.dumps(doc)
    return m


def _containerd_file_version(doc: tomlkit.TOMLDocument, text: str, v: V, m: Merge) -> int:
    file_version = doc.get("version")
    if file_version is None:
        file_version = 3 if v >= (2, 0, 0) else 2
        if not text.strip():
            doc["version"] = file_version
            m.changes.append(Change("version", None, file_version))
        else:
            raise RuntimeConfigError("the containerd config has no 'version' key (version 1 "
                                     "format) (fix: `containerd config migrate` first)")
    if isinstance(file_version, bool) or not isinstance(file_version, int):
        raise RuntimeConfigError(f"the config's 'version' is {file_version!r}, not a number "
                                 "(fix: write version = 2 (containerd 1.7) or version = 3 "
                                 "(containerd 2.x))")
    file_version = int(file_version)
    if file_version == 3 and v < (2, 0, 0):
        raise RuntimeConfigError(f"config version 3 needs containerd 2.x, the host has "
                                 f"{m.version} (fix: use a version = 2 file)")
    if file_version not in (2, 3):
        raise RuntimeConfigError(f"config version {file_version} is not supported (fix: "
                                 "`containerd config migrate`)")
    return file_version


def _drop(doc: tomlkit.TOMLDocument, m: Merge, path: tuple[str, ...], key: str) -> None:
    old = _get(doc, path, key)
    if old is None:
        return
    del _table(doc, path)[key]
    m.changes.append(Change(".".join((*path, key)), old.unwrap() if hasattr(old, "unwrap")
                            else old, None))
    m.notes.append(f"containerd {m.version}: enable_cdi is deprecated (CDI is always on); "
                   "removed")


def merge_crio(text: str, version: str, *, cdi: bool = True, nri: bool = True,
               spec_dirs: tuple[str, ...] | None = None) -> Merge:
    v = parse_version(version)
    if cdi and v < CRIO_CDI:
        raise RuntimeConfigError(f"CRI-O {version} has no CDI support (fix: upgrade to "
                                 "CRI-O >= 1.24)")
    if nri and v < CRIO_NRI:
        raise RuntimeConfigError(f"CRI-O {version} has no NRI support (fix: upgrade to "
                                 "CRI-O >= 1.26, or pass --no-nri)")
    doc = _load(text, "CRI-O config")
    m = Merge("crio", version, text, "")
    if cdi:
        if spec_dirs is not None:
            _set(doc, m, ("crio", "runtime"), "cdi_spec_dirs", list(spec_dirs),
                 only_if_present=tuple(spec_dirs) == DEFAULT_SPEC_DIRS)
        if not m.changes:
            dirs = _get(doc, ("crio", "runtime"), "cdi_spec_dirs") or DEFAULT_SPEC_DIRS
            m.notes.append(f"CRI-O {version}: CDI is always on with {', '.join(dirs)}")
    if nri:
        # on by default from 1.30: only a file that turns it off is corrected
        _set(doc, m, ("crio", "nri"), "enable_nri", True,
             only_if_present=v >= CRIO_NRI_DEFAULT)
        if v >= CRIO_NRI_DEFAULT and _get(doc, ("crio", "nri"), "enable_nri") is None:
            m.notes.append(f"CRI-O {version}: NRI is on by default")
    m.after = tomlkit.dumps(doc)
    return m


def merge_podman(text: str, version: str, *, cdi: bool = True, nri: bool = False,
                 spec_dirs: tuple[str, ...] | None = None) -> Merge:
    v = parse_version(version)
    if cdi and v < PODMAN_CDI:
        raise RuntimeConfigError(f"Podman {version} has no CDI support (--device "
                                 "vendor/class=name) (fix: upgrade to Podman >= 4.1)")
    doc = _load(text, "containers.conf")
    m = Merge("podman", version, text, "")
    if nri:
        m.notes.append("Podman has no NRI; NRI plugins run under containerd or CRI-O")
    if cdi:
        custom = spec_dirs is not None and tuple(spec_dirs) != DEFAULT_SPEC_DIRS
        if custom and v < PODMAN_SPEC_DIRS:
            raise RuntimeConfigError(
                f"Podman {version} reads CDI specs only from {', '.join(DEFAULT_SPEC_DIRS)} "
                "(or --cdi-spec-dir on each command) (fix: put the specs there, or upgrade to "
                "Podman >= 5.5 for [engine] cdi_spec_dirs)")
        if spec_dirs is not None:
            _set(doc, m, ("engine",), "cdi_spec_dirs", list(spec_dirs),
                 only_if_present=not custom)
        if not m.changes:
            m.notes.append(f"Podman {version}: CDI is on with {', '.join(DEFAULT_SPEC_DIRS)}; "
                           "nothing to change")
    m.after = tomlkit.dumps(doc)
    return m


def merge(runtime: str, text: str, version: str, *, cdi: bool = True, nri: bool = True,
          spec_dirs: tuple[str, ...] | None = None) -> Merge:
    """``spec_dirs`` None: keep the directories the file has (or the runtime's defaults)."""
    if runtime == "containerd":
        return merge_containerd(text, version, cdi=cdi, nri=nri, spec_dirs=spec_dirs)
    if runtime == "crio":
        return merge_crio(text, version, cdi=cdi, nri=nri, spec_dirs=spec_dirs)
    if runtime == "podman":
        return merge_podman(text, version, cdi=cdi, nri=nri, spec_dirs=spec_dirs)
    raise RuntimeConfigError(f"unknown runtime '{runtime}' (fix: use one of {', '.join(RUNTIMES)})")


DEFAULT_PATHS = {"containerd": "/etc/containerd/config.toml", "crio": "/etc/crio/crio.conf",
                 "podman": "/etc/containers/containers.conf"}
VERSION_COMMANDS = {"containerd": ["containerd", "--version"], "crio": ["crio", "--version"],
                    "podman": ["podman", "--version"]}
