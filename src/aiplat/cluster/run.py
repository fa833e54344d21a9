"""``up``, ``status`` and ``down`` of a lab cluster: local processes on 127.0.0.1.

The run's folder (``$AIPLAT_CLUSTER_DIR/<name>``, default ``/run/aiplat/cluster`` as root,
else ``$XDG_RUNTIME_DIR`` or ``~/.cache``) holds certificates, configuration, etcd's data,
logs and ``state.json``. Each process is recorded in the state file *as it starts* (pid and
kernel start time, so a recycled pid is never signalled); ``down`` stops what the file lists,
in reverse order, and removes the folder, also after a crash of ``up`` half-way. A failed
``up`` calls ``down`` itself: nothing is left running.

Order: etcd, kube-apiserver (ready on /readyz), then CRDs (Kueue, JobSet), the kueue-system
namespace, the webhook configurations, kube-controller-manager, kube-scheduler, Kueue, JobSet,
kwok; Kueue is ready when its webhook answers a server-side dry run; then the nodes and
their ResourceSlices.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from aiplat.cluster import config as cfg
from aiplat.cluster.assets import Assets, versions
from aiplat.cluster.nodes import (
    SYSTEM_NODES,
    lab_nodes,
    local_volumes,
    node,
    resource_slice,
    system_node,
)
from aiplat.cluster.pki import Pki, make_pki
from aiplat.errors import AiplatError, InputError
from aiplat.fsutil import atomic_write
from aiplat.kube.apply import Api, ApiError
from aiplat.kube.facts import PoolFacts
from aiplat.netdiag import sh
from aiplat.netdiag.state import Proc

Progress = Callable[[str], None]
METRICS_CERTS = Path("/etc/kueue/metrics/certs")  # hard-coded in Kueue's main.go


class ClusterError(AiplatError):
    """The lab cluster could not be started or queried (exit 1)."""


class ClusterState(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    dir: str
    server: str
    ports: dict[str, int]
    versions: dict[str, str]
    procs: list[Proc] = []
    created_files: list[str] = []
    nodes: list[str] = []
    started: float = 0.0
    ready_seconds: float | None = None


def cluster_root() -> Path:
    env = os.environ.get("AIPLAT_CLUSTER_DIR")
    if env:
        return Path(env)
    if os.geteuid() == 0:
        return Path("/run/aiplat/cluster")
    base = os.environ.get("XDG_RUNTIME_DIR") or str(Path.home() / ".cache")
    return Path(base) / "aiplat" / "cluster"


def run_dir(name: str) -> Path:
    return cluster_root() / name


def load_state(name: str) -> ClusterState | None:
    path = run_dir(name) / "state.json"
    if not path.exists():
        return None
    try:
        return ClusterState.model_validate_json(path.read_text())
    except ValueError as e:
        raise InputError(f"{path}: not a lab cluster state file ({e}) (fix: remove {path.parent} "
                         "after stopping its processes by hand)") from e


def _save(state: ClusterState) -> None:
    atomic_write(Path(state.dir) / "state.json", state.model_dump_json(indent=2) + "\n", 0o600)


def kubeconfig_path(name: str) -> Path:
    return run_dir(name) / "kubeconfig"


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _http_ok(url: str, timeout: float = 1.0) -> bool:
    import httpx

    try:
        return httpx.get(url, timeout=timeout).status_code == 200
    except (httpx.HTTPError, OSError):
        return False


def up(name: str, pools: list[PoolFacts], kueue_config: dict[str, Any], assets: Assets, *,
       local_classes: tuple[str, ...] = (), progress: Progress = lambda _m: None,
       timeout: float = 120.0) -> ClusterState:
    """Start a cluster for ``pools`` with Kueue configured by ``kueue_config`` (the rendered
    Configuration) and, per node, a local PersistentVolume on each of ``local_classes``.
    Raises InputError when one runs already; on any failure stops what it started and
    removes its folder."""
    existing = load_state(name)
    if existing is not None:
        raise InputError(f"lab cluster {name!r} is already up ({existing.server}) (fix: "
                         f"'aiplat lab cluster down --name {name}' first, or pick --name)")
    d = run_dir(name)
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True, mode=0o700)
    t0 = time.monotonic()
    ports = cfg.Ports(*_free_ports(len(cfg.Ports.__dataclass_fields__)))
    state = ClusterState(name=name, dir=str(d), server=f"https://127.0.0.1:{ports.apiserver}",
                         ports=asdict(ports), versions=versions(), started=time.time())
    _save(state)
    try:
        run = _Run(state, d, ports, make_pki(d / "pki"), assets, progress, timeout,
                   local_classes)
        run.start(pools, kueue_config)
    except BaseException:
        progress("start failed: stopping what was started")
        down(name)
        raise
    state.ready_seconds = round(time.monotonic() - t0, 1)
    _save(state)
    return state


@dataclass
class _Run:
    """One ``up`` in progress: what it has started so far is in ``state`` (and on disk)."""

    state: ClusterState
    dir: Path
    ports: cfg.Ports
    pki: Pki
    assets: Assets
    progress: Progress
    timeout: float
    local_classes: tuple[str, ...] = ()

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    def log(self, name: str) -> Path:
        return self.dir / "logs" / f"{name}.log"

    def spawn(self, name: str, *args: str) -> None:
        """Start a component (every controller gets --kubeconfig in its arguments)."""
        try:
            proc = sh.spawn(name, [self.assets.bin(name), *args], self.log(name))
        except AiplatError as e:
            raise ClusterError(str(e)) from e
        self.state.procs.append(proc)
        _save(self.state)

    def wait(self, what: str, probe: Callable[[], bool], log: str,
             timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.timeout)
        while time.monotonic() < deadline:
            if probe():
                return
            for p in self.state.procs:
                if not sh.alive(p):
                    raise ClusterError(f"{p.name} exited while waiting for {what}; last lines "
                                       f"of its log:\n{_tail(self.log(p.name))}")
            time.sleep(0.2)
        raise ClusterError(f"{what} not ready within {timeout or self.timeout:.0f} s; see "
                           f"{self.log(log)}:\n{_tail(self.log(log))}")

    def start(self, pools: list[PoolFacts], kueue_config: dict[str, Any]) -> None:
        atomic_write(self.kubeconfig, yaml.safe_dump(cfg.kubeconfig(self.state.server,
                                                                    self.pki)), 0o600)
        _metrics_certs(self.state, self.pki)
        self.progress("etcd")
        self.spawn("etcd", *cfg.etcd_args(self.dir / "etcd", self.ports))
        self.wait("etcd", lambda: _http_ok(f"http://127.0.0.1:{self.ports.etcd}/health"),
                  "etcd", 30)
        self.progress("kube-apiserver")
        self.spawn("kube-apiserver", *cfg.apiserver_args(self.pki, self.ports))
        with Api.from_kubeconfig(str(self.kubeconfig)) as api:
            self.wait("kube-apiserver", api.ready, "kube-apiserver")
            # The controller manager and scheduler need no CRDs: they start while the CRDs
            # go in.
            self.start_core_controllers()
            self.install_apis(api)
            self.start_controllers(kueue_config)
            self.wait_controllers(api)
            self.add_nodes(api, pools)

    def install_apis(self, api: Api) -> None:
        self.progress("CRDs (Kueue, JobSet, Gateway API, inference extension, snapshots, NFD), "
                      "webhooks")
        m = self.assets.manifests
        crds = [doc for f in sorted(m.glob("**/*.yaml")) for doc in _docs(f)
                if doc.get("kind") == "CustomResourceDefinition"]
        ca = self.pki.ca.read_bytes()
        hooks = cfg.local_webhooks(_docs(m / "kueue" / "webhooks.yaml"), "kueue-",
                                   self.ports.kueue_webhook, ca, "kueue.x-k8s.io")
        hooks += cfg.local_webhooks(_docs(m / "jobset" / "webhooks.yaml"), "jobset-",
                                    self.ports.jobset_webhook, ca, "jobset.x-k8s.io")
        try:
            api.apply_all(crds)
            api.wait_established([c["metadata"]["name"] for c in crds], timeout=60)
            api.apply_all([{"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": cfg.KUEUE_NS}}, *hooks])
        except ApiError as e:
            raise ClusterError(f"installing the CRDs and webhooks: {e}") from e

    def start_core_controllers(self) -> None:
        kc = self.kubeconfig
        self.progress("kube-controller-manager, kube-scheduler")
        self.spawn("kube-controller-manager", *cfg.kcm_args(kc, self.pki))
        self.spawn("kube-scheduler", *cfg.scheduler_args(kc))

    def start_controllers(self, kueue_config: dict[str, Any]) -> None:
        kc = self.kubeconfig
        self.progress("Kueue, JobSet, kwok")
        files = {
            "kueue-config.yaml": yaml.safe_dump(cfg.kueue_configuration(
                kueue_config, self.pki, self.ports)),
            "jobset-config.yaml": yaml.safe_dump(cfg.jobset_configuration(self.pki,
                                                                          self.ports)),
            "kwok-stages.yaml": cfg.kwok_stages(self.assets.manifests),
        }
        for f, text in files.items():
            atomic_write(self.dir / f, text)
        self.spawn("kueue", f"--config={self.dir / 'kueue-config.yaml'}", f"--kubeconfig={kc}")
        self.spawn("jobset", f"--config={self.dir / 'jobset-config.yaml'}",
                   f"--kubeconfig={kc}")
        self.spawn("kwok", *cfg.kwok_args(kc, self.dir / "kwok-stages.yaml", self.ports))

    def wait_controllers(self, api: Api) -> None:
        self.wait("Kueue's webhook", lambda: api.webhook_answers(
            "kueue.x-k8s.io/v1beta2", "ResourceFlavor"), "kueue")
        self.wait("JobSet's webhook", lambda: api.webhook_answers(
            "jobset.x-k8s.io/v1alpha2", "JobSet", namespace="default"), "jobset")
        self.wait("the default ServiceAccount", lambda: api.exists(
            "v1", "ServiceAccount", "default", "default"), "kube-controller-manager")

    def add_nodes(self, api: Api, pools: list[PoolFacts]) -> None:
        self.progress(f"{len(lab_nodes(pools))} kwok nodes and their ResourceSlices, "
                      f"{SYSTEM_NODES} system nodes")
        for i in range(SYSTEM_NODES):
            self.state.nodes.append(api.create_or_get(system_node(i))["metadata"]["name"])
        for pool, i in lab_nodes(pools):
            created = api.create_or_get(node(pool, i))
            self.state.nodes.append(created["metadata"]["name"])
            rs = resource_slice(pool, i, created["metadata"].get("uid"))
            if rs is not None:
                api.apply_all([rs])
            api.apply_all([v for c in self.local_classes for v in local_volumes(pool, i, c)])
        _save(self.state)
        self.wait("nodes Ready", lambda: api.nodes_ready(self.state.nodes), "kwok")


def _tail(log: Path, lines: int = 15) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _docs(path: Path) -> list[dict[str, Any]]:
    # libyaml's loader: the CRDs are 2 MB of YAML, 5 s with the pure-Python one.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(path.read_text(), Loader=loader) if d]


def _metrics_certs(state: ClusterState, pki: Pki) -> None:
    """Kueue reads its metrics certificate from a fixed path (when its own cert management
    is off) once, at start. So each cluster writes its own just before its Kueue starts
    (atomically: another cluster's Kueue may be reading), and ``down`` removes them only if
    they are still this cluster's: two lab clusters (two test modules, two users) never pull
    the files from under each other's Kueue."""
    for name in ("tls.crt", "tls.key"):
        target = METRICS_CERTS / name
        try:
            METRICS_CERTS.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{name}.{os.getpid()}")
            shutil.copyfile(pki.path(f"webhooks.{name.split('.')[1]}"), tmp)
            tmp.chmod(0o600)
            os.replace(tmp, target)
        except OSError as e:
            raise InputError(f"Kueue needs {target} (a fixed path in Kueue's main.go): {e} "
                             "(fix: run as root, or create it)") from e
        state.created_files.append(str(target))
    _save(state)


def status(name: str, settle: float = 0.0) -> dict[str, Any] | None:
    """Components, nodes and Kueue's workloads. With ``settle``, first wait (at most that
    many seconds) until the workloads' state has not changed for 3 s: what a test or an
    exercise records after an apply."""
    state = load_state(name)
    if state is None:
        return None
    procs = [{"name": p.name, "pid": p.pid, "alive": sh.alive(p)} for p in state.procs]
    out: dict[str, Any] = {"name": name, "server": state.server, "dir": state.dir,
                           "kubeconfig": str(kubeconfig_path(name)), "versions": state.versions,
                           "components": procs, "ready_seconds": state.ready_seconds}
    try:
        with Api.from_kubeconfig(str(kubeconfig_path(name)), timeout=3) as api:
            if settle:
                _settle(api, settle)
            out["nodes"] = api.node_summary()
            out["kueue"] = api.kueue_summary()
            out["workloads"] = api.workloads()
    except (ApiError, OSError, InputError) as e:
        out["error"] = str(e)
    return out


def _settle(api: Api, timeout: float, quiet: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        now = api.workloads()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.5)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def down(name: str) -> list[str]:
    """Stop every process the state lists (newest first) and remove the run's folder and
    the files it created. Returns what was stopped."""
    state = load_state(name)
    stopped: list[str] = []
    if state is not None:
        for p in reversed(state.procs):
            if sh.stop(p, grace=5.0):
                stopped.append(p.name)
        pki = run_dir(name) / "pki"
        for f in state.created_files:
            path = Path(f)
            if path.parent == METRICS_CERTS and not _same(
                    path, pki / f"webhooks.{path.name.split('.')[1]}"):
                continue  # another cluster's since: its Kueue serves with them
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(OSError):
            METRICS_CERTS.rmdir()
            METRICS_CERTS.parent.rmdir()
    shutil.rmtree(run_dir(name), ignore_errors=True)
    return stopped

