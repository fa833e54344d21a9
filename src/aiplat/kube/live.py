"""Reading a live cluster into a ``Snapshot`` with lightkube: the only module of
``aiplat.kube`` that talks to an API server, and only with read-only ``list`` calls.

Kept apart so the pure modules never import a client (an import-linter contract can say
so), and so the rest of the package works without lightkube installed.
"""

from __future__ import annotations

from typing import Any

import httpx2
from lightkube import Client, KubeConfig
from lightkube.core.exceptions import ApiError, ConfigError
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Node, Pod

from aiplat.errors import InputError
from aiplat.kube.snapshot import Obj, Snapshot

GLOBAL = {"nodes", "clusterqueues", "resourceflavors", "cohorts", "topologies",
          "resourceslices", "deviceclasses"}


def read_live(kubeconfig: str, timeout: float = 10.0) -> Snapshot:
    """List the snapshot's resources from a live cluster (read-only) with lightkube."""
    try:
        client = Client(config=KubeConfig.from_file(kubeconfig), timeout=httpx2.Timeout(timeout))
    except (ConfigError, OSError, ValueError) as e:
        raise InputError(f"--kubeconfig {kubeconfig}: {e}") from e
    kinds: dict[str, Any] = {
        "nodes": Node, "pods": Pod, "jobs": Job,
        "workloads": create_namespaced_resource("kueue.x-k8s.io", "v1beta2", "Workload",
                                                "workloads"),
        "localqueues": create_namespaced_resource("kueue.x-k8s.io", "v1beta2", "LocalQueue",
                                                  "localqueues"),
        "clusterqueues": create_global_resource("kueue.x-k8s.io", "v1beta2", "ClusterQueue",
                                                "clusterqueues"),
        "resourceflavors": create_global_resource("kueue.x-k8s.io", "v1beta2",
                                                  "ResourceFlavor", "resourceflavors"),
        "cohorts": create_global_resource("kueue.x-k8s.io", "v1beta2", "Cohort", "cohorts"),
        "topologies": create_global_resource("kueue.x-k8s.io", "v1beta2", "Topology",
                                             "topologies"),
        "resourceslices": create_global_resource("resource.k8s.io", "v1", "ResourceSlice",
                                                 "resourceslices"),
        "deviceclasses": create_global_resource("resource.k8s.io", "v1", "DeviceClass",
                                                "deviceclasses"),
        "resourceclaims": create_namespaced_resource("resource.k8s.io", "v1", "ResourceClaim",
                                                     "resourceclaims"),
    }
    items: dict[str, list[Obj]] = {}
    for resource, kind in kinds.items():
        try:
            objs = client.list(kind) if resource in GLOBAL else client.list(kind, namespace="*")
            items[resource] = [o.to_dict() if hasattr(o, "to_dict") else dict(o) for o in objs]
        except ApiError as e:
            if e.status.code == 404:
                items[resource] = []  # the API (e.g. Kueue cohorts) is not installed
            else:
                raise InputError(f"listing {resource}: {e.status.message}") from e
        except Exception as e:  # transport errors: unreachable, TLS, timeouts
            raise InputError(f"cannot list {resource} with {kubeconfig}: {e} (fix: check the "
                             "server address and credentials, or use --snapshot)") from e
    return Snapshot(items)
