"""Reserve sizing: spare compute nodes from a failure rate, and redundancy for management services.

Spare nodes. A failed node is swapped for a spare at once and comes back (repaired or replaced)
after a lead time. With failures arriving as a Poisson process, the number of nodes away at any
moment is Poisson with mean lambda = failure rate x time away (Palm's theorem, the basis of
classic spares-pipeline models; it holds for any distribution of the lead time). Here
lambda = nodes x failures per node-year x lead time days / 365, and the smallest k with
P(X <= k) >= the target availability is the number of spares: then the probability that more
nodes are away than there are spares stays within 1 - target. The Poisson sums are written
out in log space (no scipy), so large fleets do not underflow ``exp(-lambda)``.

A reference rate: Meta's Llama 3 report counts 419 unexpected interruptions in 54 days on
16,384 H100 GPUs (2,048 nodes of 8), i.e. about 1.38 per node-year. Not every interruption
needed a replacement, so it is an upper-side figure for "node out of service" events; use
your own RMA history when you have one.

Management services follow a stated N+k rule instead: quorum services (etcd under the
Kubernetes control plane) need 2f + 1 members to survive f failures (etcd's FAQ: odd sizes;
3 members tolerate 1, 5 tolerate 2), replicated services (registry, Prometheus pairs) need
N + f instances.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict

from aiplat.errors import InputError
from aiplat.sizing.result import Result

DAYS_PER_YEAR = 365.0

LLAMA3_INTERRUPTIONS_PER_NODE_YEAR = 419 / (16_384 / 8) * DAYS_PER_YEAR / 54
"""~1.38: Llama 3 405B pre-training, 419 unexpected interruptions / 54 days / 2,048 nodes."""

RedundancyRule = Literal["N+1", "N+2"]
RULE_FAILURES: dict[str, int] = {"N+1": 1, "N+2": 2}
"""Failures each management service must survive under a rule."""

# Poisson terms this far below the largest one no longer change a float64 sum.
_LOG_NEGLIGIBLE = -745.0


def _log_pmf(k: int, lam: float) -> float:
    if lam == 0.0:
        return 0.0 if k == 0 else -math.inf
    return -lam + k * math.log(lam) - math.lgamma(k + 1)


def poisson_cdf(k: int, lam: float) -> float:
    """P(X <= k) for X ~ Poisson(lam), summed term by term in log space."""
    if lam < 0 or math.isnan(lam) or math.isinf(lam):
        raise InputError(f"Poisson mean must be a finite number >= 0, got {lam!r}")
    if k < 0:
        return 0.0
    return min(1.0, math.fsum(math.exp(_log_pmf(j, lam)) for j in range(k + 1)))


def poisson_sf(k: int, lam: float) -> float:
    """P(X > k), summed over the upper tail directly so small tails keep their precision."""
    if lam < 0 or math.isnan(lam) or math.isinf(lam):
        raise InputError(f"Poisson mean must be a finite number >= 0, got {lam!r}")
    if k < 0:
        return 1.0
    if k < lam:
        return max(0.0, 1.0 - poisson_cdf(k, lam))
    terms = []
    j = k + 1
    # past the mode the terms only shrink; stop once they cannot matter
    while True:
        log_p = _log_pmf(j, lam)
        if log_p < _LOG_NEGLIGIBLE:
            break
        terms.append(math.exp(log_p))
        j += 1
    return math.fsum(terms)


def smallest_k_for_cdf(lam: float, target: float) -> int:
    """Smallest k with P(X <= k) >= target for X ~ Poisson(lam)."""
    if not 0.0 < target < 1.0:
        raise InputError(f"target must be in (0, 1), got {target!r}")
    if lam < 0 or math.isnan(lam) or math.isinf(lam):
        raise InputError(f"Poisson mean must be a finite number >= 0, got {lam!r}")
    # Compare the upper tail with 1 - target rather than the CDF with target: near 1 the
    # CDF rounds to 1.0 while the tail keeps its digits. Past mean + 40 sd the tail is far
    # below any float64 target, so the terms stop there.
    allowed = 1.0 - target
    upper = int(lam + 40.0 * math.sqrt(lam) + 50)
    terms = [math.exp(_log_pmf(j, lam)) for j in range(upper + 1)]
    tails = [0.0] * (upper + 1)
    running = 0.0
    for k in range(upper - 1, -1, -1):
        running += terms[k + 1]  # smallest terms first keeps the sum accurate
        tails[k] = running
    for k, tail in enumerate(tails):
        if tail <= allowed:
            return k
    raise InputError(  # pragma: no cover - tails[upper] is 0.0, so a k is always found
        f"no k up to {upper} reaches P(X <= k) >= {target}"
    )


class SpareNodes(Result):
    """Spare nodes that keep the production fleet whole with the target probability."""

    spare_nodes: int
    expected_failures_per_year: float
    expected_failures_in_lead_time: float
    """lambda, the Poisson mean of nodes away at once."""
    probability_enough_spares: float
    """P(X <= spare_nodes)."""
    shortfall_probability: float
    """P(X > spare_nodes): the chance that more nodes are away than there are spares."""
    reserve_gpus: int
    total_gpus: int
    """Production plus spare GPUs."""
    reserve_share: float
    """Spare nodes / (production + spare nodes): the part of what is bought held back."""


def spare_nodes(
    *,
    nodes: int,
    failures_per_node_year: float,
    lead_time_days: float,
    target_availability: float,
    gpus_per_node: int = 0,
) -> SpareNodes:
    """Smallest number of spares k with P(failures during the lead time <= k) >= target.

    >>> spare_nodes(nodes=365, failures_per_node_year=0.2, lead_time_days=10,
    ...             target_availability=0.99).spare_nodes
    6
    """
    if nodes < 0:
        raise InputError(f"nodes must be >= 0, got {nodes}")
    if gpus_per_node < 0:
        raise InputError(f"gpus_per_node must be >= 0, got {gpus_per_node}")
    if not failures_per_node_year >= 0 or math.isinf(failures_per_node_year):
        raise InputError(
            f"failures_per_node_year must be >= 0, got {failures_per_node_year!r} "
            f"(fix: use your RMA history (Llama 3's run shows about "
            f"{LLAMA3_INTERRUPTIONS_PER_NODE_YEAR:.2f} interruptions per 8-GPU node-year))"
        )
    if not lead_time_days >= 0 or math.isinf(lead_time_days):
        raise InputError(f"lead_time_days must be >= 0, got {lead_time_days!r}")
    if not 0.0 < target_availability < 1.0:
        raise InputError(
            f"target_availability must be in (0, 1), got {target_availability!r} "
            "(fix: pass e.g. 0.99 (1% chance of running short during a replacement))"
        )
    per_year = nodes * failures_per_node_year
    lam = per_year * lead_time_days / DAYS_PER_YEAR
    k = smallest_k_for_cdf(lam, target_availability)
    sf = poisson_sf(k, lam)
    total_nodes = nodes + k
    notes = [
        "assumes independent failures at a constant rate; correlated events (a PDU, a leaf "
        "switch, a bad firmware roll-out) take several nodes at once and need their own margin"
    ]
    if k > 0 and nodes > 0 and k / nodes > 0.2:
        notes.append(
            "spares exceed 20% of the fleet: shorten the lead time (on-site parts, advance "
            "replacement) before buying that many nodes"
        )
    return SpareNodes(
        spare_nodes=k,
        expected_failures_per_year=per_year,
        expected_failures_in_lead_time=lam,
        probability_enough_spares=1.0 - sf,
        shortfall_probability=sf,
        reserve_gpus=k * gpus_per_node,
        total_gpus=total_nodes * gpus_per_node,
        reserve_share=k / total_nodes if total_nodes else 0.0,
        formula=(
            "lambda = nodes x failures per node-year x lead time days / 365; spares = smallest "
            "k with P(Poisson(lambda) <= k) >= target availability (Palm's theorem)"
        ),
        inputs={
            "nodes": nodes,
            "failures_per_node_year": failures_per_node_year,
            "lead_time_days": lead_time_days,
            "target_availability": target_availability,
            "gpus_per_node": gpus_per_node,
        },
        notes=notes,
    )


def quorum_members(failures_tolerated: int) -> int:
    """Members a majority-quorum service (etcd, Raft) needs to survive f failures: 2f + 1."""
    if failures_tolerated < 0:
        raise InputError(f"failures_tolerated must be >= 0, got {failures_tolerated}")
    return 2 * failures_tolerated + 1


class ServiceRedundancy(BaseModel):
    """One management service under the redundancy rule."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    service: str
    needed_instances: int
    """Instances that carry the load (for quorum services: the quorum itself)."""
    deployed_instances: int
    tolerated_failures: int
    reason: str


class ManagementReserve(Result):
    """Instances per management service under an N+k rule."""

    rule: RedundancyRule
    services: list[ServiceRedundancy]
    management_instances: int
    """Sum of deployed instances: the nodes needed if no two share a node."""


def management_reserve(
    *,
    rule: RedundancyRule = "N+1",
    managed_control_plane: bool = False,
    registry_instances_needed: int = 1,
    monitoring_instances_needed: int = 1,
    registry: bool = True,
    monitoring: bool = True,
) -> ManagementReserve:
    """Redundancy for the control plane (quorum), registry and monitoring under N+1 or N+2."""
    if rule not in RULE_FAILURES:
        raise InputError(f"rule must be one of {sorted(RULE_FAILURES)}, got {rule!r}")
    f = RULE_FAILURES[rule]
    for name, value in (
        ("registry_instances_needed", registry_instances_needed),
        ("monitoring_instances_needed", monitoring_instances_needed),
    ):
        if value < 1:
            raise InputError(f"{name} must be >= 1, got {value}")
    services: list[ServiceRedundancy] = []
    if managed_control_plane:
        services.append(
            ServiceRedundancy(
                service="control-plane",
                needed_instances=0,
                deployed_instances=0,
                tolerated_failures=f,
                reason="managed by the provider: its SLA, not our node count, covers failures",
            )
        )
    else:
        members = quorum_members(f)
        services.append(
            ServiceRedundancy(
                service="control-plane",
                needed_instances=f + 1,
                deployed_instances=members,
                tolerated_failures=f,
                reason=(
                    f"etcd needs a majority: {members} members keep a quorum of {f + 1} after "
                    f"{f} failure(s); an even count adds no tolerance"
                ),
            )
        )
    if registry:
        services.append(
            ServiceRedundancy(
                service="registry",
                needed_instances=registry_instances_needed,
                deployed_instances=registry_instances_needed + f,
                tolerated_failures=f,
                reason=(
                    f"{rule}: image and model pulls keep working with {f} instance(s) down "
                    "(shared or replicated backing storage)"
                ),
            )
        )
    if monitoring:
        services.append(
            ServiceRedundancy(
                service="monitoring",
                needed_instances=monitoring_instances_needed,
                deployed_instances=monitoring_instances_needed + f,
                tolerated_failures=f,
                reason=(
                    f"{rule}: identical Prometheus replicas scrape the same targets, so alerts "
                    f"still fire with {f} replica(s) down"
                ),
            )
        )
    return ManagementReserve(
        rule=rule,
        services=services,
        management_instances=sum(s.deployed_instances for s in services),
        formula=(
            "quorum services: 2f + 1 members; replicated services: N + f instances; "
            "f = 1 for N+1, 2 for N+2"
        ),
        inputs={
            "rule": rule,
            "managed_control_plane": managed_control_plane,
            "registry_instances_needed": registry_instances_needed,
            "monitoring_instances_needed": monitoring_instances_needed,
            "registry": registry,
            "monitoring": monitoring,
        },
    )
