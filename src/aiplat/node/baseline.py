"""Performance baseline: record what a node does when it is accepted, compare it later.

Design:
- Each probe is a small fixed kernel measuring one resource in its own unit, higher is
  better: CPU (SHA-256 over a fixed buffer, single thread; float64 matmul), memory (copy of
  arrays far larger than the caches), disk (fio when installed, else O_DIRECT sequential write
  and read, falling back to fsync + fadvise(DONTNEED) where O_DIRECT is refused), loopback TCP,
  and on GPU machines host-to-device copy and BF16 matmul when torch is importable.
- Every probe runs ``runs`` times; the baseline keeps all samples, their median and the
  median absolute deviation (MAD). ``compare`` (pure) flags a metric when the new median is
  below ``baseline × (1 − max(tolerance, 3 × relative robust spread))``: the tolerance comes
  from the spec (``checks.baselineTolerance``), the spread guards against flagging noise.
- The document carries an environment fingerprint (kernel, driver, CPU, memory, libraries,
  CPUs available to the process) so a regression can be tied to what changed, and rollback
  guidance can name the last good state.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import platform as pyplatform
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from aiplat import __version__
from aiplat.errors import InputError
from aiplat.fieldnames import camel, camel_key
from aiplat.node.inventory import Inventory

BASELINE_VERSION: Literal["aiplat.io/node-baseline/v1"] = "aiplat.io/node-baseline/v1"
MAX_THRESHOLD = 0.5


class BaselineModel(BaseModel):
    # Written with the spec's spelling (camelCase aliases, ``fieldnames.camel_key``); built in
    # code by the Python names.
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=camel_key,
                              validate_by_name=True, validate_by_alias=True)


class Metric(BaselineModel):
    unit: str
    samples: list[float]
    median: float
    mad: float
    method: str = ""


class Baseline(BaselineModel):
    schema_version: Literal["aiplat.io/node-baseline/v1"] = BASELINE_VERSION
    recorded_at: str
    fingerprint: dict[str, str | int | None]
    matrix_entry: str | None = None
    runs: int
    scale: float
    metrics: dict[str, Metric]
    skipped: dict[str, str] = {}

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        """A baseline written before aiplat's JSON was camelCase (``schema_version``,
        ``cpu_model``) read as a new one: field and fingerprint names in camelCase, the
        metric names (data) as they are."""
        return camel(data, data_maps=("metrics", "skipped")) if isinstance(data, dict) else data

    def dump_json(self) -> str:
        """The file ``node baseline record -w`` writes."""
        return self.model_dump_json(indent=2, by_alias=True) + "\n"


class MetricComparison(BaselineModel):
    name: str
    unit: str
    status: Literal["pass", "fail", "missing"]
    baseline: float
    current: float | None
    ratio: float | None
    threshold: float
    noisy: bool = False


class Comparison(BaselineModel):
    status: Literal["pass", "fail"]
    tolerance: float
    metrics: list[MetricComparison]
    changed: dict[str, tuple[str | int | None, str | int | None]]
    rollback: list[str] = []


# ------------------------------------------------------------------------------ probes

Probe = Callable[[float, Path], tuple[float, str]]


def _cpu_sha256(scale: float, _: Path) -> tuple[float, str]:
    size = max(1, int(64 * scale)) * 1024 * 1024
    buf = bytes(range(256)) * (size // 256)
    t0 = time.perf_counter()
    hashlib.sha256(buf).digest()
    return size / (1024 * 1024) / (time.perf_counter() - t0), "sha256, one thread"


def _cpu_matmul(scale: float, _: Path) -> tuple[float, str]:
    import numpy as np  # here, not at import: the node agent loads this module without it
    n = 384
    a = np.full((n, n), 1.0001)
    b = np.full((n, n), 0.9999)
    a @ b  # warm-up: the first product pays for BLAS thread start-up and page faults
    # At least 8 products and 0.4 s × scale: a few milliseconds of work is all timer noise.
    min_s = 0.4 * scale
    reps = 0
    t0 = time.perf_counter()
    while reps < max(8, int(24 * scale)) or time.perf_counter() - t0 < min_s:
        a @ b
        reps += 1
    return reps * 2 * n ** 3 / (time.perf_counter() - t0) / 1e9, f"float64 {n}x{n} matmul"


def _memory_copy(scale: float, _: Path) -> tuple[float, str]:
    import numpy as np
    n = 128 * 1024 * 1024 // 8  # 128 MiB: well past any last-level cache
    src = np.ones(n)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # fault the pages in before timing
    reps = max(2, int(8 * scale))
    t0 = time.perf_counter()
    for _i in range(reps):
        np.copyto(dst, src)
    # A copy reads and writes every byte: count both, like STREAM's copy.
    return reps * 2 * src.nbytes / (time.perf_counter() - t0) / 2**30, "numpy copy (read+write)"


def _disk(scale: float, directory: Path) -> tuple[float, float, str]:
    size = max(4, int(256 * scale)) * 1024 * 1024
    block = 1024 * 1024
    path = Path(tempfile.mkstemp(dir=directory, prefix=".aiplat-baseline-")[1])
    try:
        if shutil.which("fio") and os.environ.get("AIPLAT_NO_FIO") != "1":
            return _fio(path, size)
        import mmap

        buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT requires
        buf.write(b"\xa5" * block)
        direct = True
        try:
            fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
        except OSError:
            direct = False
            fd = os.open(path, os.O_WRONLY)
        t0 = time.perf_counter()
        try:
            for _i in range(size // block):
                try:
                    os.write(fd, buf)
                except OSError:
                    if not direct:
                        raise
                    os.close(fd)
                    direct = False
                    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
                    os.write(fd, buf)
            os.fsync(fd)
        finally:
            os.close(fd)
        write = size / 2**20 / (time.perf_counter() - t0)
        if not direct:
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
        t0 = time.perf_counter()
        try:
            while os.readv(fd, [buf]) > 0:
                pass
        finally:
            os.close(fd)
        read = size / 2**20 / (time.perf_counter() - t0)
        return write, read, ("O_DIRECT" if direct else "buffered+fsync") + " 1 MiB blocks"
    finally:
        path.unlink(missing_ok=True)


def _fio(path: Path, size: int) -> tuple[float, float, str]:
    out = {}
    for rw in ("write", "read"):
        proc = subprocess.run(
            ["fio", "--name=aiplat", f"--filename={path}", f"--rw={rw}", "--bs=1M",
             f"--size={size}", "--direct=1", "--ioengine=psync", "--output-format=json"],
            capture_output=True, text=True, timeout=600, check=True)
        job = json.loads(proc.stdout)["jobs"][0][rw]
        out[rw] = job["bw_bytes"] / 2**20
    return out["write"], out["read"], "fio psync direct 1 MiB"


def _loopback(scale: float, _: Path) -> tuple[float, str]:
    return loopback_tcp(scale)


def loopback_tcp(scale: float) -> tuple[float, str]:
    """A plain TCP stream over 127.0.0.1 in MiB/s (also the acceptance fallback probe)."""
    size = max(8, int(256 * scale)) * 1024 * 1024
    chunk = b"\0" * (256 * 1024)
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    received = 0

    def sink() -> None:
        nonlocal received
        conn, _addr = srv.accept()
        with conn:
            while data := conn.recv(1 << 20):
                received += len(data)

    t = threading.Thread(target=sink)
    t.start()
    t0 = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as c:
        for _i in range(size // len(chunk)):
            c.sendall(chunk)
    t.join()
    srv.close()
    return received / 2**20 / (time.perf_counter() - t0), "TCP over 127.0.0.1"


def _torch() -> Any | None:
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _gpu_h2d(scale: float, _: Path) -> tuple[float, str]:
    torch = _torch()
    assert torch is not None
    n = max(64, int(1024 * scale)) * 1024 * 1024
    host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    dev.copy_(host)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _i in range(5):
        dev.copy_(host, non_blocking=True)
    torch.cuda.synchronize()
    return 5 * n / (time.perf_counter() - t0) / 1e9, "pinned host to GPU 0 copy, GB/s"


def _gpu_matmul(scale: float, _: Path) -> tuple[float, str]:
    torch = _torch()
    assert torch is not None
    n = 8192
    a = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    a @ b
    torch.cuda.synchronize()
    reps = max(5, int(50 * scale))
    t0 = time.perf_counter()
    for _i in range(reps):
        a @ b
    torch.cuda.synchronize()
    return reps * 2 * n ** 3 / (time.perf_counter() - t0) / 1e12, "BF16 8192^3 matmul on GPU 0"


UNITS = {"cpu.sha256": "MiB/s", "cpu.matmul": "GFLOP/s", "memory.copy": "GiB/s",
         "disk.write": "MiB/s", "disk.read": "MiB/s", "network.loopback": "MiB/s",
         "gpu.h2d": "GB/s", "gpu.bf16_matmul": "TFLOP/s"}


def _numpy_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("numpy")
    except PackageNotFoundError:  # the node-agent image leaves it out
        return None


def fingerprint(inv: Inventory | None) -> dict[str, str | int | None]:
    cpu = inv.host.cpu if inv else None
    drv = inv.software.nvidia_driver if inv else None
    return {
        "hostname": (inv.host.hostname if inv else None) or socket.gethostname(),
        "kernel": (inv.host.kernel if inv else None) or pyplatform.release(),
        "cpuModel": cpu.model if cpu else pyplatform.processor() or None,
        "cpusOnline": os.cpu_count(),
        "cpusAvailable": len(os.sched_getaffinity(0)),
        "memoryKib": inv.host.memory_kib if inv else None,
        "nvidiaDriver": drv.version if drv else None,
        "gpus": len(inv.gpus) if inv else None,
        "python": pyplatform.python_version(),
        "numpy": _numpy_version(),
        "aiplat": __version__,
    }


MAX_SCALE = 64.0
"""The most work per probe (x64: 4 GiB disk and memory probes)."""


def _checked(runs: int, scale: float, only: list[str] | None,
             directory: str | Path | None) -> Path:
    """The directory to measure, once the options are known to be sound."""
    if runs < 1:
        raise InputError("--runs must be at least 1 (fix: e.g. --runs 5)")
    if not math.isfinite(scale) or not 0 < scale <= MAX_SCALE:
        raise InputError(f"--scale {scale:g}: must be above 0 and at most {MAX_SCALE:g} (fix: "
                         "e.g. --scale 1, or 0.25 for a quick look)")
    if only:
        unknown = sorted(set(only) - set(UNITS))
        if unknown:
            raise InputError(f"unknown metric(s) {', '.join(unknown)} (fix: use "
                             f"{', '.join(UNITS)})")
    d = Path(directory or tempfile.gettempdir())
    if not d.is_dir():
        raise InputError(f"--dir {d}: not a directory (fix: give a directory on the disk "
                         "to measure, e.g. /var/lib/containerd)")
    return d


def record(*, runs: int = 5, scale: float = 1.0, directory: str | Path | None = None,
           inventory: Inventory | None = None, matrix_entry: str | None = None,
           only: list[str] | None = None,
           progress: Callable[[int, int, str], None] | None = None) -> Baseline:
    """Each probe ``runs`` times; the medians, their spread and the node's fingerprint.
    ``progress(done, total, running)`` hears before each probe how many probe runs are
    done of how many, and which starts (``"run 2/5 cpu.matmul"``)."""
    d = _checked(runs, scale, only, directory)
    samples: dict[str, list[float]] = {}
    methods: dict[str, str] = {}
    skipped: dict[str, str] = {}
    probes: dict[str, Probe] = {"cpu.sha256": _cpu_sha256, "cpu.matmul": _cpu_matmul,
                                "memory.copy": _memory_copy, "network.loopback": _loopback}
    if _torch() is not None:
        probes |= {"gpu.h2d": _gpu_h2d, "gpu.bf16_matmul": _gpu_matmul}
    else:
        skipped |= {"gpu.h2d": "torch with CUDA not importable",
                    "gpu.bf16_matmul": "torch with CUDA not importable"}

    def wanted(name: str) -> bool:
        return not only or name in only

    disk = wanted("disk.write") or wanted("disk.read")
    total = runs * (sum(1 for name in probes if wanted(name)) + disk)
    done = 0

    def starting(run: int, name: str) -> None:
        if progress:
            progress(done, total, f"run {run + 1}/{runs} {name}")

    for run in range(runs):
        for name, probe in probes.items():
            if not wanted(name):
                continue
            starting(run, name)
            value, method = probe(scale, d)
            done += 1
            samples.setdefault(name, []).append(value)
            methods[name] = method
        if disk:
            starting(run, "disk")
            w, r, method = _disk(scale, d)
            done += 1
            for name, value in (("disk.write", w), ("disk.read", r)):
                if wanted(name):
                    samples.setdefault(name, []).append(value)
                    methods[name] = f"{method} in {d}"
    if progress:
        progress(done, total, "")
    metrics = {
        name: Metric(unit=UNITS[name], samples=[round(v, 3) for v in vals],
                     median=statistics.median(vals), mad=_mad(vals), method=methods[name])
        for name, vals in samples.items()
    }
    return Baseline(recorded_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    fingerprint=fingerprint(inventory), matrix_entry=matrix_entry, runs=runs,
                    scale=scale, metrics=metrics,
                    skipped={k: v for k, v in skipped.items() if wanted(k)})


def _mad(values: list[float]) -> float:
    med = statistics.median(values)
    return statistics.median(abs(v - med) for v in values)


def compare(base: Baseline, current: Baseline, tolerance: float,
            baseline_name: str = "the baseline") -> Comparison:
    """Pure: each metric's new median against the baseline's, beyond tolerance and noise."""
    out = []
    for name, b in base.metrics.items():
        # 1.4826 × MAD estimates the standard deviation for normal noise.
        spread = 1.4826 * b.mad / b.median if b.median else 0.0
        # Capped: a baseline too noisy to tell a halving from noise is reported as noisy.
        threshold = min(MAX_THRESHOLD, max(tolerance, 3 * spread))
        noisy = 3 * spread > MAX_THRESHOLD
        c = current.metrics.get(name)
        if c is None:
            out.append(MetricComparison(name=name, unit=b.unit, status="missing",
                                        baseline=b.median, current=None, ratio=None,
                                        threshold=threshold, noisy=noisy))
            continue
        ratio = c.median / b.median if b.median else 1.0
        out.append(MetricComparison(name=name, unit=b.unit,
                                    status="fail" if ratio < 1 - threshold else "pass",
                                    baseline=b.median, current=c.median, ratio=ratio,
                                    threshold=threshold, noisy=noisy))
    changed = fingerprint_changes(base, current.fingerprint)
    failed = any(m.status == "fail" for m in out)
    return Comparison(status="fail" if failed else "pass", tolerance=tolerance, metrics=out,
                      changed=changed,
                      rollback=rollback_steps(base, changed, baseline_name) if failed else [])


def fingerprint_changes(base: Baseline, now: dict[str, str | int | None]
                        ) -> dict[str, tuple[Any, Any]]:
    """What differs between the baseline's environment and ``now`` (tool versions of aiplat
    itself and Python excluded: they do not change the node)."""
    keys = sorted(set(base.fingerprint) | set(now))
    return {k: (base.fingerprint.get(k), now.get(k)) for k in keys
            if k not in ("python", "aiplat", "numpy") and base.fingerprint.get(k) != now.get(k)}


def rollback_steps(base: Baseline, changed: dict[str, tuple[Any, Any]],
                   baseline_name: str) -> list[str]:
    """What to do when a node got slower than its last good baseline."""
    fp = base.fingerprint
    steps = [f"last good state: {baseline_name}, recorded {base.recorded_at} on kernel "
             f"{fp.get('kernel')}, driver {fp.get('nvidiaDriver') or 'none'}"
             + (f", matrix entry '{base.matrix_entry}'" if base.matrix_entry else "")]
    if not changed:
        steps.append("nothing in the fingerprint changed: suspect hardware or load; drain the "
                     "node, run `aiplat node burnin` and `aiplat node check`, compare again "
                     "when idle")
    if "cpusAvailable" in changed:
        a, b = changed["cpusAvailable"]
        steps.append(f"CPUs available to the process changed {a} -> {b}: check cgroup/cpuset "
                     "limits and CPU isolation before blaming the node")
    if "kernel" in changed:
        steps.append(f"kernel changed {changed['kernel'][0]} -> {changed['kernel'][1]}: boot the "
                     "previous kernel (`grub-reboot` its menu entry), then compare again")
    if "nvidiaDriver" in changed:
        old = changed["nvidiaDriver"][0]
        steps.append(f"driver changed: reinstall {old} from the approved matrix entry "
                     "(`aiplat node prepare --entry NAME` prints the pinned steps), reboot")
    steps.append("after rolling back: `aiplat node check --matrix` and `aiplat node baseline "
                 "compare` must both pass before the node is uncordoned")
    return steps


def load_baseline(path: str | Path) -> Baseline:
    from aiplat import inputs

    p = Path(path)
    try:
        data = inputs.mapping(inputs.load_json(p, "a node baseline (JSON)"), p,
                              "a node baseline (JSON)",
                              "record one with `aiplat node baseline record -w FILE`")
        return Baseline.model_validate(data)
    except InputError as e:
        raise InputError(f"{e} (record one with `aiplat node baseline record -w FILE`)") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise InputError(f"{p}: not an aiplat baseline ({where}: {first['msg']}) (fix: record "
                         "it again with this version of aiplat)") from e
