"""The inputs and outputs of Kueue's topology-aware scheduling (``aiplat.kueue.tas``): plain
frozen dataclasses, in Kueue's integer units (milli-CPU, bytes, counts)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str  # NoSchedule, PreferNoSchedule, NoExecute
    value: str = ""

    def shown(self) -> str:
        """``Taint.ToString``: how Kueue's message names it."""
        if not self.effect:
            return f"{self.key}={self.value}:" if self.value else self.key
        if not self.value:
            return f"{self.key}:{self.effect}"
        return f"{self.key}={self.value}:{self.effect}"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = ""  # "" is Equal; Exists; Lt/Gt compare integers
    value: str = ""
    effect: str = ""  # "" tolerates every effect


@dataclass(frozen=True)
class Requirement:
    """One ``matchExpressions`` (or, with ``field``, ``matchFields``) entry of a node
    selector term."""
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()
    field: bool = False


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, int]  # Kueue's integer units: milli-CPU, bytes, counts
    taints: tuple[Taint, ...] = ()
    ready: bool = True  # the NodeReady condition is True
    unschedulable: bool = False  # spec.unschedulable


# a pod with one of these annotations is a TAS pod: its usage is its workload's assignment
TAS_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-slice-required-topology-constraints",
)


@dataclass(frozen=True)
class PlacedPod:
    """A pod of the cluster (any pod: ``counts`` says whether Kueue charges it to its node
    as non-TAS usage)."""
    node: str  # spec.nodeName: the node's name, not its hostname label; "" if unbound
    requests: Mapping[str, int]  # Kubernetes' PodRequests
    phase: str = "Running"
    annotations: Mapping[str, str] = field(default_factory=dict)

    def counts(self) -> bool:
        """``belongsToNonTASCache``: bound, not Succeeded or Failed, not a TAS pod."""
        return (bool(self.node) and self.phase not in ("Succeeded", "Failed")
                and not any(a in self.annotations for a in TAS_ANNOTATIONS))


@dataclass(frozen=True)
class AdmittedDomain:
    """One domain of an admitted TAS workload's TopologyAssignment: ``count`` pods of
    ``requests`` each."""
    flavor: str
    levels: tuple[str, ...]  # the assignment's levels (the hostname alone when lowest)
    values: tuple[str, ...]
    count: int
    requests: Mapping[str, int]
    workload: str = ""  # namespace/name of the workload holding it ("" not known)


@dataclass(frozen=True)
class TasFlavor:
    """A ResourceFlavor with ``spec.topologyName``, and that Topology's levels."""
    name: str
    topology: str  # the Topology's name, as Kueue's messages show it
    levels: tuple[str, ...]  # node label keys, top to bottom
    node_labels: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class SliceLayer:
    """``podSetSliceRequiredTopology`` and ``podSetSliceSize`` (the outermost layer), or one
    of ``podsetSliceRequiredTopologyConstraints``; size 0 is "not given"."""
    topology: str
    size: int


@dataclass(frozen=True)
class TopologyRequest:
    """A pod set's ``topologyRequest``."""
    required: str | None = None
    preferred: str | None = None
    unconstrained: bool = False
    slices: tuple[SliceLayer, ...] = ()  # outermost first
    group: str | None = None  # podSetGroupName


@dataclass(frozen=True)
class PodSetRequest:
    name: str
    count: int  # pods to place (the quota assignment's, partial admission included)
    requests: Mapping[str, int]  # one pod's (Kubernetes' PodRequests)
    topology: TopologyRequest | None = None
    implied: bool = False  # TAS without asking: a TAS-only ClusterQueue (isTASImplied)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    affinity: tuple[tuple[Requirement, ...], ...] | None = None  # required terms, ORed


@dataclass(frozen=True)
class DomainAssignment:
    values: tuple[str, ...]
    count: int


@dataclass(frozen=True)
class TopologyAssignment:
    levels: tuple[str, ...]
    domains: tuple[DomainAssignment, ...]


@dataclass(frozen=True)
class PodSetResult:
    """A pod set's assignment, or ``reason``: Kueue's message for why it does not fit."""
    assignment: TopologyAssignment | None = None
    reason: str = ""


@dataclass(frozen=True)
class TasInput:
    """What Kueue's TAS cache holds for one flavor, from the cluster's objects."""
    flavor: TasFlavor
    nodes: tuple[Node, ...]
    pods: tuple[PlacedPod, ...] = ()
    admitted: tuple[AdmittedDomain, ...] = ()
