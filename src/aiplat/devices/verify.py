"""Proof in a real container that a CDI spec binds exactly what it claims.

For every device of a spec one Podman container is started with ``--device kind=name`` from
a tiny local image (busybox-static, imported offline) and a probe script prints, in one go,
every entry under ``/dev`` (type, major, minor, mode, owner), the environment, the mount
table and, on cgroup v1, the device cgroup's allow list. A container without any device is
the baseline: it shows the runtime's default ``/dev`` and must show no accelerator.

Comparison is pure (``check_device``, ``check_baseline``) against the spec *and* the host:
a node must exist in the container with the host node's type and major:minor (a spec that
lies about them is caught even though the runtime happily creates the lie), with the mode the
spec asks for and never more than the host grants; the env and mounts must be there and the
mounts read-only; nodes of other (unrelated) devices must be absent; and ``/dev`` must hold
nothing beyond the baseline and the injected nodes. One container per device keeps each
proof independent; the probe batches every check into that one start (~0.3 s each).

Leaks outside ``/dev`` count too: the probe also lists every character or block node under
every other mount point (a spec that binds the host's ``/dev`` elsewhere, or another
device's node at some path, shows there). And the device access the container really has
is compared with exactly what the spec grants that device (its own ``permissions`` for the
node, not a wider grant the spec-level edits add for the same node): on cgroup v1 from the
container's ``devices.list``, and on any cgroup version from the container's OCI config
(``linux.resources.devices``, the rules runc turns into cgroup v2's eBPF device filter).

Podman reads specs only from its CDI directories (4.x has no per-call spec dir), so a spec
outside them is staged for the run as ``<stage_dir>/aiplat-verify-<pid>-<name>.json`` (the
dynamic directory, which wins over ``/etc/cdi``) and removed afterwards.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiplat.devices import cdi
from aiplat.devices.cdi import NodeFact
from aiplat.devices.host import DeviceError, RealHost, read_spec, runtime_version

_STAT = "-exec stat -c '%n|%f|%t|%T|%a|%u|%g' {} +"
PROBE = (
    f"echo @@dev; find /dev -mindepth 1 {_STAT}; "
    "echo @@env; env; echo @@mounts; cat /proc/self/mountinfo; "
    "echo @@cgroup; cat /sys/fs/cgroup/devices/devices.list 2>/dev/null; "
    # device nodes under every other mount point (-xdev: each mount scanned once)
    "echo @@mntdev; while read -r _id _p _mm _root m _rest; do case \"$m\" in "
    "/dev|/dev/*|/proc|/proc/*|/sys|/sys/*) ;; "
    f"*) find \"$m\" -xdev \\( -type c -o -type b \\) {_STAT} 2>/dev/null;; esac; "
    "done < /proc/self/mountinfo; echo @@end"
)
APPLETS = ("sh", "find", "stat", "cat", "env", "ls")
ACCEL_PATTERNS = (r"^/dev/nvidia", r"^/dev/dri(/|$)", r"^/dev/kfd$", r"^/dev/infiniband(/|$)",
                  r"^/dev/accel(/|$)", r"^/dev/vfio/\d", r"^/dev/davinci", r"^/dev/neuron")


@dataclass(frozen=True)
class PodmanOptions:
    """How to start containers; the defaults suit hosts where crun fails and rlimits must be
    explicit. Every field is a CLI option (``--runtime``, ``--ulimit``, ``--podman-arg``)."""

    podman: str = "podman"
    runtime: str | None = "runc"
    ulimits: tuple[str, ...] = ("nofile=1024:1024", "nproc=1024:1024")
    extra: tuple[str, ...] = ()
    image: str = "localhost/aiplat-cdi-probe:1"
    stage_dir: str = "/var/run/cdi"
    busybox: str = "/bin/busybox"
    allow_rw: tuple[str, ...] = ()  # container paths whose mounts may be writable

    def run_args(self) -> list[str]:
        args = [self.podman, "run", "--rm", "--network", "none", "--pull", "never"]
        if self.runtime:
            args += ["--runtime", self.runtime]
        for u in self.ulimits:
            args += ["--ulimit", u]
        return args + list(self.extra)


# ---------------------------------------------------------------------------- observation


@dataclass(frozen=True)
class Entry:
    path: str
    type: str  # c b d l f p s
    major: int
    minor: int
    mode: int
    uid: int
    gid: int


@dataclass
class Observed:
    entries: dict[str, Entry] = field(default_factory=dict)
    env: set[str] = field(default_factory=set)
    mounts: dict[str, set[str]] = field(default_factory=dict)  # mount point -> options
    cgroup: list[str] = field(default_factory=list)  # v1 devices.list
    mounted_nodes: dict[str, Entry] = field(default_factory=dict)  # nodes outside /dev
    oci_devices: list[str] = field(default_factory=list)  # OCI rules, as devices.list lines


_FMT = {0o020000: "c", 0o060000: "b", 0o040000: "d", 0o120000: "l", 0o100000: "f",
        0o010000: "p", 0o140000: "s"}


def _entry(line: str) -> Entry | None:
    parts = line.split("|")
    if len(parts) != 7:
        return None
    try:
        raw = int(parts[1], 16)
        return Entry(parts[0], _FMT.get(raw & 0o170000, "?"), int(parts[2], 16),
                     int(parts[3], 16), int(parts[4], 8), int(parts[5]), int(parts[6]))
    except ValueError:
        return None


def oci_device_rules(config: Mapping[str, Any]) -> list[str]:
    """``linux.resources.devices`` of an OCI config as devices.list-style lines, in order;
    a deny rule is kept as ``!c 1:3 rwm`` (runc's cgroup v2 eBPF filter and its v1 writer
    both apply the list in order, later rules winning)."""
    linux = config.get("linux") if isinstance(config.get("linux"), Mapping) else {}
    res = linux.get("resources") if isinstance(linux, Mapping) else None
    rules = res.get("devices") if isinstance(res, Mapping) else None
    out = []
    for r in rules if isinstance(rules, list) else []:
        if not isinstance(r, Mapping):
            continue
        typ = r.get("type") or "a"
        major = "*" if r.get("major") is None or r.get("major") == -1 else r["major"]
        minor = "*" if r.get("minor") is None or r.get("minor") == -1 else r["minor"]
        access = r.get("access") or "rwm"
        out.append(f"{'' if r.get('allow') else '!'}{typ} {major}:{minor} {access}")
    return out


def parse_probe(text: str) -> Observed:
    obs = Observed()
    section = ""
    for line in text.splitlines():
        if line.startswith("@@"):
            section = line[2:]
            continue
        if section in ("dev", "mntdev"):
            e = _entry(line)
            if e is not None:
                (obs.entries if section == "dev" else obs.mounted_nodes)[e.path] = e
        elif section == "env":
            obs.env.add(line)
        elif section == "mounts":
            f = line.split()
            if len(f) > 5:
                obs.mounts[f[4].replace("\\040", " ")] = set(f[5].split(","))
        elif section == "cgroup" and line.strip():
            obs.cgroup.append(line.strip())
    return obs


# ---------------------------------------------------------------------------- pure checks


@dataclass(frozen=True)
class Check:
    ok: bool
    what: str
    evidence: str


@dataclass
class DeviceResult:
    device: str  # qualified name, or "(no device)"
    checks: list[Check] = field(default_factory=list)
    seconds: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and all(c.ok for c in self.checks)

    def reason(self) -> str:
        if self.error:
            return self.error
        bad = [c for c in self.checks if not c.ok]
        if bad:
            return "; ".join(f"{c.what}: {c.evidence}" for c in bad)
        nodes = [f"{c.what[5:]} {c.evidence.split(' (host')[0]}" for c in self.checks
                 if c.what.startswith("node ")]
        if not nodes:
            return "; ".join(c.evidence for c in self.checks)
        rest = len(self.checks) - len(nodes)
        return "; ".join([*nodes, f"{rest} more check{'s' if rest != 1 else ''} passed"])

    def as_dict(self) -> dict[str, Any]:
        return {"device": self.device, "ok": self.ok, "seconds": round(self.seconds, 3),
                "error": self.error,
                "checks": [{"ok": c.ok, "what": c.what, "evidence": c.evidence}
                           for c in self.checks]}


def _edits_of(doc: Mapping[str, Any], name: str) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    if isinstance(doc.get("containerEdits"), Mapping):
        out.append(doc["containerEdits"])
    for d in doc.get("devices", []):
        if isinstance(d, Mapping) and d.get("name") == name and isinstance(
                d.get("containerEdits"), Mapping):
            out.append(d["containerEdits"])
    return out


def _fmt(x: Entry | NodeFact) -> str:
    return f"{x.type} {x.major}:{x.minor} 0{x.mode & 0o7777:o} {x.uid}:{x.gid}"


def _cg_allows(cgroup: Sequence[str], typ: str, major: int, minor: int) -> set[str]:
    """The access a rule list gives one node: rules in order, a deny (``!``) taking back."""
    perms: set[str] = set()
    for line in cgroup:
        m = re.match(r"^(!?)([abc]) (\*|\d+):(\*|\d+) ([rwm]+)$", line)
        if not m:
            continue
        deny, t, ma, mi, p = m.groups()
        if t in ("a", typ) and ma in ("*", str(major)) and mi in ("*", str(minor)):
            perms = perms - set(p) if deny else perms | set(p)
    return perms


CGROUP_V1 = "device cgroup v1 (devices.list)"
OCI_RULES = "device rules (OCI linux.resources.devices; cgroup v2 enforces these)"


def granted(doc: Mapping[str, Any], name: str,
            host: Mapping[str, NodeFact | None]) -> dict[tuple[str, int, int], str]:
    """What the spec grants a container asking for ``name``, per host node: the device's
    own ``permissions`` for it, else the spec-level one ('rwm' when unset, '' for 'none')."""
    out: dict[tuple[str, int, int], str] = {}
    edits = _edits_of(doc, name)  # spec-level first, the device's own last (it decides)
    for e in edits:
        for n in e.get("deviceNodes", []) or []:
            if not isinstance(n, Mapping):
                continue
            h = host.get(str(n.get("hostPath") or n.get("path")))
            if h is None:
                continue
            p = n.get("permissions") or "rwm"
            out[(h.type, h.major, h.minor)] = "" if p == cdi.NO_PERMISSIONS else p
    return out


def _access_checks(label: str, rules: Sequence[str], base_rules: Sequence[str],
                   want: Mapping[tuple[str, int, int], str]) -> list[Check]:
    """The rule list gives each spec node exactly its grant, and nothing beyond the
    baseline container's rules besides."""
    problems = []
    for (typ, major, minor), perms in sorted(want.items()):
        have = _cg_allows(rules, typ, major, minor)
        base = _cg_allows(base_rules, typ, major, minor)
        if have - set(perms) - base:
            problems.append(f"{typ} {major}:{minor} allows '{''.join(sorted(have))}', the spec "
                            f"grants this device '{''.join(sorted(perms)) or 'none'}'")
        elif set(perms) - have:
            problems.append(f"{typ} {major}:{minor} allows only '{''.join(sorted(have))}', "
                            f"the spec grants '{''.join(sorted(perms))}'")
    nums = {(t, str(a), str(b)) for t, a, b in want}
    for line in rules:
        m = re.match(r"^([abc]) (\*|\d+):(\*|\d+) ([rwm]+)$", line)
        if m and line not in base_rules and (m.group(1), m.group(2), m.group(3)) not in nums:
            problems.append(f"'{line}' is not granted by the spec")
    return [Check(not problems, label, "; ".join(problems) if problems
                  else f"{len(rules)} rules: the spec's {len(want)} nodes get exactly their "
                       "permissions")]


def check_device(doc: Mapping[str, Any], name: str, obs: Observed, baseline: Observed,
                 host: Mapping[str, NodeFact | None], *,
                 allow_rw: Sequence[str] = ()) -> list[Check]:
    """Everything a container given ``name`` must and must not show. ``host`` maps every
    host path of the spec's nodes to its stat (None when missing)."""
    checks: list[Check] = []
    expected_paths: set[str] = set()
    for edits in _edits_of(doc, name):
        for n in edits.get("deviceNodes", []) or []:
            expected_paths.add(str(n.get("path")))
            checks.append(_node_check(n, obs, host))
        for env in edits.get("env", []) or []:
            checks.append(Check(env in obs.env, f"env {env.split('=', 1)[0]}",
                                "present" if env in obs.env else f"'{env}' not in environment"))
        checks += [_mount_check(m, obs, allow_rw) for m in edits.get("mounts", []) or []]
    checks.append(_foreign_check(doc, name, obs, host))
    checks += _outside_dev(doc, name, obs, baseline, host)
    grants = granted(doc, name, host)
    if obs.cgroup:
        checks += _access_checks(CGROUP_V1, obs.cgroup, baseline.cgroup, grants)
    if obs.oci_devices:
        checks += _access_checks(OCI_RULES, obs.oci_devices, baseline.oci_devices, grants)
    checks.append(_dev_extras_check(obs, baseline, expected_paths))
    return checks


def _node_check(n: Mapping[str, Any], obs: Observed,
                host: Mapping[str, NodeFact | None]) -> Check:
    """One injected device node: present, the host's device numbers, the spec's mode and
    owner, and no more access than the host node grants."""
    path = str(n.get("path"))
    hp = str(n.get("hostPath") or path)
    e = obs.entries.get(path)
    h = host.get(hp)
    what = f"node {path}"
    if e is None:
        return Check(False, what, "missing in the container")
    seen = _fmt(e)
    if h is None:
        return Check(False, what, f"{seen}, but host {hp} is missing")
    problems = []
    if (e.type, e.major, e.minor) != (h.type, h.major, h.minor):
        problems.append(f"is {e.type} {e.major}:{e.minor}, host {hp} is "
                        f"{h.type} {h.major}:{h.minor}")
    fm = n.get("fileMode")
    if isinstance(fm, int) and e.mode & 0o777 != fm & 0o777:
        problems.append(f"mode 0{e.mode & 0o777:o}, spec fileMode 0{fm & 0o777:o}")
    if e.mode & 0o777 & ~h.mode:
        problems.append(f"mode 0{e.mode & 0o777:o} grants more than the host's "
                        f"0{h.mode & 0o777:o} (set fileMode)")
    for k in ("uid", "gid"):
        if isinstance(n.get(k), int) and getattr(e, k) != n[k]:
            problems.append(f"{k} {getattr(e, k)}, spec {n[k]}")
    return Check(not problems, what,
                 "; ".join(problems) if problems else f"{seen} (host {_fmt(h)})")


def _mount_check(m: Mapping[str, Any], obs: Observed, allow_rw: Sequence[str]) -> Check:
    cp = str(m.get("containerPath"))
    opts = obs.mounts.get(cp)
    what = f"mount {cp}"
    if opts is None:
        return Check(False, what, "not mounted in the container")
    if "ro" not in opts and cp not in allow_rw:
        return Check(False, what, f"writable ({','.join(sorted(opts))}); "
                     "device mounts must be read-only: add 'ro' to options")
    return Check(True, what, ",".join(sorted(opts)))


def _foreign_check(doc: Mapping[str, Any], name: str, obs: Observed,
                   host: Mapping[str, NodeFact | None]) -> Check:
    """The nodes of the spec's other devices stay out."""
    foreign = cdi.foreign_nodes(doc, name)
    by_num = {(e.type, e.major, e.minor): e.path for e in obs.entries.values()
              if e.type in ("c", "b")}
    leaked = []
    for hp, owner in sorted(foreign.items()):
        h = host.get(hp)
        if h is not None and (h.type, h.major, h.minor) in by_num:
            leaked.append(f"{by_num[(h.type, h.major, h.minor)]} ({h.major}:{h.minor}, "
                          f"device '{owner}')")
    return Check(not leaked, "other devices absent",
                 "leaked: " + ", ".join(leaked) if leaked
                 else f"none of {len(foreign)} foreign nodes visible")


def _dev_extras_check(obs: Observed, baseline: Observed, expected_paths: set[str]) -> Check:
    """Nothing in /dev beyond the runtime's defaults and the injected nodes."""
    parents = {str(Path(p).parent) for p in expected_paths}
    extra = sorted(p for p in obs.entries if p not in baseline.entries
                   and p not in expected_paths and p not in parents)
    return Check(not extra, "/dev holds only defaults and injected nodes",
                 "unexpected: " + ", ".join(extra) if extra
                 else f"{len(obs.entries)} entries = {len(baseline.entries)} defaults "
                      f"+ {len(obs.entries) - len(baseline.entries)} injected")


def _outside_dev(doc: Mapping[str, Any], name: str, obs: Observed, baseline: Observed,
                 host: Mapping[str, NodeFact | None]) -> list[Check]:
    """Device nodes reachable through mounts: only the device's own nodes may be there."""
    own = set(granted(doc, name, host))
    extra = sorted(f"{e.path} ({e.type} {e.major}:{e.minor})"
                   for e in obs.mounted_nodes.values()
                   if e.path not in baseline.mounted_nodes
                   and (e.type, e.major, e.minor) not in own)
    shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
    return [Check(not extra, "no device node reachable outside /dev",
                  f"{len(extra)} host device nodes visible through mounts: {shown}" if extra
                  else f"{len(obs.mounted_nodes)} nodes outside /dev, all the device's own")]


def check_baseline(doc: Mapping[str, Any], obs: Observed,
                   host: Mapping[str, NodeFact | None]) -> list[Check]:
    """A container that asked for no device must see no accelerator and no node of the spec."""
    nums = {(h.type, h.major, h.minor): hp for hp, h in host.items() if h is not None}
    seen = []
    for e in obs.entries.values():
        if (e.type, e.major, e.minor) in nums and e.type in ("c", "b"):
            seen.append(f"{e.path} ({e.major}:{e.minor} = host {nums[(e.type, e.major, e.minor)]})")
        elif any(re.match(p, e.path) for p in ACCEL_PATTERNS):
            seen.append(e.path)
    return [Check(not seen, "no accelerator without a request",
                  "visible: " + ", ".join(sorted(seen)) if seen
                  else f"{len(obs.entries)} /dev entries, none an accelerator or a spec node")]


def host_facts(doc: Mapping[str, Any], host: RealHost) -> dict[str, NodeFact | None]:
    out: dict[str, NodeFact | None] = {}
    edits = [doc.get("containerEdits")] + [d.get("containerEdits") for d in
                                           doc.get("devices", []) if isinstance(d, Mapping)]
    for e in edits:
        if isinstance(e, Mapping):
            for n in e.get("deviceNodes", []) or []:
                hp = str(n.get("hostPath") or n.get("path"))
                out[hp] = host.node(hp)
    return out


# ---------------------------------------------------------------------------- podman edge


def _podman(opts: PodmanOptions, *args: str, timeout: float = 120,
            stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run([opts.podman, *args], capture_output=True, timeout=timeout,
                              check=False, input=stdin)
    except FileNotFoundError as e:
        raise DeviceError(f"{opts.podman} not found (fix: apt-get install podman runc "
                          "(CDI needs Podman >= 4.1))") from e


def podman_missing(opts: PodmanOptions = PodmanOptions()) -> str | None:
    """Why verification cannot run here, or None."""
    if shutil.which(opts.podman) is None:
        return f"{opts.podman} is not installed (apt-get install podman runc)"
    version = runtime_version([opts.podman, "--version"])
    if version is not None and tuple(int(x) for x in version.split(".")) < (4, 1, 0):
        return f"Podman {version} has no CDI support (--device vendor/class=name): " \
               "upgrade to Podman >= 4.1"
    if opts.runtime and shutil.which(opts.runtime) is None:
        return f"runtime {opts.runtime} is not installed (apt-get install {opts.runtime})"
    if not os.path.isfile(opts.busybox):
        return f"{opts.busybox} is missing (apt-get install busybox-static)"
    if os.geteuid() != 0:
        return "verification runs containers with host device nodes: run as root"
    return None


def rootfs_tar(busybox: str) -> bytes:
    """A minimal root file system: busybox-static and the applets the probe uses."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("bin", "dev", "proc", "sys", "etc", "tmp"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        with open(busybox, "rb") as f:
            data = f.read()
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
        for a in APPLETS:
            link = tarfile.TarInfo(f"bin/{a}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
    return buf.getvalue()


def ensure_image(opts: PodmanOptions) -> None:
    if _podman(opts, "image", "exists", opts.image).returncode == 0:
        return
    if not os.path.isfile(opts.busybox):
        raise DeviceError(f"{opts.busybox} is missing (fix: apt-get install busybox-static)")
    with tempfile.TemporaryDirectory() as tmp:
        tar = Path(tmp, "rootfs.tar")
        tar.write_bytes(rootfs_tar(opts.busybox))
        res = _podman(opts, "import", "-q", str(tar), opts.image)
    if res.returncode != 0:
        raise DeviceError(f"podman import failed: {res.stderr.decode(errors='replace')[:400]}")


def remove_image(opts: PodmanOptions) -> None:
    _podman(opts, "rmi", "-f", opts.image)


def _run_probe(opts: PodmanOptions, devices: Sequence[str]) -> tuple[int, str, str, float,
                                                                      list[str]]:
    """Run the probe; the container is kept until its OCI config's device rules are read
    (the allow-list cgroup v2 enforces with eBPF and no file inside shows), then removed."""
    name = f"aiplat-verify-{os.getpid()}-{time.monotonic_ns()}"
    args = [a for a in opts.run_args()[1:] if a != "--rm"] + ["--name", name]
    for d in devices:
        args += ["--device", d]
    t0 = time.perf_counter()
    try:
        res = _podman(opts, *args, opts.image, "/bin/sh", "-c", PROBE)
        dt = time.perf_counter() - t0
        rules = _oci_rules(opts, name) if res.returncode == 0 else []
    finally:
        _podman(opts, "rm", "-f", "-i", name)
    return (res.returncode, res.stdout.decode(errors="replace"),
            res.stderr.decode(errors="replace"), dt, rules)


def _oci_rules(opts: PodmanOptions, name: str) -> list[str]:
    cp = _podman(opts, "inspect", "--format", "{{.OCIConfigPath}}", name)
    path = cp.stdout.decode().strip()
    try:
        return oci_device_rules(json.loads(Path(path).read_text()))
    except (OSError, ValueError):
        return []


@contextlib.contextmanager
def staged(file: str, doc: Mapping[str, Any], opts: PodmanOptions) -> Iterator[str]:
    """The spec placed where Podman looks for it, for the duration of the block."""
    stage = Path(opts.stage_dir)
    if Path(file).resolve().parent == stage.resolve():
        yield file
        return
    stage.mkdir(parents=True, exist_ok=True)
    # Another file in the stage directory with the same devices makes them unresolvable.
    others = [(str(p), read_spec(str(p))) for p in sorted(stage.iterdir())
              if p.suffix in (".json", ".yaml") and p.is_file()]
    target = stage / f"aiplat-verify-{os.getpid()}-{Path(file).stem}.json"
    # (Only a name clash counts here: the container gets the target spec's edits alone, so
    # a link another spec would make is no path for this one's hooks.)
    clash = [f for f in cdi.validate_set([*others, (str(target), doc)])
             if f.file == str(target) and f.severity == "error" and not f.escape]
    if clash:
        raise DeviceError(f"{clash[0].message} (fix: verify that file in place "
                          "(aiplat cdi verify FILE), or remove the other definition)")
    target.write_text(cdi.dumps(doc))
    try:
        yield str(target)
    finally:
        target.unlink(missing_ok=True)


@dataclass
class Verification:
    file: str
    kind: str
    results: list[DeviceResult]
    findings: list[cdi.Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


def verify_spec(file: str, opts: PodmanOptions = PodmanOptions(),
                devices: Sequence[str] | None = None) -> Verification:
    """Start one container per device (plus one without) and compare what each shows."""
    doc = read_spec(file)
    findings = cdi.validate_spec(doc, file, RealHost())
    # the reference loader's verdict (a lone surrogate, an unknown field...) is the runtime's:
    # podman would refuse the spec, so no container is started to find that out
    structural = [f for f in findings if f.severity == "error" and (
        (f.device == "" and f.field in ("(document)", "kind", "devices", "cdiVersion"))
        or f.field.endswith(".name") or f.check == "spec")]
    if structural:
        raise DeviceError("the spec cannot be loaded by a runtime:\n"
                          + "\n".join(str(p) for p in structural))
    # verifying starts containers as root: a spec that hands them the host, or runs a shell
    # hook on it, is not run to find out
    escapes = [f for f in findings if f.escape and f.severity == "error"]
    if escapes:
        raise DeviceError("refusing to start containers from a spec that escapes to the "
                          "host:\n" + "\n".join(str(p) for p in escapes)
                          + "\n(fix: remove what each line names (`aiplat cdi validate` lists "
                          "them), then verify again)")
    reason = podman_missing(opts)
    if reason:
        raise DeviceError(f"cannot verify: {reason}")
    kind = doc["kind"]
    names = [d["name"] for d in doc["devices"]]
    if devices:
        # the bare name or the qualified one podman --device takes (KIND=NAME)
        wanted = [d.removeprefix(f"{kind}=") for d in devices]
        unknown = [d for d, w in zip(devices, wanted, strict=True) if w not in names]
        if unknown:
            raise DeviceError(f"{file}: no device {', '.join(unknown)} in {kind} "
                              f"(fix: use one of {', '.join(names)} (or {kind}={names[0]}))")
        names = wanted
    host = host_facts(doc, RealHost())
    ensure_image(opts)
    results: list[DeviceResult] = []
    with staged(file, doc, opts):
        rc, out, err, dt, rules = _run_probe(opts, [])
        base = DeviceResult("(no device)", seconds=dt)
        if rc != 0:
            base.error = f"podman failed (exit {rc}): {err.strip()[-400:]}"
            return Verification(file, kind, [base], findings)
        baseline = parse_probe(out)
        baseline.oci_devices = rules
        base.checks = check_baseline(doc, baseline, host)
        results.append(base)
        for name in names:
            q = cdi.qualified(kind, name)
            rc, out, err, dt, rules = _run_probe(opts, [q])
            r = DeviceResult(q, seconds=dt)
            if rc != 0 or "@@end" not in out:
                hint = ""
                if "unresolvable CDI devices" in err:
                    hint = (f" (the runtime did not load the spec: its CDI library may not "
                            f"know cdiVersion {doc['cdiVersion']}; Podman 4.3 knows <= 0.5.0)")
                r.error = f"container did not start (exit {rc}): {err.strip()[-300:]}{hint}"
            else:
                obs = parse_probe(out)
                obs.oci_devices = rules
                r.checks = check_device(doc, name, obs, baseline, host,
                                        allow_rw=opts.allow_rw)
            results.append(r)
    return Verification(file, kind, results, findings)
