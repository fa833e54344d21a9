"""How a planned workload's GPUs become pods: the one rule the tree renders and the
simulator queues.

- Inference (``WorkloadPlan.replica_groups``): one pod per replica, with the replica's GPUs
  (tensor x pipeline parallel), so the tree runs the replicas, layout and GPUs that sizing
  chose. A replica wider than a node spans ``ceil(gpus / GPUs per node)`` whole-node pods.
- Training: one gang of whole-node pods where the GPUs fill nodes, else the fewest equal
  pods that hold them (an Indexed Job's pods share one template: 12 GPUs on 8-GPU nodes are
  2 pods of 6, never 2 of 8, which would ask Kueue for GPUs the plan did not size).
- On a MIG pool every pod takes one slice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aiplat.plan.models import WorkloadPlan

TRAIN = "train"
COMPONENTS = ("prefill", "decode", "embed")
"""Roles whose pods run beside the workload's own, named and labelled apart."""


@dataclass(frozen=True)
class PodGroup:
    """``pods`` identical pods of ``gpus`` GPUs each; for inference, ``replicas`` model
    instances of ``tensor_parallel`` x ``pipeline_parallel`` GPUs."""

    role: str
    pods: int
    gpus: int
    replicas: int
    tensor_parallel: int
    pipeline_parallel: int
    model: str
    weight_bytes: float

    @property
    def pods_per_replica(self) -> int:
        return self.pods // self.replicas


def pod_groups(w: WorkloadPlan, gpus_per_node: int, *, mig: bool = False) -> list[PodGroup]:
    gpn = max(1, gpus_per_node)
    if not w.replica_groups:
        total = max(1, w.gpus)
        per = 1 if mig else even_pod_gpus(total, gpn)
        return [PodGroup(TRAIN, total // per, per, 1, per, 1, w.model, 0.0)]
    out = []
    for g in w.replica_groups:
        if mig:
            per, span = 1, g.gpus
        elif g.gpus <= gpn:
            per, span = g.gpus, 1
        else:
            per, span = gpn, math.ceil(g.gpus / gpn)
        out.append(PodGroup(g.role, g.replicas * span, per, g.replicas, g.tensor_parallel,
                            g.pipeline_parallel, g.model, g.weight_bytes))
    return out


def even_pod_gpus(total: int, gpus_per_node: int) -> int:
    """GPUs per pod: the most, at most a node's, that split ``total`` into equal pods."""
    for pods in range(math.ceil(total / gpus_per_node), total + 1):
        if total % pods == 0:
            return total // pods
    return 1
