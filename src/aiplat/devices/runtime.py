"""Container runtime configuration for CDI and NRI, as minimal merges into existing TOML.

Pure: a merge takes the current file's text and the runtime's version and returns the new
text plus the list of changed keys. ``tomlkit`` keeps every other key, comment, blank line and
the order of tables, so the diff an administrator reviews holds only what aiplat changed, and
merging twice changes nothing the second time.

What "enable" means per runtime (the defaults decide what is *minimal*):
- containerd 1.7 (config ``version = 2``): CDI is off by default → ``enable_cdi = true`` under
  ``[plugins."io.containerd.grpc.v1.cri"]``; NRI is off → ``disable = false`` under
  ``[plugins."io.containerd.nri.v1.nri"]``. containerd < 1.7 has no CDI.
- containerd 2.x (``version = 3``): CDI (``[plugins.'io.containerd.cri.v1.runtime']``) and NRI
  are on by default; only keys that a file sets to something else are corrected. A 2.x host
  still reading a ``version = 2`` file gets the version-2 keys (containerd migrates them).
- CRI-O ≥ 1.23: CDI always on; ``[crio.runtime] cdi_spec_dirs`` only when the file narrows
  it. NRI (≥ 1.26): ``[crio.nri] enable_nri = true``.
- Podman ≥ 4.1: CDI always on with ``/etc/cdi`` and ``/var/run/cdi``; ``[engine]
  cdi_spec_dirs`` only for other directories, and only Podman ≥ 5.0 reads it. Podman has no
  NRI.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

DEFAULT_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
RUNTIMES = ("containerd", "crio", "podman")


class RuntimeConfigError(ValueError):
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
        raise RuntimeConfigError(f"cannot read a version from '{text}'; fix: pass --version "
                                 "X.Y.Z")
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
                     spec_dirs: tuple[str, ...] = DEFAULT_SPEC_DIRS) -> Merge:
    v = parse_version(version)
    if v < (1, 7, 0):
        raise RuntimeConfigError(f"containerd {version} has no CDI support; fix: upgrade to "
                                 "containerd >= 1.7 (CDI and NRI) — 2.x has both on by default")
    doc = _load(text, "containerd config")
    m = Merge("containerd", version, text, "")
    file_version = doc.get("version")
    if file_version is None:
        file_version = 3 if v >= (2, 0, 0) else 2
        if not text.strip():
            doc["version"] = file_version
            m.changes.append(Change("version", None, file_version))
        else:
            raise RuntimeConfigError("the containerd config has no 'version' key (version 1 "
                                     "format); fix: `containerd config migrate` first")
    if isinstance(file_version, bool) or not isinstance(file_version, int):
        raise RuntimeConfigError(f"the config's 'version' is {file_version!r}, not a number; "
                                 "fix: write version = 2 (containerd 1.7) or version = 3 "
                                 "(containerd 2.x)")
    file_version = int(file_version)
    if file_version == 3 and v < (2, 0, 0):
        raise RuntimeConfigError(f"config version 3 needs containerd 2.x, the host has "
                                 f"{version}; fix: use a version = 2 file")
    if file_version not in (2, 3):
        raise RuntimeConfigError(f"config version {file_version} is not supported; fix: "
                                 "`containerd config migrate`")
    on_by_default = file_version == 3 or v >= (2, 0, 0)
    dirs = list(spec_dirs)
    if cdi:
        cri = (("plugins", "io.containerd.cri.v1.runtime") if file_version == 3
               else ("plugins", "io.containerd.grpc.v1.cri"))
        _set(doc, m, cri, "enable_cdi", True, only_if_present=on_by_default)
        _set(doc, m, cri, "cdi_spec_dirs", dirs,
             only_if_present=tuple(dirs) == DEFAULT_SPEC_DIRS)
        if on_by_default and not m.changes:
            m.notes.append(f"containerd {version}: CDI is on by default with "
                           f"{', '.join(DEFAULT_SPEC_DIRS)}")
    if nri:
        nri_path = ("plugins", "io.containerd.nri.v1.nri")
        before = len(m.changes)
        _set(doc, m, nri_path, "disable", False, only_if_present=v >= (2, 0, 0))
        if v >= (2, 0, 0) and len(m.changes) == before:
            m.notes.append(f"containerd {version}: NRI is on by default "
                           "(socket /var/run/nri/nri.sock, plugins /opt/nri/plugins)")
    m.after = tomlkit.dumps(doc)
    return m


def merge_crio(text: str, version: str, *, cdi: bool = True, nri: bool = True,
               spec_dirs: tuple[str, ...] = DEFAULT_SPEC_DIRS) -> Merge:
    v = parse_version(version)
    if cdi and v < (1, 23, 0):
        raise RuntimeConfigError(f"CRI-O {version} has no CDI support; fix: upgrade to "
                                 "CRI-O >= 1.23")
    if nri and v < (1, 26, 0):
        raise RuntimeConfigError(f"CRI-O {version} has no NRI support; fix: upgrade to "
                                 "CRI-O >= 1.26, or pass --no-nri")
    doc = _load(text, "CRI-O config")
    m = Merge("crio", version, text, "")
    if cdi:
        _set(doc, m, ("crio", "runtime"), "cdi_spec_dirs", list(spec_dirs),
             only_if_present=tuple(spec_dirs) == DEFAULT_SPEC_DIRS)
        if not m.changes:
            m.notes.append(f"CRI-O {version}: CDI is always on with "
                           f"{', '.join(DEFAULT_SPEC_DIRS)}")
    if nri:
        _set(doc, m, ("crio", "nri"), "enable_nri", True)
    m.after = tomlkit.dumps(doc)
    return m


def merge_podman(text: str, version: str, *, cdi: bool = True, nri: bool = False,
                 spec_dirs: tuple[str, ...] = DEFAULT_SPEC_DIRS) -> Merge:
    v = parse_version(version)
    if cdi and v < (4, 1, 0):
        raise RuntimeConfigError(f"Podman {version} has no CDI support (--device "
                                 "vendor/class=name); fix: upgrade to Podman >= 4.1")
    doc = _load(text, "containers.conf")
    m = Merge("podman", version, text, "")
    if nri:
        m.notes.append("Podman has no NRI; NRI plugins run under containerd or CRI-O")
    if cdi:
        custom = tuple(spec_dirs) != DEFAULT_SPEC_DIRS
        if custom and v < (5, 0, 0):
            raise RuntimeConfigError(
                f"Podman {version} reads CDI specs only from {', '.join(DEFAULT_SPEC_DIRS)}; "
                "fix: put the specs there, or upgrade to Podman >= 5.0 for [engine] "
                "cdi_spec_dirs")
        _set(doc, m, ("engine",), "cdi_spec_dirs", list(spec_dirs), only_if_present=not custom)
        if not m.changes:
            m.notes.append(f"Podman {version}: CDI is on with {', '.join(DEFAULT_SPEC_DIRS)}; "
                           "nothing to change")
    m.after = tomlkit.dumps(doc)
    return m


def merge(runtime: str, text: str, version: str, *, cdi: bool = True, nri: bool = True,
          spec_dirs: tuple[str, ...] = DEFAULT_SPEC_DIRS) -> Merge:
    if runtime == "containerd":
        return merge_containerd(text, version, cdi=cdi, nri=nri, spec_dirs=spec_dirs)
    if runtime == "crio":
        return merge_crio(text, version, cdi=cdi, nri=nri, spec_dirs=spec_dirs)
    if runtime == "podman":
        return merge_podman(text, version, cdi=cdi, nri=nri, spec_dirs=spec_dirs)
    raise RuntimeConfigError(f"unknown runtime '{runtime}'; use one of {', '.join(RUNTIMES)}")


DEFAULT_PATHS = {"containerd": "/etc/containerd/config.toml", "crio": "/etc/crio/crio.conf",
                 "podman": "/etc/containers/containers.conf"}
VERSION_COMMANDS = {"containerd": ["containerd", "--version"], "crio": ["crio", "--version"],
                    "podman": ["podman", "--version"]}
