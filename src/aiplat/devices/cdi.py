"""CDI specs as plain data: naming rules, minimum ``cdiVersion``, validation and building.

Pure: no file or host access. Validation needs a few host facts (does a path exist, what is
the device node behind it, is a hook executable); they come in through the small ``Host``
protocol so tests pass a dictionary and ``aiplat.devices.host`` passes the real machine.

Two classes of finding, kept apart:

- ``spec``: what the reference loader (``tags.cncf.io/container-device-interface`` v1.1.2,
  ``pkg/cdi`` + ``specs-go``, the code containerd, CRI-O and Podman link) rejects. A file is
  first decoded as that loader decodes it (:mod:`aiplat.devices.cdiyaml`), then checked with
  its rules, each citing the upstream function it follows. The differential tests run the
  real loader on the same files and require the same verdict.
- ``host-check``: aiplat's deliberate strictness, for specs the loader accepts but that fail
  or leak at container start: relative container paths, missing host files or nodes, a node
  that differs from the host's, a hook that is not executable, a writable bind mount, a
  negative hook timeout, one device's node granted to another. And, as errors (``cdi
  validate`` exits 1), what hands the host to the container or to whoever wrote the spec:
  a bind of ``/``, of credentials or of a container runtime's socket (``ESCAPE_PATHS``), a
  writable bind of a system directory, and whatever falls outside the allow-lists of
  :mod:`aiplat.devices.escape`: a hook that is no known CDI hook (or is one called outside
  its forms, or with an environment of the spec's), a file system that is no bind or safe
  type, a device node that is no GPU's, accelerator's or RDMA device's, a NUL in any string.
  A spec's hooks run as root on the host: only the vendor's are let through.

Every part of a ``Finding`` is shown terminal-safe (``aiplat.text.shown``): the spec's own
text is in it, and an escape sequence or a lone surrogate must not reach the terminal.

Specs are ``dict[str, Any]`` exactly as they will be serialised: what is validated is what is
written, with no model layer in between that could hide an unknown key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import yaml

from aiplat import findings
from aiplat.devices import cdiyaml, escape
from aiplat.errors import InputError
from aiplat.text import shown, shown_lines

VERSIONS = ("0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0",
            "1.1.0")
EARLIEST = "0.3.0"  # specs-go/version.go vEarliest: 0.1.0 and 0.2.0 parse but never load
HOOK_NAMES = ("prestart", "createRuntime", "createContainer", "startContainer", "poststart",
              "poststop")
SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")  # later wins on conflict
NO_PERMISSIONS = "none"  # pkg/cdi container-edits.go: a node the cgroup does not open

_KEYS: dict[str, frozenset[str]] = {
    k: frozenset(t.fields) for k, t in (
        ("spec", cdiyaml.SPEC), ("device", cdiyaml.DEVICE), ("containerEdits", cdiyaml.EDITS),
        ("deviceNodes", cdiyaml.NODE), ("mounts", cdiyaml.MOUNT), ("hooks", cdiyaml.HOOK),
        ("netDevices", cdiyaml.NET), ("intelRdt", cdiyaml.RDT))}

# pkg/parser/parser.go: validateVendorOrClassName and ValidateDeviceName (ASCII only)
_VENDOR = re.compile(r"[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?")
_CLASS = _VENDOR
_DEVICE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?")
MAX_UINT32 = 2**32 - 1

Severity = Literal["error", "warning"]
Check = Literal["spec", "host-check"]


class CdiSpecError(InputError, ValueError):
    """A CDI spec that cannot be built: a bad kind, no devices, bad device names (quoted
    terminal-safe: they come from the command line or a tree)."""

    def __init__(self, message: str) -> None:
        super().__init__(shown_lines(message))


class Finding(findings.Finding):
    """A finding about a CDI spec: aiplat's one ``Finding`` (subject ``FILE: device 'D'
    FIELD``, source the check: ``spec``, the reference loader's own verdict, or
    ``host-check``, aiplat's stricter one), with its place kept apart for the checks that
    select by it. ``escape``: it hands the host over (aiplat.devices.escape): never run it."""

    file: str
    device: str
    field: str
    check: Check = "spec"
    escape: bool = False


def finding(file: str, device: str, fld: str, message: str, hint: str = "", *,
            severity: Severity = "error", check: Check = "spec",
            escape: bool = False) -> Finding:
    """The finding at ``file``, ``device``, field ``fld``. The spec's own text (paths, names,
    arguments) is in every part: an escape sequence, a bidi override or a lone surrogate must
    not reach the terminal (or break it), so each part is kept shown (aiplat.text)."""
    file, device, fld, message, hint = (shown(x) for x in (file, device, fld, message, hint))
    dev = f" device '{device}'" if device else ""
    return Finding(severity=severity, subject=f"{file}:{dev} {fld}", message=message, fix=hint,
                   source=check, file=file, device=device, field=fld, check=check,
                   escape=escape)


def spec_errors(findings: Iterable[Finding]) -> list[Finding]:
    """The findings that are the reference loader's verdict too: it would reject the file."""
    return [f for f in findings if f.severity == "error" and f.check == "spec"]


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
    # the driver /proc/devices (/proc/misc for misc devices) names for the numbers: "" when
    # none holds them, None when not looked up
    driver: str | None = None


class Host(Protocol):
    """The host facts validation needs; ``aiplat.devices.host.RealHost`` reads the machine."""

    def node(self, path: str) -> NodeFact | None: ...  # None: missing or not a device node
    def exists(self, path: str) -> bool: ...
    def executable(self, path: str) -> bool: ...
    def real(self, path: str) -> str: ...  # ``path`` with the host's symlinks resolved
    def link(self, path: str) -> str | None: ...  # the link's target at ``path``; None: no link
    # the first part of ``path`` (itself or a directory above) a user other than root can
    # write; None when only root can change it
    def replaceable(self, path: str) -> str | None: ...


# ---------------------------------------------------------------------------- names


def split_kind(kind: str) -> tuple[str, str]:
    """pkg/parser ParseQualifier: cut at the first '/'; both halves must be non-empty."""
    vendor, sep, cls = kind.partition("/")
    if not sep or not vendor or not cls:
        raise CdiSpecError(f"kind '{shown(kind)}' is not 'vendor/class'")
    return vendor, cls


_NAME_RULE = ("must start with a letter, end with a letter or digit and hold only letters, "
              "digits, '_', '.', '-'")


def kind_problems(kind: str) -> list[str]:
    try:
        vendor, cls = split_kind(kind)
    except ValueError as e:
        return [str(e) + ", e.g. 'nvidia.com/gpu'"]
    out = []
    if not _VENDOR.fullmatch(vendor):
        out.append(f"vendor '{vendor}' {_NAME_RULE}")
    if not _CLASS.fullmatch(cls):
        out.append(f"class '{cls}' {_NAME_RULE}")
    return out


def device_name_ok(name: str) -> bool:
    return bool(_DEVICE.fullmatch(name))


def qualified(kind: str, name: str) -> str:
    return f"{kind}={name}"


# ---------------------------------------------------------------------------- versions


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def normal_version(v: object) -> str | None:
    """specs-go newVersion: one leading 'v' is dropped; None unless a released version."""
    if not isinstance(v, str):
        return None
    v = v.removeprefix("v")
    return v if v in VERSIONS else None


def required_version(doc: Mapping[str, Any]) -> tuple[str, str]:
    """The lowest ``cdiVersion`` whose fields cover ``doc``, and the field that needs it
    (specs-go/version.go requiresV040 … requiresV110): the first field seen that needs the
    highest version."""
    need = (EARLIEST, "the base fields")
    for v, why in _needs(doc):
        if _vkey(v) > _vkey(need[0]):
            need = (v, why)
    return need


def _needs(doc: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(version, field) for every field of ``doc`` newer than the base spec, in spec order."""
    edits: list[tuple[str, Mapping[str, Any]]] = []
    if isinstance(doc.get("containerEdits"), Mapping):
        edits.append(("containerEdits", doc["containerEdits"]))
    if doc.get("annotations"):
        yield "0.6.0", "annotations"
    kind = doc.get("kind")
    if isinstance(kind, str) and "/" in kind and "." in kind.partition("/")[2]:
        yield "0.6.0", f"a '.' in the class of kind '{kind}'"
    for d in _list(doc.get("devices")):
        if not isinstance(d, Mapping):
            continue
        name = d.get("name")
        if isinstance(name, str) and name[:1].isdigit() and name[0].isascii():
            yield "0.5.0", f"device name '{name}' starting with a digit"
        if d.get("annotations"):
            yield "0.6.0", f"annotations on device '{name}'"
        if isinstance(d.get("containerEdits"), Mapping):
            edits.append((f"devices[{name}].containerEdits", d["containerEdits"]))
    for where, e in edits:
        yield from _edit_needs(where, e)


def _edit_needs(where: str, e: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    for m in _list(e.get("mounts")):
        if isinstance(m, Mapping) and m.get("type"):
            yield "0.4.0", f"{where}.mounts[].type"
    for n in _list(e.get("deviceNodes")):
        if isinstance(n, Mapping) and n.get("hostPath"):
            yield "0.5.0", f"{where}.deviceNodes[].hostPath"
    if e.get("additionalGids"):
        yield "0.7.0", f"{where}.additionalGids"
    rdt = e.get("intelRdt")
    if rdt is not None:  # even an empty intelRdt: {} (requiresV070 tests != nil)
        yield "0.7.0", f"{where}.intelRdt"
        # requiresV110: Schemata != nil (an empty list counts), EnableMonitoring true
        if isinstance(rdt, Mapping) and (rdt.get("schemata") is not None or
                                         rdt.get("enableMonitoring") is True):
            yield "1.1.0", f"{where}.intelRdt.schemata/enableMonitoring"
    if e.get("netDevices"):
        yield "1.1.0", f"{where}.netDevices"


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
        self.out.append(finding(self.file, device, fld, msg, hint, severity=severity))

    def strict(self, device: str, fld: str, msg: str, hint: str = "",
               severity: Severity = "error") -> None:
        self.out.append(finding(self.file, device, fld, msg, hint, severity=severity,
                                check="host-check"))

    def escapes(self, device: str, at: str, problems: Iterable[escape.Problem]) -> bool:
        """Report ``problems`` (aiplat.devices.escape) under ``at``; whether there were any."""
        n = len(self.out)
        for p in problems:
            self.out.append(finding(self.file, device, f"{at}.{p.field}", p.message, p.hint,
                                    severity=p.severity, check="host-check", escape=True))
        return len(self.out) > n

    def real(self, path: object) -> str | None:
        """The host's real path for an absolute ``path`` (None without a host)."""
        if self.host is None or not isinstance(path, str) or not path.startswith("/"):
            return None
        return self.host.real(path)


def check_text(text: str, file: str, host: Host | None = None) -> tuple[
        dict[str, Any] | None, list[Finding]]:
    """Decode ``text`` as the reference loader does, then every rule (see the module doc):
    the decoded data (None if nothing decodes) and the findings."""
    d = cdiyaml.decode_spec(text)
    out = [finding(file, "", "(decode)", e, "fix the YAML/JSON; field names are "
                   "case-sensitive, each key appears once") for e in d.errors]
    if d.ignored_from is not None:
        out.append(finding(file, "", f"(document 2, line {d.ignored_from})",
                           "ignored: the CDI loader reads only the first YAML document, so "
                           "the devices after it do not exist for the runtime",
                           "put each spec in its own file", severity="warning"))
    if d.doc is None:
        if not any(f.severity == "error" for f in out):
            out.append(finding(file, "", "(document)", "no Spec data"))
        return None, out
    return d.doc, out + validate_spec(d.doc, file, host)


def validate_text(text: str, file: str, host: Host | None = None) -> list[Finding]:
    return check_text(text, file, host)[1]


def validate_spec(doc: object, file: str, host: Host | None = None) -> list[Finding]:
    """Every rule for one spec document. ``host=None`` skips the host checks."""
    c = _Ctx(file, host)
    if not isinstance(doc, Mapping):
        c.add("", "(document)", "a CDI spec must be a mapping (cdiVersion, kind, devices)",
              "start from `aiplat cdi generate`")
        return c.out
    if _unusable_text(c, doc):
        c.host = None  # the host's file functions refuse a NUL or a lone surrogate
    _unknown(c, "", "", doc, "spec")
    _version(c, doc)
    kind = doc.get("kind")
    if not isinstance(kind, str) or not kind:
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
        _device(c, i, d, seen)
    common = doc.get("containerEdits")
    if common is not None:
        if isinstance(common, Mapping):
            _edits(c, "", "containerEdits", common)
        else:
            c.add("", "containerEdits", "must be a mapping")
    _leaks(c, doc)
    hooks = _hooks(doc)
    for w, _, problem in escape.link_problems([(at, h) for _, at, h in hooks]):
        c.escapes(hooks[w][0], hooks[w][1], [problem])
    mounts = [(at, m, c.real(m.get("hostPath"))) for at, m in _mounts(doc)]
    # a host object without link() (a test's stand-in) has no view of the host's links
    link = getattr(c.host, "link", None) if c.host is not None else None
    for w, problem in escape.mount_link_problems([(at, h) for _, at, h in hooks], mounts,
                                                 link):
        c.escapes(hooks[w][0], hooks[w][1], [problem])
    return c.out


def _mounts(doc: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Every mount of the spec, its devices' and the spec-level edits': (at, mount)."""
    edits = [(f"devices[{i}].containerEdits", d.get("containerEdits"))
             for i, d in enumerate(_list(doc.get("devices"))) if isinstance(d, Mapping)]
    edits.append(("containerEdits", doc.get("containerEdits")))
    return [(f"{at}.mounts[{j}]", m) for at, e in edits if isinstance(e, Mapping)
            for j, m in enumerate(_list(e.get("mounts"))) if isinstance(m, Mapping)]


def _hooks(doc: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """Every hook of the spec, its devices' and the spec-level edits': (device, at, hook)."""
    edits: list[tuple[str, str, object]] = []
    for i, d in enumerate(_list(doc.get("devices"))):
        if isinstance(d, Mapping):
            name = d.get("name")
            edits.append((name if isinstance(name, str) and name else f"#{i}",
                          f"devices[{i}].containerEdits", d.get("containerEdits")))
    edits.append(("", "containerEdits", doc.get("containerEdits")))
    return [(dev, f"{at}.hooks[{j}]", h) for dev, at, e in edits if isinstance(e, Mapping)
            for j, h in enumerate(_list(e.get("hooks"))) if isinstance(h, Mapping)]


_SURROGATE = re.compile("[\ud800-\udfff]")


def _strings(v: object, at: str) -> Iterator[tuple[str, str]]:
    """Every string of ``v`` (keys too, under the mapping's field) with its field."""
    if isinstance(v, str):
        yield at, v
    elif isinstance(v, Mapping):
        for k, x in v.items():
            yield from _strings(k, at)
            yield from _strings(x, f"{at}.{k}".lstrip(".") if isinstance(k, str) else at)
    elif isinstance(v, list):
        for j, x in enumerate(v):
            yield from _strings(x, f"{at}[{j}]")


def _unusable_text(c: _Ctx, doc: Mapping[str, Any]) -> bool:
    """A NUL or a surrogate anywhere in the spec: each an error naming its field; whether
    there was one. yaml.v3 refuses every surrogate escape, a pair too ("found invalid
    Unicode character escape code"), so that is the reference loader's verdict; it takes a
    NUL, which no path, name or argument can hold: Go's exec and open refuse it, a C runtime
    (crun) ends the string there (/bin/sh\\0/nvidia-cdi-hook runs /bin/sh), so that hands
    the host over."""
    devices = doc.get("devices")
    names = [d.get("name") if isinstance(d, Mapping) else None
             for d in (devices if isinstance(devices, list) else [])]
    n = len(c.out)
    for at, text in _strings(doc, ""):
        m = re.match(r"devices\[([0-9]+)\]", at)
        dev = names[int(m.group(1))] if m else ""
        dev, fld = dev if isinstance(dev, str) else "", at
        if (sur := _SURROGATE.search(text)) is not None:
            c.add(dev, fld or "(document)", f"holds a surrogate escape (\\u{ord(sur.group()):04x})"
                  ": the reference loader refuses it, a JSON pair for one character too "
                  "(yaml.v3: invalid Unicode character escape code)",
                  "write the character itself in UTF-8, or remove it")
        if "\0" in text:
            c.out.append(finding(c.file, dev, fld or "(document)", "holds a NUL character "
                                 "(\\x00): no path, name or argument can hold one; runc "
                                 "refuses it, a C runtime (crun) cuts the string there "
                                 "(/bin/sh\\x00/nvidia-cdi-hook runs /bin/sh)",
                                 "remove the \\u0000 (or \\0) escape", check="host-check",
                                 escape=True))
    return len(c.out) > n


def _version(c: _Ctx, doc: Mapping[str, Any]) -> None:
    raw = doc.get("cdiVersion")
    version = normal_version(raw)
    if raw in (None, ""):
        c.add("", "cdiVersion", "missing", f"set cdiVersion: \"{required_version(doc)[0]}\"")
    elif version is None:
        c.add("", "cdiVersion", f"'{raw}' is not a released CDI version",
              "use one of " + ", ".join(VERSIONS[2:]))
    else:
        need, why = required_version(doc)
        if _vkey(version) < _vkey(need):
            c.add("", "cdiVersion", f"{raw} is too low: {why} needs {need}",
                  f"set cdiVersion: {need}, or drop that field")


def _device(c: _Ctx, i: int, d: object, seen: set[str]) -> None:
    if not isinstance(d, Mapping):
        c.add(f"#{i}", f"devices[{i}]", "must be a mapping with name and containerEdits")
        return
    name = d.get("name")
    label = name if isinstance(name, str) and name else f"#{i}"
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
    if not isinstance(edits, Mapping) or _empty_edits(edits):
        c.add(label, f"devices[{i}].containerEdits", "a device needs non-empty containerEdits",
              "add deviceNodes, mounts or env")
    if isinstance(edits, Mapping):
        _edits(c, label, f"devices[{i}].containerEdits", edits)


def _empty_edits(e: Mapping[str, Any]) -> bool:
    """pkg/cdi container-edits.go isEmpty: empty lists count as absent, intelRdt never."""
    return e.get("intelRdt") is None and not any(
        e.get(k) for k in ("env", "deviceNodes", "hooks", "mounts", "additionalGids",
                           "netDevices"))


def _unknown(c: _Ctx, dev: str, at: str, obj: Mapping[str, Any], what: str) -> None:
    for k in obj:
        if k not in _KEYS[what]:
            near = [x for x in _KEYS[what] if x.lower() == str(k).lower()]
            hint = f"did you mean '{near[0]}'? (names are case-sensitive)" if near else \
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


def env_ok(v: object) -> bool:
    """pkg/cdi ValidateEnv: any text with a '=' after at least one character."""
    return isinstance(v, str) and v.find("=") > 0


def _env(c: _Ctx, dev: str, at: str, env: object) -> None:
    for j, v in enumerate(_list(env)):
        if not env_ok(v):
            c.add(dev, f"{at}[{j}]", f"'{v}' is not NAME=value", "write it as NAME=value")


def _entries(c: _Ctx, dev: str, at: str, items: object, what: str) -> list[
        tuple[str, Mapping[str, Any]]]:
    out = []
    for j, x in enumerate(_list(items)):
        if isinstance(x, Mapping):
            out.append((f"{at}[{j}]", x))
        else:  # a null entry: the reference loader errors (or, for deviceNodes, panics)
            c.add(dev, f"{at}[{j}]", f"must be a mapping ({what})")
    return out


def _edits(c: _Ctx, dev: str, at: str, e: Mapping[str, Any]) -> None:
    _unknown(c, dev, at, e, "containerEdits")
    _env(c, dev, f"{at}.env", e.get("env"))
    for where, n in _entries(c, dev, f"{at}.deviceNodes", e.get("deviceNodes"), "path"):
        _node(c, dev, where, n)
    for where, m in _entries(c, dev, f"{at}.mounts", e.get("mounts"), "hostPath, "
                             "containerPath"):
        _mount(c, dev, where, m)
    for where, h in _entries(c, dev, f"{at}.hooks", e.get("hooks"), "hookName, path"):
        _hook(c, dev, where, h)
    _net_devices(c, dev, f"{at}.netDevices", e.get("netDevices"))
    rdt = e.get("intelRdt")
    if rdt is not None:
        if isinstance(rdt, Mapping):
            _unknown(c, dev, f"{at}.intelRdt", rdt, "intelRdt")
            if not _closid_ok(rdt.get("closID", "")):
                c.add(dev, f"{at}.intelRdt.closID",
                      f"'{rdt.get('closID')}' is not a valid CLOS name: a file name ('/' for "
                      "the root CLOS), no '/' or newline, not '.' or '..'")
        else:
            c.add(dev, f"{at}.intelRdt", "must be a mapping (closID, l3CacheSchema, ...)")
    for j, g in enumerate(_list(e.get("additionalGids"))):
        if not _uint32(g):
            c.add(dev, f"{at}.additionalGids[{j}]", f"'{g}' is not a uint32 group id")


def _closid_ok(c: object) -> bool:
    """pkg/cdi IntelRdt.Validate: a valid Linux file name, or '/' for the root CLOS."""
    if not isinstance(c, str):
        return False
    return c == "/" or not (len(c.encode()) >= 4096 or c in (".", "..") or "/" in c
                            or "\n" in c)


def _net_devices(c: _Ctx, dev: str, at: str, items: object) -> None:
    """pkg/cdi ValidateNetDevices: both names set, each unique across the list."""
    hosts: set[str] = set()
    names: set[str] = set()
    for where, nd in _entries(c, dev, at, items, "hostInterfaceName, name"):
        _unknown(c, dev, where, nd, "netDevices")
        host_name, name = nd.get("hostInterfaceName"), nd.get("name")
        if not host_name or not name:
            c.add(dev, where, "needs hostInterfaceName and name")
            continue
        if host_name in hosts:
            c.add(dev, f"{where}.hostInterfaceName", f"'{host_name}' is given twice",
                  "move each host interface into the container once")
        if name in names:
            c.add(dev, f"{where}.name", f"'{name}' is given twice",
                  "give each interface a unique name in the container")
        hosts.add(str(host_name))
        names.add(str(name))


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _uint32(v: object) -> bool:
    return _int(v) and 0 <= v <= MAX_UINT32  # type: ignore[operator]


def permissions_ok(p: object) -> bool:
    """pkg/cdi DeviceNode.Validate: '', 'none', or letters of 'rwm' (repeats allowed)."""
    return isinstance(p, str) and (p in ("", NO_PERMISSIONS) or not set(p) - set("rwm"))


def _node(c: _Ctx, dev: str, at: str, n: Mapping[str, Any]) -> None:
    _unknown(c, dev, at, n, "deviceNodes")
    path = n.get("path")
    if not isinstance(path, str) or not path:
        c.add(dev, f"{at}.path", "missing", "set path: /dev/...")
        return
    if not path.startswith("/"):
        c.strict(dev, f"{at}.path", f"'{path}' is not an absolute container path: the "
                 "runtime resolves it against its own working directory",
                 "use e.g. /dev/nvidia0")
    host_path = n.get("hostPath") or path
    typ = n.get("type")
    if typ not in (None, "", "c", "b", "u", "p"):
        c.add(dev, f"{at}.type", f"'{typ}' is not a device type", "use c, b, u or p")
    for k in ("major", "minor"):  # -1 would be a cgroup wildcard
        if k in n and (not _int(n[k]) or n[k] < 0):
            c.add(dev, f"{at}.{k}", f"'{n[k]}' is not a non-negative integer")
    for k in ("uid", "gid", "fileMode"):
        if n.get(k) is not None and not _uint32(n[k]):
            c.add(dev, f"{at}.{k}", f"'{n[k]}' is not a uint32")
    perms = n.get("permissions")
    if perms is not None and not permissions_ok(perms):
        c.add(dev, f"{at}.permissions", f"'{perms}' is not '{NO_PERMISSIONS}' or letters of "
              "'rwm'", "use e.g. rw or rwm")
    fact = c.host.node(host_path) if c.host is not None and isinstance(host_path, str) \
        else None
    seen = escape.HostNode(fact.type, fact.major, fact.minor, fact.driver) if fact else None
    c.escapes(dev, at, escape.node_problems(n, seen))
    if c.host is not None and isinstance(host_path, str):
        _node_on_host(c, dev, at, n, host_path, fact=fact)


def _node_on_host(c: _Ctx, dev: str, at: str, n: Mapping[str, Any], host_path: str, *,
                  fact: NodeFact | None) -> None:
    assert c.host is not None
    typ = n.get("type")
    if fact is None:
        what = "is not a device node" if c.host.exists(host_path) else "does not exist"
        c.strict(dev, f"{at}.hostPath" if n.get("hostPath") else f"{at}.path",
                 f"host path {host_path} {what}",
                 "load the driver / create the node, or regenerate the spec")
        return
    if typ in ("c", "b") and typ != fact.type:
        c.strict(dev, f"{at}.type", f"spec says '{typ}', host {host_path} is '{fact.type}'",
                 f"set type: {fact.type}")
    if _int(n.get("major")) and _int(n.get("minor")) and (n["major"], n["minor"]) != (
            fact.major, fact.minor):
        c.strict(dev, f"{at}.major/minor",
                 f"spec says {n['major']}:{n['minor']}, host {host_path} is "
                 f"{fact.major}:{fact.minor}",
                 f"set major: {fact.major}, minor: {fact.minor} (or regenerate the spec)")
    fm = n.get("fileMode")
    if fm is None and fact.mode & 0o666 != 0o666:
        c.strict(dev, f"{at}.fileMode",
                 f"not set: runtimes create the node 0666, the host's {host_path} is "
                 f"0{fact.mode & 0o777:o}", f"set fileMode: {fact.mode & 0o777}", "warning")
    if isinstance(fm, int) and (fm & 0o777) & ~fact.mode & 0o777:
        c.strict(dev, f"{at}.fileMode",
                 f"{fm & 0o777:o} grants more than the host node's {fact.mode & 0o777:o}",
                 f"use fileMode {fact.mode & 0o777} (0{fact.mode & 0o777:o})", "warning")


def _mount(c: _Ctx, dev: str, at: str, m: Mapping[str, Any]) -> None:
    """pkg/cdi Mount.Validate: both paths non-empty; the rest is host-check."""
    _unknown(c, dev, at, m, "mounts")
    hp, cp = m.get("hostPath"), m.get("containerPath")
    if not isinstance(cp, str) or not cp:
        c.add(dev, f"{at}.containerPath", "missing")
    elif not cp.startswith("/"):
        c.strict(dev, f"{at}.containerPath", f"'{cp}' is not an absolute path: runc refuses "
                 "or resolves it in the container's working directory",
                 "give the absolute path in the container")
    if not isinstance(hp, str) or not hp:
        c.add(dev, f"{at}.hostPath", "missing")
        return
    opts = m.get("options")
    if opts is not None and (not isinstance(opts, list) or
                             not all(isinstance(o, str) for o in opts)):
        c.add(dev, f"{at}.options", "must be a list of strings")
        opts = []
    opts = opts or []
    bind = escape.is_bind(m)
    if c.escapes(dev, at, escape.mount_problems(m, c.real(hp) if bind else None)):
        return
    if bind and not escape.read_only(opts):
        c.strict(dev, f"{at}.options", f"bind mount of {hp} is writable in the container",
                 "add 'ro' (aiplat generates ro,nosuid,nodev,bind)", "warning")
    if c.host is not None and hp.startswith("/") and bind and not c.host.exists(hp):
        c.strict(dev, f"{at}.hostPath", f"host path {hp} does not exist",
                 "install the driver files, or regenerate the spec")


def _hook(c: _Ctx, dev: str, at: str, h: Mapping[str, Any]) -> None:
    """pkg/cdi Hook.Validate: a known name, a non-empty path, NAME=value env."""
    _unknown(c, dev, at, h, "hooks")
    name = h.get("hookName")
    if name not in HOOK_NAMES:
        c.add(dev, f"{at}.hookName", f"'{name}' is not a hook name",
              "use one of " + ", ".join(HOOK_NAMES))
    _env(c, dev, f"{at}.env", h.get("env"))
    timeout = h.get("timeout")
    if timeout is not None and (not _int(timeout) or timeout <= 0):
        # runtime-spec config.md (hooks): "If set, timeout MUST be greater than zero."
        c.strict(dev, f"{at}.timeout", f"{timeout} is not a positive number of seconds: the "
                 "OCI runtime refuses the container", "drop timeout or set it above 0")
    path = h.get("path")
    if not isinstance(path, str) or not path:
        c.add(dev, f"{at}.path", "missing", "give the absolute path of the hook binary")
    elif not path.startswith("/"):
        c.strict(dev, f"{at}.path", f"hook path '{path}' is not absolute",
                 "give the absolute path of the hook binary")
    elif c.host is not None and not c.host.executable(path):
        c.strict(dev, f"{at}.path", f"hook {path} is missing or not executable on the host",
                 f"install it or chmod +x {path}")
    c.escapes(dev, at, escape.hook_problems(h, c.real(path)))
    if isinstance(path, str) and path.startswith("/"):
        writer = c.host.replaceable(path) if c.host is not None else None
        place = escape.replaceable_hook(path, writer, asked=c.host is not None)
        c.escapes(dev, at, [place] if place else [])


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
    owners = _Owners.of(doc)
    if name == "all" or name not in owners.devs:
        return {}
    return {hp: o for hp, o in owners.owner.items() if not owners.related(name, o)}


@dataclass(frozen=True)
class _Owners:
    """Each device's host nodes and each node's owner, computed once per spec (per device,
    as it once was, a spec of a few thousand devices took minutes)."""

    devs: dict[str, set[str]]
    owner: dict[str, str]

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> _Owners:
        devs: dict[str, set[str]] = {}
        for d in _list(doc.get("devices")):
            if isinstance(d, Mapping):
                devs[str(d.get("name"))] = {str(n.get("hostPath") or n.get("path"))
                                            for n in _nodes_of(d.get("containerEdits"))}
        order = {n: i for i, n in enumerate(devs)}
        owner: dict[str, str] = {}
        for n in sorted(devs, key=lambda x: (len(devs[x]), order[x])):
            if n != "all":
                for hp in devs[n]:
                    owner.setdefault(hp, n)
        return cls(devs, owner)

    def related(self, a: str, b: str) -> bool:
        return a == b or _mig_style(a) or _mig_style(b) or self.devs[a] == self.devs[b]

    def foreign(self, name: str, hp: str) -> str | None:
        """The other device that owns ``hp``, when ``name`` must not have it."""
        o = self.owner.get(hp)
        if name == "all" or name not in self.devs or o is None or self.related(name, o):
            return None
        return o


def _mount_leaks(c: _Ctx, dev: str, at: str, edits: object) -> None:
    """A bind mount of /dev (or of a node under it) shows host device nodes beside the
    ones deviceNodes declares: aiplat cdi verify finds them in the container."""
    if not isinstance(edits, Mapping):
        return
    for j, m in enumerate(_list(edits.get("mounts"))):
        hp = m.get("hostPath") if isinstance(m, Mapping) else None
        if not isinstance(hp, str) or not hp.startswith("/") or not escape.is_bind(m):
            continue
        is_node = c.host is not None and c.host.node(hp) is not None
        where = escape.normal(hp)
        if where == "/dev" or where.startswith("/dev/") or is_node:
            c.strict(dev, f"{at}.mounts[{j}].hostPath",
                     f"bind mount of {hp} puts host device nodes in the container outside "
                     "deviceNodes", "declare the nodes the device needs in deviceNodes")


def _wider_common_grants(c: _Ctx, doc: Mapping[str, Any]) -> None:
    """A spec-level node granting more than a device's own entry for the same node: the
    runtime adds both rules and the container gets the wider access."""
    def perms(n: Mapping[str, Any]) -> str:
        p = str(n.get("permissions") or "rwm")
        return "" if p == NO_PERMISSIONS else p

    common = {str(n.get("hostPath") or n.get("path")): perms(n)
              for n in _nodes_of(doc.get("containerEdits"))}
    for d in _list(doc.get("devices")):
        if not isinstance(d, Mapping):
            continue
        for n in _nodes_of(d.get("containerEdits")):
            hp = str(n.get("hostPath") or n.get("path"))
            own = perms(n)
            wide = common.get(hp)
            if wide is not None and set(wide) - set(own):
                c.strict(str(d.get("name")), "containerEdits.deviceNodes",
                         f"{hp} has permissions '{own}' here but the spec-level "
                         f"containerEdits grant '{wide}' on it: the container gets '{wide}'",
                         "drop the node from the spec-level edits, or give it the same "
                         "permissions")


def _leaks(c: _Ctx, doc: Mapping[str, Any]) -> None:
    _mount_leaks(c, "", "containerEdits", doc.get("containerEdits"))
    _wider_common_grants(c, doc)
    for i, d in enumerate(_list(doc.get("devices"))):
        if isinstance(d, Mapping):
            _mount_leaks(c, str(d.get("name")), f"devices[{i}].containerEdits",
                         d.get("containerEdits"))
    owners = _Owners.of(doc)
    for d in _list(doc.get("devices")):
        if not isinstance(d, Mapping) or not isinstance(d.get("name"), str):
            continue
        for n in _nodes_of(d.get("containerEdits")):
            hp = str(n.get("hostPath") or n.get("path"))
            if (other := owners.foreign(d["name"], hp)) is not None:
                c.strict(d["name"], "containerEdits.deviceNodes",
                         f"host node {hp} belongs to device '{other}': a container "
                         f"asking for '{d['name']}' would get that device too",
                         "remove the node from this device, or move it to the spec-level "
                         "containerEdits if every device needs it")


def validate_set(docs: Sequence[tuple[str, object]], host: Host | None = None
                 ) -> list[Finding]:
    """Conflicts across files, in loading order (``/etc/cdi`` first, ``/var/run/cdi`` last).

    The reference cache resolves a device defined twice by directory priority: the file in the
    later directory wins; two definitions in the same directory make the device unresolvable.
    A container may get devices of several specs, so a hook is also judged against the links
    and (with ``host``) the binds of every file.
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
                    out.append(finding(file, d["name"], "name",
                                       f"{q} is also defined in {prev} in the same directory: "
                                       "the runtime cannot resolve it",
                                       "keep the device in one file"))
                else:
                    out.append(finding(file, d["name"], "name",
                                       f"{q} is also defined in {prev}; this file ({here}) "
                                       "wins", "remove one definition", severity="warning"))
            where[q] = (file, here)
    return out + _links_across(docs) + _mounts_across(docs, host)


def _links_across(docs: Sequence[tuple[str, object]]) -> list[Finding]:
    """A hook acting through a link that another file's hook makes (escape.link_problems):
    a container may get devices of several specs. What one file shows alone is that file's
    finding (validate_spec), not repeated here."""
    hooks = [(file, dev, at, h) for file, doc in docs if isinstance(doc, Mapping)
             for dev, at, h in _hooks(doc)]
    alone: set[tuple[str, str, str]] = set()
    for file, doc in docs:
        if isinstance(doc, Mapping):
            own = _hooks(doc)
            alone |= {(file, own[w][1], p.field)
                      for w, _, p in escape.link_problems([(at, h) for _, at, h in own])}
    out = []
    for w, _, p in escape.link_problems([(f"{file}: {at}", h) for file, _, at, h in hooks]):
        file, dev, at, _ = hooks[w]
        if (file, at, p.field) not in alone:
            out.append(finding(file, dev, f"{at}.{p.field}", p.message, p.hint,
                               severity=p.severity, check="host-check", escape=True))
    return out


def _mounts_across(docs: Sequence[tuple[str, object]], host: Host | None) -> list[Finding]:
    """A host-side chmod through a host link under another file's bind at that path
    (escape.mount_link_problems; the red team's seventh round: a bind in b.json replaces
    a.json's harmless one when b's device is applied last). Only with a host view; what one
    file shows alone is its own finding (validate_spec)."""
    link = getattr(host, "link", None) if host is not None else None
    if link is None:
        return []
    # (a spec with a NUL or a lone surrogate is its own error, and no host path of it is asked)
    specs = [(file, doc) for file, doc in docs if isinstance(doc, Mapping)
             and not _unusable_text(_Ctx(file, None), doc)]

    def real(m: Mapping[str, Any]) -> str | None:
        hp = m.get("hostPath")
        return host.real(hp) if host is not None and isinstance(hp, str) \
            and hp.startswith("/") else None

    hooks = [(file, dev, at, h) for file, doc in specs for dev, at, h in _hooks(doc)]
    mounts = [(f"{file}: {at}", m, real(m)) for file, doc in specs for at, m in _mounts(doc)]
    alone: set[tuple[str, str, str]] = set()
    for file, doc in specs:
        own = _hooks(doc)
        alone |= {(file, own[w][1], p.field) for w, p in escape.mount_link_problems(
            [(at, h) for _, at, h in own], [(at, m, real(m)) for at, m in _mounts(doc)], link)}
    out = []
    for w, p in escape.mount_link_problems([(f"{f}: {at}", h) for f, _, at, h in hooks],
                                           mounts, link):
        file, dev, at, _ = hooks[w]
        if (file, at, p.field) not in alone:
            out.append(finding(file, dev, f"{at}.{p.field}", p.message, p.hint,
                               severity=p.severity, check="host-check", escape=True))
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
        raise CdiSpecError(f"kind '{shown(kind)}': " + shown("; ".join(problems)))
    devs = list(devices)
    if not devs:
        raise CdiSpecError(f"kind '{shown(kind)}': no devices found")
    names = [d.name for d in devs]
    bad = [n for n in names if not device_name_ok(n)]
    if bad or len(set(names)) != len(names):
        raise CdiSpecError(f"kind '{shown(kind)}': invalid or duplicate device names "
                           f"{shown(str(bad or names))}")
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


def loads(text: str) -> dict[str, Any] | None:
    """A spec file's data as the reference loader reads it (``.json`` or YAML alike: both
    go through yaml.v3); None when nothing usable decodes."""
    return cdiyaml.decode_spec(text).doc
