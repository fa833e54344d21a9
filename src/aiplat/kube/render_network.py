"""The host and cluster network in the tree, one entry point for ``kube/render.py``:
the pools' netplan (``render_netplan``), the CNI plugin's values (``render_cni``) and the
secondary RDMA network of the pools that train across nodes (``render_rdma.rdma_networks``).
"""

from __future__ import annotations

from aiplat.kube.objects import Obj
from aiplat.kube.render_cni import cni_files
from aiplat.kube.render_netplan import netplan_files
from aiplat.kube.render_rdma import rdma_networks
from aiplat.plan.models import Plan
from aiplat.spec.models import Platform


def render_network(platform: Platform, plan: Plan) -> tuple[dict[str, list[Obj]],
                                                            dict[str, str]]:
    """Manifests by file and node-side or Helm files by path."""
    files = {**netplan_files(platform), **cni_files(platform)}
    return rdma_networks(platform, plan), files
