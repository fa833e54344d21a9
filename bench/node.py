"""Inventory speed: the 8-GPU HGX fixture and this host, against a peer measured in the same
run (``lspci -vmm`` over the same sysfs when installed, else a bare walk that reads one file
per PCI device: the floor any sysfs reader pays).

Run: ``.venv/bin/python bench/node.py``. Prints medians of repeated runs and ratios; no
thresholds, no assertions (the issue expects well under a second on both).
"""

from __future__ import annotations

import importlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aiplat.node.collect import collect_inventory
from aiplat.node.placement import evaluate_placement

# The fake-tree builder lives with the tests; the benchmark reuses it rather than a copy.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
hgx_h100 = importlib.import_module("fixtures.nodes").hgx_h100


def median_s(fn: Callable[[], object], runs: int = 9) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def floor_walk(root: Path) -> None:
    base = root / "sys/bus/pci/devices"
    for d in base.iterdir():
        (d / "class").read_text()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = hgx_h100(Path(tmp) / "hgx")
        n_fixture = len(os.listdir(root / "sys/bus/pci/devices"))
        fx = median_s(lambda: collect_inventory(root, live_gpu=False))
        fx_place = median_s(lambda: evaluate_placement(collect_inventory(root, live_gpu=False)))
        fx_floor = median_s(lambda: floor_walk(root))
    host = median_s(lambda: collect_inventory("/"))
    host_floor = median_s(lambda: floor_walk(Path("/")))
    n_host = len(os.listdir("/sys/bus/pci/devices"))
    print(f"8-GPU HGX fixture ({n_fixture} PCI functions): inventory {fx * 1000:7.1f} ms, "
          f"with placement {fx_place * 1000:7.1f} ms; one-file-per-device floor "
          f"{fx_floor * 1000:6.2f} ms (ratio {fx / fx_floor:,.0f}x)")
    print(f"this host ({n_host} PCI functions):        inventory {host * 1000:7.1f} ms; floor "
          f"{host_floor * 1000:6.2f} ms (ratio {host / host_floor:,.0f}x)")
    if shutil.which("lspci"):
        lspci = median_s(lambda: subprocess.run(["lspci", "-vmm"], capture_output=True,
                                                check=False))
        print(f"peer: `lspci -vmm` on this host {lspci * 1000:7.1f} ms "
              f"(aiplat inventory / lspci = {host / lspci:.1f}x; the inventory reads far more)")
    print(f"budget: 1 s; fixture uses {fx * 100:.1f}% of it, host {host * 100:.1f}%")


if __name__ == "__main__":
    main()
