"""A one-pool platform spec that describes a single host, so checks against a spec can be run
on a node before any real platform spec exists (``aiplat spec example --this-host``, the
course's acceptance exercise): the pool's node has the host's CPUs and memory, one Ethernet
NIC, no GPU, and the approved versions admit the host's kernel series."""

from __future__ import annotations


def host_spec(cpus: int, memory_gib: int, kernel: str, nic_gbps: float = 0.1) -> str:
    """``kernel``: major.minor; ``nic_gbps`` sets the network-throughput floor an acceptance
    run applies (90% of it)."""
    return f"""\
apiVersion: aiplat/v1alpha1
kind: Platform
metadata: {{name: lab}}
kubernetes: {{version: "1.34", kueueVersion: 0.19.2}}
site: {{powerBudgetKW: 10, rackPowerLimitKW: 10}}
pools:
  - name: lab
    node:
      cpuCores: {cpus}
      memoryGiB: {memory_gib}
      nics: [{{type: ethernet, rateGbps: {nic_gbps:g}, count: 1, segment: management}}]
    count: 1
tenants:
  - {{name: team-a, quota: {{lab: {{gpus: 0}}}}}}
  - {{name: team-b, quota: {{lab: {{gpus: 0}}}}}}
versions:
  approved:
    - {{name: lab-k8s134, kernel: ">={kernel}", kubernetes: "1.34", kueue: 0.19.2}}
"""
