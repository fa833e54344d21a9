"""``lab up | status | down``: build, inspect and remove the lab (root; the I/O edge).

``up`` runs :func:`aiplat.netdiag.model.up_steps`, then starts, per node namespace,
``prometheus-node-exporter`` (netdev, netstat, netclass, pressure collectors) on the node's
management address and an ``iperf3`` server; in the storage node Debian's ``docker-registry``
(the model store) with one seeded blob; and on the host a Prometheus scraping every exporter
each second, listening on 127.0.0.1 only. It ends by measuring each compute node's model pull
(the baseline ``diagnose`` compares against).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from pathlib import Path

from aiplat.netdiag import sh
from aiplat.netdiag.faults import FaultPlan
from aiplat.netdiag.model import (
    EXPORTER_PORT,
    REGISTRY_PORT,
    LabError,
    LabInputError,
    LabNode,
    LabPlan,
    ns_argv,
    route_overlaps,
    up_steps,
)
from aiplat.netdiag.state import (
    ActiveFault,
    Created,
    LabState,
    PullBaseline,
    lab_dir,
    lab_root,
    load_state,
    save_state,
)

TOOLS = {"ip": "iproute2", "tc": "iproute2", "iptables": "iptables", "iperf3": "iperf3",
         "ping": "iputils-ping", "prometheus": "prometheus",
         "prometheus-node-exporter": "prometheus-node-exporter",
         "docker-registry": "docker-registry"}
BLOB_REPO = "lab/model"
BLOB_BYTES = 64 << 20
PULL_SECONDS = 3.0

Progress = Callable[[str], None]  # a line worth keeping: a phase, a note, a failure
Steps = Callable[[int, int, str], None]  # (done, total, running): each step of lab up


def _quiet(_: str) -> None:
    pass


# ------------------------------------------------------------------------------- preflight


def missing_tools() -> list[str]:
    return sorted({f"{t} (Debian: {p})" for t, p in TOOLS.items() if shutil.which(t) is None})


def host_routes() -> list[IPv4Network]:
    out = sh.run(["ip", "-4", "-j", "route", "show", "table", "all"]).stdout
    routes = []
    for r in json.loads(out or "[]"):
        dst = r.get("dst", "")
        if dst in ("default", "") or r.get("type") in ("broadcast", "local"):
            continue
        try:
            routes.append(IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False))
        except ValueError:
            continue
    return routes


def br_netfilter_on() -> bool:
    p = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
    return p.exists() and p.read_text().strip() == "1"


def preflight(plan: LabPlan) -> None:
    if os.geteuid() != 0:
        raise LabInputError("the lab needs root (network namespaces, bridges, tc, iptables); "
                            "run it with sudo")
    missing = missing_tools()
    if missing:
        raise LabInputError("missing tools: " + ", ".join(missing)
                            + " (fix: apt-get install -y the Debian packages named)")
    if load_state(plan.prefix) is not None:
        raise LabInputError(f"lab {plan.prefix!r} is already up (state {lab_dir(plan.prefix)}); "
                            f"run 'aiplat lab down --prefix {plan.prefix}' first")
    overlaps = route_overlaps(plan, host_routes())
    if overlaps:
        raise LabInputError("refusing to start: " + "; ".join(overlaps)
                            + " (fix: give the segments other cidr values in the spec)")
    with socket.socket() as sock:
        if sock.connect_ex(("127.0.0.1", plan.prom_port)) == 0:
            raise LabInputError(f"127.0.0.1:{plan.prom_port} is in use (Prometheus of another "
                                "lab?) (fix: pass --prom-port with a free port)")
    taken = [s.bridge for s in plan.segments if Path(f"/sys/class/net/{s.bridge}").exists()]
    taken += [n.ns for n in plan.nodes if Path(f"/run/netns/{n.ns}").exists()]
    if taken:
        raise LabInputError(f"names already exist on this host: {', '.join(taken)} "
                            "(fix: choose another --prefix)")


# ------------------------------------------------------------------------------------ up


def dry_run_commands(plan: LabPlan) -> list[list[str]]:
    """The commands ``up`` runs, in order, with the processes it starts."""
    cmds = [s.argv for s in up_steps(plan, br_netfilter_on())]
    for node, name, argv in _services(plan, lab_dir(plan.prefix)):
        cmds.append([*(ns_argv(node.ns) if node else []), *argv])
        del name
    return cmds


def _services(plan: LabPlan, d: Path) -> list[tuple[LabNode | None, str, list[str]]]:
    out: list[tuple[LabNode | None, str, list[str]]] = []
    for node in plan.nodes:
        addr = node.addrs[plan.management.name]
        collectors = ["--collector.disable-defaults", "--collector.netdev",
                      "--collector.netstat", "--collector.netclass", "--collector.pressure"]
        if node.role == "storage":
            collectors.append("--collector.diskstats")
        # Every process names the lab directory in its argv, so a leftover is recognisable.
        out.append((node, f"node-exporter@{node.name}", [
            "prometheus-node-exporter", f"--web.listen-address={addr}:{EXPORTER_PORT}",
            *collectors, "--collector.textfile",
            f"--collector.textfile.directory={d / 'textfile'}"]))
        out.append((node, f"iperf3@{node.name}",
                    ["iperf3", "-s", "--pidfile", str(d / f"iperf3-{node.name}.pid")]))
    out.append((plan.store, "registry@store",
                ["docker-registry", "serve", str(d / "registry.yml")]))
    out.append((None, "prometheus", [
        "prometheus", f"--config.file={d / 'prometheus.yml'}",
        f"--storage.tsdb.path={d / 'tsdb'}", "--storage.tsdb.retention.time=1d",
        f"--web.listen-address=127.0.0.1:{plan.prom_port}"]))
    return out


def prometheus_config(plan: LabPlan) -> str:
    lines = ["global:", "  scrape_interval: 1s", "  scrape_timeout: 900ms",
             "  evaluation_interval: 1s", "scrape_configs:", "  - job_name: node",
             "    static_configs:"]
    for n in plan.nodes:
        lines += [f"      - targets: ['{n.addrs[plan.management.name]}:{EXPORTER_PORT}']",
                  f"        labels: {{node: '{n.name}', lab: '{plan.prefix}'}}"]
    return "\n".join(lines) + "\n"


def registry_config(d: Path) -> str:
    return (f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
            f"    rootdirectory: {d / 'registry'}\n  delete:\n    enabled: true\n"
            f"http:\n  addr: ':{REGISTRY_PORT}'\n")


@dataclass
class UpResult:
    state: LabState
    seconds: float
    phases: dict[str, float] = field(default_factory=dict)


def kernel_has_vlan(prefix: str) -> bool:
    """Whether this kernel can make 802.1Q devices (tried in a throwaway namespace)."""
    ns = f"{prefix}-probe"
    if not sh.ok(["ip", "netns", "add", ns]):
        return False
    try:
        return sh.ok(["ip", "-n", ns, "link", "add", "p0", "type", "veth", "peer", "name",
                      "p1"]) and sh.ok(["ip", "-n", ns, "link", "add", "link", "p0", "name",
                                        "p0.2", "type", "vlan", "id", "2"])
    finally:
        sh.run(["ip", "netns", "del", ns], check=False)


def without_unsupported(plan: LabPlan) -> tuple[LabPlan, list[str]]:
    """Drop VLAN tags when the kernel cannot do 802.1Q (the segment then runs untagged)."""
    tagged = [s for s in plan.segments if s.vlan]
    if not tagged or kernel_has_vlan(plan.prefix):
        return plan, []
    notes = [f"segment {s.name}: VLAN {s.vlan} not built, this kernel has no 802.1Q support "
             "(8021q); the segment runs untagged on its own bridge" for s in tagged]
    segs = [s.model_copy(update={"vlan": None}) for s in plan.segments]
    return plan.model_copy(update={"segments": segs}), notes


def _counter(steps: Steps | None, total: int) -> Callable[[str], None]:
    """``step(running)``: tells ``steps`` how many of ``total`` are done before each."""
    done = iter(range(total + 1))

    def step(running: str) -> None:
        n = next(done, total)
        if steps is not None:
            steps(n, total, running)

    return step


def up(plan: LabPlan, progress: Progress = _quiet, steps: Steps | None = None) -> UpResult:
    """Build the lab. On any failure, remove what was created and raise. ``progress`` hears
    the phases, notes and failures; ``steps(done, total, running)`` hears each step (a
    network command, a service, a baseline pull) before it runs, and ``(total, total, "")``
    at the end."""
    t0 = time.monotonic()
    preflight(plan)
    plan, notes = without_unsupported(plan)
    for note in notes:
        progress(note)
    d = lab_dir(plan.prefix)
    d.mkdir(parents=True, exist_ok=True)
    state = LabState(plan=plan, notes=notes)
    save_state(state)
    phases: dict[str, float] = {}
    services = _services(plan, d)
    try:
        network = up_steps(plan, br_netfilter_on())
        step = _counter(steps, len(network) + len(services) + 3 + len(plan.compute))
        progress("network: bridges, namespaces, veths, tbf")
        for step_ in network:
            step(" ".join(step_.argv[:4]))
            if step_.creates:
                kind, name = step_.creates
                rule = step_.argv[3:] if kind == "iptables" else []
                state.created.append(Created(kind=kind, name=name, argv=rule))
                save_state(state)
            sh.run(step_.argv)
        phases["network"] = time.monotonic() - t0
        progress("services: node-exporter, iperf3, docker-registry, prometheus")
        (d / "prometheus.yml").write_text(prometheus_config(plan))
        (d / "registry.yml").write_text(registry_config(d))
        (d / "textfile").mkdir(exist_ok=True)
        for node, name, argv in services:
            step(f"start {name}")
            proc = sh.spawn(name, argv, d / "logs" / f"{name.replace('@', '-')}.log",
                            ns=node.ns if node else None)
            state.procs.append(proc)
            save_state(state)
        step("wait for the services")
        _wait_ready(plan, d)
        phases["services"] = time.monotonic() - t0 - phases["network"]
        progress("model store: seeding a blob, measuring baseline pulls")
        step("seed the model store")
        state.blob_digest, state.blob_bytes = seed_blob(plan)
        save_state(state)
        step("wait for a Prometheus scrape")
        wait_scraped(plan)
        for node in plan.compute:  # the +3 above: services ready, blob seeded, scraped
            step(f"baseline pull to {node.name}")
            r = pull(plan, node, state.blob_digest)
            state.baseline.append(PullBaseline(node=node.name, mbit=r.mbit))
        phases["baseline"] = time.monotonic() - t0 - phases["network"] - phases["services"]
        state.phase = "up"
        state.up_seconds = time.monotonic() - t0
        save_state(state)
        step("")
    except BaseException as e:
        progress(f"lab up failed ({e}); removing what it created")
        down(plan.prefix)
        raise
    return UpResult(state=state, seconds=time.monotonic() - t0, phases=phases)


def _http_ok(url: str, timeout: float = 0.5) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return 200 <= int(r.status) < 300
    except (urllib.error.URLError, OSError):
        return False


def _wait_ready(plan: LabPlan, d: Path) -> None:
    mgmt = plan.management.name
    for node in plan.nodes:
        url = f"http://{node.addrs[mgmt]}:{EXPORTER_PORT}/metrics"
        sh.wait_for(f"node-exporter in {node.ns}", lambda u=url: _http_ok(u), 20,  # type: ignore[misc]
                    d / "logs")
    store_url = f"http://{plan.store.addrs[mgmt]}:{REGISTRY_PORT}/v2/"
    sh.wait_for("docker-registry", lambda: _http_ok(store_url), 20, d / "logs")
    sh.wait_for("prometheus", lambda: _http_ok(f"{plan.prom_url}/-/ready"), 60, d / "logs")
    for node in plan.nodes:
        sh.wait_for(f"iperf3 server in {node.ns}", lambda n=node: _listening(n, 5201), 10)  # type: ignore[misc]


def _listening(node: LabNode, port: int) -> bool:
    cp = sh.run([*ns_argv(node.ns), "ss", "-Hltn", "sport", f"= :{port}"], check=False)
    return bool(cp.stdout.strip())


def wait_scraped(plan: LabPlan, timeout: float = 30) -> None:
    """Wait until Prometheus has scraped every node's exporter successfully."""
    q = urllib.parse.urlencode({"query": f'sum(up{{lab="{plan.prefix}"}})'})

    def all_up() -> bool:
        try:
            with urllib.request.urlopen(f"{plan.prom_url}/api/v1/query?{q}", timeout=2) as r:
                data = json.load(r)
        except (urllib.error.URLError, OSError, ValueError):
            return False
        res = data.get("data", {}).get("result", [])
        return bool(res) and float(res[0]["value"][1]) >= len(plan.nodes)

    sh.wait_for("Prometheus scraping every node", all_up, timeout)


def seed_blob(plan: LabPlan, size: int = BLOB_BYTES) -> tuple[str, int]:
    """Upload one blob of ``size`` random bytes to the lab's registry (monolithic upload)."""
    data = os.urandom(size)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    base = f"http://{plan.store.addrs[plan.management.name]}:{REGISTRY_PORT}"
    req = urllib.request.Request(f"{base}/v2/{BLOB_REPO}/blobs/uploads/", method="POST", data=b"")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            location = r.headers["Location"]
        url = urllib.parse.urljoin(base, location)
        sep = "&" if "?" in url else "?"
        put = urllib.request.Request(f"{url}{sep}digest={digest}", method="PUT", data=data,
                                     headers={"Content-Type": "application/octet-stream"})
        with urllib.request.urlopen(put, timeout=60) as r:
            if r.status != 201:
                raise LabError(f"registry answered {r.status} to the blob upload")
    except urllib.error.URLError as e:
        raise LabError(f"could not seed the model store at {base}: {e}") from e
    return digest, size


@dataclass(frozen=True)
class PullResult:
    node: str
    bytes: int
    seconds: float
    start: float
    end: float
    complete: bool
    error: str = ""

    @property
    def mbit(self) -> float:
        return self.bytes * 8 / 1e6 / self.seconds if self.seconds > 0 else 0.0


def tcp_counters(node: LabNode) -> tuple[int, int] | None:
    """(RetransSegs, OutSegs) of the TCP stack in ``node``'s namespace (``/proc/net/snmp``),
    or None when it cannot be read."""
    cp = sh.run([*ns_argv(node.ns), "cat", "/proc/net/snmp"], check=False, timeout=5)
    rows = [line.split() for line in cp.stdout.splitlines() if line.startswith("Tcp:")]
    if cp.returncode != 0 or len(rows) != 2:
        return None
    tcp = dict(zip(rows[0][1:], rows[1][1:], strict=False))
    try:
        return int(tcp["RetransSegs"]), int(tcp["OutSegs"])
    except (KeyError, ValueError):
        return None


def pull(plan: LabPlan, node: LabNode, digest: str | None,
         seconds: float = PULL_SECONDS) -> PullResult:
    """Pull the seeded blob from inside ``node`` over the storage segment, for at most
    ``seconds`` (the symptom ``diagnose`` watches)."""
    if digest is None:
        raise LabError("the lab has no seeded blob (was 'lab up' interrupted?)")
    url = f"{plan.registry_url}/v2/{BLOB_REPO}/blobs/{digest}"
    argv = [*ns_argv(node.ns), sys.executable, "-m", "aiplat.netdiag.pullprobe", url,
            "--seconds", str(seconds)]
    cp = sh.run(argv, check=False, timeout=seconds + 15)
    try:
        r = json.loads(cp.stdout)
    except ValueError:
        return PullResult(node.name, 0, seconds, time.time() - seconds, time.time(), False,
                          cp.stderr.strip()[-200:])
    return PullResult(node.name, int(r["bytes"]), float(r["seconds"]), float(r["start"]),
                      float(r["end"]), bool(r["complete"]), str(r.get("error", "")))


# ---------------------------------------------------------------------------- status, down


def status(prefix: str) -> dict[str, object] | None:
    state = load_state(prefix)
    if state is None:
        return None
    plan = state.plan
    return {
        "prefix": prefix,
        "phase": state.phase,
        "state_file": str(lab_dir(prefix) / "state.json"),
        "prometheus": plan.prom_url,
        "registry": plan.registry_url,
        "segments": [{"name": s.name, "purpose": s.purpose, "cidr": str(s.cidr), "mtu": s.mtu,
                      "vlan": s.vlan, "bridge": s.bridge,
                      "present": Path(f"/sys/class/net/{s.bridge}").exists()}
                     for s in plan.segments],
        "nodes": [{"name": n.name, "role": n.role, "ns": n.ns,
                   "present": Path(f"/run/netns/{n.ns}").exists(),
                   "addrs": {k: str(v) for k, v in n.addrs.items()}} for n in plan.nodes],
        "processes": [{"name": p.name, "pid": p.pid, "alive": sh.alive(p)} for p in state.procs],
        "faults": [{"id": f.id, "detail": f.detail} for f in state.faults],
        "baseline_pull_mbit": {b.node: round(b.mbit, 1) for b in state.baseline},
        "notes": state.notes,
        "up_seconds": state.up_seconds,
    }


@dataclass
class DownResult:
    removed: list[str]
    seconds: float


def down(prefix: str) -> DownResult:  # noqa: C901 (ratchet)
    """Remove everything the state file lists; safe to run again and after a crash."""
    t0 = time.monotonic()
    state = load_state(prefix)
    removed: list[str] = []
    probe = f"{prefix}-probe"  # kernel_has_vlan's throwaway, if a crash left it
    if Path(f"/run/netns/{probe}").exists():
        sh.run(["ip", "netns", "del", probe], check=False)
        removed.append(f"netns {probe}")
    if state is None:
        return DownResult(removed, time.monotonic() - t0)
    for proc in reversed(state.procs):
        if sh.stop(proc):
            removed.append(f"process {proc.name} (pid {proc.pid})")
    namespaces = [c.name for c in state.created if c.kind == "netns"]
    for ns in namespaces:
        if not Path(f"/run/netns/{ns}").exists():
            continue
        # Anything still running inside a namespace the lab created is the lab's.
        pids = sh.run(["ip", "netns", "pids", ns], check=False).stdout.split()
        for pid in pids:
            if sh.kill_pid(int(pid), None, grace=2.0):
                removed.append(f"process {pid} in {ns}")
    for c in reversed(state.created):
        if c.kind == "netns" and Path(f"/run/netns/{c.name}").exists():
            sh.run(["ip", "netns", "del", c.name])
            removed.append(f"netns {c.name}")
        elif c.kind == "link" and Path(f"/sys/class/net/{c.name}").exists():
            sh.run(["ip", "link", "del", c.name], check=False)
            removed.append(f"link {c.name}")
        elif c.kind == "iptables":
            while sh.ok(["iptables", "-C", "FORWARD", *c.argv]):
                sh.run(["iptables", "-D", "FORWARD", *c.argv])
                removed.append(f"iptables FORWARD rule for {c.name}")
    d = lab_dir(prefix)
    if d.is_dir() and d.parent == lab_root():
        shutil.rmtree(d)
        if "AIPLAT_LAB_DIR" not in os.environ:
            with contextlib.suppress(OSError):  # the default root too, when no lab uses it
                lab_root().rmdir()
    return DownResult(removed, time.monotonic() - t0)


def leftovers(prefix: str) -> list[str]:
    """Anything on the host that carries the lab's prefix (what a clean ``down`` leaves: [])."""
    out = [f"netns {n}" for n in sh.run(["ip", "netns", "list"]).stdout.split()
           if n.startswith(f"{prefix}-")]
    out += [f"link {name}" for name in os.listdir("/sys/class/net") if name.startswith(prefix)]
    rules = sh.run(["iptables-save"], check=False).stdout
    out += [f"iptables {line}" for line in rules.splitlines() if f"aiplat-lab {prefix}" in line]
    d = lab_dir(prefix)
    for pid in os.listdir("/proc"):
        if not (pid.isascii() and pid.isdigit()):
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(d) in cmd:
            out.append(f"process {pid}: {cmd.strip()}")
    if d.exists():
        out.append(f"directory {d}")
    return out


# -------------------------------------------------------------------------------- faults


def require_up(prefix: str) -> LabState:
    state = load_state(prefix)
    if state is None or state.phase != "up":
        raise LabInputError(f"lab {prefix!r} is not up (fix: run 'aiplat lab up' first)")
    return state


def add_fault(prefix: str, fault: FaultPlan) -> ActiveFault:
    """Inject ``fault`` and record it (with its undo) in the state file."""
    state = require_up(prefix)
    if any(f.id == fault.id for f in state.faults):
        raise LabInputError(f"fault {fault.id} is already active (fix: 'aiplat lab fault clear "
                            f"{fault.id}')")
    active = ActiveFault(id=fault.id, kind=fault.kind, node=fault.node, segment=fault.segment,
                         detail=fault.detail, undo=fault.undo, since=time.time())
    state.faults.append(active)
    save_state(state)
    try:
        for argv in fault.apply:
            sh.run(argv)
        if fault.spawn:
            d = lab_dir(prefix)
            state.procs.append(sh.spawn(
                f"fault {fault.id}",
                [*fault.spawn, "--logfile", str(d / "logs" / f"fault-{fault.kind}.log")],
                d / "logs" / "faults.log", ns=fault.spawn_ns, fault=fault.id))
            save_state(state)
    except BaseException:
        clear_faults(prefix, [fault.id])
        raise
    return active


def clear_faults(prefix: str, ids: list[str] | None = None) -> list[str]:
    """Undo the given faults (all when ``ids`` is None); returns the ids cleared."""
    state = load_state(prefix)
    if state is None:
        raise LabInputError(f"lab {prefix!r} is not up")
    known = {f.id for f in state.faults}
    if ids is not None:
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise LabInputError(f"no active fault {', '.join(unknown)} "
                                f"(active: {', '.join(sorted(known)) or 'none'})")
    cleared = []
    for f in list(state.faults):
        if ids is not None and f.id not in ids:
            continue
        for proc in [p for p in state.procs if p.fault == f.id]:
            sh.stop(proc)
            state.procs.remove(proc)
        for argv in f.undo:
            sh.run(argv, check=False)
        state.faults.remove(f)
        save_state(state)
        cleared.append(f.id)
    return cleared
