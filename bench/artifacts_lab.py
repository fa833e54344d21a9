"""What the node cache saves behind a rate-limited link: `aiplat model bench` inside the lab.

Brings up a one-node lab (root), pushes a synthetic safetensors model to the lab's model
store, then runs ``aiplat model bench`` from inside node-1's network namespace twice: over
the lab's emulated NIC rate, and with node-1's storage port capped (``aiplat lab fault add
rate``). Each run prints cold pull, warm pull and load from the cache; this script sets the
cold pull against the link rate it ran under (the ceiling no pull over that link can beat)
and shows the start-up time the cache saves: a cold start pays the pull, a warm one only the
snapshot check and the load.

    sudo .venv/bin/python bench/artifacts_lab.py [--size-gib 0.5] [--rate 250]

Exit 0 after printing, 2 when the lab cannot run here; the lab is taken down either way.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from aiplat.netdiag import lab as labio
from aiplat.netdiag.faults import plan_fault
from aiplat.netdiag.model import plan_lab
from aiplat.netdiag.testing import free_port

sys.path.insert(0, str(Path(__file__).resolve().parent))
synthetic_model = importlib.import_module("artifacts").synthetic_model

NODE = "node-1"
AIPLAT = str(Path(sys.executable).parent / "aiplat")  # the CLI of this venv


def _bench(ns: str, ref: str, workdir: Path) -> dict[str, Any]:
    run = subprocess.run(
        ["ip", "netns", "exec", ns, AIPLAT, "model", "bench", ref, "--plain-http", "--no-oras",
         "--rounds", "1", "--workdir", str(workdir), "-o", "json"],
        capture_output=True, text=True, check=True)
    data: dict[str, Any] = json.loads(run.stdout)
    return data


def _row(label: str, link_mbit: float, data: dict[str, Any]) -> str:
    figs = data["figures"]
    cold, warm, load = figs["cold"], figs["warm"], figs["load"]
    link_gbps = link_mbit / 8 / 1000
    start_cold = cold["seconds"] + load["seconds"]
    start_warm = warm["seconds"] + load["seconds"]
    return (f"{label:<22} {link_mbit:>6.0f} {cold['GBps']:>7.3f} {cold['GBps'] / link_gbps:>7.2f}"
            f" {cold['seconds']:>8.2f} {warm['seconds']:>7.3f} {load['seconds']:>7.3f}"
            f" {start_cold:>8.2f} {start_warm:>7.3f} {start_cold / start_warm:>7.0f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-gib", type=float, default=0.5)
    ap.add_argument("--rate", type=int, default=250, help="cap on node-1's storage port, Mbit/s")
    ap.add_argument("--prefix", default="mbench")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/artifacts_lab.py needs root (network namespaces)", file=sys.stderr)
        return 2
    if labio.missing_tools():
        print(f"cannot run: missing {', '.join(labio.missing_tools())}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="aiplat-artifacts-lab-", dir="/var/tmp"))
    os.environ.setdefault("AIPLAT_LAB_DIR", str(work / "lab"))
    plan = plan_lab(nodes=1, prefix=args.prefix, prom_port=free_port())
    ns = next(n.ns for n in plan.nodes if n.name == NODE)
    store = plan.registry_url.removeprefix("http://")
    ref = f"{store}/bench/synthetic:v1"
    labio.down(args.prefix)
    rows = []
    try:
        up = labio.up(plan)
        print(f"lab up in {up.seconds:.1f} s; store {store}, links {plan.link_mbit} Mbit/s",
              file=sys.stderr)
        synthetic_model(work / "model", int(args.size_gib * 2**30))
        subprocess.run(["ip", "netns", "exec", ns, AIPLAT, "model", "push", str(work / "model"),
                        ref, "--plain-http"], check=True, capture_output=True)
        rows.append(_row("lab NIC rate", plan.link_mbit, _bench(ns, ref, work / "b1")))
        labio.add_fault(args.prefix, plan_fault(plan, "rate", NODE, plan.storage_segment.name,
                                                value=args.rate))
        try:
            rows.append(_row("storage port capped", args.rate, _bench(ns, ref, work / "b2")))
        finally:
            labio.clear_faults(args.prefix)
    finally:
        labio.down(args.prefix)
        left = labio.leftovers(args.prefix)
        shutil.rmtree(work, ignore_errors=True)
    size = int(args.size_gib * 2**30)
    print(f"synthetic model {size / 1e9:.2f} GB pulled by {NODE} from the lab store; start-up ="
          " pull + load from the cache")
    print(f"{'link':<22} {'Mbit/s':>6} {'cold':>7} {'of link':>7} {'cold s':>8} {'warm s':>7}"
          f" {'load s':>7} {'start':>8} {'start':>7} {'saved':>8}")
    print(f"{'':<22} {'':>6} {'GB/s':>7} {'':>7} {'':>8} {'':>7} {'':>7} {'cold s':>8}"
          f" {'warm s':>7} {'':>8}")
    for row in rows:
        print(row)
    print(f"left behind: {left or 'nothing'}")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
