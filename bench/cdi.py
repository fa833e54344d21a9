"""Benchmark device binding: CDI generation, verification per device, MIG planning.

Run as root on a host with podman, runc and busybox-static:

    .venv/bin/python bench/cdi.py [--devices 16] [--verify 4]

Figures are printed as ratios against a ceiling measured in the same run, never asserted:
- generation per device vs one ``os.stat`` of its node (the I/O generation cannot avoid);
- verification per device vs a bare ``podman run … true`` of the same image (the container
  start every proof pays; the rest is the probe and the comparison);
- ``sharing plan`` for a 1,000-GPU demand vs the 1 s budget of the issue.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from aiplat.catalog.load import load_catalog
from aiplat.devices import cdi, host, mig
from aiplat.devices.verify import (
    PodmanOptions,
    ensure_image,
    podman_missing,
    remove_image,
    verify_spec,
)


def _free_major() -> int:
    """A major in the local/experimental ranges that no driver registered."""
    used: set[int] = set()
    for line in Path("/proc/devices").read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            used.add(int(parts[0]))
    candidates: list[int] = [*range(60, 64), *range(120, 128), *range(240, 255)]
    for major in candidates:
        if major not in used:
            return major
    raise SystemExit("no unregistered experimental major number")


def bench_generate(tmp: Path, n: int) -> Path:
    major = _free_major()
    for i in range(n):
        os.mknod(tmp / f"acc{i}", 0o020000 | 0o660, os.makedev(major, i))
    chars = [host.parse_char_option(f"bench.example.com/acc={i}:/dev/acc{i}={tmp}/acc{i}")
             for i in range(n)]
    reps = 20
    t0 = time.perf_counter()
    for _ in range(reps):
        specs = host.generate(chars=chars)
    gen = (time.perf_counter() - t0) / reps / n
    t0 = time.perf_counter()
    for _ in range(reps):
        for i in range(n):
            os.stat(tmp / f"acc{i}")
    stat_s = (time.perf_counter() - t0) / reps / n
    doc = next(iter(specs.values()))
    t0 = time.perf_counter()
    for _ in range(reps):
        cdi.validate_spec(doc, "bench", host.RealHost())
    val = (time.perf_counter() - t0) / reps / n
    print(f"generate: {gen * 1e6:8.1f} µs/device  = {gen / stat_s:5.1f} × os.stat "
          f"({stat_s * 1e6:.1f} µs)")
    print(f"validate: {val * 1e6:8.1f} µs/device  = {val / stat_s:5.1f} × os.stat")
    spec_file = tmp / "bench.json"
    spec_file.write_text(cdi.dumps(doc))
    return spec_file


def bench_verify(spec_file: Path, count: int) -> None:
    opts = PodmanOptions(image=f"localhost/aiplat-cdi-bench:{os.getpid()}")
    reason = podman_missing(opts)
    if reason:
        print(f"verify:   skipped ({reason})")
        return
    try:
        ensure_image(opts)
        bare = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run([*opts.run_args(), opts.image, "/bin/sh", "-c", "true"], check=True,
                           capture_output=True)
            bare.append(time.perf_counter() - t0)
        names = [str(i) for i in range(count)]
        t0 = time.perf_counter()
        v = verify_spec(str(spec_file), opts, names)
        total = time.perf_counter() - t0
        per = statistics.median(r.seconds for r in v.results[1:])
        ceiling = statistics.median(bare)
        print(f"verify:   {per * 1000:8.1f} ms/device  = {per / ceiling:5.2f} × bare podman run "
              f"({ceiling * 1000:.0f} ms); {len(v.results)} containers in {total:.2f} s, "
              f"{'all pass' if v.ok else 'FAILURES'}")
    finally:
        remove_image(opts)


def bench_plan() -> None:
    gpu = load_catalog().gpu("H100-SXM-80GB")
    assert gpu is not None
    demand = {"1g.10gb": 3000, "2g.20gb": 700, "3g.40gb": 500, "1g.20gb": 300,
              "4g.40gb": 100, "7g.80gb": 50}
    mig.plan(gpu, {"1g.10gb": 1})  # the per-model layout table is built once
    t0 = time.perf_counter()
    p = mig.plan(gpu, demand)
    dt = time.perf_counter() - t0
    print(f"plan:     {dt * 1000:8.1f} ms for {p.gpus} GPUs (lower bound {p.lower_bound}) "
          f"= {dt / 1.0:.4f} × the 1 s budget")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=16)
    ap.add_argument("--verify", type=int, default=4, help="devices to prove in containers")
    args = ap.parse_args()
    bench_plan()
    if os.geteuid() != 0:
        print("generate/verify: skipped (mknod needs root)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        spec_file = bench_generate(Path(tmp), args.devices)
        bench_verify(spec_file, min(args.verify, args.devices))


if __name__ == "__main__":
    main()
