"""Acceptance runner (the I/O edge): run the suites on this host and build the record.

Each step calls another capability and hands its plain result to the pure core in
:mod:`aiplat.ops.acceptance`:

- inventory and node checks: :func:`aiplat.node.service.check_node` (with the version
  matrix, so the record names the approved entry the node matches);
- CDI: :func:`aiplat.devices.verify.verify_spec` in real Podman containers. Specs come from
  ``--cdi-spec``, else from the host's accelerators (:func:`aiplat.devices.host.generate`),
  else — a host without accelerators, like CI — from character device nodes made for the run
  with a major number no driver registered (stat-able, never openable); the record says so;
- manifests: :func:`aiplat.kube.pipeline.check_platform` (render, validate, lint); the same
  objects feed the static network-policy and quota checks of the isolation suite;
- performance: the node baseline probes (:func:`aiplat.node.baseline.record`), cold model
  pulls (:func:`aiplat.artifacts.pull.pull`) of a synthetic model from a registry (Debian's
  ``docker-registry`` started on 127.0.0.1 unless ``registry`` is given), and a network
  throughput probe. The probe is pluggable (:data:`NetworkProbe`): the default is iperf3 on
  loopback when installed, else a plain TCP stream; the lab's ``aiplat net check`` can be
  plugged in by passing its function.

Why here and not in ``aiplat.ops.acceptance``: this module starts processes and opens sockets;
keeping that apart lets the core stay pure and unit-testable.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform as pyplatform
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from aiplat import __version__
from aiplat.errors import AiplatError, InputError
from aiplat.findings import line
from aiplat.ops.acceptance import (
    Criterion,
    Measurement,
    Record,
    inventory_criterion,
    network_isolation,
    performance_criteria,
    quota_coverage,
    repeatability_criteria,
)
from aiplat.spec.models import Platform

NetworkProbe = Callable[[float], tuple[float, str]]
"""``probe(scale) -> (MiB/s, method)``: one network throughput measurement."""

ISOLATION_CHECKS = ("other devices absent", "/dev holds only defaults and injected nodes",
                    "no accelerator without a request")


@dataclass
class Options:
    suites: list[str]
    runs: int = 5
    scale: float = 0.25
    max_cv: float = 0.15
    cv_for: dict[str, float] = field(default_factory=dict)
    tolerance: float = 0.10
    registry: str | None = None
    plain_http: bool | None = None
    """HTTP instead of HTTPS to ``registry``; None: only for loopback (the client's rule)."""
    cdi_specs: list[str] = field(default_factory=list)
    crd_dir: str | None = None
    observed: dict[str, str] = field(default_factory=dict)
    baseline: Record | None = None
    node_baseline: str | None = None
    floors: dict[str, float] = field(default_factory=dict)
    model_mib: int = 32
    network_probe: NetworkProbe | None = None
    podman_image: str | None = None
    spec_file: str = "platform.yaml"
    today: date | None = None


# ------------------------------------------------------------------------------ probes


def tcp_probe(scale: float) -> tuple[float, str]:
    """A plain TCP stream over 127.0.0.1 (MiB/s): the node baseline's loopback probe."""
    from aiplat.node.baseline import loopback_tcp

    return loopback_tcp(scale)


def iperf3_probe(scale: float) -> tuple[float, str]:
    """iperf3 client against a one-shot iperf3 server on 127.0.0.1 (MiB/s received)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    server = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        size = max(16, int(512 * scale))
        for _ in range(50):
            res = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-n",
                                  f"{size}M", "-J"], capture_output=True, text=True, timeout=60,
                                 check=False)
            with contextlib.suppress(ValueError, KeyError, TypeError):
                received = json.loads(res.stdout)["end"]["sum_received"]
                return float(received["bits_per_second"]) / 8 / 2**20, "iperf3 over 127.0.0.1"
            time.sleep(0.05)  # the server is not listening yet
        raise AiplatError(f"iperf3 failed: {res.stderr.strip()[-300:]}")
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=5)
        if server.poll() is None:
            server.kill()
            server.wait()


def default_network_probe() -> NetworkProbe:
    return iperf3_probe if shutil.which("iperf3") else tcp_probe


# ------------------------------------------------------------------------------ registry


@contextlib.contextmanager
def local_registry(workdir: Path) -> Iterator[str]:
    """Debian's docker-registry on a free loopback port, storage under ``workdir``."""
    binary = shutil.which("docker-registry")
    if binary is None:
        raise AiplatError("docker-registry is not installed (fix: apt-get install "
                          "docker-registry, or pass --registry HOST:PORT)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "config.yml"
    config.write_text(f"version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
                      f"    rootdirectory: {workdir / 'storage'}\nhttp:\n"
                      f"  addr: 127.0.0.1:{port}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REGISTRY_")}
    with (workdir / "registry.log").open("ab") as log:
        proc = subprocess.Popen([binary, "serve", str(config)], stdout=log,
                                stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AiplatError("docker-registry did not start: "
                                  + (workdir / "registry.log").read_text()[-500:])
            time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def pull_samples(registry: str, workdir: Path, runs: int, mib: int,
                 plain_http: bool | None = None) -> tuple[Measurement, str]:
    """Push a synthetic model (two weight files, ``mib`` MiB) once, then ``runs`` cold pulls
    into fresh caches (verified while streaming); MiB/s of each."""
    from aiplat.artifacts.cache import Cache
    from aiplat.artifacts.client import open_client
    from aiplat.artifacts.modelpack import ModelInfo
    from aiplat.artifacts.package import package_dir
    from aiplat.artifacts.pull import pull
    from aiplat.artifacts.push import push_package
    from aiplat.artifacts.reference import parse_reference

    model = workdir / "model"
    model.mkdir(parents=True, exist_ok=True)
    half = max(1, mib // 2) * 2**20
    for i in range(2):
        (model / f"model-0000{i + 1}.safetensors").write_bytes(os.urandom(half))
    (model / "config.json").write_text('{"architectures": ["AcceptanceProbe"]}\n')
    ref = parse_reference(f"{registry}/aiplat-acceptance/probe:{os.getpid()}")
    samples = []
    with open_client(ref.registry, plain_http=plain_http, concurrency=4) as client:
        pushed = push_package(client, ref, package_dir(model, ModelInfo(name="probe",
                                                                        version="1")))
        for i in range(runs):
            cache_dir = workdir / f"cache-{i}"
            res = pull(client, Cache(cache_dir), ref, concurrency=4)
            samples.append(res.total_bytes / 2**20 / res.seconds)
            shutil.rmtree(cache_dir, ignore_errors=True)
    shutil.rmtree(model, ignore_errors=True)
    return (Measurement(unit="MiB/s", samples=[round(s, 2) for s in samples],
                        method=f"cold pull of {2 * half // 2**20} MiB, 4 parallel blobs, "
                               f"sha256 verified, from {registry}"),
            pushed.digest)


# ------------------------------------------------------------------------------ CDI


def _free_major() -> int:
    used = {int(p[0]) for line in Path("/proc/devices").read_text().splitlines()
            if len(p := line.split()) == 2 and p[0].isascii() and p[0].isdigit()}
    for major in [*range(60, 64), *range(120, 128), *range(240, 255)]:
        if major not in used:
            return int(major)
    raise AiplatError("no unregistered experimental major number for test device nodes")


@contextlib.contextmanager
def cdi_specs(opts: Options, has_accelerators: bool, workdir: Path
              ) -> Iterator[tuple[list[str], list[str]]]:
    """(spec files, notes): the given ones, the host's, or ones for nodes made for the run."""
    from aiplat.devices import cdi, host

    if opts.cdi_specs:
        yield list(opts.cdi_specs), []
        return
    if has_accelerators:
        files = []
        for name, doc in host.generate("/").items():
            path = workdir / name
            path.write_text(cdi.dumps(doc))
            files.append(str(path))
        yield files, ["CDI specs generated from this host's accelerators"]
        return
    d = workdir / "devnodes"
    d.mkdir(parents=True, exist_ok=True)
    major = _free_major()
    kind = f"acceptance.aiplat.io/acc{os.getpid()}"
    for minor in (0, 1):
        os.mknod(d / f"acc{minor}", 0o020000 | 0o660, os.makedev(major, minor))
        os.chmod(d / f"acc{minor}", 0o660)
    chars = [host.parse_char_option(f"{kind}={n}:/dev/acc{n}={d}/acc{n}") for n in (0, 1)]
    docs = host.generate(chars=chars, env=["ACC_VISIBLE_DEVICES=all"])
    files = []
    for name, doc in docs.items():
        path = workdir / name
        path.write_text(cdi.dumps(doc))
        files.append(str(path))
    try:
        yield files, [f"this host has no accelerator: CDI verification used 2 character "
                      f"device nodes made for the run ({kind}, major {major}, a number no "
                      "driver registered), removed afterwards"]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def cdi_criteria(files: Sequence[str], opts: Options) -> tuple[Criterion, Criterion]:
    from aiplat.devices.verify import PodmanOptions, podman_missing, verify_spec

    popts = PodmanOptions(image=opts.podman_image) if opts.podman_image else PodmanOptions()
    reason = podman_missing(popts)
    if reason or not files:
        why = reason or "no CDI spec to verify"
        return (Criterion(id="function.cdi-verify", suite="function", title="CDI verify passes",
                          status="skip", observed=why),
                Criterion(id="isolation.devices", suite="isolation",
                          title="containers see only their devices", status="skip",
                          observed=why))
    fn_ev, iso_ev, fn_bad, iso_bad, count = [], [], [], [], 0
    for f in files:
        v = verify_spec(f, popts)
        for r in v.results:
            count += 1
            line = f"{r.device}: {'pass' if r.ok else 'FAIL'} ({r.seconds:.2f} s) {r.reason()}"
            fn_ev.append(line)
            if not r.ok:
                fn_bad.append(f"{r.device}: {r.reason()}")
            for c in r.checks:
                if c.what in ISOLATION_CHECKS:
                    iso_ev.append(f"{r.device}: {c.what}: {c.evidence}")
                    if not c.ok:
                        iso_bad.append(f"{r.device}: {c.what}: {c.evidence}")
            if r.error:
                iso_bad.append(f"{r.device}: {r.error}")
    return (Criterion(id="function.cdi-verify", suite="function",
                      title="CDI verify passes in Podman", status="fail" if fn_bad else "pass",
                      expected="every device bound as the spec says",
                      observed="; ".join(fn_bad) or f"{count} containers, all pass",
                      evidence=fn_ev),
            Criterion(id="isolation.devices", suite="isolation",
                      title="containers see only their devices (none without a request)",
                      status="fail" if iso_bad else "pass",
                      expected="no foreign or extra device node in any container",
                      observed="; ".join(iso_bad) or f"{len(iso_ev)} isolation checks pass",
                      evidence=iso_ev))


# ------------------------------------------------------------------------------ the run


def fingerprint(inv: Any) -> dict[str, Any]:
    from aiplat.node.baseline import fingerprint as node_fingerprint

    fp: dict[str, Any] = dict(node_fingerprint(inv))
    rt = inv.software.runtimes if inv is not None else {}
    fp |= {"runtimes": ", ".join(f"{k} {v}" for k, v in sorted(rt.items())) or None,
           "os": pyplatform.platform(), "aiplat": __version__}
    return fp


def run_acceptance(platform: Platform, pool: str, opts: Options,
                   progress: Callable[[str], None] = lambda _: None) -> Record:
    """Run the requested suites; every failure becomes a criterion, not an exception."""
    from aiplat.catalog import load_catalog
    from aiplat.kube.crds import load_crds
    from aiplat.kube.lint.base import Context
    from aiplat.kube.lint.rules.admission import resourcequota_admits
    from aiplat.kube.pipeline import check_platform, rendered_items
    from aiplat.node.collect import collect_inventory
    from aiplat.node.service import check_node

    if opts.runs < 1:
        raise InputError("--runs must be at least 1 (fix: e.g. --runs 5)")
    pool_spec = platform.pool(pool)
    if pool_spec is None:
        raise InputError(f"--pool {pool}: no such pool (fix: use one of "
                         f"{', '.join(p.name for p in platform.pools)})")
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    criteria: list[Criterion] = []
    measurements: dict[str, Measurement] = {}
    notes: list[str] = []
    progress("inventory and node checks")
    inv = collect_inventory("/")
    outcome = check_node(platform=platform, pool=pool, inventory=inv, matrix=True,
                         observed=opts.observed, today=opts.today)
    m = outcome.matrix
    matrix: dict[str, Any] = {"matched": m.matched if m else None,
                              "closest": m.closest if m else None}
    entry = next((e for e in platform.versions.approved
                  if e.name == (matrix["matched"] or matrix["closest"])), None)
    matrix["entry"] = entry.model_dump(exclude_none=True) if entry else None
    matrix["observed"] = m.observed if m else {}
    if m is not None:
        matrix["differences"] = [d.model_dump() for d in
                                 next((e.differences for e in m.entries
                                       if e.name == matrix["closest"]), [])]
        matrix["facts"] = [f.model_dump() for f in m.facts]
    catalog = load_catalog()
    kube = None
    if "function" in opts.suites or "isolation" in opts.suites:
        progress("render, validate and lint the manifests")
        crds = load_crds(opts.crd_dir) if opts.crd_dir else None
        kube = check_platform(platform, catalog, crds, versions=(platform.kubernetes.version,))
    with tempfile.TemporaryDirectory(prefix="aiplat-accept-") as tmp:
        work = Path(tmp)
        cdi_pair: tuple[Criterion, Criterion] | None = None
        if "function" in opts.suites or "isolation" in opts.suites:
            progress("CDI verification in Podman")
            has_acc = bool(inv.gpus)
            with cdi_specs(opts, has_acc, work) as (files, cdi_notes):
                notes += cdi_notes
                cdi_pair = cdi_criteria(files, opts)
        if "function" in opts.suites:
            node = pool_spec.node
            criteria.append(inventory_criterion(
                spec_cpus=node.cpu_cores, spec_memory_gib=node.memory_gib,
                spec_gpus=node.gpu.count if node.gpu else 0,
                spec_gpu_model=node.gpu.model if node.gpu else None,
                cpus=inv.host.cpu.threads if inv.host.cpu else None,
                memory_kib=inv.host.memory_kib, gpus=len(inv.gpus),
                gpu_names=[d.name for d in inv.gpu_details if d.name]))
            rep = outcome.report
            bad = [f"{r.name} {r.subject}: {r.observed} (expected {r.expected})"
                   for r in rep.results if r.status == "fail"]
            criteria.append(Criterion(
                id="function.node-checks", suite="function", title="node checks pass",
                status="fail" if bad else "pass", expected="no failed check",
                observed="; ".join(bad) or f"{len(rep.results)} checks, status {rep.status}",
                evidence=[f"{r.name}: {r.status} {r.subject} {r.observed}"
                          for r in rep.results]))
            criteria.append(Criterion(
                id="function.matrix", suite="function",
                title="node runs an approved version combination",
                status="pass" if matrix["matched"] else "fail",
                expected="one entry of versions.approved matches",
                observed=(f"matches '{matrix['matched']}'" if matrix["matched"] else
                          f"closest '{matrix['closest']}' differs: "
                          + ", ".join(_matrix_difference(d)
                                      for d in matrix.get("differences", []))),
                evidence=[f"{k}={v}" for k, v in matrix["observed"].items()]))
            assert cdi_pair is not None
            criteria.append(cdi_pair[0])
            assert kube is not None
            errors = sum(len(v.errors) for v in kube.validations)
            lint_errors = [f for f in kube.findings if f.severity == "error"]
            criteria.append(Criterion(
                id="function.manifests", suite="function",
                title="manifests validate and lint clean", status="pass" if kube.ok else "fail",
                expected="0 validation errors, 0 lint errors",
                observed=f"{len(kube.rendered.objects())} objects; validation "
                         + ", ".join(f"{v.version}: {len(v.errors)} errors"
                                     for v in kube.validations)
                         + f"; lint {len(lint_errors)} errors, "
                           f"{len(kube.findings) - len(lint_errors)} warnings",
                evidence=[f"{i.path}: {i.message}" for v in kube.validations
                          for i in v.issues][:50]
                + [line(f) for f in kube.findings][:50]))
            del errors
        if "isolation" in opts.suites:
            assert kube is not None and cdi_pair is not None
            criteria.append(cdi_pair[1])
            objects = [o for _, o in rendered_items(kube.rendered)]
            criteria.append(network_isolation(objects, [t.name for t in platform.tenants]))
            rq = resourcequota_admits(Context(kube.rendered.objects(), kube.rendered.inventory))
            criteria.append(quota_coverage(objects, [f"{f.subject}: {f.message}" for f in rq]))
        if "performance" in opts.suites or "repeatability" in opts.suites:
            measurements |= _performance(opts, inv, work, notes, progress)
            floors = _floors(platform, pool, opts)
            if "performance" in opts.suites:
                criteria += performance_criteria(measurements, floors)
                if opts.node_baseline:
                    criteria.append(_node_baseline_criterion(opts, measurements, platform,
                                                             pool))
            if "repeatability" in opts.suites:
                criteria += repeatability_criteria(measurements, opts.max_cv, opts.baseline,
                                                   opts.tolerance, cv_for=opts.cv_for)
    if opts.baseline is not None:
        notes.append(f"compared with the acceptance record of {opts.baseline.started_at}")
    return Record(started_at=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                  finished_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  seconds=round(time.perf_counter() - t0, 2), platform=platform.metadata.name,
                  pool=pool, spec_file=opts.spec_file, suites=opts.suites, runs=opts.runs,
                  matrix=matrix, fingerprint=fingerprint(inv), criteria=criteria,
                  measurements=measurements, notes=notes)


NODE_METRICS = ("cpu.sha256", "cpu.matmul", "memory.copy", "disk.write", "disk.read")


def _performance(opts: Options, inv: Any, work: Path, notes: list[str],
                 progress: Callable[[str], None]) -> dict[str, Measurement]:
    from aiplat.node.baseline import record

    out: dict[str, Measurement] = {}
    progress(f"node baseline probes, {opts.runs} runs")
    base = record(runs=opts.runs, scale=opts.scale, directory=work, inventory=inv,
                  only=list(NODE_METRICS))
    for name, metric in base.metrics.items():
        out[f"node.{name}"] = Measurement(unit=metric.unit, samples=metric.samples,
                                          method=metric.method)
    progress(f"model pulls, {opts.runs} cold pulls")
    if opts.registry:
        out["model.pull"], _ = pull_samples(opts.registry, work / "pull", opts.runs,
                                            opts.model_mib, opts.plain_http)
    else:
        with local_registry(work / "registry") as reg:
            out["model.pull"], _ = pull_samples(reg, work / "pull", opts.runs, opts.model_mib)
        notes.append("model pulls from a docker-registry started for the run on 127.0.0.1")
    probe = opts.network_probe or default_network_probe()
    progress(f"network throughput, {opts.runs} runs")
    samples, method = [], ""
    for _ in range(opts.runs):
        value, method = probe(opts.scale)
        samples.append(round(value, 2))
    out["network.throughput"] = Measurement(unit="MiB/s", samples=samples, method=method)
    if "127.0.0.1" in method:
        notes.append("network throughput measured on loopback: it proves the host's stack, "
                     "not the NIC; plug in a peer probe (the lab's net check) for the fabric")
    return out


def _floors(platform: Platform, pool: str, opts: Options) -> dict[str, tuple[float, str]]:
    floors: dict[str, tuple[float, str]] = {}
    node = platform.pool(pool)
    if node is not None and node.node.nics:
        gbps = min(n.rate_gbps for n in node.node.nics)
        floors["network.throughput"] = (gbps * 1e9 / 8 / 2**20 * 0.9,
                                        f"90% of the slowest NIC in the spec, {gbps:g} Gbit/s")
    for k, v in opts.floors.items():
        floors[k] = (v, "--min")
    return floors


def _node_baseline_criterion(opts: Options, measurements: Mapping[str, Measurement],
                             platform: Platform, pool: str) -> Criterion:
    from aiplat.node.baseline import Baseline, Metric, compare, load_baseline

    assert opts.node_baseline is not None
    base = load_baseline(opts.node_baseline)
    metrics = {k[5:]: Metric(unit=m.unit, samples=m.samples, median=m.median, mad=0.0)
               for k, m in measurements.items() if k.startswith("node.")}
    current = Baseline(recorded_at="now", fingerprint=base.fingerprint, runs=opts.runs,
                       scale=opts.scale, metrics=metrics)
    spec_pool = platform.pool(pool)
    tol = float(spec_pool.node.checks.baseline_tolerance) if spec_pool else opts.tolerance
    cmp = compare(base, current, tol, opts.node_baseline)
    return Criterion(
        id="performance.node-baseline", suite="performance",
        title="node baseline against the recorded node baseline",
        status=cmp.status, expected=f"no metric below its threshold (tolerance {tol:.0%})",
        observed=", ".join(f"{x.name} {x.status}" + (f" x{x.ratio:.2f}" if x.ratio else "")
                           for x in cmp.metrics),
        evidence=cmp.rollback)


def _matrix_difference(d: dict[str, Any]) -> str:
    """One differing key; a version the node cannot show (Kubernetes, Kueue on a node that is
    not in a cluster yet) says how to give it."""
    if d["observed"] is None:
        return (f"{d['key']} not observable on this node (expected {d['expected']}; pass "
                f"--observed {d['key']}=VERSION)")
    return f"{d['key']} {d['observed']} != {d['expected']}"
