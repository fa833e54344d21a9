"""CDI specs as plain data: naming rules, minimum ``cdiVersion``, validation and building.

Pure: no file or host access. Validation needs a few host facts (does a path exist, what is
the device node behind it, is a hook executable); they come in through the small ``Host``
protocol so tests pass a dictionary and ``aiplat.devices.host`` passes the real machine.

Why hand-written rules rather than only the JSON schema: the schema (CDI 1.1.0) does not
reject unknown fields, does not know the name grammar, the minimum version a field needs,
conflicts between files or anything about the host — all of which the reference Go loader
(or the runtime at container start) does enforce, so a spec that passes the schema can still
leave a pod with "unresolvable CDI devices". Each finding names file, device and field.

Specs are ``dict[str, Any]`` exactly as they will be serialised: what is validated is what is
written, with no model layer in between that could hide an unknown key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import yaml

VERSIONS = ("0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0",
            "1.1.0")
HOOK_NAMES = ("prestart", "createRuntime", "createContainer", "startContainer", "poststart",
              "poststop")
SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")  # later wins on conflict

_KEYS: dict[str, frozenset[str]] = {
    "spec": frozenset({"cdiVersion", "kind", "annotations", "devices", "containerEdits"}),
    "device": frozenset({"name", "annotations", "containerEdits"}),
    "containerEdits": frozenset({"env", "deviceNodes", "hooks", "mounts", "netDevices",
                                 "intelRdt", "additionalGids"}),
    "deviceNodes": frozenset({"path", "hostPath", "type", "major", "minor", "fileMode",
                              "permissions", "uid", "gid"}),
    "mounts": frozenset({"hostPath", "containerPath", "options", "type"}),
    "hooks": frozenset({"hookName", "path", "args", "env", "timeout"}),
    "netDevices": frozenset({"hostInterfaceName", "name"}),
    "intelRdt": frozenset({"closID", "l3CacheSchema", "memBwSchema", "schemata",
                           "enableMonitoring"}),
}

_VENDOR = re.compile(r"^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")
_CLASS = _VENDOR
_DEVICE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One problem: where (file, device, field), what, and how to fix it."""

    file: str
    device: str
    field: str
    message: str
    hint: str = ""
    severity: Severity = "error"

    def __str__(self) -> str:
        dev = f" device '{self.device}'" if self.device else ""
        fix = f" (fix: {self.hint})" if self.hint else ""
        return f"{self.file}:{dev} {self.field}: {self.message}{fix}"

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "device": self.device, "field": self.field,
                "severity": self.severity, "message": self.message, "hint": self.hint}


@dataclass(frozen=True)
class NodeFact:
    """A device node as the host has it (``path`` in the container, ``host_path`` on the host)."""

    path: str
    host_path: str
    type: str  # c, b or p
    major: int
    minor: int
    mode: int  # permission bits
    uid: int
    gid: int


class Host(Protocol):
    """The host facts validation needs; ``aiplat.devices.host.RealHost`` reads the machine."""

    def node(self, path: str) -> NodeFact | None: ...  # None: missing or not a device node
    def exists(self, path: str) -> bool: ...
    def executable(self, path: str) -> bool: ...


# ---------------------------------------------------------------------------- names


def split_kind(kind: str) -> tuple[str, str]:
    vendor, sep, cls = kind.partition("/")
    if not sep:
        raise ValueError(f"kind '{kind}' is not 'vendor/class'")
    return vendor, cls


def kind_problems(kind: str) -> list[str]:
    try:
        vendor, cls = split_kind(kind)
    except ValueError as e:
        return [str(e) + ", e.g. 'nvidia.com/gpu'"]
    out = []
    if not _VENDOR.match(vendor):
        out.append(f"vendor '{vendor}' must start with a letter, end with a letter or digit and "
                   "hold only letters, digits, '_', '.', '-'")
    if not _CLASS.match(cls):
        out.append(f"class '{cls}' must start with a letter, end with a letter or digit and "
                   "hold only letters, digits, '_', '.', '-'")
    return out


def device_name_ok(name: str) -> bool:
    return bool(_DEVICE.match(name))


def qualified(kind: str, name: str) -> str:
    return f"{kind}={name}"


# ---------------------------------------------------------------------------- versions


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def required_version(doc: Mapping[str, Any]) -> tuple[str, str]:
    """The lowest ``cdiVersion`` whose fields cover ``doc``, and the field that needs it."""
    need = ("0.3.0", "the base fields")

    def bump(v: str, why: str) -> None:
        nonlocal need
        if _vkey(v) > _vkey(need[0]):
            need = (v, why)

    edits: list[tuple[str, Mapping[str, Any]]] = []
    if isinstance(doc.get("containerEdits"), Mapping):
        edits.append(("containerEdits", doc["containerEdits"]))
    if doc.get("annotations"):
        bump("0.6.0", "annotations")
    kind = doc.get("kind")
    if isinstance(kind, str) and "." in kind.partition("/")[2]:
        bump("0.6.0", f"a '.' in the class of kind '{kind}'")
    for d in _list(doc.get("devices")):
        if not isinstance(d, Mapping):
            continue
        name = d.get("name")
        if isinstance(name, str) and name and not name[0].isalpha():
            bump("0.5.0", f"device name '{name}' starting with a digit")
        if d.get("annotations"):
            bump("0.6.0", f"annotations on device '{name}'")
        if isinstance(d.get("containerEdits"), Mapping):
            edits.append((f"devices[{name}].containerEdits", d["containerEdits"]))
    for where, e in edits:
        for m in _list(e.get("mounts")):
            if isinstance(m, Mapping) and m.get("type"):
                bump("0.4.0", f"{where}.mounts[].type")
        for n in _list(e.get("deviceNodes")):
            if isinstance(n, Mapping) and n.get("hostPath"):
                bump("0.5.0", f"{where}.deviceNodes[].hostPath")
        if e.get("additionalGids"):
            bump("0.7.0", f"{where}.additionalGids")
        rdt = e.get("intelRdt")
        if rdt:
            bump("0.7.0", f"{where}.intelRdt")
            if isinstance(rdt, Mapping) and ("schemata" in rdt or "enableMonitoring" in rdt):
                bump("1.1.0", f"{where}.intelRdt.schemata/enableMonitoring")
        if e.get("netDevices"):
            bump("1.1.0", f"{where}.netDevices")
    return need


# ---------------------------------------------------------------------------- validation


def _list(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


@dataclass
class _Ctx:
    file: str
    host: Host | None
    out: list[Finding] = field(default_factory=list)

    def add(self, device: str, fld: str, msg: str, hint: str = "",
            severity: Severity = "error") -> None:
        self.out.append(Finding(self.file, device, fld, msg, hint, severity))


def validate_spec(doc: object, file: str, host: Host | None = None) -> list[Finding]:
    """Every rule for one spec document. ``host=None`` skips the host checks."""
    c = _Ctx(file, host)
    if not isinstance(doc, Mapping):
        c.add("", "(document)", "a CDI spec must be a mapping (cdiVersion, kind, devices)",
              "start from `aiplat cdi generate`")
        return c.out
    _unknown(c, "", "", doc, "spec")
    version = doc.get("cdiVersion")
    if not isinstance(version, str) or version not in VERSIONS:
        c.add("", "cdiVersion", f"'{version}' is not a released CDI version",
              "use one of " + ", ".join(VERSIONS))
    else:
        need, why = required_version(doc)
        if _vkey(version) < _vkey(need):
            c.add("", "cdiVersion", f"{version} is too low: {why} needs {need}",
                  f"set cdiVersion: {need}, or drop that field")
    kind = doc.get("kind")
    if not isinstance(kind, str):
        c.add("", "kind", "missing or not a string", "set kind: vendor.com/class")
    else:
        for p in kind_problems(kind):
            c.add("", "kind", p, "e.g. kind: example.com/device")
    _annotations(c, "", "annotations", doc.get("annotations"))
    devices = doc.get("devices")
    if not isinstance(devices, list) or not devices:
        c.add("", "devices", "a spec needs at least one device", "add devices: [{name: ...}]")
        devices = []
    seen: set[str] = set()
    for i, d in enumerate(devices):
        if not isinstance(d, Mapping):
            c.add(f"#{i}", f"devices[{i}]", "must be a mapping with name and containerEdits")
            continue
        name = d.get("name")
        label = name if isinstance(name, str) else f"#{i}"
        _unknown(c, label, f"devices[{i}]", d, "device")
        if not isinstance(name, str) or not device_name_ok(name):
            c.add(label, f"devices[{i}].name",
                  f"'{name}' is not a valid device name: start and end with a letter or digit, "
                  "middle letters, digits, '_', '.', ':', '-'", "rename the device")
        elif name in seen:
            c.add(label, f"devices[{i}].name", "duplicate device name in this spec",
                  "give every device a unique name")
        else:
            seen.add(name)
        _annotations(c, label, f"devices[{i}].annotations", d.get("annotations"))
        edits = d.get("containerEdits")
        if not isinstance(edits, Mapping) or not edits:
            c.add(label, f"devices[{i}].containerEdits", "a device needs non-empty containerEdits",
                  "add deviceNodes, mounts or env")
        else:
            _edits(c, label, f"devices[{i}].containerEdits", edits)
    common = doc.get("containerEdits")
    if common is not None:
        if isinstance(common, Mapping):
            _edits(c, "", "containerEdits", common)
        else:
            c.add("", "containerEdits", "must be a mapping")
    _leaks(c, doc)
    return c.out


def _unknown(c: _Ctx, dev: str, at: str, obj: Mapping[str, Any], what: str) -> None:
    for k in obj:
        if k not in _KEYS[what]:
            near = [x for x in _KEYS[what] if x.lower() == str(k).lower()]
            hint = f"did you mean '{near[0]}'?" if near else \
                "remove it; allowed: " + ", ".join(sorted(_KEYS[what]))
            c.add(dev, f"{at}.{k}".lstrip("."),
                  "unknown field (the reference loader rejects it; the JSON schema does not)",
                  hint)


def _annotations(c: _Ctx, dev: str, at: str, ann: object) -> None:
    if ann is None:
        return
    if not isinstance(ann, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in ann.items()):
        c.add(dev, at, "annotations must map strings to strings", "quote the values")


def _edits(c: _Ctx, dev: str, at: str, e: Mapping[str, Any]) -> None:
    _unknown(c, dev, at, e, "containerEdits")
    for j, env in enumerate(_list(e.get("env"))):
        if not isinstance(env, str) or not _ENV.match(env):
            c.add(dev, f"{at}.env[{j}]", f"'{env}' is not KEY=VALUE", "write it as NAME=value")
    for j, n in enumerate(_list(e.get("deviceNodes"))):
        if isinstance(n, Mapping):
            _node(c, dev, f"{at}.deviceNodes[{j}]", n)
        else:
            c.add(dev, f"{at}.deviceNodes[{j}]", "must be a mapping with path")
    for j, m in enumerate(_list(e.get("mounts"))):
        if isinstance(m, Mapping):
            _mount(c, dev, f"{at}.mounts[{j}]", m)
        else:
            c.add(dev, f"{at}.mounts[{j}]", "must be a mapping")
    for j, h in enumerate(_list(e.get("hooks"))):
        if isinstance(h, Mapping):
            _hook(c, dev, f"{at}.hooks[{j}]", h)
        else:
            c.add(dev, f"{at}.hooks[{j}]", "must be a mapping")
    for j, nd in enumerate(_list(e.get("netDevices"))):
        if isinstance(nd, Mapping):
            _unknown(c, dev, f"{at}.netDevices[{j}]", nd, "netDevices")
            if not nd.get("hostInterfaceName") or not nd.get("name"):
                c.add(dev, f"{at}.netDevices[{j}]", "needs hostInterfaceName and name")
    rdt = e.get("intelRdt")
    if isinstance(rdt, Mapping):
        _unknown(c, dev, f"{at}.intelRdt", rdt, "intelRdt")
    for j, g in enumerate(_list(e.get("additionalGids"))):
        if not isinstance(g, int) or isinstance(g, bool) or not 0 <= g <= 0xFFFFFFFF:
            c.add(dev, f"{at}.additionalGids[{j}]", f"'{g}' is not a uint32 group id")


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _node(c: _Ctx, dev: str, at: str, n: Mapping[str, Any]) -> None:
    _unknown(c, dev, at, n, "deviceNodes")
    path = n.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        c.add(dev, f"{at}.path", f"'{path}' is not an absolute container path",
              "use e.g. /dev/nvidia0")
        return
    host_path = n.get("hostPath") or path
    typ = n.get("type")
    if typ is not None and typ not in ("c", "b", "u", "p"):
        c.add(dev, f"{at}.type", f"'{typ}' is not a device type", "use c, b, u or p")
    for k in ("major", "minor", "uid", "gid", "fileMode"):
        if k in n and (not _int(n[k]) or n[k] < 0):
            c.add(dev, f"{at}.{k}", f"'{n[k]}' is not a non-negative integer")
    perms = n.get("permissions")
    if perms is not None and (not isinstance(perms, str) or not perms or
                              set(perms) - set("rwm")):
        c.add(dev, f"{at}.permissions", f"'{perms}' is not a subset of 'rwm'",
              "use e.g. rw or rwm")
    if c.host is None or not isinstance(host_path, str):
        return
    fact = c.host.node(host_path)
    if fact is None:
        what = "is not a device node" if c.host.exists(host_path) else "does not exist"
        c.add(dev, f"{at}.hostPath" if n.get("hostPath") else f"{at}.path",
              f"host path {host_path} {what}",
              "load the driver / create the node, or regenerate the spec")
        return
    if typ in ("c", "b") and typ != fact.type:
        c.add(dev, f"{at}.type", f"spec says '{typ}', host {host_path} is '{fact.type}'",
              f"set type: {fact.type}")
    if _int(n.get("major")) and _int(n.get("minor")) and (n["major"], n["minor"]) != (
            fact.major, fact.minor):
        c.add(dev, f"{at}.major/minor",
              f"spec says {n['major']}:{n['minor']}, host {host_path} is "
              f"{fact.major}:{fact.minor}",
              f"set major: {fact.major}, minor: {fact.minor} (or regenerate the spec)")
    fm = n.get("fileMode")
    if fm is None and fact.mode & 0o666 != 0o666:
        c.add(dev, f"{at}.fileMode",
              f"not set: runtimes create the node 0666, the host's {host_path} is "
              f"0{fact.mode & 0o777:o}", f"set fileMode: {fact.mode & 0o777}", "warning")
    if isinstance(fm, int) and (fm & 0o777) & ~fact.mode & 0o777:
        c.add(dev, f"{at}.fileMode",
              f"{fm & 0o777:o} grants more than the host node's {fact.mode & 0o777:o}",
              f"use fileMode {fact.mode & 0o777} (0{fact.mode & 0o777:o})", "warning")


def _mount(c: _Ctx, dev: str, at: str, m: Mapping[str, Any]) -> None:
    _unknown(c, dev, at, m, "mounts")
    hp, cp = m.get("hostPath"), m.get("containerPath")
    if not isinstance(cp, str) or not cp.startswith("/"):
        c.add(dev, f"{at}.containerPath", f"'{cp}' is not an absolute path")
    if not isinstance(hp, str) or not hp:
        c.add(dev, f"{at}.hostPath", "missing")
        return
    opts = m.get("options")
    if opts is not None and (not isinstance(opts, list) or
                             not all(isinstance(o, str) for o in opts)):
        c.add(dev, f"{at}.options", "must be a list of strings")
        opts = []
    opts = opts or []
    mtype = m.get("type")
    if (not mtype or mtype == "bind") and "ro" not in opts:
        c.add(dev, f"{at}.options",
              f"bind mount of {hp} is writable in the container",
              "add 'ro' (aiplat generates ro,nosuid,nodev,bind)", "warning")
    if c.host is not None and hp.startswith("/") and (not mtype or mtype == "bind") \
            and not c.host.exists(hp):
        c.add(dev, f"{at}.hostPath", f"host path {hp} does not exist",
              "install the driver files, or regenerate the spec")


def _hook(c: _Ctx, dev: str, at: str, h: Mapping[str, Any]) -> None:
    _unknown(c, dev, at, h, "hooks")
    name = h.get("hookName")
    if name not in HOOK_NAMES:
        c.add(dev, f"{at}.hookName", f"'{name}' is not a hook name",
              "use one of " + ", ".join(HOOK_NAMES))
    path = h.get("path")
    if not isinstance(path, str) or not path.startswith("/"):
        c.add(dev, f"{at}.path", f"hook path '{path}' is not absolute",
              "give the absolute path of the hook binary")
    elif c.host is not None and not c.host.executable(path):
        c.add(dev, f"{at}.path", f"hook {path} is missing or not executable on the host",
              f"install it or chmod +x {path}")


def _nodes_of(edits: object) -> list[Mapping[str, Any]]:
    if not isinstance(edits, Mapping):
        return []
    return [n for n in _list(edits.get("deviceNodes")) if isinstance(n, Mapping)]


def _mig_style(name: str) -> bool:
    return ":" in name or name.startswith("MIG-")


def foreign_nodes(doc: Mapping[str, Any], name: str) -> dict[str, str]:
    """Host nodes of *other* devices that a container asking for ``name`` must not get,
    mapped to the device that owns them.

    A node's owner is the device with the fewest nodes that holds it (so the aggregate
    ``all`` never owns one). Overlap is expected only with aliases (index and UUID of one GPU:
    the same node set), with ``all``, and between a MIG device (``0:1``, ``MIG-…``) and its
    parent GPU, whose node it needs besides its capability nodes. Any other overlap is a leak.
    """
    devs: dict[str, set[str]] = {}
    for d in _list(doc.get("devices")):
        if isinstance(d, Mapping):
            devs[str(d.get("name"))] = {str(n.get("hostPath") or n.get("path"))
                                        for n in _nodes_of(d.get("containerEdits"))}
    if name == "all" or name not in devs:
        return {}
    order = list(devs)
    owner: dict[str, str] = {}
    for n in sorted(order, key=lambda x: (len(devs[x]), order.index(x))):
        if n == "all":
            continue
        for hp in devs[n]:
            owner.setdefault(hp, n)

    def related(a: str, b: str) -> bool:
        return a == b or devs[a] == devs[b] or _mig_style(a) or _mig_style(b)

    return {hp: o for hp, o in owner.items() if not related(name, o)}


def _leaks(c: _Ctx, doc: Mapping[str, Any]) -> None:
    for d in _list(doc.get("devices")):
        if not isinstance(d, Mapping) or not isinstance(d.get("name"), str):
            continue
        foreign = foreign_nodes(doc, d["name"])
        for n in _nodes_of(d.get("containerEdits")):
            hp = str(n.get("hostPath") or n.get("path"))
            if hp in foreign:
                c.add(d["name"], "containerEdits.deviceNodes",
                      f"host node {hp} belongs to device '{foreign[hp]}': a container asking "
                      f"for '{d['name']}' would get that device too",
                      "remove the node from this device, or move it to the spec-level "
                      "containerEdits if every device needs it")


def validate_set(docs: Sequence[tuple[str, object]]) -> list[Finding]:
    """Conflicts across files, in loading order (``/etc/cdi`` first, ``/var/run/cdi`` last).

    The reference cache resolves a device defined twice by directory priority: the file in the
    later directory wins; two definitions in the same directory make the device unresolvable.
    """
    where: dict[str, tuple[str, str]] = {}
    out: list[Finding] = []
    for file, doc in docs:
        if not isinstance(doc, Mapping) or not isinstance(doc.get("kind"), str):
            continue
        kind = doc["kind"]
        for d in _list(doc.get("devices")):
            if not isinstance(d, Mapping) or not isinstance(d.get("name"), str):
                continue
            q = qualified(kind, d["name"])
            here = file.rsplit("/", 1)[0] if "/" in file else ""
            if q in where:
                prev, prev_dir = where[q]
                if prev_dir == here:
                    out.append(Finding(file, d["name"], "name",
                                       f"{q} is also defined in {prev} in the same directory: "
                                       "the runtime cannot resolve it",
                                       "keep the device in one file"))
                else:
                    out.append(Finding(file, d["name"], "name",
                                       f"{q} is also defined in {prev}; this file ({here}) "
                                       "wins", "remove one definition", "warning"))
            where[q] = (file, here)
    return out


# ---------------------------------------------------------------------------- building


@dataclass(frozen=True)
class Mount:
    host_path: str
    container_path: str
    options: tuple[str, ...] = ("ro", "nosuid", "nodev", "bind")


@dataclass(frozen=True)
class Hook:
    """An OCI hook the runtime runs (``path`` on the host; ``args[0]`` is argv[0])."""

    hook_name: str
    path: str
    args: tuple[str, ...] = ()
    env: tuple[str, ...] = ()


@dataclass(frozen=True)
class Edits:
    nodes: tuple[NodeFact, ...] = ()
    env: tuple[str, ...] = ()
    mounts: tuple[Mount, ...] = ()
    hooks: tuple[Hook, ...] = ()

    def merged(self, other: Edits) -> Edits:
        nodes = self.nodes + tuple(n for n in other.nodes if n not in self.nodes)
        env = self.env + tuple(e for e in other.env if e not in self.env)
        mounts = self.mounts + tuple(m for m in other.mounts if m not in self.mounts)
        hooks = self.hooks + tuple(h for h in other.hooks if h not in self.hooks)
        return Edits(nodes, env, mounts, hooks)


@dataclass(frozen=True)
class DeviceEntry:
    name: str
    edits: Edits


def node_dict(n: NodeFact, permissions: str = "rw") -> dict[str, Any]:
    d: dict[str, Any] = {"path": n.path}
    if n.host_path != n.path:
        d["hostPath"] = n.host_path
    d.update({"type": n.type, "major": n.major, "minor": n.minor,
              "fileMode": n.mode & 0o777, "permissions": permissions,
              "uid": n.uid, "gid": n.gid})
    return d


def edits_dict(e: Edits) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if e.env:
        d["env"] = list(e.env)
    if e.nodes:
        d["deviceNodes"] = [node_dict(n) for n in e.nodes]
    if e.mounts:
        d["mounts"] = [{"hostPath": m.host_path, "containerPath": m.container_path,
                        "options": list(m.options)} for m in e.mounts]
    if e.hooks:
        d["hooks"] = [{"hookName": h.hook_name, "path": h.path, "args": list(h.args),
                       **({"env": list(h.env)} if h.env else {})} for h in e.hooks]
    return d


def build_spec(kind: str, devices: Iterable[DeviceEntry], common: Edits = Edits(),
               all_device: bool = True) -> dict[str, Any]:
    """A spec for ``kind`` with ``devices`` (+ ``all``), at the lowest version it needs."""
    problems = kind_problems(kind)
    if problems:
        raise ValueError(f"kind '{kind}': " + "; ".join(problems))
    devs = list(devices)
    if not devs:
        raise ValueError(f"kind '{kind}': no devices found")
    names = [d.name for d in devs]
    bad = [n for n in names if not device_name_ok(n)]
    if bad or len(set(names)) != len(names):
        raise ValueError(f"kind '{kind}': invalid or duplicate device names {bad or names}")
    out_devs = [{"name": d.name, "containerEdits": edits_dict(d.edits)} for d in devs]
    if all_device and len(devs) > 1 and "all" not in names:
        union = Edits()
        for d in devs:
            union = union.merged(d.edits)
        out_devs.append({"name": "all", "containerEdits": edits_dict(union)})
    doc: dict[str, Any] = {"cdiVersion": "", "kind": kind, "devices": out_devs}
    if common.nodes or common.env or common.mounts or common.hooks:
        doc["containerEdits"] = edits_dict(common)
    doc["cdiVersion"] = required_version(doc)[0]
    return doc


def spec_filename(kind: str) -> str:
    vendor, cls = split_kind(kind)
    return f"aiplat-{vendor}-{cls}.json"


def dumps(doc: Mapping[str, Any], fmt: str = "json") -> str:
    if fmt == "yaml":
        return yaml.safe_dump(dict(doc), sort_keys=False)
    return json.dumps(doc, indent=2) + "\n"


def loads(text: str, file: str) -> object:
    """Parse a spec file; YAML is a superset of JSON but ``.json`` files must be JSON."""
    if file.endswith(".json"):
        return json.loads(text)
    return yaml.safe_load(text)
