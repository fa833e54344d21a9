"""Benchmark: ``aiplat maintain run`` rolling a driver change across a 16-node kwok pool.

Prints, measured in the same run: the rollout's wall time against the serial minimum, the
sum over the nodes of drain + apply + gate as each node took them (what one node at a
time could not go below), as a ratio. Below 1 the batches overlap their nodes' work; the
rest is the executor's own cost (a ConfigMap write per transition, polling).

The apply is a lab script: a fixed sleep, then the node agent's condition set True. A lab
cluster is started for the run (``aiplat lab cluster build`` first; as root). No
assertions: numbers.

Run: ``.venv/bin/python bench/maintain.py [--apply-seconds 1.0]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aiplat.cluster.assets import locate

SPEC = """\
apiVersion: aiplat/v1alpha1
kind: Platform
metadata: {name: bench}
kubernetes: {version: "1.34", kueueVersion: 0.19.2}
site: {powerBudgetKW: 400, rackPowerLimitKW: 40, cooling: air, pue: 1.3}
reserve: {nodeFailuresPerYear: 0.25, replacementLeadTimeDays: 14, targetAvailability: 0.99}
pools:
  - name: gpu
    node: {nodeType: hgx-h100-8, gpu: {model: H100-SXM-80GB, count: 8}, cpuCores: 112,
           memoryGiB: 2048}
    count: 16
    topology: {nodesPerRack: 2, racksPerBlock: 4}
tenants:
  - {name: research, weight: 1, quota: {gpu: {gpus: 64}}}
versions:
  approved:
    - {name: r580, kernel: ">=6.1,<6.13", driver: 580.95.05, cuda: "13.0",
       containerToolkit: 1.18.0, containerRuntime: containerd 2.1, kubernetes: "1.34"}
"""
APPLY = """\
#!/bin/bash
set -eu
sleep {seconds}
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
{kubectl} patch node "$1" --subresource=status --type=strategic -p \\
  '{{"status":{{"conditions":[{{"type":"AiplatNodeHealthy","status":"True","reason":"Bench",
  "message":"bench","lastHeartbeatTime":"'$now'","lastTransitionTime":"'$now'"}}]}}}}' >/dev/null
"""


def aiplat(env: dict[str, str], *args: str) -> str:
    cp = subprocess.run([sys.executable, "-m", "aiplat.cli.main", *args], env=env,
                        capture_output=True, text=True, check=False, timeout=900)
    if cp.returncode != 0:
        raise SystemExit(f"aiplat {' '.join(args)}: exit {cp.returncode}\n{cp.stderr[-2000:]}")
    return cp.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--apply-seconds", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        env = {**os.environ, "AIPLAT_CLUSTER_DIR": str(tmp / "runs"), "NO_COLOR": "1"}
        (tmp / "spec.yaml").write_text(SPEC)
        script = tmp / "apply.sh"
        script.write_text(APPLY.format(seconds=args.apply_seconds,
                                       kubectl=locate().bin("kubectl")))
        script.chmod(0o755)
        aiplat(env, "plan", "-d", str(tmp / "plan"), str(tmp / "spec.yaml"))
        up = aiplat(env, "lab", "cluster", "up", "--name", "bench-maint", str(tmp / "spec.yaml"))
        env["KUBECONFIG"] = up.strip().removeprefix("export KUBECONFIG=")
        try:
            aiplat(env, "kube", "apply", str(tmp / "plan" / "kube"))
            t0 = time.monotonic()
            out = json.loads(aiplat(env, "maintain", "run", str(tmp / "spec.yaml"), "--pool",
                                    "gpu", "--change", "driver=580.95.05", "--apply-with",
                                    str(script), "-o", "json"))
            total = time.monotonic() - t0
        finally:
            aiplat(env, "lab", "cluster", "down", "--name", "bench-maint")
    wall, serial = out["wall_s"], out["serial_s"]
    print(f"maintain run, 16 nodes in {out['batches']} batches (canary + "
          f"{max(len([n for n in out['nodes'] if n['batch'] == 1]), 1)} at a time), apply "
          f"{args.apply_seconds:g} s per node:")
    print(f"  rollout wall {wall:.1f} s (command {total:.1f} s with start-up) vs serial "
          f"minimum {serial:.1f} s (sum of drain + apply + gate per node): "
          f"{wall / serial:.2f}x")


if __name__ == "__main__":
    main()
