"""Serving pools over a day: fixed, autoscaled and warm-reserve replicas judged by TTFT misses
and GPU-hours (pure; ``sim compare`` prints it).

The Kueue month (``sched.platform``) holds online inference and RAG at their planned GPUs all
month; this model asks the question that leaves out: what happens to the SLO when the load
moves over the day and replicas take minutes to start.

Model (a fluid queue, stepped every ``STEP_S`` seconds, for one day from midnight):

- **Load**: the spec's ``queriesPerSecond`` times the hour's factor (``slo.hourlyLoad``, else
  ``DEFAULT_DAY``), interpolated linearly between hour midpoints so it ramps.
- **Capacity**: r ready replicas meet the SLO up to r times the load per replica the plan
  sized (``plan.serving_scale``). Load above it queues; the queue drains at the spare
  capacity. A request is a **TTFT miss** when it arrives while the load is above the ready
  capacity or while the queue ahead of it waits longer than the target's slack over the
  planned TTFT. Past the planned load the sizing has no TTFT figure, so every such request
  counts as a miss (an upper bound, not a latency distribution).
- **Strategies**: ``fixed`` holds the replicas the day's peak needs (at most the ceiling) all
  day; ``autoscale`` starts at the planned floor and asks for ceil(load / load per replica)
  after ``REACT_S`` (scrape + HPA sync), within floor and ceiling; a replica on a node already
  up for the pool's serving waits the model load (the image is on the node), one on a new
  node the whole start-up chain (node boot + driver + image pull + model load); scale-down
  waits ``SCALE_DOWN_WINDOW_S`` then drops one replica per ``SCALE_DOWN_STEP_S``, and an
  empty node goes after ``NODE_IDLE_S`` (cluster-autoscaler's scale-down-unneeded-time).
  ``warm`` is ``autoscale`` keeping ``warm_nodes`` nodes up with their driver and image: a
  replica there waits the model load, and a replacement warm node boots behind it.
- **GPU-hours**: the GPUs of replicas starting or ready, plus a warm node's GPUs; a replica
  holds its GPUs from the decision (a booting node is paid for).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from aiplat.plan.models import Plan
from aiplat.plan.serving_scale import (
    ServingScale,
    StartupChain,
    plan_serving_scales,
    startup_chain,
)
from aiplat.spec.models import Platform

# A business day's shape (an assumption, not a measured trace): quiet nights, a morning ramp,
# a plateau at 1.5x through working hours, an evening tail; mean 1.0, so queriesPerSecond is
# the day's mean rate.
DEFAULT_DAY = (0.4, 0.35, 0.3, 0.3, 0.3, 0.35, 0.5, 0.9, 1.35, 1.45, 1.5, 1.5,
               1.5, 1.5, 1.5, 1.45, 1.4, 1.3, 1.3, 1.25, 1.15, 1.0, 0.85, 0.6)
STEP_S = 10.0
DAY_S = 86_400.0
REACT_S = 60.0
SCALE_DOWN_WINDOW_S = 600.0  # the HPA's (kube/render_apps.py SCALE_DOWN_WINDOW_S)
SCALE_DOWN_STEP_S = 120.0
NODE_IDLE_S = 600.0
SERVING_STRATEGIES = ("fixed", "autoscale", "warm")


@dataclass(frozen=True)
class ServingDay:
    workload: str
    pool: str
    strategy: str
    requests: float
    ttft_misses: float
    gpu_hours: float
    floor: int
    ceiling: int
    peak_replicas: int
    chain: StartupChain
    timeline: list[tuple[float, float, int]] = field(default_factory=list, repr=False)
    """(hour, load qps, ready replicas), every 15 minutes."""

    @property
    def miss_share(self) -> float:
        return self.ttft_misses / self.requests if self.requests else 0.0

    def to_dict(self) -> dict[str, object]:
        return {"workload": self.workload, "pool": self.pool, "strategy": self.strategy,
                "requests": round(self.requests), "ttft_misses": round(self.ttft_misses),
                "ttft_miss_share": round(self.miss_share, 6),
                "gpu_hours": round(self.gpu_hours, 2), "floor": self.floor,
                "ceiling": self.ceiling, "peak_replicas": self.peak_replicas,
                "startup_chain_s": {k: round(v, 1) for k, v in self.chain.items()}
                | {"total": round(self.chain.total_s, 1)}}


def load_at(day: tuple[float, ...], t: float) -> float:
    """The day's factor at ``t`` seconds, linear between hour midpoints (wrapping)."""
    x = (t % DAY_S) / 3600.0 - 0.5
    i = math.floor(x)
    f = x - i
    return day[i % 24] * (1 - f) + day[(i + 1) % 24] * f


def _needed(qps: float, scale: ServingScale) -> int:
    per = scale.qps_per_replica
    return min(scale.ceiling, max(scale.floor, math.ceil(qps / per - 1e-9) if per else 0))


def serve_day(scale: ServingScale, chain: StartupChain, strategy: str,
              day: tuple[float, ...] = DEFAULT_DAY, *, warm_nodes: int = 1,
              planned_ttft_s: float | None = None) -> ServingDay:
    """One day of one serving group under ``strategy`` (fixed, autoscale, warm)."""
    if strategy not in SERVING_STRATEGIES:
        raise ValueError(f"unknown serving strategy {strategy!r}")
    per_node = scale.replicas_per_node
    peak = max(scale.qps * load_at(day, i * 60.0) for i in range(1440))
    slack = max(0.0, (scale.ttft_target_s or 0.0) - (planned_ttft_s or 0.0))
    start = _needed(peak, scale) if strategy == "fixed" else scale.floor
    ready = start
    starting: list[float] = []  # ready times of replicas starting
    nodes = math.ceil(start / per_node)
    warm = warm_nodes if strategy == "warm" else 0
    warm_booting: list[float] = []
    idle_since: float | None = None
    low_since: float | None = None
    last_down = -math.inf
    backlog = requests = misses = gpu_s = 0.0
    peak_replicas = start
    timeline = []
    steps = int(DAY_S / STEP_S)
    for k in range(steps):
        t = k * STEP_S
        lam = scale.qps * load_at(day, t)
        # replicas and warm nodes that finished starting
        ready += sum(1 for r in starting if r <= t)
        starting = [r for r in starting if r > t]
        warm += sum(1 for r in warm_booting if r <= t)
        warm_booting = [r for r in warm_booting if r > t]
        if strategy != "fixed":
            want = _needed(scale.qps * load_at(day, t - REACT_S), scale)
            have = ready + len(starting)
            if want > have:
                low_since = None
                for _ in range(want - have):
                    if nodes * per_node > have:  # a free slot on a node already up
                        starting.append(t + chain.model_load_s)
                    elif warm > 0:  # take a warm node; boot its replacement
                        warm -= 1
                        nodes += 1
                        starting.append(t + chain.model_load_s)
                        warm_booting.append(t + chain.node_boot_s + chain.driver_s
                                            + chain.image_pull_s)
                    else:
                        nodes += 1
                        starting.append(t + chain.total_s)
                    have += 1
            elif want < ready and not starting:
                low_since = t if low_since is None else low_since
                if t - low_since >= SCALE_DOWN_WINDOW_S and t - last_down >= SCALE_DOWN_STEP_S:
                    ready -= 1
                    last_down = t
            else:
                low_since = None
            if nodes * per_node - (ready + len(starting)) >= per_node:
                idle_since = t if idle_since is None else idle_since
                if t - idle_since >= NODE_IDLE_S:
                    nodes -= 1
                    idle_since = None
            else:
                idle_since = None
        cap = ready * scale.qps_per_replica
        arrivals = lam * STEP_S
        requests += arrivals
        wait = backlog / cap if cap else math.inf
        if lam > cap or wait > slack:
            misses += arrivals
        backlog = max(0.0, backlog + (lam - cap) * STEP_S)
        held = ready + len(starting)
        peak_replicas = max(peak_replicas, held)
        gpu_s += (held * scale.gpus_per_replica
                  + (warm + len(warm_booting)) * per_node * scale.gpus_per_replica) * STEP_S
        if k % int(900 / STEP_S) == 0:
            timeline.append((t / 3600.0, lam, ready))
    return ServingDay(workload=scale.workload, pool=scale.pool, strategy=strategy,
                      requests=requests, ttft_misses=misses, gpu_hours=gpu_s / 3600.0,
                      floor=scale.floor, ceiling=scale.ceiling, peak_replicas=peak_replicas,
                      chain=chain, timeline=timeline)


def serving_days(platform: Platform, plan: Plan, strategies: tuple[str, ...] =
                 SERVING_STRATEGIES, *, warm_nodes: int = 1) -> list[ServingDay]:
    """Every always-on serving group of the plan, a day under each strategy."""
    out = []
    specs = {w.name: w for w in platform.workloads}
    sized = {w.name: w for w in plan.workloads}
    for scale in plan_serving_scales(platform, plan):
        if not scale.qps:
            continue
        ws = specs[scale.workload]
        day = tuple(ws.slo.hourly_load) if ws.slo.hourly_load else DEFAULT_DAY
        chain = startup_chain(platform, plan, scale.pool, scale.weight_bytes)
        ttft = (sized[scale.workload].results.get("slo") or {}).get("ttft_seconds")
        out += [serve_day(scale, chain, s, day, warm_nodes=warm_nodes, planned_ttft_s=ttft)
                for s in strategies]
    return out
