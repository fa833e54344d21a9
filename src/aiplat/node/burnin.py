"""Burn-in: sustained stress while watching temperatures and error counters.

Workers: one float64 matmul thread per CPU available (numpy releases the GIL, so threads load
every core), one memory-copy thread, and a BF16 matmul loop on every GPU when torch with CUDA
is importable. Once a second the sampler reads temperatures (``/sys/class/hwmon/*/temp*_input``
and NVML when present) and the loop counts completed iterations.

Pass/fail (``evaluate_burnin`` is pure): fail on any new error during the run (host memory
EDAC ``ce_count``/``ue_count``, GPU XIDs, uncorrected ECC), on a temperature above the limit,
or when throughput in the last third of the run fell more than ``max_drop`` below the first
third (thermal or power throttling under sustained load).
"""

from __future__ import annotations

import importlib
import itertools
import math
import os
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from aiplat.errors import InputError
from aiplat.node.kernlog import read_xids
from aiplat.node.tree import Tree

MIN_SAMPLES = 30


class BurninModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Counters(BurninModel):
    edac_ce: int = 0
    edac_ue: int = 0
    xids: int = 0
    gpu_ecc_uncorrected: int = 0


class Sample(BurninModel):
    t: float
    iterations: int
    max_temp_c: float | None


class BurninReport(BurninModel):
    status: Literal["pass", "fail"]
    duration_s: float
    workers: int
    gpu: bool
    iterations: int
    throughput_first: float | None
    throughput_last: float | None
    max_temp_c: float | None
    temp_limit_c: float
    counters_before: Counters
    counters_after: Counters
    problems: list[str]


def read_counters(root: str | Path | Tree = "/") -> Counters:
    tree = Tree.of(root)
    ce = ue = 0
    for d in tree.glob(tree.path("/sys/devices/system/edac/mc"), "mc[0-9]*"):
        ce += tree.number(d / "ce_count") or 0
        ue += tree.number(d / "ue_count") or 0
    try:
        xids = len(read_xids(tree) or [])
    except OSError:
        xids = 0
    gpu = GpuSensors.open() if tree.live else None
    unc = gpu.ecc_uncorrected() if gpu else 0
    return Counters(edac_ce=ce, edac_ue=ue, xids=xids, gpu_ecc_uncorrected=unc)


class GpuSensors:
    """GPU temperatures and ECC counters through NVML, opened once for the whole run
    (NVIDIA GPUs do not appear in hwmon). ``open()`` is None without NVML or GPUs."""

    def __init__(self, nv: Any, handles: list[Any]) -> None:
        self._nv, self._handles = nv, handles

    @classmethod
    def open(cls) -> GpuSensors | None:
        try:
            nv: Any = importlib.import_module("pynvml")
            nv.nvmlInit()
            handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(nv.nvmlDeviceGetCount())]
        except Exception:  # no library, no driver, no GPU: hwmon only
            return None
        return cls(nv, handles) if handles else None

    def max_temp(self) -> float | None:
        temps = []
        for h in self._handles:
            try:
                temps.append(float(self._nv.nvmlDeviceGetTemperature(
                    h, self._nv.NVML_TEMPERATURE_GPU)))
            except Exception:
                continue
        return max(temps) if temps else None

    def ecc_uncorrected(self) -> int:
        total = 0
        for h in self._handles:
            try:
                total += int(self._nv.nvmlDeviceGetTotalEccErrors(
                    h, self._nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, self._nv.NVML_VOLATILE_ECC))
            except Exception:
                continue
        return total


def read_max_temp(root: str | Path | Tree = "/") -> float | None:
    tree = Tree.of(root)
    temps = []
    for f in tree.glob(tree.path("/sys/class/hwmon"), "hwmon*/temp*_input"):
        v = tree.number(f)
        if v is not None:
            temps.append(v / 1000)
    return max(temps) if temps else None


def evaluate_burnin(  # noqa: PLR0917
        samples: list[Sample], before: Counters, after: Counters,
                    temp_limit_c: float, max_drop: float, workers: int, gpu: bool,
                    duration_s: float) -> BurninReport:
    problems = []
    if workers < 1 or samples[-1].iterations == 0:
        # No work done is no evidence: it must never read as a pass.
        problems.append(f"no stress iterations ran ({workers} CPU workers): nothing was "
                        "tested")
    if after.edac_ue > before.edac_ue:
        problems.append(f"{after.edac_ue - before.edac_ue} uncorrected host memory errors (EDAC)")
    if after.edac_ce > before.edac_ce:
        problems.append(f"{after.edac_ce - before.edac_ce} corrected host memory errors (EDAC)")
    if after.gpu_ecc_uncorrected > before.gpu_ecc_uncorrected:
        problems.append(f"{after.gpu_ecc_uncorrected - before.gpu_ecc_uncorrected} new "
                        "uncorrected GPU ECC errors")
    if after.xids > before.xids:
        problems.append(f"{after.xids - before.xids} new GPU XID events in the kernel log")
    temps = [s.max_temp_c for s in samples if s.max_temp_c is not None]
    hottest = max(temps) if temps else None
    if hottest is not None and hottest > temp_limit_c:
        problems.append(f"temperature reached {hottest:g} C (limit {temp_limit_c:g} C)")
    rates = [(b.iterations - a.iterations) / (b.t - a.t)
             for a, b in itertools.pairwise(samples) if b.t > a.t]
    first = last = None
    # Judging throttling needs a sustained run: below MIN_SAMPLES seconds, a busy neighbour
    # or the page cache warming up moves the rate more than a throttled GPU or CPU would.
    if len(rates) >= MIN_SAMPLES:
        third = len(rates) // 3
        first = statistics.median(rates[:third])
        last = statistics.median(rates[-third:])
        if first > 0 and last < first * (1 - max_drop):
            problems.append(f"throughput fell {100 * (1 - last / first):.0f}% from the first to "
                            "the last third of the run (throttling?)")
    return BurninReport(
        status="fail" if problems else "pass", duration_s=duration_s, workers=workers, gpu=gpu,
        iterations=samples[-1].iterations if samples else 0, throughput_first=first,
        throughput_last=last, max_temp_c=hottest, temp_limit_c=temp_limit_c,
        counters_before=before, counters_after=after, problems=problems)


def run_burnin(duration_s: float, *, root: str | Path = "/", temp_limit_c: float = 85,
               max_drop: float = 0.15, workers: int | None = None,
               on_tick: Callable[[float, int], None] | None = None) -> BurninReport:
    if duration_s <= 0:
        raise InputError("--duration must be positive (fix: e.g. --duration 30m)")
    cpus = len(os.sched_getaffinity(0))
    n = workers or cpus
    if not 1 <= n <= 4 * cpus:
        # Past a few threads per CPU the run measures contention, not the node, and
        # thousands of BLAS threads abort the process.
        raise InputError(f"--workers {n}: give 1 to {4 * cpus} (4 per CPU available; "
                         f"{cpus} here) (fix: omit --workers to use one per CPU)")
    stop = threading.Event()
    counts = [0] * (n + 1)

    def cpu_worker(k: int) -> None:
        a = np.full((256, 256), 1.0001)
        while not stop.is_set():
            a @ a
            counts[k] += 1

    def mem_worker() -> None:
        src = np.ones(32 * 1024 * 1024 // 8)
        dst = np.empty_like(src)
        while not stop.is_set():
            np.copyto(dst, src)

    gpu = _gpu_stress(stop)
    threads = [threading.Thread(target=cpu_worker, args=(k,), daemon=True) for k in range(n)]
    threads.append(threading.Thread(target=mem_worker, daemon=True))
    before = read_counters(root)
    t0 = time.monotonic()
    for t in threads:
        t.start()
    sensors = GpuSensors.open() if str(root) == "/" else None

    def hottest() -> float | None:
        temps = [t for t in (read_max_temp(root), sensors.max_temp() if sensors else None)
                 if t is not None]
        return max(temps) if temps else None

    samples = [Sample(t=0.0, iterations=0, max_temp_c=hottest())]
    try:
        while (elapsed := time.monotonic() - t0) < duration_s:
            time.sleep(min(1.0, duration_s - elapsed))
            now = time.monotonic() - t0
            total = sum(counts)
            samples.append(Sample(t=now, iterations=total, max_temp_c=hottest()))
            if on_tick:
                on_tick(now, total)
    finally:
        stop.set()
        for t in threads:
            t.join()
    after = read_counters(root)
    return evaluate_burnin(samples, before, after, temp_limit_c, max_drop, n, gpu,
                           time.monotonic() - t0)


def _gpu_stress(stop: threading.Event) -> bool:
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return False
    if not torch.cuda.is_available():
        return False

    def loop(dev: int) -> None:
        a = torch.randn(8192, 8192, dtype=torch.bfloat16, device=f"cuda:{dev}")
        while not stop.is_set():
            a @ a
            torch.cuda.synchronize(dev)

    for dev in range(torch.cuda.device_count()):
        threading.Thread(target=loop, args=(dev,), daemon=True).start()
    return True


MAX_DURATION_S = 7 * 24 * 3600.0
"""The longest burn-in accepted: a week (qualification runs take hours, not years)."""


def parse_duration(text: str) -> float:
    """``90``/``90s``/``15m``/``2h`` -> seconds: finite, at least 1 s, at most a week."""
    units = {"s": 1, "m": 60, "h": 3600}
    t = text.strip().lower()
    try:
        seconds = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError:
        raise InputError(f"--duration {text!r}: expected e.g. 90s, 15m or 2h") from None
    if math.isnan(seconds):
        raise InputError(f"--duration {text!r}: not a number (fix: e.g. 90s, 15m, 2h)")
    if seconds < 1:
        raise InputError(f"--duration {text!r}: must be at least 1 s (fix: e.g. 90s, 15m, 2h)")
    if seconds > MAX_DURATION_S:  # infinity too
        raise InputError(f"--duration {text!r}: at most a week (168h) (fix: run several "
                         "shorter burn-ins)")
    return seconds
